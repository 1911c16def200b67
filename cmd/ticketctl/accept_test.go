package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
	"github.com/ticketd/ticketd/worktree"
)

// acceptFixture is a repository whose ticket 1 escalated with a kept change, a push remote
// whose pre-receive hook holds the first push until released, and a config naming both.
type acceptFixture struct {
	dir, repo, remote, config, db, output string
	kept, fix                             string
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid"}, args...)...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newAcceptFixture(t *testing.T) acceptFixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := acceptFixture{dir: dir, repo: filepath.Join(dir, "shop"), remote: filepath.Join(dir, "remote.git"),
		config: filepath.Join(dir, "config.yaml"), db: filepath.Join(dir, "ticketd.db"), output: filepath.Join(dir, "results")}
	put := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(filepath.Join(f.repo, "calc.py"), "def add(a, b):\n    return a - b\n")
	put(filepath.Join(f.repo, "test_calc.py"), "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 0\n")
	gitIn(t, f.repo, "init", "-q", "-b", "main")
	gitIn(t, f.repo, "add", "-A")
	gitIn(t, f.repo, "commit", "-q", "-m", "base")
	f.fix = worktree.BranchName(1, "add subtracts")
	f.kept = f.fix + "-attempt-1"
	gitIn(t, f.repo, "checkout", "-q", "-b", f.kept)
	put(filepath.Join(f.repo, "calc.py"), "def add(a, b):\n    return a + b\n")
	put(filepath.Join(f.repo, "test_calc.py"), "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n")
	gitIn(t, f.repo, "commit", "-q", "-am", "ticketd attempt 1 at ticket 1 (not accepted)")
	gitIn(t, f.repo, "checkout", "-q", "main")
	gitIn(t, dir, "init", "-q", "--bare", f.remote)
	gitIn(t, f.repo, "remote", "add", "origin", f.remote)
	// The hook holds the push until the test releases it: the publication is mid-way.
	// It writes its own pid and its parent's (receive-pack) first: the test kills the remote
	// side by id, as a dropped connection would end it.
	hook := "#!/bin/sh\necho $$ $PPID > '" + filepath.Join(dir, "push-started.tmp") + "'\nmv '" + filepath.Join(dir, "push-started.tmp") + "' '" + filepath.Join(dir, "push-started") + "'\nwhile [ ! -e '" + filepath.Join(dir, "release") + "' ]; do sleep 0.05; done\n"
	if err := os.WriteFile(filepath.Join(f.remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	roles := ""
	for _, r := range []string{"triage", "maker", "checker", "judge"} {
		roles += "    " + r + ": {endpoint: local, model: gpt-test}\n"
	}
	put(f.config, "store:\n  path: "+f.db+"\noutput: "+f.output+"\nrepos:\n  shop:\n    path: "+f.repo+"\n    base_ref: main\n    push_remote: origin\nmodels:\n  endpoints:\n    local: {base_url: \"http://127.0.0.1:9/v1\"}\n  roles:\n"+roles)

	ctx := context.Background()
	s, err := store.Open(ctx, f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, _, err := s.Enqueue(ctx, store.NewTicket{Source: "ticketctl", ExternalID: "1", Repo: "shop", Title: "add subtracts", Body: "add(2, 2) gives 0"})
	if err != nil || id != 1 {
		t.Fatalf("enqueue: %d %v", id, err)
	}
	l, err := s.Claim(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	put(filepath.Join(f.output, "1", "report.md"), "# Ticket 1: add subtracts\n\n**Escalated: needs a human**\n")
	if err := s.SaveArtifact(ctx, 1, "report.md", []byte("# Ticket 1: add subtracts\n\n**Escalated: needs a human**\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fail(ctx, 1, l.Token, store.Failure{Kind: store.FailHuman, Branch: f.kept, ResultDir: filepath.Join(f.output, "1"),
		Reason: "changes tests the base passed: tests: test_calc.py::test_add"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// buildTicketctl builds this command into a temporary folder and returns the binary.
func buildTicketctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ticketctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestAcceptSurvivesSIGKILL: ticketctl accept, killed (the whole process group, SIGKILL)
// while it pushes the fix branch, then run again, publishes the kept change exactly once: one
// accepted event, one push, the remote's branch the local fix branch, the report and patch in
// place; a third run repeats nothing.
func TestAcceptSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the ticketctl binary (long tier)")
	}
	f := newAcceptFixture(t)
	bin := buildTicketctl(t)
	run := func(args ...string) (*exec.Cmd, *strings.Builder) {
		var out strings.Builder
		c := exec.Command(bin, append([]string{"--config", f.config}, args...)...)
		c.Stdout, c.Stderr = &out, &out
		c.Env = append(os.Environ(), "USER=alice")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return c, &out
	}
	first, out := run("accept", "1")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	var remotePids []int
	pushStarted := func() bool {
		data, err := os.ReadFile(filepath.Join(f.dir, "push-started"))
		if err != nil {
			return false
		}
		for _, p := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(p); err == nil && pid > 1 {
				remotePids = append(remotePids, pid)
			}
		}
		return true
	}
	// The push runs in another process (the fake remote's hook writes push-started).
	clocktest.WaitFor(t, 2*time.Minute, "the push started", pushStarted, out.String)
	if err := syscall.Kill(-first.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	for _, pid := range remotePids {
		// The remote side's hook and receive-pack, if they outlived it (checked by their
		// command line, so a reused pid is left alone).
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil &&
			(strings.Contains(string(cmdline), "receive-pack") || strings.Contains(string(cmdline), "pre-receive")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}

	ctx := context.Background()
	s, err := store.Open(ctx, f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tk, _ := s.Get(ctx, 1)
	if tk.State != store.StateDone || tk.Branch != f.fix {
		t.Fatalf("after the kill: state %s branch %q; want done on %s (the decision precedes the push)", tk.State, tk.Branch, f.fix)
	}
	if heads := gitIn(t, f.remote, "for-each-ref", "refs/heads"); heads != "" {
		t.Fatalf("the killed push reached the remote: %q", heads)
	}

	if err := os.WriteFile(filepath.Join(f.dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"already accepted by ticketctl:alice", "already accepted by ticketctl:alice"} {
		c, out := run("accept", "1")
		if err := c.Run(); err != nil {
			t.Fatalf("accept run %d after the kill: %v\n%s", i+2, err, out)
		}
		if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "pushed to origin") {
			evs, _ := s.Events(ctx, 1)
			t.Errorf("run %d said:\n%s\nwant %q and the push; events %+v", i+2, out, want, evs[len(evs)-1])
		}
	}

	evs, err := s.Events(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	accepted, pushed := 0, 0
	for _, e := range evs {
		if e.Kind == store.EventAccepted {
			accepted++
			if e.Actor != "ticketctl:alice" {
				t.Errorf("accepted by %q, want ticketctl:alice", e.Actor)
			}
		}
		if e.Kind == "note" && strings.HasPrefix(e.Reason, "pushed "+f.fix+" ") {
			pushed++
		}
	}
	if accepted != 1 || pushed != 1 {
		t.Errorf("%d accepted events and %d push notes, want 1 and 1: %+v", accepted, pushed, evs)
	}
	local, remote := gitIn(t, f.repo, "rev-parse", f.fix), gitIn(t, f.remote, "rev-parse", f.fix)
	if local != remote {
		t.Errorf("remote %s at %s, local at %s", f.fix, remote, local)
	}
	if d := gitIn(t, f.repo, "diff", f.kept, f.fix); d != "" {
		t.Errorf("the fix branch is not the kept change:\n%s", d)
	}
	if msg := gitIn(t, f.repo, "log", "-1", "--format=%B", f.fix); !strings.Contains(msg, "an operator accepted it") {
		t.Errorf("fix commit message %q", msg)
	}
	report, _ := os.ReadFile(filepath.Join(f.output, "1", "report.md"))
	patch, _ := os.ReadFile(filepath.Join(f.output, "1", "patch"))
	if !strings.Contains(string(report), "accepted by ticketctl:alice") || !strings.Contains(string(report), "Escalated: needs a human") || !strings.Contains(string(patch), "+    return a + b") {
		t.Errorf("report:\n%s\npatch:\n%s", report, patch)
	}
}

// accept refuses what it cannot publish, with the exit code of a refused action.
func TestAcceptRefuses(t *testing.T) {
	f := newAcceptFixture(t)
	ctx := context.Background()
	s, err := store.Open(ctx, f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := s.Enqueue(ctx, store.NewTicket{Source: "ticketctl", ExternalID: "2", Repo: "shop", Title: "queued"})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r := ctl(t, "--config", f.config, "accept", "2"); r.code != exitRefused || !strings.Contains(r.stderr, "only an escalated ticket") {
		t.Errorf("accept a queued ticket: exit %d\n%s", r.code, r.stderr)
	}
	if r := ctl(t, "--db", f.db, "accept", "1"); r.code != exitUsage || !strings.Contains(r.stderr, "needs --config") {
		t.Errorf("accept without --config: exit %d\n%s", r.code, r.stderr)
	}
	if r := ctl(t, "--config", f.config, "accept", "9"); r.code != exitNotFound {
		t.Errorf("accept an unknown ticket: exit %d\n%s", r.code, r.stderr)
	}
	if id != 2 {
		t.Fatalf("enqueued %d", id)
	}
}
