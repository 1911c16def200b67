package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// secretsTree makes a small /etc: readable files and folders, a secret file, a secret folder
// and a symlink, every folder's times set an hour back (so a name added later changes its
// mtime whatever the file system's clock granularity).
func secretsTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{"ssh", 0o755}, {"ssl", 0o755}, {"ssl/private", 0o700}, {"deep", 0o755}, {"deep/er", 0o755}} {
		if err := os.Mkdir(filepath.Join(root, d.path), d.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, d.path), d.mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{"hostname", 0o644}, {"shadow", 0o640}, {"ssh/ssh_config", 0o644},
		{"ssh/ssh_host_ed25519_key", 0o600}, {"ssl/private/key.pem", 0o600},
		{"deep/er/app.conf", 0o644},
	} {
		if err := os.WriteFile(filepath.Join(root, f.path), nil, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, f.path), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("hostname", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	backdate(t, root)
	return root
}

// backdate sets every folder's atime and mtime under root an hour back.
func backdate(t *testing.T, root string) {
	t.Helper()
	past := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chtimes(p, past, past)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// freshWalk is what an uncached walk of root finds now.
func freshWalk(root string) []string {
	w, _ := (&secretsCache{dir: root, now: time.Now}).walk()
	return w.secrets
}

// TestEtcSecretsCacheSeesChanges: the kept walk of /etc is reused only while nothing it
// depends on changed. Each change below comes after a walk that is being reused; the next
// list must be what a fresh walk finds (a new or newly secret file hidden, a file no longer
// secret shown), and must not come from the kept walk.
func TestEtcSecretsCacheSeesChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
		want   string // a path (relative to root) the list must hold afterwards; "" none
		gone   string // a path it must no longer hold; "" none
	}{
		{"new secret file at the top", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "ticketd.env"), 0o600)
		}, "ticketd.env", ""},
		{"new secret file two folders down", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "deep/er/token"), 0o600)
		}, "deep/er/token", ""},
		{"readable file made secret (chmod only: no folder changes)", func(t *testing.T, root string) {
			chmod(t, filepath.Join(root, "deep/er/app.conf"), 0o600)
		}, "deep/er/app.conf", ""},
		{"readable folder made unsearchable", func(t *testing.T, root string) {
			chmod(t, filepath.Join(root, "deep"), 0o700)
		}, "deep", ""},
		{"new secret folder", func(t *testing.T, root string) {
			if err := os.Mkdir(filepath.Join(root, "deep/er/vault"), 0o700); err != nil {
				t.Fatal(err)
			}
			chmod(t, filepath.Join(root, "deep/er/vault"), 0o700)
		}, "deep/er/vault", ""},
		{"symlink replaced by a secret file", func(t *testing.T, root string) {
			tmp := filepath.Join(root, "deep", ".new")
			write(t, tmp, 0o600)
			if err := os.Rename(tmp, filepath.Join(root, "link")); err != nil {
				t.Fatal(err)
			}
		}, "link", ""},
		{"secret file replaced by a readable one", func(t *testing.T, root string) {
			tmp := filepath.Join(root, ".new")
			write(t, tmp, 0o644)
			if err := os.Rename(tmp, filepath.Join(root, "shadow")); err != nil {
				t.Fatal(err)
			}
		}, "", "shadow"},
		{"secret file made readable", func(t *testing.T, root string) {
			chmod(t, filepath.Join(root, "ssh/ssh_host_ed25519_key"), 0o644)
		}, "", "ssh/ssh_host_ed25519_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := secretsTree(t)
			// A clock an hour ahead: every folder's times are old enough to trust.
			c := &secretsCache{dir: root, now: func() time.Time { return time.Now().Add(time.Hour) }}
			first := c.list()
			if !slices.Equal(first, freshWalk(root)) {
				t.Fatalf("first list %q, a fresh walk %q", first, freshWalk(root))
			}
			for _, secret := range []string{"shadow", "ssh/ssh_host_ed25519_key", "ssl/private"} {
				if !slices.Contains(first, filepath.Join(root, secret)) {
					t.Errorf("first list %q lacks %s", first, secret)
				}
			}
			if again := c.list(); !slices.Equal(again, first) || c.walks != 1 {
				t.Fatalf("nothing changed: list %q after %d walks, want %q from 1 walk (the kept one)", again, c.walks, first)
			}
			tt.change(t, root)
			got := c.list()
			if want := freshWalk(root); !slices.Equal(got, want) {
				t.Errorf("after the change: list %q, a fresh walk finds %q", got, want)
			}
			if tt.want != "" && !slices.Contains(got, filepath.Join(root, tt.want)) {
				t.Errorf("after the change: %s is not hidden (list %q)", tt.want, got)
			}
			if tt.gone != "" && slices.Contains(got, filepath.Join(root, tt.gone)) {
				t.Errorf("after the change: %s is still hidden (list %q)", tt.gone, got)
			}
			if c.walks != 2 {
				t.Errorf("after the change: %d walks, want 2 (the change seen)", c.walks)
			}
		})
	}
}

// TestEtcSecretsCacheRacyFolder: a walk that saw a folder changed within racyWindow of its
// start is not kept, since a name added in the same clock tick as the walk's look would leave
// the folder's times as they were; one that saw only older changes is.
func TestEtcSecretsCacheRacyFolder(t *testing.T) {
	root := secretsTree(t) // every folder's ctime is about now (backdating its mtime set it)
	made := newestChange(t, root)
	for _, tt := range []struct {
		clock time.Duration // the walk's start, after the tree was made
		keep  bool
	}{
		{0, false},
		{racyWindow / 2, false},
		{racyWindow + time.Minute, true},
	} {
		c := &secretsCache{dir: root, now: func() time.Time { return made.Add(tt.clock) }}
		if _, keep := c.walk(); keep != tt.keep {
			t.Errorf("a walk %v after the folders changed: kept %v, want %v", tt.clock, keep, tt.keep)
		}
		c.list()
		c.list()
		if want := map[bool]int{true: 1, false: 2}[tt.keep]; c.walks != want {
			t.Errorf("a walk %v after the folders changed: two lists took %d walks, want %d", tt.clock, c.walks, want)
		}
	}
}

// newestChange is the latest ctime of the folders under root.
func newestChange(t *testing.T, root string) time.Time {
	t.Helper()
	var newest time.Time
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		if c := time.Unix(st.Ctim.Unix()); c.After(newest) {
			newest = c
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return newest
}

// TestEtcSecretsOfThisHost: the list of the real /etc, kept or not, is what a fresh walk finds.
func TestEtcSecretsOfThisHost(t *testing.T) {
	if got, want := etcSecrets.list(), freshWalk("/etc"); !slices.Equal(got, want) {
		t.Errorf("etcSecrets.list() = %q, a fresh walk of /etc %q", got, want)
	}
}

func write(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
	chmod(t, p, mode)
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkEtcSecrets: what each sandboxed command pays for the list of /etc's secrets, kept
// (list) or walked afresh (walk): go test -run '^$' -bench EtcSecrets ./pipeline/sandbox
func BenchmarkEtcSecrets(b *testing.B) {
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		c := &secretsCache{dir: "/etc", now: time.Now}
		for b.Loop() {
			c.walk()
		}
	})
	b.Run("list", func(b *testing.B) {
		b.ReportAllocs()
		c := &secretsCache{dir: "/etc", now: time.Now}
		for b.Loop() {
			c.list()
		}
	})
}
