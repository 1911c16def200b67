package validate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// BenchmarkRunOneTestBig runs one selected test file with pytest in a generated repository
// of about 5,000 and 10,000 files, as a submit's first tier does (issue 37: a check's cost
// around the process, sandbox-µs, should not grow with the repository).
// ready: the worktree made ready for the checks when created (sandbox.ReadyForChecks, which
// only a root daemon does), so no check walks it to grant it.
// go test ./pipeline/validate -run XXX -bench RunOneTestBig -benchtime 10x
func BenchmarkRunOneTestBig(b *testing.B) {
	if _, err := ResolvePytest(context.Background()); err != nil {
		b.Skipf("pytest not installed (apt-get install python3-pytest): %v", err)
	}
	mode := sandbox.ModeBwrap
	if _, err := sandbox.Probe(context.Background(), ""); err != nil {
		mode = sandbox.ModeNone
	}
	for _, c := range []struct {
		pkgs  int
		ready bool
	}{{50, false}, {100, false}, {50, true}, {100, true}} {
		pkgs := c.pkgs
		dir := b.TempDir()
		if c.ready { // as the daemon run as root makes its worktrees (worktree.Manager.Ready)
			if err := sandbox.ReadyForChecks(dir, sandbox.Nobody); err != nil {
				b.Fatal(err)
			}
		}
		for p := range pkgs {
			pkg := filepath.Join(dir, "shop", fmt.Sprintf("p%02d", p))
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				b.Fatal(err)
			}
			os.WriteFile(filepath.Join(pkg, "__init__.py"), nil, 0o644)
			for m := range 100 {
				os.WriteFile(filepath.Join(pkg, fmt.Sprintf("m%02d.py", m)), []byte("def f(x):\n    return x + 1\n"), 0o644)
			}
		}
		os.WriteFile(filepath.Join(dir, "shop", "__init__.py"), nil, 0o644)
		os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
		os.WriteFile(filepath.Join(dir, "tests", "test_one.py"), []byte("from shop.p00.m00 import f\n\ndef test_f():\n    assert f(1) == 2\n"), 0o644)
		r := Runner{Sandbox: mode}
		check := Check{Name: "tests", Kind: KindPytest, Only: []string{"tests/test_one.py"}}
		b.Run(fmt.Sprintf("files=%d/ready=%v", pkgs*101, c.ready), func(b *testing.B) {
			var around time.Duration
			for b.Loop() {
				start := time.Now()
				res := r.Run(context.Background(), dir, []Check{check})[0]
				if !res.Passed {
					b.Fatalf("check failed: %s\n%s", res.Summary, res.Output)
				}
				around += time.Since(start) - res.Duration
			}
			b.ReportMetric(float64(around.Microseconds())/float64(b.N), "sandbox-µs/op")
		})
	}
}
