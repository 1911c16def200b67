package validate

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// lazyImports is networkx's lazy_imports.py in short: attach() returns a __getattr__ that
// imports f"{module_name}.{name}", and nothing in the package calls attach(); one test does.
const lazyImports = `import importlib
import importlib.util
import sys

__all__ = ["attach", "_lazy_import"]


def attach(module_name, submodules=None):
    """Attach lazily loaded submodules.

    The typical way to call this function::

      __getattr__, __lazy_dir__, __all__ = lazy.attach(
          __name__, ["mysubmodule"]
      )
    """
    submodules = set(submodules or ())

    def __getattr__(name):
        if name in submodules:
            return importlib.import_module(f"{module_name}.{name}")
        raise AttributeError(f"No {module_name} attribute {name}")

    return __getattr__


def _lazy_import(fullname):
    try:
        return sys.modules[fullname]
    except KeyError:
        pass
    spec = importlib.util.find_spec(fullname)
    module = importlib.util.module_from_spec(spec)
    sys.modules[fullname] = module
    spec.loader.exec_module(module)
    return module
`

// TestComputedImportSelection: a computed import is walked as an import of every module it
// may load, made by the code that runs it. networkx's shape (a package whose __init__
// imports lazy_imports.py, whose attach() imports by a computed name and is called by one
// test) reaches that test besides the ones the change reaches by imports, not the whole
// suite; a computed import that runs on load reaches every test that loads its file; a
// known prefix limits what it may load, a package on its way or a module that imports the
// change included; a file nothing imports asks for the whole suite.
func TestComputedImportSelection(t *testing.T) {
	base := map[string]string{
		"pkg/__init__.py":            "from pkg.lazy import _lazy_import\nfrom pkg.algorithms import *\n",
		"pkg/lazy.py":                lazyImports,
		"pkg/algorithms/__init__.py": "from pkg.algorithms.cuts import *\nfrom pkg.algorithms.paths import *\n",
		"pkg/algorithms/cuts.py":     "__all__ = [\"volume\"]\n\n\ndef volume(G):\n    return sum(G)\n",
		"pkg/algorithms/paths.py":    "__all__ = [\"shortest\"]\n\n\ndef shortest(G):\n    return min(G)\n",
		"pkg/helpers.py":             "def helper():\n    return 1\n",
		"pkg/plugins/__init__.py":    "",
		"pkg/plugins/alpha.py":       "from pkg.helpers import helper\n",
		"pkg/registry.py":            "import importlib\n\n\ndef load(name):\n    return importlib.import_module(f\"pkg.plugins.{name}\")\n",
		"tests/test_cuts.py":         "import pkg\n\n\ndef test_volume():\n    assert pkg.volume([1]) == 1\n",
		"tests/test_paths.py":        "import pkg\n\n\ndef test_shortest():\n    assert pkg.shortest([1]) == 1\n",
		"tests/test_lazy.py":         "import pkg.lazy as lazy\n\n\ndef test_attach():\n    assert lazy.attach('pkg', ['x'])\n",
		"tests/test_registry.py":     "from pkg.registry import load\n\n\ndef test_load():\n    assert load('alpha')\n",
		"tests/test_helpers.py":      "from pkg.helpers import helper\n\n\ndef test_helper():\n    assert helper() == 1\n",
	}
	body := func(p string) map[string]string { // a function body edited
		return map[string]string{p: strings.Replace(base[p], "return", "return 0 or", 1)}
	}
	for _, tt := range []struct {
		name    string
		extra   map[string]string // added to (or replacing in) base, before the base scan (the name walk needs one)
		edit    map[string]string // written after the base scan: the change
		want    []string
		dynamic string // part of DynamicReason; "" for none
	}{
		{name: "networkx: a function body reaches its tests and the one test that calls attach()",
			edit: body("pkg/algorithms/cuts.py"), want: []string{"tests/test_cuts.py", "tests/test_lazy.py"}},
		{name: "a known prefix: a module outside it is not loaded by it",
			edit: body("pkg/algorithms/paths.py"), want: []string{"tests/test_lazy.py", "tests/test_paths.py"}},
		{name: "a known prefix: a module under it",
			extra: map[string]string{"pkg/plugins/beta.py": "def b():\n    return 2\n"},
			edit:  body("pkg/plugins/beta.py"), want: []string{"tests/test_lazy.py", "tests/test_registry.py"}},
		{name: "a known prefix: a module that one under it imports",
			edit: body("pkg/helpers.py"), want: []string{"tests/test_helpers.py", "tests/test_lazy.py", "tests/test_registry.py"}},
		{name: "{__name__}: the file's own package is the prefix",
			extra: map[string]string{"pkg/plugins/__init__.py": "import importlib\n\n\ndef load(name):\n    return importlib.import_module(f\"{__name__}.{name}\")\n",
				"tests/test_plugins.py": "from pkg.plugins import load\n\n\ndef test_load():\n    assert load('alpha')\n"},
			edit: body("pkg/helpers.py"), want: []string{"tests/test_helpers.py", "tests/test_lazy.py", "tests/test_plugins.py", "tests/test_registry.py"}},
		{name: "a computed import on load reaches every test that loads its file",
			extra: map[string]string{"pkg/helpers.py": "import importlib, os\nPLUGIN = importlib.import_module(os.environ['P'])\n"},
			edit:  body("pkg/algorithms/paths.py"), want: []string{"tests/test_helpers.py", "tests/test_lazy.py", "tests/test_paths.py", "tests/test_registry.py"}},
		{name: "a decorated function may run on load",
			extra: map[string]string{"pkg/helpers.py": "import functools, importlib\n\n\n@functools.cache\ndef helper(n=None):\n    return importlib.import_module(n)\n"},
			edit:  body("pkg/algorithms/paths.py"), want: []string{"tests/test_helpers.py", "tests/test_lazy.py", "tests/test_paths.py", "tests/test_registry.py"}},
		{name: "a function its own file calls runs on load",
			extra: map[string]string{"pkg/helpers.py": "import importlib\n\n\ndef helper(n=None):\n    return importlib.import_module(n)\n\n\nDEFAULT = helper('json')\n"},
			edit:  body("pkg/algorithms/paths.py"), want: []string{"tests/test_helpers.py", "tests/test_lazy.py", "tests/test_paths.py", "tests/test_registry.py"}},
		{name: "a module __getattr__ runs on attribute access",
			extra: map[string]string{"pkg/helpers.py": "import importlib\n\n\ndef __getattr__(n):\n    return importlib.import_module(n)\n"},
			edit:  body("pkg/algorithms/paths.py"), want: []string{"tests/test_helpers.py", "tests/test_lazy.py", "tests/test_paths.py", "tests/test_registry.py"}},
		{name: "a test that imports by a computed name",
			extra: map[string]string{"tests/test_dyn.py": "import importlib\n\n\ndef test_any():\n    importlib.import_module(NAME)\n"},
			edit:  body("pkg/algorithms/paths.py"), want: []string{"tests/test_dyn.py", "tests/test_lazy.py", "tests/test_paths.py"}},
		{name: "a file nothing imports: the whole suite",
			extra: map[string]string{"tools/run.py": "import importlib, sys\nimportlib.import_module(sys.argv[1])\n"},
			edit:  body("pkg/algorithms/paths.py"), want: []string{"tests/test_lazy.py", "tests/test_paths.py"}, dynamic: "tools/run.py loads modules"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			for k, v := range tt.extra {
				files[k] = v
			}
			dir := writeTree(t, files)
			b, err := ScanBase(dir)
			if err != nil {
				t.Fatal(err)
			}
			var changed []string
			for p, content := range tt.edit {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				changed = append(changed, p)
			}
			g, err := b.Scan(dir, changed...)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.TestsAffectedBy(changed); !slices.Equal(got, tt.want) {
				t.Errorf("selected %q\nwant %q", got, tt.want)
			}
			why := g.DynamicReason(changed[0])
			if (tt.dynamic == "") != (why == "") || !strings.Contains(why, tt.dynamic) {
				t.Errorf("DynamicReason = %q; want one holding %q", why, tt.dynamic)
			}
		})
	}
}

