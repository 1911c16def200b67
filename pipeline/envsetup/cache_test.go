package envsetup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// A requirements file pip reads only through an include (-r, -c, in an input file or in a
// command) keys the environment too: changing it rebuilds instead of hiding behind the cache.
// What is no tracked file of the checkout (a URL, a path outside it) is not read.
func TestKeyFollowsIncludes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		files    map[string]string
		commands []string
		changed  string // a file whose change must change the key; "" none
		inputs   []string
	}{
		{
			name: "-r in requirements.txt, relative to it, transitively",
			files: map[string]string{
				"requirements.txt":  "# app\n-r ci/test.txt  # tests\nshinyfmt==1.0 ; python_version >= '3.8'\n",
				"ci/test.txt":       "--requirement=../lint/base.txt\npytest\n",
				"lint/base.txt":     "ruff\n",
				"ci/unrelated.txt":  "x\n",
				"requirements2.txt": "y\n",
			},
			changed: "lint/base.txt",
			inputs:  []string{"ci/test.txt", "lint/base.txt", "requirements.txt", "requirements2.txt"},
		},
		{
			name:     "-r and -c in a command",
			files:    map[string]string{"dev/requirements-dev.in": "-c ../constraints/pins.in\nshinyfmt\n", "constraints/pins.in": "shinyfmt==1.0\n"},
			commands: []string{`"$ENV/bin/pip" install --no-index -r "dev/requirements-dev.in"`},
			changed:  "constraints/pins.in",
			inputs:   []string{"constraints/pins.in", "dev/requirements-dev.in"},
		},
		{
			name:    "continued lines and a comment that names a file",
			files:   map[string]string{"requirements.txt": "# -r notes.txt\n-r \\\n  extra.txt\n", "extra.txt": "a\n", "notes.txt": "n\n"},
			changed: "extra.txt",
			inputs:  []string{"extra.txt", "requirements.txt"},
		},
		{
			name:   "URLs, absolute paths, escapes and untracked files are not read",
			files:  map[string]string{"requirements.txt": "-r https://example.invalid/r.txt\n-r /etc/passwd\n-r ../../outside.txt\n-r missing.txt\n-e .\n"},
			inputs: []string{"requirements.txt"},
		},
		{
			name:   "an include cycle ends",
			files:  map[string]string{"requirements.txt": "-r requirements/dev.txt\n", "requirements/dev.txt": "-r ../requirements.txt\n"},
			inputs: []string{"requirements.txt", "requirements/dev.txt"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var names []string
			for n, c := range tc.files {
				writeFile(t, filepath.Join(dir, n), c)
				names = append(names, n)
			}
			r := Recipe{Commands: append([]string{`"$PYTHON" -m venv "$ENV"`}, tc.commands...)}
			k0, inputs, err := Key(r, dir, names, "3.11.2")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(inputs, tc.inputs) {
				t.Errorf("inputs %v; want %v", inputs, tc.inputs)
			}
			if tc.changed == "" {
				return
			}
			writeFile(t, filepath.Join(dir, tc.changed), "changed==2\n")
			if k1, _, err := Key(r, dir, names, "3.11.2"); err != nil || k1 == k0 {
				t.Errorf("after changing the included %s: key %s, was %s (%v); want a new key", tc.changed, k1, k0, err)
			}
		})
	}
}

// The wheelhouses a recipe names are its absolute --find-links folders, in each spelling pip
// takes; relative folders, URLs and paths with shell variables are not.
func TestFindLinks(t *testing.T) {
	t.Parallel()
	r := Recipe{Commands: []string{
		`"$ENV/bin/pip" install --no-index --find-links /srv/wheels -e ".[test]"`,
		`"$ENV/bin/pip" install --find-links="/srv/more/" -f /srv/wheels -f/opt/w pytest`,
		`pip install -f file:///mnt/w -f wheels -f https://example.invalid/w --find-links "$HOME/w" x`,
	}}
	got := strings.Join(r.FindLinks(), " ")
	if want := "/srv/wheels /srv/more /opt/w /mnt/w"; got != want {
		t.Errorf("FindLinks() = %q; want %q", got, want)
	}
}
