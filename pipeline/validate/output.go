package validate

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// tailBuffer keeps the last bytes written to it: the end of a test run's
// output holds the summary and the latest failure, which matter most.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// tail returns at most n of the last bytes, starting at a rune boundary,
// with a note of how much was dropped before them.
func (b *tailBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	data := b.buf
	if len(data) > n {
		data = data[len(data)-n:]
	}
	for len(data) > 0 && !utf8.RuneStart(data[0]) {
		data = data[1:]
	}
	if dropped := b.total - int64(len(data)); dropped > 0 {
		return fmt.Sprintf("[... %d earlier bytes dropped ...]\n%s", dropped, data)
	}
	return string(data)
}

// headBuffer keeps the first bytes written to it (a JSON document is only
// parseable from its start) and notes whether anything was dropped.
type headBuffer struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func newHeadBuffer(max int) *headBuffer { return &headBuffer{max: max} }

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - len(b.buf)
	if len(p) > room {
		b.truncated = true
		b.buf = append(b.buf, p[:max(room, 0)]...)
	} else {
		b.buf = append(b.buf, p...)
	}
	return len(p), nil
}

func (b *headBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			out = append(out, strings.TrimRight(lines[i], "\r "))
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// exitSummary is the one-line summary of a command without a parser.
func exitSummary(code int, output string) string {
	if code == 0 {
		return "exit status 0"
	}
	s := fmt.Sprintf("exit status %d", code)
	if last := lastLines(output, 1); len(last) == 1 {
		s += ": " + clip(last[0], 200)
	}
	return s
}

// clip shortens s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// relPath makes path relative to dir when it lies inside it (tools report
// absolute paths; the maker's tools take worktree-relative ones), and
// slash-separated.
func relPath(dir, path string) string {
	if path == "" || !filepath.IsAbs(path) || dir == "" {
		return filepath.ToSlash(path)
	}
	for _, d := range []string{dir, evalSymlinks(dir)} {
		if rel, err := filepath.Rel(d, path); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(path)
}

func evalSymlinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// durations matches run times such as "in 0.05s" or "0.003 seconds", which
// change from run to run.
var durations = regexp.MustCompile(`\b\d+(\.\d+)?\s?(s|ms|sec|seconds)\b`)

// outputFinding turns the last lines of a failed run without a parseable
// report into one finding. Run times are masked so that the same failure at
// the base commit and in the attempt reads the same (the gate compares
// findings by text).
func outputFinding(output string) Finding {
	tail := lastLines(output, 8)
	if len(tail) == 0 {
		return Finding{}
	}
	return Finding{Message: durations.ReplaceAllString(strings.Join(tail, "\n"), "<time>")}
}
