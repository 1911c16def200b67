package validate

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDynamic(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		names     []string
		opaque    bool
	}{
		{"plugin list", `pytest_plugins = ["pkg.fixtures", 'other']` + "\n", []string{"pkg.fixtures", "other"}, false},
		{"literal import_module", `m = importlib.import_module("pkg.plug")` + "\n", []string{"pkg.plug"}, false},
		{"literal with package", `m = importlib.import_module(".plug", "pkg")` + "\n", []string{"plug", "pkg"}, false},
		{"computed import_module", "m = importlib.import_module(name)\n", nil, true},
		{"computed __import__", "m = __import__('pkg.' + n)\n", nil, true},
		{"iter_modules", "for m in pkgutil.iter_modules(p.__path__): pass\n", nil, true},
		{"path literal", `runpy_target = "pkg/tool.py"` + "\n", []string{"pkg.tool"}, false},
		{"comment is not code", "# importlib.import_module(x) 'pkg.a'\n", nil, false},
		{"method of another name", "x.my_import_module(y)\n", nil, false},
		{"triple quoted doc", `"""Loads pkg.mod lazily."""` + "\n", nil, false},
		{"sentence is not a name", `s = "not a module"` + "\n", nil, false},
		{"escaped quote", `s = "a\"b"; t = "pkg.x"` + "\n", []string{"pkg.x"}, false},
	} {
		got := ParseDynamic([]byte(tc.src))
		if !reflect.DeepEqual(got.Names, tc.names) || got.Opaque != tc.opaque {
			t.Errorf("%s: ParseDynamic(%q) = %+v; want names %q opaque %v", tc.name, tc.src, got, tc.names, tc.opaque)
		}
	}
}

func TestModuleNames(t *testing.T) {
	got := ModuleNames("src/pkg/sub/mod.py")
	want := []string{"src.pkg.sub.mod", "pkg.sub.mod", "sub.mod", "mod"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ModuleNames = %q; want %q", got, want)
	}
	if got := ModuleNames("pkg/__init__.py"); !reflect.DeepEqual(got, []string{"pkg"}) {
		t.Errorf("ModuleNames(pkg/__init__.py) = %q", got)
	}
}

func TestDynamicReason(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // a part of the reason; "" for none
	}{
		{"static only", map[string]string{"pkg/__init__.py": "", "pkg/a.py": "import pkg.b\n", "pkg/b.py": ""}, ""},
		{"named in a plugin list", map[string]string{"conftest.py": "pytest_plugins = ['pkg.b']\n", "pkg/__init__.py": "", "pkg/b.py": ""}, `"pkg.b"`},
		{"computed elsewhere", map[string]string{"loader.py": "import importlib\nimportlib.import_module(n)\n", "pkg/b.py": ""}, "loader.py loads modules"},
	} {
		g, err := ScanImports(writeTree(t, tc.files))
		if err != nil {
			t.Fatal(err)
		}
		got := g.DynamicReason("pkg/b.py")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: DynamicReason = %q; want one containing %q", tc.name, got, tc.want)
		}
	}
}

// FuzzParseDynamic: any source parses without panicking, every name is a dotted name, and
// each is reported once.
func FuzzParseDynamic(f *testing.F) {
	addSeeds(f, "dynamic")
	f.Fuzz(func(t *testing.T, src []byte) {
		d := ParseDynamic(src)
		seen := map[string]bool{}
		for _, n := range d.Names {
			if _, ok := dotted(n); !ok || len(n) > maxLiteral || seen[n] {
				t.Fatalf("name %q (dotted name, under %d bytes, once)", n, maxLiteral)
			}
			seen[n] = true
		}
	})
}
