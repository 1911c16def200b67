package intake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// settledClock is the scans' clock in tests whose subject is not the settling: its waits
// return at once, so a file written a moment ago is read after one wait that finds it
// unchanged.
func settledClock() *clocktest.Fake { return clocktest.New(time.Now()).AutoAdvance(0) }

// writerClock is a fake clock whose waits return at once, each after the next of writes
// ran: what a writer does in the folder while the scan waits for it.
type writerClock struct {
	*clocktest.Fake
	writes []func()
}

func (c *writerClock) After(d time.Duration) <-chan time.Time {
	if len(c.writes) > 0 {
		w := c.writes[0]
		c.writes = c.writes[1:]
		w()
	}
	return c.Fake.After(d)
}

// openStore is a fresh SQLite store for one test.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A file an editor, cp or scp is still writing when the night scans is not taken in with
// half its text: the scan waits until it has stopped changing, and leaves a file that never
// does for a later scan, saying so.
func TestScanTakesAFileOnlyOnceItStoppedChanging(t *testing.T) {
	const (
		half = "---\ntitle: Average of an empty list crashes\nrepo: app\n---\nCalling mean([]) raises"
		full = half + " ZeroDivisionError; it should return 0.\n"
	)
	wantBody := strings.TrimSpace(full[strings.LastIndex(full, "---\n")+4:])
	tests := []struct {
		name     string
		initial  string
		age      time.Duration // how long ago it was last written (negative: in the future)
		writes   func(path string) []func()
		wantBody string // "" when no ticket
		wantSkip string // "" when not skipped
		waits    int
	}{
		{name: "written long ago: taken at once", initial: full, age: time.Hour, wantBody: wantBody},
		{name: "writer finishes during the wait", initial: half, writes: func(p string) []func() {
			return []func(){func() { mustWrite(t, p, full) }}
		}, wantBody: wantBody, waits: 2},
		{name: "writer replaces it by a rename", initial: half, writes: func(p string) []func() {
			return []func(){func() {
				mustWrite(t, p+".tmp", full)
				if err := os.Rename(p+".tmp", p); err != nil {
					t.Fatal(err)
				}
			}}
		}, wantBody: wantBody, waits: 2},
		{name: "modified in the future (a clock skew): taken once unchanged", initial: full, age: -time.Hour, wantBody: wantBody, waits: 1},
		{name: "never stops changing: left for a later scan", initial: half, writes: func(p string) []func() {
			grow := func() { mustAppend(t, p, " and on") }
			return []func(){grow, grow, grow}
		}, wantSkip: "still being written", waits: settleRounds},
		{name: "deleted while waited for", initial: half, writes: func(p string) []func() {
			return []func(){func() { os.Remove(p) }}
		}, waits: 1},
		{name: "replaced by a symlink to /dev/zero while waited for", initial: half, writes: func(p string) []func() {
			return []func(){func() {
				os.Remove(p)
				if err := os.Symlink("/dev/zero", p); err != nil {
					t.Fatal(err)
				}
			}}
		}, wantSkip: "is a symlink", waits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "01.md")
			mustWrite(t, path, tt.initial)
			now := time.Now()
			if tt.age != 0 {
				if err := os.Chtimes(path, now.Add(-tt.age), now.Add(-tt.age)); err != nil {
					t.Fatal(err)
				}
			}
			clk := &writerClock{Fake: clocktest.New(now).AutoAdvance(0)}
			if tt.writes != nil {
				clk.writes = tt.writes(path)
			}
			st := openStore(t)
			rep, err := Dir{Path: dir, Clock: clk}.Scan(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(clk.Waits()); got != tt.waits {
				t.Errorf("scan waited %d times (%v), want %d", got, clk.Waits(), tt.waits)
			}
			for _, w := range clk.Waits() {
				if w != DefaultSettle {
					t.Errorf("waited %s, want DefaultSettle %s", w, DefaultSettle)
				}
			}
			switch {
			case tt.wantSkip == "" && len(rep.Skipped) > 0:
				t.Errorf("skipped %+v, want none", rep.Skipped)
			case tt.wantSkip != "" && (len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, tt.wantSkip)):
				t.Errorf("skipped %+v, want 01.md skipped with a reason containing %q", rep.Skipped, tt.wantSkip)
			}
			if tt.wantBody == "" {
				if len(rep.Added) != 0 {
					t.Fatalf("added tickets %v, want none", rep.Added)
				}
				return
			}
			if len(rep.Added) != 1 {
				t.Fatalf("added %v, want one ticket", rep.Added)
			}
			got, err := st.Get(context.Background(), rep.Added[0])
			if err != nil {
				t.Fatal(err)
			}
			if got.Body != tt.wantBody {
				t.Errorf("ticket body %q, want the whole file's %q", got.Body, tt.wantBody)
			}
		})
	}
}

