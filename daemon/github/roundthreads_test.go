package github

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

// askRound publishes ticket acme/app#1's pull request, lets review(s) arrive through add,
// runs one poll and returns the one round it asked.
func askRound(t *testing.T, add func(b bundle, pr int)) store.Round {
	t.Helper()
	b := setup(t)
	ctx := context.Background()
	tk := finish(t, b, "acme/app#1", "average of an empty list", true, "")
	p := newPublisher(b, &pushLog{})
	if _, err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	b.fake.Edit(func() { b.fake.Perms[testRepo+"\x00alice"] = "write" })
	add(b, 100)
	if rev, err := p.ReviewRounds(ctx); err != nil || !slices.Equal(rev, []int64{tk.ID}) {
		t.Fatalf("review rounds: revised %v, %v; want ticket %d", rev, err, tk.ID)
	}
	rounds, err := b.store.Rounds(ctx, tk.ID)
	if err != nil || len(rounds) != 1 {
		t.Fatalf("rounds = %+v, %v; want one", rounds, err)
	}
	return rounds[0]
}

// TestReviewRoundBusyPullRequest: 120 unresolved threads (two GraphQL pages), the first 10
// outdated, and a new reply in an old thread. The round carries 50: the asking review's
// text, the thread with the new reply, and the newest current threads; no outdated one
// while current ones are left; GitHub's order kept; and a note says how many were left out.
func TestReviewRoundBusyPullRequest(t *testing.T) {
	var ids []string
	var reviewID int64
	r := askRound(t, func(b bundle, pr int) {
		var cs []githubfake.LineComment
		for i := range 120 {
			cs = append(cs, githubfake.LineComment{Path: "money.py", Line: i + 1, Body: fmt.Sprintf("nit %d", i)})
		}
		b.fake.AddReview(testRepo, pr, githubfake.Review{User: "bob", State: "COMMENTED", Comments: cs})
		b.fake.Edit(func() {
			for i, th := range b.fake.ThreadsOf(testRepo, pr) {
				th.Outdated = i < 10
				ids = append(ids, th.ID)
			}
		})
		b.fake.ReplyToThread(testRepo, pr, ids[20], "alice", false, "this one still matters")
		reviewID = b.fake.AddReview(testRepo, pr, githubfake.Review{User: "alice", State: "CHANGES_REQUESTED", Body: "see the threads"})
	})
	var got []string
	for _, th := range r.Threads {
		got = append(got, th.ID)
	}
	// The review's text, thread 20 (newest reply), then threads 119 down to 72: 48 of them.
	want := append([]string{ids[20]}, ids[72:]...)
	want = append(want, fmt.Sprintf("review-%d", reviewID))
	if !slices.Equal(got, want) {
		t.Errorf("round threads (%d):\n got %v\nwant %v", len(got), got, want)
	}
	for _, s := range []string{"50 of the 121", "71 were left out, 10 of them outdated"} {
		if !strings.Contains(r.Note, s) {
			t.Errorf("the round's note lacks %q: %q", s, r.Note)
		}
	}
}

// TestReviewRoundBoundsText: threads whose text is long (and grows when the store escapes
// it as JSON) still ask a round, within roundTextMax, instead of a store refusal at every
// poll; a long conversation keeps its ask and its newest reply.
func TestReviewRoundBoundsText(t *testing.T) {
	r := askRound(t, func(b bundle, pr int) {
		var cs []githubfake.LineComment
		for i := range 30 {
			cs = append(cs, githubfake.LineComment{Path: "money.py", Line: i + 1, Body: fmt.Sprintf("%d %s", i, strings.Repeat("<&>", 1500))})
		}
		b.fake.AddReview(testRepo, pr, githubfake.Review{User: "alice", State: "CHANGES_REQUESTED", Body: "see the threads", Comments: cs})
		var last string
		b.fake.Edit(func() { last = b.fake.ThreadsOf(testRepo, pr)[29].ID })
		for i := range 40 {
			b.fake.ReplyToThread(testRepo, pr, last, "alice", false, fmt.Sprintf("reply %d %s", i, strings.Repeat("x", 100)))
		}
	})
	raw, _ := json.Marshal(r.Threads)
	if len(raw) > roundTextMax {
		t.Errorf("the round's threads hold %d bytes of JSON; want at most %d", len(raw), roundTextMax)
	}
	if len(r.Threads) < 2 || r.Note == "" || !strings.Contains(r.Note, "left out") {
		t.Fatalf("round: %d threads, note %q; want some threads and a note of those left out", len(r.Threads), r.Note)
	}
	var newest *store.Thread
	for i, th := range r.Threads {
		if len(th.Body) > threadTextMax {
			t.Errorf("thread %s holds %d bytes; want at most %d", th.ID, len(th.Body), threadTextMax)
		}
		if strings.Contains(th.Body, "reply 39") {
			newest = &r.Threads[i]
		}
	}
	switch {
	case newest == nil:
		t.Errorf("the thread with the newest reply is not in the round, or lost its newest reply")
	case !strings.HasPrefix(newest.Body, "29 <&>") || !strings.Contains(newest.Body, "earlier replies left out"):
		t.Errorf("the long thread's text lacks its ask or the count of replies left out:\n%s", newest.Body)
	}
}
