package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/storetest"
)

// chaosPhase is a moment of a night at which TestChaosNight SIGKILLs ticketd.
type chaosPhase string

const (
	killAtClaim    chaosPhase = "claim"   // a ticket is leased, no model call made yet
	killMidAttempt chaosPhase = "attempt" // the attempt's model calls are under way
	killMidCheck   chaosPhase = "check"   // pytest runs in an attempt's worktree
	killCommitted  chaosPhase = "commit"  // the fix is committed on its branch, not yet recorded done
	killInPush     chaosPhase = "push"    // a fix branch is being received by the push remote
	killAtEnd      chaosPhase = "end"     // every ticket is done, the night is ending
)

// envChaosSeed overrides TestChaosNight's seed, to replay a run whose log printed it.
const envChaosSeed = "TICKETD_CHAOS_SEED"

// chaosNight is a nightFixture whose repository pushes its fixes to a bare remote, whose
// store is engine's, and whose remote's hooks record every ref update and can hold a push
// while the test kills the daemon.
type chaosNight struct {
	nightFixture
	location string   // the store: a SQLite file or a PostgreSQL URL
	env      []string // the daemon's environment
	remote   string   // the bare push remote
	hold     string   // while this file exists, the remote holds every push it receives
	arrived  string   // the remote creates this file when it holds a push
	later    string   // issues not filed yet (fileMore moves them into the intake folder)
}

