package status

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/store"
)

// TestAcceptButton: an escalated ticket with a kept change offers "Accept the kept change…",
// a confirmation page that names what will be published and asks who accepts it; the POST
// needs this process's token, a same-origin request, the confirmation and a name, and is made
// once. Without a publisher (ticketctl serve without --config) or read-only, nothing is
// offered and a POST changes nothing.
func TestAcceptButton(t *testing.T) {
	b := newBuilder(t)
	id, _, err := b.st.Enqueue(b.ctx, store.NewTicket{Source: "dir", ExternalID: "a.md", Repo: "app", Title: "Pinned behaviour"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.st.Claim(b.ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.Fail(b.ctx, id, l.Token, store.Failure{Kind: store.FailHuman, Branch: "ticketd/1-pinned-attempt-1", Reason: "changes tests the base passed: tests: t.py::test_pin"}); err != nil {
		t.Fatal(err)
	}
	var calls []string
	accept := func(_ context.Context, got int64, who string) (string, error) {
		calls = append(calls, fmt.Sprintf("%d %s", got, who))
		return "ticketd/1-pinned", nil
	}
	srv := serveWith(t, b.st, Options{Accept: accept})
	_, page := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, id))
	mustContain(t, "the escalated ticket's page", page, fmt.Sprintf(`href="/tickets/%d/accept"`, id))
	code, confirm := get(t, fmt.Sprintf("%s/tickets/%d/accept", srv.URL, id))
	if code != 200 {
		t.Fatalf("confirmation page: %d", code)
	}
	mustContain(t, "the confirmation page", confirm, "ticketd/1-pinned-attempt-1", "changes tests the base passed", `name="confirm" value="yes"`, `name="name"`)
	m := csrfRe.FindStringSubmatch(confirm)
	if m == nil {
		t.Fatalf("the confirmation page has no form:\n%s", confirm)
	}
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	path := fmt.Sprintf("/tickets/%d/accept", id)
	for _, tt := range []struct {
		name    string
		form    url.Values
		headers map[string]string
		want    int
		loc     string
	}{
		{"no token", url.Values{"confirm": {"yes"}, "name": {"alice"}}, same, 403, ""},
		{"another site's form", url.Values{"csrf": {m[1]}, "confirm": {"yes"}, "name": {"alice"}}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, ""},
		{"not confirmed", url.Values{"csrf": {m[1]}, "name": {"alice"}}, same, 303, path},
		{"no name", url.Values{"csrf": {m[1]}, "confirm": {"yes"}, "name": {" \x01 "}}, same, 400, ""},
		{"confirmed", url.Values{"csrf": {m[1]}, "confirm": {"yes"}, "name": {"alice"}}, same, 303, fmt.Sprintf("/tickets/%d?did=accept", id)},
	} {
		code, body, loc := post(t, srv.URL, path, tt.form, tt.headers)
		if code != tt.want || loc != tt.loc {
			t.Errorf("%s: POST = %d to %q (%s), want %d to %q", tt.name, code, loc, clip(200, body), tt.want, tt.loc)
		}
	}
	if len(calls) != 1 || calls[0] != fmt.Sprintf("%d status page: alice", id) {
		t.Errorf("accept calls %q, want one by the status page and alice", calls)
	}

	for name, opts := range map[string]Options{"no publisher": {}, "read-only": {ReadOnly: true, Accept: accept}} {
		srv := serveWith(t, b.st, opts)
		if _, page := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, id)); strings.Contains(page, "/accept\"") {
			t.Errorf("%s: the page offers accept", name)
		}
		if code, _, _ := post(t, srv.URL, path, url.Values{"confirm": {"yes"}, "name": {"x"}}, same); code < 400 {
			t.Errorf("%s: POST = %d, want it refused", name, code)
		}
	}
	if len(calls) != 1 {
		t.Errorf("accept called %d times in all, want 1", len(calls))
	}
}

// TestCleanName: the name an accept records is printable, trimmed and at most 64 bytes,
// cut between characters: the ticket's history never holds a broken character.
func TestCleanName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"  alice  ", "alice"},
		{"al\x00i\nce\u202e", "alice"},
		{strings.Repeat("a", 70), strings.Repeat("a", 64)},
		{strings.Repeat("é", 40), strings.Repeat("é", 32)},
		{"a" + strings.Repeat("é", 40), "a" + strings.Repeat("é", 31)},
		{strings.Repeat("a", 63) + " b", strings.Repeat("a", 63)},
	} {
		got := cleanName(tt.in)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("cleanName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
