package validate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Problem is why a repository's baseline cannot gate fixes: no fix can be
// judged against a base commit whose test run collects nothing, whose tests
// all error, or whose check tool does not start. It is an environment
// problem for a human, never something a model should be sent to fix.
type Problem struct {
	Check   string   `json:"check"`
	Command []string `json:"command"`
	Reason  string   `json:"reason"`
	// Lines are the first lines of the error, for the log and the operator.
	Lines []string `json:"lines,omitempty"`
	// Hint says what would make the repository healthy.
	Hint string `json:"hint,omitempty"`
	// Missing is the Python module the checks' interpreter lacked (the tool itself, or what
	// every test failed to import), "" when that is not the problem: where the interpreter
	// is a recipe's environment, the caller points Hint at the recipe instead.
	Missing string `json:"missing,omitempty"`
}

// String is one line: check, reason, command and what would make it healthy.
func (p Problem) String() string {
	s := fmt.Sprintf("check %q: %s (command: %s)", p.Check, p.Reason, strings.Join(p.Command, " "))
	if p.Hint != "" {
		s += "; to make it healthy: " + p.Hint
	}
	return s
}

// maxProblemLines bounds the error lines a Problem keeps.
const maxProblemLines = 8

// Health lists the problems of a baseline run, nil when it can gate fixes:
// a check whose tool did not start; a test check that collected no test, that
// left no test report, or whose every collected test errored.
func Health(results []Result) []Problem {
	var out []Problem
	for _, r := range results {
		p := Problem{Check: r.Name, Command: r.Command}
		switch {
		case r.NotStarted:
			p.Reason = "the tool could not start: " + firstLine(r.Summary)
			p.Hint = "install the tool for the interpreter the checks use, or set python: on the repository to a virtualenv's python that has it"
			p.Missing = missingTool(r)
		case r.TimedOut:
			p.Reason = "the check timed out at the base commit: " + firstLine(r.Summary)
			p.Hint = "raise timeout: on the check above what the suite needs (run it by hand at the base commit to see), or point its command at a faster subset"
			switch {
			case r.Hang != "":
				p.Hint = r.Hang + ", or " + p.Hint
			case strings.Contains(r.Summary, stoppedAtNote):
				p.Hint = "a test that never ends at the base commit is where the check stopped (above): leave it out in the check's command (pytest: --deselect FILE::TEST; unittest: name only the test modules that end), or " + p.Hint
			}
		case r.Kind == KindPytest && r.Tests == 0 && !r.Passed && usageError(r.Output) != "":
			p.Reason = "pytest refused to run at the base commit: " + usageError(r.Output)
			p.Hint = usageHint(usageError(r.Output))
		case r.Kind == KindPytest && r.Tests == 0:
			p.Reason = "the test run at the base commit collected no test (and `python -m unittest discover` found none either)"
			p.Hint = "name the test folder in the check's command (command: [python3, -m, pytest, tests]) or set testpaths in the pytest configuration, and check the test files match python_files (by default test_*.py or *_test.py; set python_files = tests.py test_*.py for a tests.py)"
		case r.Kind == KindPytest && r.Tests < 0 && !r.Passed:
			p.Reason = "the test run at the base commit produced no test report: " + firstLine(r.Summary)
			p.Hint = "run the check's command by hand in a clean checkout of the base commit: a conftest.py that fails to import, or an option in the pytest configuration that the installed pytest or its plugins do not know, are the usual causes"
			if h := configInstallHint(usageError(r.Output)); h != "" {
				p.Hint = h
			} else if m := missingModule.FindStringSubmatch(r.Output); m != nil {
				// A conftest.py (or a plugin it loads) that cannot import: no test can run.
				p.Reason += fmt.Sprintf(" (No module named '%s')", m[1])
				p.Hint, p.Missing = importHint(m[1]), m[1]
			}
		case r.Kind == KindPytest && r.Tests > 0 && nonePassed(r) && internalError(r.Output) != "":
			p.Reason = "pytest stopped with an internal error at the base commit, before any test ran: " + internalError(r.Output)
			p.Hint = "an exception in a conftest.py hook or a plugin: run the check's command by hand in a clean checkout of the base commit (with filterwarnings = error, a warning raised there, such as a deprecation, is such an exception)"
			if m := missingModule.FindStringSubmatch(internalError(r.Output)); m != nil {
				p.Missing = m[1]
			}
		case r.Kind == KindPytest && r.Tests > 0 && nonePassed(r) && sessionError(r) != "":
			p.Reason = "pytest could not collect the test session at the base commit, so no test ran: " + sessionError(r)
			p.Hint = "a conftest.py hook or a plugin fails while pytest walks the repository (often a pytest_collect_file written for an older pytest): fix it, or name the test files or folders in the check's command so that pytest collects only those (command: [python3, -m, pytest, tests])"
			if m := missingModule.FindStringSubmatch(sessionError(r)); m != nil {
				// A conftest.py below the root imports a test dependency (a plugin) the
				// interpreter lacks: installing it, not changing a hook, is the remedy.
				p.Hint, p.Missing = importHint(m[1]), m[1]
			}
		case r.Kind == KindPytest && r.Tests > 0 && r.Errored == r.Tests:
			p.Reason = fmt.Sprintf("every one of the %d collected tests errors at the base commit", r.Tests)
			p.Hint = erroredHint(r)
			p.Missing = erroredModule(r)
		case r.Kind == KindPytest && r.Tests > 0 && nonePassed(r) && len(MissingImports(r)) > 0:
			// No test passes, and a file does not import for want of a module: the package
			// itself, most often, whose failed import leaves the rest failing rather than
			// erroring (inflect without typeguard: --doctest-modules imports inflect/ first,
			// under --import-mode importlib the tests then find an empty inflect module and
			// fail on AttributeError). A fix judged against such a base is judged on nothing.
			miss := MissingImports(r)[0]
			p.Reason = fmt.Sprintf("no test of the %d collected passes at the base commit, and %s cannot import %s",
				r.Tests, strings.Join(clipFiles(miss.Files, 3), ", "), miss.Module)
			p.Hint, p.Missing = importHint(miss.Module), miss.Module
		case len(r.Rewrites) > 0:
			p.Reason = "the base's tests rewrite the tests while they run: " + strings.Join(r.Rewrites[:min(len(r.Rewrites), 3)], "; ") +
				"; the gate stamps the base's tests around every check run, so every attempt's checks would stop there"
			p.Hint = "make the test write to a temporary folder (pytest's tmp_path) instead of the repository's files, or leave it out in the check's command (--deselect FILE::TEST)"
		case r.Kind == KindUnittest && r.Summary == "no tests collected":
			p.Reason = "the test run at the base commit collected no test"
			p.Hint = "name the start folder in the check's command (command: [python3, -m, unittest, discover, -s, tests]) and check the test modules are named test*.py"
		default:
			continue
		}
		p.Lines = problemLines(r)
		out = append(out, p)
	}
	return out
}

