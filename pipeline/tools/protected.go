package tools

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Files that run elsewhere never reach a fix branch. A workflow pushed with a fix runs on the
// repository's CI with its secrets; a hook, an .envrc or an editor task runs on the machine
// of whoever checks the branch out; a manifest or lockfile changes what gets installed; a
// .gitattributes or .gitmodules changes what git itself runs or fetches. A module named like
// a check's own tool (pytest.py at the root) or compiled bytecode would run instead of the
// tool the gate trusts. The maker's write tools refuse all of them with the reason, unless
// the repository's configuration allows the path (repos.<name>.allow_paths).

// ErrProtected is returned by the write tools for a path they may not write.
var ErrProtected = errors.New("protected path")

// protectedNames are file or folder names refused at any depth, with what they are.
var protectedNames = map[string]string{
	".gitattributes":          "git configuration (filters and diff drivers that run on checkout)",
	".gitmodules":             "git configuration (submodules that are fetched on checkout)",
	".envrc":                  "an environment hook (direnv runs it on entering the folder)",
	".pre-commit-config.yaml": "hook configuration (pre-commit runs it on commit and in CI)",
	".pre-commit-hooks.yaml":  "hook configuration (pre-commit runs it on commit and in CI)",
	"pyproject.toml":          "a dependency manifest",
	"setup.py":                "a dependency manifest (it runs on install)",
	"setup.cfg":               "a dependency manifest",
	"pipfile":                 "a dependency manifest",
	"pipfile.lock":            "a lockfile",
	"poetry.lock":             "a lockfile",
	"pdm.lock":                "a lockfile",
	"uv.lock":                 "a lockfile",
	"environment.yml":         "a dependency manifest",
	"environment.yaml":        "a dependency manifest",
	"package.json":            "a dependency manifest (its scripts run on install)",
	"package-lock.json":       "a lockfile",
	"npm-shrinkwrap.json":     "a lockfile",
	"yarn.lock":               "a lockfile",
	"pnpm-lock.yaml":          "a lockfile",
	".npmrc":                  "package manager configuration",
	"pip.conf":                "package manager configuration",
	"go.mod":                  "a dependency manifest",
	"go.sum":                  "a lockfile",
	"cargo.toml":              "a dependency manifest",
	"cargo.lock":              "a lockfile",
	"gemfile":                 "a dependency manifest",
	"gemfile.lock":            "a lockfile",
	"composer.json":           "a dependency manifest",
	"composer.lock":           "a lockfile",
	"__pycache__":             "compiled bytecode (Python would run it instead of the source)",
}

// protectedRoots are files or folders refused at the repository's root, where CI services and
// editors read them.
var protectedRoots = map[string]string{
	".github":                 "CI configuration (GitHub Actions runs it with the repository's secrets once pushed)",
	".gitlab":                 "CI configuration",
	".gitlab-ci.yml":          "CI configuration (GitLab runs it with the repository's secrets once pushed)",
	".circleci":               "CI configuration",
	".travis.yml":             "CI configuration",
	".drone.yml":              "CI configuration",
	".buildkite":              "CI configuration",
	"azure-pipelines.yml":     "CI configuration",
	"bitbucket-pipelines.yml": "CI configuration",
	"jenkinsfile":             "CI configuration",
	".husky":                  "hook configuration (git hooks installed on npm install)",
	".vscode":                 "editor configuration (its tasks and settings run on opening the folder)",
	".idea":                   "editor configuration (its run configurations run on opening the folder)",
	".devcontainer":           "editor configuration (it builds and runs a container on opening the folder)",
}

// shadowNames are modules refused at an import root (the repository's root or src/): Python
// would import them instead of the check tools the gate runs.
var shadowNames = map[string]bool{
	"pytest": true, "_pytest": true, "pluggy": true, "py": true, "mypy": true, "unittest": true,
	"sitecustomize": true, "usercustomize": true,
}

// protectedReason says what rel (slash-separated, relative to the worktree) is when the
// maker may not write it, "" when it may.
func protectedReason(rel string) string {
	parts := strings.Split(rel, "/")
	folded := make([]string, len(parts))
	for i, p := range parts {
		folded[i] = foldName(p)
	}
	if why, ok := protectedRoots[folded[0]]; ok {
		return why
	}
	for _, p := range folded {
		if why, ok := protectedNames[p]; ok {
			return why
		}
	}
	if why := protectedKind(folded); why != "" {
		return why
	}
	return shadowReason(parts)
}

