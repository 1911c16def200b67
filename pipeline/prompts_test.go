package pipeline

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
)

// TestStaticPrefixIsByteIdentical pins the cache contract: the tool block and the system
// message are the same bytes for every ticket, worker (work directory) and day, and the
// repository part is the same for tickets of one repository; only the ticket part differs.
func TestStaticPrefixIsByteIdentical(t *testing.T) {
	type variant struct {
		ticket Ticket
		dir    string
		now    time.Time
	}
	variants := []variant{
		{Ticket{ID: 1, Attempt: 1, Title: "Average crashes", Body: "ZeroDivisionError", Repo: "app"}, "/work/w1/1", time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)},
		{Ticket{ID: 77, Attempt: 3, Title: "Totals off by one", Body: "other text", Repo: "app", Labels: []string{"bug"}}, "/srv/w3/77", time.Date(2027, 2, 1, 23, 59, 0, 0, time.UTC)},
	}
	for _, role := range model.Roles {
		var first []string
		for i, v := range variants {
			a := &attempt{r: &Runner{Now: func() time.Time { return v.now }}, job: Job{Ticket: v.ticket, Dir: v.dir, RepoMap: "app/x.py\n  def f()"}}
			msgs := a.openingMessages(role, nil)
			toolJSON, _ := json.Marshal(tools.MakerTools())
			parts := []string{string(toolJSON), msgs[0].Content, RepoContext("app", "", "app/x.py\n  def f()")}
			if !strings.HasPrefix(msgs[1].Content, parts[2]) {
				t.Errorf("%s: the user message does not start with the repository part", role)
			}
			for _, dyn := range []string{v.dir, v.now.Format("2006-01-02"), v.ticket.Title} {
				if strings.Contains(msgs[0].Content, dyn) {
					t.Errorf("%s: system prompt contains the dynamic value %q", role, dyn)
				}
			}
			if i == 0 {
				first = parts
				continue
			}
			for j := range parts {
				if parts[j] != first[j] {
					t.Errorf("%s: static part %d differs between tickets", role, j)
				}
			}
		}
		if !strings.Contains(SystemPrompt(role), "ticketd role: "+string(role)) {
			t.Errorf("%s: system prompt lacks its role line", role)
		}
	}
}

func TestLayoutDynamicFirstMovesDirAndDate(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	a := &attempt{r: &Runner{Now: func() time.Time { return now }, Layout: LayoutDynamicFirst}, job: Job{Dir: "/work/w1/1"}}
	sys := a.openingMessages(model.RoleMaker, nil)[0].Content
	if !strings.HasPrefix(sys, "Working directory: /work/w1/1\nDate: 2026-11-29\n") {
		t.Errorf("system prompt starts %q", sys[:60])
	}
}
