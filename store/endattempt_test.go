package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

func TestEndAttempt(t *testing.T) { forEachEngine(t, testEndAttempt) }

// testEndAttempt: each ending kind writes its transition, its event and the attempt's
// artifacts together; a stale token writes none of them.
func testEndAttempt(t *testing.T, e engine) {
	files := []ArtifactFile{{Path: "report.md", Content: []byte("# report\n")}, {Path: "attempt-1/patch", Content: []byte("diff\n")}}
	tests := []struct {
		name     string
		end      Ending
		cancel   bool // request cancellation before the ending
		state    State
		attempts int
		event    EventKind
		reason   string // in the ticket's reason
	}{
		{"complete", Ending{Kind: EndComplete, Result: Result{Branch: "ticketd/1", Summary: "fixed"}}, false, StateDone, 1, EventCompleted, ""},
		{"fail fix retries", Ending{Kind: EndFail, Failure: Failure{Kind: FailFix, Reason: "tests fail"}}, false, StateQueued, 1, EventRetry, "fix: tests fail"},
		{"fail final escalates", Ending{Kind: EndFail, Failure: Failure{Kind: FailFix, Reason: "same patch", Final: true}}, false, StateEscalated, 1, EventEscalated, "fix: same patch"},
		{"fail transport releases", Ending{Kind: EndFail, Failure: Failure{Kind: FailTransport, Reason: "endpoint down"}}, false, StateQueued, 0, EventReleased, "transport: endpoint down"},
		{"ask", Ending{Kind: EndAsk, Asked: Asked{Question: "which file?", Branch: "ticketd/1-attempt-1"}}, false, StateNeedsInfo, 0, EventNeedsInfo, "needs info: which file?"},
		{"need budget", Ending{Kind: EndNeedBudget, Reason: "spent $2", Branch: "ticketd/1-attempt-1"}, false, StateNeedsBudget, 0, EventNeedsBudget, "needs budget: spent $2"},
		{"park", Ending{Kind: EndPark, Reason: "parked: rate limited", Until: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}, false, StateParked, 0, EventParked, "parked: rate limited"},
		{"finish cancelled", Ending{Kind: EndCancelled, Reason: "stopped"}, true, StateCancelled, 1, EventCancelled, "stopped"},
		{"ask after cancel", Ending{Kind: EndAsk, Asked: Asked{Question: "which file?"}}, true, StateCancelled, 1, EventCancelled, "the maker had asked"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := e.setup(t)
			id := b.enqueue(t, "1")
			l := b.claim(t, "w1")
			if tc.cancel {
				if _, err := b.s.RequestCancel(b.ctx, id, "op", "not wanted"); err != nil {
					t.Fatal(err)
				}
			}
			end := tc.end
			end.ID, end.Artifacts = id, files

			// A stale token (an older lease's) writes nothing: not the state, not the event,
			// not the artifacts.
			stale := end
			stale.Token = l.Token - 1
			if _, err := b.s.EndAttempt(b.ctx, stale); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("EndAttempt with a stale token = %v, want ErrLeaseLost", err)
			}
			assertUntouched(t, b, id)

			end.Token = l.Token
			to, err := b.s.EndAttempt(b.ctx, end)
			if err != nil || to != tc.state {
				t.Fatalf("EndAttempt = %s, %v; want %s", to, err, tc.state)
			}
			tk, err := b.s.Get(b.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if tk.State != tc.state || tk.Attempts != tc.attempts || !strings.Contains(tk.Reason, tc.reason) {
				t.Errorf("ticket = %s attempts %d reason %q; want %s attempts %d reason with %q", tk.State, tk.Attempts, tk.Reason, tc.state, tc.attempts, tc.reason)
			}
			kinds := eventKinds(t, b, id)
			if last := kinds[len(kinds)-1]; last != string(tc.event) {
				t.Errorf("events = %v, want the last %s", kinds, tc.event)
			}
			for _, f := range files {
				got, err := b.s.Artifact(b.ctx, id, f.Path)
				if err != nil || string(got) != string(f.Content) {
					t.Errorf("artifact %s = %q, %v; want %q", f.Path, got, err, f.Content)
				}
			}
			// The lease ended with the write: the same token now writes nothing more.
			again := end
			again.Artifacts = []ArtifactFile{{Path: "late", Content: []byte("x")}}
			if _, err := b.s.EndAttempt(b.ctx, again); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("EndAttempt again = %v, want ErrLeaseLost", err)
			}
			if _, err := b.s.Artifact(b.ctx, id, "late"); !errors.Is(err, ErrNoArtifact) {
				t.Errorf("artifact of a lost lease = %v, want ErrNoArtifact", err)
			}
		})
	}
}

