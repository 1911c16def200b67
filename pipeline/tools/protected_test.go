package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The write tools refuse what runs elsewhere (CI, hooks, editors, installs) and what would
// replace the checks' own tools, saying why, unless the repository allows the path.
func TestProtectedPathsRefused(t *testing.T) {
	for _, tt := range []struct {
		path string
		why  string // a word of the reason; "" means the write is allowed
	}{
		{".github/workflows/ci.yml", "CI configuration"},
		{".gitlab-ci.yml", "CI configuration"},
		{".pre-commit-config.yaml", "hook"},
		{".envrc", "direnv"},
		{".vscode/tasks.json", "editor"},
		{".idea/workspace.xml", "editor"},
		{".gitattributes", "git configuration"},
		{"sub/.gitattributes", "git configuration"},
		{".gitmodules", "git configuration"},
		{"requirements-dev.txt", "dependency manifest"},
		{"requirements/base.in", "dependency manifest"},
		{"docs/requirements.txt", "dependency manifest"},
		{"pyproject.toml", "dependency manifest"},
		{"setup.py", "runs on install"},
		{"poetry.lock", "lockfile"},
		{"package.json", "scripts run on install"},
		{"pytest.py", "check tool"},
		{"_pytest/__init__.py", "check tool"},
		{"py/__init__.cpython-311-x86_64-linux-gnu.so", "check tool"},
		{"src/pytest/__init__.py", "check tool"},
		{"src/pytest.py", "check tool"},
		{"sitecustomize.py", "check tool"},
		{"pytest.pyc", "bytecode"},
		{"pkg/__pycache__/calc.cpython-311.pyc", "bytecode"},
		{"evil.pth", "path configuration"},
		{"typing.py", "Python and the checks' tools import"},
		{"src/json/__init__.py", "Python and the checks' tools import"},
		{"packaging.py", "Python and the checks' tools import"},
		// What a case-insensitive checkout (macOS, Windows) reads as a protected name.
		{".VSCode/tasks.json", "editor"},
		{".GitHub/workflows/ci.yml", "CI configuration"},
		{"Setup.PY", "runs on install"},
		{"pkg/.ENVRC", "direnv"},
		{"PIPFILE", "dependency manifest"},
		{"jenkinsfile", "CI configuration"},
		{".gitattributes.", "git configuration"},
		{"setup.py ", "runs on install"},
		{"pyproject.toml::$DATA", "dependency manifest"},
		{".vs\u200ccode/settings.json", "editor"},
		{"evil.PTH.", "path configuration"},
		{"pkg/__PyCache__/x.txt", "bytecode"},
		{"calc.py", ""},
		{"tests/test_calc.py", ""},
		{"conftest.py", ""},
		{"pkg/pytest_helpers.py", ""},
		{"docs/github.md", ""},
		{"pkg/py.py", ""},
		{"src/pkg/.github.py", ""},
		{"docs/.github/notes.md", ""},
		{"pkg/setup_py.py", ""},
		{"test.py", ""},
		{"pkg/typing.py", ""},
		{"html/index.html", ""},
		{"site/notes.py", ""},
		// A folder named like a tool without __init__.py is a namespace package, which the
		// real tool wins over: cucumber/tag-expressions' layout with the project in py/.
		{"py/tests/test_norm.py", ""},
		{"_pytest/runner.py", ""},
	} {
		t.Run(tt.path, func(t *testing.T) {
			ws := newTestWorkspace(t, nil)
			_, err := ws.WriteFile(context.Background(), tt.path, "x = 1\n")
			if tt.why == "" {
				if err != nil {
					t.Fatalf("write %s refused: %v", tt.path, err)
				}
				return
			}
			if !errors.Is(err, ErrProtected) || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), "allow_paths") {
				t.Fatalf("write %s: err %v; want ErrProtected saying %q and how to allow it", tt.path, err, tt.why)
			}
			if _, serr := os.Lstat(filepath.Join(ws.Root(), tt.path)); serr == nil {
				t.Errorf("%s was written although refused", tt.path)
			}
		})
	}
}

