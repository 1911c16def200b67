package validate

import (
	"bytes"
	"path"
	"strings"
)

// Dynamic is what a Python file says about modules it may load by name at run time, which
// the import statements do not show: the string literals that look like module names
// ("pkg.mod", "pkg/mod.py"), and whether it loads modules by a name it computes
// (importlib.import_module(name), __import__(x), pkgutil.iter_modules, runpy, a spec from a
// file location). Test selection uses it to run the whole suite when a changed module may be
// loaded that way: the answer may only widen what runs.
type Dynamic struct {
	Names  []string // dotted names of string literals that look like modules, each once
	Opaque bool     // a module is loaded by a computed name
}

// maxLiteral bounds the string literals kept as names: module names are short.
const maxLiteral = 200

// opaqueCalls load modules by a name the code computes, or a whole package's modules.
var opaqueCalls = []string{"import_module(", "__import__(", "iter_modules(", "walk_packages(", "spec_from_file_location(",
	"run_module(", "run_path(", "load_module(", "load_source(", "SourceFileLoader("}

// ParseDynamic reads Python source for its module-like string literals and computed imports.
// It lexes strings and comments only (prefixes r, b, f, u; triple quotes; escapes), not the
// grammar, so a name in a docstring counts too: wider, never narrower.
func ParseDynamic(src []byte) Dynamic {
	var d Dynamic
	seen := map[string]bool{}
	d.Opaque = scanDynamic(src, func(name []byte) {
		if !seen[string(name)] {
			seen[string(name)] = true
			d.Names = append(d.Names, string(name))
		}
	})
	return d
}

// scanDynamic is ParseDynamic calling name for each module-like literal (its bytes are only
// valid during the call; a literal written as a path comes as dots) and reporting Opaque.
func scanDynamic(src []byte, name func([]byte)) bool {
	opaque := false
	var conv []byte
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == '#':
			j := bytes.IndexByte(src[i:], '\n')
			if j < 0 {
				return opaque
			}
			i += j + 1
		case c == '"' || c == '\'':
			lit, next := readLiteral(src, i)
			if n, ok := literalModule(lit, &conv); ok {
				name(n)
			}
			i = next
		default:
			opaque = opaque || opaqueAt(src, i)
			i++
		}
	}
	return opaque
}

// opaqueAt reports whether an opaque call starts at src[i] and its first argument is not a
// single string literal (a literal is read as a name).
func opaqueAt(src []byte, i int) bool {
	if !strings.ContainsRune("i_wsrlS", rune(src[i])) || i > 0 && src[i-1] != '.' && isIdentByte(src[i-1]) {
		return false
	}
	for _, call := range opaqueCalls {
		if !bytes.HasPrefix(src[i:], []byte(call)) {
			continue
		}
		if call != "import_module(" && call != "__import__(" {
			return true
		}
		return !literalArgument(src, i+len(call))
	}
	return false
}

// literalArgument reports whether the call arguments at src[j:] start with a single string
// literal: `"pkg.mod")` or `".mod", "pkg")`.
func literalArgument(src []byte, j int) bool {
	j = skipSpace(src, j)
	if j >= len(src) || (src[j] != '"' && src[j] != '\'') {
		return false
	}
	_, k := readLiteral(src, j)
	k = skipSpace(src, k)
	return k < len(src) && (src[k] == ')' || src[k] == ',')
}

func skipSpace(src []byte, j int) int {
	for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n') {
		j++
	}
	return j
}

func isIdentByte(b byte) bool {
	return b == '_' || b == '.' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

// readLiteral reads the string literal whose opening quote is at src[i]; it returns its
// content (clipped) and the index after it. An unterminated literal runs to its line's end
// (short) or the source's end (triple).
func readLiteral(src []byte, i int) ([]byte, int) {
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	start := i + 1
	if triple {
		start = i + 3
	}
	for j := start; j < len(src); j++ {
		switch {
		case src[j] == '\\':
			j++
		case !triple && src[j] == '\n':
			return clipLit(src[start:j]), j + 1
		case src[j] == q && (!triple || (j+2 < len(src) && src[j+1] == q && src[j+2] == q)):
			end := j + 1
			if triple {
				end = j + 3
			}
			return clipLit(src[start:j]), end
		}
	}
	return clipLit(src[start:]), len(src)
}

func clipLit(b []byte) []byte {
	if len(b) > maxLiteral {
		return nil
	}
	return b
}

// literalModule turns a literal into the module name it may name: a dotted name as is
// ("pkg.mod", ".mod" without its dots), a path to a .py file as dots ("pkg/mod.py" →
// "pkg.mod", built in *conv). Most literals are not names and cost no allocation.
func literalModule(lit []byte, conv *[]byte) ([]byte, bool) {
	s := bytes.TrimLeft(lit, ".")
	if p, ok := bytes.CutSuffix(s, []byte(".py")); ok && bytes.IndexByte(p, '/') >= 0 {
		*conv = append((*conv)[:0], path.Clean(string(p))...)
		for i, c := range *conv {
			if c == '/' {
				(*conv)[i] = '.'
			}
		}
		s = bytes.TrimLeft(*conv, ".")
	}
	return s, dottedBytes(s)
}

// dottedBytes is dotted for bytes, without allocating.
func dottedBytes(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	start := true
	for _, r := range string(s) { // ranging over a conversion does not allocate
		switch {
		case r == '.':
			if start {
				return false
			}
			start = true
			continue
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r > 127:
		case r >= '0' && r <= '9' && !start:
		default:
			return false
		}
		start = false
	}
	return !start
}

// ModuleNames are the dotted names under which file (slash-separated, relative to the
// repository) may be imported: from the root, and from each folder below (src/ layouts,
// rootdir insertion), a package's __init__.py by its package's names.
func ModuleNames(file string) []string {
	p := strings.TrimSuffix(file, ".py")
	p = strings.TrimSuffix(p, "/__init__")
	parts := strings.Split(p, "/")
	var out []string
	for i := range parts {
		out = append(out, strings.Join(parts[i:], "."))
	}
	return out
}
