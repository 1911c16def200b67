package discover

import (
	"bufio"
	"bytes"
	"cmp"
	"math"
	"path"
	"strconv"
	"strings"
)

// pytestConfigs are the files pytest reads its configuration from, in the order it tries
// them at the root: the first that holds a pytest section wins. What counts depends on the
// pytest that runs the checks (see pytestConfig): pytest.toml and .pytest.toml (table
// [pytest]) are pytest 9's, tried first and the configuration even when empty, as pytest.ini
// always is and .pytest.ini is from pytest 9 on; pyproject.toml's native [tool.pytest] table
// is pytest 9's too, where earlier versions read [tool.pytest.ini_options] alone.
var pytestConfigs = []struct {
	file, section string
	since         int // the first pytest major version that reads the file; 0 any
	always        int // from this pytest major version on, the file is the configuration even without its section; 0 never
}{
	{"pytest.toml", "pytest", 9, 9},
	{".pytest.toml", "pytest", 9, 9},
	{"pytest.ini", "pytest", 0, 1},
	{".pytest.ini", "pytest", 0, 9},
	{"pyproject.toml", "", 0, 0},
	{"tox.ini", "pytest", 0, 0},
	{"setup.cfg", "tool:pytest", 0, 0},
}

// newestPytest is the pytest major version whose rules apply when the checks' pytest is
// not known.
const newestPytest = 9

// pytestMajor is the major version of a pytest version string ("7.2.1": 7), newestPytest
// when it does not read as one (unknown: "").
func pytestMajor(version string) int {
	head, _, _ := strings.Cut(strings.TrimSpace(version), ".")
	n, err := strconv.Atoi(head)
	if err != nil || n <= 0 {
		return newestPytest
	}
	return n
}

// ConfigFiles lists the files a repository's test discovery is read from.
func ConfigFiles() []string {
	out := make([]string, 0, len(pytestConfigs))
	for _, c := range pytestConfigs {
		out = append(out, c.file)
	}
	return out
}

// RootConfig is the file at the root (read) that the given pytest version ("7.2.1"; ""
// the newest) reads its configuration from, "" when none holds it: a setup.cfg without
// [tool:pytest] or a pyproject.toml without [tool.pytest.ini_options] does not stop
// pytest's search, which goes on from the folder of the paths it is given (a
// tests/pytest.ini) and then above the root.
func RootConfig(read Reader, pytestVersion string) string {
	file, _ := pytestConfig(read, pytestMajor(pytestVersion))
	return file
}

// ConfigFor is the configuration file (slash-separated, relative to the root) that pytest
// of the given version reads for a run from the root naming args (its path arguments:
// folders, files, node ids; none for a bare run), "" when none of the repository's files
// holds it. pytest looks in the folder the existing paths have in common (a file's
// folder), then in each folder above it: `pytest tests/test_x.py` reads a tests/pytest.ini
// that a bare `pytest` never reads. A path that does not exist counts for nothing, as in
// pytest. stat says whether a path exists and is a folder.
func ConfigFor(read Reader, pytestVersion string, args []string, stat func(p string) (exists, dir bool)) string {
	major := pytestMajor(pytestVersion)
	common := ""
	for _, a := range args {
		p, _, _ := strings.Cut(a, "::")
		p = cleanPath(p)
		if p == "" {
			continue
		}
		if ok, dir := stat(p); !ok {
			continue
		} else if !dir {
			p = path.Dir(p) // a file: its folder
		}
		switch {
		case common == "":
			common = p
		default:
			for !under(p, common) {
				common = path.Dir(common)
			}
		}
	}
	for d := cmp.Or(common, "."); ; d = path.Dir(d) {
		in := read
		if d != "." {
			in = func(p string) ([]byte, bool) { return read(d + "/" + p) }
		}
		if file, _ := pytestConfig(in, major); file != "" {
			if d == "." {
				return file
			}
			return d + "/" + file
		}
		if d == "." || d == "/" {
			return ""
		}
	}
}

// maxConfigBytes bounds how much of one configuration file is read.
const maxConfigBytes = 1 << 20

