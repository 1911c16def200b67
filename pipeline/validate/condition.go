package validate

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
)

// A base run can fail for reasons that are ticketd's to work around rather than a human's to
// fix: pytest collects nothing where unittest finds the tests (a root test.py), unittest's
// discovery from the root never enters the folder holding the test modules (src/ without an
// __init__.py), the tests cannot import the project's package from a src/ or lib/ folder,
// or a monorepo's packages from their own project folders, that nothing puts on the path,
// the configuration's addopts names options of plugins the interpreter lacks, or the package
// imports a version file its build generates. Adapt reruns
// such a check with the condition that works around it, keeps the condition when the rerun is
// healthier, and says so in the result's notes; every later run of the check (each attempt's
// gate) carries the same condition (Conditioned).

// Condition is how a check has to run for it to gate fixes, found at the base commit.
type Condition struct {
	// Kind is the kind the check runs as when not the configured one (unittest for a pytest
	// check that collected nothing).
	Kind string `json:"kind,omitempty"`
	// Args are options added to the command (-o addopts=... without a missing plugin's).
	Args []string `json:"args,omitempty"`
	// Path are folders, relative to the worktree, put first on PYTHONPATH.
	Path []string `json:"path,omitempty"`
	// Files are written into the worktree for each run and removed after it (a version file
	// the project's build generates).
	Files []GeneratedFile `json:"files,omitempty"`
	// Notes say what ticketd changed and why, one line each.
	Notes []string `json:"notes,omitempty"`
	// pluginNote is the note of the step that left plugins' options out of addopts, which a
	// later such step (naming all it leaves out) replaces: one addopts is in effect.
	pluginNote string
}

// merge adds o to c. An -o addopts= of o replaces c's: each is the whole of addopts.
func (c *Condition) merge(o Condition) {
	if o.Kind != "" {
		c.Kind, c.Args = o.Kind, nil
	}
	if setsAddopts(o.Args) {
		var kept []string
		for i := 0; i < len(c.Args); i++ {
			if c.Args[i] == "-o" && i+1 < len(c.Args) && strings.HasPrefix(c.Args[i+1], "addopts=") {
				i++
				continue
			}
			kept = append(kept, c.Args[i])
		}
		c.Args = kept
	}
	c.Args = append(c.Args, o.Args...)
	c.Path = append(c.Path, o.Path...)
	c.Files = append(c.Files, o.Files...)
	if o.pluginNote != "" && c.pluginNote != "" {
		c.Notes = slices.DeleteFunc(c.Notes, func(n string) bool { return n == c.pluginNote })
	}
	if o.pluginNote != "" {
		c.pluginNote = o.pluginNote
	}
	c.Notes = append(c.Notes, o.Notes...)
}

// With returns the check as it runs under cond (nil: unchanged). A check that changes kind
// runs its new kind's default command with the same interpreter, time-out and environment.
func (c Check) With(cond *Condition) Check {
	if cond == nil {
		return c
	}
	if cond.Kind != "" && cond.Kind != c.Kind {
		c.Kind, c.Command, c.ExtraArgs = cond.Kind, nil, nil
	}
	c.ExtraArgs = append(slices.Clone(c.ExtraArgs), cond.Args...)
	c.PythonPath = append(slices.Clone(c.PythonPath), cond.Path...)
	c.Generated = append(slices.Clone(c.Generated), cond.Files...)
	return c
}

// Conditioned returns checks with the conditions their base results carry (matched by
// name): the checks as every later run must run them.
func Conditioned(checks []Check, base []Result) []Check {
	out := make([]Check, len(checks))
	for i, c := range checks {
		out[i] = c
		for _, r := range base {
			if r.Name == c.Name && r.Condition != nil {
				out[i] = c.With(r.Condition)
				break
			}
		}
	}
	return out
}

// maxConditionRounds bounds the reruns of one check: each finds at most one more condition
// (a missing plugin, then the src/ folder the tests import).
const maxConditionRounds = 3

// Adapt reruns, in dir (a checkout of the base commit), each of results' checks whose failure
// a condition works around, and returns the results with each such check's healthier rerun
// in its place, carrying its Condition and notes. run runs checks as the Runner does.
func Adapt(ctx context.Context, run func(context.Context, []Check) []Result, dir string, checks []Check, results []Result) []Result {
	out := slices.Clone(results)
	tests := discover.FromDir(dir, DiscoverOptions(checks))
	for i, r := range out {
		c, ok := checkByName(checks, r.Name)
		if !ok {
			continue
		}
		// cond is the condition kept so far; trial, the one being tried, may go on from a
		// rerun that is no healthier but fails anew at start (last): removing aio-libs' -p
		// pytest_cov from addopts only lets pytest refuse the --cov options that come with it.
		var cond, trial Condition
		last := r
		for range maxConditionRounds {
			next, ok := nextCondition(dir, c.With(&trial), last, tests)
			if !ok || ctx.Err() != nil {
				break
			}
			step := trial
			step.merge(next)
			rerun := run(ctx, []Check{c.With(&step)})
			if len(rerun) != 1 {
				break
			}
			trial, last = step, rerun[0]
			if !healthier(rerun[0], r) {
				if startFailed(rerun[0]) {
					continue
				}
				break
			}
			cond, r = trial, rerun[0]
			kept := cond
			r.Condition = &kept
			r.Notes = append(r.Notes, cond.Notes...)
		}
		if r.TimedOut && !r.Cancelled {
			r.Hang = hangReport(dir, c.With(r.Condition), r)
		}
		if note := markNote(dir, c, results[i], r); note != "" {
			r.Notes = append(slices.Clone(r.Notes), note)
		}
		out[i] = r
	}
	return out
}

