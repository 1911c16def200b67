package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
	"github.com/ticketd/ticketd/store/storetest"
)

// node is one ticketd machine of the multi-node test: a folder of its own with its clone,
// issues, workspace, results and config.
type node struct {
	name, dir, config string
}

// TestSeveralNodesOnePostgres runs real ticketd processes on one PostgreSQL queue: two
// nodes, each with its own folder, clone, issues, workspace and results, one shared bare
// remote. Node vm-a is SIGKILLed while it works a ticket and started again. Every ticket
// must end exactly once, done with one attempt (nothing charged for the kill), or for the
// one the scripted model never fixes escalated at max_attempts; another node must rescue
// the killed node's ticket; each fix branch must be on the shared remote once, beside the
// escalated ticket's kept attempts; the night must be one record naming both nodes;
// ticketctl on either node must list every ticket and show the other node's report; and
// the killed node's restart must collect its dead worktree.
func TestSeveralNodesOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ticketd and runs a night on two nodes")
	}
	dbURL := storetest.FreshPostgres(t)
	if _, err := resolvedPytest(); err != nil {
		t.Fatalf("this test runs real pytest: %v", err)
	}
	bin := buildTicketd(t)
	ctlBin := buildTicketctl(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid"}, args...)...)
		c.Dir = dir
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
		return string(out)
	}
	put := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if filepath.Base(filepath.Dir(p)) == "issues" {
			testenv.SettleIssues(t, filepath.Dir(p))
		}
	}

	// The repository: one one-line bug per ticket, a test for each; pushed to a bare
	// remote both nodes clone.
	const tickets, neverCase, maxAttempts = 8, 3, 2
	seed := filepath.Join(root, "seed")
	put(filepath.Join(seed, "conftest.py"), "")
	var cases []scriptedmodel.Case
	var titles []string
	for i := range tickets {
		put(filepath.Join(seed, fmt.Sprintf("rule_%02d.py", i)), fmt.Sprintf("def surcharge_%d(cents):\n    return cents + %d\n", i, i+1))
		put(filepath.Join(seed, "tests", fmt.Sprintf("test_rule_%02d.py", i)), fmt.Sprintf(
			"from rule_%02d import surcharge_%d\n\n\ndef test_surcharge():\n    assert surcharge_%d(100) == %d\n", i, i, i, 100+i))
		title := fmt.Sprintf("Surcharge rule %d charges one cent too much", i)
		titles = append(titles, title)
		patch := fmt.Sprintf("--- a/rule_%02d.py\n+++ b/rule_%02d.py\n@@ -1,2 +1,2 @@\n def surcharge_%d(cents):\n-    return cents + %d\n+    return cents + %d\n", i, i, i, i+1, i)
		c := scriptedmodel.Case{Match: title, Patch: patch}
		if i == neverCase {
			c.Behaviour = scriptedmodel.BehaviourNever // escalates, keeping each attempt's work on a branch
		}
		cases = append(cases, c)
	}
	git(seed, "init", "-q", "-b", "main")
	git(seed, "add", "-A")
	git(seed, "commit", "-q", "-m", "base")
	remote := filepath.Join(root, "shared.git")
	git(root, "clone", "-q", "--bare", seed, remote)
	git(remote, "config", "core.logAllRefUpdates", "always") // its reflogs count each branch's pushes
	// The scripted model (a test double) is slow enough that a kill lands mid-attempt.
	modelURL := startScripted(t, cases, scriptedmodel.Options{Seed: 1, Latency: 300 * time.Millisecond})

	nodes := []node{{name: "vm-a"}, {name: "vm-b"}}
	for n := range nodes {
		nd := &nodes[n]
		nd.dir = filepath.Join(root, nd.name)
		nd.config = filepath.Join(nd.dir, "config.yaml")
		git(root, "clone", "-q", remote, filepath.Join(nd.dir, "shop"))
		for i := n; i < tickets; i += len(nodes) { // each node's folder holds half the issues
			put(filepath.Join(nd.dir, "issues", fmt.Sprintf("%02d.md", i)), fmt.Sprintf(
				"---\ntitle: %s\nrepo: shop\n---\nsurcharge_%d(100) gives %d, want %d.\n", titles[i], i, 101+i, 100+i))
		}
		put(nd.config, fmt.Sprintf(`store: {url_env: TICKETD_DB_URL}
node: %s
workspace: work
output: results
night: {workers: 2, lease: 5s, heartbeat: 500ms, poll: 50ms, max_attempts: %d, retry_backoff: 50ms}
intake: [{kind: dir, path: issues}]
repos:
  shop:
    path: shop
    base_ref: main
    push_remote: origin
    checks: [{name: tests, kind: pytest, command: [/usr/bin/python3, -m, pytest], timeout: 2m}]
models:
  endpoints: {scripted: {base_url: %q}}
  roles:
    triage:  {endpoint: scripted, model: gpt-4.1-mini}
    maker:   {endpoint: scripted, model: gpt-4.1}
    checker: {endpoint: scripted, model: gpt-4.1-mini}
    judge:   {endpoint: scripted, model: gpt-4.1-mini}
`, nd.name, maxAttempts, modelURL))
	}
	env := append(os.Environ(), "TICKETD_DB_URL="+dbURL)
	start := func(nd node) (*exec.Cmd, chan error) {
		t.Helper()
		out, err := os.OpenFile(filepath.Join(nd.dir, "daemon.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		cmd := exec.Command(bin, "once", "--config", nd.config, "--log-format", "json")
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = nd.dir, env, out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done
	}
	ctx := context.Background()
	st, err := store.OpenURL(ctx, dbURL, store.Options{Node: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	began := time.Now()
	a, aDone := start(nodes[0])
	b, bDone := start(nodes[1])
	// A worker is named w<n>-<pid> (daemon/night.go): its process tells its node.
	nodeOf := map[string]string{fmt.Sprint(a.Process.Pid): "vm-a", fmt.Sprint(b.Process.Pid): "vm-b"}
	// Kill vm-a once it holds a ticket whose attempt has made a model call.
	var victim store.Ticket
	deadline := time.Now().Add(2 * time.Minute) // bounds on a broken build, not clocks the test waits out
	for victim.ID == 0 {
		if time.Now().After(deadline) {
			t.Fatal("vm-a never held a ticket mid-attempt within 2 minutes")
		}
		select {
		case err := <-aDone:
			t.Fatalf("vm-a ended before the kill: %v\n%s", err, nodeLog(nodes[0]))
		case <-time.After(50 * time.Millisecond):
		}
		running, err := st.List(ctx, store.Filter{States: []store.State{store.StateRunning}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range running {
			if r.LeaseNode == "vm-a" && r.ModelCalls > 0 {
				victim = r.Ticket
				break
			}
		}
	}
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-aDone
	t.Logf("SIGKILLed vm-a %s in, holding ticket %d", time.Since(began).Round(time.Millisecond), victim.ID)
	// vm-b rescues the dead node's ticket once its lease expires; then vm-a comes back,
	// rejoins the night and collects its leftovers.
	clocktest.WaitFor(t, time.Until(deadline.Add(time.Minute)), fmt.Sprintf("ticket %d is rescued", victim.ID), func() bool {
		evs, err := st.Events(ctx, victim.ID)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(evs, func(e store.Event) bool { return e.Kind == store.EventLeaseExpired })
	}, func() string { return nodeLog(nodes[1]) })
	a, aDone = start(nodes[0])
	nodeOf[fmt.Sprint(a.Process.Pid)] = "vm-a"
	for i, done := range []chan error{aDone, bDone} {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v\n%s", nodes[i].name, err, nodeLog(nodes[i]))
			}
		case <-time.After(4 * time.Minute):
			t.Fatalf("%s did not finish its night within 4 minutes\n%s", nodes[i].name, nodeLog(nodes[i]))
		}
	}
	t.Logf("night on two nodes with a kill: %s", time.Since(began).Round(time.Millisecond))

	// Every ticket done (or, the one the model never fixes, escalated) exactly once, nothing
	// charged for the kill.
	all, err := st.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != tickets {
		t.Fatalf("%d tickets in the queue; want %d (both nodes' folders)", len(all), tickets)
	}
	byNode := map[string]int{} // claims per node
	rescuedBy := ""
	var want []string // the branches the remote must hold
	for _, tk := range all {
		evs, err := st.Events(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		terminal := 0
		for _, e := range evs {
			if e.ToState.Terminal() && e.FromState != e.ToState {
				terminal++
			}
			if e.Kind == "lease_expired" && tk.ID == victim.ID {
				rescuedBy = e.Actor
			}
			if e.Kind == store.EventClaimed {
				_, pid, _ := strings.Cut(e.Actor, "-")
				byNode[nodeOf[pid]]++
			}
		}
		never := ticketCase(t, tk.Title) == neverCase
		switch {
		case terminal != 1:
			t.Errorf("ticket %d: %d terminal events; want exactly one", tk.ID, terminal)
		case never && (tk.State != store.StateEscalated || tk.Attempts != maxAttempts):
			t.Errorf("ticket %d (never fixed): %s after %d attempts; want escalated after %d", tk.ID, tk.State, tk.Attempts, maxAttempts)
		case !never && (tk.State != store.StateDone || tk.Attempts != 1):
			t.Errorf("ticket %d: %s, %d attempts (%s); want done with one attempt", tk.ID, tk.State, tk.Attempts, tk.Reason)
		}
		if tk.State == store.StateDone {
			want = append(want, tk.Branch)
		}
	}
	got, _ := st.Get(ctx, victim.ID)
	t.Logf("claims per node: %v; ticket %d rescued by %s", byNode, victim.ID, rescuedBy)
	if got.FenceToken == victim.FenceToken {
		t.Errorf("killed ticket %d ended under the fence token %d of the killed node; want the survivor's new one", victim.ID, victim.FenceToken)
	}
	if got.Rescues != 1 || rescuedBy == "" || got.LeaseNode != "vm-b" {
		t.Errorf("killed ticket %d: %d rescues, rescued by %q on %s; want rescued once by vm-b", victim.ID, got.Rescues, rescuedBy, got.LeaseNode)
	}
	// Which node leases the last tickets is a race (vm-b may drain the queue before vm-a
	// is back); that each claimed from the one queue is not.
	if byNode["vm-a"] == 0 || byNode["vm-b"] == 0 || byNode[""] != 0 {
		t.Errorf("claims per node %v; want both nodes to have claimed some, and no claim by an unknown worker", byNode)
	}

	// On the shared remote: each done ticket's fix branch once, with its fix; and the
	// escalated ticket's kept attempts.
	onRemote := strings.Fields(git(remote, "for-each-ref", "--format=%(refname:short)", "refs/heads/ticketd/"))
	var fixes, kept []string
	for _, b := range onRemote {
		if strings.Contains(b, "-attempt-") {
			kept = append(kept, b)
		} else {
			fixes = append(fixes, b)
		}
	}
	slices.Sort(want)
	slices.Sort(fixes)
	if !slices.Equal(fixes, want) {
		t.Errorf("fix branches on the shared remote %v; want each done ticket's once: %v", fixes, want)
	}
	if len(kept) == 0 {
		t.Errorf("no kept attempt branch on the remote (branches %v); want the escalated ticket's attempts", onRemote)
	}
	for _, tk := range all {
		if tk.State != store.StateDone {
			continue
		}
		n := ticketCase(t, tk.Title)
		if got := git(remote, "show", tk.Branch+":"+fmt.Sprintf("rule_%02d.py", n)); !strings.Contains(got, fmt.Sprintf("return cents + %d\n", n)) {
			t.Errorf("ticket %d's branch on the remote holds %q; want the fix", tk.ID, got)
		}
		// One commit, pushed once: the killed node's attempt pushed nothing the survivor's
		// push then moved.
		if out := strings.TrimSpace(git(remote, "rev-list", "--count", "main.."+tk.Branch)); out != "1" {
			t.Errorf("ticket %d's branch %s on the remote has %s commits over main; want one", tk.ID, tk.Branch, out)
		}
		if out := strings.Fields(git(remote, "reflog", "show", "--format=%H", "refs/heads/"+tk.Branch, "--")); len(out) != 1 {
			t.Errorf("the remote updated %s %d times; want once", tk.Branch, len(out))
		}
	}

	// One night, both nodes on it.
	runs, err := st.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || len(runs[0].Nodes) != 2 || runs[0].Done != tickets-1 || runs[0].Escalated != 1 {
		t.Errorf("nights %+v; want one night with both nodes, %d done and 1 escalated", runs, tickets-1)
	}
	// vm-a's dead part was closed by the living (vm-b, whose look found vm-a's lease on the
	// night expired, or vm-a's own restart): the night says so, naming it.
	if len(runs) == 1 && (runs[0].Outcome != store.OutcomeFailed || !strings.Contains(runs[0].Error, "vm-a: failed: "+store.ErrProcessEnded.Error())) {
		t.Errorf("night %s (%s); want failed, naming vm-a's part that died", runs[0].Outcome, runs[0].Error)
	}

	// The killed node's restart removed its dead attempt's worktree.
	entries, _ := os.ReadDir(filepath.Join(nodes[0].dir, "work"))
	var left []string
	for _, e := range entries {
		if e.Name() != "ticketd.lock" { // the single-instance lock, not a leftover
			left = append(left, e.Name())
		}
	}
	if len(left) > 0 {
		t.Errorf("vm-a's workspace still holds %v after its restart", left)
	}
	if _, err := os.Stat(filepath.Join(nodes[0].dir, ".lock")); err == nil {
		t.Errorf("vm-a has a database lock file in its folder; a shared store has none")
	}
	if wt := git(filepath.Join(nodes[0].dir, "shop"), "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("vm-a's clone still registers worktrees:\n%s", wt)
	}

	// ticketctl on either node sees every ticket, and the report another node wrote.
	for _, nd := range nodes {
		cmd := exec.Command(ctlBin, "--config", nd.config, "--json", "list")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ticketctl list on %s: %v\n%s", nd.name, err, out)
		}
		var listed []store.Summary
		if err := json.Unmarshal(out, &listed); err != nil || len(listed) != tickets {
			t.Errorf("ticketctl list on %s: %d tickets, %v; want %d", nd.name, len(listed), err, tickets)
		}
		for _, tk := range all {
			if tk.LeaseNode == nd.name {
				continue
			}
			cmd := exec.Command(ctlBin, "--config", nd.config, "report", fmt.Sprint(tk.ID))
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), fmt.Sprintf("# Ticket %d:", tk.ID)) {
				t.Errorf("ticketctl report %d on %s (done by %s): %v\n%.300s", tk.ID, nd.name, tk.LeaseNode, err, out)
			}
			break
		}
	}
}

var caseNumber = regexp.MustCompile(`rule (\d+) `)

// ticketCase is the bug number in a test ticket's title.
func ticketCase(t *testing.T, title string) int {
	t.Helper()
	m := caseNumber.FindStringSubmatch(title)
	if m == nil {
		t.Fatalf("title %q names no rule", title)
	}
	var n int
	fmt.Sscan(m[1], &n)
	return n
}

func nodeLog(nd node) string {
	data, _ := os.ReadFile(filepath.Join(nd.dir, "daemon.log"))
	return nd.name + "'s log:\n" + tail(data, 30)
}
