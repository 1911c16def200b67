package validate

import (
	"bytes"
	"hash/fnv"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Star imports and the names they carry.
//
// A package whose __init__.py does `from pkg.mod import *` (networkx does it for every
// algorithm module, and its own __init__.py does it for each subpackage) is imported by
// every test, so at the level of files a change to any module reaches the whole suite, on
// every submit. A change that leaves a module's top-level code as it was (its imports, its
// assignments, the names of its functions) and only edits function bodies changes what
// those functions do, not what importing the module does: only code that uses one of them
// can see it. So the walk carries names: the changed module's top-level names go to each
// module that star-imports it (those it exports: its __all__ when that is a literal list or
// tuple, else its public names), and from there on to the modules that star-import those;
// any other importer of a module reached so is affected, wholly, only when its source
// names one of the names (nx.volume, from networkx import volume, even in a string). When
// in doubt the walk falls back to files: a module whose top-level code changed, one that
// defines classes (an instance's methods are used without naming them), one whose base
// version is not known, or a file that cannot be read.

// topLevelSig hashes what importing a Python module does, as far as its source shows it:
// the module-level code (every line outside a top-level def or class, with its decorators)
// and the names of its top-level functions and classes, not their bodies. Two versions with
// the same hash differ only inside function and class bodies (or decorator arguments).
func topLevelSig(src []byte) uint64 {
	h := fnv.New64a()
	inBlock := false
	eachLine(src, func(line []byte) {
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || trimmed[0] == '#' {
			return
		}
		if line[0] != ' ' && line[0] != '\t' {
			if name, kind, ok := blockStart(line); ok {
				inBlock = true
				if kind != "@" {
					h.Write([]byte(kind + " " + name + "\n"))
				}
				return
			}
			inBlock = false
		}
		if !inBlock {
			h.Write(trimmed)
			h.Write([]byte{'\n'})
		}
	})
	return h.Sum64()
}

// blockStart reports whether a top-level line opens a def, a class or a decorator, with
// the name defined ("" for a decorator) and its kind: "def", "class" or "@".
func blockStart(line []byte) (name, kind string, ok bool) {
	if line[0] == '@' {
		return "", "@", true
	}
	// Only a line starting with one of topDefRe's keywords can match it: most lines do not,
	// and the expression's match allocates per call (every top-level line of every changed
	// module comes here).
	if !bytes.HasPrefix(line, []byte("def")) && !bytes.HasPrefix(line, []byte("class")) && !bytes.HasPrefix(line, []byte("async")) {
		return "", "", false
	}
	if m := topDefRe.FindSubmatch(line); m != nil {
		kind = "def"
		if bytes.HasPrefix(line, []byte("class")) {
			kind = "class"
		}
		return string(m[1]), kind, true
	}
	return "", "", false
}

var (
	topDefRe    = regexp.MustCompile(`^(?:async\s+def|def|class)\s+([A-Za-z_][A-Za-z0-9_]*)`)
	topAssignRe = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=[^=]`)
	allRe       = regexp.MustCompile(`(?m)^__all__\s*(\+?=|\.extend|\.append)`)
	allLiteral  = regexp.MustCompile(`(?ms)^__all__\s*=\s*[\[(]((?:\s|#[^\n]*|"[A-Za-z_][A-Za-z0-9_]*"|'[A-Za-z_][A-Za-z0-9_]*'|,)*)[\])]`)
	allItem     = regexp.MustCompile(`["']([A-Za-z_][A-Za-z0-9_]*)["']`)
)

// eachLine calls fn with each line of src, without its line ending.
func eachLine(src []byte, fn func(line []byte)) {
	for rest := src; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) > 0 {
			fn(line)
		}
	}
}

// changedNames are the names a module's change may have given other behaviour: every
// top-level function and class (an instance is made by naming its class, or by a function
// that does) and every name its module-level code assigns, dunders aside.
func changedNames(src []byte) map[string]bool {
	names := map[string]bool{}
	eachLine(src, func(line []byte) {
		if line[0] == ' ' || line[0] == '\t' {
			return
		}
		if name, kind, isBlock := blockStart(line); isBlock {
			if kind != "@" {
				names[name] = true
			}
			return
		}
		if m := topAssignRe.FindSubmatch(line); m != nil && !dunder(m[1]) {
			names[string(m[1])] = true // __all__ and the like are top-level code, unchanged
		}
	})
	return names
}

// starExports filters names to those `from mod import *` takes from a module with source
// src: those of its __all__ when that is one literal list or tuple of strings, else its
// public ones (not starting with "_"); all of them when __all__ is computed or changed
// later (which names it holds is then not known).
func starExports(src []byte, names map[string]bool) map[string]bool {
	out := map[string]bool{}
	switch defs := allRe.FindAll(src, -1); {
	case len(defs) == 0:
		for n := range names {
			if n[0] != '_' {
				out[n] = true
			}
		}
	case len(defs) == 1 && allLiteral.Match(src):
		all := allLiteral.FindSubmatch(src)
		for _, m := range allItem.FindAllSubmatch(all[1], -1) {
			if names[string(m[1])] {
				out[string(m[1])] = true
			}
		}
	default:
		for n := range names {
			out[n] = true
		}
	}
	return out
}

// mentioned are the names of names that src names as an identifier (a word of letters,
// digits and underscores), in code or in a string (getattr(nx, "volume")); nil when none.
// Comments and triple-quoted strings (docstrings: networkx's expanders.py cites "volume
// 125 of Progress in Mathematics") name nothing that runs.
func mentioned(src []byte, names map[string]bool) map[string]bool {
	var out map[string]bool
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '"' || c == '\'':
			triple := i+2 < len(src) && src[i+1] == c && src[i+2] == c
			_, next := readLiteral(src, i)
			if !triple {
				for n := range mentioned(src[i+1:max(i+1, next-1)], names) { // a one-line string's words count
					if out == nil {
						out = map[string]bool{}
					}
					out[n] = true
				}
			}
			i = next
			continue
		case !identByte(c):
			i++
			continue
		}
		j := i
		for j < len(src) && identByte(src[j]) {
			j++
		}
		if names[string(src[i:j])] {
			if out == nil {
				out = map[string]bool{}
			}
			out[string(src[i:j])] = true
		}
		i = j
	}
	return out
}

func dunder(name []byte) bool {
	return len(name) > 4 && bytes.HasPrefix(name, []byte("__")) && bytes.HasSuffix(name, []byte("__"))
}

func identByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// starTargets are the files a star import of file loads the names of: the module itself
// (mod.py, or a package's __init__.py) under each root its import is resolved from.
func (g *ImportGraph) starTargets(file string, imp Import) []string {
	var out []string
	for _, root := range g.importRoots(file, imp) {
		d := root
		if imp.Module != "" {
			d = path.Join(root, strings.ReplaceAll(imp.Module, ".", "/"))
		}
		if f, ok := g.files[d+".py"]; ok && imp.Module != "" {
			out = append(out, f)
		} else if f, ok := g.files[path.Join(d, "__init__.py")]; ok {
			out = append(out, f)
		}
	}
	return out
}

// narrowable reports whether a change to file may be walked by names: its base version's
// top-level code is known and the same as now.
func (g *ImportGraph) narrowable(file string, src []byte) bool {
	base, ok := g.baseTop[file]
	return ok && base == topLevelSig(src)
}

// nameWalk is one TestsAffectedBy walk: files reached wholly, and files reached only for
// some of their names.
type nameWalk struct {
	g       *ImportGraph
	reverse map[string][]string
	full    map[string]bool
	names   map[string]map[string]bool
	queue   []string
	srcs    map[string][]byte
	// pending are the computed imports not walked yet (triggerOpaque), nil before the first.
	pending []pendingSite
}

// source is file's text in the graph's tree, nil when it cannot be read.
func (w *nameWalk) source(file string) []byte {
	if src, ok := w.srcs[file]; ok {
		return src
	}
	src, err := readHead(filepath.Join(w.g.root, filepath.FromSlash(file)), maxScanBytes)
	if err != nil {
		src = nil
	}
	w.srcs[file] = src
	return src
}

func (w *nameWalk) setFull(f string) {
	if !w.full[f] {
		w.full[f] = true
		w.queue = append(w.queue, f)
	}
}

func (w *nameWalk) addNames(f string, names map[string]bool) {
	if w.full[f] {
		return
	}
	have := w.names[f]
	added := false
	for n := range names {
		if !have[n] {
			if have == nil {
				have = map[string]bool{}
				w.names[f] = have
			}
			have[n] = true
			added = true
		}
	}
	if added {
		w.queue = append(w.queue, f)
	}
}

// step walks from f to its importers: all of them when f is reached wholly; when f is
// reached for some names, a star importer takes those it exports, and an importer that
// names one of them is reached for those and for its own top-level names (its functions
// may call them), or wholly when it is a test or a conftest.py.
func (w *nameWalk) step(f string) {
	if w.full[f] {
		if b := path.Base(f); b == "conftest.py" || b == "__init__.py" {
			// Tests below a conftest.py load it without importing it, and tests inside a
			// package load its __init__.py: what reaches either reaches them.
			w.g.markTestsBelow(path.Dir(f), w.full)
		}
		for _, importer := range w.reverse[f] {
			w.setFull(importer)
		}
		return
	}
	names := w.names[f]
	for _, importer := range w.reverse[f] {
		if w.full[importer] {
			continue
		}
		src := w.source(importer)
		if src == nil {
			w.setFull(importer)
			continue
		}
		if uses := mentioned(src, names); uses != nil {
			if w.g.isTest(importer) || path.Base(importer) == "conftest.py" {
				w.setFull(importer)
				continue
			}
			own := changedNames(src)
			for n := range uses {
				own[n] = true // what it imports by name, it may export again
			}
			w.addNames(importer, own)
		}
		if w.g.starImports(importer, f) {
			fsrc := w.source(f)
			if fsrc == nil {
				w.setFull(importer)
				continue
			}
			w.addNames(importer, starExports(fsrc, names))
		}
	}
}

// starTarget reports whether some file star-imports file.
func (g *ImportGraph) starTarget(file string) bool {
	for _, targets := range g.stars {
		for _, t := range targets {
			if t == file {
				return true
			}
		}
	}
	return false
}

// starImports reports whether importer takes target's names by a star import.
func (g *ImportGraph) starImports(importer, target string) bool {
	for _, t := range g.stars[importer] {
		if t == target {
			return true
		}
	}
	return false
}