// pytestConfig finds the configuration that pytest of the given major version reads among
// the root's files: the file it came from and its ini values (each a raw string, or for
// TOML arrays the items joined by newlines with list set).
func pytestConfig(read Reader, major int) (file string, values map[string]iniValue) {
	for _, c := range pytestConfigs {
		if major < c.since {
			continue // a file this pytest does not know of
		}
		data, ok := read(c.file)
		if !ok {
			continue
		}
		if len(data) > maxConfigBytes {
			data = data[:maxConfigBytes]
		}
		var vals map[string]iniValue
		var found bool
		switch {
		case c.file == "pyproject.toml":
			tables := []string{"tool.pytest.ini_options"}
			if major >= 9 {
				tables = append(tables, "tool.pytest")
			}
			vals, found = parseTOMLTable(data, tables...)
		case strings.HasSuffix(c.file, ".toml"):
			vals, found = parseTOMLTable(data, c.section)
		default:
			vals, found = parseINISection(data, c.section)
		}
		if found || c.always > 0 && major >= c.always {
			return c.file, vals
		}
	}
	return "", nil
}

// iniValue is one configuration value: a raw ini string, or the items of a TOML array.
type iniValue struct {
	raw   string
	items []string
	list  bool
}

// words is the value as pytest's "args" and "linelist" types read it: a TOML array's items,
// else the raw string split like a shell (quotes group, whitespace separates).
func (v iniValue) words() []string {
	if v.list {
		return v.items
	}
	return shellSplit(v.raw)
}

// parseINISection reads the keys of [section] the way Python's configparser does for the
// values pytest uses: "key = value" or "key: value", continuation lines indented, comments
// starting with # or ; on their own line.
func parseINISection(data []byte, section string) (map[string]iniValue, bool) {
	vals := map[string]iniValue{}
	found, in := false, false
	last := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxConfigBytes)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") && strings.HasSuffix(trimmed, "]") && line[0] == '[' {
			in = strings.TrimSpace(trimmed[1:len(trimmed)-1]) == section
			found = found || in
			last = ""
			continue
		}
		if !in || trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';' {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && last != "" {
			v := vals[last]
			v.raw += "\n" + trimmed
			vals[last] = v
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			last = ""
			continue
		}
		last = strings.ToLower(strings.TrimSpace(line[:i]))
		vals[last] = iniValue{raw: strings.TrimSpace(line[i+1:])}
	}
	return vals, found
}

// parseTOMLTable reads the keys of the first of tables present in a pyproject.toml: string
// values (basic or literal), arrays of strings, possibly over several lines, and other
// scalars as pytest 7 and 8 read them (str() of the value: xfail_strict = true is "True").
// It reads what pytest's own keys use, not all of TOML: any other value (an inline table, a
// date) is kept as written.
// pytest 9 reads a [tool.pytest] table only when it holds keys: one with none is there
// for its [tool.pytest.ini_options].
func parseTOMLTable(data []byte, tables ...string) (map[string]iniValue, bool) {
	for _, table := range tables {
		vals, ok, keyed := tomlTable(string(data), table)
		if ok && (keyed || table != "tool.pytest") {
			return vals, true
		}
	}
	return nil, false
}

// tomlTable reads table's keys from text: found says the table is there, keyed that it
// holds a key of any type.
func tomlTable(text, table string) (vals map[string]iniValue, found, keyed bool) {
	vals = map[string]iniValue{}
	in := false
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if strings.HasPrefix(trimmed, "[") {
			header := strings.TrimSpace(strings.Trim(stripTOMLComment(trimmed), "[]"))
			in = header == table
			found = found || in
			continue
		}
		if !in || trimmed == "" || trimmed[0] == '#' {
			continue
		}
		key, rest, ok := strings.Cut(trimmed, "=")
		if !ok {
			continue
		}
		keyed = true
		key = strings.Trim(strings.TrimSpace(key), `"'`)
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "[") {
			// An array: gather lines until its brackets balance outside strings.
			buf := rest
			for !arrayClosed(buf) && i+1 < len(lines) {
				i++
				buf += "\n" + lines[i]
			}
			vals[strings.ToLower(key)] = iniValue{items: tomlStrings(buf), list: true}
			continue
		}
		if strings.HasPrefix(rest, `"""`) || strings.HasPrefix(rest, "'''") {
			// A multi-line string (addopts = """ ... """, one option a line).
			delim := rest[:3]
			body := rest[3:]
			for !strings.Contains(body, delim) && i+1 < len(lines) {
				i++
				body += "\n" + lines[i]
			}
			vals[strings.ToLower(key)] = iniValue{raw: tomlMultiline(body, delim)}
			continue
		}
		if s, ok := tomlString(rest); ok {
			vals[strings.ToLower(key)] = iniValue{raw: s}
			continue
		}
		vals[strings.ToLower(key)] = iniValue{raw: tomlScalar(strings.TrimSpace(stripTOMLComment(rest)))}
	}
	return vals, found, keyed
}