func newChaosNight(t *testing.T, engine string, tickets int) chaosNight {
	t.Helper()
	f := newNightFixture(t, tickets, 150*time.Millisecond,
		`{workers: 2, lease: 5s, heartbeat: 500ms, poll: 50ms, max_attempts: 3, retry_backoff: 50ms}`)
	c := chaosNight{nightFixture: f, location: f.db, env: os.Environ(),
		remote: filepath.Join(f.dir, "pub.git"), hold: filepath.Join(f.dir, "hold-push"),
		arrived: filepath.Join(f.dir, "push-arrived"),
		later:   filepath.Join(f.dir, "later")}
	// The issues are filed a few at a time (fileMore), so that each night has work.
	if err := os.Rename(filepath.Join(f.dir, "issues"), c.later); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, "issues"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(dir string, args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
	}
	run(f.dir, "init", "-q", "--bare", c.remote)
	// Its reflogs count the updates of each ref (pushedTimes).
	run(c.remote, "config", "core.logAllRefUpdates", "always")
	run(f.repo, "remote", "add", "pub", c.remote)
	// The remote's hook holds a push (bounded, so a broken test does not hang) while the
	// hold file exists.
	hook := fmt.Sprintf("#!/bin/sh\ni=0\nwhile [ -e %q ] && [ $i -lt 1200 ]; do touch %q; sleep 0.05; i=$((i+1)); done\ncat >/dev/null\n", c.hold, c.arrived)
	if err := os.WriteFile(filepath.Join(c.remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "    base_ref: main\n", "    base_ref: main\n    push_remote: pub\n", 1)
	if engine == "postgres" {
		c.location = storetest.FreshPostgres(t)
		c.env = append(c.env, "TICKETD_DB_URL="+c.location)
		text = strings.Replace(text, "store: {path: ticketd.db}\n", "store: {url_env: TICKETD_DB_URL}\nnode: chaos\n", 1)
	}
	if err := os.WriteFile(f.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// fileMore files issues (kept dated an hour back) until n tickets are not terminal yet or
// every issue is filed.
func (c chaosNight) fileMore(t *testing.T, n int) {
	t.Helper()
	open := 0
	for _, s := range c.summaries(t) {
		if !s.State.Terminal() {
			open++
		}
	}
	left, _ := filepath.Glob(filepath.Join(c.later, "*.md"))
	slices.Sort(left)
	for ; open < n && len(left) > 0; open++ {
		if err := os.Rename(left[0], filepath.Join(c.dir, "issues", filepath.Base(left[0]))); err != nil {
			t.Fatal(err)
		}
		left = left[1:]
	}
}

// look opens the store, hands it to fn and closes it; it reports false while the store
// does not exist yet.
func (c chaosNight) look(t *testing.T, fn func(s *store.Store)) bool {
	t.Helper()
	if !store.IsURL(c.location) {
		if _, err := os.Stat(c.location); err != nil {
			return false
		}
	}
	s, err := store.OpenLocation(context.Background(), c.location, store.Options{Node: "test"})
	if err != nil {
		return false
	}
	defer s.Close()
	fn(s)
	return true
}

// endedBy reports whether ticket id (0: none) holds a terminal event written by the
// process pid.
func (c chaosNight) endedBy(t *testing.T, id int64, pid int) bool {
	t.Helper()
	if id == 0 {
		return false
	}
	var evs []store.Event
	var err error
	if !c.look(t, func(s *store.Store) { evs, err = s.Events(context.Background(), id) }) || err != nil {
		t.Fatalf("read ticket %d's events after the kill: %v", id, err)
	}
	owner := "-" + strconv.Itoa(pid)
	return slices.ContainsFunc(evs, func(e store.Event) bool { return strings.HasSuffix(e.Actor, owner) && e.ToState.Terminal() })
}

func (c chaosNight) summaries(t *testing.T) []store.Summary {
	t.Helper()
	var out []store.Summary
	c.look(t, func(s *store.Store) {
		out, _ = s.List(context.Background(), store.Filter{})
	})
	return out
}

// startOnce starts `ticketd once`; the channel gets its exit.
func (c chaosNight) startOnce(t *testing.T, bin string) (*exec.Cmd, chan error) {
	t.Helper()
	out, err := os.OpenFile(filepath.Join(c.dir, "daemon.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(bin, "once", "--config", c.config, "--log-format", "json")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = c.dir, c.env, out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, done
}

// branchHeads reads the fix branches' heads (ticket id to commit) from the clone's ref files,
// loose ones over packed ones, and main's head: the commit phase's window, from a fix's
// commit to its done record, is a fraction of a second, less than a look through the store
// and two git processes per ticket take on a loaded machine, so the phase is watched for
// here without starting a process or opening the store.
func (c chaosNight) branchHeads() (heads map[int64]string, main string) {
	gitDir := filepath.Join(c.repo, ".git")
	heads = map[int64]string{}
	set := func(ref, sha string) {
		if ref == "refs/heads/main" {
			main = sha
			return
		}
		name, ok := strings.CutPrefix(ref, "refs/heads/ticketd/")
		if !ok || strings.Contains(name, "-attempt-") {
			return
		}
		num, _, _ := strings.Cut(name, "-")
		if id, err := strconv.ParseInt(num, 10, 64); err == nil {
			heads[id] = sha
		}
	}
	if packed, err := os.ReadFile(filepath.Join(gitDir, "packed-refs")); err == nil {
		for _, line := range strings.Split(string(packed), "\n") {
			if sha, ref, ok := strings.Cut(line, " "); ok && len(sha) >= 40 {
				set(ref, sha)
			}
		}
	}
	read := func(ref string) {
		if b, err := os.ReadFile(filepath.Join(gitDir, ref)); err == nil {
			set(ref, strings.TrimSpace(string(b)))
		}
	}
	read("refs/heads/main")
	entries, _ := os.ReadDir(filepath.Join(gitDir, "refs", "heads", "ticketd"))
	for _, e := range entries {
		if !e.IsDir() {
			read("refs/heads/ticketd/" + e.Name())
		}
	}
	return heads, main
}

// strikeAt waits until the process with pid has reached phase, and reports the ticket
// (0 for the night's end) it was working then; ended is true when the process exited first.
func (c chaosNight) strikeAt(t *testing.T, phase chaosPhase, pid int, rng *rand.Rand, done <-chan error) (victim store.Ticket, ended bool, exit error) {
	t.Helper()
	owner := "-" + strconv.Itoa(pid)
	// A ticket's model calls count those of its earlier attempts: a phase is told by the
	// calls this process made.
	before := map[int64]int{}
	for _, s := range c.summaries(t) {
		before[s.ID] = s.ModelCalls
	}
	// The commit phase is watched for in the ref files alone (branchHeads): a fix branch whose
	// head moved off main and off where it was when this look began was committed by this
	// process, the only one running. The victim is read from the store after the kill.
	startHeads, main := c.branchHeads()
	deadline := time.Now().Add(5 * time.Minute) // only keeps a broken daemon from hanging the test
	for time.Now().Before(deadline) {
		if phase == killCommitted {
			heads, _ := c.branchHeads()
			var ids []int64
			for id, sha := range heads {
				if main != "" && sha != main && sha != startHeads[id] {
					ids = append(ids, id)
				}
			}
			if len(ids) > 0 {
				slices.Sort(ids)
				return store.Ticket{ID: ids[rng.IntN(len(ids))]}, false, nil
			}
			select {
			case err := <-done:
				return store.Ticket{}, true, err
			case <-time.After(time.Millisecond):
				continue
			}
		}
		var mine []store.Summary
		all := c.summaries(t)
		for _, s := range all {
			if s.State == store.StateRunning && strings.HasSuffix(s.LeaseOwner, owner) {
				s.ModelCalls -= before[s.ID]
				mine = append(mine, s)
			}
		}
		pick := func(ok func(store.Summary) bool) (store.Ticket, bool) {
			var fit []store.Summary
			for _, s := range mine {
				if ok(s) {
					fit = append(fit, s)
				}
			}
			if len(fit) == 0 {
				return store.Ticket{}, false
			}
			return fit[rng.IntN(len(fit))].Ticket, true
		}
		var hit bool
		switch phase {
		case killAtClaim:
			victim, hit = pick(func(s store.Summary) bool { return s.ModelCalls == 0 })
		case killMidAttempt:
			victim, hit = pick(func(s store.Summary) bool { return s.ModelCalls >= 3 })
		case killMidCheck:
			if pytestRunning(c.workspace) {
				victim, hit = pick(func(s store.Summary) bool { return s.ModelCalls > 0 })
			}
		case killInPush:
			_, err := os.Stat(c.arrived)
			hit = err == nil
		case killAtEnd:
			hit = len(all) > 0 && !slices.ContainsFunc(all, func(s store.Summary) bool { return !s.State.Terminal() })
		}
		if hit {
			return victim, false, nil
		}
		select {
		case err := <-done:
			return store.Ticket{}, true, err
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("ticketd did not reach the %s phase within 5 minutes", phase)
	return
}

// TestChaosNight runs real nights of the built ticketd (on SQLite, and on PostgreSQL when
// TICKETD_TEST_POSTGRES is set) over several tickets that push their fixes to a bare
// remote, and SIGKILLs it once in each phase of a night, in a seeded order: as a ticket is
// claimed, mid-attempt, mid-check, once the fix is committed but not yet recorded done,
// while the remote receives a fix's push (ticketd's git push must die with it), and once
// every ticket is done as the night ends. Issues are filed a few before each kill, so each
// night has work. Each kill is followed by a restart; a last night runs undisturbed. Then:
// every ticket is done exactly once (one terminal event), with the one attempt the
// scripted model needs (no kill is charged); each fix is one commit on one branch, on the
// remote once (its reflog: no ref updated twice); no worktree, branch of a lost attempt or
// process is left; each killed night is on record as failed; and the leases the kills left
// were taken back and finished under new fence tokens, never by the dead process.
// TICKETD_CHAOS_SEED replays another order and choice of victims.
func TestChaosNight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ticketd binary and runs nights with kills (long tier; run without -short)")
	}
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel() // a process, folder, database and model server of its own
			testChaosNight(t, engine)
		})
	}
}

func testChaosNight(t *testing.T, engine string) {
	bin := buildTicketd(t)
	seed := uint64(1)
	if s := os.Getenv(envChaosSeed); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a number", envChaosSeed, s)
		}
		seed = n
	}
	t.Logf("seed %d (replay: %s=%d)", seed, envChaosSeed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	const tickets = 10
	c := newChaosNight(t, engine, tickets)
	phases := []chaosPhase{killAtClaim, killMidAttempt, killMidCheck, killCommitted, killInPush}
	rng.Shuffle(len(phases), func(i, j int) { phases[i], phases[j] = phases[j], phases[i] })
	phases = append(phases, killAtEnd) // the end needs every ticket done
	t.Logf("kill order: %v", phases)
	began := time.Now()

	type strike struct {
		phase  chaosPhase
		victim store.Ticket
		pid    int
	}
	var struck []strike
	for _, phase := range phases {
		c.fileMore(t, 2)
		if phase == killInPush {
			if err := os.WriteFile(c.hold, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for try := 0; ; try++ {
			if try == 4 {
				t.Fatalf("no night reached the %s phase in 4 starts\n%s", phase, c.log(40))
			}
			cmd, done := c.startOnce(t, bin)
			victim, ended, exit := c.strikeAt(t, phase, cmd.Process.Pid, rng, done)
			if ended {
				if c.refusedForCrashing(t) {
					t.Logf("a start paused itself after three nights that died (%v); starting again", exit)
					continue
				}
				// The night's work ended between two looks of the test (a loaded machine
				// looks seldom): more work, and again.
				t.Logf("ticketd once exited (%v) before the %s phase; filing more issues, starting again", exit, phase)
				c.fileMore(t, 2)
				continue
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
			<-done
			if c.endedBy(t, victim.ID, cmd.Process.Pid) {
				// The kill landed after the process had ended its victim (a loaded machine
				// looks seldom, and the victim was picked from an earlier look): it hit no
				// attempt, so the phase is struck again in the next night.
				t.Logf("%s: ticket %d was ended by pid %d before its SIGKILL; filing more issues, striking again", phase, victim.ID, cmd.Process.Pid)
				c.fileMore(t, 2)
				continue
			}
			if victim.ID != 0 && victim.FenceToken == 0 {
				// Watched for in the ref files (the commit phase): the lease the kill left
				// is in the store, its fence token the dead process's.
				c.look(t, func(s *store.Store) { victim, _ = s.Get(t.Context(), victim.ID) })
			}
			struck = append(struck, strike{phase, victim, cmd.Process.Pid})
			t.Logf("%s after %s: SIGKILLed pid %d (ticket %d)", phase, time.Since(began).Round(time.Millisecond), cmd.Process.Pid, victim.ID)
			break
		}
		if phase == killInPush {
			// ticketd's own git push must not outlive it (the remote still holds the push):
			// it goes at once with its parent, not whenever the remote lets it finish.
			c.waitGone(t, "ticketd's git push", func(cmdline string) bool { return strings.Contains(cmdline, " push --porcelain ") })
			os.Remove(c.hold) // the remote comes back: the next night pushes what it lacks
			os.Remove(c.arrived)
		}
	}

	// Undisturbed, the next nights finish what is left (after the start that pauses itself
	// when the last three nights died), and the issues not filed yet.
	c.fileMore(t, tickets)
	for try := 1; ; try++ {
		cmd, done := c.startOnce(t, bin)
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Minute):
			cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, into the log
			<-done
			t.Fatalf("the last night did not finish within 5 minutes\n%s", c.log(200))
		}
		if err != nil && try == 1 && c.refusedForCrashing(t) {
			continue
		}
		if err != nil {
			t.Fatalf("last night: %v\n%s", err, c.log(40))
		}
		break
	}
	t.Logf("%d kills and the last night: %s", len(struck), time.Since(began).Round(time.Second))

	ctx := context.Background()
	var (
		all    []store.Summary
		events = map[int64][]store.Event{}
		runs   []store.Run
	)
	c.look(t, func(s *store.Store) {
		var err error
		if all, err = s.List(ctx, store.Filter{}); err != nil {
			t.Fatal(err)
		}
		for _, tk := range all {
			if events[tk.ID], err = s.Events(ctx, tk.ID); err != nil {
				t.Fatal(err)
			}
		}
		if runs, err = s.Runs(ctx, 0); err != nil {
			t.Fatal(err)
		}
	})
	if len(all) != tickets {
		t.Fatalf("%d tickets in the store, want %d", len(all), tickets)
	}

	// Exactly one ending each, with the one attempt the model needs.
	for _, tk := range all {
		terminal := 0
		for _, e := range events[tk.ID] {
			if e.ToState.Terminal() && e.FromState != e.ToState {
				terminal++
			}
		}
		if terminal != 1 || tk.State != store.StateDone || tk.Attempts != 1 {
			t.Errorf("ticket %d: %s, %d attempts, %d terminal events (%s); want done once, with one attempt", tk.ID, tk.State, tk.Attempts, terminal, tk.Reason)
		}
	}
	// A killed attempt's lease was taken over by a later claim with a new fence token; the
	// dead process's token never completed anything.
	for _, s := range struck {
		if s.victim.ID == 0 {
			continue
		}
		for _, tk := range all {
			if tk.ID == s.victim.ID && tk.FenceToken == s.victim.FenceToken {
				t.Errorf("ticket %d ended under the fence token %d of the process killed %s", tk.ID, tk.FenceToken, s.phase)
			}
		}
		if owner := "-" + strconv.Itoa(s.pid); slices.ContainsFunc(events[s.victim.ID], func(e store.Event) bool {
			return strings.HasSuffix(e.Actor, owner) && e.ToState.Terminal()
		}) {
			t.Errorf("ticket %d was ended by pid %d, killed %s", s.victim.ID, s.pid, s.phase)
		}
		// The kill hit the attempt (not a moment between attempts): its lease was taken
		// back from the dead process.
		if !slices.ContainsFunc(events[s.victim.ID], func(e store.Event) bool {
			return e.Kind == store.EventLeaseExpired || e.Kind == store.EventCrash
		}) {
			t.Errorf("ticket %d, killed %s: no lease_expired or crash event; its lease was never taken back", s.victim.ID, s.phase)
		}
	}

	// Each fix: one commit over main, on its branch, on the remote once.
	var want []string
	for _, tk := range all {
		want = append(want, tk.Branch)
		n := ticketCase(t, tk.Title)
		if out := gitOut(t, c.repo, "rev-list", "--count", "main.."+tk.Branch); strings.TrimSpace(out) != "1" {
			t.Errorf("ticket %d's branch %s has %s commits over main; want one", tk.ID, tk.Branch, strings.TrimSpace(out))
		}
		if got := gitOut(t, c.remote, "show", tk.Branch+":"+fmt.Sprintf("rule_%02d.py", n)); !strings.Contains(got, fmt.Sprintf("return cents + %d\n", n)) {
			t.Errorf("ticket %d's branch on the remote holds %q; want the fix", tk.ID, got)
		}
	}
	c.checkNothingLeft(t, want)

	// Each killed night is on record as failed, for the morning; the last one is ok.
	failed := 0
	for _, r := range runs {
		if r.Outcome == store.OutcomeFailed {
			failed++
		}
	}
	if len(runs) == 0 || runs[0].Outcome != store.OutcomeOK || failed < len(struck) {
		t.Errorf("nights %+v; want the last ok and at least %d failed (the killed ones)", runs, len(struck))
	}
}

// waitGone waits until no process under the fixture's folder matches; it fails the test
// when one still does 30 s after (the remote's hook holds a push for 60 s).
func (c chaosNight) waitGone(t *testing.T, what string, match func(cmdline string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		for pid, cmdline := range processesUnder(c.dir) {
			if match(cmdline) {
				left = append(left, fmt.Sprintf("%d: %s", pid, cmdline))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s outlived the killed daemon by 30 s: %v", what, left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkNothingLeft checks what a chaos night leaves once its tickets are done: the branches
// want (each done ticket's fix), no other, in the clone and on the remote, each updated on the
// remote once; no worktree, no file in the workspace but its lock, no process under the
// night's folder.
func (c chaosNight) checkNothingLeft(t *testing.T, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	local := strings.Fields(gitOut(t, c.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/ticketd/"))
	onRemote := strings.Fields(gitOut(t, c.remote, "for-each-ref", "--format=%(refname:short)", "refs/heads/ticketd/"))
	if !slices.Equal(local, want) || !slices.Equal(onRemote, want) {
		t.Errorf("branches: in the clone %v, on the remote %v; want each done ticket's once, no other: %v", local, onRemote, want)
	}
	for _, b := range onRemote {
		if n := c.pushedTimes(t, b); n != 1 {
			t.Errorf("the remote updated %s %d times; want once", b, n)
		}
	}
	if wt := gitOut(t, c.repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left registered:\n%s", wt)
	}
	entries, _ := os.ReadDir(c.workspace)
	for _, e := range entries {
		if e.Name() != "ticketd.lock" { // the single-instance lock, not a leftover
			t.Errorf("workspace still holds %s", e.Name())
		}
	}
	if left := processesUnder(c.dir); len(left) > 0 {
		t.Errorf("processes left under the night's folder: %v", left)
	}
}

// pushedTimes is how many times the remote updated branch (its reflog).
func (c chaosNight) pushedTimes(t *testing.T, branch string) int {
	t.Helper()
	return len(strings.Fields(gitOut(t, c.remote, "reflog", "show", "--format=%H", "refs/heads/"+branch, "--")))
}

// log is the tail of the daemon's log.
func (c chaosNight) log(n int) string {
	data, _ := os.ReadFile(filepath.Join(c.dir, "daemon.log"))
	return tail(data, n)
}

// refusedForCrashing says whether the latest night refused to run because ticketd keeps
// crashing.
func (c chaosNight) refusedForCrashing(t *testing.T) bool {
	t.Helper()
	var runs []store.Run
	c.look(t, func(s *store.Store) { runs, _ = s.Runs(context.Background(), 0) })
	return len(runs) > 0 && strings.Contains(runs[0].Error, "ticketd keeps crashing")
}

// gitOut runs git in dir and returns its output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

// TestStaleNodeCannotFinish: on PostgreSQL, node A is frozen (SIGSTOP) mid-attempt, its
// lease expires, node B rescues the ticket and fixes it; then A is thawed (SIGCONT) and
// its worker goes on as if nothing happened. The fence token must stop it: the ticket is
// done once, by B, with one attempt charged; the remote took B's fix once and nothing of
// A's; A ends its night without an error of its own making and leaves no worktree.
func TestStaleNodeCannotFinish(t *testing.T) {
	t.Parallel() // processes, folders, a database and a model server of their own
	if testing.Short() {
		t.Skip("builds the ticketd binary and runs a night on two nodes")
	}
	storetest.PostgresURL(t) // skips, naming TICKETD_TEST_POSTGRES, without a server
	bin := buildTicketd(t)
	a := newChaosNight(t, "postgres", 1)
	a.fileMore(t, 1)
	// Node B: a folder of its own, its clone of the same repository pushing to the same
	// remote, no issues of its own.
	b := a
	b.dir = filepath.Join(a.dir, "vm-b")
	b.repo, b.workspace, b.config = filepath.Join(b.dir, "shop"), filepath.Join(b.dir, "work"), filepath.Join(b.dir, "config.yaml")
	if err := os.MkdirAll(filepath.Join(b.dir, "issues"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitOut(t, a.dir, "clone", "-q", a.repo, b.repo)
	gitOut(t, b.repo, "remote", "add", "pub", a.remote)
	cfg, err := os.ReadFile(a.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.config, []byte(strings.Replace(string(cfg), "node: chaos", "node: vm-b", 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	cmdA, doneA := a.startOnce(t, bin)
	victim, ended, err := a.strikeAt(t, killMidAttempt, cmdA.Process.Pid, rand.New(rand.NewPCG(1, 1)), doneA)
	if ended {
		t.Fatalf("node A ended (%v) before its attempt got going\n%s", err, a.log(30))
	}
	if err := cmdA.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	defer func() {
		if !thawed {
			cmdA.Process.Signal(syscall.SIGCONT)
			cmdA.Process.Kill()
			<-doneA
		}
	}()
	// B starts once A's lease has run out, so it has something to rescue.
	deadline := time.Now().Add(time.Minute)
	for {
		var tk store.Ticket
		a.look(t, func(s *store.Store) { tk, _ = s.Get(t.Context(), victim.ID) })
		if tk.State == store.StateRunning && !tk.LeaseExpiresAt.IsZero() && time.Now().After(tk.LeaseExpiresAt) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's lease on ticket %d did not run out within a minute: %+v", victim.ID, tk)
		}
		time.Sleep(50 * time.Millisecond)
	}
	nb := b.runOnce(t, bin)
	t.Logf("node B's night: exit %d, %s (%s)", nb.code, nb.run.Outcome, nb.run.Error)
	var tk store.Ticket
	a.look(t, func(s *store.Store) { tk, _ = s.Get(t.Context(), victim.ID) })
	if tk.State != store.StateDone || tk.FenceToken == victim.FenceToken {
		t.Fatalf("after node B's night ticket %d is %s under token %d (A's was %d); want done by B\n%s", tk.ID, tk.State, tk.FenceToken, victim.FenceToken, b.log(30))
	}

	// A wakes up and goes on with its attempt.
	if err := cmdA.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	thawed = true
	select {
	case err = <-doneA:
		t.Logf("node A after thawing: %v\n%s", err, a.log(12))
	case <-time.After(3 * time.Minute):
		cmdA.Process.Kill()
		t.Fatalf("node A did not end its night within 3 minutes of thawing\n%s", a.log(30))
	}

	var after store.Ticket
	var evs []store.Event
	a.look(t, func(s *store.Store) {
		after, _ = s.Get(t.Context(), victim.ID)
		evs, _ = s.Events(t.Context(), victim.ID)
	})
	terminal := 0
	for _, e := range evs {
		if e.ToState.Terminal() && e.FromState != e.ToState {
			terminal++
		}
		if strings.HasSuffix(e.Actor, "-"+strconv.Itoa(cmdA.Process.Pid)) && e.Kind != store.EventClaimed && e.Kind != store.EventNote {
			t.Errorf("the frozen node wrote %s (%s) after losing its lease", e.Kind, e.Reason)
		}
	}
	if after.State != store.StateDone || after.Attempts != 1 || terminal != 1 || after.FenceToken != tk.FenceToken || after.Branch != tk.Branch {
		t.Errorf("ticket %d: %s, %d attempts, %d terminal events, token %d, branch %s; want done once by B (token %d, branch %s), one attempt",
			after.ID, after.State, after.Attempts, terminal, after.FenceToken, after.Branch, tk.FenceToken, tk.Branch)
	}
	onRemote := strings.Fields(gitOut(t, a.remote, "for-each-ref", "--format=%(refname:short)", "refs/heads/ticketd/"))
	if len(onRemote) != 1 || onRemote[0] != tk.Branch || a.pushedTimes(t, tk.Branch) != 1 {
		t.Errorf("the remote holds %v; want only B's fix %s, pushed once", onRemote, tk.Branch)
	}
	if wt := gitOut(t, a.repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("node A left worktrees registered:\n%s", wt)
	}
}
