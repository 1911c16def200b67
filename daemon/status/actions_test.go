package status

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// post sends a form to path with extra headers and returns the status and body; redirects
// are not followed.
func post(t *testing.T, srv string, path string, form url.Values, headers map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("POST", srv+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header.Get("Location")
}

// TestActions: requeue and cancel are POST forms that need this process's token and a
// same-origin request; a refused transition says why; read-only shows no button and changes
// nothing. The ticket's history names the status page.
func TestActions(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	esc := b.ticket("app", "Escalated one", attemptPlan{1, "fix", "fix: no luck"})
	queued, _, err := b.st.Enqueue(b.ctx, store.NewTicket{Source: "dir", ExternalID: "q.md", Repo: "app", Title: "Waiting in the queue"})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveWith(t, b.st, Options{})
	_, page := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, esc))
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the ticket page has no action form:\n%s", page)
	}
	token := url.Values{"csrf": {m[1]}}
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	tests := []struct {
		name    string
		path    string
		form    url.Values
		headers map[string]string
		want    int
		body    string
	}{
		{"no token", fmt.Sprintf("/tickets/%d/requeue", esc), url.Values{}, same, 403, "token"},
		{"wrong token", fmt.Sprintf("/tickets/%d/requeue", esc), url.Values{"csrf": {"00ff"}}, same, 403, "token"},
		{"another site's form", fmt.Sprintf("/tickets/%d/requeue", esc), token, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, "another site"},
		{"another origin without fetch metadata", fmt.Sprintf("/tickets/%d/requeue", esc), token, map[string]string{"Origin": "http://evil.example"}, 403, "another site"},
		{"cancel an escalated ticket", fmt.Sprintf("/tickets/%d/cancel", esc), token, same, 409, "requeue it first"},
		{"an unknown action", fmt.Sprintf("/tickets/%d/delete", esc), token, same, 404, "answer, budget, cancel, requeue"},
		{"an unknown ticket", "/tickets/999/requeue", token, same, 404, "no ticket 999"},
		{"requeue", fmt.Sprintf("/tickets/%d/requeue", esc), token, same, 303, ""},
		{"cancel asks first", fmt.Sprintf("/tickets/%d/cancel", queued), token, same, 200, "Cancel the ticket"},
		{"cancel a queued ticket", fmt.Sprintf("/tickets/%d/cancel", queued), url.Values{"csrf": token["csrf"], "confirm": {"yes"}}, same, 303, ""},
	}
	for _, tt := range tests {
		code, body, loc := post(t, srv.URL, tt.path, tt.form, tt.headers)
		if code != tt.want || !strings.Contains(strings.ToLower(body), strings.ToLower(tt.body)) {
			t.Errorf("%s: POST %s = %d %q, want %d with %q", tt.name, tt.path, code, clip(200, body), tt.want, tt.body)
		}
		if code == 303 && !strings.HasPrefix(loc, "/tickets/") {
			t.Errorf("%s: redirected to %q, want the ticket's page", tt.name, loc)
		}
	}
	for id, want := range map[int64]store.State{esc: store.StateQueued, queued: store.StateCancelled} {
		tk, _ := b.st.Get(b.ctx, id)
		if tk.State != want {
			t.Errorf("ticket %d is %s, want %s", id, tk.State, want)
		}
		events, _ := b.st.Events(b.ctx, id)
		if last := events[len(events)-1]; last.Actor != actor {
			t.Errorf("ticket %d's last event is by %q, want %q", id, last.Actor, actor)
		}
	}
	_, page = get(t, fmt.Sprintf("%s/tickets/%d?did=requeue", srv.URL, esc))
	mustContain(t, "the page after a requeue", page, "Requeued")

	// A GET never acts.
	if code, _ := get(t, fmt.Sprintf("%s/tickets/%d/requeue", srv.URL, queued)); code == 303 || code == 200 {
		t.Errorf("GET of an action = %d, want it refused", code)
	}
}

