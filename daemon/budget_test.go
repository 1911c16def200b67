package daemon

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestNeedsBudgetThenResumed: the scripted maker (a test double) reads files call after
// call, so each call's prompt, and cost, is larger than the last. With a per-attempt dollar
// budget that its next call would cross, the attempt stops before the cap, the ticket waits
// as needs_budget with its partial work kept, unspent; money added (what ticketctl budget
// does) puts it back, and the next night fixes it.
func TestNeedsBudgetThenResumed(t *testing.T) {
	t.Parallel()
	realNight(t)
	f := newFixture(t, 1)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	cfg.Budget.MaxDollars = budgetCapForTest
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	ctx := context.Background()
	tk, err := n.store.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := n.store.ModelCalls(ctx, 1)
	spent, makers := 0.0, 0
	for _, c := range calls {
		cost := 0.0
		if c.CostUSD != nil {
			cost = *c.CostUSD
		}
		spent += cost
		if c.Role == "maker" {
			makers++
			t.Logf("maker call %d: prompt %d tokens, $%.4f", makers, c.PromptTokens, cost)
		}
	}
	if tk.State != store.StateNeedsBudget || tk.Attempts != 0 || !strings.Contains(tk.Reason, "projected") {
		t.Fatalf("ticket %s attempts %d (%s); want needs_budget, unspent, stopped on the projection", tk.State, tk.Attempts, tk.Reason)
	}
	if spent > cfg.Budget.MaxDollars {
		t.Errorf("spent $%.4f of a $%.4f cap: the projection should stop before it", spent, cfg.Budget.MaxDollars)
	}
	t.Logf("stopped after %d maker calls, $%.4f spent of $%.4f: %s", makers, spent, cfg.Budget.MaxDollars, tk.Reason)
	// The report names the branch the partial work is really on (once it named the ticket's
	// fix branch, which holds nothing of it).
	report, err := n.store.Artifact(ctx, 1, "report.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("partial work is on `([^`]+)`").FindSubmatch(report)
	if m == nil {
		t.Fatalf("report.md does not say where the partial work is:\n%s", report)
	}
	if diff := git(t, f.repo, "diff", "--stat", "main", string(m[1])); !strings.Contains(diff, "rule_00.py") {
		t.Errorf("report.md says the partial work is on %s, which differs from main by %q", m[1], diff)
	}

	if err := n.store.AddBudget(ctx, 1, 1, "operator"); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Config: cfg, Store: n.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PromptLayout: pipeline.LayoutCacheFriendly}
	if _, err := d.RunNight(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	tk, _ = n.store.Get(ctx, 1)
	if tk.State != store.StateDone || tk.Attempts != 1 {
		t.Errorf("after ticketctl budget and a night: %s attempts %d (%s); want done on its first charged attempt", tk.State, tk.Attempts, tk.Reason)
	}
	// The resumed attempt started from the kept partial work, not from scratch.
	evs, _ := n.store.Events(ctx, 1)
	resumed := false
	for _, e := range evs {
		resumed = resumed || e.Kind == store.EventNote && strings.HasPrefix(e.Reason, resumedNote+string(m[1])) && strings.Contains(e.Reason, "rule_00.py")
	}
	if !resumed {
		t.Errorf("no note says the attempt resumed from %s; events: %+v", m[1], evs)
	}
	if diff := git(t, f.repo, "diff", "--stat", "main", tk.Branch); !strings.Contains(diff, "rule_00.py") {
		t.Errorf("the fix on %s differs from main by %q; want rule_00.py", tk.Branch, diff)
	}
}

func TestResumeBranch(t *testing.T) {
	ev := func(k store.EventKind) store.Event { return store.Event{Kind: k} }
	kept := store.Ticket{Branch: "ticketd/1-attempt-1"}
	for _, tt := range []struct {
		name string
		evs  []store.Event
		t    store.Ticket
		want string
	}{
		{"money added, then claimed", []store.Event{ev(store.EventClaimed), ev(store.EventNeedsBudget), ev(store.EventBudgetAdded), ev(store.EventNote), ev(store.EventClaimed)}, kept, kept.Branch},
		{"a retry after a failed attempt", []store.Event{ev(store.EventClaimed), ev(store.EventRetry), ev(store.EventClaimed)}, kept, ""},
		{"money added long ago", []store.Event{ev(store.EventBudgetAdded), ev(store.EventClaimed), ev(store.EventRetry), ev(store.EventClaimed)}, kept, ""},
		{"no kept work", []store.Event{ev(store.EventBudgetAdded), ev(store.EventClaimed)}, store.Ticket{Branch: "ticketd/1-fix"}, ""},
		{"never claimed", []store.Event{ev(store.EventEnqueued)}, kept, ""},
	} {
		if got := resumeBranch(tt.evs, tt.t); got != tt.want {
			t.Errorf("%s: resumeBranch = %q; want %q", tt.name, got, tt.want)
		}
	}
}

// budgetCapForTest lies between what the scripted double's triage and first two maker calls
// cost ($0.0455 measured) and what its third call would add (about $0.025): see the log.
const budgetCapForTest = 0.05