// setsAddopts reports whether args hold -o addopts=.
func setsAddopts(args []string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-o" && strings.HasPrefix(args[i+1], "addopts=") {
			return true
		}
	}
	return false
}

// startFailed reports whether a pytest run stopped before it wrote a test report (a usage
// error, a plugin that did not import), rather than running, hanging or not starting at all.
func startFailed(r Result) bool {
	return r.Kind == KindPytest && r.Tests < 0 && !r.NotStarted && !r.TimedOut && !r.Cancelled
}

func checkByName(checks []Check, name string) (Check, bool) {
	for _, c := range checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// healthier reports whether run b can gate fixes better than run a: it ran tests where a
// ran none, or as many with fewer errors, or more tests that did not error. The errors may
// grow with the tests: platformdirs' 7 test modules all fail to import its generated version
// file, and once it is written, 670 of the 987 tests they hold error on pytest-mock's fixture
// (not installed) while 295 pass and gate. The same tests with the same errors and fewer
// failures are healthier too: wcwidth's test_package_version fails (not errors) on the
// metadata of the uninstalled package, and passes once it is written.
func healthier(b, a Result) bool {
	switch {
	case b.NotStarted || b.TimedOut || b.Tests <= 0:
		return false
	case a.Tests <= 0:
		return true
	case b.Errored < a.Errored:
		return b.Tests >= a.Tests-a.Errored
	case b.Tests == a.Tests && b.Errored == a.Errored:
		return countFailed(b) < countFailed(a)
	}
	return b.Tests-b.Errored > a.Tests-a.Errored
}

// countFailed is the number of r's tests that failed (not errored).
func countFailed(r Result) int {
	n := 0
	for _, o := range r.Outcomes {
		if o == OutcomeFailed {
			n++
		}
	}
	return n
}

// nextCondition finds the condition that would work around r's failure, if any.
func nextCondition(dir string, c Check, r Result, tests *discover.Tests) (Condition, bool) {
	if cond, ok := hungTestCondition(dir, c, r, tests); ok {
		return cond, true
	}
	if r.NotStarted || r.TimedOut || r.Cancelled {
		return Condition{}, false
	}
	if cond, ok := missingPlugins(c, r, tests); ok {
		return cond, true
	}
	if cond, ok := strictConfig(c, r, tests); ok {
		return cond, true
	}
	if cond, ok := strictMarkers(c, r, tests); ok {
		return cond, true
	}
	if cond, ok := unknownMarks(c, r); ok {
		return cond, true
	}
	if cond, ok := importMismatch(c, r, tests); ok {
		return cond, true
	}
	if cond, ok := unimportedFolder(dir, c, r); ok {
		return cond, true
	}
	if cond, ok := generatedVersion(dir, c, r); ok {
		return cond, true
	}
	if cond, ok := generatedMetadata(dir, c, r); ok {
		return cond, true
	}
	if cond, ok := unittestStart(dir, c, r); ok {
		return cond, true
	}
	if cond, ok := unmatchedTestModules(dir, c, r, tests); ok {
		return cond, true
	}
	if cond, ok := subprojectConfig(dir, c, r); ok {
		return cond, true
	}
	if c.Kind == KindPytest && r.Tests == 0 && r.Passed {
		cond := Condition{Kind: KindUnittest, Notes: []string{
			"pytest collected no test at the base commit, but `python -m unittest discover` finds the tests: the check runs with unittest (set kind: unittest on the check to say so, or python_files in the pytest configuration for pytest to find them)"}}
		// decorator keeps its unittest tests in tests/test.py, tests/ not a package: neither
		// pytest's python_files nor discovery from the root finds them, so the unittest check
		// starts in that folder at once (the rerun must find tests to be kept).
		if !rootDiscovers(dir) {
			if start, ok := unittestStart(dir, Check{Kind: KindUnittest}, Result{}); ok {
				cond.Args = start.Args
				cond.Notes = append(cond.Notes, start.Notes...)
			}
		}
		return cond, true
	}
	return Condition{}, false
}

// hungTestCondition works around a test that never ends at the base commit: the check timed
// out while pytest ran it (stackdump.go names it), so the whole suite, and with it the
// repository, could gate nothing tonight. The check runs without that test (--deselect),
// and says so; a change is still judged by every other test.
func hungTestCondition(dir string, c Check, r Result, tests *discover.Tests) (Condition, bool) {
	if c.Kind != KindPytest || !r.TimedOut || r.Cancelled {
		return Condition{}, false
	}
	rel, line, fn, ok := hungTest(r.Output, dir)
	if !ok {
		return Condition{}, false
	}
	// Node ids are relative to pytest's rootdir: the configuration file's folder, or the
	// worktree (pytestArgs pins it) when the root holds no configuration file, even where
	// the command's paths lead pytest to one in a folder (tests/pytest.ini).
	idPath := rel
	if root := path.Dir(filepath.ToSlash(tests.Config)); tests.Config != "" && root != "." && hasPytestConfig(dir, c.PytestVersion) {
		p, cut := strings.CutPrefix(rel, root+"/")
		if !cut {
			return Condition{}, false
		}
		idPath = p
	}
	src, ok := discover.DirReader(dir)(rel)
	if !ok {
		return Condition{}, false
	}
	id, ok := testNodeID(src, idPath, line, fn)
	if !ok || slices.Contains(c.ExtraArgs, id) {
		return Condition{}, false
	}
	also := ""
	if twins := prefixTwins(src, idPath, id); len(twins) > 0 {
		named := twins[:min(len(twins), maxTwinsNamed)]
		also = fmt.Sprintf(", and with it %s, whose ids begin with its id (pytest's --deselect matches the beginning)", strings.Join(named, ", "))
		if len(twins) > len(named) {
			also += fmt.Sprintf(" and %d more", len(twins)-len(named))
		}
	}
	return Condition{Args: []string{"--deselect", id}, Notes: []string{fmt.Sprintf(
		"%s never ended at the base commit (the check %s): the check runs without it (--deselect %s)%s; fix that test, or leave it out in the check's command to say so",
		id, firstLine(r.Summary), id, also)}}, true
}

var (
	// unrecognized is argparse's usage error for options pytest does not know.
	unrecognized = regexp.MustCompile(`error: unrecognized arguments: ([^\n]+)`)
	// pluginImport is pytest's error for a -p plugin that does not import.
	pluginImport = regexp.MustCompile(`Error importing plugin "([^"]+)"`)
)

// missingPlugins works around a usage error caused by addopts naming options of plugins the
// interpreter lacks (--flake8, --black, --cov=pkg, -p xdist): the configured addopts
// without them, through -o addopts=.
func missingPlugins(c Check, r Result, tests *discover.Tests) (Condition, bool) {
	if c.Kind != KindPytest || r.Tests >= 0 || len(tests.Addopts) == 0 {
		return Condition{}, false
	}
	drop, plugin := unknownOptions(r.Output)
	if len(drop) == 0 && plugin == "" {
		return Condition{}, false
	}
	kept, removed := withoutOptions(currentAddopts(c, tests), drop, plugin)
	// Only what the configuration says can be left out: an unknown option of the check's own
	// command is the operator's to fix.
	if len(removed) == 0 || len(removed) < len(drop) {
		return Condition{}, false
	}
	value := "addopts=" + discover.ShellJoin(kept)
	why := "names options of plugins this interpreter lacks"
	remedy := "install the plugins for the checks' interpreter to run them"
	// The note names all that the configuration's addopts loses to missing plugins, also in
	// an earlier step (aio-libs' -p pytest_cov, then its --cov options), whose note it replaces.
	removed = leftOut(tests.Addopts, kept)
	if !slices.ContainsFunc(removed, func(a string) bool { return !cacheOption(a) }) {
		// --lf, --sw and the like are pytest's own, from the cache provider that every check
		// runs without (pytestArgs): nothing to install.
		why = "names options of pytest's cache, which the checks run without (-p no:cacheprovider: nothing may be written into the worktree)"
		remedy = "a run that depends on the last run's failures cannot judge a change"
	}
	note := fmt.Sprintf("the pytest configuration's addopts (%s) %s (%s): the check runs with -o %q (%s)",
		tests.Config, why, strings.Join(removed, " "), value, remedy)
	return Condition{Args: []string{"-o", value}, Notes: []string{note}, pluginNote: note}, true
}

// leftOut are the items of addopts that kept lacks, in order (each as often as it is
// missing), but for the --strict options other conditions leave out for their own reasons.
func leftOut(addopts, kept []string) []string {
	left := slices.Clone(kept)
	var out []string
	for _, a := range addopts {
		if i := slices.Index(left, a); i >= 0 {
			left = slices.Delete(left, i, i+1)
			continue
		}
		if a == "--strict-config" || a == "--strict-markers" || a == "--strict" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// unknownMark is pytest's warning for a mark that no plugin or configuration registers.
var unknownMark = regexp.MustCompile(`PytestUnknownMarkWarning: Unknown pytest\.mark\.([A-Za-z_][A-Za-z0-9_]*)`)

// ignoreUnknownMarks is the -W filter that keeps an unknown mark a warning.
const ignoreUnknownMarks = "ignore::pytest.PytestUnknownMarkWarning"

// markPlugins are the plugins that register marks projects use in their conftest.py and
// tests, for the note.
var markPlugins = map[string]string{
	"no_cover": "pytest-cov", "timeout": "pytest-timeout", "asyncio": "pytest-asyncio",
	"django_db": "pytest-django", "benchmark": "pytest-benchmark", "flaky": "pytest-rerunfailures",
	"xdist_group": "pytest-xdist", "freeze_time": "pytest-freezer", "httpx_mock": "pytest-httpx",
	"vcr": "pytest-recording", "order": "pytest-order", "dependency": "pytest-dependency",
}

// unknownMarks works around a base run that a mark of a plugin the interpreter lacks broke:
// with filterwarnings = error, pytest's warning about the unknown mark is an error, raised in
// a conftest.py hook (dateutil's pytest_collection_modifyitems adds pytest-cov's no_cover:
// an internal error, no test runs) or as a test module imports (its tests do not collect).
// The check runs with -W ignore::pytest.PytestUnknownMarkWarning, which a command line's
// filter places above the configuration's; --strict-markers, if configured, still refuses
// a mark the change invents.
func unknownMarks(c Check, r Result) (Condition, bool) {
	if c.Kind != KindPytest || r.Passed || slices.Contains(c.ExtraArgs, ignoreUnknownMarks) {
		return Condition{}, false
	}
	m := unknownMark.FindStringSubmatch(r.Output)
	if m == nil || !strings.Contains(r.Output, "INTERNALERROR>") && r.Errored == 0 {
		return Condition{}, false
	}
	plugin := "the plugin that registers it"
	if p, ok := markPlugins[m[1]]; ok {
		plugin = p
	}
	return Condition{Args: []string{"-W", ignoreUnknownMarks}, Notes: []string{fmt.Sprintf(
		"the base run stopped on pytest.mark.%s, a mark no installed plugin registers (%s's), which the configuration's filterwarnings turns into an error: the check runs with -W %s (install %s for the checks' interpreter to run as configured)",
		m[1], plugin, ignoreUnknownMarks, plugin)}}, true
}

// unknownIniOption is pytest's refusal, under --strict-config, of a configuration key it does
// not know (one of a newer pytest, or of a plugin the interpreter lacks).
var unknownIniOption = regexp.MustCompile(`(?m)^ERROR: Unknown config option: (\S+)`)

// strictConfig works around a base run that --strict-config in the configuration's addopts
// stopped before collecting anything, on a configuration key the installed pytest does not
// know: a key of a newer pytest (consider_namespace_packages, pytest 8.1) or of a plugin the
// interpreter lacks (timeout, asyncio_mode). The check runs with the addopts without
// --strict-config; the key is then a warning and the rest of the configuration applies.
// --strict-config in the check's own command is the operator's to change (Health names the
// key).
func strictConfig(c Check, r Result, tests *discover.Tests) (Condition, bool) {
	if c.Kind != KindPytest || r.Passed || r.Tests > 0 {
		return Condition{}, false
	}
	var keys []string
	for _, m := range unknownIniOption.FindAllStringSubmatch(r.Output, -1) {
		if !slices.Contains(keys, m[1]) {
			keys = append(keys, m[1])
		}
	}
	if len(keys) == 0 {
		return Condition{}, false
	}
	kept, removed := withoutOptions(currentAddopts(c, tests), []string{"--strict-config"}, "")
	if len(removed) == 0 {
		return Condition{}, false
	}
	value := "addopts=" + discover.ShellJoin(kept)
	return Condition{Args: []string{"-o", value}, Notes: []string{fmt.Sprintf(
		"the pytest configuration (%s) sets %s, which the installed pytest does not know (a newer pytest's, or a plugin's this interpreter lacks), and its addopts refuse unknown keys with --strict-config: the check runs with -o %q (install the pytest or plugin that knows them for the checks' interpreter to run as configured)",
		tests.Config, strings.Join(keys, ", "), value)}}, true
}

// unregisteredMark is pytest's refusal, under --strict-markers, of a mark that no plugin or
// configuration registers.
var unregisteredMark = regexp.MustCompile("'([A-Za-z_][A-Za-z0-9_]*)' not found in `markers` configuration option")

// strictMarkers works around a base run that --strict-markers in the configuration's addopts
// stopped on a mark of a plugin the interpreter lacks (portalocker's conftest.py marks its
// doctests with pytest-timeout's timeout: an internal error, no test runs; a test module
// using the mark does not collect). The check runs with the addopts without --strict-markers
// and with -W ignore::pytest.PytestUnknownMarkWarning, so that the mark is a mere warning
// even where filterwarnings = error: a mark the change invents is then not refused, but it
// changes no outcome the gate compares. --strict-markers in the check's own command is the
// operator's to change.
func strictMarkers(c Check, r Result, tests *discover.Tests) (Condition, bool) {
	if c.Kind != KindPytest || r.Passed {
		return Condition{}, false
	}
	m := unregisteredMark.FindStringSubmatch(r.Output)
	if m == nil || !strings.Contains(r.Output, "INTERNALERROR>") && r.Errored == 0 {
		return Condition{}, false
	}
	kept, removed := withoutOptions(currentAddopts(c, tests), []string{"--strict-markers", "--strict"}, "")
	if len(removed) == 0 {
		return Condition{}, false
	}
	value := "addopts=" + discover.ShellJoin(kept)
	args := []string{"-o", value}
	if !slices.Contains(c.ExtraArgs, ignoreUnknownMarks) {
		args = append(args, "-W", ignoreUnknownMarks)
	}
	plugin := "the plugin that registers it"
	if p, ok := markPlugins[m[1]]; ok {
		plugin = p
	}
	return Condition{Args: args, Notes: []string{fmt.Sprintf(
		"the base run stopped on pytest.mark.%s, a mark no installed plugin registers (%s's), which the pytest configuration's addopts (%s) refuses with %s: the check runs with -o %q -W %s (install %s for the checks' interpreter to run as configured)",
		m[1], plugin, tests.Config, strings.Join(removed, " "), value, ignoreUnknownMarks, plugin)}}, true
}

// cacheOption reports whether a is an option of pytest's cache provider.
func cacheOption(a string) bool {
	name, _, _ := strings.Cut(a, "=")
	switch name {
	case "--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise",
		"--sw-skip", "--stepwise-skip", "--sw-reset", "--stepwise-reset", "--lfnf", "--last-failed-no-failures",
		"--cache-show", "--cache-clear":
		return true
	}
	return false
}

// unknownOptions reads pytest's usage errors: the options it did not recognise, and the
// -p plugin that did not import ("" if none).
func unknownOptions(output string) (drop []string, plugin string) {
	if m := unrecognized.FindStringSubmatch(output); m != nil {
		drop = strings.Fields(m[1])
	}
	if m := pluginImport.FindStringSubmatch(output); m != nil {
		plugin = m[1]
	}
	return drop, plugin
}

// withoutOptions splits addopts into what is kept and what names drop or loads plugin
// (-p plugin, -pplugin, --plugin=plugin).
func withoutOptions(addopts, drop []string, plugin string) (kept, removed []string) {
	for i := 0; i < len(addopts); i++ {
		a := addopts[i]
		switch {
		case slices.Contains(drop, a):
			removed = append(removed, a)
			// argparse read the value of an option it did not know as a path (`-n auto`:
			// "unrecognized arguments: -n", and "auto" a file or folder to collect).
			if !strings.Contains(a, "=") && discover.TakesValue(a) && i+1 < len(addopts) && !strings.HasPrefix(addopts[i+1], "-") {
				removed = append(removed, addopts[i+1])
				i++
			}
		case plugin != "" && (a == "-p" && i+1 < len(addopts) && addopts[i+1] == plugin):
			removed = append(removed, a, addopts[i+1])
			i++
		case plugin != "" && (a == "-p"+plugin || a == "--plugin="+plugin):
			removed = append(removed, a)
		default:
			kept = append(kept, a)
		}
	}
	return kept, removed
}

// currentAddopts are the addopts in effect for c: the last -o addopts= of its condition,
// else the configuration's.
func currentAddopts(c Check, tests *discover.Tests) []string {
	for i := len(c.ExtraArgs) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(c.ExtraArgs[i], "addopts="); ok && i > 0 && c.ExtraArgs[i-1] == "-o" {
			return discover.SplitWords(v)
		}
	}
	return tests.Addopts
}

// importMismatchMessage opens pytest's refusal to collect a test file whose basename a test
// file collected before it already took (two folders without __init__.py, each put on
// sys.path by pytest's default "prepend" import mode).
const importMismatchMessage = "import file mismatch"

// importMismatch works around test files that never collect because another test file has
// their basename and neither folder is a package (tests/unit/test_util.py beside
// tests/integration/test_util.py): pytest's "import file mismatch" at the base commit, which
// a project that runs its test folders one at a time (a CI job each) never sees. The check
// runs with --import-mode=importlib, which imports each test file by its path, kept only
// when the rerun is healthier (a test folder whose files import a helper beside them by
// name needs prepend mode). An --import-mode the configuration or the command sets is the
// project's choice, left alone.
func importMismatch(c Check, r Result, tests *discover.Tests) (Condition, bool) {
	if c.Kind != KindPytest || r.Tests <= 0 {
		return Condition{}, false
	}
	for _, a := range slices.Concat(c.Command, c.ExtraArgs, currentAddopts(c, tests)) {
		if strings.HasPrefix(a, "--import-mode") {
			return Condition{}, false
		}
	}
	var files []string
	for _, f := range r.Findings {
		file, _, _ := strings.Cut(f.Test, "::")
		if strings.HasPrefix(f.Message, importMismatchMessage) && !slices.Contains(files, file) {
			files = append(files, file)
		}
	}
	if len(files) == 0 {
		return Condition{}, false
	}
	shown := files[:min(len(files), 3)]
	more := ""
	if len(files) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(files)-len(shown))
	}
	return Condition{Args: []string{"--import-mode=importlib"}, Notes: []string{fmt.Sprintf(
		"%s%s did not collect at the base commit: another test file has the same basename and neither folder is a package (pytest's \"import file mismatch\"): the check runs with --import-mode=importlib, which imports each test file by its path (add __init__.py to the test folders, or set --import-mode=importlib in the pytest configuration, to say so)",
		strings.Join(shown, ", "), more)}}, true
}

