package validate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
)

// Tests that fail at the base commit because of a mark no installed plugin registers.
//
// pydash marks its tests/pytest_mypy_testing modules with pytest-mypy-testing's
// mypy_testing: with the plugin they are type checks, without it they run as plain tests
// and fail (reveal_type is not defined). Under --strict-markers or -W error (in the check's
// own command, which no condition changes) the modules do not even collect. Either way the
// base's failures stand and gate nothing, but a human reading the baseline saw failing
// tests with no word of why: markNote says it.

// unknownMarkName finds the mark of pytest's PytestUnknownMarkWarning, in a warnings
// summary or a collection error (the -W error case).
var unknownMarkName = regexp.MustCompile(`PytestUnknownMarkWarning: Unknown pytest\.mark\.([A-Za-z_][A-Za-z0-9_]*)`)

// markNote is the note that says why r's failing tests fail at the base: they are in test
// modules that use a mark no installed plugin registers, as the output of first (the run as
// configured) or r (the run as adapted) shows. "" when no failing test is in such a module.
func markNote(dir string, c Check, first, r Result) string {
	if c.Kind != KindPytest || r.Passed || len(r.Outcomes) == 0 {
		return ""
	}
	var marks []string
	strict, collect := false, false
	for _, out := range []string{first.Output, r.Output} {
		for _, m := range unknownMarkName.FindAllStringSubmatch(out, -1) {
			marks = appendNew(marks, m[1])
			collect = collect || strings.Contains(out, "ERROR collecting")
		}
		for _, m := range unregisteredMark.FindAllStringSubmatch(out, -1) {
			marks = appendNew(marks, m[1])
			strict = true
		}
	}
	if len(marks) == 0 {
		return ""
	}
	if r.Condition != nil && slices.Contains(r.Condition.Args, ignoreUnknownMarks) {
		strict, collect = false, false // the adapted run collects them: they fail as plain tests
	}
	read := discover.DirReader(dir)
	uses := map[string]string{} // file → the unknown mark it uses, "" when none
	byMark := map[string][]string{}
	failing := 0
	for _, id := range slices.Sorted(maps.Keys(r.Outcomes)) {
		if o := r.Outcomes[id]; o != OutcomeFailed && o != OutcomeError {
			continue
		}
		file, _, _ := strings.Cut(id, "::")
		mark, seen := uses[file]
		if !seen {
			src, _ := read(file)
			mark = usedMark(src, marks)
			uses[file] = mark
		}
		if mark != "" {
			failing++
			byMark[mark] = appendNew(byMark[mark], file)
		}
	}
	if failing == 0 {
		return ""
	}
	var named []string
	for _, m := range marks {
		if files := byMark[m]; len(files) > 0 {
			plugin := "the plugin that registers it"
			if p, ok := markPlugins[m]; ok {
				plugin = p
			}
			shown := files[:min(len(files), 3)]
			more := ""
			if len(files) > len(shown) {
				more = fmt.Sprintf(" and %d more", len(files)-len(shown))
			}
			named = append(named, fmt.Sprintf("pytest.mark.%s (%s: %s%s)", m, plugin, strings.Join(shown, ", "), more))
		}
	}
	how := "without the plugin that registers it, pytest runs those tests as plain tests (a plugin such as pytest-mypy-testing would have run them its own way) and they fail"
	switch {
	case strict:
		how = "--strict-markers refuses an unregistered mark, so those modules do not collect"
	case collect:
		how = "a warnings filter that makes warnings errors (-W error, filterwarnings = error) turns pytest's unknown-mark warning into an error, so those modules do not collect"
	}
	return fmt.Sprintf("%d test(s) fail at the base commit in modules that use a mark no installed plugin registers, %s: %s; they stand as the base's failures and gate no fix (install the plugin for the checks' interpreter to run them as configured)",
		failing, strings.Join(named, "; "), how)
}

// usedMark is the first of marks that src uses (mark.NAME), "" when none.
func usedMark(src []byte, marks []string) string {
	for _, m := range marks {
		if regexp.MustCompile(`\bmark\.` + regexp.QuoteMeta(m) + `\b`).Match(src) {
			return m
		}
	}
	return ""
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
