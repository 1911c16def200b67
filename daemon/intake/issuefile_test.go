package intake

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ticketd/ticketd/store"
)

func TestParseIssue(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Issue
		wantErr string
	}{
		{
			name: "flow labels",
			in:   "---\ntitle: Average crashes\nrepo: sample\nlabels: [bug, math]\n---\nIt crashes.\n",
			want: Issue{Title: "Average crashes", Repo: "sample", Labels: []string{"bug", "math"}, Body: "It crashes."},
		},
		{
			name: "block labels, quotes, CRLF",
			in:   "---\r\ntitle: \"Colon: in title\"\r\nlabels:\r\n  - bug\r\n  - 'ui'\r\n---\r\nbody\r\nline 2",
			want: Issue{Title: "Colon: in title", Labels: []string{"bug", "ui"}, Body: "body\nline 2"},
		},
		{
			name: "comma labels and empty body",
			in:   "---\ntitle: T\nlabels: a, b\n---\n",
			want: Issue{Title: "T", Labels: []string{"a", "b"}},
		},
		{name: "no front matter", in: "title: x\n", wantErr: "no front matter"},
		{name: "unclosed", in: "---\ntitle: x\n", wantErr: "not closed"},
		{name: "unknown key", in: "---\ntitle: x\nowner: me\n---\n", wantErr: `unknown key "owner"`},
		{name: "missing title", in: "---\nrepo: r\n---\nbody", wantErr: "no title"},
		{name: "duplicate key", in: "---\ntitle: a\ntitle: b\n---\n", wantErr: "given twice"},
		{name: "not key value", in: "---\ntitle: a\njust words\n---\n", wantErr: "is not \"key: value\""},
		{name: "stray list item", in: "---\ntitle: a\n- x\n---\n", wantErr: "outside labels"},
		{name: "not UTF-8", in: "---\ntitle: caf\xe9\n---\n", wantErr: "first bad byte is at offset 14"},
		{name: "binary", in: "\x89PNG\r\n\x1a\n\x00", wantErr: "not valid UTF-8"},
		{name: "title of control characters only", in: "---\ntitle: \x00\x1b \x7f\n---\nbody", wantErr: "no title"},
		{name: "title too long", in: "---\ntitle: " + strings.Repeat("é", MaxTitleRunes+1) + "\n---\n", wantErr: "257 characters, more than the 256"},
		{name: "title at the limit", in: "---\ntitle: " + strings.Repeat("é", MaxTitleRunes) + "\n---\n", want: Issue{Title: strings.Repeat("é", MaxTitleRunes)}},
		{name: "a YAML block scalar is not a title", in: "---\ntitle: |\n  Average crashes\n---\n", wantErr: "line 3"},
		{name: "old Mac line ends", in: "---\rtitle: x\r---\r", wantErr: "no front matter"},
		{name: "a second front matter is body", in: "---\ntitle: a\n---\n---\ntitle: b\nrepo: other\n---\n", want: Issue{Title: "a", Body: "---\ntitle: b\nrepo: other\n---"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseIssue([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseIssue(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseIssue(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseIssue(%q)\n got %#v\nwant %#v", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzParseIssue checks that no input panics and that accepted issues keep their invariants.
func FuzzParseIssue(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "issues", "*.md"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("---\ntitle: x\n---\n"))
	f.Add([]byte("---\nlabels:\n - a\n---"))
	f.Fuzz(func(t *testing.T, data []byte) {
		is, err := ParseIssue(data)
		if err != nil {
			return
		}
		if strings.TrimSpace(store.CleanText(is.Title)) == "" || strings.ContainsAny(is.Title, "\r\n") || utf8.RuneCountInString(is.Title) > MaxTitleRunes {
			t.Fatalf("accepted issue with bad title %q", is.Title)
		}
		if !utf8.ValidString(is.Title + is.Body + is.Repo + strings.Join(is.Labels, "")) {
			t.Fatalf("accepted issue with text that is not UTF-8: %#v", is)
		}
		if is.Body != strings.TrimSpace(is.Body) {
			t.Fatalf("body not trimmed: %q", is.Body)
		}
		for _, l := range is.Labels {
			if l == "" {
				t.Fatalf("empty label in %q", is.Labels)
			}
		}
	})
}