// An allowed path is written; the allowance covers what its pattern says and nothing more.
func TestProtectedPathsAllowed(t *testing.T) {
	ws := newTestWorkspace(t, nil)
	ws.SetAllowPaths([]string{".github/workflows/*.yml", "requirements.txt", ".vscode/"})
	for _, p := range []string{".github/workflows/ci.yml", "requirements.txt", ".vscode/settings.json"} {
		if _, err := ws.WriteFile(context.Background(), p, "x\n"); err != nil {
			t.Errorf("allowed %s refused: %v", p, err)
		}
	}
	for _, p := range []string{".github/CODEOWNERS", "requirements-dev.txt", ".github/workflows/sub/x.yml"} {
		if _, err := ws.WriteFile(context.Background(), p, "x\n"); !errors.Is(err, ErrProtected) {
			t.Errorf("%s: err %v, want refused (not covered by the allowance)", p, err)
		}
	}
	// edit_file is refused as write_file is.
	ws2 := newTestWorkspace(t, map[string]string{"setup.cfg": "[metadata]\nname = x\n"})
	if _, err := ws2.ReadFiles(context.Background(), []ReadRequest{{Path: "setup.cfg"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws2.EditFile(context.Background(), "setup.cfg", "name = x", "name = y", false); !errors.Is(err, ErrProtected) {
		t.Errorf("edit setup.cfg: err %v, want refused", err)
	}
}

func TestCheckAllowPattern(t *testing.T) {
	for p, ok := range map[string]bool{
		"requirements.txt": true, ".github/workflows/*.yml": true, ".vscode/": true, ".github/**": true,
		"": false, "/etc/passwd": false, "../x": false, "a/../b": false, ".git/config": false, "[": false, "/": false,
	} {
		if err := CheckAllowPattern(p); (err == nil) != ok {
			t.Errorf("CheckAllowPattern(%q) = %v; want ok=%v", p, err, ok)
		}
	}
}

// newTestWorkspace is a workspace over a fresh folder holding files.
func newTestWorkspace(t *testing.T, files map[string]string) *Workspace {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// A repository that is a check's tool (pluggy, pytest, mypy) holds its own package under the
// tool's name: its fixes are edits there, allowed by the packages its base already holds;
// a shadow the base does not hold, and start-up hooks, stay refused.
func TestToolPackagesOfTheProjectItself(t *testing.T) {
	base := []string{
		"src/pluggy/__init__.py", "src/pluggy/_manager.py", "testing/test_pluginmanager.py",
		"src/_pytest/__init__.py", "src/py.py", "mypy/__init__.py", "sitecustomize.py",
		"src/pluggy/sub/__init__.py", "docs/pytest.py", "src/packaging/__init__.py", "code.py",
	}
	allow := AllowAtBase([]string{"requirements.txt"}, base)
	if want := []string{"requirements.txt", "src/pluggy/*.py", "src/_pytest/*.py", "src/py.py", "mypy/*.py", "src/pluggy/sub/*.py", "src/packaging/*.py", "code.py"}; !slices.Equal(allow, want) {
		t.Errorf("AllowAtBase = %q, want %q", allow, want)
	}
	for _, tt := range []struct {
		path    string
		allowed bool
	}{
		{"src/pluggy/_manager.py", true},
		{"src/pluggy/new_module.py", true},
		{"src/_pytest/runner.py", true},
		{"src/py.py", true},
		{"mypy/checker.py", true},
		{"requirements.txt", true},
		{"pluggy/__init__.py", false},     // not where the base holds it
		{"src/pytest/__init__.py", false}, // a new shadow
		{"pytest.py", false},
		{"sitecustomize.py", false}, // runs at start-up, whatever the base holds
		{"src/pluggy/sub/x.py", true},
		{"src/pluggy/x.pyc", false},              // bytecode stays refused
		{"src/pluggy/__pycache__/x.py", false},   // so does its folder
		{"src/pluggy/zz.pth", false},             // and path files
		{"src/pluggy/newsub/__init__.py", false}, // a folder the base does not hold
		{"src/packaging/version.py", true},       // packaging's own package
		{"code.py", true},                        // a root module the base holds
		{"typing.py", false},                     // a new one named like the library's
	} {
		why := ProtectedPath(tt.path, allow)
		if got := why == ""; got != tt.allowed {
			t.Errorf("ProtectedPath(%q, %q) = %q; want allowed %v", tt.path, allow, why, tt.allowed)
		}
	}
	if got := AllowAtBase(nil, []string{"src/app/__init__.py", "tests/test_app.py"}); len(got) != 0 {
		t.Errorf("AllowAtBase of a project without tool packages = %q, want none", got)
	}
}
