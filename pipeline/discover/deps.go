package discover

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// A module the checks' interpreter lacks is most often a test dependency the project lists
// somewhere: an extra of pyproject.toml or setup.cfg, a PEP 735 dependency group, a
// requirements file. Where it is listed decides how it is installed: `pip install -e
// '.[test]'` installs an extra named test and nothing else (pip only warns when there is
// none), a dependency group needs `pip install --group NAME`, a requirements file `pip
// install -r FILE`. Dependencies reads those lists so that the advice names the right one.

// Declaration is one place a repository lists a distribution it needs.
type Declaration struct {
	// Requirement is the line as written ("pytest-relaxed>=2").
	Requirement string
	// File is where it is written (pyproject.toml, setup.cfg, tests/requirements.txt).
	File string
	// Kind is what lists it: "extra", "group", "dependencies" (the project's own) or
	// "requirements" (a requirements file).
	Kind string
	// Name is the extra's or the group's name.
	Name string
	// dist is the requirement's distribution name, normalized (PEP 503).
	dist string
}

// Where says where the requirement is listed, for a person.
func (d Declaration) Where() string {
	switch d.Kind {
	case "extra":
		if d.File == "setup.cfg" {
			return fmt.Sprintf("setup.cfg's [options.extras_require] %s", d.Name)
		}
		return fmt.Sprintf("%s's [project.optional-dependencies] %s", d.File, d.Name)
	case "group":
		return fmt.Sprintf("%s's [dependency-groups] %s", d.File, d.Name)
	case "dependencies":
		return d.File + "'s project dependencies"
	}
	return d.File
}

// Install is the pip arguments that install what lists the requirement, run from the
// repository's root: the project with the extra, the project and the group (pip 25.1 or
// later reads dependency groups), the project, or the requirements file.
func (d Declaration) Install() string {
	switch d.Kind {
	case "extra":
		return fmt.Sprintf("install -e '.[%s]'", d.Name)
	case "group":
		return fmt.Sprintf("install -e . --group %s", d.Name)
	case "dependencies":
		return "install -e ."
	}
	return "install -r " + d.File
}

// Dependencies are the requirements a repository lists, in the order they were read.
type Dependencies []Declaration

// maxRequirementFiles bounds the requirements files read.
const maxRequirementFiles = 20

// ReadDependencies reads the requirements the repository lists (read reads its files, files
// are its paths): pyproject.toml's [project] dependencies, [project.optional-dependencies]
// and [dependency-groups], setup.cfg's [options.extras_require], and requirements files
// (*requirements*.txt or .in at the root or one folder down, and any .txt or .in in a
// folder named requirements).
func ReadDependencies(read Reader, files []string) Dependencies {
	var out Dependencies
	add := func(file, kind, name string, reqs []string) {
		for _, r := range reqs {
			if dist := requirementName(r); dist != "" {
				out = append(out, Declaration{Requirement: strings.TrimSpace(r), File: file, Kind: kind, Name: name, dist: dist})
			}
		}
	}
	if data, ok := read("pyproject.toml"); ok {
		text := string(data)
		if vals, found, _ := tomlTable(text, "project"); found {
			add("pyproject.toml", "dependencies", "", vals["dependencies"].items)
		}
		for _, table := range []struct{ name, kind string }{{"project.optional-dependencies", "extra"}, {"dependency-groups", "group"}} {
			vals, _, _ := tomlTable(text, table.name)
			for _, name := range sortedKeys(vals) {
				add("pyproject.toml", table.kind, name, vals[name].items)
			}
		}
	}
	if data, ok := read("setup.cfg"); ok {
		if vals, found := parseINISection(data, "options.extras_require"); found {
			for _, name := range sortedKeys(vals) {
				add("setup.cfg", "extra", name, strings.Split(vals[name].raw, "\n"))
			}
		}
	}
	n := 0
	for _, f := range files {
		if n >= maxRequirementFiles || !requirementsFile(f) {
			continue
		}
		data, ok := read(f)
		if !ok {
			continue
		}
		n++
		var reqs []string
		for _, line := range strings.Split(string(data), "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' || line[0] == '-' {
				continue // a comment, or an option (-r other.txt, -e ., --index-url)
			}
			reqs = append(reqs, line)
		}
		add(f, "requirements", "", reqs)
	}
	return out
}

// requirementsFile reports whether p is read as a requirements file.
func requirementsFile(p string) bool {
	ext := path.Ext(p)
	if ext != ".txt" && ext != ".in" {
		return false
	}
	dir, base := path.Split(p)
	if strings.Count(p, "/") > 1 {
		return false
	}
	return strings.Contains(strings.ToLower(base), "requirements") || path.Base(strings.TrimSuffix(dir, "/")) == "requirements"
}

// sortedKeys are m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// requirementStart is the distribution name at the start of a PEP 508 requirement.
var requirementStart = regexp.MustCompile(`^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)`)

// requirementName is the normalized distribution name of a requirement, "" when it does
// not start with one (a URL, an option).
func requirementName(r string) string {
	m := requirementStart.FindStringSubmatch(r)
	if m == nil || strings.Contains(r, "://") && !strings.Contains(r, "@") {
		return ""
	}
	return normalizeDist(m[1])
}

// distSeparators are the runs PEP 503 folds into one dash.
var distSeparators = regexp.MustCompile(`[-_.]+`)

// normalizeDist is a distribution name as PEP 503 compares them.
func normalizeDist(name string) string {
	return distSeparators.ReplaceAllString(strings.ToLower(name), "-")
}

// moduleDists are distributions whose import name is not their own, for the modules tests
// most often lack.
var moduleDists = map[string][]string{
	"yaml": {"pyyaml"}, "PIL": {"pillow"}, "dateutil": {"python-dateutil"}, "attr": {"attrs"},
	"bs4": {"beautifulsoup4"}, "sklearn": {"scikit-learn"}, "jwt": {"pyjwt"}, "serial": {"pyserial"},
	"dotenv": {"python-dotenv"}, "OpenSSL": {"pyopenssl"}, "Crypto": {"pycryptodome", "pycrypto"},
	"magic": {"python-magic"}, "multipart": {"python-multipart"}, "git": {"gitpython"},
	"google": {"protobuf"}, "xdist": {"pytest-xdist"}, "pytest_cov": {"pytest-cov"},
}

// For lists where the repository declares the distribution that provides the top-level
// module (pytest_relaxed: pytest-relaxed), nil when nothing does.
func (d Dependencies) For(module string) []Declaration {
	if module == "" || strings.Contains(module, ".") {
		return nil
	}
	names := append([]string{normalizeDist(module), "python-" + normalizeDist(module)}, moduleDists[module]...)
	var out []Declaration
	for _, decl := range d {
		if slices.Contains(names, decl.dist) {
			out = append(out, decl)
		}
	}
	return out
}
