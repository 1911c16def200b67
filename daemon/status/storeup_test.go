package status

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/ticketd/ticketd/store"
)

var storeUpRe = regexp.MustCompile(`(?m)^ticketd_store_up (\d)$`)

func storeUp(t *testing.T, url string) string {
	t.Helper()
	_, body := get(t, url+"/metrics")
	m := storeUpRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no ticketd_store_up:\n%s", clip(400, body))
	}
	return m[1]
}

// TestStoreUpReflectsWrites: ticketd_store_up is 0 while the database takes no writes (here,
// its disk is full), though reads still answer, and 1 again once a write lands. Before, it
// measured reads and stayed 1 through a 20 s outage.
func TestStoreUpReflectsWrites(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=4m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root or CAP_SYS_ADMIN), so a full disk cannot be tested here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	st, err := store.Open(ctx, filepath.Join(dir, "ticketd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := serveWith(t, st, Options{})
	if got := storeUp(t, srv.URL); got != "1" {
		t.Fatalf("store_up = %s before anything failed, want 1", got)
	}
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := filler.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	filler.Close()
	var failed bool
	for i := 0; i < 200 && !failed; i++ { // fill the WAL's free pages until a write meets the full disk
		_, _, err := st.Enqueue(ctx, store.NewTicket{Source: "t", ExternalID: string(rune('a'+i%26)) + string(rune('a'+i/26)), Body: string(chunk[:8<<10])})
		failed = err != nil
	}
	if !failed {
		t.Fatal("no write failed on the full disk")
	}
	if got := storeUp(t, srv.URL); got != "0" {
		t.Errorf("store_up = %s while writes fail, want 0", got)
	}
	os.Remove(filler.Name())
	if _, _, err := st.Enqueue(ctx, store.NewTicket{Source: "t", ExternalID: "after"}); err != nil {
		t.Fatalf("write once the disk has room: %v", err)
	}
	if got := storeUp(t, srv.URL); got != "1" {
		t.Errorf("store_up = %s once a write landed, want 1", got)
	}
}

// TestHomeShowsSkippedFiles: the issue files intake skipped are under "Needs you" on the
// console, not only in the daemon's log.
func TestHomeShowsSkippedFiles(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	if err := b.st.SetIntakeSkips(b.ctx, "dir:/srv/issues", []store.IntakeSkip{{Path: "bad.md", Reason: "issue /srv/issues/bad.md: front matter is not closed"}}); err != nil {
		t.Fatal(err)
	}
	srv := serveWith(t, b.st, Options{})
	_, page := get(t, srv.URL+"/")
	mustContain(t, "home", page, "Issue files intake skipped", "bad.md", "front matter is not closed")
}
