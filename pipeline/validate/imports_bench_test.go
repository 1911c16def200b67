package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkScanImports scans a generated repository of n packages of 90 modules in import
// chains (as scripts/bench --large generates), with a test file per package: the import
// graph's time and memory at 5k and 10k files.
// go test ./pipeline/validate -run XXX -bench ScanImports -benchmem (base-kept: a later
// submit's scan at the same base, BaseImports)
func BenchmarkScanImports(b *testing.B) {
	for _, pkgs := range []int{50, 100} {
		dir := b.TempDir()
		for p := range pkgs {
			pkg := filepath.Join(dir, "shop", fmt.Sprintf("p%02d", p))
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				b.Fatal(err)
			}
			os.WriteFile(filepath.Join(pkg, "__init__.py"), nil, 0o644)
			for m := range 90 {
				src := fmt.Sprintf("\"\"\"Module %d.\"\"\"\nimport os\n", m)
				if m%5 != 0 {
					src += fmt.Sprintf("from shop.p%02d import m%02d\n", p, m-1)
				}
				src += "\n\ndef f(x):\n    return x + 1\n"
				os.WriteFile(filepath.Join(pkg, fmt.Sprintf("m%02d.py", m)), []byte(src), 0o644)
			}
			os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
			os.WriteFile(filepath.Join(dir, "tests", fmt.Sprintf("test_p%02d.py", p)), []byte(fmt.Sprintf("from shop.p%02d.m04 import f\n", p)), 0o644)
		}
		b.Run(fmt.Sprintf("files=%d", pkgs*92), func(b *testing.B) {
			kept := keptBytes(b, dir)
			for b.Loop() {
				g, err := ScanImports(dir, "shop/p00/m00.py")
				if err != nil {
					b.Fatal(err)
				}
				if len(g.TestsAffectedBy([]string{"shop/p00/m00.py"})) != 1 {
					b.Fatal("want one test file reached")
				}
			}
			b.ReportMetric(kept, "kept-B")
		})
		// The graphs of submits at a base scanned once (BaseImports): only the changed file
		// is read.
		b.Run(fmt.Sprintf("files=%d/base-kept", pkgs*92), func(b *testing.B) {
			base, err := ScanBase(dir)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				g, err := base.Scan(dir, "shop/p00/m00.py")
				if err != nil {
					b.Fatal(err)
				}
				if len(g.TestsAffectedBy([]string{"shop/p00/m00.py"})) != 1 {
					b.Fatal("want one test file reached")
				}
			}
		})
	}
}

// keptBytes is the heap one graph of dir holds once the scan is over (live heap after a
// collection, with the graph against without it).
func keptBytes(b *testing.B, dir string) float64 {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g, err := ScanImports(dir)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(g)
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}
