package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestTransportReleasesAndPark(t *testing.T) { forEachEngine(t, testTransportReleasesAndPark) }

func testTransportReleasesAndPark(t *testing.T, e engine) {
	b := e.setup(t)
	old, err := b.s.StartRun(b.ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	id := b.enqueue(t, "1")
	// a release in an earlier night does not count tonight
	l := b.claim(t, "w1")
	if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailTransport, Reason: "endpoint down"}); err != nil {
		t.Fatal(err)
	}
	if err := b.s.FinishRun(b.ctx, old); err != nil {
		t.Fatal(err)
	}
	run, _ := b.s.StartRun(b.ctx, "once")
	for i := range 2 {
		b.clock.Advance(time.Minute)
		l = b.claim(t, "w1")
		if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailTransport, Reason: "endpoint down"}); err != nil {
			t.Fatal(err)
		}
		if n, err := b.s.TransportReleases(b.ctx, id, run); err != nil || n != i+1 {
			t.Fatalf("TransportReleases after %d = %d, %v", i+1, n, err)
		}
	}
	// a shutdown release is not a transport one
	b.clock.Advance(time.Minute)
	l = b.claim(t, "w1")
	if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailShutdown, Reason: "window"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.s.TransportReleases(b.ctx, id, run); n != 2 {
		t.Errorf("TransportReleases = %d after a shutdown release, want 2", n)
	}

	b.clock.Advance(time.Minute)
	l = b.claim(t, "w1")
	until := b.clock.Now().Add(20 * time.Hour)
	to, err := b.s.Park(b.ctx, id, l.Token, until, "parked: released 2 times tonight for transport faults")
	if err != nil || to != StateParked {
		t.Fatalf("Park = %s, %v", to, err)
	}
	tk, _ := b.s.Get(b.ctx, id)
	if tk.State != StateParked || !tk.RunAfter.Equal(until) || tk.Attempts != 0 || !strings.Contains(tk.Reason, "parked") {
		t.Errorf("ticket after park = %s run_after %s attempts %d reason %q; want parked until %s, no attempt burnt", tk.State, tk.RunAfter, tk.Attempts, tk.Reason, until)
	}
	if due, err := b.s.NextDue(b.ctx); err != nil || due.Parked != 1 || due.Queued != 0 || due.Running != 0 {
		t.Errorf("NextDue = %+v, %v; want one parked, none queued or running", due, err)
	}
	kinds := eventKinds(t, b, id)
	if kinds[len(kinds)-1] != "parked" {
		t.Errorf("events = %v, want the last to be parked", kinds)
	}
	if _, err := b.s.Claim(b.ctx, "w2", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Errorf("claim of a parked ticket tonight = %v, want ErrNoTicket", err)
	}
	if _, err := b.s.Park(b.ctx, id, l.Token, until, "again"); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Park with a stale token = %v, want ErrLeaseLost", err)
	}
}

func TestModelCallEstimatesAndEndpointEvents(t *testing.T) {
	forEachEngine(t, testModelCallEstimatesAndEndpointEvents)
}

