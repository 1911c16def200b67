package envsetup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrackedPathsThroughSymlinkedFolders: a check can leave a tracked file's folder swapped
// for a symlink (to /etc, to another ticket's files); the environment's build copy, its key
// and the requirements it follows must not read through it. Run as root, the daemon would
// otherwise copy a file only root may read into the folder the recipe runs in as nobody.
func TestTrackedPathsThroughSymlinkedFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tree := filepath.Join(root, "tree")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{tree, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tree, "requirements.txt"), "-r conf/extra.txt\n")
	write(filepath.Join(tree, "README.md"), "readme\n")
	write(filepath.Join(tree, "link-ok"), "")
	os.Remove(filepath.Join(tree, "link-ok"))
	if err := os.Symlink("README.md", filepath.Join(tree, "link-ok")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(outside, "extra.txt"), "-r secret.txt\n")
	write(filepath.Join(outside, "secret.txt"), "SECRET-OUTSIDE\n")
	write(filepath.Join(outside, "data.txt"), "SECRET-OUTSIDE\n")
	// What a check left: the tracked folders pkg and conf are links out of the tree.
	for _, d := range []string{"pkg", "conf"} {
		if err := os.Symlink(outside, filepath.Join(tree, d)); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"README.md", "conf/extra.txt", "conf/secret.txt", "link-ok", "pkg/data.txt", "requirements.txt"}

	dst := filepath.Join(root, "copy")
	if err := copyFiles(tree, dst, files); err != nil {
		t.Fatalf("copyFiles: %v", err)
	}
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "SECRET") {
			t.Errorf("copyFiles copied %s through a symlinked folder: %q", p, data)
		}
		return nil
	})
	if target, err := os.Readlink(filepath.Join(dst, "link-ok")); err != nil || target != "README.md" {
		t.Errorf("the tracked symlink link-ok was not copied as itself: %q, %v", target, err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "README.md")); err != nil || string(data) != "readme\n" {
		t.Errorf("README.md was not copied: %q, %v", data, err)
	}

	r := Recipe{Commands: []string{`"$PYTHON" -m venv "$ENV"`}, Inputs: []string{"requirements.txt", "pkg/*.txt", "conf/*.txt"}}
	k1, inputs, err := Key(r, tree, files, "3.11.2")
	if err != nil {
		t.Fatalf("Key: %v", err)
	}
	write(filepath.Join(outside, "data.txt"), "CHANGED\n")
	write(filepath.Join(outside, "extra.txt"), "-r other.txt\n")
	k2, _, err := Key(r, tree, files, "3.11.2")
	if err != nil {
		t.Fatalf("Key: %v", err)
	}
	if k1 != k2 {
		t.Errorf("the key changed with files outside the tree (%s, then %s): it read through a symlinked folder", k1, k2)
	}
	t.Logf("inputs: %q", inputs)
}
