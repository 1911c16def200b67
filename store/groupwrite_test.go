package store

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/store/storedriver"
)

// TestGroupedEndings: endings committed in one group each land with their event; one whose
// lease is gone fails alone (ErrLeaseLost) and takes no other ending down with it.
func TestGroupedEndings(t *testing.T) { forEachEngine(t, testGroupedEndings) }

func testGroupedEndings(t *testing.T, e engine) {
	b := e.setup(t)
	for _, ext := range []string{"a", "b", "c"} {
		b.enqueue(t, ext)
	}
	la, lb, lc := b.claim(t, "w1"), b.claim(t, "w2"), b.claim(t, "w3")
	for _, tt := range []struct {
		name    string
		endings []Ending
		want    []error
	}{
		{"one lease gone", []Ending{
			{ID: la.Ticket.ID, Token: la.Token, Kind: EndComplete},
			{ID: lb.Ticket.ID, Token: lb.Token + 1, Kind: EndComplete}, // not its lease
			{ID: lc.Ticket.ID, Token: lc.Token, Kind: EndFail, Failure: Failure{Kind: FailShutdown, Reason: "stop"}},
		}, []error{nil, ErrLeaseLost, nil}},
		{"all good", []Ending{{ID: lb.Ticket.ID, Token: lb.Token, Kind: EndComplete}}, []error{nil}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reqs := make([]*groupReq, len(tt.endings))
			for i, en := range tt.endings {
				reqs[i] = &groupReq{done: make(chan groupAnswer, 1), fn: func(ctx context.Context, tx storedriver.Tx) error {
					_, err := b.s.endTx(ctx, tx, en)
					return err
				}}
			}
			// Queue them as concurrent callers would, then lead one group.
			b.s.group.waiting, b.s.group.leading = reqs, true
			b.s.runGroup(b.ctx, "end attempt")
			for i, r := range reqs {
				if a := <-r.done; !errors.Is(a.err, tt.want[i]) || (tt.want[i] == nil) != (a.err == nil) {
					t.Errorf("ending %d: %v; want %v", i, a.err, tt.want[i])
				}
			}
		})
	}
	for _, c := range []struct {
		id   int64
		want State
	}{{la.Ticket.ID, StateDone}, {lb.Ticket.ID, StateDone}, {lc.Ticket.ID, StateQueued}} {
		got, err := b.s.Get(b.ctx, c.id)
		if err != nil || got.State != c.want {
			t.Errorf("ticket %d: %s, %v; want %s", c.id, got.State, err, c.want)
		}
		evs, _ := b.s.Events(b.ctx, c.id)
		if n := len(evs); n != 3 {
			t.Errorf("ticket %d: %d events; want 3 (enqueued, claimed, its ending)", c.id, n)
		}
	}
}
