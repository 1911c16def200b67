package validate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseImports(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []Import
	}{
		{"plain", "import os\n", []Import{{Module: "os"}}},
		{"dotted alias and list", "import a.b as c, d\n", []Import{{Module: "a.b"}, {Module: "d"}}},
		{"from names", "from calc.core import add, sub as s\n", []Import{{Module: "calc.core", Names: []string{"add", "sub"}}}},
		{"relative", "from . import helpers\nfrom ..pkg import mod\n", []Import{{Level: 1, Names: []string{"helpers"}}, {Module: "pkg", Level: 2, Names: []string{"mod"}}}},
		{"parenthesised over lines", "from x import (\n    a,\n    b,  # why\n)\n", []Import{{Module: "x", Names: []string{"a", "b"}}}},
		{"backslash continuation", "from x \\\n  import a\n", []Import{{Module: "x", Names: []string{"a"}}}},
		{"indented in a function", "def f():\n    import calc\n", []Import{{Module: "calc"}}},
		{"semicolons", "import a; import b\n", []Import{{Module: "a"}, {Module: "b"}}},
		{"star", "from m import *\n", []Import{{Module: "m", Star: true}}},
		{"comment only", "# import x\n", nil},
		{"not an import", "important = 1\nfromage = 2\n", nil},
		{"garbage", "from 1x import y\nimport ..\n", nil},
	} {
		got := ParseImports([]byte(tc.src))
		t.Logf("%s: %q -> %+v", tc.name, tc.src, got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ParseImports(%q) = %+v; want %+v", tc.name, tc.src, got, tc.want)
		}
	}
}

