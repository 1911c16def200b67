package validate

import (
	"os"
	"path/filepath"
	"testing"
)

// TestVersionFileReadsNoPlantedConfig: the build configuration that names a version file is
// read as a check may have left it in the worktree: a setup.py a test planted as a symlink
// is not followed (here to a file outside that names the module; to /dev/zero it would fill
// the daemon's memory, which is why that case is not run here); the configuration in the
// worktree itself is read.
func TestVersionFileReadsNoPlantedConfig(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "setup.py")
	if err := os.WriteFile(outside, []byte("setup(version_file='pkg/_version.py')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		plant  func(t *testing.T, p string) error
		wantOK bool
	}{
		{"a regular setup.py", func(t *testing.T, p string) error {
			return os.WriteFile(p, []byte("setup(version_file='pkg/_version.py')\n"), 0o644)
		}, true},
		{"a symlink to a file outside", func(t *testing.T, p string) error { return os.Symlink(outside, p) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "pkg"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "pkg", "__init__.py"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tt.plant(t, filepath.Join(dir, "setup.py")); err != nil {
				t.Fatal(err)
			}
			p, config, ok := versionFile(dir, "pkg._version")
			if ok != tt.wantOK {
				t.Errorf("versionFile with %s: %q from %q, %v; want found %v", tt.name, p, config, ok, tt.wantOK)
			}
		})
	}
}
