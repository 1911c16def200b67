package daemon

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// Repositories as real projects have them, not as the sample cases do: a base that fails
// for reasons nobody filed (a test of the installed package's metadata, a doctest in the
// docs that drifted, a module whose optional dependency is not installed), configured in
// tox.ini and setup.cfg; and a src/ layout that expects `pip install -e .` with no pytest
// configuration at all. Each gets a ticket whose fix the scripted model (the test double)
// replays as upstream fixes come: the code change and a regression test beside it.

// realRepo is one fixture repository with one ticket.
type realRepo struct {
	name, path string
	title      string
	patch      string // the fix with its regression test, as git diff prints it
	// body is the issue's text ("" means a generic one from the title); checks is the
	// repository's checks in YAML flow style ("" means the default gate).
	body, checks string
}

// ledgerRepo: a package at the root, tox.ini's [pytest] section collecting doctests from
// docs/, setup.cfg metadata, and three failures at the base that have nothing to do with
// the ticket.
func ledgerRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "ledger", path: filepath.Join(root, "ledger"), title: "Refunds are shown as $-5.50 instead of -$5.50"}
	files := map[string]string{
		"setup.cfg":          "[metadata]\nname = ticketd-fixture-ledger\nversion = 2.3.0\n\n[options]\npackages = find:\n\n[options.extras_require]\nxlsx = xlsxwriter\n",
		"tox.ini":            "[tox]\nenvlist = py3\n\n[testenv]\ndeps = pytest\ncommands = pytest\n\n[pytest]\ntestpaths = tests docs\naddopts = --doctest-glob=*.rst\n",
		"ledger/__init__.py": "\"\"\"Small ledger helpers.\"\"\"\n\n__version__ = \"2.3.0\"\n",
		"ledger/money.py": `"""Formatting of amounts."""


def format_amount(amount, currency="$"):
    """Format an amount of money with two decimals, e.g. $5.50."""
    return "%s%.2f" % (currency, amount)


def parse_amount(text, currency="$"):
    """Parse what format_amount printed."""
    return float(text.replace(currency, ""))
`,
		"ledger/export_xlsx.py": "\"\"\"Export to Excel (optional: pip install ticketd-fixture-ledger[xlsx]).\"\"\"\nimport xlsxwriter\n\n\ndef export(rows, path):\n    book = xlsxwriter.Workbook(path)\n    sheet = book.add_worksheet()\n    for i, row in enumerate(rows):\n        sheet.write_row(i, 0, row)\n    book.close()\n",
		"tests/test_money.py": `from ledger.money import format_amount, parse_amount


def test_format_positive():
    assert format_amount(5.5) == "$5.50"


def test_round_trip():
    assert parse_amount(format_amount(12.25)) == 12.25
`,
		"tests/test_meta.py":   "from importlib.metadata import version\n\nimport ledger\n\n\ndef test_installed_version_matches():\n    assert version(\"ticketd-fixture-ledger\") == ledger.__version__\n",
		"tests/test_export.py": "from ledger.export_xlsx import export\n\n\ndef test_export(tmp_path):\n    export([[1, 2]], tmp_path / \"x.xlsx\")\n",
		"docs/usage.rst":       "Usage\n=====\n\n>>> from ledger.money import format_amount\n>>> format_amount(3)\n'$3.0'\n",
	}
	writeRepo(t, r.path, files)
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"ledger/money.py": {`    return "%s%.2f" % (currency, amount)`, `    sign = "-" if amount < 0 else ""
    return "%s%s%.2f" % (sign, currency, abs(amount))`},
		"tests/test_money.py": {`def test_round_trip():`, `def test_format_negative():
    assert format_amount(-5.5) == "-$5.50"


def test_round_trip():`},
	})
	return r
}

// tallyRepo: a src/ layout with a pyproject.toml that configures no pytest, tests in tests/
// without __init__.py and no conftest.py: every test errors at the base unless src/ is on
// the path.
func tallyRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "tally", path: filepath.Join(root, "tally"), title: "Average of an empty list crashes the report"}
	writeRepo(t, r.path, map[string]string{
		"pyproject.toml":        "[project]\nname = \"tally\"\nversion = \"0.4.0\"\n\n[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n",
		"src/tally/__init__.py": "from .stats import average, total\n\n__all__ = [\"average\", \"total\"]\n",
		"src/tally/stats.py":    "def total(xs):\n    return sum(xs)\n\n\ndef average(xs):\n    return total(xs) / len(xs)\n",
		"tests/test_stats.py":   "from tally import average, total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n\n\ndef test_average():\n    assert average([1, 3]) == 2\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"src/tally/stats.py":  {"    return total(xs) / len(xs)\n", "    if not xs:\n        return 0.0\n    return total(xs) / len(xs)\n"},
		"tests/test_stats.py": {"def test_average():\n", "def test_average_of_nothing():\n    assert average([]) == 0.0\n\n\ndef test_average():\n"},
	})
	return r
}

func writeRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		write(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
}

// fixPatch applies the replacements (file → old, new) in dir, takes git's diff and undoes them.
func fixPatch(t *testing.T, dir string, edits map[string][2]string) string {
	t.Helper()
	for name, e := range edits {
		p := filepath.Join(dir, filepath.FromSlash(name))
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), e[0]) {
			t.Fatalf("fixture edit of %s: %q not found (%v)", name, e[0], err)
		}
		write(t, p, strings.Replace(string(data), e[0], e[1], 1))
	}
	patch := git(t, dir, "diff")
	git(t, dir, "checkout", "-q", ".")
	return patch
}

// realConfig is a night over repos with the default gate: a pytest check configured with
// nothing but its kind (no command, no time-out), as a new user writes it.
func realConfig(t *testing.T, root, baseURL string, repos ...realRepo) config.Config {
	t.Helper()
	issues := filepath.Join(root, "issues")
	var reposYAML strings.Builder
	for i, r := range repos {
		checks := cmp.Or(r.checks, "[{name: tests, kind: pytest}]")
		fmt.Fprintf(&reposYAML, "  %s:\n    path: %s\n    base_ref: main\n    checks: %s\n", r.name, r.path, checks)
		body := cmp.Or(r.body, fmt.Sprintf("What the user saw: %s. Expected the usual behaviour.", r.title))
		write(t, filepath.Join(issues, fmt.Sprintf("%02d.md", i)), fmt.Sprintf("---\ntitle: %s\nrepo: %s\nlabels: [bug]\n---\n%s\n", r.title, r.name, body))
	}
	text := fmt.Sprintf(`
sandbox: %s
night: {workers: 2, lease: 30s, heartbeat: 5s, max_attempts: 2, retry_backoff: 50ms, poll: %s}
intake: [{kind: dir, path: %s}]
repos:
%s
models:
  endpoints: {scripted: {base_url: %s}}
  roles:
    triage: {endpoint: scripted, model: gpt-4.1-mini}
    maker: {endpoint: scripted, model: gpt-4.1}
    checker: {endpoint: scripted, model: gpt-4.1-mini}
    judge: {endpoint: scripted, model: gpt-4.1-mini}
  retry: {max_retries: 6, base_delay: 10ms, max_delay: 100ms}
`, testSandbox(t), testPoll, issues, reposYAML.String(), baseURL)
	cfg, err := config.Parse(filepath.Join(root, "config.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func scriptedServer(t *testing.T, cases []scriptedmodel.Case) string {
	t.Helper()
	server, err := scriptedmodel.New(cases, scriptedmodel.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	url, err := server.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return url
}

// submits counts a ticket's submit tool calls and the accepted ones.
func submits(t *testing.T, st *store.Store, id int64) (all, ok int) {
	t.Helper()
	calls, err := st.ToolCalls(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.Tool == "submit" {
			all++
			if c.OK {
				ok++
			}
		}
	}
	return all, ok
}

func ticketByRepo(t *testing.T, st *store.Store, repo string) store.Ticket {
	t.Helper()
	list, err := st.List(context.Background(), store.Filter{Repo: repo})
	if err != nil || len(list) != 1 {
		t.Fatalf("tickets of %s: %d, %v", repo, len(list), err)
	}
	tk, err := st.Get(context.Background(), list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// With the default gate, a repository whose base fails for unrelated reasons accepts a
// correct fix in one submit, and a src/ layout without configuration is claimed and solved;
// on each branch the regression test passes, and it fails at the base.
func TestRealRepositoriesDefaultGate(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	root := t.TempDir()
	ledger, tally := ledgerRepo(t, root), tallyRepo(t, root)
	url := scriptedServer(t, []scriptedmodel.Case{{Match: ledger.title, Patch: ledger.patch}, {Match: tally.title, Patch: tally.patch}})
	n := runNight(t, realConfig(t, root, url, ledger, tally), 0)

	for _, tc := range []struct {
		r       realRepo
		test    string
		inNotes string // a note the ticket's events must hold
		report  []string
	}{
		{ledger, "tests/test_money.py::test_format_negative", "baseline of ledger",
			[]string{"failing at the base too: tests: tests/test_meta.py::test_installed_version_matches", "docs/usage.rst", "Evidence that the change fixes the bug", "tests/test_money.py::test_format_negative"}},
		{tally, "tests/test_stats.py::test_average_of_nothing", "src/ put on PYTHONPATH: the tests import tally",
			[]string{"Evidence that the change fixes the bug", "tests/test_stats.py::test_average_of_nothing"}},
	} {
		tk := ticketByRepo(t, n.store, tc.r.name)
		all, ok := submits(t, n.store, tk.ID)
		if tk.State != store.StateDone || all != 1 || ok != 1 {
			t.Errorf("%s: ticket %s (%s) after %d submit(s), %d accepted; want done in one submit", tc.r.name, tk.State, tk.Reason, all, ok)
			continue
		}
		events, _ := n.store.Events(context.Background(), tk.ID)
		noted := false
		for _, e := range events {
			noted = noted || e.Kind == "note" && strings.Contains(e.Reason, tc.inNotes)
		}
		if !noted {
			t.Errorf("%s: no note says %q: %+v", tc.r.name, tc.inNotes, events)
		}
		report, _ := os.ReadFile(filepath.Join(tk.ResultDir, "report.md"))
		for _, want := range tc.report {
			if !strings.Contains(string(report), want) {
				t.Errorf("%s: report lacks %q:\n%s", tc.r.name, want, report)
			}
		}
		env := []string{}
		if tc.r.name == "tally" {
			env = []string{"PYTHONPATH=src"}
		}
		if passed, out := pytestAt(t, tc.r.path, "main", tc.test, env); passed {
			t.Errorf("%s: %s passes at the base:\n%s", tc.r.name, tc.test, out)
		}
		if passed, out := pytestAt(t, tc.r.path, tk.Branch, tc.test, env); !passed {
			t.Errorf("%s: %s fails on %s:\n%s", tc.r.name, tc.test, tk.Branch, out)
		}
	}
}

// A wrong fix is still refused in a repository with unrelated base failures: the maker's
// own regression test fails with it, and a maker that resubmits the same change is stopped
// at its second submit; wrong first and right second is accepted.
func TestRealRepositoryWrongFixRefused(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	root := t.TempDir()
	ledger := ledgerRepo(t, root)
	for _, tc := range []struct {
		name      string
		behaviour scriptedmodel.Behaviour
		state     store.State
		reason    string
	}{
		{"never", scriptedmodel.BehaviourNever, store.StateEscalated, "the same checks failed twice with no change"},
		{"wrong then right", scriptedmodel.BehaviourWrongThenRight, store.StateDone, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			repo := ledger
			repo.path = filepath.Join(dir, "ledger")
			if out, err := exec.Command("git", "clone", "-q", ledger.path, repo.path).CombinedOutput(); err != nil {
				t.Fatalf("clone: %v\n%s", err, out)
			}
			url := scriptedServer(t, []scriptedmodel.Case{{Match: repo.title, Patch: repo.patch, Behaviour: tc.behaviour}})
			n := runNight(t, realConfig(t, dir, url, repo), 0)
			tk := ticketByRepo(t, n.store, repo.name)
			if tk.State != tc.state || !strings.Contains(tk.Reason, tc.reason) {
				t.Fatalf("ticket %s (%s); want %s with %q", tk.State, tk.Reason, tc.state, tc.reason)
			}
			all, ok := submits(t, n.store, tk.ID)
			switch tc.state {
			case store.StateDone:
				if all != 2 || ok != 1 {
					t.Errorf("%d submits, %d accepted; want the wrong one refused, then the fix accepted", all, ok)
				}
			default:
				if ok != 0 || all != 2*tk.Attempts {
					t.Errorf("%d submits over %d attempts, %d accepted; want two refused per attempt, none accepted", all, tk.Attempts, ok)
				}
			}
		})
	}
}

// pytestAt runs one test on a fresh checkout of ref, outside ticketd, with args added.
func pytestAt(t *testing.T, repo, ref, id string, env []string, args ...string) (bool, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "check")
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "-q", "--detach", dir, ref).CombinedOutput(); err != nil {
		t.Fatalf("worktree add %s: %v\n%s", ref, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("git", "-C", repo, "worktree", "remove", "--force", dir).Run() })
	cmd := exec.Command("/usr/bin/python3", append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider", id}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), env...)
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}
