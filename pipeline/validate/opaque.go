package validate

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// Computed imports, walked as imports.
//
// A file that loads modules by a name it computes (importlib.import_module(name)) may load
// any module, but only while its code runs, and that code runs only in a test that loads
// the file: a computed import is an import, made by the code that runs it, of every module
// its name may be. Treating it so keeps the selection sound without running the whole suite
// on every change of every repository that has one (networkx's lazy_imports.py made each of
// its submits run the whole suite), in two steps:
//
//   - who runs it: a call at module level, in a decorated def or class (a decorator may call
//     or register it), in a module dunder (__getattr__ runs on attribute access), or in a
//     def or class the file itself names elsewhere runs when the file is loaded: every test
//     that loads the file may run it. A call inside a def or class no other code of its
//     file names runs only when code naming it calls it: the walk reaches the file for that
//     name (starimports.go's name walk), which reaches the tests that name it, directly or
//     through code that does. networkx's attach() is named by one test only.
//   - what it may load: every module, unless the name's start is known statically
//     (f"pkg.plugins.{name}", "pkg." + name, f"{__name__}.{name}"): then the modules under
//     that prefix and the packages on its way.
//
// When no scanned file imports the file with the computed import (a script, a plugin that
// pytest or an entry point loads by name), the tests that run it are not known, and
// DynamicReason asks for the whole suite as before.
//
// What this cannot see, as the name walk cannot: a function of the file called through a
// computed attribute name (getattr(module, name) with a computed name) by code that names
// neither it nor the file.

// opaqueSite is one place a file loads modules by a name it computes.
type opaqueSite struct {
	// unit is the top-level def or class holding the call, which runs only when code
	// naming it calls it; "" when the call runs whenever the file is loaded.
	unit string
	// prefix is what the computed name starts with, "" when not known (any module); own says
	// it follows the file's own __name__ ("name") or __package__ ("package").
	prefix, own string
}

// implicitUnit reports whether name is a module-level name Python or pytest call without naming them.
func implicitUnit(name string) bool {
	return len(name) > 4 && strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__")
}

// opaqueSites finds the computed imports of src (where opaqueAt finds them) and, for each,
// the unit that runs it and the prefix of the name it loads. It lexes strings and comments
// as scanDynamic does and reads a line's unit from its first word at column 0.
func opaqueSites(src []byte) []opaqueSite {
	var sites []opaqueSite
	var (
		unit               string // the top-level def or class being read, "" at module level
		decorated, pending bool   // the unit has decorators; a decorator line was read
		inAll              bool   // inside an __all__ statement, whose strings name nothing that runs
		lineStart          = true
		mentions           = map[string]bool{} // identifiers named outside their own unit
		decoratedUnits     = map[string]bool{}
	)
	for i := 0; i < len(src); {
		if lineStart {
			lineStart = false
			unit, decorated, pending, inAll = lineUnit(src[i:], unit, decorated, pending, inAll)
			if decorated && unit != "" {
				decoratedUnits[unit] = true
			}
		}
		switch c := src[i]; {
		case c == '\n':
			lineStart = true
			i++
		case c == '#':
			j := bytes.IndexByte(src[i:], '\n')
			if j < 0 {
				i = len(src)
				continue
			}
			i += j
		case c == '"' || c == '\'':
			triple := i+2 < len(src) && src[i+1] == c && src[i+2] == c
			lit, next := readLiteral(src, i)
			if !triple && !inAll {
				eachWord(lit, func(w string) {
					if w != unit {
						mentions[w] = true
					}
				})
			}
			if next > 0 && next <= len(src) && src[next-1] == '\n' {
				lineStart = true
			}
			i = next
		case identByte(c) && (i == 0 || !identByte(src[i-1])):
			j := i
			for j < len(src) && identByte(src[j]) {
				j++
			}
			if opaqueAt(src, i) {
				prefix, own := computedPrefix(src, i)
				sites = append(sites, opaqueSite{unit: unit, prefix: prefix, own: own})
			}
			if w := string(src[i:j]); w != unit && (j >= len(src) || src[j] != '"' && src[j] != '\'') {
				mentions[w] = true
			}
			i = j
		default:
			i++
		}
	}
	for k := range sites {
		if u := sites[k].unit; u != "" && (mentions[u] || decoratedUnits[u] || implicitUnit(u)) {
			sites[k].unit = ""
		}
	}
	return sites
}

