package discover

import "strings"

// mypyConfigs are the files mypy reads its configuration from, in the order it tries them:
// mypy.ini and .mypy.ini are used when present, pyproject.toml only with a [tool.mypy]
// table, setup.cfg whenever present (with or without a [mypy] section).
var mypyConfigs = []struct {
	file, section string
	always        bool
}{
	{"mypy.ini", "mypy", true},
	{".mypy.ini", "mypy", true},
	{"pyproject.toml", "tool.mypy", false},
	{"setup.cfg", "mypy", true},
}

// MypyTargets reports whether the repository's mypy configuration says what mypy checks
// (files, modules or packages in its global section) and in which file. mypy run without a
// target checks exactly those, as the project's own CI does; a target on the command line
// (`mypy .`) replaces them, and checks examples, docs and scripts the project never types.
func MypyTargets(read Reader) (file string, ok bool) {
	for _, c := range mypyConfigs {
		data, found := read(c.file)
		if !found {
			continue
		}
		if len(data) > maxConfigBytes {
			data = data[:maxConfigBytes]
		}
		var vals map[string]iniValue
		var has bool
		if strings.HasSuffix(c.file, ".toml") {
			vals, has = parseTOMLTable(data, c.section)
		} else {
			vals, has = parseINISection(data, c.section)
		}
		if !has && !c.always {
			continue
		}
		for _, key := range []string{"files", "modules", "packages"} {
			if v, set := vals[key]; set && mypyListSet(v) {
				return c.file, true
			}
		}
		return c.file, false // mypy reads this file and no other
	}
	return "", false
}

// mypyListSet reports whether a files/modules/packages value names anything: a TOML array
// or string, or an ini value of comma-separated items.
func mypyListSet(v iniValue) bool {
	if v.list {
		for _, it := range v.items {
			if strings.TrimSpace(it) != "" {
				return true
			}
		}
		return false
	}
	for _, it := range strings.Split(v.raw, ",") {
		if strings.TrimSpace(it) != "" {
			return true
		}
	}
	return false
}