// tomlScalar is a TOML scalar other than a string as pytest before 9 reads it from
// [tool.pytest.ini_options]: Python's str() of the value, so true is "True", 1_000 is
// "1000", 0x10 is "16" and 1e3 is "1000.0". Anything else is kept as written.
func tomlScalar(v string) string {
	switch v {
	case "true":
		return "True"
	case "false":
		return "False"
	case "inf", "+inf":
		return "inf"
	case "-inf":
		return "-inf"
	case "nan", "+nan", "-nan":
		return "nan"
	}
	digits := strings.ReplaceAll(v, "_", "")
	if n, err := strconv.ParseInt(digits, 0, 64); err == nil { // decimal, or 0x, 0o, 0b
		return strconv.FormatInt(n, 10)
	}
	if f, err := strconv.ParseFloat(digits, 64); err == nil && strings.ContainsAny(digits, ".eE") {
		return pythonFloat(f)
	}
	return v
}

// pythonFloat is Python's repr of a float: the shortest digits that read back, in fixed
// notation with at least one decimal from 1e-4 up to 1e16, else as an exponent (1e+16).
func pythonFloat(f float64) string {
	if a := math.Abs(f); f == 0 || a >= 1e-4 && a < 1e16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

// stripTOMLComment drops a # comment outside strings.
func stripTOMLComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return s[:i]
		}
	}
	return s
}

// arrayClosed reports whether the brackets of s balance, strings and comments aside.
func arrayClosed(s string) bool {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '[':
			depth++
		case c == ']':
			depth--
			if depth == 0 {
				return true
			}
		}
	}
	return false
}

// tomlStrings returns the string items of a TOML array's text. An inline table is not one:
// its strings (a dependency group's {include-group = "lint"}) are skipped with it.
func tomlStrings(s string) []string {
	var out []string
	depth := 0 // inside how many inline tables
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case '{':
			depth++
		case '}':
			depth = max(depth-1, 0)
		case '"', '\'':
			q := s[i]
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != q; j++ {
				if q == '"' && s[j] == '\\' && j+1 < len(s) {
					j++
					b.WriteByte(unescape(s[j]))
					continue
				}
				b.WriteByte(s[j])
			}
			if depth == 0 {
				out = append(out, b.String())
			}
			i = j
		}
	}
	return out
}

// tomlMultiline is the value of a multi-line string whose text after the opening delim
// (three double or three single quotes) is body: up to the closing delim, without a
// newline right after the opening one, and for a basic string with its escapes read (a
// backslash ending a line joins it to the next, whose leading whitespace goes too).
func tomlMultiline(body, delim string) string {
	if end := strings.Index(body, delim); end >= 0 {
		body = body[:end]
	}
	body = strings.TrimPrefix(body, "\n")
	if delim != `"""` {
		return body
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' || i+1 == len(body) {
			b.WriteByte(body[i])
			continue
		}
		i++
		if rest := strings.TrimLeft(body[i:], " \t"); strings.HasPrefix(rest, "\n") {
			i = len(body) - len(strings.TrimLeft(rest, " \t\n")) - 1
			continue
		}
		b.WriteByte(unescape(body[i]))
	}
	return b.String()
}

// tomlString reads a basic or literal TOML string at the start of s.
func tomlString(s string) (string, bool) {
	if len(s) < 2 || (s[0] != '"' && s[0] != '\'') {
		return "", false
	}
	items := tomlStrings(stripTOMLComment(s))
	if len(items) == 0 {
		return "", false
	}
	return items[0], true
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	}
	return c
}

// SplitWords splits s as pytest splits addopts (see shellSplit).
func SplitWords(s string) []string { return shellSplit(s) }

// shellSplit splits s as Python's shlex.split does for the plain cases pytest's configs
// hold: whitespace separates, single and double quotes group, a backslash escapes.
func shellSplit(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	esc := false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