// usageLine is the line pytest prints when it refuses its command line or configuration
// before collecting (exit status 4).
var usageLine = regexp.MustCompile(`(?m)^ERROR: (.+)$`)

// usageError is the error pytest refused to start with, "" when none: an unknown option or
// configuration key ("Unknown config option: consider_namespace_packages").
func usageError(output string) string {
	m := usageLine.FindStringSubmatch(output)
	if m == nil || strings.HasPrefix(m[1], "usage:") {
		return ""
	}
	return clip(strings.TrimSpace(m[1]), 300)
}

// usageHint says what would let pytest start past the usage error msg: the plugins a
// configuration's required_plugins names, or the pytest its minversion asks for, installed
// for the checks' interpreter; else an unknown option or key left out.
func usageHint(msg string) string {
	if h := configInstallHint(msg); h != "" {
		return h
	}
	return "an option or configuration key that the installed pytest or its plugins do not know (a newer pytest's, or a missing plugin's): install what knows it for the checks' interpreter, or leave it out of the check's command (with --strict-config, an unknown key of the configuration is an error)"
}

// configInstallHint says what to install for the checks' interpreter when pytest refused to
// start on its configuration's required_plugins or minversion (msg, usageError's), ""
// for any other refusal.
func configInstallHint(msg string) string {
	const recipe = " for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md, or python: set to a virtualenv's python that has it)"
	if plugins, ok := strings.CutPrefix(msg, "Missing required plugins: "); ok {
		return "the pytest configuration's required_plugins names plugins the checks' interpreter lacks: install " + plugins + recipe
	}
	if m := minVersion.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("the pytest configuration's minversion asks for pytest %s or newer, and the checks' interpreter has pytest %s: install a pytest that new%s", m[1], m[2], recipe)
	}
	return ""
}

