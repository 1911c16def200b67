package status

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// driveStep is one thing the driver page does in the console's window: fill the fields of
// the form that matches Form (or follow the link that matches Link), then submit it. Drop
// names form fields to remove before submitting (a form without its token).
type driveStep struct {
	Form   string            `json:"form,omitempty"`
	Link   string            `json:"link,omitempty"`
	Fields map[string]string `json:"fields,omitempty"`
	Drop   []string          `json:"drop,omitempty"`
}

// driverPage is a page of the test's own, on the console's origin, that opens the console
// in a window of its own (the console refuses to be framed), acts in it as an operator's
// clicks would — the browser sends the form, with its Origin and Sec-Fetch-Site — and
// copies the page the last step led to into its own DOM for --dump-dom.
func driverPage(start string, steps []driveStep) string {
	js, _ := json.Marshal(steps)
	return `<!doctype html><html><body><pre id="out">pending</pre><script>
const steps = ` + string(js) + `;
const w = window.open(` + fmt.Sprintf("%q", start) + `, "console");
let doc = null, i = 0;
function tick() {
  let d;
  try { d = w.document; } catch (e) { document.getElementById("out").textContent = "cross-origin: " + e; return; }
  if (!d || d === doc || d.readyState !== "complete" || d.location.href === "about:blank") { setTimeout(tick, 20); return; }
  doc = d;
  if (i === steps.length) { document.getElementById("out").textContent = d.documentElement.outerHTML; return; }
  const s = steps[i++];
  if (s.link) {
    const a = d.querySelector(s.link);
    if (!a) { document.getElementById("out").textContent = "no link " + s.link + " in " + d.documentElement.outerHTML; return; }
    w.location.href = a.href;
  } else {
    const f = d.querySelector(s.form);
    if (!f) { document.getElementById("out").textContent = "no form " + s.form + " in " + d.documentElement.outerHTML; return; }
    for (const [k, v] of Object.entries(s.fields || {})) f.elements[k].value = v;
    for (const k of (s.drop || [])) f.elements[k].remove();
    f.requestSubmit();
  }
  setTimeout(tick, 20);
}
setTimeout(tick, 20);
</script></body></html>`
}

