package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRepoMap renders the map of 2,000 small Python files (the map stops at
// MaxRepoMapBytes, so more files change nothing): the memory is the per-file reads.
// go test ./pipeline -run XXX -bench RepoMap -benchmem
func BenchmarkRepoMap(b *testing.B) {
	dir := b.TempDir()
	var files []string
	for i := range 2000 {
		rel := fmt.Sprintf("pkg%02d/mod%04d.py", i%20, i)
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			b.Fatal(err)
		}
		src := fmt.Sprintf("import os\n\n\nclass C%d:\n    def m(self):\n        return 1\n\n\ndef f%d(x):\n    return x\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		files = append(files, rel)
	}
	b.ReportAllocs()
	for b.Loop() {
		if m := RepoMap(dir, files); len(m) == 0 {
			b.Fatal("empty map")
		}
	}
}