// minVersion is pytest's refusal of a configuration whose minversion is above its own.
var minVersion = regexp.MustCompile(`'minversion' requires pytest-(\S+), actual pytest-([^\s']+)`)

// nonePassed reports whether no test of r's report passed: every one errored, or the rest
// were skipped (a module-level skip reports its module as skipped even when an internal
// error stops the session right after collection, as portalocker's Windows-only modules do).
func nonePassed(r Result) bool {
	if r.Errored == r.Tests {
		return true
	}
	if len(r.Outcomes) == 0 {
		return false
	}
	for _, o := range r.Outcomes {
		if o == OutcomePassed {
			return false
		}
	}
	return true
}

// missingModule finds "No module named 'x'" in an error.
var missingModule = regexp.MustCompile(`No module named '([A-Za-z0-9_.]+)'`)

// missingTool is the module a check that did not start lacked: the one Python names in its
// output, else the module of a `python -m tool` command; "" for a tool that is no module.
func missingTool(r Result) string {
	if m := missingModule.FindStringSubmatch(r.Output + "\n" + r.Summary); m != nil {
		return m[1]
	}
	if len(r.Command) >= 3 && r.Command[1] == "-m" {
		return r.Command[2]
	}
	return ""
}

// sessionError is the message of the error pytest reported for the whole session rather
// than for a test or a module (a JUnit case with no name: a root conftest.py's collection
// hook raised), "" when there is none.
func sessionError(r Result) string {
	for _, f := range r.Findings {
		if f.Test == "" && strings.HasSuffix(f.Message, "(collection failure)") {
			return firstLine(strings.TrimSuffix(f.Message, " (collection failure)"))
		}
	}
	return ""
}

// erroredModule is the module the tests of a suite that errors everywhere cannot import.
func erroredModule(r Result) string {
	for _, f := range r.Findings {
		if m := missingModule.FindStringSubmatch(f.Message); m != nil {
			return m[1]
		}
	}
	return ""
}

// erroredHint says what would let the tests of a suite that errors everywhere run.
func erroredHint(r Result) string {
	for _, f := range r.Findings {
		m := missingModule.FindStringSubmatch(f.Message)
		if m == nil {
			continue
		}
		return importHint(m[1])
	}
	return "run the check's command by hand in a clean checkout of the base commit and fix what every test errors on (a fixture, a missing dependency, a conftest.py)"
}

// clipFiles is files, at most n of them, with how many more there are.
func clipFiles(files []string, n int) []string {
	if len(files) <= n {
		return files
	}
	return append(slices.Clone(files[:n]), fmt.Sprintf("%d more", len(files)-n))
}

// importHint says what would let tests that cannot import module run.
func importHint(module string) string {
	return fmt.Sprintf("the tests cannot import %s: install the project and its test dependencies into a virtualenv in the repository (python3 -m venv .venv && .venv/bin/pip install -e '.[test]'; ticketd then runs the checks with .venv/bin/python), or, if %s is the project's own package in a folder that nothing puts on the path, set env: {PYTHONPATH: <that folder>} on the check", module, module)
}

