package intake

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ticketd/ticketd/store"
)

func TestDirScanAddsNothingTwice(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string]string{
		"a.md":       "---\ntitle: A crashes\nrepo: app\nlabels: [bug]\n---\nbody a",
		"b.md":       "---\ntitle: B is slow\nlabels: [Urgent, bug]\n---\nbody b", // default repo
		"bad.md":     "no front matter",
		"other.md":   "---\ntitle: C\nrepo: web\n---\n", // unknown repo
		"notes.txt":  "not an issue",
		".hidden.md": "---\ntitle: hidden\n---\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := Dir{Path: dir, DefaultRepo: "app", Priorities: map[string]int{"bug": 5, "urgent": 10}, MaxAttempts: 2,
		KnownRepo: func(r string) bool { return r == "app" }, Clock: settledClock()}

	first, err := d.Scan(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if first.Files != 4 || len(first.Added) != 2 || len(first.Invalid) != 2 {
		t.Fatalf("first scan: %d files, %d added, invalid %v; want 4, 2, 2", first.Files, len(first.Added), first.Invalid)
	}
	for _, want := range []string{"bad.md: no front matter", `other.md: repo "web" is not configured`} {
		found := false
		for _, e := range first.Invalid {
			found = found || strings.Contains(e.Error(), want)
		}
		if !found {
			t.Errorf("invalid files lack %q: %v", want, first.Invalid)
		}
	}
	second, err := d.Scan(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Added) != 0 {
		t.Errorf("rescan added %d tickets, want 0", len(second.Added))
	}
	b, err := st.Get(ctx, first.Added[1])
	if err != nil {
		t.Fatal(err)
	}
	if b.Repo != "app" || b.Priority != 10 || b.MaxAttempts != 2 || b.ExternalID != "b.md" || b.Source != d.Source() {
		t.Errorf("ticket from b.md: %+v", b)
	}
}

func TestDirScanMissingFolder(t *testing.T) {
	_, err := Dir{Path: filepath.Join(t.TempDir(), "nope")}.Scan(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "intake[].path") {
		t.Fatalf("err = %v, want a hint at intake[].path", err)
	}
}

// Whoever can write to the intake folder is not trusted: nothing they leave there may block
// the scan, make the daemon read gigabytes, or publish a file the folder only links to.
func TestReadIssueFileRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.md")
	mustWrite := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.WriteFile(secret, []byte("---\ntitle: s\n---\nkey"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.md")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil { // sparse: 3 GiB that take no disk
		t.Fatal(err)
	}
	f.Close()

	tests := []struct {
		name, path, wantErr string
	}{
		{"regular file", mustWrite("ok.md", "---\ntitle: ok\n---\n"), ""},
		{"exactly the limit", mustWrite("max.md", strings.Repeat("x", MaxIssueBytes)), ""},
		{"one byte over", mustWrite("over.md", strings.Repeat("x", MaxIssueBytes+1)), "more than the 262144 allowed"},
		{"3 GiB sparse file", huge, "3221225472 bytes, more than"},
		{"FIFO", fifo, "not a regular file"},
		{"symlink", link, "is a symlink"},
		{"directory", dir, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, _, err := readIssueFile(tt.path)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("readIssueFile(%s) = %v, want no error", tt.path, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("readIssueFile(%s) = %d bytes, %v; want error containing %q", tt.path, len(data), err, tt.wantErr)
			case tt.wantErr != "" && len(data) != 0:
				t.Errorf("readIssueFile(%s) returned %d bytes with its error", tt.path, len(data))
			}
		})
	}

	// The scan lists what is not a regular file and the oversized files as skipped, each
	// with its reason (the operator reads them on the status page: a symlink dropped
	// without a word looks like a lost issue), and goes on with the rest.
	if err := os.Mkdir(filepath.Join(dir, "folder.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}.Scan(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added) != 1 || len(rep.Invalid) != 6 || rep.Files != 7 {
		t.Errorf("scan: %d files, %d added, invalid %v; want 7 files, 1 added (ok.md), 6 invalid", rep.Files, len(rep.Added), rep.Invalid)
	}
	reasons := map[string]string{}
	for _, k := range rep.Skipped {
		reasons[k.File] = k.Reason
	}
	for file, want := range map[string]string{
		"fifo.md":   "not a regular file",
		"link.md":   "is a symlink",
		"folder.md": "not a regular file",
		"over.md":   "more than the 262144 allowed",
		"huge.md":   "more than the 262144 allowed",
		"max.md":    "no front matter",
	} {
		if got, ok := reasons[file]; !ok || !strings.Contains(got, want) {
			t.Errorf("skipped %s: reason %q (listed: %v), want one containing %q", file, got, ok, want)
		}
	}
}