func TestOpaqueSites(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []opaqueSite
	}{
		{"module level", "import importlib\nm = importlib.import_module(name)\n", []opaqueSite{{}}},
		{"in a function", "def load(n):\n    return importlib.import_module(n)\n", []opaqueSite{{unit: "load"}}},
		{"black's closing bracket stays in the def", "def load(\n    n,\n) -> None:\n    return importlib.import_module(n)\n", []opaqueSite{{unit: "load"}}},
		{"in a method", "class Loader:\n    def get(self, n):\n        return __import__(n)\n", []opaqueSite{{unit: "Loader"}}},
		{"decorated", "@cache\ndef load(n):\n    return importlib.import_module(n)\n", []opaqueSite{{}}},
		{"a decorator's argument", "@register(importlib.import_module(n))\ndef load():\n    pass\n", []opaqueSite{{}}},
		{"named elsewhere in the file", "def load(n):\n    return importlib.import_module(n)\n\n\nX = load('a')\n", []opaqueSite{{}}},
		{"named in a string elsewhere", "def load(n):\n    return importlib.import_module(n)\n\n\nX = getattr(mod, 'load')\n", []opaqueSite{{}}},
		{"named in __all__ and a docstring only", "__all__ = [\n    \"load\",\n]\n\n\ndef load(n):\n    \"\"\"Call load(n).\"\"\"\n    return importlib.import_module(n)  # load\n", []opaqueSite{{unit: "load"}}},
		{"module __getattr__", "def __getattr__(n):\n    return importlib.import_module(n)\n", []opaqueSite{{}}},
		{"after a def, module level again", "def f():\n    pass\nm = importlib.import_module(n)\n", []opaqueSite{{}}},
		{"f-string prefix", "def f(n):\n    return importlib.import_module(f\"pkg.plugins.{n}\")\n", []opaqueSite{{unit: "f", prefix: "pkg.plugins."}}},
		{"concatenation", "m = __import__('pkg.' + n)\n", []opaqueSite{{prefix: "pkg."}}},
		{"percent", "m = importlib.import_module('pkg.%s' % n)\n", []opaqueSite{{prefix: "pkg."}}},
		{"format", "m = importlib.import_module('pkg.{}'.format(n))\n", []opaqueSite{{prefix: "pkg."}}},
		{"own name", "m = importlib.import_module(f\"{__name__}.{n}\")\n", []opaqueSite{{prefix: ".", own: "name"}}},
		{"own package", "m = importlib.import_module(__package__ + '.' + n)\n", []opaqueSite{{prefix: ".", own: "package"}}},
		{"relative: not known", "m = importlib.import_module('.' + n, pkg)\n", []opaqueSite{{}}},
		{"a field first: not known", "m = importlib.import_module(f\"{base}.x\")\n", []opaqueSite{{}}},
		{"other loaders: not known", "for m in pkgutil.iter_modules(p):\n    pass\n", []opaqueSite{{}}},
		{"in a string: no call", "s = 'importlib.import_module(n)'\n", nil},
	} {
		if got := opaqueSites([]byte(tc.src)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: opaqueSites(%q) = %+v; want %+v", tc.name, tc.src, got, tc.want)
		}
	}
}

