package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// fakeClock is the tests' clock with every After firing at once (clocktest.Fake under
// AutoAdvance), so a test sees every backoff without sleeping.
type fakeClock = clocktest.Fake

func newFakeClock() *fakeClock {
	return clocktest.New(time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)).AutoAdvance(0)
}

// memRecorder keeps every call it is handed.
type memRecorder struct {
	mu    sync.Mutex
	calls []Call
}

func (m *memRecorder) RecordModelCall(_ context.Context, c Call) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, c)
	return nil
}

func (m *memRecorder) all() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Call(nil), m.calls...)
}

// wireLog records the raw bodies and headers a test server received.
type wireLog struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
}

func (l *wireLog) add(body []byte, h http.Header) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bodies = append(l.bodies, body)
	l.headers = append(l.headers, h.Clone())
	return len(l.bodies) - 1
}

func (l *wireLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.bodies)
}

func (l *wireLog) body(t *testing.T, i int) map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(l.bodies[i], &m); err != nil {
		t.Fatalf("request %d body is not JSON: %v\n%s", i, err, l.bodies[i])
	}
	return m
}

// newServer starts an OpenAI-compatible test server; h gets the request index (from 0)
// and the raw body.
func newServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int, body []byte)) (*httptest.Server, *wireLog) {
	t.Helper()
	log := &wireLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		n := log.add(body, r.Header)
		h(w, r, n, body)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

// completion is a chat completion body with one choice.
func completion(content, finish, usage string) string {
	c, _ := json.Marshal(content)
	if usage == "" {
		usage = `{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}`
	}
	return fmt.Sprintf(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":%q}],"usage":%s}`, c, finish, usage)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// testConfig puts every role on one local endpoint with priced models.
func testConfig(baseURL string) Config {
	return Config{
		Endpoints: map[string]Endpoint{"local": {BaseURL: baseURL + "/v1"}},
		Roles: map[Role]RoleConfig{
			RoleTriage:  {Endpoint: "local", Model: "gpt-4.1-nano"},
			RoleMaker:   {Endpoint: "local", Model: "gpt-4.1-mini"},
			RoleChecker: {Endpoint: "local", Model: "gpt-4.1-nano"},
			RoleJudge:   {Endpoint: "local", Model: "gpt-4.1-nano"},
		},
		Retry: RetryConfig{MaxRetries: 5},
	}
}

type bundle struct {
	client *Client
	rec    *memRecorder
	clock  *fakeClock
	logs   *bytes.Buffer
}

func setup(t *testing.T, cfg Config, opts ...Option) bundle {
	t.Helper()
	b := bundle{rec: &memRecorder{}, clock: newFakeClock(), logs: &bytes.Buffer{}}
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: b.logs}, nil))
	opts = append([]Option{WithClock(b.clock), WithRand(func() float64 { return 0.5 })}, opts...)
	c, err := New(cfg, b.rec, logger, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.client = c
	return b
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func userMsg(s string) Request {
	return Request{Role: RoleMaker, TicketID: 7, Attempt: 1, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: s}}}
}