// lineUnit is the unit a line starting at line belongs to: an indented, blank, comment or
// closing-bracket line continues the current one; a def or class at column 0 starts its
// own; a decorator or any other statement at column 0 is module level.
func lineUnit(line []byte, unit string, decorated, pending, inAll bool) (string, bool, bool, bool) {
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return unit, decorated, pending, inAll
	}
	switch line[0] {
	case ' ', '\t', '#', ')', ']', '}':
		return unit, decorated, pending, inAll
	case '@':
		return "", false, true, false
	}
	if name, kind, ok := blockStart(line); ok && kind != "@" {
		return name, pending, false, false
	}
	return "", false, false, bytes.HasPrefix(line, []byte("__all__"))
}

// eachWord calls fn with each identifier-like word of b.
func eachWord(b []byte, fn func(string)) {
	for i := 0; i < len(b); {
		if !identByte(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && identByte(b[j]) {
			j++
		}
		fn(string(b[i:j]))
		i = j
	}
}

// computedPrefix is what the name an import_module( or __import__( call at src[i] loads
// starts with, when its source shows it: an f-string's text before its first field, a
// literal followed by + or %, or a literal's text before {} with .format; own is "name"
// or "package" when the name starts with the file's __name__ or __package__. "" and "" when
// not known (a relative or unreadable start included).
func computedPrefix(src []byte, i int) (prefix, own string) {
	j := bytes.IndexByte(src[i:], '(')
	if j < 0 {
		return "", ""
	}
	j = skipSpace(src, i+j+1)
	for _, w := range []string{"__name__", "__package__"} {
		if bytes.HasPrefix(src[j:], []byte(w)) {
			k := skipSpace(src, j+len(w))
			if k < len(src) && src[k] == '+' {
				k = skipSpace(src, k+1)
				if k < len(src) && (src[k] == '"' || src[k] == '\'') {
					lit, _ := readLiteral(src, k)
					return checkedPrefix(string(lit), strings.TrimSuffix(strings.TrimPrefix(w, "__"), "__"))
				}
			}
			return checkedPrefix("", strings.TrimSuffix(strings.TrimPrefix(w, "__"), "__"))
		}
	}
	fstring := false
	for n := 0; n < 2 && j < len(src) && strings.IndexByte("fFrRuUbB", src[j]) >= 0; n++ {
		fstring = fstring || src[j] == 'f' || src[j] == 'F'
		j++
	}
	if j >= len(src) || src[j] != '"' && src[j] != '\'' {
		return "", ""
	}
	lit, k := readLiteral(src, j)
	text := string(lit)
	if fstring {
		for _, w := range []string{"{__name__}", "{__package__}"} {
			if rest, ok := strings.CutPrefix(text, w); ok {
				head, _, _ := strings.Cut(rest, "{")
				return checkedPrefix(head, strings.Trim(w, "{_}"))
			}
		}
		head, _, _ := strings.Cut(text, "{")
		return checkedPrefix(head, "")
	}
	k = skipSpace(src, k)
	switch {
	case k < len(src) && src[k] == '+':
		return checkedPrefix(text, "")
	case k < len(src) && src[k] == '%':
		head, _, _ := strings.Cut(text, "%")
		return checkedPrefix(head, "")
	case bytes.HasPrefix(src[k:], []byte(".format(")):
		head, _, _ := strings.Cut(text, "{")
		return checkedPrefix(head, "")
	}
	return "", ""
}

// checkedPrefix keeps a prefix made of a dotted name's characters; a relative one ("."
// without own) or one holding anything else is not known.
func checkedPrefix(head, own string) (string, string) {
	if own == "" && (head == "" || head[0] == '.') {
		return "", ""
	}
	for _, r := range head {
		if r != '.' && r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(r >= '0' && r <= '9') {
			return "", ""
		}
	}
	return head, own
}

// prefixes are the dotted starts the site's names have, in the file file: nil when any
// name may be loaded.
func (s opaqueSite) prefixes(file string) []string {
	switch s.own {
	case "":
		if s.prefix == "" {
			return nil
		}
		return []string{s.prefix}
	case "name":
		var out []string
		for _, n := range ModuleNames(file) {
			out = append(out, n+s.prefix)
		}
		return out
	default: // package
		d := path.Dir(file)
		if d == "." {
			return nil // a module at the root: __package__ is "", the name is not known
		}
		var out []string
		for _, n := range ModuleNames(d + "/__init__.py") {
			out = append(out, n+s.prefix)
		}
		return out
	}
}

// mayLoad reports whether the site, in file, may load f: f's name starts with one of its
// prefixes, or, with onTheWay, f is a package on the way to one.
func (s opaqueSite) mayLoad(file, f string, onTheWay bool) bool {
	return s.mayLoadNamed(file, ModuleNames(f), onTheWay)
}

// mayLoadNamed is mayLoad of a file with these module names.
func (s opaqueSite) mayLoadNamed(file string, names []string, onTheWay bool) bool {
	ps := s.prefixes(file)
	if ps == nil {
		return true
	}
	for _, n := range names {
		for _, p := range ps {
			if strings.HasPrefix(n, p) || onTheWay && strings.HasPrefix(p, n+".") {
				return true
			}
		}
	}
	return false
}

// opaqueRunner reports whether the tests that may run file's computed imports are known:
// file is a test module or a conftest.py (pytest loads it), or some scanned file imports it
// and no string names it (a name in a string may be loaded from anywhere).
func (g *ImportGraph) opaqueRunner(file string) bool {
	if g.isTest(file) || path.Base(file) == "conftest.py" {
		return true
	}
	for _, n := range ModuleNames(file) {
		if g.literals[n] {
			return false
		}
	}
	for f, targets := range g.imports {
		if f != file && slices.Contains(targets, file) {
			return true
		}
	}
	return false
}

// opaqueReason is why a change may reach tests no walk finds through a computed import,
// "" when every file with one is loaded by files the graph knows.
func (g *ImportGraph) opaqueReason(file string) string {
	for _, f := range slices.Sorted(maps.Keys(g.opaque)) {
		if !g.opaqueRunner(f) {
			return fmt.Sprintf("%s loads modules by a computed name (importlib, __import__, pkgutil, runpy) and no scanned file imports it (a script, or a plugin loaded by name), so which tests run it is not known; it may load %s", f, file)
		}
	}
	return ""
}

// triggerOpaque walks, when the walk reaches f, the computed imports that may load it as
// imports of f: their file wholly, or for the unit that runs them. A package on the way to
// what they load counts only when reached wholly: one reached for some names runs no
// changed code when loaded (its top-level code is the base's), and only code that names
// them sees the change, as everywhere in the name walk. Each computed import is walked
// once; the files the walk reaches are many, the computed imports few.
func (w *nameWalk) triggerOpaque(f string) {
	if w.pending == nil {
		w.pending = []pendingSite{} // not nil: made once
		for _, file := range slices.Sorted(maps.Keys(w.g.opaque)) {
			for _, s := range w.g.opaque[file] {
				w.pending = append(w.pending, pendingSite{file: file, site: s})
			}
		}
	}
	var names []string // f's module names, once some site needs them
	kept := w.pending[:0]
	for _, p := range w.pending {
		load := p.site.prefix == "" && p.site.own == ""
		if !load {
			if names == nil {
				names = ModuleNames(f)
			}
			load = p.site.mayLoadNamed(p.file, names, w.full[f])
		}
		if !load {
			kept = append(kept, p)
			continue
		}
		if p.site.unit == "" || w.g.isTest(p.file) || path.Base(p.file) == "conftest.py" {
			w.setFull(p.file)
		} else {
			w.addNames(p.file, map[string]bool{p.site.unit: true})
		}
	}
	w.pending = kept
}

// pendingSite is a computed import the walk has not reached yet.
type pendingSite struct {
	file string
	site opaqueSite
}
