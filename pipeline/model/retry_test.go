package model

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRetryInjectedFaults runs 60 calls against a server that answers 20% of requests
// with 429 (Retry-After: 2) or 500: every call ends well, each fault costs exactly one
// retry, and every 429 is waited out for exactly its Retry-After.
func TestRetryInjectedFaults(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 20))
	var mu sync.Mutex
	faults := map[int]int{}
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		mu.Lock()
		roll := rng.Float64()
		mu.Unlock()
		switch {
		case roll < 0.10:
			mu.Lock()
			faults[429]++
			mu.Unlock()
			w.Header().Set("Retry-After", "2")
			writeJSON(w, 429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		case roll < 0.20:
			mu.Lock()
			faults[500]++
			mu.Unlock()
			writeJSON(w, 500, `{"error":{"message":"The server had an error","type":"server_error"}}`)
		default:
			writeJSON(w, 200, completion("ok", "stop", ""))
		}
	})
	cfg := testConfig(srv.URL)
	cfg.Retry = RetryConfig{MaxRetries: 5, BaseDelay: time.Second, MaxDelay: 8 * time.Second}
	b := setup(t, cfg)

	const calls = 60
	for i := range calls {
		if _, err := b.client.Chat(context.Background(), Request{Role: RoleMaker, TicketID: int64(i), Messages: userMsg("x").Messages}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	recs := b.rec.all()
	if len(recs) != calls {
		t.Fatalf("recorded %d calls, want %d", len(recs), calls)
	}
	retries := 0
	for _, c := range recs {
		retries += c.Retries
		if c.Retries > cfg.Retry.MaxRetries || c.ErrorClass != "" || c.Timeouts != 0 {
			t.Errorf("call %d: retries %d class %q timeouts %d; want <= %d, \"\", 0", c.TicketID, c.Retries, c.ErrorClass, c.Timeouts, cfg.Retry.MaxRetries)
		}
	}
	if faults[429] == 0 || faults[500] == 0 {
		t.Fatalf("injected faults = %v, want both kinds (seed gives none?)", faults)
	}
	if retries != faults[429]+faults[500] {
		t.Errorf("retries recorded = %d, want %d (429: %d, 500: %d)", retries, faults[429]+faults[500], faults[429], faults[500])
	}
	twoSecond := 0
	for _, d := range b.clock.Waits() {
		if d == 2*time.Second {
			twoSecond++
		} else if d > cfg.Retry.MaxDelay {
			t.Errorf("backoff wait %s exceeds max_delay %s", d, cfg.Retry.MaxDelay)
		}
	}
	if twoSecond != faults[429] {
		t.Errorf("waits of exactly Retry-After 2s = %d, want one per 429 (%d); waits: %v", twoSecond, faults[429], b.clock.Waits())
	}
	t.Logf("60 calls, injected 429: %d, 500: %d, retries: %d", faults[429], faults[500], retries)
}

func TestRetryExhausted(t *testing.T) {
	srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 503, `{"error":{"message":"overloaded","type":"server_error"}}`)
	})
	cfg := testConfig(srv.URL)
	cfg.Retry = RetryConfig{MaxRetries: 3, BaseDelay: time.Second, MaxDelay: 3 * time.Second}
	b := setup(t, cfg, WithRand(func() float64 { return 0 }))

	_, err := b.client.Chat(context.Background(), userMsg("x"))
	if !errors.Is(err, ErrTransport) {
		t.Fatalf("err = %v, want ErrTransport", err)
	}
	if !strings.Contains(err.Error(), "models.roles.maker: endpoint local") || !strings.Contains(err.Error(), "4 attempts, last server") {
		t.Errorf("err = %q, want the role, endpoint, attempts and class", err)
	}
	if n := log.count(); n != 4 {
		t.Errorf("server saw %d requests, want 1 + MaxRetries 3", n)
	}
	// jitter 0: half of 1s, 2s, then 4s capped at 3s
	want := []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	if got := b.clock.Waits(); !equalDurations(got, want) {
		t.Errorf("backoff waits = %v, want %v", got, want)
	}
	recs := b.rec.all()
	if len(recs) != 1 || recs[0].ErrorClass != ErrorClassServer || recs[0].Retries != 3 || recs[0].Error == "" || recs[0].CostUSD == nil || *recs[0].CostUSD != 0 {
		t.Errorf("recorded %+v, want one call with class server, 3 retries, an error and a known zero cost", recs)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	var clock *fakeClock
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
		if n == 0 {
			w.Header().Set("Retry-After", clock.Now().Add(7*time.Second).Format(http.TimeFormat))
			writeJSON(w, 429, `{"error":{"message":"slow down"}}`)
			return
		}
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	b := setup(t, testConfig(srv.URL))
	clock = b.clock
	if _, err := b.client.Chat(context.Background(), userMsg("x")); err != nil {
		t.Fatal(err)
	}
	if got := b.clock.Waits(); !equalDurations(got, []time.Duration{7 * time.Second}) {
		t.Errorf("waits = %v, want [7s] from the HTTP-date Retry-After", got)
	}
}