// consoleServer serves the console as the daemon does (the Host check in front of the
// handler, on a real listener) plus /__drive/N, the driver pages, on the same origin.
func consoleServer(t *testing.T, st *store.Store, opts Options, drivers map[string]string) string {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", s.Handler())
	mux.HandleFunc("GET /__drive/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, drivers[r.PathValue("name")])
	})
	srv := &http.Server{Handler: hostCheck(mux, ln.Addr(), nil), ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// drive runs the driver page name in Chromium and returns the console page its last step
// led to.
func drive(t *testing.T, base, name string) string {
	t.Helper()
	dom := chromium(t, 1400, 900, "--disable-popup-blocking", "--virtual-time-budget=8000", "--dump-dom", base+"/__drive/"+name)
	out := dom[strings.Index(dom, `<pre id="out">`)+len(`<pre id="out">`):]
	out = html.UnescapeString(out[:strings.Index(out, "</pre>")])
	if out == "pending" || strings.HasPrefix(out, "no ") || strings.HasPrefix(out, "cross-origin") {
		t.Fatalf("driver %s did not finish: %s", name, clip(2000, out))
	}
	return out
}

// TestConsoleActsInChromium: in a real browser, from the console's own pages, an operator
// answers a question, requeues an escalation with a note for the maker, asks a round of a
// done ticket's fix with a note, accepts a kept change (through its confirmation page) and
// requeues a filtered list in bulk (through its confirmation page naming the tickets); a
// form sent without its token, and one sent from another origin, change nothing. "Needs
// you" lists yesterday's escalation and today's failed night.
func TestConsoleActsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium several times; -short skips it")
	}
	b := newBuilder(t)
	yesterday, failed := consoleNights(b)
	q := b.asked("Which rounding?", "Half up or even?")
	esc := b.ticket("app", "Escalated, needs a note", attemptPlan{1, "fix", "fix: the judge wants the currency kept"})
	fixed := b.ticket("app", "Fixed, the reviewer wants more", attemptPlan{1, "done", ""})
	bulk1 := b.ticket("search", "Search escalation one", attemptPlan{1, "fix", "fix: one"})
	bulk2 := b.ticket("search", "Search escalation two", attemptPlan{1, "fix", "fix: two"})
	kept, _, err := b.st.Enqueue(b.ctx, store.NewTicket{Source: "dir", ExternalID: "kept.md", Repo: "app", Title: "Pinned behaviour"})
	if err != nil {
		t.Fatal(err)
	}
	b.clk.Advance(2 * time.Second)
	l, err := b.st.Claim(b.ctx, "w1", time.Minute)
	if err != nil || l.Ticket.ID != kept {
		t.Fatal(err)
	}
	if _, err := b.st.Fail(b.ctx, kept, l.Token, store.Failure{Kind: store.FailHuman, Branch: "ticketd/kept-attempt-1", Reason: "changes tests the base passed"}); err != nil {
		t.Fatal(err)
	}
	// The publisher is a test double: it records who accepted what.
	var mu sync.Mutex
	var accepted []string
	accept := func(_ context.Context, id int64, who string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		accepted = append(accepted, fmt.Sprintf("%d %s", id, who))
		return "published", nil
	}
	drivers := map[string]string{
		"answer": driverPage("/", []driveStep{{Form: fmt.Sprintf(`form[action="/tickets/%d/answer"]`, q), Fields: map[string]string{"answer": "Round half to even."}}}),
		"note":   driverPage("/", []driveStep{{Form: fmt.Sprintf(`form[action="/tickets/%d/requeue"]`, esc), Fields: map[string]string{"note": "Keep the original currency."}}}),
		"accept": driverPage(fmt.Sprintf("/tickets/%d", kept), []driveStep{{Link: fmt.Sprintf(`a[href="/tickets/%d/accept"]`, kept)},
			{Form: fmt.Sprintf(`form[action="/tickets/%d/accept"]`, kept), Fields: map[string]string{"name": "Ana"}}}),
		"revise": driverPage(fmt.Sprintf("/tickets/%d", fixed), []driveStep{{Form: fmt.Sprintf(`form[action="/tickets/%d/revise"]`, fixed),
			Fields: map[string]string{"note": "Also round the totals line."}}}),
		"bulk": driverPage("/?state=escalated&repo=search", []driveStep{{Link: `a[href^="/bulk?do=requeue"]`},
			{Form: `form.bulk`, Fields: map[string]string{"note": "Both: retry with the new index."}}}),
		"notoken": driverPage("/", []driveStep{{Form: fmt.Sprintf(`form[action="/tickets/%d/requeue"]`, yesterday), Drop: []string{"csrf"}}}),
	}
	base := consoleServer(t, b.st, Options{Accept: accept}, drivers)

	dom := chromium(t, 1400, 900, "--virtual-time-budget=4000", "--dump-dom", base+"/")
	needs := section(t, dom, "needs-you")
	mustContain(t, "needs you in the browser", needs, fmt.Sprintf(`id="ticket-%d"`, yesterday), "Yesterday's escalation",
		fmt.Sprintf(`href="/nights/%d"`, failed), fmt.Sprintf("Night %d (cron) failed", failed), "invalid api key")
	if strings.Contains(dom, "Nothing needs you") {
		t.Error("the browser shows \"Nothing needs you\" under a failed night")
	}

	page := drive(t, base, "notoken")
	mustContain(t, "a form without its token", page, "Refused", "token")
	if tk, _ := b.st.Get(b.ctx, yesterday); tk.State != store.StateEscalated {
		t.Errorf("a form without its token changed ticket %d to %s", yesterday, tk.State)
	}
	crossOrigin(t, base, b, yesterday)

	page = drive(t, base, "answer")
	mustContain(t, "after answering", page, "Answered")
	if qs, err := b.st.Questions(b.ctx, q); err != nil || len(qs) != 1 || qs[0].Answer != "Round half to even." || qs[0].AnsweredBy != actor {
		t.Errorf("the answer in the store: %+v, %v", qs, err)
	}
	page = drive(t, base, "note")
	mustContain(t, "after requeueing with a note", page, "Requeued")
	if rq, err := b.st.Requeues(b.ctx, esc); err != nil || len(rq) != 1 || rq[0].Note != "Keep the original currency." {
		t.Errorf("the requeue's note in the store: %+v, %v", rq, err)
	}
	page = drive(t, base, "revise")
	mustContain(t, "after asking a round", page, "Round asked")
	if r, ok, err := b.st.OpenRound(b.ctx, fixed); err != nil || !ok || r.Note != "Also round the totals line." || r.Actor != actor {
		t.Errorf("the round in the store: %+v, %v, %v; want the note, asked from the status page", r, ok, err)
	}
	page = drive(t, base, "accept")
	mustContain(t, "after accepting", page, "Accepted")
	mu.Lock()
	if len(accepted) != 1 || accepted[0] != fmt.Sprintf("%d status page: Ana", kept) {
		t.Errorf("accepted = %v; want ticket %d once, by Ana", accepted, kept)
	}
	mu.Unlock()
	page = drive(t, base, "bulk")
	mustContain(t, "after the bulk requeue", page, "requeue: 2 done", fmt.Sprintf(`id="bulk-%d"`, bulk1), fmt.Sprintf(`id="bulk-%d"`, bulk2))
	for _, id := range []int64{bulk1, bulk2} {
		if rq, _ := b.st.Requeues(b.ctx, id); len(rq) != 1 || rq[0].Note != "Both: retry with the new index." {
			t.Errorf("ticket %d's bulk requeue: %+v", id, rq)
		}
	}
	if tk, _ := b.st.Get(b.ctx, yesterday); tk.State != store.StateEscalated {
		t.Errorf("the bulk requeue of repo search changed ticket %d of app to %s", yesterday, tk.State)
	}
}

// crossOrigin has Chromium load a page of another origin whose form posts to the console
// (with a valid token, as if it had one) and checks the console refuses it.
func crossOrigin(t *testing.T, base string, b *builder, id int64) {
	t.Helper()
	_, home := get(t, base+"/")
	token := csrfRe.FindStringSubmatch(home)[1]
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/tickets/%d/requeue"><input name="csrf" value="%s"><input name="note" value="from elsewhere"></form><script>document.getElementById("f").submit()</script>`, base, id, token)
	}))
	defer evil.Close()
	dom := chromium(t, 1400, 900, "--virtual-time-budget=4000", "--dump-dom", evil.URL+"/")
	mustContain(t, "a form from another origin", dom, "Refused", "another site")
	if tk, _ := b.st.Get(b.ctx, id); tk.State != store.StateEscalated {
		t.Errorf("a form from another origin changed ticket %d to %s", id, tk.State)
	}
}
