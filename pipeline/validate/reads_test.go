package validate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A pytest run records which worktree files its Python code opened for reading, and from
// which worktree file: the test module's own reads (at import, in a test, through pathlib,
// through a helper in the tests folder, which the test hands the file's name to), the code's
// (a table loaded at import), and no write,
// no Python source and nothing outside the worktree. Under PYTHONPATH="" too, and with the
// -p plugin never shown in the command a human reads.
func TestRunPytestRecordsReads(t *testing.T) {
	requirePytest(t)
	files := map[string]string{
		"conv.py":          "import json\nimport os\n\nwith open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'table.json')) as _f:\n    _T = json.load(_f)\n\n\ndef km():\n    return _T['km']\n",
		"table.json":       "{\"km\": 1000}\n",
		"golden/a.txt":     "a\n",
		"golden/b.txt":     "b\n",
		"golden/c.txt":     "c\n",
		"tests/helpers.py": "import os\n\n\ndef golden(name):\n    with open(os.path.join(os.path.dirname(__file__), '..', 'golden', name)) as f:\n        return f.read()\n",
		"tests/test_conv.py": "import os\nimport pathlib\n\nfrom conv import km\nfrom helpers import golden\n\nA = open(os.path.join(os.path.dirname(__file__), '..', 'golden', 'a.txt')).read()\n\n\n" +
			"def test_km(tmp_path):\n    assert km() == 1000\n    assert pathlib.Path(__file__).parent.parent.joinpath('golden', 'b.txt').read_text() == 'b\\n'\n" +
			"    assert golden('c.txt') == 'c\\n'\n    assert A == 'a\\n'\n    with open(os.path.join(os.path.dirname(__file__), 'out.txt'), 'w') as f:\n        f.write('x')\n    open('/etc/hostname').close()\n",
	}
	want := []FileRead{{File: "golden/a.txt", By: "tests/test_conv.py"}, {File: "golden/b.txt", By: "tests/test_conv.py"},
		{File: "golden/c.txt", By: "tests/helpers.py"}, {File: "golden/c.txt", By: "tests/test_conv.py"}, {File: "table.json", By: "conv.py"}}
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{{name: "plain"}, {name: "empty PYTHONPATH", env: map[string]string{"PYTHONPATH": ""}}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, files)
			r := Runner{Sandbox: testSandbox(t)}
			res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Env: tt.env, PythonPath: []string{"tests"}}})[0]
			if !res.Passed {
				t.Fatalf("pytest failed: %s\n%s", res.Summary, res.Output)
			}
			if !slices.Equal(res.Reads, want) {
				t.Errorf("reads %+v\nwant %+v", res.Reads, want)
			}
			if slices.Contains(res.Command, readsPlugin) {
				t.Errorf("command %q names ticketd's own plugin", res.Command)
			}
		})
	}
}

