package status

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/store"
)

const evilTitle = `<script>alert("title")</script> average of []`

type fixture struct {
	store              *store.Store
	running, escalated int64
	done               int64
	runningCalls       int
}

func f64(v float64) *float64 { return &v }

// setup builds a database as a night leaves it: a running ticket with model and tool calls,
// a done one and an escalated one whose title and reason carry markup.
func setup(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.StartRun(ctx, "once"); err != nil {
		t.Fatal(err)
	}
	var fx fixture
	fx.store = st
	enqueueClaim := func(ext, title string, attempts int) store.Lease {
		if _, _, err := st.Enqueue(ctx, store.NewTicket{Source: "dir", ExternalID: ext, Repo: "app", Title: title, MaxAttempts: attempts}); err != nil {
			t.Fatal(err)
		}
		l, err := st.Claim(ctx, "w1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	call := func(id int64, i int, prompt, cached, out int64, role string) {
		t.Helper()
		if _, err := st.RecordModelCall(ctx, store.ModelCall{TicketID: id, Attempt: 1, Role: role, Model: "gpt-4.1",
			PromptTokens: prompt, CachedTokens: cached, CompletionTokens: out, CostUSD: f64(0.001 * float64(i+1)),
			Latency: time.Second, StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	d := enqueueClaim("d", "Truncate cuts words in half", 3)
	call(d.Ticket.ID, 0, 3000, 0, 200, "triage")
	call(d.Ticket.ID, 1, 5000, 2944, 300, "maker")
	if err := st.Complete(ctx, d.Ticket.ID, d.Token, store.Result{Branch: "ticketd/1-truncate"}); err != nil {
		t.Fatal(err)
	}
	fx.done = d.Ticket.ID
	e := enqueueClaim("e", evilTitle, 1)
	call(e.Ticket.ID, 0, 2000, 0, 100, "maker")
	if _, err := st.Fail(ctx, e.Ticket.ID, e.Token, store.Failure{Kind: store.FailFix, Reason: `budget exhausted <img src=x onerror=alert(1)>`}); err != nil {
		t.Fatal(err)
	}
	fx.escalated = e.Ticket.ID
	r := enqueueClaim("r", "Discount applied twice", 3)
	fx.running = r.Ticket.ID
	for i, c := range [][3]int64{{3100, 0, 150}, {6200, 2944, 400}, {8100, 6016, 250}, {9400, 7936, 600}} {
		call(r.Ticket.ID, i, c[0], c[1], c[2], "maker")
		fx.runningCalls++
	}
	for i, tool := range []string{"read_files", "edit_file", "run_checks"} {
		if _, err := st.RecordToolCall(ctx, store.ToolCall{TicketID: r.Ticket.ID, Attempt: 1, Step: i + 1, Tool: tool, OK: true,
			Duration: time.Duration(i+1) * 700 * time.Millisecond, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

func serve(t *testing.T, st *store.Store) *httptest.Server {
	t.Helper()
	s, err := New(st, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthz(t *testing.T) {
	fx := setup(t)
	srv := serve(t, fx.store)
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz = %d %q, want 200 ok", code, body)
	}
	fx.store.Close() // negative control: a dead database is not healthy
	if code, _ := get(t, srv.URL+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("healthz with a closed store = %d, want 503", code)
	}
}

func TestMetricsParse(t *testing.T) {
	fx := setup(t)
	// A component with live state (here a stand-in for a circuit breaker) adds its collector.
	breaker := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ticketd_breaker_open", Help: "test"}, func() float64 { return 1 })
	s, err := New(fx.store, Options{Collectors: []prometheus.Collector{breaker}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		fam, ok := fams[name]
		if !ok {
			return 0, false
		}
	next:
		for _, m := range fam.Metric {
			for k, v := range labels {
				if !hasLabel(m, k, v) {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
		return 0, false
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ticketd_tickets", map[string]string{"state": "running"}, 1},
		{"ticketd_tickets", map[string]string{"state": "done"}, 1},
		{"ticketd_tickets", map[string]string{"state": "escalated"}, 1},
		{"ticketd_tickets", map[string]string{"state": "queued"}, 0},
		{"ticketd_claims_total", nil, 3},
		{"ticketd_lease_expiries_total", nil, 0},
		{"ticketd_rescues_total", nil, 0},
		{"ticketd_events_total", map[string]string{"kind": "escalated"}, 1},
		{"ticketd_model_calls_total", map[string]string{"role": "maker", "model": "gpt-4.1"}, 6},
		{"ticketd_model_tokens_total", map[string]string{"role": "maker", "kind": "cached"}, 2944 + 2944 + 6016 + 7936},
		{"ticketd_model_tokens_total", map[string]string{"role": "triage", "kind": "prompt"}, 3000},
		{"ticketd_tool_call_duration_seconds", map[string]string{"tool": "run_checks"}, 1},
		{"ticketd_store_up", nil, 1},
		{"ticketd_breaker_open", nil, 1},
	}
	for _, tt := range tests {
		got, ok := value(tt.name, tt.labels)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (found %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if v, ok := value("ticketd_model_cost_usd_total", map[string]string{"role": "maker"}); !ok || v <= 0 {
		t.Errorf("maker cost = %v, %v; want > 0", v, ok)
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("go runtime metrics missing")
	}
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.Label {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// TestHostCheck: the page answers only to its own address (and localhost at its port, and
// the names under http.hosts); a DNS-rebinding page's request, which carries the attacker's
// name as its Host, gets 421.
func TestHostCheck(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page")) })
	listen := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8377}
	h := hostCheck(ok, listen, []string{"status.internal", "Tunnel.example:9000"})
	tests := []struct {
		host string
		want int
	}{
		{"127.0.0.1:8377", 200}, {"localhost:8377", 200}, {"LOCALHOST:8377", 200},
		{"status.internal", 200}, {"status.internal:8377", 200}, {"tunnel.example:9000", 200},
		{"evil.example:8377", 421}, {"127.0.0.1:9999", 421}, {"localhost", 421}, {"", 421},
		{"tunnel.example", 421},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = tt.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("Host %q: status %d, want %d (%s)", tt.host, w.Code, tt.want, w.Body)
		}
	}
}

// TestPageShowsQuestions: a ticket whose maker asked is under "needs you" as needs_info,
// with its question (escaped: a model wrote it) and how to answer it.
func TestPageShowsQuestions(t *testing.T) {
	fx := setup(t)
	ctx := context.Background()
	if _, _, err := fx.store.Enqueue(ctx, store.NewTicket{Source: "dir", ExternalID: "q", Repo: "app", Title: "Refund sign"}); err != nil {
		t.Fatal(err)
	}
	l, err := fx.store.Claim(ctx, "w2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.store.AskHuman(ctx, l.Ticket.ID, l.Token, store.Asked{Question: `Should add(2, 3) be 5 <b>or</b> -1 for refunds?`}); err != nil {
		t.Fatal(err)
	}
	_, html := get(t, serve(t, fx.store).URL+"/")
	needs := html[strings.Index(html, `id="needs-you"`):]
	for _, want := range []string{fmt.Sprintf(`id="ticket-%d"`, l.Ticket.ID), "needs_info", "Should add(2, 3) be 5 &lt;b&gt;or&lt;/b&gt; -1 for refunds?",
		fmt.Sprintf("ticketctl answer %d", l.Ticket.ID)} {
		if !strings.Contains(needs, want) {
			t.Errorf("needs you lacks %q", want)
		}
	}
}

// TestToolLabelsBounded: tool names a model made up do not become label values of
// ticketd_tool_call_duration_seconds; they are counted together as "other" (issue 31: a
// 14.9 MB scrape).
func TestToolLabelsBounded(t *testing.T) {
	fx := setup(t)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("invented_tool_%d_%s", i, strings.Repeat("x", 200))
		if _, err := fx.store.RecordToolCall(ctx, store.ToolCall{TicketID: fx.running, Attempt: 1, Step: 10 + i, Tool: name, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, fx.store)
	_, body := get(t, srv.URL+"/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]uint64{}
	for _, m := range fams["ticketd_tool_call_duration_seconds"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "tool" {
				labels[l.GetValue()] = m.Histogram.GetSampleCount()
			}
		}
	}
	for l := range labels {
		if l != otherTool && !tools.Known(l) {
			t.Errorf("label tool=%.40q comes from model output", l)
		}
	}
	if labels[otherTool] != 50 || labels["run_checks"] != 1 {
		t.Errorf("tool labels %v: want the 50 invented calls under %q and run_checks kept", labels, otherTool)
	}
}
