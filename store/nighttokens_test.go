package store

import (
	"fmt"
	"testing"
)

// TestListBeforeID: pages of a newest-first list, keyed by the last id shown, cover every
// ticket once, with and without a state filter (the open-tickets index path included).
func TestListBeforeID(t *testing.T) { forEachEngine(t, testListBeforeID) }

func testListBeforeID(t *testing.T, e engine) {
	b := e.setup(t)
	for i := range 7 {
		b.enqueue(t, fmt.Sprint(i))
	}
	for _, states := range [][]State{nil, {StateQueued}} {
		var seen []int64
		before := int64(0)
		for range 10 {
			page, err := b.s.List(b.ctx, Filter{States: states, BeforeID: before, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, s := range page {
				seen = append(seen, s.ID)
			}
			before = page[len(page)-1].ID
		}
		want := []int64{7, 6, 5, 4, 3, 2, 1}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("states %v: pages gave %v, want %v", states, seen, want)
		}
	}
}

// TestNightTokens sums each night's calls apart; a night without calls is absent.
func TestNightTokens(t *testing.T) { forEachEngine(t, testNightTokens) }

func testNightTokens(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "a")
	r1, _ := b.s.StartRun(b.ctx, "cron")
	r2, _ := b.s.StartRun(b.ctx, "cron")
	r3, _ := b.s.StartRun(b.ctx, "cron")
	for _, c := range []ModelCall{{RunID: r1, PromptTokens: 1000, CachedTokens: 250, CompletionTokens: 10},
		{RunID: r1, PromptTokens: 3000, CachedTokens: 2750, CompletionTokens: 20}, {RunID: r2, PromptTokens: 500}, {PromptTokens: 9999}} {
		c.TicketID, c.Attempt, c.Role, c.Model = id, 1, "maker", "m"
		if _, err := b.s.RecordModelCall(b.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.s.NightTokens(b.ctx, []int64{r1, r2, r3})
	if err != nil {
		t.Fatal(err)
	}
	if n := got[r1]; n.Calls != 2 || n.PromptTokens != 4000 || n.CachedTokens != 3000 || n.CompletionTokens != 30 || n.CachedShare() != 0.75 {
		t.Errorf("night %d: %+v (share %v)", r1, n, n.CachedShare())
	}
	if n := got[r2]; n.Calls != 1 || n.CachedShare() != 0 {
		t.Errorf("night %d: %+v", r2, n)
	}
	if _, ok := got[r3]; ok || len(got) != 2 {
		t.Errorf("nights without calls are listed: %+v", got)
	}
	if got, err := b.s.NightTokens(b.ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("no nights: %v, %v", got, err)
	}
}
