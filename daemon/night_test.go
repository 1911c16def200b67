package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// fixture is a Python repository with one bug per ticket, its issue files and the scripted
// model's cases.
type fixture struct {
	dir, repo, issues string
	cases             []scriptedmodel.Case
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if filepath.Base(filepath.Dir(path)) == "issues" {
		testenv.SettleIssues(t, filepath.Dir(path)) // filed before the night, as issues are
	}
}

// newFixture builds a repository of a realistic size (modules enough for a repository map of
// a few thousand tokens) with n bugs, each with a failing test, one issue and one patch.
func newFixture(t *testing.T, n int) fixture {
	t.Helper()
	f := fixture{dir: t.TempDir()}
	f.repo = filepath.Join(f.dir, "shop")
	f.issues = filepath.Join(f.dir, "issues")
	write(t, filepath.Join(f.repo, "shop", "__init__.py"), "")
	write(t, filepath.Join(f.repo, "tests", "__init__.py"), "")
	for j := range 60 {
		var b strings.Builder
		fmt.Fprintf(&b, "\"\"\"Catalogue helpers, part %d.\"\"\"\n\n", j)
		for k := range 10 {
			fmt.Fprintf(&b, "def catalogue_%d_lookup_%d(items, key, default=None):\n    return items.get(key, default)\n\n\n", j, k)
		}
		write(t, filepath.Join(f.repo, "shop", fmt.Sprintf("catalogue_%02d.py", j)), b.String())
	}
	for i := range n {
		write(t, filepath.Join(f.repo, "shop", fmt.Sprintf("rule_%02d.py", i)), fmt.Sprintf(
			"\"\"\"Pricing rule %d.\"\"\"\n\n\ndef surcharge_%d(cents):\n    \"\"\"Add the rule's surcharge of %d cents.\"\"\"\n    return cents + %d\n", i, i, i, i+1))
		write(t, filepath.Join(f.repo, "tests", fmt.Sprintf("test_rule_%02d.py", i)), fmt.Sprintf(
			"import unittest\n\nfrom shop.rule_%02d import surcharge_%d\n\n\nclass RuleTest(unittest.TestCase):\n    def test_surcharge(self):\n        self.assertEqual(surcharge_%d(100), %d)\n", i, i, i, 100+i))
	}
	git(t, f.repo, "init", "-q", "-b", "main")
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "base")
	for i := range n {
		path := filepath.Join(f.repo, "shop", fmt.Sprintf("rule_%02d.py", i))
		data, _ := os.ReadFile(path)
		write(t, path, strings.Replace(string(data), fmt.Sprintf("cents + %d\n", i+1), fmt.Sprintf("cents + %d\n", i), 1))
		patch := git(t, f.repo, "diff")
		git(t, f.repo, "checkout", "-q", ".")
		title := fmt.Sprintf("Surcharge rule %d charges one cent too much", i)
		write(t, filepath.Join(f.issues, fmt.Sprintf("%02d.md", i)), fmt.Sprintf(
			"---\ntitle: %s\nrepo: shop\nlabels: [bug]\n---\nAn order of 1.00 with rule %d shows %d cents, but the rule adds %d cents, so it should be %d.\n",
			title, i, 101+i, i, 100+i))
		f.cases = append(f.cases, scriptedmodel.Case{Match: title, Patch: patch})
	}
	testenv.SettleIssues(t, f.issues)
	return f
}

// scripted starts the scripted model (the test double) with the fixture's cases.
func (f fixture) scripted(t *testing.T, opts scriptedmodel.Options) (*scriptedmodel.Server, string) {
	t.Helper()
	server, err := scriptedmodel.New(f.cases, opts)
	if err != nil {
		t.Fatal(err)
	}
	url, err := server.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return server, url
}

// testPoll is night.poll in the tests' nights. An idle worker (a night of one ticket has
// one, and every worker waits while a repository's baseline runs) asks the queue this often
// when no notice wakes it: a claim and a read of the queue, SQLite under -race. At 20 ms
// those asks were about a seventh of a night's CPU (the matrix's rows, measured with and
// without); the night's own notices (an enqueue, a release, a baseline ready) and the
// retries' and leases' due times end the wait, so the poll is only the back-stop, and a
// night ends at most one poll after its last ticket.
const testPoll = 250 * time.Millisecond

