package daemon

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// roundPatch changes the line the first fix wrote: it applies only to the fix branch's head
// (at the base the line reads "cents + 1"), so a round that started from the base fails.
const roundPatch = `diff --git a/shop/rule_00.py b/shop/rule_00.py
--- a/shop/rule_00.py
+++ b/shop/rule_00.py
@@ -4,3 +4,3 @@
 def surcharge_0(cents):
     """Add the rule's surcharge of 0 cents."""
-    return cents + 0
+    return cents
`

// TestReviseRoundFromBranchHead: a done ticket revised with a note (ticketctl revise's
// store.Revise, no GitHub) is worked the next night from its fix branch's head: the maker's
// request carries the note, quoted; its edit of the line the first fix wrote applies; the
// gate passes against the base; the fix branch gets exactly one commit on top of the fix,
// and the round ends done on the ticket.
func TestReviseRoundFromBranchHead(t *testing.T) {
	t.Parallel() // nights of their own: repository, store, model server
	realNight(t)
	f := newFixture(t, 1)
	const note = "drop the + 0, it reads like a leftover"
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	ctx := context.Background()

	n1 := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	t1, _ := n1.store.Get(ctx, 1)
	if t1.State != store.StateDone {
		t.Fatalf("night 1: ticket %s (%s); want done", t1.State, t1.Reason)
	}
	fixBranch := t1.Branch
	fixCommit := strings.TrimSpace(git(t, f.repo, "rev-parse", fixBranch))
	r, err := n1.store.Revise(ctx, 1, "alice", store.RoundAsk{Source: store.RoundRevise, Note: note, MaxRounds: cfg.Review.MaxRounds})
	if err != nil || r.Branch != fixBranch {
		t.Fatalf("revise: %+v, %v; want a round on %s", r, err, fixBranch)
	}
	// Night 2's double makes the reviewer's change: an edit of the line the fix wrote.
	f.cases = []scriptedmodel.Case{{Match: t1.Title, Patch: roundPatch}}
	server, url2 := f.scripted(t, scriptedmodel.Options{Seed: 1})
	n2 := runNight(t, f.config(t, url2, 1), pipeline.LayoutCacheFriendly)
	t2, _ := n2.store.Get(ctx, 1)
	if t2.State != store.StateDone || t2.Branch != fixBranch {
		t.Fatalf("night 2: ticket %s on %q (%s); want done on %s", t2.State, t2.Branch, t2.Reason, fixBranch)
	}
	head := strings.TrimSpace(git(t, f.repo, "rev-parse", fixBranch))
	if parent := strings.TrimSpace(git(t, f.repo, "rev-parse", fixBranch+"^")); head == fixCommit || parent != fixCommit {
		t.Errorf("fix branch %s at %s (parent %s); want one new commit on top of the fix %s", fixBranch, head, parent, fixCommit)
	}
	if got := git(t, f.repo, "show", fixBranch+":shop/rule_00.py"); !strings.Contains(got, "    return cents\n") {
		t.Errorf("shop/rule_00.py on %s after the round:\n%s\nwant the round's edit on top of the fix", fixBranch, got)
	}
	quoted := false
	for _, req := range server.Requests() {
		// The request is JSON, which writes ">" as \u003e.
		if req.Role == "maker" && (bytes.Contains(req.Body, []byte("> "+note)) || bytes.Contains(req.Body, []byte(`\u003e `+note))) {
			quoted = true
		}
	}
	if !quoted {
		t.Error("no maker request of the round carried the note, quoted")
	}
	rounds, err := n2.store.Rounds(ctx, 1)
	if err != nil || len(rounds) != 1 || rounds[0].Outcome != string(store.StateDone) {
		t.Errorf("rounds = %+v, %v; want round 1 done", rounds, err)
	}
}
