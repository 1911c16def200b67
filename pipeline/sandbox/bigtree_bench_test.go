package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCommandBigTree measures a sandboxed command's start on a worktree of 5,000 and
// 10,000 files (issue 37: it should not grow with the repository): go test -bench
// CommandBigTree -run ^$ ./pipeline/sandbox. As root it includes the grant of the worktree
// to the checks' user.
func BenchmarkCommandBigTree(b *testing.B) {
	if _, err := Probe(context.Background(), ""); err != nil {
		b.Skipf("bubblewrap is not usable here: %v", err)
	}
	for _, n := range []int{5000, 10000} {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				d := filepath.Join(dir, fmt.Sprintf("pkg%02d", i/500), fmt.Sprintf("mod%02d", i/50%10))
				if err := os.MkdirAll(d, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.py", i%50)), []byte("x = 1\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			var build, run time.Duration
			for b.Loop() {
				scratch, err := NewScratch(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				s := Spec{Mode: ModeBwrap, Dir: dir, Reports: scratch.Dir, Env: []string{"PATH=/usr/bin:/bin"}}
				t0 := time.Now()
				cmd, err := s.Command(context.Background(), []string{"true"})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				build += t1.Sub(t0)
				run += time.Since(t1)
				scratch.Remove()
			}
			b.ReportMetric(float64(build.Microseconds())/float64(b.N), "build-µs/op")
			b.ReportMetric(float64(run.Microseconds())/float64(b.N), "run-µs/op")
		})
	}
}
