package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ticketd/ticketd/pipeline/spell"
)

var (
	lineRe    = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRe = regexp.MustCompile(`^field (\S+) not found in type .*$`)
	typeRe    = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`(.*)` )?into (.*)$")
)

// explain turns yaml.v3's decoding errors into "file:line: key.path: what is wrong", in
// words an operator reads (a duration such as 30s, not time.Duration), with a suggestion
// for a misspelt key.
func explain(name string, root *yaml.Node, err error) error {
	paths := map[int]string{}
	indexKeys(root, "", paths, nil)
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := lineRe.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			return atLine(name, line, paths[line], m[2])
		}
		return fmt.Errorf("%s: %s", name, msg)
	}
	var errs []error
	for _, msg := range te.Errors {
		m := lineRe.FindStringSubmatch(msg)
		if m == nil {
			errs = append(errs, fmt.Errorf("%s: %s", name, msg))
			continue
		}
		line, _ := strconv.Atoi(m[1])
		key := paths[line]
		detail := m[2]
		if u := unknownRe.FindStringSubmatch(detail); u != nil {
			parent, _ := splitPath(key)
			detail = fmt.Sprintf("unknown key %q%s (the keys here are: %s)", u[1], spell.Hint(u[1], keysAt(parent)), strings.Join(keysAt(parent), ", "))
		} else if t := typeRe.FindStringSubmatch(detail); t != nil {
			detail = fmt.Sprintf("want %s, got %s", typeWords(t[3]), gotWords(t[1], t[2]))
		}
		errs = append(errs, atLine(name, line, key, detail))
	}
	return errors.Join(errs...)
}

func atLine(name string, line int, key, detail string) error {
	if key == "" || strings.HasPrefix(detail, key+":") {
		return fmt.Errorf("%s:%d: %s", name, line, detail)
	}
	return fmt.Errorf("%s:%d: %s: %s", name, line, key, detail)
}

// locate puts the file and the line of its key in front of each validation error
// ("night.workers: must be 1..64, got 0" becomes "config.yaml:4: night.workers: ..."). A
// key the file does not set (a default) gets the file alone; a key inside a list or a
// mapping the file has, the line of the nearest part it has.
func locate(name string, root *yaml.Node, err error) error {
	lines := map[string]int{}
	indexKeys(root, "", map[int]string{}, lines)
	var errs []error
	for _, e := range leaves(err) {
		msg := e.Error()
		key, _, ok := strings.Cut(msg, ": ")
		if !ok || strings.ContainsAny(key, " \t") {
			errs = append(errs, fmt.Errorf("%s: %s", name, msg))
			continue
		}
		line := 0
		for p := key; p != "" && line == 0; p, _ = splitPath(p) {
			line = lines[p]
		}
		if line == 0 {
			errs = append(errs, fmt.Errorf("%s: %s", name, msg))
			continue
		}
		errs = append(errs, fmt.Errorf("%s:%d: %s", name, line, msg))
	}
	return errors.Join(errs...)
}

// leaves flattens joined errors.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// splitPath splits a dotted key path before its last part: "repos.app.checks[0]" gives
// "repos.app.checks" and "[0]"; "night.workers" gives "night" and "workers".
func splitPath(p string) (parent, last string) {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndex(p, "["); i > 0 {
			return p[:i], p[i:]
		}
	}
	if i := strings.LastIndex(p, "."); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// keysAt lists the keys the configuration takes at a dotted path ("night", "repos.app",
// "" for the top level), read from the yaml tags of the types: the list a typo is compared
// with.
func keysAt(path string) []string {
	t := reflect.TypeOf(Config{})
	for _, part := range splitParts(path) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		switch {
		case strings.HasPrefix(part, "["):
			continue // the element of a list: Elem above
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			f, ok := fieldByTag(t, part)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		if tag := yamlName(t.Field(i)); tag != "" {
			out = append(out, tag)
		}
	}
	return out
}

