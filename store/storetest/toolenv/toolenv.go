// Package toolenv decides, in one place, what a test does when a tool it needs is not
// installed: it skips, naming the command that installs the tool, so that `go test ./...`
// is green on a machine with only Go, git and python3; or, where TICKETD_REQUIRE_TOOLS says
// the tool must be there (scripts/test.sh, and so CI), it fails, so that no run passes by
// skipping. It lives under the store's tree and imports only the standard library, so the
// store's test harness (storetest) and scripts/testenv, which adds the finders for tools
// only scripts know where to find, share one decision without the product importing
// scripts.
package toolenv

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// RequireEnv names the variable that turns a missing tool into a failure: "1" (or "all")
// for every tool, or a comma-separated list of tool names ("pytest,mypy,ruff").
const RequireEnv = "TICKETD_REQUIRE_TOOLS"

// Tool is something a test needs installed, named as RequireEnv lists it.
type Tool string

// The tools the tests use beyond Go, git and python3; scripts/test.sh installs them all
// (PostgreSQL through scripts/pgtest.sh).
const (
	Pytest     Tool = "pytest"
	Mypy       Tool = "mypy"
	Ruff       Tool = "ruff"
	Bubblewrap Tool = "bwrap"
	Chromium   Tool = "chromium"
	PostgreSQL Tool = "postgres"
	// Venv is /usr/bin/python3 able to make a virtualenv with pip offline (an environment
	// recipe's tests), with setuptools and wheel for an editable install.
	Venv Tool = "venv"
)

// Install is the command that makes tool available.
func (tool Tool) Install() string {
	switch tool {
	case Pytest:
		return "apt-get install -y python3-pytest (for /usr/bin/python3)"
	case Mypy:
		return "apt-get install -y python3-mypy (for /usr/bin/python3)"
	case Ruff:
		return "bash scripts/test.sh (installs Ruff's engine into scripts/ruff-wasm with `npm ci --prefix scripts/ruff-wasm`), or put ruff on PATH"
	case Bubblewrap:
		return "apt-get install -y bubblewrap, run as root or allow unprivileged user namespaces"
	case Chromium:
		return "apt-get install -y chromium"
	case PostgreSQL:
		return "apt-get install -y postgresql"
	case Venv:
		return "apt-get install -y python3-venv python3-pip python3-setuptools python3-wheel python3-pytest"
	}
	return "install " + string(tool)
}

// Required reports whether RequireEnv says tool must be installed.
func Required(tool Tool) bool {
	v := strings.TrimSpace(os.Getenv(RequireEnv))
	switch v {
	case "", "0":
		return false
	case "1", "all":
		return true
	}
	return slices.Contains(strings.Split(v, ","), string(tool))
}

// Need does nothing when err is nil. Otherwise tool is missing (err says how it was looked
// for): t skips with the install command, or fails when the tool is required.
func Need(t testing.TB, tool Tool, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := string(tool) + " is not usable here (" + err.Error() + "); install: " + tool.Install()
	if Required(tool) {
		t.Fatalf("%s; %s=%s requires it", msg, RequireEnv, os.Getenv(RequireEnv))
		return
	}
	t.Skip(msg)
}

// Have reports whether tool is usable (err is nil), for a test whose subject is not the
// tool and that can do its job without it (a night's queue logic with its checks run
// unsandboxed): where it is missing the test logs what it runs without and goes on, unless
// the tool is required, which fails t.
func Have(t testing.TB, tool Tool, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	if Required(tool) {
		t.Fatalf("%s is not usable here (%v); install: %s; %s=%s requires it", tool, err, tool.Install(), RequireEnv, os.Getenv(RequireEnv))
		return false
	}
	t.Logf("running without %s (%v); install: %s", tool, err, tool.Install())
	return false
}
