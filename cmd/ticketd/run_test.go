package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

// syncBuffer is a bytes.Buffer safe to read while the daemon writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runFixture is a one-bug Python project, its issue file, the scripted model (a test
// double) that knows the fix, and a config for `ticketd run`.
type runFixture struct {
	dir, config, db string
}

func newRunFixture(t *testing.T, schedule string) runFixture {
	t.Helper()
	testenv.Need(t, testenv.Pytest, exec.Command("/usr/bin/python3", "-c", "import pytest").Run())
	dir := t.TempDir()
	repo := filepath.Join(dir, "app")
	files := map[string]string{
		"app/calc.py":            "def double(x):\n    return x + x + 1\n",
		"app/tests/test_calc.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
		"app/conftest.py":        "",
		"issues/01.md":           "---\ntitle: double is wrong\nrepo: app\n---\ndouble(2) gives 5, it should give 4.\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commitAll(t, repo)
	testenv.SettleIssues(t, filepath.Join(dir, "issues"))
	patch := "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def double(x):\n-    return x + x + 1\n+    return x + x\n"
	url := startScripted(t, []scriptedmodel.Case{{Match: "double is wrong", Patch: patch}}, scriptedmodel.Options{Seed: 1})
	cfg := fmt.Sprintf(`store: {path: ticketd.db}
sandbox: %s
night: {schedule: %q, window: 1h, workers: 1, lease: 30s, heartbeat: 5s, poll: 50ms}
intake: [{kind: dir, path: issues}]
repos:
  app:
    path: app
    base_ref: main
    checks: [{name: tests, kind: pytest, command: [/usr/bin/python3, -m, pytest], timeout: 2m}]
models:
  endpoints: {scripted: {base_url: %q}}
  roles:
    triage:  {endpoint: scripted, model: gpt-4.1-mini}
    maker:   {endpoint: scripted, model: gpt-4.1}
    checker: {endpoint: scripted, model: gpt-4.1-mini}
    judge:   {endpoint: scripted, model: gpt-4.1-mini}
`, testSandbox(t), schedule, url)
	f := runFixture{dir: dir, config: filepath.Join(dir, "config.yaml"), db: filepath.Join(dir, "ticketd.db")}
	if err := os.WriteFile(f.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// ticketState reads a ticket's state from the daemon's database while it runs ("" before
// the database or the ticket exists).
func ticketState(t *testing.T, db string, id int64) store.State {
	t.Helper()
	if _, err := os.Stat(db); err != nil {
		return ""
	}
	s, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		return ""
	}
	defer s.Close()
	tk, err := s.Get(context.Background(), id)
	if err != nil {
		return ""
	}
	return tk.State
}

// TestRunOnSchedule runs `ticketd run` with a schedule that fires every second: the first
// night works the ticket to done, a stop (what SIGTERM does) ends the command cleanly, and
// with --log-format json every log line is one JSON object with time, level and msg.
func TestRunOnSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scheduled nights (long tier; run without -short)")
	}
	f := newRunFixture(t, "@every 1s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"run", "--config", f.config, "--log-format", "json"}, &stdout, &stderr)
	}()

	deadline := time.Now().Add(5 * time.Minute) // only keeps a broken night from hanging the test
	for ticketState(t, f.db, 1) != store.StateDone {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("ticket not done within 5 min; state %q\nstderr:\n%s", ticketState(t, f.db, 1), stderr.String())
		}
		select {
		case code := <-done:
			t.Fatalf("ticketd run exited early with %d\nstderr:\n%s", code, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("ticketd run exited %d after the stop, want 0\nstderr:\n%s", code, stderr.String())
		}
	case <-time.After(2 * time.Minute): // a hang, not a slow stop
		t.Fatal("ticketd run did not exit within 2 min of the stop")
	}

	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON (%v): %q", err, line)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log line lacks %q: %s", k, line)
			}
		}
		msgs = append(msgs, fmt.Sprint(rec["msg"]))
		// An operator follows these: the next night's time is said, a stop is not an error,
		// durations are seconds and costs are written as money, never 9.72e-05.
		if rec["msg"] == "waiting for the schedule" {
			if next, _ := rec["next_night"].(string); next == "" {
				t.Errorf("the wait does not say when the next night is: %s", line)
			}
		}
		if rec["level"] == "ERROR" {
			t.Errorf("an ERROR line in a night that went well and a normal stop: %s", line)
		}
		for k, v := range rec {
			if k == "took" || strings.HasSuffix(k, "_ms") {
				t.Errorf("duration %s=%v is not in seconds (want a key ending in _s): %s", k, v, line)
			}
			if strings.HasSuffix(k, "_usd") {
				t.Errorf("cost %s=%v is a raw float (want cost/spent written as $0.0123): %s", k, v, line)
			}
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"waiting for the schedule", "attempt started", "ticket done", "night started", "night ended", "shutting down"} {
		if !strings.Contains(all, want) {
			t.Errorf("logs lack %q; messages:\n%s", want, all)
		}
	}
}
