package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corpusCase is one testdata/edits/*.txtar file: sections "-- name LEN --\n" followed by
// exactly LEN bytes and a newline, so CRLF, trailing spaces and missing final newlines are
// kept byte for byte. testdata/gen_edits.py writes them.
type corpusCase struct {
	name                 string
	meta                 map[string]string
	file, old, new, want string
	hasWant              bool
}

func parseCorpusCase(name string, data []byte) (corpusCase, error) {
	c := corpusCase{name: name, meta: map[string]string{}}
	s := string(data)
	for len(s) > 0 {
		nl := strings.IndexByte(s, '\n')
		if nl < 0 || !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s[:nl], " --") {
			return c, fmt.Errorf("%s: bad section header %.40q", name, s)
		}
		fields := strings.Fields(s[3 : nl-3])
		if len(fields) != 2 {
			return c, fmt.Errorf("%s: bad section header %q", name, s[:nl])
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil || nl+1+n+1 > len(s) {
			return c, fmt.Errorf("%s: section %s: bad length %q", name, fields[0], fields[1])
		}
		body := s[nl+1 : nl+1+n]
		s = s[nl+1+n+1:]
		switch fields[0] {
		case "meta":
			for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
				k, v, _ := strings.Cut(l, ": ")
				c.meta[k] = v
			}
		case "file":
			c.file = body
		case "old":
			c.old = body
		case "new":
			c.new = body
		case "want":
			c.want, c.hasWant = body, true
		default:
			return c, fmt.Errorf("%s: unknown section %q", name, fields[0])
		}
	}
	return c, nil
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "edits", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus in testdata/edits (%v): run testdata/gen_edits.py", err)
	}
	var out []corpusCase
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c, err := parseCorpusCase(strings.TrimSuffix(filepath.Base(p), ".txtar"), data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// TestEditCorpus runs edit_file on every corpus case in a real worktree: a positive must
// give exactly the expected whole file, a negative must leave the file byte for byte as it
// was and say so. It logs the counts per rung.
func TestEditCorpus(t *testing.T) {
	cases := loadCorpus(t)
	var nPos, nNeg int
	for _, c := range cases {
		if c.hasWant {
			nPos++
		} else {
			nNeg++
		}
	}
	if nPos < 60 || nNeg < 20 {
		t.Errorf("corpus has %d positives and %d negatives, want at least 60 and 20", nPos, nNeg)
	}
	rungs := map[Rung]int{}
	var pos, neg, posOK, negOK int
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := c.meta["path"]
			full := filepath.Join(dir, path)
			if err := os.WriteFile(full, []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := NewWorkspace(dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err := w.EditFile(context.Background(), path, c.old, c.new, c.meta["replace_all"] == "true")
			got, _ := os.ReadFile(full)
			if c.hasWant {
				pos++
				switch {
				case err != nil:
					t.Errorf("positive refused\nold: %q\nnew: %q\nerr: %v", c.old, c.new, err)
				case string(got) != c.want:
					t.Errorf("positive applied wrongly (rung %s)\nold:  %q\ngot:  %q\nwant: %q", res.Rung, c.old, got, c.want)
				case c.meta["rung"] != "" && Rung(c.meta["rung"]) != res.Rung:
					t.Errorf("matched by rung %s, want %s", res.Rung, c.meta["rung"])
				default:
					posOK++
					rungs[res.Rung]++
				}
				return
			}
			neg++
			switch {
			case err == nil:
				t.Errorf("negative applied (rung %s): %s\nold: %q\nfile now: %q", res.Rung, c.meta["note"], c.old, got)
			case string(got) != c.file:
				t.Errorf("negative refused but the file changed: %q", got)
			case !strings.Contains(err.Error(), "nothing") && !strings.Contains(err.Error(), "old_text is empty"):
				t.Errorf("refusal does not say nothing changed: %v", err)
			default:
				negOK++
				t.Logf("refused: %v", err)
			}
		})
	}
	var per []string
	for _, r := range Rungs {
		per = append(per, fmt.Sprintf("%s=%d", r, rungs[r]))
	}
	t.Logf("edit corpus: positives %d/%d at the right place, negatives %d/%d refused with the file unchanged; per rung: %s",
		posOK, pos, negOK, neg, strings.Join(per, " "))
}
