package status

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store"
)

// pullNeeds lists the done tickets' pull requests whose checks are red or never started
// (store.RedOrStuckPulls): ticketd does not act on them alone. The key names the head and
// the state, so a new push or a new state is a new item.
func pullNeeds(ctx context.Context, s *Server, since time.Time) ([]needItem, error) {
	pulls, err := s.store.RedOrStuckPulls(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]needItem, 0, len(pulls))
	for _, p := range pulls {
		t, err := s.store.Get(ctx, p.TicketID)
		if err != nil {
			return out, err
		}
		head := p.CIHead
		if len(head) > 12 {
			head = head[:12]
		}
		it := needItem{Key: fmt.Sprintf("pull/%d/%s/%s", p.TicketID, p.CIHead, p.CIState), Kind: "pull_" + p.CIState,
			Title: fmt.Sprintf("#%d %s: pull request checks %s at %s", t.ID, t.Title, p.CIState, head),
			Link:  fmt.Sprintf("/tickets/%d", t.ID), At: p.CIAt, Cause: p.CIDetail, Next: pullNext(p.CIState)}
		it.New = !since.IsZero() && !it.At.Before(since)
		out = append(out, it)
	}
	return out, nil
}

// pullNext is what to do about a red or stuck pull request.
func pullNext(state string) string {
	if state == store.CIStuck {
		return "Approve the workflows for ticketd's account on the pull request (\"Approve and run\"), or let ticketd push as a GitHub App (docs/github.md)."
	}
	return "Read the failing check on the pull request: ticketd re-ran its tests at the base and said on the pull request whether the fix caused it."
}