// TestLongRetryAfterNotWaited: a 5xx whose Retry-After is longer than retry.max_wait (a 503
// for maintenance; openrouter.ai/docs/api/errors: Retry-After on 503s) is not waited out
// inside the call, holding a worker: the call fails as a transport fault at once, saying so.
// One within max_wait is waited for exactly.
func TestLongRetryAfterNotWaited(t *testing.T) {
	tests := []struct {
		name, retryAfter string
		wantReqs         int
		wantWaits        []time.Duration
	}{
		{"ten minutes", "600", 1, nil},
		{"an hour as an HTTP date", "Sun, 01 Mar 2026 03:00:00 GMT", 1, nil},
		{"within max_wait", "30", 2, []time.Duration{30 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
				if n == 0 {
					w.Header().Set("Retry-After", tt.retryAfter)
					writeJSON(w, 503, `{"error":{"code":503,"message":"Service temporarily unavailable for maintenance"}}`)
					return
				}
				writeJSON(w, 200, completion("ok", "stop", ""))
			})
			b := setup(t, testConfig(srv.URL))
			_, err := b.client.Chat(context.Background(), userMsg("x"))
			if n := log.count(); n != tt.wantReqs {
				t.Errorf("server saw %d requests, want %d", n, tt.wantReqs)
			}
			if got := b.clock.Waits(); !equalDurations(got, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", got, tt.wantWaits)
			}
			if tt.wantReqs == 2 {
				if err != nil {
					t.Fatalf("err = %v, want the answer after the wait", err)
				}
				return
			}
			if !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "longer than models.retry.max_wait (1m0s)") ||
				!strings.Contains(err.Error(), "for maintenance") {
				t.Errorf("err = %v, want ErrTransport saying the Retry-After was over max_wait, with the server's words", err)
			}
		})
	}
}