// problemLines are the first lines of a result's first error, else of its output.
func problemLines(r Result) []string {
	text := ""
	if len(r.Findings) > 0 {
		text = r.Findings[0].Message
		if f := r.Findings[0]; f.Test != "" {
			text = f.Test + ": " + text
		}
	}
	if strings.TrimSpace(text) == "" {
		text = r.Output
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lines = append(lines, clip(strings.TrimRight(l, "\r "), 300))
		if len(lines) == maxProblemLines {
			break
		}
	}
	return lines
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return clip(line, 300)
}

// ImportMiss is a module the checks' interpreter lacks and the test files that failed to
// import for want of it.
type ImportMiss struct {
	Module string
	Files  []string
}

// MissingImports lists, for a pytest result, the modules whose absence kept test files from
// importing at all (pytest reports such a file as one error of the module, file::dotted.module),
// in the order first seen: a dependency the checks' interpreter lacks (packaging's tests
// without pretend), which leaves those files' tests unable to gate any fix. Nil when every
// test file imported.
func MissingImports(r Result) []ImportMiss {
	if r.Kind != KindPytest {
		return nil
	}
	var out []ImportMiss
	for _, f := range r.Findings {
		file, rest, ok := strings.Cut(f.Test, "::")
		if !ok || rest != strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", ".") {
			continue // a test's failure, not a module's
		}
		m := missingModule.FindStringSubmatch(f.Message)
		if m == nil {
			continue
		}
		i := slices.IndexFunc(out, func(x ImportMiss) bool { return x.Module == m[1] })
		if i < 0 {
			out = append(out, ImportMiss{Module: m[1]})
			i = len(out) - 1
		}
		if !slices.Contains(out[i].Files, file) {
			out[i].Files = append(out[i].Files, file)
		}
	}
	return out
}

// ImportSkip is a module whose absence made pytest.importorskip skip tests: how many, and
// their files (relative to pytest's rootdir).
type ImportSkip struct {
	Module string   `json:"module"`
	Tests  int      `json:"tests"`
	Files  []string `json:"files,omitempty"`
}

// FixtureMiss is a fixture that neither a conftest.py nor an installed plugin provides, the
// number of tests that errored at setup for want of it, and their files.
type FixtureMiss struct {
	Fixture string
	Tests   int
	Files   []string
}

// missingFixture is the finding of a test whose setup errored because pytest found no
// fixture of that name (junitFinding puts the cause first).
var missingFixture = regexp.MustCompile(`^failed on setup: fixture '([A-Za-z_][A-Za-z0-9_]*)' not found`)

// MissingFixtures lists, for a pytest result, the fixtures whose absence made tests error at
// setup, in the order first seen: most often a plugin's that the checks' interpreter lacks
// (pytest-mock's mocker), which leaves those tests unable to gate any fix. Nil when none.
func MissingFixtures(r Result) []FixtureMiss {
	if r.Kind != KindPytest {
		return nil
	}
	var out []FixtureMiss
	for _, f := range r.Findings {
		m := missingFixture.FindStringSubmatch(firstLine(f.Message))
		if m == nil {
			continue
		}
		i := slices.IndexFunc(out, func(x FixtureMiss) bool { return x.Fixture == m[1] })
		if i < 0 {
			out = append(out, FixtureMiss{Fixture: m[1]})
			i = len(out) - 1
		}
		out[i].Tests++
		if file, _, _ := strings.Cut(f.Test, "::"); file != "" && !slices.Contains(out[i].Files, file) {
			out[i].Files = append(out[i].Files, file)
		}
	}
	return out
}

// internalError is the last line of pytest's INTERNALERROR traceback, which names the
// exception ("pytest.PytestUnknownMarkWarning: Unknown pytest.mark.no_cover - is this a
// typo?"), "" when the output holds none.
func internalError(output string) string {
	last := ""
	for _, line := range strings.Split(output, "\n") {
		if rest, ok := strings.CutPrefix(line, "INTERNALERROR> "); ok && strings.TrimSpace(rest) != "" && !strings.HasPrefix(rest, " ") {
			last = strings.TrimSpace(rest)
		}
	}
	return clip(last, 300)
}
