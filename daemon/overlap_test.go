package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestOverlappingTicketsTakeTurns: two issues that name the same file (and whose fixes,
// by the scripted maker, a test double, both edit it) and a third that does not, a night
// of two workers with real git and pytest. The two never run at once while the third
// waits: the second worker takes the third ticket first. Both fixes, made on one base and
// touching one file at different places, agree, and all three are done.
func TestOverlappingTicketsTakeTurns(t *testing.T) {
	t.Parallel()
	realNight(t)
	f := newFixture(t, 3)
	pricing := filepath.Join(f.repo, "shop", "pricing.py")
	buggy := "def tax(cents):\n    return cents + 1\n" + strings.Repeat("\n# (spacing)\n", 8) + "\n\ndef discount(cents):\n    return cents - 2\n"
	write(t, pricing, buggy)
	write(t, filepath.Join(f.repo, "tests", "test_pricing.py"),
		"from shop.pricing import discount, tax\n\n\ndef test_tax():\n    assert tax(100) == 100\n\n\ndef test_discount():\n    assert discount(100) == 99\n")
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "pricing")
	patchOf := func(from, to string) string {
		write(t, pricing, strings.Replace(buggy, from, to, 1))
		p := git(t, f.repo, "diff")
		git(t, f.repo, "checkout", "-q", ".")
		return p
	}
	issues := []struct{ title, body, from, to string }{
		{"Tax adds a cent to every order", "shop/pricing.py: tax(100) gives 101.", "return cents + 1", "return cents"},
		{"Discount takes two cents instead of one", "In shop/pricing.py discount(100) gives 98.", "return cents - 2", "return cents - 1"},
	}
	for i, is := range issues {
		write(t, filepath.Join(f.issues, []string{"00.md", "01.md"}[i]), "---\ntitle: "+is.title+"\nrepo: shop\nlabels: [bug]\n---\n"+is.body+"\n")
		f.cases[i] = scriptedmodel.Case{Match: is.title, Patch: patchOf(is.from, is.to)}
	}
	_, url := f.scripted(t, scriptedmodel.Options{})
	cfg := f.config(t, url, 2)
	cfg.Duplicates.Enabled = false
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	ctx := context.Background()

	for _, id := range []int64{1, 2} {
		p, err := n.store.PredictedFiles(ctx, id)
		if err != nil || len(p.Files) == 0 || p.Files[0] != "pricing.py" {
			t.Errorf("ticket %d's prediction %+v, %v; want pricing.py", id, p, err)
		}
	}
	runs := map[int64][2]int64{} // ticket -> its first run: claim's event id, end's event id
	claimed := map[int64]int64{}
	for _, id := range []int64{1, 2, 3} {
		tk, err := n.store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.State != store.StateDone {
			t.Errorf("ticket %d: %s (%s); want done", id, tk.State, tk.Reason)
		}
		evs, err := n.store.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var r [2]int64
		for _, e := range evs {
			switch {
			case e.Kind == store.EventClaimed && r[0] == 0:
				r[0] = e.ID
			case r[0] != 0 && r[1] == 0 && e.FromState == store.StateRunning && e.ToState != store.StateRunning:
				r[1] = e.ID
			}
		}
		runs[id], claimed[id] = r, r[0]
	}
	// Event ids follow the order the single writer committed them.
	a, b := runs[1], runs[2]
	later := max(a[0], b[0])
	together := a[0] < b[1] && b[0] < a[1]
	if together && claimed[3] > later {
		t.Errorf("tickets 1 %v and 2 %v ran at once while ticket 3 waited (claimed at %d)", a, b, claimed[3])
	}
	t.Logf("runs (claim, end event ids): 1 %v, 2 %v, 3 claimed at %d", a, b, claimed[3])
}
