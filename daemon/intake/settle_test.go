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

// A folder of more files than one scan reads is read in part, in name order, and says so.
func TestScanReadsAtMostMaxScanFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,001 files")
	}
	dir := t.TempDir()
	for i := range MaxScanFiles + 1 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%06d.md", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}.Scan(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != MaxScanFiles || len(rep.Skipped) != MaxScanFiles+1 {
		t.Fatalf("scan read %d files, skipped %d; want %d read (each skipped: empty) and one line for the rest", rep.Files, len(rep.Skipped), MaxScanFiles)
	}
	i := slices.IndexFunc(rep.Skipped, func(k Skipped) bool { return strings.Contains(k.Reason, "wait for a later scan") })
	if i < 0 || rep.Skipped[i].File != "(1 more files)" {
		t.Errorf("no skip says the last file waits: %+v", rep.Skipped[:1])
	}
	if slices.ContainsFunc(rep.Skipped, func(k Skipped) bool { return k.File == fmt.Sprintf("%06d.md", MaxScanFiles) }) {
		t.Errorf("the last file by name was read")
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
	_, err := Dir{Path: dir, DefaultRepo: "app", Clock: clk}.Scan(ctx, nil)
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
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}.Scan(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "make it readable by the user ticketd runs as") {
		t.Errorf("skipped %+v, want 01.md with a hint at its permissions", rep.Skipped)
	}
}
