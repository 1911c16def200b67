package github

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestPruneReleased: a released attempt's branch on GitHub is deleted once its ticket is
// done, and only when ticketd still owns it: the branch at this clone's commit, no open
// pull request from or into it, a ticket of this database. Fix branches, an escalated
// ticket's (its comment hands them to a human), a queued ticket's, a branch someone pushed
// to, one an open pull request uses and one of an unknown ticket stay. Passes are spaced by
// an hour.
func TestPruneReleased(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)}
	c, err := NewClient(ClientOptions{BaseURL: b.fake.URL(), Token: "test-token", Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	b.client = c
	done := finish(t, b, "acme/app#1", "average", true, "")
	esc := finish(t, b, "acme/app#2", "rounding", false, "gave up")
	done2 := finish(t, b, "acme/app#3", "sum", true, "")
	queued, _, err := b.store.Enqueue(ctx, store.NewTicket{Source: Source, ExternalID: "acme/app#4", Repo: "app", Title: "median", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]string{}
	branch := func(id int64, n int, sha, localSHA string) string {
		name := fmt.Sprintf("ticketd/%d-attempt-%d-released", id, n)
		b.fake.SetBranch(testRepo, name, sha)
		if localSHA != "" {
			local[name] = localSHA
		}
		return name
	}
	gone := branch(done.ID, 1, "a1", "a1")
	gone2 := branch(done2.ID, 2, "c2", "c2")
	pushedTo := branch(done.ID, 2, "b2", "b1")
	prHead := branch(done2.ID, 1, "c1", "c1")
	prBase := branch(done.ID, 3, "a3", "a3")
	escalated := branch(esc.ID, 1, "e1", "e1")
	notDone := branch(queued, 1, "q1", "q1")
	unknown := branch(99, 1, "z1", "z1")
	noLocal := branch(done.ID, 4, "a4", "")
	b.fake.SetBranch(testRepo, "ticketd/1-average", "f1")
	b.fake.SetBranch(testRepo, "main", "m1")
	b.fake.Edit(func() {
		b.fake.Pulls = append(b.fake.Pulls,
			map[string]any{"repo": testRepo, "number": 200, "state": "open", "head_label": "acme:" + prHead,
				"head": map[string]any{"ref": prHead}, "base": map[string]any{"ref": "main"}, "html_url": "https://github.example/acme/app/pull/200"},
			map[string]any{"repo": testRepo, "number": 201, "state": "open", "head_label": "alice:more",
				"head": map[string]any{"ref": "more"}, "base": map[string]any{"ref": prBase}, "html_url": "https://github.example/acme/app/pull/201"},
			map[string]any{"repo": testRepo, "number": 202, "state": "closed", "head_label": "acme:" + gone,
				"head": map[string]any{"ref": gone}, "base": map[string]any{"ref": "main"}, "html_url": "https://github.example/acme/app/pull/202"})
	})
	p := newPublisher(b, &pushLog{})
	p.Head = func(_ context.Context, dir, br string) (string, error) {
		if sha, ok := local[br]; ok {
			return sha, nil
		}
		return "", fmt.Errorf("no branch %s in %s", br, dir)
	}

	deleted, err := p.PruneReleased(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{testRepo + ":" + gone, testRepo + ":" + gone2}
	slices.Sort(deleted)
	if !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	left := b.fake.BranchesOf(testRepo)
	for _, keep := range []string{pushedTo, prHead, prBase, escalated, notDone, unknown, noLocal, "ticketd/1-average", "main"} {
		if !slices.Contains(left, keep) {
			t.Errorf("branch %s was deleted; want it kept", keep)
		}
	}
	for _, g := range []string{gone, gone2} {
		if slices.Contains(left, g) {
			t.Errorf("branch %s is still on GitHub", g)
		}
	}

	// Within the hour, no pass; after it, a ticket done since is pruned.
	lists := b.fake.Count("GET", "/repos/acme/app/git/matching-refs/")
	clk.add(30 * time.Minute)
	if d, err := p.PruneReleased(ctx); err != nil || len(d) != 0 || b.fake.Count("GET", "/repos/acme/app/git/matching-refs/") != lists {
		t.Errorf("a pass within the hour: deleted %v, %v, branch listings %d -> %d; want none", d, err, lists, b.fake.Count("GET", "/repos/acme/app/git/matching-refs/"))
	}
	b.fake.Edit(func() { b.fake.Pulls[0]["state"] = "closed" })
	clk.add(31 * time.Minute)
	if d, err := p.PruneReleased(ctx); err != nil || !slices.Equal(d, []string{testRepo + ":" + prHead}) {
		t.Errorf("the next hour's pass: deleted %v, %v; want %s, its pull request closed", d, err, prHead)
	}
}