func TestOpaqueSiteMayLoad(t *testing.T) {
	for _, tc := range []struct {
		site opaqueSite
		file string
		f    string
		want bool
	}{
		{opaqueSite{}, "a.py", "anything/x.py", true},
		{opaqueSite{prefix: "pkg.plugins."}, "a.py", "pkg/plugins/x.py", true},
		{opaqueSite{prefix: "pkg.plugins."}, "a.py", "src/pkg/plugins/x.py", true},
		{opaqueSite{prefix: "pkg.plugins."}, "a.py", "pkg/__init__.py", true},
		{opaqueSite{prefix: "pkg.plugins."}, "a.py", "pkg/plugins/__init__.py", true},
		{opaqueSite{prefix: "pkg.plugins."}, "a.py", "pkg/plugins/x.py", true},
		{opaqueSite{prefix: "pkg.plugins."}, "a.py", "pkg/other.py", false},
		{opaqueSite{prefix: "pkg.plug_"}, "a.py", "pkg/plug_x.py", true},
		{opaqueSite{prefix: ".", own: "name"}, "pkg/sub/__init__.py", "pkg/sub/x.py", true},
		{opaqueSite{prefix: ".", own: "name"}, "pkg/sub/__init__.py", "pkg/other.py", false},
		{opaqueSite{prefix: ".", own: "package"}, "pkg/sub/mod.py", "pkg/sub/x.py", true},
		{opaqueSite{prefix: ".", own: "package"}, "mod.py", "pkg/x.py", true},
	} {
		if got := tc.site.mayLoad(tc.file, tc.f, true); got != tc.want {
			t.Errorf("%+v in %s: mayLoad(%s) = %v; want %v", tc.site, tc.file, tc.f, got, tc.want)
		}
	}
}
