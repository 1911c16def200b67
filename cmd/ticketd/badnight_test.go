package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/status"
	"github.com/ticketd/ticketd/store"
)

// nimProxy stands in front of the scripted model (a test double) as NVIDIA NIM and Azure
// do: a chat request that carries prompt_cache_key is answered 400 with their words; others
// pass. It counts the requests it refused.
type nimProxy struct {
	next    http.Handler
	refused atomic.Int64
}

func (p *nimProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if strings.HasSuffix(r.URL.Path, "/chat/completions") && bytes.Contains(body, []byte(`"prompt_cache_key"`)) {
		p.refused.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"Unrecognized request argument supplied: prompt_cache_key","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.next.ServeHTTP(w, r)
}

var baseURLRe = regexp.MustCompile(`base_url: "([^"]+)"`)

// TestBadNight is the night an operator must never sleep through: the endpoint rejects a
// parameter every request carries. `ticketd once` stops before any claim and exits 3, no
// attempt is charged, the night is recorded as failed with the server's words, and the
// status page and /metrics show it. Setting what the error names makes the next night ok.
func TestBadNight(t *testing.T) {
	f := newRunFixture(t, "@daily")
	cfgText, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	m := baseURLRe.FindSubmatch(cfgText)
	if m == nil {
		t.Fatalf("no base_url in the fixture's config:\n%s", cfgText)
	}
	target, _ := url.Parse(string(m[1]))
	proxy := &nimProxy{next: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	bad := strings.Replace(string(cfgText), string(m[0]), `base_url: "`+srv.URL+target.Path+`"`, 1)
	if err := os.WriteFile(f.config, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"once", "--config", f.config, "--log-level", "error"}, &stdout, &stderr)
	t.Logf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	const words = "Unrecognized request argument supplied: prompt_cache_key"
	if code != exitIncomplete {
		t.Errorf("ticketd once exited %d, want %d (the endpoint kept the night from its tickets)", code, exitIncomplete)
	}
	if !strings.Contains(stdout.String(), "failed: 0 ticket(s) worked") {
		t.Errorf("stdout %q, want the night named failed with 0 tickets worked", stdout.String())
	}
	for _, w := range []string{words, "HTTP 400", "models.endpoints.scripted.prompt_cache_key: false"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	if n := proxy.refused.Load(); n != 4 {
		t.Errorf("%d requests refused, want 4 (one preflight per role, nothing after)", n)
	}

	st, err := store.Open(context.Background(), f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tk, err := st.Get(context.Background(), 1)
	if err != nil || tk.State != store.StateQueued || tk.Attempts != 0 {
		t.Errorf("ticket 1: %s with %d attempts (%v), want queued with none charged", tk.State, tk.Attempts, err)
	}
	if calls, _ := st.ModelCalls(context.Background(), 1); len(calls) != 0 {
		t.Errorf("%d model calls charged to the ticket, want none", len(calls))
	}
	runs, err := st.Runs(context.Background(), 0)
	if err != nil || len(runs) != 1 || runs[0].Outcome != store.OutcomeFailed || !strings.Contains(runs[0].Error, words) || runs[0].Worked != 0 {
		t.Fatalf("runs = %+v, %v; want one failed night with the server's words", runs, err)
	}

	sv, err := status.New(st, status.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := httptest.NewServer(sv.Handler())
	t.Cleanup(page.Close)
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(page.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	html := get("/")
	i := strings.Index(html, `id="last-night"`)
	if i < 0 || !strings.Contains(html[i:], "failed") || !strings.Contains(html[i:], words) ||
		i > strings.Index(html, `id="needs-you"`) {
		t.Errorf("status page does not head with the failed night and the server's words:\n%s", html)
	}
	metrics := get("/metrics")
	for _, w := range []string{`ticketd_nights_total{outcome="failed"} 1`, `ticketd_nights_total{outcome="ok"} 0`,
		`ticketd_last_night_end_timestamp_seconds{outcome="ok"} 0`} {
		if !strings.Contains(metrics, w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
	if !regexp.MustCompile(`ticketd_last_night_end_timestamp_seconds\{outcome="failed"\} [1-9]`).MatchString(metrics) {
		t.Errorf("/metrics has no end time of the failed night")
	}
	st.Close()

	// The error named the setting: with it, the next night works the ticket.
	fixed := strings.Replace(bad, `base_url: "`+srv.URL+target.Path+`"`, `base_url: "`+srv.URL+target.Path+`", prompt_cache_key: false`, 1)
	if err := os.WriteFile(f.config, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), []string{"once", "--config", f.config, "--log-level", "error"}, &stdout, &stderr)
	if code != exitOK || !strings.Contains(stdout.String(), " ok: 1 ticket(s) worked (1 done") {
		t.Errorf("after prompt_cache_key: false, exit %d, stdout %q, stderr %q; want 0 and the ticket done", code, stdout.String(), stderr.String())
	}
}

// TestSecondDaemonRefused: a second ticketd on the workspace and database of a running one
// refuses to start, naming the first one's pid, before it touches anything.
func TestSecondDaemonRefused(t *testing.T) {
	f := newRunFixture(t, "@daily")
	cfg, err := config.Load(f.config)
	if err != nil {
		t.Fatal(err)
	}
	release, err := daemon.LockInstance(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"once", "--config", f.config}, &stdout, &stderr)
	if code != exitFailed || !strings.Contains(stderr.String(), "in use by ticketd pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("exit %d, stderr %q; want 1 naming the other's pid", code, stderr.String())
	}
	if _, err := os.Stat(f.db); !os.IsNotExist(err) {
		t.Errorf("the refused daemon touched the database (%v)", err)
	}
}
