// Package testenv is what a test uses when it needs a tool beyond Go, git and python3: the
// decision to skip or fail (Need, Have, Required, and TICKETD_REQUIRE_TOOLS) is
// store/storetest/toolenv's, repeated here so every test names one package; this package
// adds the finders for tools whose place only scripts know (Ruff's engine in
// scripts/ruff-wasm, mypy for /usr/bin/python3, chromium). Each test finds its tool its own
// way (sandbox.Probe, validate.ResolvePytest, exec.LookPath) and hands the error to Need.
// It also holds the set-up that tests of several packages share (SettleIssues).
package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storetest/toolenv"
)

// RequireEnv names the variable that turns a missing tool into a failure (toolenv.RequireEnv).
const RequireEnv = toolenv.RequireEnv

// Tool is something a test needs installed, named as RequireEnv lists it.
type Tool = toolenv.Tool

// The tools the tests use beyond Go, git and python3 (toolenv's list).
const (
	Pytest     = toolenv.Pytest
	Mypy       = toolenv.Mypy
	Ruff       = toolenv.Ruff
	Bubblewrap = toolenv.Bubblewrap
	Chromium   = toolenv.Chromium
	PostgreSQL = toolenv.PostgreSQL
	Venv       = toolenv.Venv
)

// Required reports whether RequireEnv says tool must be installed (toolenv.Required).
func Required(tool Tool) bool { return toolenv.Required(tool) }

// Need does nothing when err is nil; otherwise t skips with the install command, or fails
// when the tool is required (toolenv.Need).
func Need(t testing.TB, tool Tool, err error) {
	t.Helper()
	toolenv.Need(t, tool, err)
}

// Have reports whether tool is usable; where it is missing t logs what it runs without, or
// fails when the tool is required (toolenv.Have).
func Have(t testing.TB, tool Tool, err error) bool {
	t.Helper()
	return toolenv.Have(t, tool, err)
}

// NeedMypy skips or fails t unless `/usr/bin/python3 -m mypy` runs.
func NeedMypy(t testing.TB) {
	t.Helper()
	Need(t, Mypy, mypyRuns())
}

// The probes below run once per test binary (the tools cannot change while its tests run):
// each is an interpreter or a Node.js process of its own, a third of a second of CPU or
// more, which every test that needs the tool paid again.
var (
	mypyRuns = sync.OnceValue(func() error {
		out, err := exec.Command("/usr/bin/python3", "-m", "mypy", "--version").CombinedOutput()
		if err != nil {
			return errors.New(strings.TrimSpace(err.Error() + ": " + lastLine(string(out))))
		}
		return nil
	})
	ruffCommand = sync.OnceValues(func() (string, error) {
		if p, err := exec.LookPath("ruff"); err == nil {
			return p, nil
		}
		_, self, _, ok := runtime.Caller(0)
		if !ok {
			return "", errors.New("no ruff on PATH, and the shim's folder is unknown")
		}
		shim := filepath.Join(filepath.Dir(self), "..", "ruff-wasm", "ruff")
		if out, err := exec.Command(shim, "--version").CombinedOutput(); err != nil {
			return "", errors.New("no ruff on PATH, and the shim " + shim + " does not run: " + err.Error() + ": " + lastLine(string(out)))
		}
		return shim, nil
	})
)

// RuffCommand is a ruff on PATH, else the shim over Ruff's WebAssembly engine in
// scripts/ruff-wasm (installed there by scripts/test.sh); it skips or fails t when neither
// runs.
func RuffCommand(t testing.TB) string {
	t.Helper()
	p, err := ruffCommand()
	Need(t, Ruff, err)
	return p
}

// RuffShim is the shim over Ruff's WebAssembly engine in scripts/ruff-wasm, whether or not
// a ruff is on PATH; it skips or fails t when the shim's npm packages are not installed
// (`ruff check` of an empty folder is what needs them all).
func RuffShim(t testing.TB) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		Need(t, Ruff, errors.New("the shim's folder is unknown"))
	}
	shim := filepath.Join(filepath.Dir(self), "..", "ruff-wasm", "ruff")
	cmd := exec.Command(shim, "check", "--output-format=json", ".")
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		Need(t, Ruff, errors.New("the shim "+shim+" does not run: "+err.Error()+": "+lastLine(string(out))))
	}
	return shim
}

// ChromiumPath is the chromium on PATH; it skips or fails t when there is none.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	Need(t, Chromium, err)
	return p
}

// SettleIssues dates the issue files (*.md) in dir an hour back, as issues filed before the
// night are. The intake waits for a file changed a moment ago to stop changing (2 s, on the
// night's clock, which a test's fake clock may never move): without this, every night of a
// test that wrote its issues just before would start with that wait.
func SettleIssues(t testing.TB, dir string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatalf("list the issue files of %s: %v", dir, err)
	}
	past := time.Now().Add(-time.Hour)
	for _, p := range paths {
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatalf("date the issue file back: %v", err)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
