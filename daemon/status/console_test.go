package status

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// asked enqueues a ticket and ends its first attempt with the maker's question.
func (b *builder) asked(title, question string) int64 {
	b.t.Helper()
	b.n++
	id, _, err := b.st.Enqueue(b.ctx, store.NewTicket{Source: "dir", ExternalID: fmt.Sprintf("issue-%d.md", b.n), Repo: "app", Title: title, Body: title, MaxAttempts: 3})
	if err != nil {
		b.t.Fatal(err)
	}
	b.clk.Advance(2 * time.Second)
	l, err := b.st.Claim(b.ctx, "w1-100", time.Hour)
	if err != nil || l.Ticket.ID != id {
		b.t.Fatalf("claim %d: %v (got %d)", id, err, l.Ticket.ID)
	}
	if _, err := b.st.AskHuman(b.ctx, id, l.Token, store.Asked{Question: question}); err != nil {
		b.t.Fatal(err)
	}
	return id
}

// consoleNights builds yesterday's night with an escalation, and today's night that failed.
func consoleNights(b *builder) (yesterdayEsc int64, failed int64) {
	n1 := b.startNight("cron")
	yesterdayEsc = b.ticket("app", "Yesterday's escalation", attemptPlan{2, "fix", "fix: checks failed: tests/test_money.py::test_refund assert 5 == 4"})
	b.endNight(n1, store.OutcomeOK, "")
	b.clk.Advance(20 * time.Hour)
	failed = b.startNight("cron")
	b.endNight(failed, store.OutcomeFailed, "model endpoint preflight failed: maker: HTTP 401: invalid api key (set OPENAI_API_KEY)")
	return yesterdayEsc, failed
}