func TestNotRetried(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		wantErr   error
		wantInErr string
		wantClass string
		// wantAny: the failure does not depend on the request (Fault.AnyRequest), so the
		// night stops at the first ticket it ends instead of charging a lone one for it.
		wantAny bool
	}{
		{"bad key", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
			ErrRejected, "models.roles.maker: endpoint rejected the request (HTTP 401) (server said: Incorrect API key provided): check TICKETD_TEST_KEY", ErrorClassRejected, true},
		{"unknown model", 404, `{"error":{"message":"The model does not exist"}}`,
			ErrRejected, `check models.endpoints.local.base_url`, ErrorClassRejected, true},
		{"bad request", 400, `{"error":{"message":"Invalid value for messages"}}`,
			ErrRejected, "(HTTP 400) (server said: Invalid value for messages)", ErrorClassRejected, false},
		{"output limit over the model's", 400, `{"error":{"message":"max_tokens is too large: 32000. This model supports at most 16384 completion tokens, whereas you provided 32000.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"}}`,
			ErrRejected, "lower models.roles.maker.max_output_tokens", ErrorClassRejected, false},
		{"output limit over the model's, named max_completion_tokens", 400, `{"error":{"code":"InvalidParameter","message":"The parameter ` + "`max_completion_tokens`" + ` specified in the request are not valid: integer above maximum value, expected a value <= 12288, but got 32000 instead.","param":"max_completion_tokens","type":"BadRequest"}}`,
			ErrRejected, "lower models.roles.maker.max_output_tokens", ErrorClassRejected, false},
		{"country not supported", 403, `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`,
			ErrRejected, "the provider refuses requests from where this machine is", ErrorClassRejected, true},
		{"gemini user location", 400, `[{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}]`,
			ErrRejected, "the provider refuses requests from where this machine is", ErrorClassRejected, true},
		{"flagged by moderation", 403, `{"error":{"message":"Your chosen model requires moderation and your input was flagged","code":403}}`,
			ErrRejected, "(HTTP 403)", ErrorClassRejected, false},
		{"out of quota", 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`,
			ErrQuota, "out of quota or credit (HTTP 429", ErrorClassQuota, false},
		{"not json", 200, `<html>proxy</html>`, ErrBadResponse, "unusable response", ErrorClassBadResponse, true},
		// The model does not fit the server's memory: a configuration to change, never a
		// passing 5xx (continuedev/continue#12795, #9528; ollama/ollama#9782, #8447;
		// lmstudio-ai/lmstudio-bug-tracker#1038).
		{"ollama model larger than the memory", 500, `{"error":"model requires more system memory (12.3 GiB) than is available (8.1 GiB)"}`,
			ErrRejected, `the model does not fit the memory of the server at http://`, ErrorClassRejected, true},
		{"ollama model larger than the memory, /v1 shape", 500, `{"error":{"message":"model requires more system memory (7.5 GiB) than is available (5.2 GiB)","type":"api_error","param":null,"code":null}}`,
			ErrRejected, `set models.roles.maker.model ("gpt-4.1-mini") to a smaller model or a smaller quantization`, ErrorClassRejected, true},
		{"ollama runner out of GPU memory while loading", 500, `{"error":"llama runner process has terminated: CUDA error: out of memory"}`,
			ErrRejected, "the model does not fit the memory", ErrorClassRejected, true},
		{"ollama runner cannot allocate its buffer", 500, `{"error":"llama runner process has terminated: error loading model: unable to allocate CUDA0 buffer"}`,
			ErrRejected, "the model does not fit the memory", ErrorClassRejected, true},
		{"lm studio guardrail", 500, `{"error":"Model loading was stopped due to insufficient system resources. Under the current settings, this model requires approximately 273.25 GB of memory, and continuing to load it would likely overload your system and cause it to freeze."}`,
			ErrRejected, "the model does not fit the memory", ErrorClassRejected, true},
		{"ollama model not pulled", 404, `{"error":{"message":"model \"gpt-4.1-mini\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`,
			ErrRejected, `pull it there (ollama pull gpt-4.1-mini)`, ErrorClassRejected, true},
		{"lm studio no model loaded", 404, `{"error":"No models loaded. Please load a model in the developer page or use the ` + "`lms load`" + ` command."}`,
			ErrRejected, `has no model loaded: load "gpt-4.1-mini" there (lms load)`, ErrorClassRejected, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, tt.status, tt.body)
			})
			t.Setenv("TICKETD_TEST_KEY", "sk-test-secret-123")
			cfg := testConfig(srv.URL)
			cfg.Endpoints["local"] = Endpoint{BaseURL: srv.URL + "/v1", APIKeyEnv: "TICKETD_TEST_KEY"}
			b := setup(t, cfg)
			_, err := b.client.Chat(context.Background(), userMsg("x"))
			if errors.Is(err, ErrTransport) || !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("err = %v\nwant %v containing %q, not ErrTransport", err, tt.wantErr, tt.wantInErr)
			}
			if n := log.count(); n != 1 {
				t.Errorf("server saw %d requests, want 1 (no retry)", n)
			}
			var f *Fault
			if !errors.As(err, &f) || f.AnyRequest != tt.wantAny {
				t.Errorf("fault %+v: AnyRequest want %v", f, tt.wantAny)
			}
			for _, st := range b.client.Endpoints() {
				if st.Failures != 0 || st.Down {
					t.Errorf("endpoint %s: %d transport failures, down %v; want none: the server answered", st.Name, st.Failures, st.Down)
				}
			}
			if got := log.headers[0].Get("Authorization"); got != "Bearer sk-test-secret-123" {
				t.Errorf("Authorization = %q, want the key from TICKETD_TEST_KEY", got)
			}
			if recs := b.rec.all(); len(recs) != 1 || recs[0].ErrorClass != tt.wantClass {
				t.Errorf("recorded %+v, want one call of class %s", recs, tt.wantClass)
			}
			if strings.Contains(b.logs.String(), "sk-test-secret") {
				t.Errorf("the API key appears in the logs:\n%s", b.logs)
			}
		})
	}
}

