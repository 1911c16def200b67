package status

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/store"
)

// TestNeedsYouListsStuckPullRequests: a done ticket's pull request whose checks wait for
// approval (action_required) is on "Needs you" with what to do; green ones are not.
func TestNeedsYouListsStuckPullRequests(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	stuck := b.ticket("app", "Fixed, CI never ran", attemptPlan{1, "done", ""})
	green := b.ticket("app", "Fixed, CI green", attemptPlan{1, "done", ""})
	if err := b.st.SetPullCI(b.ctx, stuck, "0123456789abcdef", store.CIStuck, "waiting for approval (action_required): tests"); err != nil {
		t.Fatal(err)
	}
	if err := b.st.SetPullCI(b.ctx, green, "fedcba9876543210", store.CIGreen, "2 check(s) passed"); err != nil {
		t.Fatal(err)
	}
	srv := serveWith(t, b.st, Options{})
	_, html := get(t, srv.URL+"/")
	mustContain(t, "Needs you", html, "Fixed, CI never ran: pull request checks stuck at 0123456789ab", "action_required", "Approve and run")
	if strings.Contains(html, "Fixed, CI green: pull request checks") {
		t.Error("a green pull request is on Needs you")
	}
}