func (f fixture) config(t *testing.T, baseURL string, workers int) config.Config {
	t.Helper()
	text := fmt.Sprintf(`
sandbox: %s
night: {workers: %d, lease: 30s, heartbeat: 5s, max_attempts: 3, retry_backoff: 50ms, poll: %s}
intake: [{kind: dir, path: %s}]
repos:
  shop:
    path: %s
    base_ref: main
    checks: [{name: tests, kind: pytest, timeout: 2m%s}]
models:
  endpoints: {scripted: {base_url: %s}}
  roles:
    triage: {endpoint: scripted, model: gpt-4.1-mini}
    maker: {endpoint: scripted, model: gpt-4.1}
    checker: {endpoint: scripted, model: gpt-4.1-mini}
    judge: {endpoint: scripted, model: gpt-4.1-mini}
  retry: {max_retries: 6, base_delay: 10ms, max_delay: 100ms}
`, testSandbox(t), workers, testPoll, f.issues, f.repo, testPython(), baseURL)
	cfg, err := config.Parse(filepath.Join(f.dir, "config.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testSandbox is the sandbox of the nights these tests run: bwrap where it works, else none
// (logged). Their subject is the queue, not the sandbox, which sandbox_test.go covers.
func testSandbox(t *testing.T) string {
	t.Helper()
	_, err := probedSandbox()
	if testenv.Have(t, testenv.Bubblewrap, err) {
		return string(sandbox.ModeBwrap)
	}
	return string(sandbox.ModeNone)
}

// The machine's tools, probed once per test binary: the answer cannot change while the
// tests run, and each probe is processes of its own. ResolvePytest tries every python3 on
// PATH before /usr/bin/python3; behind a pyenv shim that is a dozen bash processes and two
// interpreters, about 0.8 s of CPU, which each of the package's seventy-odd nights paid
// again before it started. The nights themselves still resolve their tools as ticketd does
// (validate.Runner, sandbox.Probe at the night's start): only the tests' own look is shared.
var (
	resolvedPytest = sync.OnceValues(func() ([]string, error) { return validate.ResolvePytest(context.Background()) })
	probedSandbox  = sync.OnceValues(func() (string, error) { return sandbox.Probe(context.Background(), "") })
)

// testPython is the fixture's check's python: (", python: /usr/bin/python3"), the
// interpreter the once-resolved pytest runs with; "" where none has pytest (then the night
// finds none either, and realNight has skipped or failed the test). Without it every night's
// check runner looked for a python3 that imports pytest again: the first python3 on PATH
// here is pyenv's shim, a bash script that runs a dozen more bash processes and an
// interpreter without pytest before /usr/bin/python3 is tried, about 0.8 s of CPU a night.
// How a night finds the interpreter is validate's tests' subject (TestInterpreter*) and the
// real-repository nights', whose configs name no python:.
func testPython() string {
	pytest, err := resolvedPytest()
	if err != nil || len(pytest) == 0 {
		return ""
	}
	return ", python: " + pytest[0]
}

// realNight marks a test that runs a real night (intake, worktrees, pytest, the scripted
// model over HTTP): the long tier, which -short skips. It needs pytest.
func realNight(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real night (long tier; run without -short)")
	}
	_, err := resolvedPytest()
	testenv.Need(t, testenv.Pytest, err)
}

type night struct {
	store *store.Store
	rep   NightReport
	cfg   config.Config
	opts  []model.Option
}

func runNight(t *testing.T, cfg config.Config, layout pipeline.Layout, opts ...model.Option) night {
	t.Helper()
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		PromptLayout: layout, ModelOptions: opts}
	rep, err := d.RunNight(context.Background(), "test")
	if err != nil {
		t.Fatalf("night: %v", err)
	}
	return night{store: st, rep: rep, cfg: cfg, opts: opts}
}

// firstRequestShares returns, per role, the cached share of each ticket's first request of
// that role, in the order those requests were made, leaving out the very first one (the
// request that writes the shared prefix to the cache).
func firstRequestShares(t *testing.T, st *store.Store, tickets int) map[string][]float64 {
	t.Helper()
	type first struct {
		id    int64
		share float64
	}
	byRole := map[string][]first{}
	for id := int64(1); id <= int64(tickets); id++ {
		calls, err := st.ModelCalls(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, c := range calls {
			if seen[c.Role] || c.ErrorClass != "" {
				continue
			}
			seen[c.Role] = true
			byRole[c.Role] = append(byRole[c.Role], first{c.ID, float64(c.CachedTokens) / float64(c.PromptTokens)})
		}
	}
	out := map[string][]float64{}
	for role, fs := range byRole {
		sort.Slice(fs, func(i, j int) bool { return fs[i].id < fs[j].id })
		for _, f := range fs[1:] {
			out[role] = append(out[role], f.share)
		}
	}
	return out
}

// The prompt-cache nights: cacheTickets tickets on cacheWorkers workers, the scripted
// model's seed 7. The first round's later tickets wait at the warm-up gate, the second
// round's (one ticket) find the prefix warm. Each ticket after the first is one measured
// first request per role, so four tickets measure both ways a request can find the prefix
// warm; six (two full rounds) measured the same two ways with two more tickets a night.
const cacheTickets, cacheWorkers = 4, 3

// cacheFriendlyShare is what every role's first request of every ticket after the first must
// find cached with the static prefix first (the (simulated, OpenAI-rules) prefix cache).
const cacheFriendlyShare = 0.95

// TestPromptCacheShare: with the static prefix first, every role's first request of every
// ticket after the first finds at least 95% of its prompt in the (simulated, OpenAI-rules)
// prefix cache; that night is TestRepoInstructionsCached's night without AGENTS.md (the same
// fixture, seed, layout and workers), which checks it, so it is not run twice. The negative
// control, run here, puts the work directory and date at the top of the system prompt, as
// many agents do, and must fall below 30%: the measurement can fail.
func TestPromptCacheShare(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	tests := []struct {
		name   string
		layout pipeline.Layout
		check  func(share float64) bool
		want   string
	}{
		{"dynamic values first (negative control)", pipeline.LayoutDynamicFirst, func(s float64) bool { return s < 0.3 }, "< 0.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const tickets = cacheTickets
			f := newFixture(t, tickets)
			_, url := f.scripted(t, scriptedmodel.Options{Seed: 7})
			n := runNight(t, f.config(t, url, cacheWorkers), tt.layout)
			list, err := n.store.List(context.Background(), store.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range list {
				if tk.State != store.StateDone {
					t.Errorf("ticket %d: %s (%s)", tk.ID, tk.State, tk.Reason)
				}
			}
			shares := firstRequestShares(t, n.store, tickets)
			for _, role := range model.Roles {
				got := shares[string(role)]
				if len(got) != tickets-1 {
					t.Errorf("%s: %d first requests after the first, want %d", role, len(got), tickets-1)
				}
				for i, s := range got {
					if !tt.check(s) {
						t.Errorf("%s: first request #%d has cached share %.3f, want %s", role, i+2, s, tt.want)
					}
				}
				t.Logf("%s first-request cached shares: %v", role, fmtShares(got))
			}
		})
	}
}

func fmtShares(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(parts, " ")
}

// newInstantClock makes the model client's backoff waits return at once, recording them:
// After fires at once and moves the time on by what was waited, so a bound counted in waits
// (the preflight's models.preflight_wait) ends as it would.
func newInstantClock() *clocktest.Fake {
	return clocktest.New(time.Now()).AutoAdvance(0).FollowReal()
}

// totalWaited is the time c's After calls were asked to wait, in all.
func totalWaited(c *clocktest.Fake) time.Duration {
	var all time.Duration
	for _, d := range c.Waits() {
		all += d
	}
	return all
}

// TestTransportFaultsBurnNoAttempt: with 20% of responses 429 or 500, every ticket is fixed
// on its first attempt, the faults were retried (within the configured bound), and no
// attempt was spent on them.
func TestTransportFaultsBurnNoAttempt(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	const tickets = 6
	f := newFixture(t, tickets)
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 3,
		Faults: scriptedmodel.Faults{RateLimitRate: 0.1, ServerErrorRate: 0.1, RetryAfter: time.Second}})
	clock := newInstantClock()
	cfg := f.config(t, url, 3)
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly, model.WithClock(clock))

	faults := 0
	for _, r := range server.Requests() {
		// The preflight's requests name no case; their retries are not any ticket's.
		if (r.Status == 429 || r.Status >= 500) && r.Case != "" {
			faults++
		}
	}
	if faults == 0 {
		t.Fatal("the scripted model injected no faults: the test proves nothing")
	}
	retries := 0
	for id := int64(1); id <= tickets; id++ {
		tk, err := n.store.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.State != store.StateDone || tk.Attempts != 1 {
			t.Errorf("ticket %d: %s after %d attempts (%s), want done after 1", id, tk.State, tk.Attempts, tk.Reason)
			events, _ := n.store.Events(context.Background(), id)
			for _, e := range events {
				t.Logf("  event %s %s->%s attempt %d: %s", e.Kind, e.FromState, e.ToState, e.Attempt, e.Reason)
			}
			tcs, _ := n.store.ToolCalls(context.Background(), id)
			for _, tc := range tcs {
				t.Logf("  tool %s attempt %d: %.600s", tc.Tool, tc.Attempt, tc.Result)
			}
		}
		calls, _ := n.store.ModelCalls(context.Background(), id)
		for _, c := range calls {
			retries += c.Retries
			if c.Retries > cfg.Models.Retry.MaxRetries {
				t.Errorf("ticket %d call %d: %d retries, more than the bound %d", id, c.ID, c.Retries, cfg.Models.Retry.MaxRetries)
			}
		}
	}
	if retries != faults {
		t.Errorf("recorded %d retries, the server injected %d faults", retries, faults)
	}
	t.Logf("%d requests, %d faults injected and retried; %d backoff waits", len(server.Requests()), faults, len(clock.Waits()))
}