// importFolders are the folders a project keeps its package in when not at the root.
var importFolders = []string{"src", "lib"}

// unimportedFolder works around tests that fail with "No module named 'x'" where x is the
// project's own package at the root, in src/ or in lib/, which nothing puts on the path, or
// in a project folder of its own (subprojectFolders).
func unimportedFolder(dir string, c Check, r Result) (Condition, bool) {
	if c.Kind != KindPytest && c.Kind != KindUnittest || pythonPathSet(c.Env) {
		return Condition{}, false
	}
	for _, mod := range missingModules(r) {
		top, _, _ := strings.Cut(mod, ".")
		if importable(dir, top) {
			// The package is at the root, which `python -m pytest` puts on the path but
			// the pytest script does not: a check configured as `pytest tests` in a
			// project that expects `pip install -e .` first.
			if slices.Contains(c.PythonPath, ".") {
				continue
			}
			return Condition{Path: []string{"."}, Notes: []string{fmt.Sprintf(
				"the repository's root put on PYTHONPATH: the base run failed with No module named '%s', and %s is the project's own, at the root, which the check's command does not put on the path (the pytest script does not; `python -m pytest` does) (set env: {PYTHONPATH: ...} on the check to override)",
				mod, top)}}, true
		}
		for _, folder := range importFolders {
			if slices.Contains(c.PythonPath, folder) || folder == packageFolder(dir) && len(SrcLayout(dir)) > 0 {
				continue // already on the path
			}
			if importable(filepath.Join(dir, folder), top) {
				return Condition{Path: []string{folder}, Notes: []string{fmt.Sprintf(
					"%s/ put on PYTHONPATH: the base run failed with No module named '%s', and %s/%s is the project's own (set env: {PYTHONPATH: ...} on the check to override)",
					folder, mod, folder, top)}}, true
			}
		}
	}
	return subprojectFolders(dir, c, r)
}

