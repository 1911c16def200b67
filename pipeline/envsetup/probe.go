package envsetup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// ProbeName names the check that proves the code under test is the worktree's.
const ProbeName = "environment-probe"

// probeScript imports nothing of the project: it asks Python where each package named on its
// command line would be found, with the path a test runner started as a script would have
// (not the current folder, which `python -c` puts first), and fails when one is found outside
// the worktree (an editable install's path hook pointing at the checkout the environment was
// built from) or not at all.
const probeScript = `import importlib.util, os, sys
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]
root = os.path.realpath(os.getcwd())
bad = 0
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception as e:
        print("MISSING %s: %r" % (name, e)); bad += 1; continue
    if spec is None:
        print("MISSING %s: not importable" % name); bad += 1; continue
    locs = [spec.origin] if spec.origin and spec.origin not in ("namespace", "built-in", "frozen") else list(spec.submodule_search_locations or [])
    where = os.path.realpath(locs[0]) if locs else "?"
    ok = where == root or where.startswith(root + os.sep)
    print("%s %s -> %s" % ("ok" if ok else "OUTSIDE", name, where))
    bad += not ok
sys.exit(1 if bad else 0)
`

// ProbeCheck is a check, run like the repository's checks (same interpreter and
// environment), that passes only when each of packages is imported from the worktree.
func ProbeCheck(like validate.Check, packages []string) validate.Check {
	return validate.Check{Name: ProbeName, Kind: validate.KindPython, Python: like.Python, EnvDir: like.EnvDir,
		PassEnv: like.PassEnv, Env: like.Env, Command: append([]string{"-c", probeScript}, packages...)}
}

// Packages are the project's top-level import packages in dir: folders holding __init__.py
// at the root, in src/, or in the folder the packaging configuration keeps them in
// (package_dir = =lib, which the checks put on PYTHONPATH: validate.PackageFolder), tests,
// docs and examples left out.
func Packages(dir string) []string {
	var out []string
	bases := []string{dir, filepath.Join(dir, "src")}
	if folder := validate.PackageFolder(dir); folder != "src" {
		bases = append(bases, filepath.Join(dir, filepath.FromSlash(folder)))
	}
	for _, base := range bases {
		entries, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || !identifier(name) || skipPackage(name) {
				continue
			}
			if fi, err := os.Lstat(filepath.Join(base, name, "__init__.py")); err == nil && fi.Mode().IsRegular() && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

func skipPackage(name string) bool {
	switch strings.ToLower(name) {
	case "tests", "test", "testing", "docs", "doc", "examples", "example", "scripts", "benchmarks", "src", "build", "dist":
		return true
	}
	return strings.HasPrefix(name, "test_") || strings.HasPrefix(name, ".")
}

func identifier(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
