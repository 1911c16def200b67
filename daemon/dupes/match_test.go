package dupes

import (
	"fmt"
	"strings"
	"testing"
)

const tbDivide = `Running the report crashes:

Traceback (most recent call last):
  File "/home/ann/src/calc/cli.py", line 40, in main
    print(report(rows))
  File "/home/ann/src/calc/calc.py", line 12, in divide
    return a / b
ZeroDivisionError: division by zero
`

const tbDivideOther = `Traceback (most recent call last):
  File "C:\\work\\calc\\app.py", line 3, in <module>
  File "C:\\work\\calc\\calc.py", line 13, in divide
ZeroDivisionError: float division by zero`

const tbParse = `Traceback (most recent call last):
  File "calc/cli.py", line 40, in main
  File "calc/parse.py", line 8, in parse_row
  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode
json.decoder.JSONDecodeError: Expecting value`

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		frame      Frame
		tests      []string
	}{
		{"innermost own frame", tbDivide, Frame{"calc.py", "divide"}, nil},
		{"windows paths", tbDivideOther, Frame{"calc.py", "divide"}, nil},
		{"library frame skipped", tbParse, Frame{"parse.py", "parse_row"}, nil},
		{"only library frames", `Traceback (most recent call last):
  File "/usr/lib/python3.12/json/decoder.py", line 1, in decode`, Frame{"decoder.py", "decode"}, nil},
		{"last traceback wins", tbParse + "\nDuring handling...\n" + tbDivide, Frame{"calc.py", "divide"}, nil},
		{"pytest ids", "FAILED tests/test_calc.py::TestCalc::test_divide[0-1] - ZeroDivisionError\nalso ./tests/test_io.py::test_read",
			Frame{}, []string{"tests/test_calc.py::TestCalc::test_divide", "tests/test_io.py::test_read"}},
		{"nothing", "the button is blue", Frame{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Parse("title", tc.body)
			if s.Frame != tc.frame {
				t.Errorf("frame %v; want %v", s.Frame, tc.frame)
			}
			if fmt.Sprint(s.Tests) != fmt.Sprint(tc.tests) {
				t.Errorf("tests %q; want %q", s.Tests, tc.tests)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tk := func(id int64, repo, title, body string) Ticket {
		return Ticket{ID: id, Repo: repo, Title: title, Body: body}
	}
	for _, tc := range []struct {
		name   string
		a, b   Ticket
		want   bool
		reason string
	}{
		{"same frame", tk(1, "calc", "Crash in report", tbDivide), tk(2, "calc", "division by zero on empty input", tbDivideOther), true, "frame calc.py:divide"},
		{"same frame, other repository", tk(1, "calc", "Crash in report", tbDivide), tk(2, "shop", "Crash in report", tbDivide), false, ""},
		{"different frames, same words", tk(1, "calc", "Crash in report", tbDivide), tk(2, "calc", "Crash in report", tbParse), false, ""},
		{"same failing test", tk(1, "calc", "divide fails", "FAILED tests/test_calc.py::test_divide"), tk(2, "calc", "CI red", "see tests/test_calc.py::test_divide[3]"), true, "test tests/test_calc.py::test_divide"},
		{"different tests, no frames, unlike words", tk(1, "calc", "divide fails", "FAILED tests/test_calc.py::test_divide"), tk(2, "calc", "rounding", "FAILED tests/test_calc.py::test_round"), false, ""},
		{"similar titles over threshold", tk(1, "calc", "Export to CSV drops the last row", "Exporting a report to CSV drops the last row of the table."),
			tk(2, "calc", "CSV export drops last row", "When exporting a report to CSV the last row of the table is missing."), true, "similar"},
		{"similar titles under threshold", tk(1, "calc", "Export to CSV drops the last row", "Exporting a report to CSV drops the last row of the table."),
			tk(2, "calc", "Export to PDF has wrong fonts", "Exporting a report to PDF uses the wrong fonts in the table header."), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Match(tc.a, tc.b, Parse(tc.a.Title, tc.a.Body), Parse(tc.b.Title, tc.b.Body), DefaultSimilarity)
			if got != tc.want || !strings.Contains(why, tc.reason) {
				t.Errorf("Match = %v %q; want %v %q", got, why, tc.want, tc.reason)
			}
		})
	}
}

func TestFind(t *testing.T) {
	open := []Ticket{
		{ID: 1, Repo: "calc", Title: "Crash in report", Body: tbDivide},
		{ID: 2, Repo: "shop", Title: "Crash in report", Body: tbDivide},
		{ID: 3, Repo: "calc", Title: "json fails", Body: tbParse},
		{ID: 4, Repo: "calc", Title: "zero", Body: tbDivideOther},
		{ID: 5, Repo: "calc", Title: "zero again", Body: tbDivideOther},
	}
	got := fmt.Sprint(Find(open[1:], open, DefaultSimilarity))
	want := "[{4 1 same innermost traceback frame calc.py:divide} {5 1 same innermost traceback frame calc.py:divide}]"
	if got != want {
		t.Errorf("Find = %s\nwant %s", got, want)
	}
}