// subprojectFolders works around a repository of several packages (a monorepo: one folder
// per package, each with its own setup.py or pyproject.toml, which its developers install
// before testing): tests fail with "No module named 'x'" where x is one of those packages'
// own modules. Every such folder (or its src/) goes on PYTHONPATH at once, so that a
// repository of many packages needs one rerun, not one per package.
func subprojectFolders(dir string, c Check, r Result) (Condition, bool) {
	var cond Condition
	seen := map[string]bool{}
	projects := subprojects(dir)
	for _, mod := range missingModules(r) {
		top, _, _ := strings.Cut(mod, ".")
		if seen[top] {
			continue
		}
		seen[top] = true
		for _, p := range projects {
			folder := ""
			switch {
			case importable(filepath.Join(dir, filepath.FromSlash(p)), top):
				folder = p
			case importable(filepath.Join(dir, filepath.FromSlash(p), "src"), top):
				folder = p + "/src"
			default:
				continue
			}
			if !slices.Contains(c.PythonPath, folder) && !slices.Contains(cond.Path, folder) {
				cond.Path = append(cond.Path, folder)
				cond.Notes = append(cond.Notes, fmt.Sprintf(
					"%s/ put on PYTHONPATH: the base run failed with No module named '%s', and %s is the repository's own package in %s/, a project folder of its own (%s) that nothing installs for the checks (set env: {PYTHONPATH: ...} on the check, or a repos.<name>.setup recipe installing it, to override)",
					folder, mod, top, p, subprojectFile(dir, p)))
			}
			break
		}
	}
	return cond, len(cond.Path) > 0
}

