package store

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

func TestFileKey(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"src/app/calc.py", "calc.py"},
		{"/home/someone/proj/src/app/calc.py", "calc.py"},
		{"tests/test_calc.py::TestCalc::test_div", "test_calc.py"},
		{`C:\proj\app\calc.py`, "calc.py"},
		{"calc.py", "calc.py"},
		{"", ""},
		{"   ", ""},
		{"..", ""},
		{"app/", "app"},
	} {
		if got := FileKey(tt.in); got != tt.want {
			t.Errorf("FileKey(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestClaimPassesOverOverlap: a queued ticket whose predicted files overlap a running
// ticket's of the same repository waits while other work is ready, and runs when nothing
// else is (a worker never idles for a prediction), its claim saying why.
func TestClaimPassesOverOverlap(t *testing.T) { forEachEngine(t, testClaimPassesOverOverlap) }

func testClaimPassesOverOverlap(t *testing.T, e engine) {
	b := e.setup(t)
	prio := func(p int) func(*NewTicket) { return func(n *NewTicket) { n.Priority = p } }
	a := b.enqueue(t, "a", prio(9))
	bb := b.enqueue(t, "b", prio(8)) // next by priority, but overlaps a
	other := b.enqueue(t, "other-repo", prio(7), func(n *NewTicket) { n.Repo = "elsewhere" })
	c := b.enqueue(t, "c", prio(1))
	predict := func(id int64, source string, files ...string) {
		t.Helper()
		if err := b.s.PredictFiles(b.ctx, id, source, files); err != nil {
			t.Fatal(err)
		}
	}
	predict(a, PredictedByIssue, "/home/reporter/proj/src/app/calc.py", "src/app/calc.py")
	predict(bb, PredictedByTriage, "src/app/calc.py::test_div", "app/util.py")
	predict(other, PredictedByTriage, "calc.py") // same name, another repository: no overlap
	predict(c, PredictedByTriage, "app/other.py")
	if p, err := b.s.PredictedFiles(b.ctx, bb); err != nil || !slices.Equal(p.Files, []string{"calc.py", "util.py"}) || p.Source != PredictedByTriage {
		t.Fatalf("PredictedFiles(b) = %+v, %v; want calc.py, util.py by triage", p, err)
	}

	var order []int64
	for _, w := range []string{"w1", "w2", "w3", "w4"} {
		order = append(order, b.claim(t, w).Ticket.ID)
	}
	if want := []int64{a, other, c, bb}; !slices.Equal(order, want) {
		t.Fatalf("claim order %v; want %v: b waits while a runs and other work is ready", order, want)
	}
	evs, err := b.s.Events(b.ctx, bb)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Kind != EventClaimed || last.Reason != overlapReason {
		t.Errorf("b's claim event = %s %q; want claimed %q", last.Kind, last.Reason, overlapReason)
	}
	evs, _ = b.s.Events(b.ctx, c)
	if last := evs[len(evs)-1]; last.Reason != "" {
		t.Errorf("c's claim event reason %q; want none (it overlapped nothing)", last.Reason)
	}
}

// TestClaimOverlapEnds: once the running ticket ends, the ticket it overlapped is claimed
// in its turn; a cleared prediction overlaps nothing.
func TestClaimOverlapEnds(t *testing.T) { forEachEngine(t, testClaimOverlapEnds) }

func testClaimOverlapEnds(t *testing.T, e engine) {
	b := e.setup(t)
	prio := func(p int) func(*NewTicket) { return func(n *NewTicket) { n.Priority = p } }
	a := b.enqueue(t, "a", prio(9))
	bb := b.enqueue(t, "b", prio(8))
	b.enqueue(t, "c", prio(1))
	for _, id := range []int64{a, bb} {
		if err := b.s.PredictFiles(b.ctx, id, PredictedByTriage, []string{"calc.py"}); err != nil {
			t.Fatal(err)
		}
	}
	la := b.claim(t, "w1")
	if err := b.s.Complete(b.ctx, la.Ticket.ID, la.Token, Result{Branch: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := b.claim(t, "w2").Ticket.ID; got != bb {
		t.Fatalf("after a ended, claimed %d; want b (%d)", got, bb)
	}
	if err := b.s.PredictFiles(b.ctx, bb, PredictedByTriage, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := b.s.PredictedFiles(b.ctx, bb); len(p.Files) != 0 {
		t.Errorf("cleared prediction still holds %v", p.Files)
	}
}

// TestClaimOverlapConcurrent: workers claiming at the same moment (on PostgreSQL, in
// transactions side by side) never take two overlapping tickets while other work is
// ready. Each round: a and b overlap, c and d do not; three claims at once must take one
// of a, b and both of c, d.
func TestClaimOverlapConcurrent(t *testing.T) { forEachEngine(t, testClaimOverlapConcurrent) }

func testClaimOverlapConcurrent(t *testing.T, e engine) {
	b := e.setup(t)
	for round := range 8 {
		ext := func(s string) string { return s + "-" + string(rune('0'+round)) }
		ids := map[string]int64{}
		for _, name := range []string{"a", "b", "c", "d"} {
			ids[name] = b.enqueue(t, ext(name))
		}
		for _, name := range []string{"a", "b"} {
			if err := b.s.PredictFiles(b.ctx, ids[name], PredictedByIssue, []string{"src/calc_" + string(rune('0'+round)) + ".py"}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		var got []Lease
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, err := b.s.Claim(b.ctx, "w"+string(rune('0'+w)), time.Minute)
				if err != nil {
					t.Errorf("round %d: claim: %v", round, err)
					return
				}
				mu.Lock()
				got = append(got, l)
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		var taken []int64
		for _, l := range got {
			taken = append(taken, l.Ticket.ID)
		}
		if slices.Contains(taken, ids["a"]) && slices.Contains(taken, ids["b"]) {
			t.Fatalf("round %d: claimed %v: a (%d) and b (%d) overlap and run together while c or d waits", round, taken, ids["a"], ids["b"])
		}
		for _, l := range got {
			if err := b.s.Complete(b.ctx, l.Ticket.ID, l.Token, Result{Branch: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		// Drain what is left so the next round starts from an empty queue.
		for {
			l, err := b.s.Claim(b.ctx, "drain", time.Minute)
			if err != nil {
				break
			}
			if err := b.s.Complete(b.ctx, l.Ticket.ID, l.Token, Result{Branch: "x"}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPredictedFlag: on PostgreSQL a claim reads whether a ticket has predicted files from
// its row (tickets.predicted, migration 025), kept by triggers on predicted_files: set by a
// prediction, cleared by an empty one, set by ticketctl migrate's copy.
func TestPredictedFlag(t *testing.T) { forEachEngine(t, testPredictedFlag) }

func testPredictedFlag(t *testing.T, e engine) {
	if e.name != "postgres" {
		t.Skip("the flag is PostgreSQL's: SQLite's claim probes predicted_files")
	}
	b := e.setup(t)
	flag := func(s *Store, id int64) bool {
		t.Helper()
		var got bool
		err := s.write(b.ctx, "read the flag", func(ctx context.Context, tx storedriver.Tx) error {
			return tx.QueryRow(ctx, "SELECT predicted FROM tickets WHERE id = "+strconv.FormatInt(id, 10)).Scan(&got)
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, other := b.enqueue(t, "a"), b.enqueue(t, "other")
	for _, step := range []struct {
		files []string
		want  bool
	}{
		{[]string{"app/calc.py", "app/util.py"}, true},
		{[]string{"app/other.py"}, true}, // replaced: cleared, then set again
		{nil, false},
		{[]string{"app/calc.py"}, true},
	} {
		must(t, b.s.PredictFiles(b.ctx, a, PredictedByTriage, step.files))
		if got := flag(b.s, a); got != step.want {
			t.Errorf("after predicting %v: predicted = %v; want %v", step.files, got, step.want)
		}
		if flag(b.s, other) {
			t.Errorf("after predicting %v for ticket %d: ticket %d predicted too", step.files, a, other)
		}
	}

	src := engine{"sqlite"}.setup(t)
	copied := src.enqueue(t, "copied")
	src.enqueue(t, "plain")
	must(t, src.s.PredictFiles(src.ctx, copied, PredictedByIssue, []string{"app/calc.py"}))
	dst := e.setup(t)
	if _, err := src.s.CopyTo(src.ctx, dst.s); err != nil {
		t.Fatalf("CopyTo: %v", err)
	}
	if !flag(dst.s, copied) || flag(dst.s, copied+1) {
		t.Errorf("after the copy: predicted = %v, %v; want true for the ticket with predicted files only", flag(dst.s, copied), flag(dst.s, copied+1))
	}
}