// slowNight starts a night whose scripted model answers slowly, so the test can act while
// tickets are running; it returns the store and a channel with the night's result.
func slowNight(t *testing.T, ctx context.Context, tickets int, edit func(*config.Config)) (*store.Store, <-chan NightReport) {
	t.Helper()
	realNight(t)
	f := newFixture(t, tickets)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Latency: 150 * time.Millisecond})
	cfg := f.config(t, url, 2)
	cfg.Night.Lease, cfg.Night.Heartbeat = 5*time.Second, 50*time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	return startNight(t, ctx, cfg, nil)
}

// startNight runs a night of cfg on clock (nil: the real one) in the background; it
// returns the store and a channel with the night's report.
func startNight(t *testing.T, ctx context.Context, cfg config.Config, clock Clock, opts ...model.Option) (*store.Store, <-chan NightReport) {
	t.Helper()
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clock, ModelOptions: opts}
	done := make(chan NightReport, 1)
	go func() {
		rep, err := d.RunNight(ctx, "test")
		if err != nil {
			t.Errorf("night: %v", err)
		}
		done <- rep
	}()
	return st, done
}

// awaitNight waits for the night's report; the bound only keeps a night that never ends from
// hanging the test binary.
func awaitNight(t *testing.T, done <-chan NightReport) NightReport {
	t.Helper()
	select {
	case rep := <-done:
		return rep
	case <-time.After(5 * time.Minute):
		t.Fatal("the night did not end within 5 minutes")
		return NightReport{}
	}
}