// An interpreter that ignores PYTHONPATH (-I, -E) cannot load the plugin: the run goes on
// unrecorded rather than failing.
func TestRecordsReads(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want bool
	}{
		{[]string{"/usr/bin/python3", "-m", "pytest"}, true},
		{[]string{"/usr/bin/python3", "-I", "-m", "pytest"}, false},
		{[]string{"/usr/bin/python3", "-bE", "-m", "pytest", "-rE"}, false},
		{[]string{"/usr/bin/python3", "-m", "pytest", "-rE"}, true},
		{[]string{"/usr/bin/pytest", "-rE"}, true},
		{[]string{"/usr/bin/python3", "-m", "unittest", "discover"}, true},
		{[]string{"/usr/bin/python3", "-I", "-m", "unittest", "discover"}, false},
	} {
		if got := recordsReads(tt.argv); got != tt.want {
			t.Errorf("recordsReads(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

// A base suite whose own tests rewrite the tests (a test writing over another test module,
// or replacing it) cannot judge a change: every attempt's checks would stop on the gate's
// stamps. The run names the test and the file, and Health says so once, at the baseline.
// A data file a test writes itself is its output, not an input the gate keeps; a module a
// test creates, and writes again, is no rewrite.
func TestRunPytestRewritesTests(t *testing.T) {
	requirePytest(t)
	for _, tt := range []struct {
		name  string
		write string // test_a's body
		want  []string
	}{
		{name: "written over", write: "    with open(os.path.join(HERE, 'test_b.py'), 'w') as f:\n        f.write(SRC)\n",
			want: []string{"test tests/test_a.py::test_a rewrote or removed tests/test_b.py"}},
		{name: "replaced", write: "    p = os.path.join(HERE, 'new.tmp')\n    with open(p, 'w') as f:\n        f.write(SRC)\n    os.replace(p, os.path.join(HERE, 'test_b.py'))\n",
			want: []string{"test tests/test_a.py::test_a rewrote or removed tests/test_b.py"}},
		{name: "a data file and a new module", write: "    with open(os.path.join(HERE, '..', 'out.json'), 'w') as f:\n        f.write('{}')\n    for _ in range(2):\n        with open(os.path.join(HERE, 'gen_x.py'), 'w') as f:\n            f.write('')\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{
				"out.json":        "{}\n",
				"tests/test_b.py": "def test_b():\n    pass\n",
				"tests/test_a.py": "import os\n\nHERE = os.path.dirname(os.path.abspath(__file__))\nSRC = 'def test_b():\\n    pass\\n'\nwith open(os.path.join(HERE, '..', 'out.json')) as _f:\n    _f.read()\n\n\ndef test_a():\n" + tt.write,
			})
			r := Runner{Sandbox: testSandbox(t)}
			res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}})[0]
			if !res.Passed {
				t.Fatalf("pytest failed: %s\n%s", res.Summary, res.Output)
			}
			if !slices.Equal(res.Rewrites, tt.want) {
				t.Errorf("rewrites %q, want %q", res.Rewrites, tt.want)
			}
			problems := Health([]Result{res})
			if len(tt.want) == 0 {
				if len(problems) > 0 {
					t.Errorf("health %v, want none", problems)
				}
				if slices.ContainsFunc(res.Reads, func(r FileRead) bool { return r.File == "out.json" }) {
					t.Errorf("reads %+v: out.json, which the test writes itself, is no input", res.Reads)
				}
				return
			}
			if len(problems) != 1 || !strings.Contains(problems[0].Reason, tt.want[0]) || !strings.Contains(problems[0].Hint, "tmp_path") {
				t.Errorf("health %+v; want one problem naming %q, with a hint", problems, tt.want[0])
			}
		})
	}
}

// TestReadsPluginPath: the plugin's folder goes at the end of the PYTHONPATH the command
// gets, which is the last of a repeated PYTHONPATH (os/exec keeps the last): the daemon's own
// passed on, then the src/ layout's or the check's. Before, it went into the first, and with
// both present pytest could not import the plugin and every check failed to start.
func TestReadsPluginPath(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"none", []string{"HOME=/h"}, "PYTHONPATH=/r/_ticketd"},
		{"empty", []string{"PYTHONPATH="}, "PYTHONPATH=/r/_ticketd"},
		{"one", []string{"PYTHONPATH=/a"}, "PYTHONPATH=/r/_ticketd:/a"},
		{"passed on, then the layout's", []string{"PYTHONPATH=/installed", "HOME=/h", "PYTHONPATH=/w/lib:/installed"}, "PYTHONPATH=/r/_ticketd:/w/lib:/installed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			argv, env := withReadsPlugin([]string{"python3", "-m", "pytest"}, tt.env, t.TempDir(), "/r", true)
			var paths []string
			for _, kv := range env {
				if strings.HasPrefix(kv, "PYTHONPATH=") {
					paths = append(paths, kv)
				}
			}
			if len(paths) != 1 || paths[0] != tt.want {
				t.Errorf("PYTHONPATH entries %q; want only %q", paths, tt.want)
			}
			if got := strings.Join(argv, " "); !strings.HasSuffix(got, "-p "+readsPlugin) {
				t.Errorf("argv %q; want -p %s at the end", got, readsPlugin)
			}
		})
	}
}

// TestReadsPluginRefusedRunsWithout: a check whose pytest could not import the recording
// plugin (a script whose shebang runs `python3 -I`, which ignores PYTHONPATH) runs without it,
// with a note. Before, pytest stopped at its start on ticketd's account, and every check of
// such a repository failed.
func TestReadsPluginRefusedRunsWithout(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"run-tests":         "#!/usr/bin/python3 -I\nimport sys\nimport pytest\nsys.exit(pytest.main(sys.argv[1:]))\n",
		"tests/test_one.py": "def test_one():\n    assert 1 + 1 == 2\n",
	})
	if err := os.Chmod(filepath.Join(dir, "run-tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute,
		Command: []string{filepath.Join(dir, "run-tests"), "tests"}}})[0]
	if !res.Passed || res.Tests != 1 {
		t.Errorf("passed %v, %d tests (%s); want the one test passed\n%s", res.Passed, res.Tests, res.Summary, res.Output)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "are not recorded") {
		t.Errorf("notes %q; want one saying the reads are not recorded", res.Notes)
	}
}