// TestReadOnly: with http.read_only the pages carry no form and every POST is refused.
func TestReadOnly(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	esc := b.ticket("app", "Escalated one", attemptPlan{1, "fix", "fix: no luck"})
	srv := serveWith(t, b.st, Options{ReadOnly: true})
	for _, path := range []string{"/", fmt.Sprintf("/tickets/%d", esc)} {
		_, page := get(t, srv.URL+path)
		if strings.Contains(page, "<form class=\"act\"") || strings.Contains(page, `name="csrf"`) {
			t.Errorf("read-only %s shows an action form", path)
		}
		mustContain(t, "read-only "+path, page, "read-only")
	}
	code, body, _ := post(t, srv.URL, fmt.Sprintf("/tickets/%d/requeue", esc), url.Values{"csrf": {"x"}}, nil)
	if code != 403 || !strings.Contains(body, "http.read_only") {
		t.Errorf("read-only POST = %d %q", code, clip(200, body))
	}
	if tk, _ := b.st.Get(b.ctx, esc); tk.State != store.StateEscalated {
		t.Errorf("a read-only page changed the ticket to %s", tk.State)
	}
}

// TestReadOnlyRefusesEveryAction: on a read-only page every state-changing POST is refused,
// even one that carries this process's token and its confirmation, and the confirmation
// pages are not served; nothing changes.
func TestReadOnlyRefusesEveryAction(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	esc := b.ticket("app", "Escalated one", attemptPlan{1, "fix", "fix: no luck"})
	accepted := 0
	s, err := New(b.st, Options{ReadOnly: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Accept: func(context.Context, int64, string) (string, error) { accepted++; return "published", nil }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	before, _ := b.st.Events(b.ctx, esc)
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	tp := func(action string) string { return fmt.Sprintf("/tickets/%d/%s", esc, action) }
	for _, tt := range []struct {
		path string
		form url.Values
	}{
		{tp("requeue"), url.Values{"note": {"n"}, "confirm": {"done"}}},
		{tp("cancel"), url.Values{"confirm": {"yes"}}},
		{tp("answer"), url.Values{"answer": {"a"}}},
		{tp("revise"), url.Values{"note": {"n"}}},
		{tp("budget"), url.Values{"dollars": {"2.50"}}},
		{tp("accept"), url.Values{"confirm": {"yes"}, "name": {"alice"}}},
		{"/bulk", url.Values{"do": {"cancel"}, "confirm": {"yes"}, "id": {fmt.Sprint(esc)}}},
		{"/needs/dismiss", url.Values{"item": {fmt.Sprintf("ticket/%d/escalated/1", esc)}}},
	} {
		tt.form.Set("csrf", s.csrf)
		code, body, _ := post(t, srv.URL, tt.path, tt.form, same)
		if code != 403 || !strings.Contains(body, "read-only") {
			t.Errorf("read-only POST %s = %d %q, want 403", tt.path, code, clip(200, body))
		}
	}
	for _, path := range []string{"/bulk?do=cancel&state=escalated", tp("accept")} {
		if code, body := get(t, srv.URL+path); code < 400 || strings.Contains(body, `name="csrf"`) {
			t.Errorf("read-only GET %s = %d, want it refused without a form", path, code)
		}
	}
	after, _ := b.st.Events(b.ctx, esc)
	gone, _ := b.st.Dismissals(b.ctx)
	if tk, _ := b.st.Get(b.ctx, esc); tk.State != store.StateEscalated || len(after) != len(before) || len(gone) != 0 || accepted != 0 {
		t.Errorf("a read-only page acted: ticket %s, %d events (was %d), %d dismissals, %d accepts", tk.State, len(after), len(before), len(gone), accepted)
	}
}

// TestRequeueDoneAsks: the console never requeues a done ticket in one click. The Requeue
// button answers with a dialog that says the fix branch is kept and the new round gets its
// own; only the dialog's confirmed form (with its note) requeues it.
func TestRequeueDoneAsks(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	done := b.ticket("app", "Fixed one", attemptPlan{2, "done", ""})
	srv := serveWith(t, b.st, Options{})
	_, page := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, done))
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the done ticket's page has no requeue form:\n%s", page)
	}
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	path := fmt.Sprintf("/tickets/%d/requeue", done)
	code, body, _ := post(t, srv.URL, path, url.Values{"csrf": {m[1]}}, same)
	if code != 200 || !strings.Contains(body, `name="confirm" value="done"`) || !strings.Contains(body, fmt.Sprintf("ticketd/%d-fix", done)) {
		t.Fatalf("first POST = %d, want the confirmation dialog naming the kept branch:\n%s", code, clip(600, body))
	}
	if tk, _ := b.st.Get(b.ctx, done); tk.State != store.StateDone {
		t.Fatalf("one click requeued the done ticket: %s", tk.State)
	}
	code, _, loc := post(t, srv.URL, path, url.Values{"csrf": {m[1]}, "confirm": {"done"}, "note": {"the fix breaks rounding of negatives"}}, same)
	if code != 303 || !strings.HasPrefix(loc, "/tickets/") {
		t.Fatalf("confirmed POST = %d (to %q), want a redirect to the ticket", code, loc)
	}
	tk, _ := b.st.Get(b.ctx, done)
	rq, _ := b.st.Requeues(b.ctx, done)
	if tk.State != store.StateQueued || len(rq) != 1 || rq[0].Branch != fmt.Sprintf("ticketd/%d-fix", done) || rq[0].Note != "the fix breaks rounding of negatives" {
		t.Errorf("after the confirmed requeue: %s, requeues %+v; want queued, the branch kept on record, the note", tk.State, rq)
	}
}