func testModelCallEstimatesAndEndpointEvents(t *testing.T, e engine) {
	b := e.setup(t)
	run, _ := b.s.StartRun(b.ctx, "once")
	id := b.enqueue(t, "1")
	calls := []ModelCall{
		{TicketID: id, RunID: run, Role: "maker", PromptTokens: 100, CostUSD: ptr(0.01), CostSource: "price_table", PriceCostUSD: ptr(0.01)},
		{TicketID: id, RunID: run, Role: "maker", PromptTokens: 900, UsageEstimated: true, CostUSD: ptr(0.02), CostSource: "estimate", PriceCostUSD: ptr(0.02)},
		{TicketID: id, RunID: run, Role: "judge", PromptTokens: 50, CostUSD: ptr(0.003), CostSource: "provider", PriceCostUSD: ptr(0.004), ProviderCostUSD: ptr(0.003)},
	}
	for _, c := range calls {
		if _, err := b.s.RecordModelCall(b.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.s.ModelCalls(b.ctx, id)
	if err != nil || len(got) != 3 {
		t.Fatalf("ModelCalls = %v, %v", got, err)
	}
	if !got[1].UsageEstimated || got[1].CostSource != "estimate" || got[0].UsageEstimated ||
		got[2].ProviderCostUSD == nil || *got[2].ProviderCostUSD != 0.003 || *got[2].PriceCostUSD != 0.004 {
		t.Errorf("round trip = %+v", got)
	}
	u, err := b.s.UsageEstimates(b.ctx, run)
	if err != nil || u.Calls != 3 || u.EstimatedCalls != 1 || u.EstimatedUSD != 0.02 || u.ProviderUSD != 0.003 {
		t.Errorf("UsageEstimates = %+v, %v; want 3 calls, 1 estimated ($0.02), provider $0.003", u, err)
	}
	since := b.clock.Now()
	if err := b.s.RecordEndpointEvent(b.ctx, EndpointEvent{RunID: run, Endpoint: "local", BaseURL: "http://x/v1", Down: true, Since: since, LastError: "network: connection refused"}); err != nil {
		t.Fatal(err)
	}
	evs, err := b.s.EndpointEvents(b.ctx, run)
	if err != nil || len(evs) != 1 || !evs[0].Down || !evs[0].Since.Equal(since) || evs[0].LastError != "network: connection refused" {
		t.Errorf("EndpointEvents = %+v, %v", evs, err)
	}
}

// TestUnpark: a parked ticket comes back only when a night unparks it (after its date, or
// at once under `once`), or when an operator requeues or cancels it.
func TestUnpark(t *testing.T) { forEachEngine(t, testUnpark) }

func testUnpark(t *testing.T, e engine) {
	b := e.setup(t)
	n := 0
	park := func(t *testing.T, until time.Time) int64 {
		t.Helper()
		n++
		id := b.enqueue(t, fmt.Sprint(n))
		l := b.claim(t, "w1")
		if l.Ticket.ID != id {
			t.Fatalf("claimed %d, want %d", l.Ticket.ID, id)
		}
		if _, err := b.s.Park(b.ctx, id, l.Token, until, "parked: endpoint"); err != nil {
			t.Fatal(err)
		}
		return id
	}
	later := park(t, b.clock.Now().Add(10*time.Hour))
	soon := park(t, b.clock.Now().Add(time.Minute))
	b.clock.Advance(2 * time.Minute)
	if n, err := b.s.Unpark(b.ctx, b.clock.Now(), "ticketd"); err != nil || n != 1 {
		t.Fatalf("Unpark(now) = %d, %v; want the one whose date passed", n, err)
	}
	for _, c := range []struct {
		id   int64
		want State
	}{{soon, StateQueued}, {later, StateParked}} {
		if tk, _ := b.s.Get(b.ctx, c.id); tk.State != c.want {
			t.Errorf("ticket %d = %s, want %s", c.id, tk.State, c.want)
		}
	}
	if kinds := eventKinds(t, b, soon); kinds[len(kinds)-1] != "unparked" {
		t.Errorf("events = %v, want unparked last", kinds)
	}
	if n, err := b.s.Unpark(b.ctx, time.Time{}, "ticketd"); err != nil || n != 1 {
		t.Errorf("Unpark(all) = %d, %v; want 1", n, err)
	}

	// requeue unparks at once, keeping the counts; cancel ends a parked ticket
	b.claim(t, "w1") // soon and later are queued again: keep them out of the way
	b.claim(t, "w1")
	third := park(t, b.clock.Now().Add(10*time.Hour))
	if err := b.s.Requeue(b.ctx, third, "op", false); err != nil {
		t.Fatalf("requeue parked = %v, want it unparked", err)
	}
	if tk, _ := b.s.Get(b.ctx, third); tk.State != StateQueued || !tk.RunAfter.Equal(b.clock.Now()) || tk.Attempts != 0 {
		t.Errorf("after requeue = %s run_after %s attempts %d; want queued now", tk.State, tk.RunAfter, tk.Attempts)
	}
	b.claim(t, "w1") // third
	fourth := park(t, b.clock.Now().Add(10*time.Hour))
	if st, err := b.s.RequestCancel(b.ctx, fourth, "op", "not wanted"); err != nil || st != StateCancelled {
		t.Errorf("cancel parked = %s, %v; want cancelled", st, err)
	}
}

// TestNightOutcomes: a night's outcome and error are kept, and the totals per outcome say
// when the last night of each kind ended.
func TestNightOutcomes(t *testing.T) { forEachEngine(t, testNightOutcomes) }

func testNightOutcomes(t *testing.T, e engine) {
	b := e.setup(t)
	for _, c := range []struct {
		outcome Outcome
		err     string
	}{{OutcomeOK, ""}, {OutcomeFailed, "preflight: HTTP 400: Unrecognized request argument supplied: prompt_cache_key"}, {OutcomeFailed, "no repository"}} {
		id, err := b.s.StartRun(b.ctx, "once")
		if err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Minute)
		if err := b.s.EndRun(b.ctx, id, c.outcome, c.err); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.s.EndRun(b.ctx, 1, "bogus", ""); err == nil {
		t.Error("EndRun with an unknown outcome: want an error")
	}
	open, _ := b.s.StartRun(b.ctx, "cron")
	runs, err := b.s.Runs(b.ctx, 0)
	if err != nil || len(runs) != 4 {
		t.Fatalf("Runs = %v, %v", runs, err)
	}
	if runs[0].ID != open || runs[0].Outcome != "" || runs[1].Outcome != OutcomeFailed || runs[1].Error != "no repository" || runs[3].Outcome != OutcomeOK {
		t.Errorf("runs = %+v", runs)
	}
	tot, err := b.s.NightTotals(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[Outcome]NightTotal{}
	for _, n := range tot {
		got[n.Outcome] = n
	}
	if len(tot) != len(Outcomes) || got[OutcomeOK].Nights != 1 || got[OutcomeFailed].Nights != 2 || got[OutcomeStopped].Nights != 0 ||
		!got[OutcomeFailed].LastEnd.Equal(runs[1].EndedAt) || !got[OutcomeFailed].LastEnd.After(got[OutcomeOK].LastEnd) {
		t.Errorf("NightTotals = %+v", tot)
	}
}

// TestAbandonedCallsMakeCostUnknown: a model call abandoned before its answer keeps its
// estimated cost but marks its completion unknown, and every total that includes it (the
// ticket's summary, the night's stats, the usage estimates) says its cost is not whole.
func TestAbandonedCallsMakeCostUnknown(t *testing.T) {
	forEachEngine(t, testAbandonedCallsMakeCostUnknown)
}

func testAbandonedCallsMakeCostUnknown(t *testing.T, e engine) {
	b := e.setup(t)
	run, err := b.s.StartRun(b.ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	whole := b.enqueue(t, "whole")
	cut := b.enqueue(t, "cut")
	for _, c := range []ModelCall{
		{TicketID: whole, RunID: run, Attempt: 1, Role: "maker", PromptTokens: 100, CompletionTokens: 10, CostUSD: ptr(0.01), CostSource: "price_table"},
		{TicketID: cut, RunID: run, Attempt: 1, Role: "maker", PromptTokens: 900, CostUSD: ptr(0.02), CostSource: "estimate",
			UsageEstimated: true, CompletionUnknown: true, ErrorClass: "timeout", Error: "client time-out"},
	} {
		if _, err := b.s.RecordModelCall(b.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := b.s.ModelCalls(b.ctx, cut); err != nil || len(got) != 1 || !got[0].CompletionUnknown || !got[0].UsageEstimated ||
		got[0].CostUSD == nil || *got[0].CostUSD != 0.02 {
		t.Errorf("ModelCalls(cut) = %+v, %v; want the estimate kept and the completion unknown", got, err)
	}
	if got, err := b.s.ModelCalls(b.ctx, whole); err != nil || len(got) != 1 || got[0].CompletionUnknown {
		t.Errorf("ModelCalls(whole) = %+v, %v; want a known completion", got, err)
	}
	list, err := b.s.List(b.ctx, Filter{})
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	for _, sm := range list {
		if want := sm.ID == cut; sm.CostUnknown != want || sm.CostEstimated != want {
			t.Errorf("summary of %d: cost unknown %v, estimated %v; want both %v", sm.ID, sm.CostUnknown, sm.CostEstimated, want)
		}
	}
	if err := b.s.FinishRun(b.ctx, run); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{0, run} {
		st, err := b.s.Stats(b.ctx, id)
		if err != nil || !st.CostUnknown || st.CostUSD < 0.0299 || st.CostUSD > 0.0301 {
			t.Errorf("Stats(%d) = cost %v unknown %v, %v; want $0.03 and unknown", id, st.CostUSD, st.CostUnknown, err)
		}
		u, err := b.s.UsageEstimates(b.ctx, id)
		if want := (UsageEstimates{Calls: 2, EstimatedCalls: 1, EstimatedUSD: 0.02, UnknownCalls: 1}); err != nil || u != want {
			t.Errorf("UsageEstimates(%d) = %+v, %v; want %+v", id, u, err, want)
		}
	}
}
