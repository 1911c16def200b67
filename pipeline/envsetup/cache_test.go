package envsetup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Prune keeps each configured repository's latest environment however old, and what a night
// used within the age; it removes the rest, the environments of repositories no longer
// configured, and unfinished builds.
func TestPrune(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	mk := func(repo, key string, used time.Duration, finished bool) string {
		dir := filepath.Join(root, repo, key)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if finished {
			at := now.Add(-used)
			if err := writeMarker(dir, marker{Key: key, BuiltAt: at, UsedAt: at}); err != nil {
				t.Fatal(err)
			}
		} else {
			os.Chtimes(dir, now.Add(-used), now.Add(-used))
		}
		return dir
	}
	latestOld := mk("app", "k3", 60*24*time.Hour, true) // idle for long, but app's latest
	older := mk("app", "k2", 90*24*time.Hour, true)
	oldest := mk("app", "k1", 120*24*time.Hour, true)
	recent := mk("lib", "k8", time.Hour, true)
	recentToo := mk("lib", "k7", 2*time.Hour, true) // not lib's latest, but used within the age
	gone := mk("removed", "k5", 40*24*time.Hour, true)
	half := mk("lib", "k6", 40*24*time.Hour, false)

	removed, err := Prune(root, []string{"app", "lib"}, 30*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{older, oldest, half, gone}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v;\nwant %v", removed, want)
	}
	for _, kept := range []string{latestOld, recent, recentToo} {
		if _, ok := readMarker(kept); !ok {
			t.Errorf("%s was removed; want it kept", kept)
		}
	}
	for _, d := range want {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s still exists", d)
		}
		if _, err := os.Stat(d + ".json"); err == nil {
			t.Errorf("%s's marker still exists", d)
		}
	}
}

// The key depends on the recipe, the inputs' content and the interpreter, not on other files;
// a FIFO among the inputs is not read (it would hang).
func TestKey(t *testing.T) {
	t.Parallel()
	base := Recipe{Commands: []string{`"$PYTHON" -m venv "$ENV"`}}
	dir := t.TempDir()
	files := map[string]string{"requirements.txt": "a==1\n", "README.md": "x", "sub/requirements.txt": "b\n", "requirements/dev.txt": "c\n"}
	var names []string
	for n, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755)
		os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644)
		names = append(names, n)
	}
	key := func(r Recipe, version string) string {
		t.Helper()
		k, _, err := Key(r, dir, names, version)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k0 := key(base, "3.11.2")
	_, inputs, _ := Key(base, dir, names, "3.11.2")
	if !slices.Equal(inputs, []string{"requirements.txt", "requirements/dev.txt"}) {
		t.Errorf("inputs %v", inputs)
	}
	for _, tc := range []struct {
		name   string
		change func() string
		same   bool
	}{
		{"same again", func() string { return key(base, "3.11.2") }, true},
		{"another interpreter", func() string { return key(base, "3.12.1") }, false},
		{"another command", func() string {
			r := base
			r.Commands = []string{"true"}
			return key(r, "3.11.2")
		}, false},
		{"network on", func() string { r := base; r.Network = true; return key(r, "3.11.2") }, false},
		{"README changed", func() string {
			os.WriteFile(filepath.Join(dir, "README.md"), []byte("y"), 0o644)
			return key(base, "3.11.2")
		}, true},
		{"requirements changed", func() string {
			os.WriteFile(filepath.Join(dir, "requirements/dev.txt"), []byte("c==2\n"), 0o644)
			return key(base, "3.11.2")
		}, false},
	} {
		if got := tc.change(); (got == k0) != tc.same {
			t.Errorf("%s: key %s vs %s; want same %v", tc.name, got, k0, tc.same)
		}
	}
	fifo := filepath.Join(dir, "x.lock")
	if err := mkfifo(fifo); err == nil {
		if _, _, err := Key(base, dir, append(names, "x.lock"), "3.11.2"); err != nil {
			t.Errorf("a FIFO input: %v", err)
		}
	}
}