// TestNeedsYouIsTheWholeList: yesterday's escalation is listed (not a link to it), today's
// failed night is an item with its error and next step, a question and a parked ticket are
// items; an empty list under a failed night never says "Nothing needs you"; a dismissed item
// leaves the list and is counted; causes that share a long beginning read apart.
func TestNeedsYouIsTheWholeList(t *testing.T) {
	b := newBuilder(t)
	esc, failed := consoleNights(b)
	shared := "budget: budget exhausted: loop: read_files called 5 times with the same arguments on src/app/handlers/refunds.py and more "
	a := b.ticket("billing", "Loop A", attemptPlan{1, "fix", shared + "(case alpha)"})
	c := b.ticket("billing", "Loop B", attemptPlan{1, "fix", shared + "(case beta)"})
	q := b.asked("Which rounding?", "Should refunds round half up or to even?")
	if _, err := b.st.RecordToolCall(b.ctx, store.ToolCall{TicketID: a, Attempt: 1, Step: 3, Tool: "edit_file", OK: false,
		Result: "edit_file: old text not found in src/refunds.py; the nearest lines are 40-42: def refund(order):", At: b.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	srv := serveWith(t, b.st, Options{})
	_, html := get(t, srv.URL+"/")
	needs := section(t, html, "needs-you")
	mustContain(t, "needs you", needs, fmt.Sprintf(`href="/tickets/%d"`, esc), "Yesterday&#39;s escalation", "test_refund assert 5 == 4",
		fmt.Sprintf(`href="/nights/%d"`, failed), fmt.Sprintf("Night %d (cron) failed", failed), "HTTP 401: invalid api key",
		"Next: Nothing was claimed", "Should refunds round half up or to even?", `action="/tickets/`+fmt.Sprint(q)+`/answer"`,
		"…(case alpha)", "…(case beta)", `action="/needs/dismiss"`,
		"edit_file failed: edit_file: old text not found in src/refunds.py")
	for _, id := range []int64{a, c} {
		mustContain(t, "needs you", needs, fmt.Sprintf(`id="ticket-%d"`, id))
	}
	if strings.Contains(html, "Nothing needs you") {
		t.Error("the page says nothing needs you under a failed night")
	}

	// Dismiss everything: the list is empty, but the failed night still keeps the green
	// "Nothing needs you" away.
	token := url.Values{"csrf": {csrfRe.FindStringSubmatch(html)[1]}}
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	keys := dataKeys(needs)
	if len(keys) != 5 {
		t.Fatalf("needs-you has %d items %v, want 5 (the night, three escalations, the question)", len(keys), keys)
	}
	if code, _, _ := post(t, srv.URL, "/needs/dismiss", url.Values{"item": {keys[0]}}, same); code != 403 {
		t.Errorf("a dismissal without the token = %d, want 403", code)
	}
	if code, _, _ := post(t, srv.URL, "/needs/dismiss", url.Values{"item": {keys[0]}, "csrf": token["csrf"]}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); code != 403 {
		t.Errorf("a cross-site dismissal = %d, want 403", code)
	}
	for _, k := range keys {
		if code, _, loc := post(t, srv.URL, "/needs/dismiss", url.Values{"item": {k}, "csrf": token["csrf"]}, same); code != 303 || loc != "/#needs-you" {
			t.Errorf("dismiss %s = %d %q", k, code, loc)
		}
	}
	gone, err := b.st.Dismissals(b.ctx)
	if err != nil || len(gone) != 5 || gone[fmt.Sprintf("night/%d", failed)].Actor != actor {
		t.Errorf("dismissals in the store = %v, %v", gone, err)
	}
	_, html = get(t, srv.URL+"/")
	needs = section(t, html, "needs-you")
	if strings.Contains(html, "Nothing needs you") || strings.Contains(needs, `class="card attention`) {
		t.Errorf("after dismissing all under a failed night:\n%s", needs)
	}
	mustContain(t, "the emptied list", needs, "5 dismissed", "did not end ok", fmt.Sprintf(`href="/nights/%d"`, failed))
}

// dataKeys lists the data-key attributes of html in order.
func dataKeys(html string) []string {
	var keys []string
	for _, part := range strings.Split(html, `data-key="`)[1:] {
		keys = append(keys, part[:strings.IndexByte(part, '"')])
	}
	return keys
}

// TestConsoleActs: from the console, an answer reaches the question's record and requeues
// the ticket; a requeue's note is kept for the maker; a bulk requeue asks first, naming the
// tickets, then changes those (and says why not for one it cannot); a POST without the
// token or from another origin changes nothing.
func TestConsoleActs(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	q := b.asked("Which rounding?", "Half up or even?")
	esc1 := b.ticket("app", "Escalated one", attemptPlan{1, "fix", "fix: no luck"})
	esc2 := b.ticket("app", "Escalated two", attemptPlan{1, "fix", "fix: no luck either"})
	other := b.ticket("web", "Escalated elsewhere", attemptPlan{1, "fix", "fix: other repo"})
	srv := serveWith(t, b.st, Options{})
	_, html := get(t, srv.URL+"/")
	token := csrfRe.FindStringSubmatch(html)[1]
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	evil := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}

	answer := url.Values{"answer": {"Round half to even."}}
	if code, _, _ := post(t, srv.URL, fmt.Sprintf("/tickets/%d/answer", q), answer, same); code != 403 {
		t.Errorf("an answer without the token = %d, want 403", code)
	}
	answer.Set("csrf", token)
	if code, _, _ := post(t, srv.URL, fmt.Sprintf("/tickets/%d/answer", q), answer, evil); code != 403 {
		t.Errorf("a cross-site answer = %d, want 403", code)
	}
	if tk, _ := b.st.Get(b.ctx, q); tk.State != store.StateNeedsInfo {
		t.Fatalf("a refused answer changed the ticket to %s", tk.State)
	}
	if code, _, loc := post(t, srv.URL, fmt.Sprintf("/tickets/%d/answer", q), answer, same); code != 303 || !strings.HasSuffix(loc, "?did=answer") {
		t.Errorf("answer = %d %q", code, loc)
	}
	qs, err := b.st.Questions(b.ctx, q)
	if tk, _ := b.st.Get(b.ctx, q); err != nil || len(qs) != 1 || qs[0].Answer != "Round half to even." || tk.State != store.StateQueued {
		t.Errorf("after the answer: ticket %s, questions %+v, %v", tk.State, qs, err)
	}

	note := url.Values{"csrf": {token}, "note": {"The refund must use the original currency."}}
	if code, _, _ := post(t, srv.URL, fmt.Sprintf("/tickets/%d/requeue", esc1), note, same); code != 303 {
		t.Errorf("requeue with a note = %d", code)
	}
	rq, err := b.st.Requeues(b.ctx, esc1)
	if err != nil || len(rq) != 1 || rq[0].Note != "The refund must use the original currency." || rq[0].Actor != actor {
		t.Errorf("the requeue's record = %+v, %v; want the note by the status page", rq, err)
	}

	// Bulk: the list's filter (escalated in app) asks first, naming esc2 only (esc1 is
	// queued now, other is in another repository).
	code, page := get(t, srv.URL+"/bulk?do=requeue&state=escalated&repo=app")
	if code != 200 {
		t.Fatalf("bulk confirmation = %d", code)
	}
	mustContain(t, "the bulk confirmation", page, "requeue 1 ticket(s)?", "Escalated two", `name="id" value="`+fmt.Sprint(esc2)+`"`, `action="/bulk"`)
	if strings.Contains(page, "Escalated elsewhere") || strings.Contains(page, "Escalated one") {
		t.Errorf("the confirmation names a ticket the filter does not apply to:\n%s", page)
	}
	if tk, _ := b.st.Get(b.ctx, esc2); tk.State != store.StateEscalated {
		t.Fatal("the confirmation page acted")
	}
	form := url.Values{"csrf": {token}, "do": {"requeue"}, "id": {fmt.Sprint(esc2), fmt.Sprint(esc1)}, "note": {"bulk note"}, "back": {"/?state=escalated&repo=app"}}
	if code, _, _ := post(t, srv.URL, "/bulk", form, same); code != 400 {
		t.Errorf("a bulk POST without confirm = %d, want 400", code)
	}
	form.Set("confirm", "yes")
	if code, _, _ := post(t, srv.URL, "/bulk", url.Values{"do": {"requeue"}, "id": {fmt.Sprint(other)}, "confirm": {"yes"}}, same); code != 403 {
		t.Errorf("a bulk POST without the token = %d, want 403", code)
	}
	if code, _, _ := post(t, srv.URL, "/bulk", url.Values{"csrf": {token}, "do": {"cancel"}, "id": {fmt.Sprint(other)}, "confirm": {"yes"}}, evil); code != 403 {
		t.Errorf("a cross-site bulk POST = %d, want 403", code)
	}
	code, body, _ := post(t, srv.URL, "/bulk", form, same)
	if code != 200 {
		t.Fatalf("bulk requeue = %d", code)
	}
	mustContain(t, "the bulk result", body, "requeue: 1 done, 1 not", fmt.Sprintf(`id="bulk-%d"`, esc2), "not changed:")
	for id, want := range map[int64]store.State{esc2: store.StateQueued, other: store.StateEscalated} {
		if tk, _ := b.st.Get(b.ctx, id); tk.State != want {
			t.Errorf("ticket %d is %s, want %s", id, tk.State, want)
		}
	}
	if rq, _ := b.st.Requeues(b.ctx, esc2); len(rq) != 1 || rq[0].Note != "bulk note" {
		t.Errorf("the bulk requeue's record = %+v; want its note", rq)
	}

	// Bulk cancel of the queued app tickets, confirmed.
	_, page = get(t, srv.URL+"/bulk?do=cancel&state=queued&repo=app")
	mustContain(t, "the bulk cancel confirmation", page, "cancel 3 ticket(s)?")
	ids := url.Values{"csrf": {token}, "do": {"cancel"}, "confirm": {"yes"}, "id": {fmt.Sprint(q), fmt.Sprint(esc1), fmt.Sprint(esc2)}}
	if code, body, _ := post(t, srv.URL, "/bulk", ids, same); code != 200 || !strings.Contains(body, "cancel: 3 done") {
		t.Errorf("bulk cancel = %d %s", code, clip(300, body))
	}
	for _, id := range []int64{q, esc1, esc2} {
		if tk, _ := b.st.Get(b.ctx, id); tk.State != store.StateCancelled {
			t.Errorf("ticket %d is %s after the bulk cancel", id, tk.State)
		}
	}
}

// TestNightPage: /nights/N shows one night whole: its error unclipped, its figures, its
// digest's delivery, the tickets that finished in it and not those of other nights;
// /nights links each night and clips errors to the part that differs.
func TestNightPage(t *testing.T) {
	b := newBuilder(t)
	prefix := "model endpoint preflight failed: maker: the server at https://llm.internal.example/v1 answered: "
	n1 := b.startNight("cron")
	b.endNight(n1, store.OutcomeFailed, prefix+"HTTP 401: invalid api key")
	n2 := b.startNight("cron")
	b.endNight(n2, store.OutcomeFailed, prefix+"HTTP 429: quota exceeded for the month")
	n3 := b.startNight("cron")
	fixed := b.ticket("app", "Fixed in night 3", attemptPlan{2, "done", ""})
	b.endNight(n3, store.OutcomeOK, "")
	n4 := b.startNight("cron")
	later := b.ticket("app", "Fixed in night 4", attemptPlan{2, "done", ""})
	b.endNight(n4, store.OutcomeOK, "")
	if err := b.st.RecordDigest(b.ctx, store.DigestDelivery{RunID: n3, Error: "webhook answered 502 Bad Gateway"}); err != nil {
		t.Fatal(err)
	}
	srv := serveWith(t, b.st, Options{})
	_, page := get(t, fmt.Sprintf("%s/nights/%d", srv.URL, n1))
	mustContain(t, "night 1", page, "Night 1", "failed", prefix+"HTTP 401: invalid api key", "Next: Nothing was claimed")
	_, page = get(t, fmt.Sprintf("%s/nights/%d", srv.URL, n3))
	mustContain(t, "night 3", page, "<b>1</b> done", "Fixed in night 3", "not delivered", "502 Bad Gateway")
	if strings.Contains(page, "Fixed in night 4") {
		t.Errorf("night 3's page lists a ticket of night 4 (%d)", later)
	}
	_ = fixed
	for path, want := range map[string]int{"/nights/99": 404, "/nights/x": 400} {
		if code, _ := get(t, srv.URL+path); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
	_, nights := get(t, srv.URL+"/nights")
	mustContain(t, "/nights", nights, fmt.Sprintf(`href="/nights/%d"`, n1), "401: invalid api key", "429: quota exceeded", "digest not delivered: webhook answered 502")
}
