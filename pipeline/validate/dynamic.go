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
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '#':
			j := bytes.IndexByte(src[i:], '\n')
			if j < 0 {
				return d
			}
			i += j + 1
		case c == '"' || c == '\'':
			lit, next := readLiteral(src, i)
			if name, ok := literalModule(lit); ok && !seen[name] {
				seen[name] = true
				d.Names = append(d.Names, name)
			}
			i = next
		default:
			d.Opaque = d.Opaque || opaqueAt(src, i)
			i++
		}
	}
	return d
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
// "pkg.mod").
func literalModule(lit []byte) (string, bool) {
	s := strings.TrimLeft(string(lit), ".")
	if p, ok := strings.CutSuffix(s, ".py"); ok && strings.Contains(p, "/") {
		s = strings.ReplaceAll(path.Clean(p), "/", ".")
		s = strings.TrimLeft(s, ".")
	}
	return dotted(s)
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