// waitRunning polls the store until a ticket is running (a state change, not a timing guess).
func waitRunning(t *testing.T, st *store.Store) int64 {
	t.Helper()
	var id int64
	clocktest.WaitFor(t, 5*time.Minute, "a ticket runs", func() bool {
		list, err := st.List(context.Background(), store.Filter{States: []store.State{store.StateRunning}})
		if err == nil && len(list) > 0 {
			id = list[0].ID
		}
		return id != 0
	})
	return id
}

// TestCancelRunningTicket: an operator's cancel reaches the running worker at its next
// heartbeat, which is at most 15 s away (config refuses a longer night.heartbeat, see
// TestGraceAndBudgetLimits), and spending stops at once: the model call in flight is
// abandoned and none follows. The night's clock is the test's and its heartbeat the longest
// config allows: the cancel must land after 15 s of that clock, no more. The ticket ends
// cancelled and the other, which the second worker runs meanwhile, is fixed (a third ticket
// was a second one of those, another ticket's work for no other check).
func TestCancelRunningTicket(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 2)
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	target := f.cases[0].Match // ticket 1's title; its checker request is held
	hold := holdRole(t, url, "checker", target)
	cfg := f.config(t, hold.URL, 2)
	cfg.Night.Lease = time.Hour // beats only when the test advances the clock
	cfg.Night.Heartbeat = 15 * time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatalf("docs/operating.md's 15 s is no longer a heartbeat config accepts: %v", err)
	}
	clock := newFakeClock(time.Now())
	st, done := startNight(t, context.Background(), cfg, clock)
	hold.waitArrived(t) // ticket 1 is running, and spending: its checker call is in flight
	asked := func() int {
		n := 0
		for _, r := range server.Requests() {
			if r.Case == target {
				n++
			}
		}
		return n
	}
	before := asked()
	if _, err := st.RequestCancel(context.Background(), 1, "test", "not wanted"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(15 * time.Second) // docs/operating.md's bound, and no more
	hold.waitAbandoned(t)
	awaitNight(t, done)
	if after := asked(); after != before {
		t.Errorf("the model was asked %d more time(s) for ticket 1 after its cancel", after-before)
	}
	list, _ := st.List(context.Background(), store.Filter{})
	for _, tk := range list {
		want := store.StateDone
		if tk.ID == 1 {
			want = store.StateCancelled
		}
		if tk.State != want {
			t.Errorf("ticket %d: %s (%s), want %s", tk.ID, tk.State, tk.Reason, want)
		}
	}
}