// assertUntouched checks ticket id is still running its first attempt, with only its
// claim's events and no artifacts.
func assertUntouched(t *testing.T, b bundle, id int64) {
	t.Helper()
	tk, err := b.s.Get(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != StateRunning || tk.Attempts != 1 {
		t.Errorf("ticket = %s attempts %d, want running attempts 1: nothing written", tk.State, tk.Attempts)
	}
	kinds := eventKinds(t, b, id)
	for _, k := range kinds {
		switch EventKind(k) {
		case EventEnqueued, EventClaimed, EventCancelRequested:
		default:
			t.Errorf("events = %v: the failed ending wrote %s", kinds, k)
		}
	}
	if as, err := b.s.Artifacts(b.ctx, id); err != nil || len(as) != 0 {
		t.Errorf("artifacts = %v, %v; want none", as, err)
	}
}

func TestEndAttemptIsOneTransaction(t *testing.T) {
	forEachEngine(t, testEndAttemptIsOneTransaction)
}

// testEndAttemptIsOneTransaction: an artifact the database refuses after the transition
// took leaves the ticket running, with neither the transition's event nor the artifacts
// before it; the same ending then lands whole.
func testEndAttemptIsOneTransaction(t *testing.T, e engine) {
	for _, kind := range []EndKind{EndComplete, EndFail, EndAsk, EndNeedBudget, EndPark, EndCancelled} {
		t.Run(string(kind), func(t *testing.T) {
			b := e.setup(t)
			id := b.enqueue(t, "1")
			l := b.claim(t, "w1")
			end := Ending{ID: id, Token: l.Token, Kind: kind, Reason: "why", Failure: Failure{Kind: FailFix, Reason: "why"},
				Asked: Asked{Question: "which?"}, Until: b.clock.Now().Add(time.Hour),
				Artifacts: []ArtifactFile{{Path: "report.md", Content: []byte("r")}, {Path: "attempt-1/patch", Content: []byte("refused")}}}
			real := b.s.eng
			b.s.eng = refusingEngine{Engine: real, query: b.s.q.SaveArtifact, content: "refused"}
			_, err := b.s.EndAttempt(b.ctx, end)
			b.s.eng = real
			if err == nil || !strings.Contains(err.Error(), "attempt-1/patch") {
				t.Fatalf("EndAttempt with a refused artifact = %v, want its error naming the artifact", err)
			}
			assertUntouched(t, b, id)
			if _, err := b.s.EndAttempt(b.ctx, end); err != nil {
				t.Fatalf("EndAttempt after the refusal: %v", err)
			}
			if as, err := b.s.Artifacts(b.ctx, id); err != nil || len(as) != 2 {
				t.Errorf("artifacts = %v, %v; want both", as, err)
			}
		})
	}
}

// refusingEngine is a failing driver: its transactions refuse query when it stores content,
// as a database refusing one row would.
type refusingEngine struct {
	storedriver.Engine
	query, content string
}

func (r refusingEngine) Write(ctx context.Context, op string, fn func(ctx context.Context, tx storedriver.Tx) error) error {
	return r.Engine.Write(ctx, op, func(ctx context.Context, tx storedriver.Tx) error {
		return fn(ctx, refusingTx{Tx: tx, r: r})
	})
}

type refusingTx struct {
	storedriver.Tx
	r refusingEngine
}

func (t refusingTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if query == t.r.query {
		for _, a := range args {
			if c, ok := a.([]byte); ok && string(c) == t.r.content {
				return 0, errors.New("refused: injected constraint failure")
			}
		}
	}
	return t.Tx.Exec(ctx, query, args...)
}
