package validate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBaseImportsScan: a submit's graph made from the base's reads again what the change
// touched (all of the worktree when it adds a module) and takes the rest from the base's
// scan; its answers are the full scan's wherever the worktree outside the change is the
// base's.
func TestBaseImportsScan(t *testing.T) {
	base := map[string]string{
		"shop/__init__.py": "", "shop/cart.py": "from shop import tax\n", "shop/tax.py": "",
		"shop/rates.py":      "",
		"tests/test_cart.py": "from shop.cart import total\n",
		"tests/test_tax.py":  "import shop.tax\n",
		"tests/test_load.py": "NAME = 'shop.rates'\n",
	}
	for _, tt := range []struct {
		name    string
		write   map[string]string // written after the first scan
		changed []string          // the change's paths, as the caller names them
		seed    string            // what the second scan is asked about
		want    []string          // tests it reaches
		dynamic bool              // whether seed may be loaded by name (DynamicReason)
	}{
		{name: "unchanged base", seed: "shop/tax.py", want: []string{"tests/test_cart.py", "tests/test_tax.py"}},
		{name: "an edit the change names is read again",
			write:   map[string]string{"shop/cart.py": "from shop import rates\n"},
			changed: []string{"shop/cart.py"}, seed: "shop/rates.py",
			want: []string{"tests/test_cart.py"}, dynamic: true}, // test_load names it
		{name: "an added module: every file is read",
			write:   map[string]string{"shop/new.py": "", "tests/test_new.py": "import shop.new\n", "shop/rates.py": "from shop import new\n"},
			changed: []string{"shop/new.py", "tests/test_new.py", "shop/rates.py"},
			seed:    "shop/new.py", want: []string{"tests/test_new.py"}},
		{name: "a literal of the base names a module", seed: "shop/rates.py", dynamic: true},
		{name: "an edit that adds a literal naming a module",
			write:   map[string]string{"shop/cart.py": "PLUGIN = 'shop.tax'\n"},
			changed: []string{"shop/cart.py"}, seed: "shop/tax.py",
			want: []string{"tests/test_tax.py"}, dynamic: true},
		{name: "an edit that loads modules by a computed name: what loads it is reached",
			write:   map[string]string{"shop/cart.py": "import importlib\nmod = importlib.import_module(name)\n"},
			changed: []string{"shop/cart.py"}, seed: "shop/tax.py",
			want: []string{"tests/test_cart.py", "tests/test_tax.py"}},
		{name: "an edit that loads modules by a computed name in a file nothing imports",
			write:   map[string]string{"shop/run.py": "import importlib\nmod = importlib.import_module(name)\n"},
			changed: []string{"shop/run.py"}, seed: "shop/tax.py",
			want: []string{"tests/test_cart.py", "tests/test_tax.py"}, dynamic: true},
		{name: "a deleted file still counts as a module",
			write:   map[string]string{"shop/tax.py": deleted},
			changed: []string{"shop/tax.py"}, seed: "shop/tax.py",
			want: []string{"tests/test_cart.py", "tests/test_tax.py"}},
		{name: "a tracked file outside the change is the base's (the guard keeps it so)",
			write: map[string]string{"shop/cart.py": "import os\n"},
			seed:  "shop/tax.py", want: []string{"tests/test_cart.py", "tests/test_tax.py"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, base)
			b, err := ScanBase(dir)
			if err != nil {
				t.Fatal(err)
			}
			for p, content := range tt.write {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if content == deleted {
					if err := os.Remove(full); err != nil {
						t.Fatal(err)
					}
				} else if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g, err := b.Scan(dir, tt.changed...)
			if err != nil {
				t.Fatal(err)
			}
			got := g.TestsAffectedBy([]string{tt.seed})
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("tests reached from %s = %v; want %v", tt.seed, got, tt.want)
			}
			if why := g.DynamicReason(tt.seed); (why != "") != tt.dynamic {
				t.Errorf("DynamicReason(%s) = %q; want a reason: %v", tt.seed, why, tt.dynamic)
			}
		})
	}
}

// deleted, as a content in TestBaseImportsScan's write, removes the file.
const deleted = "\x00deleted"

// TestBaseImportsMatchesScan: where the worktree is its base outside the change, the graph
// made from the base's answers as the full scan for every file.
func TestBaseImportsMatchesScan(t *testing.T) {
	files := map[string]string{
		"pkg/__init__.py": "from .a import x\n", "pkg/a.py": "from . import b\n", "pkg/b.py": "import pkg.c\n",
		"pkg/c.py": "", "pkg/sub/__init__.py": "", "pkg/sub/d.py": "from ..a import x\n",
		"tests/test_a.py": "import pkg.a\n", "tests/test_d.py": "from pkg.sub import d\n",
		"tests/test_c.py": "from pkg import c\n", "README.md": "not python\n",
	}
	dir := writeTree(t, files)
	b, err := ScanBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, changed := range [][]string{nil, {"pkg/b.py"}, {"pkg/sub/d.py", "tests/test_a.py"}} {
		kept, err := b.Scan(dir, changed...)
		if err != nil {
			t.Fatal(err)
		}
		full, err := ScanImports(dir, changed...)
		if err != nil {
			t.Fatal(err)
		}
		for p := range files {
			k, f := kept.TestsAffectedBy([]string{p}), full.TestsAffectedBy([]string{p})
			slices.Sort(k)
			slices.Sort(f)
			if !slices.Equal(k, f) {
				t.Errorf("change %v: tests reached from %s: from the base's %v, full scan %v", changed, p, k, f)
			}
		}
	}
}
