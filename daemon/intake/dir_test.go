package intake

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		KnownRepo: func(r string) bool { return r == "app" }}

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
