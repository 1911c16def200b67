package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// syncBuffer is a log sink safe for the night's concurrent workers.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed (and replaced) by each Write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// next is the log so far and a channel closed by the next Write.
func (s *syncBuffer) next() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{})
	}
	return s.b.String(), s.written
}

// waitLog waits until the log holds want, looking again at each write; the bound only keeps
// a night that never writes it from hanging the test binary, and the failure shows the log.
func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	limit := time.After(3 * time.Minute)
	for {
		text, written := logs.next()
		if strings.Contains(text, want) {
			return
		}
		select {
		case <-written:
		case <-limit:
			t.Fatalf("the log never said %q within 3 min; logs:\n%s", want, logs.String())
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A repository whose whole suite fails at the base (a broken import in the package) is
// reported unhealthy once, in the log and on its tickets, and no attempt is spent.
func TestUnhealthyBaseline(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 2)
	write(t, filepath.Join(f.repo, "shop", "__init__.py"), "import shop_vendor_sdk  # not installed\n")
	git(t, f.repo, "commit", "-qam", "break the import")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 2)
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs syncBuffer
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := d.RunNight(context.Background(), "test"); err != nil {
		t.Fatalf("night: %v", err)
	}
	if n := strings.Count(logs.String(), "repository unhealthy"); n != 1 {
		t.Errorf("log says %d times that the repository is unhealthy, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "-m pytest") || !strings.Contains(logs.String(), "shop_vendor_sdk") {
		t.Errorf("log lacks the command or the first error lines:\n%s", logs.String())
	}
	tickets, err := st.List(context.Background(), store.Filter{})
	if err != nil || len(tickets) != 2 {
		t.Fatalf("list: %d tickets, %v", len(tickets), err)
	}
	for _, tk := range tickets {
		if tk.State != store.StateQueued || tk.Attempts != 0 {
			t.Errorf("ticket %d: state %s, %d attempts; want queued with 0 attempts", tk.ID, tk.State, tk.Attempts)
		}
		events, _ := st.Events(context.Background(), tk.ID)
		notes := 0
		for _, e := range events {
			if e.Kind == "note" && strings.Contains(e.Reason, "unhealthy") && strings.Contains(e.Reason, "-m pytest") &&
				strings.Contains(e.Reason, "to make it healthy: the tests cannot import shop_vendor_sdk") {
				notes++
			}
			if e.Kind == "claimed" {
				t.Errorf("ticket %d was claimed", tk.ID)
			}
		}
		if notes != 1 {
			t.Errorf("ticket %d has %d unhealthy notes, want 1: %+v", tk.ID, notes, events)
		}
	}
}

// A conftest.py that imports a test plugin the checks' interpreter lacks pauses the
// repository, and the note says where the project lists the plugin and how to install what
// lists it: invoke's tests import pytest_relaxed, which its pyproject.toml lists in
// [dependency-groups] dev, where the generic `pip install -e '.[test]'` never looks.
func TestUnhealthyBaselineNamesDeclaredDependency(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 1)
	write(t, filepath.Join(f.repo, "tests", "conftest.py"), "from spec_style_runner import trap  # a test plugin, not installed\n")
	write(t, filepath.Join(f.repo, "pyproject.toml"), "[project]\nname = \"shop\"\n\n[dependency-groups]\ndev = [\n  \"spec-style-runner>=2\",\n  \"coverage\",\n]\n")
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-qm", "spec-style tests")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	st := runNight(t, f.config(t, url, 1), 0).store
	tickets, err := st.List(context.Background(), store.Filter{})
	if err != nil || len(tickets) != 1 {
		t.Fatalf("list: %d tickets, %v", len(tickets), err)
	}
	events, _ := st.Events(context.Background(), tickets[0].ID)
	var note string
	for _, e := range events {
		if e.Kind == "note" && strings.Contains(e.Reason, "unhealthy") {
			note = e.Reason
		}
	}
	for _, want := range []string{
		`to make it healthy: the tests cannot import spec_style_runner; the project lists it as "spec-style-runner>=2" in pyproject.toml's [dependency-groups] dev`,
		"pip install -e . --group dev",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("the unhealthy note lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, ".[test]") {
		t.Errorf("the unhealthy note advises an extra the project does not have:\n%s", note)
	}
}

// A base where no test passes because the package does not import is unhealthy, even when
// its tests fail rather than error: inflect without typeguard, where --doctest-modules
// imports the package first and, under --import-mode importlib, the tests then find an empty
// package module and fail on AttributeError. Before, such a base was worked, every test a
// base failure, and a fix was judged on nothing (its test file, run apart, was even blamed
// for the package's ModuleNotFoundError).
func TestUnhealthyBaselineNoTestPasses(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 1)
	git(t, f.repo, "rm", "-rq", "tests")
	write(t, filepath.Join(f.repo, "pytest.ini"), "[pytest]\naddopts = --doctest-modules --import-mode importlib\n")
	write(t, filepath.Join(f.repo, "pyproject.toml"), "[project]\nname = \"shop\"\ndependencies = [\"shop-vendor-sdk >= 4\"]\n")
	write(t, filepath.Join(f.repo, "shop", "__init__.py"), "import shop_vendor_sdk  # a dependency, not installed\n\n\ndef total(xs):\n    return sum(xs)\n")
	write(t, filepath.Join(f.repo, "tests", "test_total.py"), "import shop\n\n\ndef test_total():\n    assert shop.total([1, 2]) == 3\n\n\ndef test_empty():\n    assert shop.total([]) == 0\n")
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-qm", "the package needs the vendor SDK")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	st := runNight(t, f.config(t, url, 1), 0).store
	tickets, err := st.List(context.Background(), store.Filter{})
	if err != nil || len(tickets) != 1 {
		t.Fatalf("list: %d tickets, %v", len(tickets), err)
	}
	if tk := tickets[0]; tk.State != store.StateQueued || tk.Attempts != 0 {
		t.Errorf("ticket: state %s, %d attempts; want queued, no attempt spent", tk.State, tk.Attempts)
	}
	events, _ := st.Events(context.Background(), tickets[0].ID)
	var note string
	for _, e := range events {
		if e.Kind == "note" && strings.Contains(e.Reason, "unhealthy") {
			note = e.Reason
		}
	}
	for _, want := range []string{
		"passes at the base commit, and shop/__init__.py cannot import shop_vendor_sdk",
		`the project lists it as "shop-vendor-sdk >= 4" in pyproject.toml's project dependencies`,
		"pip install -e .",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("the unhealthy note lacks %q:\n%s", want, note)
		}
	}
}