// TestBudgetAction: a needs_budget ticket's page offers to add dollars; the POST (token and
// origin checked as for every action) puts it back in the queue with the money; a bad
// amount, or a ticket that waits for none, is refused.
func TestBudgetAction(t *testing.T) {
	b := newBuilder(t)
	id, _, err := b.st.Enqueue(b.ctx, store.NewTicket{Source: "dir", ExternalID: "b.md", Repo: "app", Title: "Out of money"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.st.Claim(b.ctx, "w1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.NeedBudget(b.ctx, id, l.Token, "projected: next call $0.03, $0.01 remains", "", ""); err != nil {
		t.Fatal(err)
	}
	srv := serveWith(t, b.st, Options{})
	_, page := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, id))
	mustContain(t, "a needs_budget ticket's page", page, fmt.Sprintf("/tickets/%d/budget", id), "Add budget")
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the ticket page has no action form:\n%s", page)
	}
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	path := fmt.Sprintf("/tickets/%d/budget", id)
	for _, tt := range []struct {
		name    string
		form    url.Values
		headers map[string]string
		want    int
	}{
		{"no token", url.Values{"dollars": {"2"}}, same, 403},
		{"another site's form", url.Values{"csrf": {m[1]}, "dollars": {"2"}}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"not an amount", url.Values{"csrf": {m[1]}, "dollars": {"lots"}}, same, 400},
		{"a negative amount", url.Values{"csrf": {m[1]}, "dollars": {"-2"}}, same, 400},
		{"add $2.50", url.Values{"csrf": {m[1]}, "dollars": {"$2.50"}}, same, 303},
		{"again: nothing waits for money", url.Values{"csrf": {m[1]}, "dollars": {"1"}}, same, 409},
	} {
		if code, body, _ := post(t, srv.URL, path, tt.form, tt.headers); code != tt.want {
			t.Errorf("%s: POST %s = %d %q, want %d", tt.name, path, code, clip(200, body), tt.want)
		}
	}
	tk, _ := b.st.Get(b.ctx, id)
	if tk.State != store.StateQueued || tk.BudgetExtra != 2.5 {
		t.Errorf("ticket %s with $%v extra; want queued with $2.50", tk.State, tk.BudgetExtra)
	}
}
