package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// binDir holds what the tests build once for all of them (buildTicketd).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ticketd-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("night:\n  wokers: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{name: "help", args: []string{"help"}, code: 0, wantStdout: "ticketd demo"},
		{name: "no command: help on stderr, a usage error", args: nil, code: 2, wantStderr: "ticketd once --config FILE"},
		{name: "--help", args: []string{"--help"}, code: 0, wantStdout: "Exit codes of once"},
		{name: "help of a command", args: []string{"help", "run"}, code: 0, wantStdout: "stopped by SIGTERM"},
		{name: "once --help lists once's flags", args: []string{"once", "--help"}, code: 0, wantStdout: "-config FILE"},
		{name: "run -h", args: []string{"run", "-h"}, code: 0, wantStdout: "Usage: ticketd run"},
		{name: "demo --help", args: []string{"demo", "--help"}, code: 0, wantStdout: "-dir DIR"},
		{name: "a flag of another command", args: []string{"demo", "--config", "x.yaml"}, code: 2, wantStderr: "try: ticketd demo --help"},
		{name: "unknown command", args: []string{"fix-everything"}, code: 2, wantStderr: "try: ticketd help"},
		{name: "missing config", args: []string{"once", "--config", filepath.Join(dir, "nope.yaml")}, code: 2, wantStderr: "read config"},
		{name: "bad config names line and key", args: []string{"once", "--config", badConfig}, code: 1, wantStderr: "bad.yaml:2: night.wokers: unknown key"},
		{name: "bad log level", args: []string{"demo", "--log-level", "loud"}, code: 2, wantStderr: "--log-level"},
		{name: "stray argument", args: []string{"once", "extra"}, code: 2, wantStderr: "unexpected argument"},
		{name: "demo", args: []string{"demo", "--dir", filepath.Join(dir, "demo")}, code: 0, wantStdout: "SCRIPTED MODEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "demo" && testing.Short() {
				t.Skip("runs a whole demo night (long tier; run without -short)")
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("run(%q) = %d, want %d\nstdout: %s\nstderr: %s", tt.args, code, tt.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("run(%q) stdout lacks %q:\n%s", tt.args, tt.wantStdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("run(%q) stderr lacks %q:\n%s", tt.args, tt.wantStderr, stderr.String())
			}
			if strings.Contains(tt.name, "--help") || strings.Contains(tt.name, "-h") {
				// A command's help lists its own flags, not another command's.
				own := map[string][]string{"once": {"-config", "-log-format"}, "run": {"-config"}, "demo": {"-dir"}}
				other := map[string][]string{"once": {"-dir"}, "run": {"-dir"}, "demo": {"-config"}}
				for _, f := range own[tt.args[0]] {
					if !strings.Contains(stdout.String(), f) {
						t.Errorf("%s's help lacks its flag %s", tt.args[0], f)
					}
				}
				for _, f := range other[tt.args[0]] {
					if strings.Contains(stdout.String(), f+" ") {
						t.Errorf("%s's help lists %s, which it does not take:\n%s", tt.args[0], f, stdout.String())
					}
				}
			}
		})
	}
}

// TestOnceDeadEndpoint: `ticketd once` against an endpoint nobody listens on retries for
// models.preflight_wait, then exits 3 (the endpoint kept the night from its tickets) naming the endpoint's URL, the error and the setting,
// without working any ticket.
func TestOnceDeadEndpoint(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "app")
	if err := os.MkdirAll(filepath.Join(dir, "issues"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // nobody listens there now
	cfg := filepath.Join(dir, "config.yaml")
	text := "sandbox: " + testSandbox(t) + "\nintake: [{kind: dir, path: issues, repo: app}]\nrepos:\n  app: {path: app}\nmodels:\n  preflight_wait: 1s\n  endpoints:\n    local: {base_url: \"" + url + "\"}\n  roles:\n" +
		"    triage: {endpoint: local, model: m}\n    maker: {endpoint: local, model: m}\n    checker: {endpoint: local, model: m}\n    judge: {endpoint: local, model: m}\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{"once", "--config", cfg, "--log-level", "error"}, &stdout, &stderr)
	took := time.Since(start)
	t.Logf("exit %d after %s\nstderr: %s", code, took, stderr.String())
	if code != 3 || !strings.Contains(stderr.String(), url) || !strings.Contains(stderr.String(), "connection refused") ||
		!strings.Contains(stderr.String(), "models.preflight_wait 1s") {
		t.Errorf("exit %d, stderr %q; want 3 naming %s, the refusal and models.preflight_wait", code, stderr.String(), url)
	}
	// The configured 1 s of retries, not the default models.preflight_wait of 5 min: a
	// bound that tells them apart at any load (the exact wait is counted in
	// daemon.TestPreflightDeadEndpoint, on the test's clock).
	if took > 2*time.Minute {
		t.Errorf("took %s, want the 1 s preflight_wait honoured (the default is 5 min)", took)
	}
}

// TestRunDeadEndpointRecordsTheNight: `ticketd run` whose endpoint never answers at service
// start exits 1, and the failed start is a night on record (ticketctl nights, the console,
// /metrics), not only an exit code nobody reads under systemd.
func TestRunDeadEndpointRecordsTheNight(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "issues"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", filepath.Join(dir, "app")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	cfg := filepath.Join(dir, "config.yaml")
	text := "sandbox: " + testSandbox(t) + "\nintake: [{kind: dir, path: issues, repo: app}]\nrepos:\n  app: {path: app}\nmodels:\n  preflight_wait: 1s\n  endpoints:\n    local: {base_url: \"" + url + "\"}\n  roles:\n" +
		"    triage: {endpoint: local, model: m}\n    maker: {endpoint: local, model: m}\n    checker: {endpoint: local, model: m}\n    judge: {endpoint: local, model: m}\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", "--config", cfg, "--log-level", "error"}, &stdout, &stderr); code != exitFailed {
		t.Fatalf("exit %d, want %d: %s", code, exitFailed, stderr.String())
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "ticketd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(context.Background(), 0)
	if err != nil || len(runs) != 1 || runs[0].Outcome != store.OutcomeFailed || !strings.Contains(runs[0].Error, "ticketd run could not start") || !strings.Contains(runs[0].Error, url) {
		t.Errorf("nights %+v, %v; want one failed night naming the endpoint", runs, err)
	}
}