// TestEmptyAnswerRetried: an answer without choices (OpenRouter's "When No Content is
// Generated": a model warming up, a provider scaling) is a transport fault: asked again up to
// retry.max_retries times, then ErrTransport (the ticket released, never charged), counted by
// the breaker; every answer's billed usage is kept.
func TestEmptyAnswerRetried(t *testing.T) {
	const empty = `{"id":"gen-1","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":0,"total_tokens":1000}}`
	tests := []struct {
		name      string
		empties   int // answers without choices before a completion; -1: every one
		wantReqs  int
		wantErr   bool
		wantUsage int64 // prompt tokens recorded
	}{
		{"one empty answer, then a completion", 1, 2, false, 1000 + 100},
		{"two empty answers, then a completion", 2, 3, false, 2000 + 100},
		{"empty answers that go on", -1, 1 + 3, true, (1 + 3) * 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
				if tt.empties < 0 || n < tt.empties {
					writeJSON(w, 200, empty)
					return
				}
				writeJSON(w, 200, completion("ok", "stop", ""))
			})
			cfg := testConfig(srv.URL)
			cfg.Retry.MaxRetries = 3
			b := setup(t, cfg)
			resp, err := b.client.Chat(context.Background(), userMsg("x"))
			if n := log.count(); n != tt.wantReqs {
				t.Errorf("server saw %d requests, want %d", n, tt.wantReqs)
			}
			recs := b.rec.all()
			if len(recs) != 1 || recs[0].Usage.PromptTokens != tt.wantUsage || recs[0].Retries != tt.wantReqs-1 {
				t.Errorf("recorded %+v, want one call of %d prompt tokens and %d retries", recs, tt.wantUsage, tt.wantReqs-1)
			}
			if !tt.wantErr {
				if err != nil || resp.Message.Content != "ok" {
					t.Fatalf("Chat = %q, %v; want the completion that came after the empty answers", resp.Message.Content, err)
				}
				return
			}
			var f *Fault
			if !errors.Is(err, ErrTransport) || errors.Is(err, ErrBadResponse) || !errors.As(err, &f) || f.Class != ErrorClassEmptyAnswer || f.Status != 200 {
				t.Fatalf("err = %v (fault %+v), want ErrTransport of class empty_answer, HTTP 200", err, f)
			}
			if recs[0].ErrorClass != ErrorClassEmptyAnswer {
				t.Errorf("recorded class %q, want empty_answer", recs[0].ErrorClass)
			}
			for _, w := range []string{"no choices, 4 times in a row", "warms up"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestTimeoutsCountedApart uses a real 30ms per-request time-out against a server that
// never answers: the time-outs are retried, counted in Timeouts, and end in ErrTransport.
func TestTimeoutsCountedApart(t *testing.T) {
	srv, log := newServer(t, func(_ http.ResponseWriter, r *http.Request, _ int, _ []byte) {
		<-r.Context().Done()
	})
	cfg := testConfig(srv.URL)
	cfg.Endpoints["local"] = Endpoint{BaseURL: srv.URL + "/v1", Timeout: 30 * time.Millisecond}
	cfg.Retry.MaxRetries = 2
	b := setup(t, cfg)
	_, err := b.client.Chat(context.Background(), userMsg("x"))
	if !errors.Is(err, ErrTransport) {
		t.Fatalf("err = %v, want ErrTransport", err)
	}
	recs := b.rec.all()
	if len(recs) != 1 || recs[0].ErrorClass != ErrorClassTimeout || recs[0].Timeouts != 2 || recs[0].Retries != 2 {
		t.Errorf("recorded %+v, want class timeout with 2 retries, both time-outs", recs)
	}
	if n := log.count(); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
}

// TestConnectionReset closes the connection without an answer twice, then answers.
func TestConnectionReset(t *testing.T) {
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
		if n < 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			conn.Close()
			return
		}
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	b := setup(t, testConfig(srv.URL))
	resp, err := b.client.Chat(context.Background(), userMsg("x"))
	if err != nil || resp.Message.Content != "ok" {
		t.Fatalf("Chat = %+v, %v; want ok", resp, err)
	}
	if recs := b.rec.all(); recs[0].Retries != 2 || recs[0].Timeouts != 0 {
		t.Errorf("recorded %+v, want 2 retries, no time-outs", recs[0])
	}
}

func TestCanceledIsNotTransport(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, _ := newServer(t, func(_ http.ResponseWriter, r *http.Request, _ int, _ []byte) {
		cancel()
		<-r.Context().Done()
	})
	b := setup(t, testConfig(srv.URL))
	_, err := b.client.Chat(ctx, userMsg("x"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTransport) {
		t.Errorf("err = %v, want context.Canceled, not ErrTransport", err)
	}
	if recs := b.rec.all(); len(recs) != 1 || recs[0].ErrorClass != ErrorClassCanceled {
		t.Errorf("recorded %+v, want one canceled call", recs)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"3", 3 * time.Second, true},
		{" 0 ", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"250ms", 250 * time.Millisecond, true},
		{now.Add(9 * time.Second).Format(http.TimeFormat), 9 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"86400", maxRetryAfter, true},
		{"Inf", maxRetryAfter, true},
		{"", 0, false},
		{"-1", 0, false},
		{"NaN", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "1.5", "120ms", "Sun, 01 Mar 2026 02:00:09 GMT", "-0", "1e400", "NaNms", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryAfter(s, now)
		if d < 0 || d > maxRetryAfter || (!ok && d != 0) {
			t.Fatalf("parseRetryAfter(%q) = %s, %v: out of [0, %s]", s, d, ok, maxRetryAfter)
		}
	})
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		n      int
		jitter float64
		want   time.Duration
	}{
		{1, 0, 500 * time.Millisecond},
		{1, 0.999999, 999999500 * time.Nanosecond},
		{3, 0.5, 3 * time.Second},
		{10, 0, 30 * time.Second}, // capped at 60s, half fixed
		{60, 0.5, 45 * time.Second},
	}
	for _, tt := range tests {
		got := backoff(tt.n, time.Second, time.Minute, func() float64 { return tt.jitter })
		if got != tt.want {
			t.Errorf("backoff(%d, jitter %v) = %s, want %s", tt.n, tt.jitter, got, tt.want)
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEmptyAnswersMarkTheEndpointDown: a model that answers without choices for minutes (a
// cold start) marks its endpoint down like a failing server: requests stop, the probe finds
// it still empty and keeps it down, and once it answers, the probe brings it back.
func TestEmptyAnswersMarkTheEndpointDown(t *testing.T) {
	var cold atomic.Bool
	cold.Store(true)
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		if cold.Load() {
			writeJSON(w, 200, `{"id":"gen-1","object":"chat.completion","choices":[]}`)
			return
		}
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	cfg := testConfig(srv.URL)
	cfg.Breaker = BreakerConfig{Failures: 3, ProbeBase: 30 * time.Second, ProbeMax: time.Minute}
	b := setup(t, cfg)
	_, err := b.client.Chat(context.Background(), userMsg("x"))
	if !errors.Is(err, ErrEndpointDown) || !strings.Contains(err.Error(), "no choices") {
		t.Fatalf("err = %v, want ErrEndpointDown after 3 answers without choices", err)
	}
	b.clock.Advance(31 * time.Second)
	if d := b.client.Unavailable(context.Background()); len(d) != 1 || !strings.Contains(d[0].LastError, "no choices") {
		t.Errorf("after a probe answered without choices: %+v, want still down", d)
	}
	cold.Store(false)
	b.clock.Advance(time.Minute)
	if d := b.client.Unavailable(context.Background()); len(d) != 0 {
		t.Errorf("after a probe that got an answer: %+v, want up", d)
	}
}
