package status

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// section returns the HTML of the element whose id is id, up to its section's end.
func section(t *testing.T, html, id string) string {
	t.Helper()
	i := strings.Index(html, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("the page has no section %q:\n%.3000s", id, html)
	}
	j := strings.Index(html[i:], "</section>")
	if j < 0 {
		return html[i:]
	}
	return html[i : i+j]
}

// inOrder fails unless each id appears after the one before it.
func inOrder(t *testing.T, html string, ids ...string) {
	t.Helper()
	last := -1
	for _, id := range ids {
		i := strings.Index(html, `id="`+id+`"`)
		if i < 0 {
			t.Errorf("no %q on the page", id)
			continue
		}
		if i < last {
			t.Errorf("%q comes before the section listed ahead of it (order wanted: %v)", id, ids)
		}
		last = i
	}
}

func mustContain(t *testing.T, what, html string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(html, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// TestHomeLeadsWithWhatNeedsYou: the overview starts with how the last night ended and what
// it cost, then the tickets that need a human with their whole reason and what was tried,
// then what runs, then what is done; the night's counts are the night's, the all-time
// counts apart. An escalation from an earlier night is counted and linked, not listed.
func TestHomeLeadsWithWhatNeedsYou(t *testing.T) {
	b := newBuilder(t)
	n1 := b.startNight("cron")
	old := b.ticket("app", "Old one", attemptPlan{1, "fix", "fix: the judge rejected it"})
	b.endNight(n1, store.OutcomeOK, "")
	n2 := b.startNight("cron")
	long := "fix: the same checks failed twice with no change: " + strings.Repeat("tests/test_x.py::test_case_with_a_long_name ", 12) + "<b>end</b>"
	esc := b.ticket("billing", `<script>alert("t")</script> refunds double`, attemptPlan{2, "fix", "fix: first try failed"}, attemptPlan{3, "fix", long})
	parked := b.ticket("app", "Endpoint keeps failing this one", attemptPlan{1, "park", "parked until the next night: released 3 times tonight for transport faults"})
	done := b.ticket("app", "Fixed tonight", attemptPlan{4, "done", ""})
	b.endNight(n2, store.OutcomePartial, "1 ticket(s) parked: the endpoint kept failing them")

	srv := serveWith(t, b.st, Options{})
	code, html := get(t, srv.URL+"/")
	if code != 200 {
		t.Fatalf("GET / = %d", code)
	}
	inOrder(t, html, "last-night", "needs-you", "running", "done", "all-time")
	night := section(t, html, "night")
	mustContain(t, "the last night", night, "outcome-partial", "partial", "Night 2 (cron)", "1 ticket(s) parked",
		"<b>1</b> done", "<b>1</b> escalated", "$0.")
	needs := section(t, html, "needs-you")
	mustContain(t, "needs you", needs, fmt.Sprintf(`href="/tickets/%d"`, esc), "&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt; refunds double",
		strings.ReplaceAll(strings.ReplaceAll(long, "<", "&lt;"), ">", "&gt;"), "attempt 1: <b>retry</b> — fix: fix: first try failed",
		"attempt 2: <b>escalated</b>", "Endpoint keeps failing this one", "released 3 times tonight",
		// Whatever night they came from: yesterday's escalation, and the partial night itself.
		fmt.Sprintf(`href="/tickets/%d"`, old), "Old one", `href="/nights/2"`, "Night 2 (cron) partial", "1 ticket(s) parked: the endpoint kept failing them")
	if strings.Contains(needs, "Fixed tonight") {
		t.Errorf("needs-you lists a ticket that does not need anyone tonight:\n%s", needs)
	}
	if strings.Contains(html, "<script>alert") {
		t.Error("an untrusted title reached the page unescaped")
	}
	mustContain(t, "done", section(t, html, "done"), "Fixed tonight", fmt.Sprintf("ticketd/%d-fix", done))
	all := section(t, html, "all-time")
	mustContain(t, "all time", all, `<b>2</b> escalated`, `<b>1</b> done`, `<b>1</b> parked`, `href="/?state=escalated"`)
	// Each action is a POST form with this process's token.
	for _, id := range []int64{esc, parked} {
		mustContain(t, "needs you", needs, fmt.Sprintf(`action="/tickets/%d/requeue"`, id))
	}
	mustContain(t, "needs you", needs, fmt.Sprintf(`action="/tickets/%d/cancel"`, parked))
	if strings.Contains(needs, fmt.Sprintf(`action="/tickets/%d/cancel"`, esc)) {
		t.Error("an escalated ticket offers cancel, which the store refuses")
	}
	_ = old
}

// TestHomeWhileANightRuns: a night in progress shows its counts so far and what is running,
// below the last night that ended.
func TestHomeWhileANightRuns(t *testing.T) {
	b := newBuilder(t)
	n1 := b.startNight("cron")
	b.ticket("app", "Yesterday's", attemptPlan{2, "done", ""})
	b.endNight(n1, store.OutcomeOK, "")
	b.startNight("cron")
	b.ticket("app", "Done so far", attemptPlan{3, "done", ""})
	run := b.ticket("app", "Being fixed", attemptPlan{2, "running", ""})
	html := func() string { _, h := get(t, serveWith(t, b.st, Options{}).URL+"/"); return h }()
	inOrder(t, html, "last-night", "tonight", "needs-you", "running", "done")
	mustContain(t, "tonight", section(t, html, "night"), "outcome-running", "<b>2</b> worked", "<b>1</b> done", "<b>1</b> running now", "spent so far")
	mustContain(t, "running", section(t, html, "running"), fmt.Sprintf(`id="ticket-%d"`, run), "Being fixed", "1/1")
	mustContain(t, "needs you", section(t, html, "needs-you"), "Nothing needs you")
}

// TestHomeOnAnEmptyDatabase: a fresh install says what to do, not an error.
func TestHomeOnAnEmptyDatabase(t *testing.T) {
	b := newBuilder(t)
	srv := serveWith(t, b.st, Options{})
	for _, path := range []string{"/", "/live", "/nights", "/?state=", "/?state=escalated&repo=app"} {
		code, html := get(t, srv.URL+path)
		if code != 200 {
			t.Errorf("GET %s = %d", path, code)
		}
		if strings.Contains(html, `class="problems"`) {
			t.Errorf("GET %s reports a problem on an empty database:\n%s", path, html)
		}
	}
	_, html := get(t, srv.URL+"/")
	inOrder(t, html, "last-night", "needs-you", "running", "done", "all-time")
	mustContain(t, "the empty page", html, "No night has ended yet", "ticketd once --config FILE", "Nothing needs you", "Nothing is running")
}

var barRe = regexp.MustCompile(`<g class="bar[^"]*"`)

// bars counts the bars of ticket id's call chart in an HTML document.
func bars(t *testing.T, html string, id int64) int {
	t.Helper()
	start := strings.Index(html, fmt.Sprintf(`<svg class="chart calls" data-ticket="%d"`, id))
	if start < 0 {
		return -1
	}
	end := strings.Index(html[start:], "</svg>")
	return len(barRe.FindAllString(html[start:start+end], -1))
}

// TestTicketPage: one ticket's page has its facts (branch, pull request), each attempt with
// its stop reason, what each tier of the checks found, the review findings and the diff, the
// report rendered from markdown (its HTML and script links dropped), a chart with one bar
// per model call on a labelled axis and the totals by role, and the events.
func TestTicketPage(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	id := b.ticket("app", "Average of [] crashes", attemptPlan{3, "fix", "fix: tests still fail"}, attemptPlan{5, "done", ""})
	if err := b.st.RecordOutput(b.ctx, id, store.OutputPullRequest, "https://github.com/o/app/pull/7"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.RecordToolCall(b.ctx, store.ToolCall{TicketID: id, Attempt: 1, Step: 3, Tool: "submit", Result: "The checks fail (compared with the base commit): tests: test_avg_empty failed", At: b.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	tk, _ := b.st.Get(b.ctx, id)
	report := "# Ticket\n\nFixed. <script>alert(1)</script> <img src=x onerror=alert(2)> [click](javascript:alert(3))\n\n```diff\n+fix\n```\n"
	if err := os.WriteFile(filepath.Join(tk.ResultDir, "report.md"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := serveWith(t, b.st, Options{})
	code, html := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, id))
	if code != 200 {
		t.Fatalf("GET /tickets/%d = %d:\n%s", id, code, html)
	}
	inOrder(t, html, "ticket", "asked", "attempts", "calls", "report", "events")
	mustContain(t, "facts", section(t, html, "ticket"), fmt.Sprintf("ticketd/%d-fix", id), `href="https://github.com/o/app/pull/7"`,
		"report.md</a>", fmt.Sprintf(`/tickets/%d/files/patch`, id))
	att := section(t, html, "attempts")
	mustContain(t, "attempts", att, `id="attempt-2"`, `id="attempt-1"`, "ended <b>retry</b>", "ended <b>done</b>", "fix: tests still fail",
		"first tier failed in 610ms", "exit 1: 1 failed, 11 passed", "passed: 12 passed", "diff: 1 file(s), +1 −1", "<b>minor</b> [scope]", "renames a helper",
		`<span class="add">&#43;fix</span>`, `<span class="del">-bug</span>`, "step 3 submit", "test_avg_empty failed", "attempt-1/patch")
	if strings.Index(att, `id="attempt-2"`) > strings.Index(att, `id="attempt-1"`) {
		t.Error("the attempts are not newest first")
	}
	if got := bars(t, html, id); got != 8 {
		t.Errorf("the call chart has %d bars, want 8 (one per model call)", got)
	}
	// The phone's variant of the chart, after the wide one, draws every call too.
	_, narrow, _ := strings.Cut(html, `<div class="chart-wrap chart-narrow">`)
	if got := bars(t, narrow, id); got != 8 || !strings.Contains(narrow, `viewBox="0 0 380 `) {
		t.Errorf("the narrow call chart has %d bars, want 8", got)
	}
	calls := section(t, html, "calls")
	mustContain(t, "the call chart", calls, "tokens per call", "model calls in order", "attempt 1</text>", "attempt 2</text>",
		`<text class="role"`, ">T</text>", ">M</text>", "triage", "maker", "cached prompt", "uncached prompt", "completion")
	rep := section(t, html, "report")
	mustContain(t, "the report", rep, "<h1>Ticket</h1>", `<code class="language-diff">+fix`)
	for _, bad := range []string{"<script>alert(1)", "<img src=x", `href="javascript:`} {
		if strings.Contains(rep, bad) {
			t.Errorf("the rendered report carries %q", bad)
		}
	}
	mustContain(t, "events", section(t, html, "events"), "<b>enqueued</b>", "<b>retry</b>", "<b>completed</b>", "running → done")

	for _, tt := range []struct {
		path string
		want int
		body string
	}{
		{fmt.Sprintf("/tickets/%d/files/attempt-1/patch", id), 200, "+half a fix"},
		{fmt.Sprintf("/tickets/%d/files/report.md", id), 200, "<script>alert(1)</script>"}, // served as text/plain
		{fmt.Sprintf("/tickets/%d/files/../../t.db", id), 0, ""},
		{fmt.Sprintf("/tickets/%d/files/nope", id), 404, ""},
		{"/tickets/999", 404, "no ticket 999"},
		{"/tickets/abc", 400, "not a ticket id"},
	} {
		resp, err := http.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		buf := new(strings.Builder)
		_, _ = io.Copy(buf, resp.Body)
		resp.Body.Close()
		if tt.want != 0 && resp.StatusCode != tt.want {
			t.Errorf("GET %s = %d, want %d", tt.path, resp.StatusCode, tt.want)
		}
		if tt.want == 200 && resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q, want text/plain", tt.path, resp.Header.Get("Content-Type"))
		}
		if resp.StatusCode == 200 && tt.want == 0 {
			t.Errorf("GET %s served a file outside the results folder", tt.path)
		}
		if !strings.Contains(strings.ToLower(buf.String()), strings.ToLower(tt.body)) {
			t.Errorf("GET %s: body lacks %q:\n%.300s", tt.path, tt.body, buf.String())
		}
	}
	if code, _ := get(t, fmt.Sprintf("%s/ticket/%d", srv.URL, id)); code != 200 {
		t.Errorf("the old /ticket/ID address does not lead to the ticket: %d", code)
	}
}

// TestResultsReaderRefusesOddFiles: a FIFO, a symlink or a device where a result file should
// be is refused at once; reading it would hang the page or leave the folder.
func TestResultsReaderRefusesOddFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "report.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "patch")); err != nil {
		t.Fatal(err)
	}
	// A folder that is a symlink out of the results leaves them as surely as a file does.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "patch"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "attempt-1")); err != nil {
		t.Fatal(err)
	}
	tk := store.Ticket{ID: 1, ResultDir: dir}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, name := range []string{"report.md", "patch", "../x", "/etc/passwd", "a/b/c", "attempt-1/patch"} {
			if data, _, err := (DirResults{}).ReadResult(t.Context(), tk, name, 1<<20); err == nil {
				t.Errorf("ReadResult(%q) = %q, want an error", name, data)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("reading a FIFO as a result file hangs")
	}
}

// TestHomeOnABenchNight: after a 31-ticket night the page counts the night's 28 done
// tickets, though it lists only the latest 15 and links to the rest.
func TestHomeOnABenchNight(t *testing.T) {
	b := newBuilder(t)
	benchLike(b)
	_, html := get(t, serveWith(t, b.st, Options{}).URL+"/")
	done := section(t, html, "done")
	mustContain(t, "done", done, `<span class="count good">28</span>`, "The latest 15 of 28", `href="/?state=done"`)
	if got := strings.Count(done, `<tr class="row-done">`); got != homeDone {
		t.Errorf("the done section lists %d tickets, want %d", got, homeDone)
	}
}

// TestListFiltersAndPages: /?state=&repo= lists the matching tickets, newest first, in pages
// linked by the last id shown; a bad filter is a 400 that says what to use.
func TestListFiltersAndPages(t *testing.T) {
	b := newBuilder(t)
	benchLike(b)
	srv := serveWith(t, b.st, Options{})
	_, html := get(t, srv.URL+"/?state=escalated")
	rows := strings.Count(section(t, html, "list"), `<tr class="row-escalated">`)
	if rows != 4 {
		t.Errorf("/?state=escalated lists %d tickets, want 4", rows)
	}
	_, html = get(t, srv.URL+"/?state=escalated&repo=billing")
	if got := strings.Count(html, `<tr class="row-`); got != 1 {
		t.Errorf("/?state=escalated&repo=billing lists %d tickets, want 1", got)
	}
	// 33 tickets at 25 a page: 2 pages, the second older than the first, none on both.
	seen := map[string]bool{}
	next, pages := "/?state=&limit=25", 0
	for next != "" && pages < 10 {
		_, html := get(t, srv.URL+strings.ReplaceAll(next, "&amp;", "&"))
		pages++
		for _, m := range regexp.MustCompile(`<td><a href="/tickets/(\d+)">`).FindAllStringSubmatch(html, -1) {
			if seen[m[1]] {
				t.Errorf("ticket %s is on two pages", m[1])
			}
			seen[m[1]] = true
		}
		m := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(html)
		next = ""
		if m != nil {
			next = m[1]
		}
	}
	if pages != 2 || len(seen) != 33 {
		t.Errorf("paged through %d page(s) and %d ticket(s), want 2 and 33", pages, len(seen))
	}
	code, html := get(t, srv.URL+"/?state=escalatd")
	if code != 400 || !strings.Contains(html, "use one of queued, running") {
		t.Errorf("a misspelt state = %d:\n%s", code, html)
	}
}

// TestNightsPage: one row per night with outcome, counts, success rate, cost and cached
// share, and a chart of success rate and cost with both axes labelled.
func TestNightsPage(t *testing.T) {
	b := newBuilder(t)
	benchLike(b)
	srv := serveWith(t, b.st, Options{})
	code, html := get(t, srv.URL+"/nights")
	if code != 200 {
		t.Fatalf("GET /nights = %d", code)
	}
	mustContain(t, "nights", html, `id="night-1"`, `id="night-3"`, "invalid api key", "success rate (bars)", "cost (line)", "100%", "$0")
	row := section(t, html, "night-3")
	row = row[:strings.Index(row, "</tr>")]
	mustContain(t, "night 3's row", row, "outcome-ok", ">31<", ">28<", ">3<", "90%", "$0.")
	// The bench-like calls: 31 tickets' prompts, of which the maker calls after the first
	// are cached but for 900 tokens each.
	tokens, err := b.st.NightTokens(b.ctx, []int64{3})
	if err != nil || tokens[3].PromptTokens == 0 {
		t.Fatalf("night 3's tokens: %+v, %v", tokens, err)
	}
	mustContain(t, "night 3's row", row, fmt.Sprintf(`<td class="num" data-label="cached">%.0f%%</td>`, tokens[3].CachedShare()*100))
	if fmt.Sprintf("%.0f", tokens[3].CachedShare()*100) == "90" {
		t.Fatal("the cached share equals the success rate: the check above cannot tell them apart")
	}
	// The chart comes twice, for a wide window and for a phone's, each with every night.
	charts := strings.Split(html, `<svg class="chart nights"`)[1:]
	if len(charts) != 2 {
		t.Fatalf("the page has %d nights charts, want 2 (wide and narrow)", len(charts))
	}
	for i, c := range charts {
		c = c[:strings.Index(c, "</svg>")]
		if got := strings.Count(c, `<g class="nightbar`); got != 3 {
			t.Errorf("chart %d has %d nights, want 3", i, got)
		}
		// Night 1 failed before any ticket: no rate, but a stub in the failed colour.
		mustContain(t, "the failed night", c, `<g class="nightbar outcome-failed"><title>night 1`, `class="norate"`)
	}
	mustContain(t, "the chart's variants", html, `<div class="chart-wrap chart-wide"><svg class="chart nights" viewBox="0 0 760 `,
		`<div class="chart-wrap chart-narrow"><svg class="chart nights" viewBox="0 0 380 `)
	if strings.Index(html, `id="night-3"`) > strings.Index(html, `id="night-1"`) {
		t.Error("the nights are not newest first")
	}
}

// TestCallChartAxis: bars are scaled to a round axis that is labelled, so a ticket whose
// largest call is 6 tokens is not drawn as full as one of 3,800; every call gets a bar.
func TestCallChartAxis(t *testing.T) {
	tests := []struct {
		top       int64
		wantMax   int64
		wantTicks []string
	}{
		{6, 6, []string{"0", "2", "4", "6"}},
		{3800, 4000, []string{"0", "1.0k", "2.0k", "3.0k", "4.0k"}},
		{4600, 6000, []string{"0", "2.0k", "4.0k", "6.0k"}},
		{1, 1, []string{"0", "1"}},
	}
	for _, tt := range tests {
		c := newCallChart(1, []store.ModelCall{{PromptTokens: tt.top, Attempt: 1, Role: "maker"}}, callChartW)
		var labels []string
		for _, tk := range c.Ticks {
			labels = append(labels, tk.Label)
		}
		if c.Max != tt.wantMax || strings.Join(labels, " ") != strings.Join(tt.wantTicks, " ") {
			t.Errorf("top %d: axis to %d with ticks %v, want %d with %v", tt.top, c.Max, labels, tt.wantMax, tt.wantTicks)
		}
		if h := c.Bars[0].UncachedH; h > float64(c.PlotH)+1e-9 || h < float64(c.PlotH)*float64(tt.top)/float64(c.Max)-1e-9 {
			t.Errorf("top %d: the bar is %v high of %d", tt.top, h, c.PlotH)
		}
	}
	many := make([]store.ModelCall, 500)
	for i := range many {
		many[i] = store.ModelCall{PromptTokens: int64(100 + i), CachedTokens: 50, CompletionTokens: 10, Attempt: 1 + i/200, Role: "maker"}
	}
	c := newCallChart(2, many, callChartW)
	if len(c.Bars) != 500 || len(c.Attempts) != 3 || c.ShowRoleLetter {
		t.Errorf("500 calls: %d bars, %d attempt marks, letters %v; want 500, 3, none (too narrow)", len(c.Bars), len(c.Attempts), c.ShowRoleLetter)
	}
	last := c.Bars[len(c.Bars)-1]
	if last.X+last.W > float64(c.PlotX+c.PlotW)+1e-6 {
		t.Errorf("the last bar ends at %v, past the plot's %d", last.X+last.W, c.PlotX+c.PlotW)
	}
}

// TestHomeShowsTheForecast: the daemon's cost forecast for the night is on the page, beside
// the night, and nothing is when there is none.
func TestHomeShowsTheForecast(t *testing.T) {
	b := newBuilder(t)
	text := "Forecast for the night's queue: $1.20 for 3 queued ticket(s); night.max_dollars is $1.00: the forecast exceeds it"
	srv := serveWith(t, b.st, Options{Forecast: func() string { return text }})
	for _, path := range []string{"/", "/live"} {
		_, html := get(t, srv.URL+path)
		mustContain(t, path, html, `id="forecast"`, "$1.20 for 3 queued ticket(s)", "the forecast exceeds it")
	}
	_, html := get(t, serveWith(t, b.st, Options{}).URL+"/")
	if strings.Contains(html, `id="forecast"`) {
		t.Errorf("a page without a forecast shows one")
	}
}

// TestOldTicketAddress: /ticket/ID leads to /tickets/ID and nowhere else: an id that is not
// a number (here one that path cleaning would make "/\evil.example", which a browser follows
// to another site) is refused, not redirected.
func TestOldTicketAddress(t *testing.T) {
	fx := setup(t)
	srv := serve(t, fx.store)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tt := range []struct {
		path, loc string
		code      int
	}{
		{fmt.Sprintf("/ticket/%d", fx.done), fmt.Sprintf("/tickets/%d", fx.done), 301},
		{"/ticket/..%2F%5Cevil.example", "", 400},
		{"/ticket/%5C%5Cevil.example", "", 400},
		{"/ticket/abc", "", 400},
	} {
		resp, err := c.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code || resp.Header.Get("Location") != tt.loc {
			t.Errorf("GET %s = %d to %q, want %d to %q", tt.path, resp.StatusCode, resp.Header.Get("Location"), tt.code, tt.loc)
		}
	}
}
