package daemon

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// extensions are the compiled extension modules a repository's build declares, by dotted
// module name, each with what declares it ("setup.py's Extension('pvectorc')"): a C
// extension of setuptools, or one written in Rust (a pyo3 crate built by maturin or
// setuptools-rust). Like a C source beside the package (ownExtension), a declaration says
// the module is the repository's own, which nothing builds into the checks' worktrees; it
// also names top-level modules (pyrsistent's pvectorc) and Rust ones, whose source file
// does not carry the module's name.
type extensions map[string]string

// setupExtension matches setuptools' Extension("name", ...) and setuptools-rust's
// RustExtension("name", ...) (or target="name") in a setup.py.
var setupExtension = regexp.MustCompile(`\b(Rust)?Extension\(\s*(?:(?:name|target)\s*=\s*)?["']([A-Za-z_][A-Za-z0-9_.]*)["']`)

// declaredExtensions reads the extension modules the repository's build files at the root
// declare (read reads the base's files): setup.py's Extension and RustExtension,
// pyproject.toml's [tool.maturin] module-name (or, for a maturin build without one, the
// crate's library name) and [[tool.setuptools-rust.ext-modules]] targets, and a root
// Cargo.toml with pyo3 among its dependencies.
func declaredExtensions(read discover.Reader) extensions {
	out := extensions{}
	add := func(module, by string) {
		if module != "" && out[module] == "" {
			out[module] = by
		}
	}
	if src, ok := read("setup.py"); ok {
		for _, m := range setupExtension.FindAllSubmatch(src, -1) {
			kind, what := "Extension", ""
			if len(m[1]) > 0 {
				kind, what = "RustExtension", " (Rust, setuptools-rust)"
			}
			add(string(m[2]), fmt.Sprintf("setup.py's %s(%q)%s", kind, m[2], what))
		}
	}
	manifest := "Cargo.toml"
	pyproject, _ := read("pyproject.toml")
	maturin := false
	if len(pyproject) > 0 {
		for _, target := range tomlValues(pyproject, "tool.setuptools-rust.ext-modules", "target") {
			add(target, "pyproject.toml's [[tool.setuptools-rust.ext-modules]] (Rust)")
		}
		requires := strings.Join(tomlValues(pyproject, "build-system", "requires"), " ")
		maturin = strings.Contains(strings.ToLower(requires), "maturin")
		if p := first(tomlValues(pyproject, "tool.maturin", "manifest-path")); p != "" {
			manifest = path.Clean(p)
		}
		if name := first(tomlValues(pyproject, "tool.maturin", "module-name")); name != "" {
			add(name, "pyproject.toml's [tool.maturin] module-name (Rust, built by maturin)")
			return out
		}
	}
	cargo, ok := read(manifest)
	if !ok || !maturin && !pyo3Crate(cargo) {
		return out
	}
	name := first(tomlValues(cargo, "lib", "name"))
	if name == "" {
		name = strings.ReplaceAll(first(tomlValues(cargo, "package", "name")), "-", "_")
	}
	add(name, manifest+"'s crate (Rust, pyo3)")
	return out
}

// pyo3Crate reports whether a Cargo.toml depends on pyo3, the crate Rust extensions of
// Python are written with.
func pyo3Crate(cargo []byte) bool {
	return tomlHasKey(cargo, "dependencies", "pyo3") || bytes.Contains(cargo, []byte("[dependencies.pyo3]"))
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// tomlValues are the string values of key in every [table] or [[table]] of a TOML file:
// one string, or each string of an array (possibly over several lines). It reads the few
// keys build files declare extensions with, not all of TOML.
func tomlValues(data []byte, table, key string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			header := strings.TrimSpace(strings.Trim(strings.SplitN(line, "#", 2)[0], "[] \t"))
			in = header == table
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !in || !ok || strings.Trim(strings.TrimSpace(k), `"'`) != key {
			continue
		}
		v = strings.TrimSpace(v)
		for strings.HasPrefix(v, "[") && !strings.Contains(v, "]") && sc.Scan() {
			v += " " + strings.TrimSpace(sc.Text())
		}
		out = append(out, quoted(v)...)
	}
	return out
}

// tomlHasKey reports whether [table] holds key with any value (pyo3 = { version = "0.22" }).
func tomlHasKey(data []byte, table, key string) bool {
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			in = strings.Trim(line, "[] \t") == table
			continue
		}
		if k, _, ok := strings.Cut(line, "="); in && ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
			return true
		}
	}
	return false
}

// quotedString matches one basic or literal TOML string.
var quotedString = regexp.MustCompile(`"([^"\\]*)"|'([^']*)'`)

// quoted are the strings of a TOML value, a comment after it aside.
func quoted(v string) []string {
	var out []string
	for _, m := range quotedString.FindAllStringSubmatch(v, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// extensionSkipNote says how many tests of a pytest result skipped at the base commit
// because pytest.importorskip found the repository's own compiled extension missing
// (pyrsistent's vector tests, parametrised over its C extension pvectorc): they never run
// in the checks' worktrees, so they gate no fix, where the report's "skipped" alone does
// not say why. "" when no such test skipped.
func extensionSkipNote(r validate.Result, files []string, ext extensions) string {
	var parts []string
	n := 0
	inPackage, topLevel := false, false
	for _, s := range r.ImportSkips {
		by := cmp.Or(ext[s.Module], ownExtension(files, ext, s.Module))
		if by == "" {
			continue // an optional dependency the tests may do without
		}
		n += s.Tests
		parts = append(parts, fmt.Sprintf("%s, %d test(s) in %s (built from %s)", s.Module, s.Tests, strings.Join(clipList(s.Files, 3), ", "), by))
		if strings.Contains(s.Module, ".") {
			inPackage = true
		} else {
			topLevel = true
		}
	}
	if n == 0 {
		return ""
	}
	text := fmt.Sprintf("check %s: %d test(s) skip at the base commit because the repository's own compiled extension module is not built (pytest.importorskip), so they do not gate a fix: %s",
		r.Name, n, strings.Join(parts, "; "))
	if topLevel {
		text += "; a repos.<name>.setup recipe that installs the project builds a top-level extension where the checks import it from (docs/environments.md)"
	}
	if inPackage {
		text += "; ticketd does not build an extension inside the repository's own package into the checks' worktrees (docs/environments.md, Limits)"
	}
	return text
}