func splitParts(path string) []string {
	var out []string
	for _, p := range strings.Split(path, ".") {
		if p == "" {
			continue
		}
		if i := strings.Index(p, "["); i > 0 {
			out = append(out, p[:i], p[i:])
			continue
		}
		out = append(out, p)
	}
	return out
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if yamlName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// typeWords says in words what a Go type wants.
func typeWords(goType string) string {
	switch {
	case goType == "time.Duration":
		return "a duration such as 30s, 5m or 1h30m"
	case goType == "bool" || goType == "*bool":
		return "true or false"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number such as 0.5"
	case goType == "string" || strings.HasSuffix(goType, ".Mode") || strings.HasSuffix(goType, ".Role"):
		return "a single value (text)"
	case strings.HasPrefix(goType, "[]"):
		return "a list (lines starting with -, or [a, b])"
	case strings.HasPrefix(goType, "map["):
		return "a mapping of names to values (key: value lines)"
	}
	return "a mapping of settings (key: value lines, indented under it)"
}

// gotWords says what the file holds, as yaml.v3 tags it.
func gotWords(tag, value string) string {
	kind := map[string]string{"str": "the text", "int": "the number", "float": "the number", "bool": "the boolean",
		"seq": "a list", "map": "a mapping", "null": "nothing"}[tag]
	if kind == "" {
		kind = tag
	}
	if value != "" && tag != "seq" && tag != "map" {
		return fmt.Sprintf("%s %q", kind, value)
	}
	return kind
}

// indexKeys records, for each line that holds a mapping key or a value, the dotted key path
// (byLine), and for each path the line it starts on (byPath, when not nil).
func indexKeys(n *yaml.Node, prefix string, byLine map[int]string, byPath map[string]int) {
	keyIndex{byLine, byPath}.walk(n, prefix)
}

// keyIndex is what indexKeys fills: byPath may be nil.
type keyIndex struct {
	byLine map[int]string
	byPath map[string]int
}

// line records p for line unless an earlier path holds it.
func (x keyIndex) line(line int, p string) {
	if _, ok := x.byLine[line]; !ok {
		x.byLine[line] = p
	}
}

// path records line for p unless p was seen first elsewhere.
func (x keyIndex) path(p string, line int) {
	if x.byPath == nil {
		return
	}
	if _, ok := x.byPath[p]; !ok {
		x.byPath[p] = line
	}
}

func (x keyIndex) walk(n *yaml.Node, prefix string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			x.walk(c, prefix)
		}
	case yaml.MappingNode:
		x.mapping(n, prefix)
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", prefix, i)
			x.path(p, c.Line)
			if c.Kind == yaml.ScalarNode {
				x.line(c.Line, p)
			}
			x.walk(c, p)
		}
	}
}

// mapping indexes each key of a mapping, and a scalar value on a line of its own.
func (x keyIndex) mapping(n *yaml.Node, prefix string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := k.Value
		if prefix != "" {
			p = prefix + "." + k.Value
		}
		x.line(k.Line, p)
		x.path(p, k.Line)
		if v.Line != k.Line && v.Kind == yaml.ScalarNode {
			x.line(v.Line, p)
		}
		x.walk(v, p)
	}
}

// fractions finds numbers with a fraction written where a whole number goes (workers:
// 2.5): yaml.v3 decodes them into the int by dropping the fraction, without an error. n is
// decoded into a value of type t at the dotted path; aliases are not followed (a YAML bomb
// stays unexpanded), and a type with its own UnmarshalYAML judges its own values.
func fractions(name string, n *yaml.Node, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return nil
	}
	var errs []error
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			errs = append(errs, fractions(name, c, t, path)...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			switch t.Kind() {
			case reflect.Map:
				errs = append(errs, fractions(name, v, t.Elem(), p)...)
			case reflect.Struct:
				if f, ok := fieldByTag(t, k.Value); ok {
					errs = append(errs, fractions(name, v, f.Type, p)...)
				}
			}
		}
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, c := range n.Content {
				errs = append(errs, fractions(name, c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	case yaml.ScalarNode:
		if n.ShortTag() != "!!float" {
			return nil
		}
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			var f float64
			if err := n.Decode(&f); err == nil && f == math.Trunc(f) {
				return nil // 1e5 or 3.0: a whole number written as a float
			}
			errs = append(errs, atLine(name, n.Line, path, fmt.Sprintf("want %s, got %s", typeWords(t.Kind().String()), gotWords("float", n.Value))))
		}
	}
	return errs
}