// subprojectConfig runs a pytest check under the configuration of the repository's only
// Python project when that project lives in a folder of its own (cucumber/tag-expressions:
// python/pyproject.toml beside go/, java/, ...) and the root has no pytest configuration: a
// bare pytest at the root reads none, so the project's addopts (--doctest-glob=README.md),
// testpaths, markers and filterwarnings never apply, and the tests only they collect (its
// README's examples) never gate a fix. The check runs with -c naming that file, the rootdir
// kept at the root (node ids stay relative to it) and the file's testpaths put under the
// folder, as pytest run inside the folder collects. Kept, as every condition, only when the
// rerun is healthier. A command that names paths, -c or --rootdir is the operator's choice.
func subprojectConfig(dir string, c Check, r Result) (Condition, bool) {
	if c.Kind != KindPytest || startFailed(r) || hasFlag(c.Command, "-c", "--config-file", "--rootdir") ||
		hasFlag(c.ExtraArgs, "-c", "--config-file", "--rootdir") || hasPytestConfig(dir, c.PytestVersion) {
		return Condition{}, false
	}
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		return err == nil
	}
	if len(discover.PathArgs(c.Command, exists)) > 0 {
		return Condition{}, false
	}
	var found []string
	for _, sub := range subprojects(dir) {
		if f := discover.RootConfig(discover.DirReader(filepath.Join(dir, filepath.FromSlash(sub))), c.PytestVersion); f != "" {
			found = append(found, sub+"/"+f)
		}
	}
	if len(found) != 1 {
		return Condition{}, false // none, or several projects: which one the check means is the operator's to say
	}
	sub := path.Dir(found[0])
	paths := discover.FromDir(filepath.Join(dir, filepath.FromSlash(sub)), discover.Options{PytestVersion: c.PytestVersion}).Paths
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var under []string
	for _, p := range paths {
		under = append(under, path.Join(sub, p))
	}
	testpaths := "testpaths=" + discover.ShellJoin(under)
	return Condition{Args: []string{"-c", found[0], "--rootdir=.", "-o", testpaths}, Notes: []string{fmt.Sprintf(
		"the pytest configuration of %s applies: the repository's root has none, and %s/ is its only Python project with one; the check runs with -c %s --rootdir=. -o %q, as pytest run in %s/ would collect (give the check a command to run otherwise)",
		found[0], sub, found[0], testpaths, sub)}}, true
}