// What editors, sync tools and office suites leave beside an issue file is not an issue.
func TestIsIssueName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"01-crash.md", true},
		{"a.md", true},
		{"notes.txt", false},
		{".md", false},
		{".hidden.md", false},
		{".#a.md", false},           // Emacs lock
		{"#a.md#", false},           // Emacs auto-save
		{".a.md.swp", false},        // vim swap
		{"a.md~", false},            // backup
		{"a.md.tmp", false},         // temporary
		{"~$a.md", false},           // office lock
		{".a.md.Xy12Z9", false},     // rsync's temporary
		{"a.md___jb_tmp___", false}, // JetBrains
		{"a.md.kate-swp", false},
	}
	for _, tt := range tests {
		if got := IsIssueName(tt.name); got != tt.want {
			t.Errorf("IsIssueName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A folder of more files than one scan reads is read in part, in name order, and says so;
// the listing holds at most twice the limit in names, whatever the folder holds.
func TestScanReadsAtMostMaxFiles(t *testing.T) {
	dir := t.TempDir()
	const limit, n = 3, 8
	for i := range n {
		mustWrite(t, filepath.Join(dir, fmt.Sprintf("%02d.md", n-1-i)), "")
	}
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock(), MaxFiles: limit}.Scan(context.Background(), openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, k := range rep.Skipped {
		files = append(files, k.File)
	}
	want := []string{"(5 more files)", "00.md", "01.md", "02.md"} // each read is skipped: empty
	if rep.Files != limit || !slices.Equal(files, want) || !strings.Contains(rep.Skipped[0].Reason, "the 5 last by name wait for a later scan") {
		t.Errorf("scan read %d files, skipped %q (%+v); want %d read and %q", rep.Files, files, rep.Skipped[0], limit, want)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustAppend(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// A shutdown while the scan waits for a file stops the wait at once.
func TestScanWaitStopsOnShutdown(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "01.md"), "---\ntitle: t\n---\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := &writerClock{Fake: clocktest.New(time.Now()), writes: []func(){cancel}} // never fires
	_, err := Dir{Path: dir, DefaultRepo: "app", Clock: clk}.Scan(ctx, openStore(t))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "still being written") {
		t.Fatalf("Scan = %v, want the wait for files still being written cancelled", err)
	}
}

// A file the daemon may not read is skipped saying whose permission it needs.
func TestScanNamesAnUnreadableFile(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads every file: run the tests as another user to cover this")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "01.md")
	mustWrite(t, p, "---\ntitle: t\n---\n")
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}.Scan(context.Background(), openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "make it readable by the user ticketd runs as") {
		t.Errorf("skipped %+v, want 01.md with a hint at its permissions", rep.Skipped)
	}
}

// An issue file edited after the scan that took it in: its ticket takes the new text while
// no worker has claimed it, and keeps the text it was worked with after, saying so.
func TestScanTakesInAnEditWhileQueued(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.md")
	st := openStore(t)
	scan := scanWriting(t, Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}, st, path)
	body := func(id int64) string {
		t.Helper()
		tk, err := st.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tk.Body
	}
	first := scan("---\ntitle: mean crashes\n---\nmean([]) raises")
	if len(first.Added) != 1 {
		t.Fatalf("first scan added %v, want one ticket", first.Added)
	}
	id := first.Added[0]
	if rep := scan("---\ntitle: mean crashes\nlabels: [bug]\n---\nmean([]) raises ZeroDivisionError"); len(rep.Added) != 0 || !slices.Equal(rep.Retexted, []int64{id}) || len(rep.Skipped) != 0 {
		t.Errorf("scan of the edit: added %v, retexted %v, skipped %+v; want ticket %d retexted", rep.Added, rep.Retexted, rep.Skipped, id)
	}
	if got := body(id); got != "mean([]) raises ZeroDivisionError" {
		t.Errorf("body %q after the edit while queued, want the new text", got)
	}
	if _, err := st.Claim(ctx, "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	rep := scan("---\ntitle: mean crashes\n---\nsomething else entirely")
	if len(rep.Retexted) != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "(now running): a ticket a worker has claimed, or one out of the queue, keeps the text") {
		t.Errorf("scan of an edit of a running ticket: retexted %v, skipped %+v; want it listed as kept", rep.Retexted, rep.Skipped)
	}
	if got := body(id); got != "mean([]) raises ZeroDivisionError" {
		t.Errorf("body %q of the running ticket changed, want the text it was claimed with", got)
	}
}

// A renamed or copied issue file is the issue its ticket already has: not a second ticket
// (fixed twice). Two issues of one title and different text are two tickets.
func TestScanTakesARenamedFileOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t)
	d := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}
	const issue = "---\ntitle: mean crashes\n---\nmean([]) raises ZeroDivisionError\n"
	mustWrite(t, filepath.Join(dir, "a.md"), issue)
	mustWrite(t, filepath.Join(dir, "b.md"), "---\ntitle: mean crashes\n---\nmean of one NaN is 0\n")
	first, err := d.Scan(ctx, st)
	if err != nil || len(first.Added) != 2 {
		t.Fatalf("first scan: added %v, skipped %+v, %v; want a.md and b.md (one title, two reports)", first.Added, first.Skipped, err)
	}
	if err := os.Rename(filepath.Join(dir, "a.md"), filepath.Join(dir, "c.md")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "copy of b.md"), "---\ntitle: mean crashes\nlabels: [bug]\n---\n\nmean of one NaN is 0")
	rep, err := d.Scan(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, k := range rep.Skipped {
		reasons[k.File] = k.Reason
	}
	if len(rep.Gone) != 1 || rep.Gone[0] != (Gone{File: "a.md", Ticket: 1}) {
		t.Errorf("gone %+v, want a.md's ticket #1", rep.Gone)
	}
	if len(rep.Added) != 0 || !strings.Contains(reasons["c.md"], "ticket #1, taken in from a.md (now queued)") ||
		!strings.Contains(reasons["copy of b.md"], "ticket #2, taken in from b.md") {
		t.Errorf("scan after a rename and a copy: added %v, skipped %+v; want both skipped as tickets #1 and #2", rep.Added, rep.Skipped)
	}
	// The same text for another repository is another issue: one fix asked of each.
	mustWrite(t, filepath.Join(dir, "d.md"), "---\ntitle: mean crashes\nrepo: lib\n---\nmean([]) raises ZeroDivisionError\n")
	d.KnownRepo = func(string) bool { return true }
	if rep, err := d.Scan(ctx, st); err != nil || len(rep.Added) != 1 {
		t.Errorf("scan of a.md's text for repository lib: added %v, skipped %+v, %v; want a ticket", rep.Added, rep.Skipped, err)
	}
}

