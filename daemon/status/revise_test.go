package status

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestReviseAction: a done ticket's page offers a revise form; the POST (token and origin
// checked as for every action) asks a round on its fix branch with the note; no note is
// refused; with max rounds spent the ticket escalates and the page says so.
func TestReviseAction(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	done := b.ticket("app", "Fixed one", attemptPlan{1, "done", ""})
	srv := serveWith(t, b.st, Options{MaxRounds: 1})
	_, page := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, done))
	mustContain(t, "a done ticket's page", page, fmt.Sprintf(`action="/tickets/%d/revise"`, done), `name="note"`)
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the ticket page has no action form:\n%s", page)
	}
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	path := fmt.Sprintf("/tickets/%d/revise", done)
	note := "round half to even, as the issue's second example says"
	for _, tt := range []struct {
		name    string
		form    url.Values
		headers map[string]string
		want    int
	}{
		{"no token", url.Values{"note": {note}}, same, 403},
		{"another site's form", url.Values{"csrf": {m[1]}, "note": {note}}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"no note", url.Values{"csrf": {m[1]}, "note": {"  "}}, same, 400},
		{"revise", url.Values{"csrf": {m[1]}, "note": {note}}, same, 303},
		{"again: the ticket is queued", url.Values{"csrf": {m[1]}, "note": {note}}, same, 409},
	} {
		if code, body, _ := post(t, srv.URL, path, tt.form, tt.headers); code != tt.want {
			t.Errorf("%s: POST %s = %d %q, want %d", tt.name, path, code, clip(200, body), tt.want)
		}
	}
	r, ok, err := b.st.OpenRound(b.ctx, done)
	if err != nil || !ok || r.Note != note || r.Actor != actor || r.Branch == "" {
		t.Fatalf("open round = %+v, %v, %v; want the status page's round with the note on the fix branch", r, ok, err)
	}
	// The round ends done; a second ask is past max_rounds 1.
	l, err := b.st.Claim(b.ctx, "w1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.st.Complete(b.ctx, done, l.Token, store.Result{Branch: r.Branch, ResultDir: "/r"}); err != nil {
		t.Fatal(err)
	}
	code, body, _ := post(t, srv.URL, path, url.Values{"csrf": {m[1]}, "note": {"one more"}}, same)
	if tk, _ := b.st.Get(b.ctx, done); code != 409 || !strings.Contains(body, "Rounds spent") || tk.State != store.StateEscalated {
		t.Errorf("revise past max_rounds: %d %q, ticket %s; want 409 Rounds spent and the ticket escalated", code, clip(300, body), tk.State)
	}
}
