package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSettleDead: a night whose process died is closed by the living, failed with
// ErrProcessEnded and with the cost its calls really had; the crash counts against a ticket
// only when its attempt was the only one in flight, and the one that reaches MaxRescues is
// escalated; with several attempts in flight no ticket is charged.
func TestSettleDead(t *testing.T) { forEachEngine(t, testSettleDead) }

func testSettleDead(t *testing.T, e engine) {
	tests := []struct {
		name       string
		inFlight   int
		maxRescues int
		deaths     int // nights that die with the same tickets in flight
		wantBlamed bool
		wantState  State // of the first ticket after the last death
		wantCrash  int
	}{
		{"one in flight is blamed", 1, 5, 1, true, StateRunning, 1},
		{"three in flight: the crash is the process's", 3, 5, 1, false, StateRunning, 0},
		{"three in flight at every kill escalate nobody", 3, 2, 4, false, StateRunning, 0},
		{"alone at the limit escalates", 1, 2, 2, true, StateEscalated, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := e.setup(t, func(o *Options) { o.Node = "vm"; o.MaxRescues = tc.maxRescues })
			var ids []int64
			for i := range tc.inFlight {
				ids = append(ids, b.enqueue(t, string(rune('a'+i))))
			}
			var last []DeadNight
			for d := range tc.deaths {
				run, _, err := b.s.JoinRun(b.ctx, "once", time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				if err := b.s.BeatRun(b.ctx, run, time.Minute); err != nil {
					t.Fatal(err)
				}
				for range tc.inFlight {
					l := b.claim(t, "w")
					cost := 0.01
					if _, err := b.s.RecordModelCall(b.ctx, ModelCall{TicketID: l.Ticket.ID, RunID: run, Role: "maker", CostUSD: &cost}); err != nil {
						t.Fatal(err)
					}
				}
				b.clock.Advance(10 * time.Minute) // the process is gone; its leases have expired
				last, err = b.s.SettleDead(b.ctx, DeadOwn)
				if err != nil {
					t.Fatal(err)
				}
				if len(last) != 1 || last[0].RunID != run {
					t.Fatalf("death %d: settled %+v; want run %d", d+1, last, run)
				}
				runs, _ := b.s.Runs(b.ctx, 1)
				r := runs[0]
				if r.Outcome != OutcomeFailed || !strings.Contains(r.Error, ErrProcessEnded.Error()) || r.EndedAt.IsZero() ||
					r.Worked != tc.inFlight || r.CostUSD < 0.0099*float64(tc.inFlight) {
					t.Errorf("death %d: night %+v; want failed (%v) with %d worked and their cost", d+1, r, ErrProcessEnded, tc.inFlight)
				}
				b.clock.Advance(time.Hour) // the next night does not join the dead one
			}
			if blamed := last[0].Blamed != 0; blamed != tc.wantBlamed || len(last[0].InFlight) != tc.inFlight {
				t.Errorf("settled %+v; want blamed %v with %d in flight", last[0], tc.wantBlamed, tc.inFlight)
			}
			got, _ := b.s.Get(b.ctx, ids[0])
			if got.State != tc.wantState || got.Crashes != tc.wantCrash || got.Attempts != 1 {
				t.Errorf("ticket %d: %s, %d crashes, %d attempts (%s); want %s, %d crashes, 1 attempt", got.ID, got.State, got.Crashes, got.Attempts, got.Reason, tc.wantState, tc.wantCrash)
			}
			deaths, err := b.s.RecentDeaths(b.ctx, "vm", 10)
			if err != nil || len(deaths) != tc.deaths {
				t.Errorf("recent deaths = %v, %v; want %d, all died", deaths, err, tc.deaths)
			}
			for _, d := range deaths {
				if !d {
					t.Errorf("recent deaths = %v; want all died", deaths)
				}
			}
		})
	}
}

// TestSettleDeadExpired: a node that sees another's lease on the night expire closes that
// node's part; its own part and a live node's are left alone, and no ticket is blamed.
func TestSettleDeadExpired(t *testing.T) { forEachEngine(t, testSettleDeadExpired) }

func testSettleDeadExpired(t *testing.T, e engine) {
	a := e.setup(t, func(o *Options) { o.Node = "vm-a" })
	open := func(node string) *Store {
		s, err := OpenLocation(a.ctx, a.loc, Options{Now: a.clock.Now, Node: node})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	dead, live := open("vm-dead"), open("vm-live")
	run, _, err := a.s.JoinRun(a.ctx, "cron", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{a.s, dead, live} {
		if _, _, err := s.JoinRun(a.ctx, "cron", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.BeatRun(a.ctx, run, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	id := a.enqueue(t, "x")
	if _, err := dead.Claim(a.ctx, "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	a.clock.Advance(20 * time.Second)
	if err := live.BeatRun(a.ctx, run, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	a.clock.Advance(20 * time.Second) // vm-dead's and vm-a's leases expired, vm-live's not
	got, err := a.s.SettleDead(a.ctx, DeadExpired)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Node != "vm-dead" || got[0].Blamed != 0 {
		t.Fatalf("settled %+v; want vm-dead's part alone, nobody blamed", got)
	}
	nodes, _ := a.s.RunNodes(a.ctx, run)
	for _, n := range nodes {
		if finished := !n.FinishedAt.IsZero(); finished != (n.Node == "vm-dead") {
			t.Errorf("node %s finished %v; want only vm-dead finished", n.Node, finished)
		}
	}
	runs, _ := a.s.Runs(a.ctx, 1)
	if runs[0].Outcome != OutcomeFailed || !strings.Contains(runs[0].Error, "vm-dead: failed: "+ErrProcessEnded.Error()) {
		t.Errorf("night %s (%s); want failed naming vm-dead", runs[0].Outcome, runs[0].Error)
	}
	if tk, _ := a.s.Get(a.ctx, id); tk.Crashes != 0 {
		t.Errorf("ticket blamed by another node's look: %d crashes", tk.Crashes)
	}
	// The live node ends well: the night stays failed for the dead one.
	if err := live.EndRun(a.ctx, run, OutcomeOK, ""); err != nil {
		t.Fatal(err)
	}
	if runs, _ := a.s.Runs(a.ctx, 1); runs[0].Outcome != OutcomeFailed {
		t.Errorf("after the live node ended ok: %s; want failed", runs[0].Outcome)
	}
	if _, err := a.s.SettleDead(a.ctx, DeadExpired); err != nil || errors.Is(err, ErrRunNotFound) {
		t.Errorf("second look: %v", err)
	}
}