// Tickets are numbered in the order of their files' names, whichever had to be waited for:
// an operator orders issues of one priority by naming them 01-, 02-.
func TestScanKeepsNameOrderAcrossTheWait(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "01-first.md"), "---\ntitle: first\n---\n") // a moment ago
	old := filepath.Join(dir, "02-second.md")
	mustWrite(t, old, "---\ntitle: second\n---\n")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	clk := settledClock()
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: clk}.Scan(context.Background(), st)
	if err != nil || len(rep.Added) != 2 || len(clk.Waits()) != 1 {
		t.Fatalf("scan: added %v, waited %v, %v; want both after one wait", rep.Added, clk.Waits(), err)
	}
	for i, want := range []string{"01-first.md", "02-second.md"} {
		tk, err := st.Get(context.Background(), rep.Added[i])
		if err != nil || tk.ExternalID != want {
			t.Errorf("ticket #%d is %q (%v), want %s", rep.Added[i], tk.ExternalID, err, want)
		}
	}
}

// TestScanOnASharedDatabase: on a database several machines share, a file whose ticket
// (same folder path, same name) has another text may be another machine's issue: the
// ticket keeps its text and the file is listed as skipped, saying so; the same text, control
// characters and all, is taken as the same issue.
func TestScanOnASharedDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "01.md")
	st := openStore(t)
	scan := scanWriting(t, Dir{Path: dir, DefaultRepo: "app", Clock: settledClock(), Shared: true}, st, path)
	first := scan("---\ntitle: mean crashes\n---\nmean([]) raises\x1b[31m")
	if len(first.Added) != 1 {
		t.Fatalf("first scan added %v, want one ticket", first.Added)
	}
	id := first.Added[0]
	if rep := scan("---\ntitle: mean crashes\n---\nmean([]) raises\x1b[31m"); len(rep.Added)+len(rep.Retexted)+len(rep.Skipped) != 0 {
		t.Errorf("rescan of the same file: added %v, retexted %v, skipped %+v; want nothing", rep.Added, rep.Retexted, rep.Skipped)
	}
	rep := scan("---\ntitle: median of one item\n---\nmedian([3]) returns None")
	if len(rep.Added)+len(rep.Retexted) != 0 || len(rep.Skipped) != 1 ||
		!strings.Contains(rep.Skipped[0].Reason, "may be another machine's issue file of the same name") {
		t.Errorf("scan of another text under the same name: added %v, retexted %v, skipped %+v; want it skipped, naming the other machine", rep.Added, rep.Retexted, rep.Skipped)
	}
	if tk, err := st.Get(ctx, id); err != nil || tk.Title != "mean crashes" {
		t.Errorf("ticket %d = %q, %v; want its text kept", id, tk.Title, err)
	}
}

// scanWriting returns a func that writes content to path and scans d into st.
func scanWriting(t *testing.T, d Dir, st *store.Store, path string) func(content string) ScanReport {
	return func(content string) ScanReport {
		t.Helper()
		mustWrite(t, path, content)
		rep, err := d.Scan(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
}