// subprojectMarkers are the files that make a folder a Python project of its own.
var subprojectMarkers = []string{"pyproject.toml", "setup.py", "setup.cfg"}

// maxSubprojects bounds the project folders subprojects returns.
const maxSubprojects = 200

// subprojects lists the folders, slash-separated and relative to dir, one or two levels
// below it (pkg-a/, packages/pkg-a/) that hold a project file, sorted; hidden, cache and
// virtualenv folders are skipped.
func subprojects(dir string) []string {
	var out []string
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsDir() || layoutSkipsDir(e.Name()) || len(out) >= maxSubprojects {
				continue
			}
			sub := path.Join(rel, e.Name())
			if subprojectFile(dir, sub) != "" {
				out = append(out, sub)
			} else if depth < 2 {
				walk(sub, depth+1)
			}
		}
	}
	walk("", 1)
	slices.Sort(out)
	return out
}

// subprojectFile names the project file the folder rel holds, "" when none.
func subprojectFile(dir, rel string) string {
	for _, m := range subprojectMarkers {
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel), m)); err == nil && fi.Mode().IsRegular() {
			return rel + "/" + m
		}
	}
	return ""
}

// missingModules are the modules a result says Python could not import ("No module named
// 'x'"), from its output, then its findings, in order.
func missingModules(r Result) []string {
	texts := []string{r.Output}
	for _, f := range r.Findings {
		texts = append(texts, f.Message)
	}
	var out []string
	for _, text := range texts {
		for _, m := range missingModule.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// importable reports whether root holds a package or module named name.
func importable(root, name string) bool {
	if fi, err := os.Stat(filepath.Join(root, name+".py")); err == nil && fi.Mode().IsRegular() {
		return true
	}
	return hasPython(filepath.Join(root, name))
}

// unittestStart works around a unittest check that runs the kind's default command
// (`python -m unittest discover`, from the root) and found no test, where the test modules
// sit in one top-level folder that is not a package: discovery from the root enters only
// packages. typing_extensions keeps src/test_typing_extensions.py beside
// src/typing_extensions.py and runs it from src/ (tox.ini: changedir = src). The check runs
// with `-s folder -t folder`: the folder is the top of the modules' names and first on
// sys.path, so the tests import the code beside them as their own runs do (-t . would
// refuse a start folder that is not a package). src/ goes first; another folder only when
// it is the one. When the folder holds no test module itself but one package below it does
// (zope.deprecation's src/zope/deprecation/tests.py, src/zope/ a namespace package that
// discovery does not enter either), the run starts in that package: `-s
// src/zope/deprecation -t src` imports it as zope.deprecation.tests, as zope-testrunner
// --test-path=src does.
func unittestStart(dir string, c Check, r Result) (Condition, bool) {
	if c.Kind != KindUnittest || len(c.Command) > 0 || r.Tests != 0 ||
		hasFlag(c.ExtraArgs, "-s", "--start-directory", "-t", "--top-level-directory") {
		return Condition{}, false
	}
	start, top := unittestFolder(dir)
	if start == "" {
		return Condition{}, false
	}
	where := fmt.Sprintf("in %s/, which it does not enter (no __init__.py)", top)
	if start != top {
		where = fmt.Sprintf("in the package %s/, below %s/, which it does not enter (%s/ is not a package)", start, top, top)
	}
	return Condition{Args: []string{"-s", start, "-t", top}, Notes: []string{fmt.Sprintf(
		"`python -m unittest discover` from the repository root found no test: the test modules are %s, so the check runs `python -m unittest discover -s %s -t %s`, importing them from %s/ as a run started there does (set command: on the check to override)",
		where, start, top, top)}}, true
}

// unittestFolder is where unittest's discovery can start (start) and the top of the module
// names (top), both slash-separated and relative: a top-level folder, not a package and not
// hidden, whose test modules (test*.py, named as Python can import them) it holds itself
// (start is top), or, failing that, in the one package below it (through namespace folders)
// whose tree does; src first, else the only such folder; "" when none or several do.
func unittestFolder(dir string) (start, top string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", ""
	}
	found := map[string]string{} // top: start
	var tops []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || !identifier.MatchString(name) {
			continue
		}
		sub := filepath.Join(dir, name)
		if isPackage(sub) {
			continue // a package: discovery from the root enters it already
		}
		switch pkgs := testPackagesBelow(sub, name, 3); {
		case hasTestModule(sub):
			found[name] = name
		case len(pkgs) == 1:
			found[name] = pkgs[0]
		default:
			continue
		}
		tops = append(tops, name)
	}
	switch {
	case found["src"] != "":
		return found["src"], "src"
	case len(tops) == 1:
		return found[tops[0]], tops[0]
	}
	return "", ""
}