// writeTree creates files (path → content) under a fresh directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTestsAffectedBy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		changed []string
		want    []string
	}{
		{
			name: "root package, tests/ dir",
			files: map[string]string{
				"calc/__init__.py": "", "calc/core.py": "", "calc/fmt.py": "",
				"tests/test_core.py": "from calc.core import add\n",
				"tests/test_fmt.py":  "from calc import fmt\n",
				"tests/test_misc.py": "import os\n",
			},
			changed: []string{"calc/core.py"},
			want:    []string{"tests/test_core.py"},
		},
		{
			name: "src layout, test/ dir, import a.b as c",
			files: map[string]string{
				"src/shop/__init__.py": "", "src/shop/cart.py": "", "src/shop/tax.py": "",
				"test/test_cart.py": "import shop.cart as c\n",
				"test/test_tax.py":  "import shop.tax\n",
			},
			changed: []string{"src/shop/cart.py"},
			want:    []string{"test/test_cart.py"},
		},
		{
			name: "package __init__ affects every importer of the package",
			files: map[string]string{
				"calc/__init__.py": "", "calc/core.py": "",
				"tests/test_core.py":  "from calc.core import add\n",
				"tests/test_other.py": "import json\n",
			},
			changed: []string{"calc/__init__.py"},
			want:    []string{"tests/test_core.py"},
		},
		{
			name: "relative import inside a tests package",
			files: map[string]string{
				"pkg/__init__.py": "", "pkg/mod.py": "",
				"pkg/tests/__init__.py": "", "pkg/tests/test_mod.py": "from ..mod import f\n",
				"pkg/tests/test_none.py": "from . import helpers\n", "pkg/tests/helpers.py": "",
			},
			changed: []string{"pkg/mod.py"},
			want:    []string{"pkg/tests/test_mod.py"},
		},
		{
			name: "test beside module, conftest-less (rootdir insertion)",
			files: map[string]string{
				"lib/parse.py": "", "lib/test_parse.py": "from parse import parse\n", "lib/test_other.py": "import re\n",
			},
			changed: []string{"lib/parse.py"},
			want:    []string{"lib/test_parse.py"},
		},
		{
			name: "transitive through another module",
			files: map[string]string{
				"app/__init__.py": "", "app/core.py": "", "app/api.py": "from app import core\n",
				"tests/test_api.py": "from app.api import serve\n",
			},
			changed: []string{"app/core.py"},
			want:    []string{"tests/test_api.py"},
		},
		{
			name: "changed test file and conftest",
			files: map[string]string{
				"tests/conftest.py": "", "tests/test_a.py": "", "tests/unit/test_b.py": "", "other/test_c.py": "",
			},
			changed: []string{"tests/conftest.py"},
			want:    []string{"tests/test_a.py", "tests/unit/test_b.py"},
		},
		{
			name: "namespace package in src",
			files: map[string]string{
				"src/ns/thing.py": "", "tests/test_thing.py": "from ns.thing import x\n",
			},
			changed: []string{"src/ns/thing.py"},
			want:    []string{"tests/test_thing.py"},
		},
		{
			// cucumber-expressions: python/ is the Python project of a monorepo, its package
			// in python/src, which a check imports once that folder is on its path.
			name: "package in a subproject's src/",
			files: map[string]string{
				"python/src/cuke/__init__.py": "", "python/src/cuke/gen.py": "", "python/src/cuke/other.py": "",
				"python/tests/__init__.py": "", "python/tests/test_gen.py": "from cuke.gen import g\n",
				"python/tests/test_other.py": "import cuke.other\n", "go/gen.go": "",
			},
			changed: []string{"python/src/cuke/gen.py"},
			want:    []string{"python/tests/test_gen.py"},
		},
		{
			name: "package in the folder package_dir names (PyYAML's lib/)",
			files: map[string]string{
				"lib/yaml/__init__.py": "from .dumper import *\n", "lib/yaml/dumper.py": "from .representer import *\n", "lib/yaml/representer.py": "",
				"tests/test_dump.py": "import yaml\n", "tests/test_os.py": "import os\n",
			},
			changed: []string{"lib/yaml/representer.py"},
			want:    []string{"tests/test_dump.py"},
		},
		{
			name:    "non-python change selects nothing",
			files:   map[string]string{"README.md": "", "tests/test_a.py": "import a\n", "a.py": ""},
			changed: []string{"README.md"},
			want:    nil,
		},
		{
			name: "deleted module: its importers, not the deleted test",
			files: map[string]string{
				"calc/__init__.py": "", "tests/test_old.py": "from calc.old import f\n", "tests/test_new.py": "import calc\n",
			},
			changed: []string{"calc/old.py", "tests/test_gone.py"},
			want:    []string{"tests/test_old.py"},
		},
		{
			name:    "the changed test itself",
			files:   map[string]string{"tests/test_a.py": "", "tests/test_b.py": ""},
			changed: []string{"tests/test_b.py"},
			want:    []string{"tests/test_b.py"},
		},
		{
			name:    "environments are not scanned",
			files:   map[string]string{"a.py": "", ".venv/lib/test_x.py": "import a\n", "node_modules/p/test_y.py": "import a\n"},
			changed: []string{"a.py"},
			want:    nil,
		},
	} {
		dir := writeTree(t, tc.files)
		g, err := ScanImports(dir, tc.changed...)
		if err != nil {
			t.Fatal(err)
		}
		got := g.TestsAffectedBy(tc.changed)
		t.Logf("%s: changed %v -> %v", tc.name, tc.changed, got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: TestsAffectedBy(%v) = %v; want %v", tc.name, tc.changed, got, tc.want)
		}
	}
}

func TestScanImportsMissingDir(t *testing.T) {
	_, err := ScanImports(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("ScanImports(missing) err = %v; want one naming the directory", err)
	}
}

func FuzzParseImports(f *testing.F) {
	addSeeds(f, "imports")
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, imp := range ParseImports(src) {
			if imp.Level < 0 || (imp.Module == "" && imp.Level == 0) {
				t.Errorf("bad import %+v from %q", imp, src)
			}
			if _, ok := dotted(imp.Module); imp.Module != "" && !ok {
				t.Errorf("module %q is not a dotted name", imp.Module)
			}
		}
	})
}
