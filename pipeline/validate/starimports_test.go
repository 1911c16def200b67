package validate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A package that star-imports its modules (networkx: pkg/__init__.py does `from
// pkg.algorithms import *`, which does `from pkg.algorithms.cuts import *`) is imported by
// every test, so by files alone a change to cuts.py reaches the whole suite. Walked by
// names, a change inside a function body reaches the tests that name one of the module's
// names, directly (pkg.volume, in code or a one-line string) or through code that names
// them (paths.shortest calls pkg.volume); a comment or a docstring naming it does not count.
// The walk falls back to files when the change touches top-level code (a new assignment,
// a new function), when the base is not known, or for a test module, which is never walked
// by names.
func TestStarImportSelection(t *testing.T) {
	const cuts = "\"\"\"Cuts.\n\nvolume: see below\n\"\"\"\nimport pkg\n\n__all__ = [\n    \"volume\",  # the sum of degrees\n    \"cut_size\",\n]\n\n\n" +
		"@pkg.registered\ndef volume(G):\n    return sum(G)\n\n\ndef cut_size(G):\n    return _helper(G)\n\n\ndef _helper(G):\n    return len(G)\n"
	base := map[string]string{
		"pkg/__init__.py":            "from pkg.registry import *\nfrom pkg.algorithms import *\nfrom pkg.other import *\n",
		"pkg/registry.py":            "def registered(f):\n    return f\n",
		"pkg/algorithms/__init__.py": "from pkg.algorithms.cuts import *\nfrom pkg.algorithms.paths import *\n",
		"pkg/algorithms/cuts.py":     cuts,
		"pkg/algorithms/paths.py":    "import pkg\n\n__all__ = [\"shortest\"]\n\n\ndef shortest(G):\n    return pkg.volume(G)\n",
		"pkg/other.py":               "def other_thing(G):\n    \"\"\"Not the volume of anything.\"\"\"\n    return G  # nor a volume\n",
		"tests/test_cuts.py":         "import pkg\n\n\ndef test_volume():\n    assert pkg.volume([1]) == 1\n",
		"tests/test_paths.py":        "from pkg import shortest\n\n\ndef test_shortest():\n    assert shortest([1]) == 1\n",
		"tests/test_getattr.py":      "import pkg\n\n\ndef test_by_name():\n    assert getattr(pkg, 'volume')\n",
		"tests/test_other.py":        "import pkg\n\n\ndef test_other():\n    # volume is tested elsewhere\n    assert pkg.other_thing(1) == 1\n",
		"tests/test_helper.py":       "from pkg.algorithms.cuts import _helper\n\n\ndef test_helper():\n    assert _helper([1]) == 1\n",
	}
	all := []string{"tests/test_cuts.py", "tests/test_getattr.py", "tests/test_helper.py", "tests/test_other.py", "tests/test_paths.py"}
	for _, tt := range []struct {
		name   string
		edit   func(string) string // of pkg/algorithms/cuts.py
		noBase bool
		want   []string
	}{
		{"a function body", func(s string) string { return strings.Replace(s, "return sum(G)", "return sum(G) * 2", 1) }, false,
			[]string{"tests/test_cuts.py", "tests/test_getattr.py", "tests/test_helper.py", "tests/test_paths.py"}},
		{"a decorator's argument", func(s string) string { return strings.Replace(s, "@pkg.registered\n", "@pkg.registered  # again\n", 1) }, false,
			[]string{"tests/test_cuts.py", "tests/test_getattr.py", "tests/test_helper.py", "tests/test_paths.py"}},
		{"top-level code", func(s string) string { return s + "\nTHRESHOLD = 3\n" }, false, all},
		{"a new function", func(s string) string { return s + "\n\ndef fresh():\n    return 1\n" }, false, all},
		{"__all__", func(s string) string { return strings.Replace(s, "    \"cut_size\",\n", "", 1) }, false, all},
		{"no base scan", func(s string) string { return strings.Replace(s, "return sum(G)", "return sum(G) * 2", 1) }, true, all},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, base)
			b, err := ScanBase(dir)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "pkg", "algorithms", "cuts.py")
			if err := os.WriteFile(file, []byte(tt.edit(cuts)), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.noBase {
				b = nil
			}
			g, err := b.Scan(dir, "pkg/algorithms/cuts.py")
			if err != nil {
				t.Fatal(err)
			}
			if got := g.TestsAffectedBy([]string{"pkg/algorithms/cuts.py"}); !slices.Equal(got, tt.want) {
				t.Errorf("selected %q\nwant %q", got, tt.want)
			}
		})
	}
}

// __all__ decides what a star import takes when it is one literal list or tuple; without
// it the public names; a computed one (or one changed later) passes every name.
func TestStarExports(t *testing.T) {
	names := map[string]bool{"volume": true, "cut_size": true, "_helper": true}
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"literal list", "__all__ = [\"volume\"]\n", []string{"volume"}},
		{"literal tuple over lines", "__all__ = (\n    'volume',  # yes\n    'other',\n)\n", []string{"volume"}},
		{"none: public names", "def volume(): pass\n", []string{"cut_size", "volume"}},
		{"computed", "__all__ = base.__all__ + [\"volume\"]\n", []string{"_helper", "cut_size", "volume"}},
		{"extended later", "__all__ = [\"volume\"]\n__all__ += [\"cut_size\"]\n", []string{"_helper", "cut_size", "volume"}},
	} {
		got := starExports([]byte(tt.src), names)
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, tt.want) {
			t.Errorf("%s: exports %q, want %q", tt.name, keys, tt.want)
		}
	}
}

// FuzzStarNames: any source is read for its top-level code, its names, its exports and the
// names it mentions without panicking; what a source names always includes what its
// one-line code names, and exports never hold a name that was not given.
func FuzzStarNames(f *testing.F) {
	addSeeds(f, "imports")
	addSeeds(f, "dynamic")
	f.Add([]byte("__all__ = ['a', \"b\"]\n@d\ndef a():\n    '''b'''\n    return 'b' # b\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		topLevelSig(src)
		names := changedNames(src)
		names["volume"] = true
		for n := range starExports(src, names) {
			if !names[n] {
				t.Errorf("export %q was not among the names", n)
			}
		}
		for n := range mentioned(src, names) {
			if !names[n] {
				t.Errorf("mentioned %q was not among the names", n)
			}
		}
		if m := mentioned(append(slices.Clone(src), "\nvolume\n"...), names); !m["volume"] && !strings.Contains(string(src), `"""`) && !strings.Contains(string(src), "'''") && !strings.ContainsAny(string(src), "\"'#\\") {
			t.Errorf("a bare word on its own line is not seen in %q", src)
		}
	})
}