func isPackage(folder string) bool {
	fi, err := os.Lstat(filepath.Join(folder, "__init__.py"))
	return err == nil && fi.Mode().IsRegular()
}

// testPackagesBelow lists the packages (rel, slash-separated) below the non-package folder
// that hold a test module somewhere in their tree, entering namespace folders down to depth
// levels; the first package on each path counts, as discovery from it enters its
// subpackages.
func testPackagesBelow(folder, rel string, depth int) []string {
	if depth == 0 {
		return nil
	}
	entries, err := os.ReadDir(folder)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !identifier.MatchString(name) {
			continue
		}
		sub, subRel := filepath.Join(folder, name), rel+"/"+name
		if !isPackage(sub) {
			out = append(out, testPackagesBelow(sub, subRel, depth-1)...)
			continue
		}
		if packageHasTests(sub) {
			out = append(out, subRel)
		}
	}
	return out
}

// packageHasTests reports whether the package's tree, through its subpackages, holds a test
// module.
func packageHasTests(pkg string) bool {
	found := false
	_ = filepath.WalkDir(pkg, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil || found:
			return filepath.SkipDir
		case !d.IsDir():
			return nil
		case p != pkg && (!isPackage(p) || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case hasTestModule(p):
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// rootDiscovers reports whether `python -m unittest discover` from dir could find a test
// module: one at the root, or one inside a top-level package (discovery enters packages).
func rootDiscovers(dir string) bool {
	if hasTestModule(dir) {
		return true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true // unknown: leave discovery as it is
	}
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if fi, err := os.Lstat(filepath.Join(sub, "__init__.py")); !e.IsDir() || err != nil || !fi.Mode().IsRegular() {
			continue
		}
		found := false
		_ = filepath.WalkDir(sub, func(p string, d os.DirEntry, err error) error {
			if err != nil || found {
				return filepath.SkipDir
			}
			if d.IsDir() && p != sub && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if d.IsDir() && hasTestModule(p) {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		if found {
			return true
		}
	}
	return false
}

// identifier matches a name Python can import.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// hasTestModule reports whether folder holds a module unittest's default pattern (test*.py)
// matches that Python can import by its name.
func hasTestModule(folder string) bool {
	entries, err := os.ReadDir(folder)
	if err != nil {
		return false
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".py")
		if ok && e.Type().IsRegular() && strings.HasPrefix(name, "test") && identifier.MatchString(name) {
			return true
		}
	}
	return false
}

// unmatchedModuleNames are the test modules projects name so that pytest's python_files
// (test_*.py, *_test.py, by default) does not match them: texttable keeps its pytest
// functions in a root tests.py and names it on the command line (tox.ini: `pytest
// tests.py`).
var unmatchedModuleNames = []string{"tests.py", "test.py"}

// pytestStyleTest finds a test function or Test class at the top of a module: what pytest
// collects once python_files matches it.
var pytestStyleTest = regexp.MustCompile(`(?m)^(?:async\s+)?def\s+test\w*\s*\(|^class\s+Test\w*\s*[(:]`)

// unittestStyle finds a unittest TestCase in a module, which the unittest fallback runs.
var unittestStyle = regexp.MustCompile(`\bTestCase\b`)

// unmatchedTestModules works around a pytest check of the default command that collected no
// test at the base commit because the tests are in a tests.py or test.py (at the root or in
// testpaths) that python_files does not match, written for pytest (test functions, no
// unittest TestCase, which the unittest fallback runs as before). The check runs with
// -o python_files= the configuration's patterns and those modules' names, which collects
// them as the project's own command (`pytest tests.py`) does, and lets test selection and
// the evidence step know them as tests (DiscoverOptions reads the condition's -o).
func unmatchedTestModules(dir string, c Check, r Result, tests *discover.Tests) (Condition, bool) {
	if c.Kind != KindPytest || len(c.Command) > 0 || r.Tests != 0 || !r.Passed || tests == nil {
		return Condition{}, false
	}
	for _, a := range c.ExtraArgs {
		if strings.HasPrefix(a, "python_files=") {
			return Condition{}, false
		}
	}
	folders := []string{"."}
	for _, p := range tests.Paths {
		if p != "." && !slices.Contains(folders, p) {
			folders = append(folders, p)
		}
	}
	var found, names []string
	for _, folder := range folders {
		for _, name := range unmatchedModuleNames {
			rel := path.Join(folder, name)
			if tests.IsTestFile(rel) {
				continue
			}
			data := readRegular(filepath.Join(dir, filepath.FromSlash(rel)), 1<<20)
			if !pytestStyleTest.Match(data) || unittestStyle.Match(data) {
				continue
			}
			found = append(found, rel)
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if len(found) == 0 {
		return Condition{}, false
	}
	files := append(slices.Clone(tests.Files), names...)
	value := "python_files=" + strings.Join(files, " ")
	return Condition{Args: []string{"-o", value}, Notes: []string{fmt.Sprintf(
		"pytest collected no test at the base commit: the tests are in %s, which python_files (%s) does not match; the check runs with -o \"%s\", as a command naming the file does (set python_files in the pytest configuration, or command: on the check, to say so)",
		strings.Join(found, ", "), strings.Join(tests.Files, " "), value)}}, true
}