func TestPriority(t *testing.T) {
	prio := map[string]int{"Urgent": 10, "bug": 5, "wontfix": -1}
	tests := []struct {
		name   string
		labels []string
		want   int
	}{
		{"none", nil, 0},
		{"unmapped", []string{"docs"}, 0},
		{"same case", []string{"bug"}, 5},
		{"label capitalised", []string{"BUG"}, 5},
		{"key capitalised in the config", []string{"urgent"}, 10},
		{"highest wins", []string{"bug", "URGENT"}, 10},
		{"negative only", []string{"wontfix"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Priority(tt.labels, prio); got != tt.want {
				t.Errorf("Priority(%q, %v) = %d, want %d", tt.labels, prio, got, tt.want)
			}
		})
	}
}

// A socket named like an issue file is skipped as one, not as "no such device or address".
func TestScanNamesASocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "sock") // short: a socket's path has a small limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "s.md"))
	if err != nil {
		t.Skipf("no unix socket here: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}.Scan(context.Background(), openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "is a socket") {
		t.Errorf("skipped %+v; want s.md skipped as a socket", rep.Skipped)
	}
}

// What is not a regular file is refused without being opened: opening a FIFO, a socket or
// a device node may block or act (a watchdog device reboots the machine once closed). The
// kernel reports each open of a file in the folder to an inotify watch on it.
func TestScanOpensNoFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify here: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN); err != nil {
		t.Skipf("no inotify here: %v", err)
	}
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}.Scan(context.Background(), openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "not a regular file") {
		t.Errorf("skipped %+v; want fifo.md as not a regular file", rep.Skipped)
	}
	buf := make([]byte, 4096)
	n, _ := syscall.Read(fd, buf) // EAGAIN (n -1) when nothing was opened
	for off := 0; off+syscall.SizeofInotifyEvent <= n; {
		ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)]), "\x00")
		if name == "fifo.md" {
			t.Errorf("the scan opened fifo.md")
		}
		off += syscall.SizeofInotifyEvent + int(ev.Len)
	}
}

// A file's name becomes a ticket's external id that ticketctl prints on a terminal: a name
// with an escape sequence or bytes that are not UTF-8 is refused, and shown quoted.
func TestScanRefusesControlCharactersInAName(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a\x1b]0;pwned\x07.md", "b\xff.md", "c\nd.md"} {
		mustWrite(t, filepath.Join(dir, name), "---\ntitle: t\n---\n")
	}
	rep, err := Dir{Path: dir, DefaultRepo: "app", Clock: settledClock()}.Scan(context.Background(), openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added) != 0 || len(rep.Skipped) != 3 {
		t.Fatalf("added %v, skipped %+v; want the three refused", rep.Added, rep.Skipped)
	}
	for _, k := range rep.Skipped {
		if strings.ContainsAny(k.File+k.Reason, "\x1b\x07\n\xff") || !strings.Contains(k.Reason, "control characters or is not UTF-8") {
			t.Errorf("skipped %q: %q; want it quoted, with the reason", k.File, k.Reason)
		}
	}
}