// TestShutdownReleasesTickets: stopping the daemon mid-night puts running tickets back in
// the queue without spending their attempt; nothing is lost or left running.
func TestShutdownReleasesTickets(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	realNight(t)
	f := newFixture(t, 4)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	hold := holdRole(t, url, "checker", "") // no attempt can end before the shutdown
	st, done := startNight(t, ctx, f.config(t, hold.URL, 2), nil)
	hold.waitArrived(t)
	cancel()
	rep := <-done
	if !errors.Is(rep.Stopped, ErrShutdown) {
		t.Errorf("night stopped with %v, want ErrShutdown", rep.Stopped)
	}
	assertNothingLost(t, st)
}

// TestNightDollarLimit: when the night's spend reaches max_dollars the night stops and the
// tickets in flight are released, not failed.
func TestNightDollarLimit(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	st, done := slowNight(t, context.Background(), 4, func(c *config.Config) { c.Night.MaxDollars = 0.01 })
	rep := <-done
	if !errors.Is(rep.Stopped, ErrNightBudget) {
		t.Fatalf("night stopped with %v, want ErrNightBudget", rep.Stopped)
	}
	if rep.Dollars < 0.01 {
		t.Errorf("night spent $%.4f, below the limit it stopped for", rep.Dollars)
	}
	assertNothingLost(t, st)
	// No claim after the call that reached the cap: when did the spend reach $0.01?
	list, _ := st.List(context.Background(), store.Filter{})
	var calls []store.ModelCall
	for _, tk := range list {
		c, err := st.ModelCalls(context.Background(), tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c...)
	}
	end := func(c store.ModelCall) time.Time { return c.StartedAt.Add(c.Latency) }
	sort.Slice(calls, func(i, j int) bool { return end(calls[i]).Before(end(calls[j])) })
	var spent float64
	var capAt time.Time
	for _, c := range calls {
		if c.CostUSD != nil {
			spent += *c.CostUSD
		}
		if spent >= 0.01 {
			capAt = end(c)
			break
		}
	}
	if capAt.IsZero() {
		t.Fatalf("the recorded calls add up to $%.4f, never the cap", spent)
	}
	claims, late := 0, 0
	for _, tk := range list {
		events, _ := st.Events(context.Background(), tk.ID)
		for _, e := range events {
			if e.Kind != "claimed" {
				continue
			}
			claims++
			if e.At.After(capAt) {
				late++
				t.Logf("ticket %d claimed at %s, after the spend reached the cap at %s", tk.ID, e.At.Format(time.StampMilli), capAt.Format(time.StampMilli))
			}
		}
	}
	// A worker already inside Claim when the cap was reached may land that one claim, at any
	// load; a second claim of any worker would mean claims did not stop.
	if workers := 2; late > workers {
		t.Errorf("%d claims after the spend reached the cap, want at most one per worker (%d)", late, workers)
	}
	t.Logf("cap reached at %s after %d calls; %d claims in the night, of %d tickets", capAt.Format(time.StampMilli), len(calls), claims, len(list))
}