// foldName is name as a case-insensitive file system reads it, the key of protectedNames and
// protectedRoots: letters folded, the code points HFS+ ignores dropped, and what NTFS drops
// or reads as a data stream (trailing dots and spaces, from a colon on) cut. A fix checked
// out on macOS or Windows puts ".VSCode/tasks.json" where the editor reads .vscode, and
// "Setup.PY" where pip runs setup.py.
func foldName(name string) string {
	name = strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, name)
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	return strings.ToLower(strings.TrimRight(name, ". "))
}

// protectedKind refuses files by what their name says they are, wherever they are:
// dependency manifests, bytecode and .pth files, which change what the checks run.
func protectedKind(parts []string) string {
	lower := strings.ToLower(parts[len(parts)-1])
	inRequirements := len(parts) > 1 && parts[len(parts)-2] == "requirements"
	switch {
	case (strings.HasPrefix(lower, "requirements") || inRequirements) &&
		(strings.HasSuffix(lower, ".txt") || strings.HasSuffix(lower, ".in")),
		strings.HasPrefix(lower, "constraints") && strings.HasSuffix(lower, ".txt"):
		return "a dependency manifest"
	case strings.HasSuffix(lower, ".pyc") || strings.HasSuffix(lower, ".pyo"):
		return "compiled bytecode (Python would run it instead of the source)"
	case strings.HasSuffix(lower, ".pth"):
		return "a path configuration file (Python runs its import lines at start-up)"
	}
	return ""
}

// ShadowModule reports whether a top-level module named name would be imported instead of a
// check's own tool (pytest, _pytest, pluggy, mypy...) or run at Python's start
// (sitecustomize): what no folder on the checks' import path may hold.
func ShadowModule(name string) bool { return shadowNames[name] }

// shadowReason refuses a module or package named like a check tool, or like a module Python
// or the tools import (importedNames), at an import root (the root or src/).
func shadowReason(parts []string) string {
	root := parts
	if len(root) > 1 && root[0] == "src" {
		root = root[1:]
	}
	module := strings.TrimSuffix(root[0], ".py")
	if len(root) == 1 && !strings.HasSuffix(root[0], ".py") {
		return ""
	}
	switch {
	case shadowNames[module] && (len(root) == 1 || makesPackage(root[1:])):
		// As below: a folder without __init__ (a monorepo's py/ holding py/tests/) imports
		// as a namespace package after the real tool; what would make it, or a folder in it,
		// a regular package is refused.
		return fmt.Sprintf("a module named like the check tool %q (Python would import it instead of the tool)", module)
	case importedNames[module] && (len(root) == 1 || len(root) == 2 && root[1] == "__init__.py"):
		// A folder without __init__.py (html/ of templates, site/) imports as a namespace
		// package, after the real module: only a module or a regular package shadows it.
		return fmt.Sprintf("a module named like %q, which Python and the checks' tools import (Python would import it instead of the real one, inside the checks)", module)
	}
	return ""
}

// makesPackage reports whether one of parts (a path below a folder named like a tool) is an
// __init__ module (__init__.py, __init__.<ABI tag>.so), which makes its folder a package.
func makesPackage(parts []string) bool {
	for _, p := range parts {
		if strings.HasPrefix(strings.ToLower(p), "__init__.") {
			return true
		}
	}
	return false
}

// startHooks are the shadow names Python runs at start-up rather than imports: never the
// project's own code to fix, whatever its base holds.
var startHooks = map[string]bool{"sitecustomize": true, "usercustomize": true}

// ToolPackages returns allow patterns for the Python sources of the modules and packages
// named like a check's tool that baseFiles (the base commit's files, slash-separated) hold at
// an import root: pluggy's own src/pluggy/, pytest's src/_pytest/ and src/py.py, mypy's
// mypy/. There the project is the tool: its checks already ran with that code at the base,
// and its bugs are fixed in it, so the shadow rule would refuse every fix. The patterns name
// .py files in the folders the base holds ("src/pluggy/*.py"), never bytecode, .pth files or
// manifests; new shadows (a pytest.py a branch adds) and start-up hooks (sitecustomize.py)
// stay refused.
func ToolPackages(baseFiles []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, f := range baseFiles {
		parts := strings.Split(f, "/")
		prefix := ""
		if len(parts) > 1 && parts[0] == "src" {
			parts, prefix = parts[1:], "src/"
		}
		name := strings.TrimSuffix(parts[0], ".py")
		if !shadowNames[name] && !importedNames[name] || startHooks[name] || hasProtectedName(parts) {
			continue
		}
		switch {
		case len(parts) == 1 && strings.HasSuffix(parts[0], ".py"):
			add(prefix + parts[0])
		case len(parts) > 1 && name == parts[0] && path.Base(f) == "__init__.py":
			add(path.Dir(f) + "/*.py") // a package folder of the base: its modules
		}
	}
	return out
}