// The processes a test starts are recorded too: a Python one-liner's reads count as the
// test's, a project's CLI's reads (python -m cli) as the code's, and what any process (the
// project's CLI, a program that is not Python such as cat, a Python started without
// PYTHONPATH) is told to read on its command line as the test's. A program, code and what the run writes itself are no input. A
// unittest check records the same way, and a sitecustomize the project has on its path
// still runs.
func TestRunRecordsChildReads(t *testing.T) {
	requirePytest(t)
	test := "import builtins\nimport os\nimport subprocess\nimport sys\n\nfrom cli import main\n\n" +
		"PY = [sys.executable, '-c', 'import sys; sys.stdout.write(open(sys.argv[1]).read())']\n" +
		"CLEAN = {'PATH': os.environ['PATH']}\n\n\n" +
		"def test_children():\n" +
		"    assert builtins.PROJECT_SITE == 1\n" +
		"    assert subprocess.run(PY + ['golden/a.txt'], capture_output=True, text=True).stdout == 'a\\n'\n" +
		"    assert subprocess.run([sys.executable, '-m', 'cli', 'data/table.txt'], capture_output=True, text=True).stdout == 't\\n'\n" +
		"    assert subprocess.run('cat golden/b.txt', shell=True, capture_output=True, text=True).stdout == 'b\\n'\n" +
		"    assert subprocess.run(PY + ['golden/c.txt'], env=CLEAN, capture_output=True, text=True).stdout == 'c\\n'\n" +
		"    assert subprocess.run(['sh', 'tool.sh'], capture_output=True, text=True).returncode == 0\n" +
		"    subprocess.run([sys.executable, '-c', 'open(\"out.txt\", \"w\").write(\"x\")'], check=True)\n"
	files := map[string]string{
		"cli.py":               "import sys\n\n\ndef main(p):\n    sys.stdout.write(open(p).read())\n\n\nif __name__ == '__main__':\n    main(sys.argv[1])\n",
		"data/table.txt":       "t\n",
		"golden/a.txt":         "a\n",
		"golden/b.txt":         "b\n",
		"golden/c.txt":         "c\n",
		"out.txt":              "",
		"tool.sh":              "exit 0\n",
		"lib/sitecustomize.py": "import builtins\n\nbuiltins.PROJECT_SITE = 1\n",
		"test_children.py":     test,
		"test_unit.py": "import builtins\nimport subprocess\nimport sys\nimport unittest\n\n\nclass T(unittest.TestCase):\n    def test_child(self):\n" +
			"        self.assertEqual(builtins.PROJECT_SITE, 1)\n" +
			"        out = subprocess.run([sys.executable, '-c', 'import sys; sys.stdout.write(open(sys.argv[1]).read())', 'golden/a.txt'], capture_output=True, text=True).stdout\n" +
			"        self.assertEqual(out, 'a\\n')\n",
	}
	for _, tt := range []struct {
		kind string
		want []FileRead
	}{
		{KindPytest, []FileRead{{File: "data/table.txt", By: "cli.py"}, {File: "data/table.txt", By: "test_children.py"}, {File: "golden/a.txt", By: "test_children.py"},
			{File: "golden/b.txt", By: "test_children.py"}, {File: "golden/c.txt", By: "test_children.py"}}},
		{KindUnittest, []FileRead{{File: "golden/a.txt", By: "test_unit.py"}}},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			dir := writeFiles(t, files)
			r := Runner{Sandbox: testSandbox(t)}
			c := Check{Name: "tests", Kind: tt.kind, PythonPath: []string{"lib"}}
			if tt.kind == KindPytest {
				c.Command = []string{"/usr/bin/python3", "-m", "pytest", "test_children.py"}
			} else {
				c.Command = []string{"/usr/bin/python3", "-m", "unittest", "test_unit"}
			}
			res := r.Run(context.Background(), dir, []Check{c})[0]
			if !res.Passed {
				t.Fatalf("%s failed: %s\n%s", tt.kind, res.Summary, res.Output)
			}
			if !slices.Equal(res.Reads, tt.want) {
				t.Errorf("reads %+v\nwant %+v", res.Reads, tt.want)
			}
		})
	}
}