// eventLines is a ticket's events, one per line, for a failure's message.
func eventLines(st *store.Store, id int64) string {
	evs, err := st.Events(context.Background(), id)
	if err != nil {
		return " (unreadable: " + err.Error() + ")"
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\n  %s %s %s→%s attempt %d: %s", e.At.Format(time.StampMilli), e.Kind, e.FromState, e.ToState, e.Attempt, e.Reason)
	}
	return b.String()
}

func assertNothingLost(t *testing.T, st *store.Store) {
	t.Helper()
	list, err := st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	queued := 0
	for _, tk := range list {
		switch tk.State {
		case store.StateDone:
		case store.StateQueued:
			queued++
			if tk.Attempts != 0 {
				t.Errorf("ticket %d: released with %d attempts spent, want 0; its events:%s", tk.ID, tk.Attempts, eventLines(st, tk.ID))
			}
		default:
			t.Errorf("ticket %d: %s (%s), want done or queued", tk.ID, tk.State, tk.Reason)
		}
	}
	if queued == 0 {
		t.Error("no ticket was released: the stop came too late to test anything")
	}
}

// TestBadReposPaused: beside a healthy repository, one whose path is not a git repository
// and one whose base_ref does not exist are found before anything is claimed. Each is
// reported once (one log line, one note on each of its tickets, not repeated the next night)
// and its tickets are not claimed: zero attempts spent. The healthy one's tickets are done.
func TestBadReposPaused(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 2)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	notRepo := filepath.Join(f.dir, "not-a-repo")
	write(t, filepath.Join(notRepo, "README"), "a folder, not a repository\n")
	bad := map[string]struct{ path, ref, want, inLog string }{
		"gone":   {path: notRepo, ref: "main", want: "not a git repository", inLog: "not a git repository"},
		"badref": {path: f.repo, ref: "no-such-branch", want: `"no-such-branch" does not resolve`, inLog: "no-such-branch"},
	}
	for name, b := range bad {
		r := cfg.Repos["shop"]
		r.Path, r.BaseRef = b.path, b.ref
		cfg.Repos[name] = r
		write(t, filepath.Join(f.issues, name+".md"), fmt.Sprintf("---\ntitle: ticket of %s\nrepo: %s\n---\nsomething is wrong\n", name, name))
	}
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs syncBuffer
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	for night := range 2 {
		if _, err := d.RunNight(context.Background(), "test"); err != nil {
			t.Fatalf("night %d: %v", night+1, err)
		}
	}
	list, err := st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range list {
		tk, _ := st.Get(context.Background(), sum.ID)
		b, isBad := bad[tk.Repo]
		if !isBad {
			if tk.State != store.StateDone {
				t.Errorf("ticket %d of the healthy repository: %s (%s), want done", tk.ID, tk.State, tk.Reason)
			}
			continue
		}
		events, _ := st.Events(context.Background(), tk.ID)
		var notes []string
		for _, e := range events {
			if e.Kind == "note" {
				notes = append(notes, e.Reason)
			}
			if e.Kind == "claimed" {
				t.Errorf("ticket %d of %s was claimed: %+v", tk.ID, tk.Repo, e)
			}
		}
		t.Logf("ticket %d (%s): %s, %d attempts, notes %q", tk.ID, tk.Repo, tk.State, tk.Attempts, notes)
		if tk.State != store.StateQueued || tk.Attempts != 0 || tk.Rescues != 0 {
			t.Errorf("ticket %d of %s: %s with %d attempts, %d rescues; want queued with none spent", tk.ID, tk.Repo, tk.State, tk.Attempts, tk.Rescues)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], b.want) {
			t.Errorf("ticket %d of %s: notes %q, want exactly one saying %q", tk.ID, tk.Repo, notes, b.want)
		}
	}
	for name, b := range bad {
		lines := 0
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "failed its start-up check") && strings.Contains(l, "repo="+name) {
				lines++
				if !strings.Contains(l, b.inLog) {
					t.Errorf("log line for %s lacks %q: %s", name, b.inLog, l)
				}
			}
		}
		if lines != 2 { // once per night
			t.Errorf("repository %s reported in %d log lines over 2 nights, want one per night", name, lines)
		}
	}
}