// hasProtectedName reports whether one of parts is protected at any depth (__pycache__).
func hasProtectedName(parts []string) bool {
	for _, p := range parts {
		if _, ok := protectedNames[foldName(p)]; ok {
			return true
		}
	}
	return false
}

// AllowAtBase is allow (repos.<name>.allow_paths) with the repository's own tool packages
// (ToolPackages of baseFiles): the protected paths a fix to it may hold.
func AllowAtBase(allow, baseFiles []string) []string {
	own := ToolPackages(baseFiles)
	if len(own) == 0 {
		return allow
	}
	return append(append([]string(nil), allow...), own...)
}

// ProtectedPath returns why the maker may not write rel, or "" when it may: rel is not
// protected, or one of allow (repos.<name>.allow_paths) covers it.
func ProtectedPath(rel string, allow []string) string {
	why := protectedReason(rel)
	if why == "" || Allowed(allow, rel) {
		return ""
	}
	return why
}

// Allowed reports whether one of patterns covers rel: the same path, a folder given with a
// trailing "/" (or "/**") and everything below it, or a path.Match pattern ("*" within one
// name: ".github/workflows/*.yml").
func Allowed(patterns []string, rel string) bool {
	for _, p := range patterns {
		if dir, ok := strings.CutSuffix(p, "/**"); ok {
			p = dir + "/"
		}
		switch {
		case p == rel:
			return true
		case strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p):
			return true
		}
		if ok, err := path.Match(p, rel); err == nil && ok {
			return true
		}
	}
	return false
}

// CheckAllowPattern says what is wrong with an allow_paths entry, nil when it is usable.
func CheckAllowPattern(p string) error {
	trimmed := strings.TrimSuffix(strings.TrimSuffix(p, "/**"), "/")
	switch {
	case strings.TrimSpace(p) == "" || trimmed == "":
		return errors.New("is empty")
	case strings.HasPrefix(p, "/") || path.Clean(trimmed) != trimmed || strings.HasPrefix(trimmed, "../") || trimmed == "..":
		return fmt.Errorf("%q must be a clean path relative to the repository root, like requirements.txt or .github/workflows/*.yml", p)
	}
	for _, part := range strings.Split(trimmed, "/") {
		if strings.EqualFold(part, ".git") {
			return fmt.Errorf("%q names .git, which no tool ever writes", p)
		}
	}
	if _, err := path.Match(trimmed, ""); err != nil {
		return fmt.Errorf("%q is not a valid pattern: %w", p, err)
	}
	return nil
}

// SetAllowPaths lets the write tools write the protected paths that patterns cover
// (repos.<name>.allow_paths); see ProtectedPath.
func (w *Workspace) SetAllowPaths(patterns []string) {
	w.mu.Lock()
	w.allow = append([]string(nil), patterns...)
	w.mu.Unlock()
}

// protect refuses a write to a protected path the repository does not allow, saying why.
func (w *Workspace) protect(given, rel string) error {
	w.mu.Lock()
	allow := w.allow
	w.mu.Unlock()
	why := ProtectedPath(rel, allow)
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: %s is %s; files that run elsewhere (CI, hooks, editors, installs) or that would replace the checks' own tools never reach a fix branch, so the tools do not write them. Leave it out of the fix; if the fix truly needs it, say so in the submit summary: an operator can allow the path with repos.<name>.allow_paths in ticketd's configuration", ErrProtected, given, why)
}

// ProtectedIn lists "path: why" for each of paths the maker may not write under allow: what
// a branch holding paths must never publish.
func ProtectedIn(paths, allow []string) []string {
	var out []string
	for _, p := range paths {
		if why := ProtectedPath(p, allow); why != "" {
			out = append(out, p+": "+why)
		}
	}
	return out
}
