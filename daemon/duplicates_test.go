package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// traceback is the failure both issues paste, from two checkouts.
func traceback(home string) string {
	return fmt.Sprintf(`Traceback (most recent call last):
  File "%[1]s/shop/checkout.py", line 30, in total
    return surcharge_0(cents)
  File "%[1]s/shop/shop/rule_00.py", line 6, in surcharge_0
    return cents + 1
AssertionError: 101 != 100
`, home)
}

// TestDuplicateIssuesWorkedOnce: two issues of one repository with the same traceback, one
// night with real git and pytest: the first is worked and done, the second waits as its
// duplicate (no model call, no attempt) and ends done with the first's fix, its link
// visible; an issue of the same words in another repository is not linked.
func TestDuplicateIssuesWorkedOnce(t *testing.T) {
	t.Parallel()
	realNight(t)
	f := newFixture(t, 1)
	write(t, filepath.Join(f.issues, "00.md"), "---\ntitle: Surcharge rule 0 charges one cent too much\nrepo: shop\nlabels: [bug]\n---\n"+
		"An order of 1.00 with rule 0 shows 101 cents.\n\n"+traceback("/home/ann"))
	write(t, filepath.Join(f.issues, "01.md"), "---\ntitle: Checkout total is off by one\nrepo: shop\nlabels: [bug]\n---\n"+
		"Our checkout shows the wrong total:\n\n"+traceback(`C:\Users\bo\src`))
	_, url := f.scripted(t, scriptedmodel.Options{})
	n := runNight(t, f.config(t, url, 3), pipeline.LayoutCacheFriendly)
	ctx := context.Background()

	first, err := n.store.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	dup, err := n.store.Get(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if first.State != store.StateDone || first.Branch == "" {
		t.Fatalf("worked ticket: %s branch %q (%s); want done with a branch", first.State, first.Branch, first.Reason)
	}
	if dup.State != store.StateDone || dup.Branch != first.Branch || dup.Attempts != 0 {
		t.Errorf("duplicate: %s branch %q attempts %d (%s); want done with %q, never attempted", dup.State, dup.Branch, dup.Attempts, dup.Reason, first.Branch)
	}
	if !strings.Contains(dup.Reason, "closed with #1") {
		t.Errorf("duplicate's reason %q; want it to name #1", dup.Reason)
	}
	link, err := n.store.DuplicateOf(ctx, 2)
	if err != nil || link.Of != 1 || !strings.Contains(link.Reason, "rule_00.py:surcharge_0") {
		t.Errorf("link %+v, %v; want duplicate of 1 by the frame rule_00.py:surcharge_0", link, err)
	}
	calls, err := n.store.ModelCalls(ctx, 2)
	if err != nil || len(calls) != 0 {
		t.Errorf("duplicate's model calls: %d, %v; want none (worked once)", len(calls), err)
	}
	var kinds []string
	evs, _ := n.store.Events(ctx, 2)
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
	}
	if got := strings.Join(kinds, ","); got != "enqueued,duplicate,closed_with" {
		t.Errorf("duplicate's events %s; want enqueued,duplicate,closed_with", got)
	}
}