// A configured check whose tool is not installed stops the night at start, naming the check
// and how to install it.
func TestMissingToolIsStartupError(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	f := newFixture(t, 1)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	r := cfg.Repos["shop"]
	r.Checks = append(r.Checks, r.Checks[0])
	r.Checks[1].Name, r.Checks[1].Kind, r.Checks[1].Command = "lint", "ruff", []string{"ruff-not-installed-anywhere", "check", "."}
	cfg.Repos["shop"] = r
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.DiscardHandler)}
	_, err = d.RunNight(context.Background(), "test")
	if err == nil || !strings.Contains(err.Error(), `"lint"`) || !strings.Contains(err.Error(), "install") {
		t.Fatalf("RunNight = %v, want a start-up error naming check \"lint\" and an install hint", err)
	}
}

// A package at the repository root, not installed, with its tests in test/ (no __init__.py)
// and no conftest.py: the pytest script would fail collection at the base; ticketd's
// `python -m pytest` collects and runs it, and the correct fix is accepted.
func TestRootPackageNotInstalledIsFixed(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 1)
	git(t, f.repo, "mv", "tests", "test")
	git(t, f.repo, "rm", "-qf", "test/__init__.py")
	git(t, f.repo, "commit", "-qm", "tests in test/, not a package")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	var logs syncBuffer
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := d.RunNight(context.Background(), "test"); err != nil {
		t.Fatalf("night: %v", err)
	}
	tk, err := st.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateDone || strings.Contains(logs.String(), "repository unhealthy") {
		t.Fatalf("ticket %s (%s), want done with a healthy baseline; log:\n%s", tk.State, tk.Reason, logs.String())
	}
}

// A test that fails whenever the suite runs but passes alone is never blamed on a fix: it
// fails at the base too, and the fix is done. It fails by order, as real suites' tests often
// do (another test module ran before it in the same process), so it is not excused as a flake
// either: a test that passes alone is a flake only when a run of the check as it ran passes it
// too (pipeline.Rerun; TestRerunTellsOrderFromChance covers the flake that chance excuses).
func TestOrderDependentBaseFailureNotBlamed(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 1)
	write(t, filepath.Join(f.repo, "tests", "test_flaky.py"), `import sys


def test_sometimes():
    assert "tests.test_rule_00" not in sys.modules, "fails after the rule's tests were collected in the same run"
`)
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-qm", "a test that fails by order")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	n := runNight(t, f.config(t, url, 1), 0)
	tk, err := n.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateDone {
		t.Fatalf("ticket %s (%s), want done: a failure the base has must not block the fix", tk.State, tk.Reason)
	}
	report, _ := os.ReadFile(filepath.Join(tk.ResultDir, "report.md"))
	if want := "failing at the base too: tests: tests/test_flaky.py::test_sometimes"; !strings.Contains(string(report), want) {
		t.Errorf("report lacks %q:\n%s", want, report)
	}
	if strings.Contains(string(report), "flaky: tests: tests/test_flaky.py::test_sometimes") {
		t.Errorf("the order-dependent failure was excused as a flake:\n%s", report)
	}
}