// TestFailingRoleStopsThePreflight: a role whose endpoint keeps failing (every judge request
// answers 500) fails the night's preflight once models.preflight_wait has passed, naming the
// role and the status: nothing is claimed, no ticket is charged, and the night is recorded
// as failed with why.
func TestFailingRoleStopsThePreflight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	f := newFixture(t, 1)
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 1,
		RoleFaults: map[string]scriptedmodel.Faults{"judge": {ServerErrorRate: 1}}})
	cfg := f.config(t, url, 1)
	cfg.Models.PreflightWait = 30 * time.Second
	// The repository fails its start-up check, which runs beside the preflight: a night that
	// cannot start must not act on it either (no note on its tickets).
	shop := cfg.Repos["shop"]
	shop.BaseRef = "no-such-branch"
	cfg.Repos["shop"] = shop
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := newInstantClock()
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ModelOptions: []model.Option{model.WithClock(clock)}}
	start := time.Now()
	rep, err := d.RunNight(context.Background(), "test")
	real := time.Since(start)
	if !errors.Is(err, ErrPreflight) || !errors.Is(err, model.ErrTransport) || !strings.Contains(err.Error(), "models.roles.judge") ||
		!strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), "models.preflight_wait 30s") {
		t.Fatalf("RunNight = %v\nwant ErrPreflight naming the judge, the 500 and models.preflight_wait", err)
	}
	// The clock follows the real one besides its instant backoffs: the preflight's time is
	// both. (The backoffs alone once came to 18.8 s at load 20, the night's real time to 12 s.)
	waited := totalWaited(clock)
	if waited+real < 20*time.Second || waited > 40*time.Second {
		t.Errorf("the preflight waited %s in backoff and %s in real time, want about models.preflight_wait (30s) in all", waited, real.Round(time.Millisecond))
	}
	tk, _ := st.Get(context.Background(), 1)
	if tk.State != store.StateQueued || tk.Attempts != 0 {
		t.Errorf("ticket: %s with %d attempts, want queued with none spent", tk.State, tk.Attempts)
	}
	if note := lastNote(context.Background(), st, 1); note != "" {
		t.Errorf("ticket 1 got the note %q though the night never started", note)
	}
	runs, _ := st.Runs(context.Background(), 1)
	if rep.Outcome != store.OutcomeFailed || len(runs) != 1 || runs[0].Outcome != store.OutcomeFailed || !strings.Contains(runs[0].Error, "models.roles.judge") {
		t.Errorf("night outcome %s, runs %+v; want failed naming the judge", rep.Outcome, runs)
	}
	for _, r := range server.Requests() {
		if r.Case != "" {
			t.Errorf("a ticket's request was sent (%s for %q) although the preflight failed", r.Role, r.Case)
		}
	}
}