// The folders a test lists itself are recorded (golden/ through glob), not those the import
// system lists for it (pkg/, as the test imports pkg.calc), nor a folder the run writes
// into (out/, its own output), nor the worktree's root.
func TestRunRecordsLists(t *testing.T) {
	requirePytest(t)
	dir := writeFiles(t, map[string]string{
		"pkg/__init__.py": "",
		"pkg/calc.py":     "def one():\n    return 1\n",
		"golden/a.json":   "1\n",
		"out/keep.txt":    "",
		"test_lists.py": "import glob\nimport os\n\nfrom pkg.calc import one\n\n\ndef test_lists():\n" +
			"    assert [one() for _ in glob.glob('golden/*.json')] == [1]\n" +
			"    os.listdir('.')\n" +
			"    open('out/new.txt', 'w').close()\n" +
			"    os.listdir('out')\n",
	})
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}})[0]
	if !res.Passed {
		t.Fatalf("pytest failed: %s\n%s", res.Summary, res.Output)
	}
	if want := []FileRead{{File: "golden", By: "test_lists.py"}}; !slices.Equal(res.Lists, want) {
		t.Errorf("lists %+v, want %+v", res.Lists, want)
	}
}

// A file a test hands to the code to open (load("golden/in.txt")) counts as read by the test
// too, as well as by the code: the test's source names it. What the code opens of its own
// accord (a table at import, a file a function picks) stays the code's alone, even with the
// test on the stack.
func TestRunRecordsHandedFiles(t *testing.T) {
	requirePytest(t)
	dir := writeFiles(t, map[string]string{
		"pkg.py": "import os\n\n_HERE = os.path.dirname(os.path.abspath(__file__))\nwith open(os.path.join(_HERE, 'data', 'units.txt')) as _f:\n    UNITS = _f.read()\n\n\n" +
			"def load(p):\n    with open(p) as f:\n        return f.read()\n\n\ndef load_other():\n    return load(os.path.join(_HERE, 'golden', 'other.txt'))\n",
		"data/units.txt":   "u\n",
		"golden/in.txt":    "i\n",
		"golden/other.txt": "o\n",
		"test_handed.py":   "from pkg import UNITS, load, load_other\n\n\ndef test_handed():\n    assert load('golden/in.txt') == 'i\\n'\n    assert load_other() == 'o\\n'\n    assert UNITS == 'u\\n'\n",
	})
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Command: []string{"/usr/bin/python3", "-m", "pytest"}}})[0]
	if !res.Passed {
		t.Fatalf("failed: %s\n%s", res.Summary, res.Output)
	}
	want := []FileRead{{File: "data/units.txt", By: "pkg.py"}, {File: "golden/in.txt", By: "pkg.py"}, {File: "golden/in.txt", By: "test_handed.py"}, {File: "golden/other.txt", By: "pkg.py"}}
	if !slices.Equal(res.Reads, want) {
		t.Errorf("reads %+v\nwant %+v", res.Reads, want)
	}
}

// A run names the top-level modules it imported from outside the worktree (pytest's own, an
// installed library a test imports), not the worktree's, the standard library's or ticketd's
// recording.
func TestRunRecordsLibraries(t *testing.T) {
	requirePytest(t)
	dir := writeFiles(t, map[string]string{
		"pkg.py":      "import json\n\n\ndef two():\n    return json.loads('2')\n",
		"test_lib.py": "import pytest\n\nfrom pkg import two\n\n\ndef test_two():\n    assert two() == pytest.approx(2)\n",
	})
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Command: []string{"/usr/bin/python3", "-m", "pytest"}}})[0]
	if !res.Passed {
		t.Fatalf("failed: %s\n%s", res.Summary, res.Output)
	}
	for _, m := range []string{"pytest", "_pytest", "pluggy"} {
		if !slices.Contains(res.Modules, m) {
			t.Errorf("modules %q; want %s among them", res.Modules, m)
		}
	}
	for _, m := range []string{"pkg", "test_lib", "json", "os", readsAudit, readsPlugin, "sitecustomize"} {
		if slices.Contains(res.Modules, m) {
			t.Errorf("modules %q; want no %s", res.Modules, m)
		}
	}
}
