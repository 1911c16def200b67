package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// shaper is an in-test HTTP server that takes the scripted model's answers (a test
// double, OpenAI-shaped) and re-shapes them as a given provider documents its answers,
// so a whole night runs against each provider's wire shape. It logs the usage it sent.
type shaper struct {
	double http.Handler
	shape  func(ans map[string]any, role string)
	// fail, when it returns a status, answers a request (chat, or any request once a chat
	// was seen) with that status and body instead of forwarding it; n counts chat
	// requests so far, role is "" for other requests.
	fail func(n int, role string) (int, string)
	// failPreflight makes fail see the preflight's requests too.
	failPreflight bool
	// failBody, when it returns a status, answers a ticket's chat request whose body it
	// picks with that status and body.
	failBody func(body []byte) (int, string)

	mu    sync.Mutex
	sent  []sentUsage
	chats atomic.Int64
}

type sentUsage struct {
	role                     string
	prompt, cached, complete int64
	cost                     float64
}

func (s *shaper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	role := ""
	if m := roleRe.FindSubmatch(body); m != nil {
		role = string(m[1])
	}
	// The preflight's requests come before any ticket's and name none: n counts tickets'
	// requests, and fail sees the preflight only with failPreflight (every request after a
	// ticket's, the breaker's probes included, it sees).
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions") && bytes.Contains(body, []byte("# Ticket "))
	n := int(s.chats.Load())
	if chat {
		n = int(s.chats.Add(1))
	}
	if chat && s.failBody != nil {
		if status, text := s.failBody(body); status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, text)
			return
		}
	}
	if chat || n > 0 || s.failPreflight {
		s.mu.Lock()
		fail := s.fail
		s.mu.Unlock()
		if fail != nil {
			if status, text := fail(n, role); status != 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				io.WriteString(w, text)
				return
			}
		}
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	s.double.ServeHTTP(rec, r2)
	out := rec.Body.Bytes()
	if chat && rec.Code == 200 {
		var ans map[string]any
		if err := json.Unmarshal(out, &ans); err == nil {
			s.shape(ans, role)
			s.log(ans, role)
			out, _ = json.Marshal(ans)
		}
	}
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	w.Write(out)
}

var roleRe = regexp.MustCompile(`ticketd role: ([a-z]+)`)

func num(m map[string]any, k string) int64 {
	switch v := m[k].(type) {
	case float64:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

func (s *shaper) log(ans map[string]any, role string) {
	u, _ := ans["usage"].(map[string]any)
	su := sentUsage{role: role}
	if u != nil {
		su.prompt, su.complete = num(u, "prompt_tokens"), num(u, "completion_tokens")
		if d, ok := u["prompt_tokens_details"].(map[string]any); ok {
			su.cached = num(d, "cached_tokens")
		} else if _, ok := u["prompt_cache_hit_tokens"]; ok {
			su.cached = num(u, "prompt_cache_hit_tokens")
		} else if _, ok := u["cache_read_input_tokens"]; ok {
			su.cached = num(u, "cache_read_input_tokens")
		}
		su.cost, _ = u["cost"].(float64)
	}
	s.mu.Lock()
	s.sent = append(s.sent, su)
	s.mu.Unlock()
}

func (s *shaper) totals() (sent sentUsage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.sent {
		sent.prompt += u.prompt
		sent.cached += u.cached
		sent.complete += u.complete
		sent.cost += u.cost
	}
	return sent
}

// Provider answer shapes, each from the provider's documentation or issue tracker.
var providerShapes = map[string]func(ans map[string]any, role string){
	// OpenAI chat completions: usage with prompt_tokens_details.cached_tokens and
	// completion_tokens_details.reasoning_tokens (what the double already sends).
	"openai": func(map[string]any, string) {},
	// OpenRouter, openrouter.ai/docs/use-cases/usage-accounting: usage.cost in credits
	// (USD), cost_details, prompt_tokens_details with cached_tokens and cache_write_tokens.
	"openrouter": func(ans map[string]any, _ string) {
		u := ans["usage"].(map[string]any)
		u["cost"] = float64(num(u, "prompt_tokens"))*1e-6 + float64(num(u, "completion_tokens"))*4e-6
		u["cost_details"] = map[string]any{"upstream_inference_cost": nil}
		u["prompt_tokens_details"].(map[string]any)["cache_write_tokens"] = 0
		ans["provider"] = "OpenAI"
	},
	// vLLM's OpenAI server with tool calling: "content": null beside tool_calls,
	// prompt_tokens_details null unless --enable-prompt-tokens-details.
	"vllm": func(ans map[string]any, _ string) {
		for _, c := range ans["choices"].([]any) {
			msg := c.(map[string]any)["message"].(map[string]any)
			if _, ok := msg["tool_calls"]; ok {
				msg["content"] = nil
			}
			msg["reasoning_content"] = nil
		}
		u := ans["usage"].(map[string]any)
		u["prompt_tokens_details"] = nil
		delete(u, "completion_tokens_details")
	},
	// llama.cpp server (ggml-org/llama.cpp PR #15827): a timings object with cache_n,
	// prompt_n, predicted_n beside usage, cached tokens in prompt_tokens_details.
	"llama.cpp": func(ans map[string]any, _ string) {
		u := ans["usage"].(map[string]any)
		cached := num(u["prompt_tokens_details"].(map[string]any), "cached_tokens")
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": cached}
		delete(u, "completion_tokens_details")
		ans["timings"] = map[string]any{"cache_n": cached, "prompt_n": num(u, "prompt_tokens") - cached,
			"predicted_n": num(u, "completion_tokens"), "prompt_ms": 12.5, "predicted_ms": 40.1}
	},
	// Ollama's OpenAI compatibility: usage with the three counts and no details.
	"ollama": func(ans map[string]any, _ string) {
		u := ans["usage"].(map[string]any)
		delete(u, "prompt_tokens_details")
		delete(u, "completion_tokens_details")
		ans["system_fingerprint"] = "fp_ollama"
	},
	// DeepSeek (api-docs.deepseek.com, context caching): prompt_cache_hit_tokens and
	// prompt_cache_miss_tokens instead of prompt_tokens_details.
	"deepseek": func(ans map[string]any, _ string) {
		u := ans["usage"].(map[string]any)
		cached := num(u["prompt_tokens_details"].(map[string]any), "cached_tokens")
		delete(u, "prompt_tokens_details")
		u["prompt_cache_hit_tokens"] = cached
		u["prompt_cache_miss_tokens"] = num(u, "prompt_tokens") - cached
	},
	// LiteLLM in front of Anthropic (docs.litellm.ai, prompt caching): prompt_tokens with the
	// cache included, Anthropic's cache_read_input_tokens and cache_creation_input_tokens
	// beside it, no prompt_tokens_details.
	"litellm anthropic": func(ans map[string]any, _ string) {
		u := ans["usage"].(map[string]any)
		cached := num(u["prompt_tokens_details"].(map[string]any), "cached_tokens")
		delete(u, "prompt_tokens_details")
		delete(u, "completion_tokens_details")
		u["cache_read_input_tokens"] = cached
		u["cache_creation_input_tokens"] = 0
	},
	// A server that sends no usage at all (some llama.cpp forks, proxies).
	"no usage": func(ans map[string]any, _ string) { delete(ans, "usage") },
}

func shapedNight(t *testing.T, tickets int, s *shaper, edit func(*config.Config)) (night, *shaper) {
	t.Helper()
	return runNight(t, shapedConfig(t, tickets, s, edit), pipeline.LayoutCacheFriendly, model.WithClock(newInstantClock())), s
}

// shapedConfig is shapedNight's configuration, for a test that runs the night itself.
func shapedConfig(t *testing.T, tickets int, s *shaper, edit func(*config.Config)) config.Config {
	t.Helper()
	f := newFixture(t, tickets)
	double, err := scriptedmodel.New(f.cases, scriptedmodel.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.double = double.Handler()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cfg := f.config(t, srv.URL+"/v1", 1)
	if edit != nil {
		edit(&cfg)
	}
	return cfg
}

// TestProviderConformance runs a whole night (intake to done) against each provider's
// documented answer shape, and checks the recorded tokens, cached tokens and cost.
func TestProviderConformance(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	for _, name := range []string{"openai", "openrouter", "vllm", "llama.cpp", "ollama", "deepseek", "litellm anthropic", "no usage"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n, s := shapedNight(t, 1, &shaper{shape: providerShapes[name]}, nil)
			ctx := context.Background()
			tk, err := n.store.Get(ctx, 1)
			if err != nil || tk.State != store.StateDone {
				t.Fatalf("ticket = %s (%s), %v; want done", tk.State, tk.Reason, err)
			}
			calls, err := n.store.ModelCalls(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			var got sentUsage
			var cost, price float64
			sources := map[string]int{}
			estimated := 0
			for _, c := range calls {
				got.prompt += c.PromptTokens
				got.cached += c.CachedTokens
				got.complete += c.CompletionTokens
				if c.CostUSD != nil {
					cost += *c.CostUSD
				}
				if c.PriceCostUSD != nil {
					price += *c.PriceCostUSD
				}
				sources[c.CostSource]++
				if c.UsageEstimated {
					estimated++
				}
			}
			sent := s.totals()
			t.Logf("%s: %d calls, recorded prompt %d cached %d completion %d cost $%.6f (price table $%.6f) sources %v; sent prompt %d cached %d completion %d cost $%.6f",
				name, len(calls), got.prompt, got.cached, got.complete, cost, price, sources, sent.prompt, sent.cached, sent.complete, sent.cost)
			switch name {
			case "no usage":
				if estimated != len(calls) || sources[model.CostSourceEstimate] != len(calls) || got.prompt == 0 || got.complete == 0 || got.cached != 0 || cost <= 0 {
					t.Errorf("want every call estimated (tokens > 0, cached 0, positive estimated cost); got %d of %d estimated, %+v, $%v, %v", estimated, len(calls), got, cost, sources)
				}
				return
			case "openrouter":
				if sources[model.CostSourceProvider] != len(calls) || !near(cost, sent.cost) || price <= 0 || near(price, cost) {
					t.Errorf("want the provider's cost $%.6f preferred with the price-table figure beside it; got $%.6f (table $%.6f), %v", sent.cost, cost, price, sources)
				}
			default:
				if sources[model.CostSourcePriceTable] != len(calls) || !near(cost, price) || cost <= 0 {
					t.Errorf("want price-table costs; got $%.6f, %v", cost, sources)
				}
			}
			if estimated != 0 || got.prompt != sent.prompt || got.cached != sent.cached || got.complete != sent.complete {
				t.Errorf("recorded %+v (%d estimated), want exactly what the server reported %+v", got, estimated, sent)
			}
			if (name == "vllm" || name == "ollama") && got.cached != 0 {
				t.Errorf("cached = %d from a server that reports none", got.cached)
			}
			if (name == "openai" || name == "deepseek" || name == "llama.cpp" || name == "litellm anthropic") && got.cached == 0 {
				t.Errorf("cached = 0: the prefix cache was never reported (shape lost?)")
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestNoUsageNightCap: against a server that never sends usage and a priced model, the
// nightly dollar cap trips on estimates.
func TestNoUsageNightCap(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	const limit = 0.02
	n, _ := shapedNight(t, 6, &shaper{shape: providerShapes["no usage"]}, func(c *config.Config) {
		c.Night.MaxDollars = limit
	})
	if !errors.Is(n.rep.Stopped, ErrNightBudget) {
		t.Fatalf("night stopped with %v, want ErrNightBudget from estimated costs", n.rep.Stopped)
	}
	if n.rep.Dollars < limit || !near(n.rep.EstimatedDollars, n.rep.Dollars) {
		t.Errorf("night spent $%.4f ($%.4f estimated), want >= $%.2f, all of it estimated", n.rep.Dollars, n.rep.EstimatedDollars, limit)
	}
	u, err := n.store.UsageEstimates(context.Background(), n.rep.RunID)
	if err != nil || u.Calls == 0 || u.EstimatedCalls != u.Calls {
		t.Errorf("UsageEstimates = %+v, %v; want every call estimated", u, err)
	}
	t.Logf("cap $%.2f tripped at $%.4f (estimated) after %d calls", limit, n.rep.Dollars, u.Calls)
	assertNothingLost(t, n.store)
}

// TestContextOverflow500: a 500 whose body says the context is exceeded (llama.cpp's
// server_error form, ggml-org/llama.cpp#19774) is not retried as a transport fault: each
// run of the attempt sends it once. On the maker's first request it may be the endpoint's
// (a context too small for any ticket), so the first run is released unspent; met again by
// the same ticket with no other failing, it is the ticket's, and the attempt fails with the
// server's words.
func TestContextOverflow500(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	var makerAsks atomic.Int64
	s := &shaper{shape: providerShapes["openai"], fail: func(_ int, role string) (int, string) {
		if role != "maker" {
			return 0, ""
		}
		makerAsks.Add(1)
		return 500, `{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`
	}}
	n, _ := shapedNight(t, 1, s, func(c *config.Config) { c.Night.MaxAttempts = 1 })
	tk, err := n.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateEscalated || !strings.Contains(tk.Reason, "context window") || !strings.Contains(tk.Reason, "Context size has been exceeded.") {
		t.Errorf("ticket = %s (%s), want escalated with the overflow and the server's words", tk.State, tk.Reason)
	}
	if m := makerAsks.Load(); m != 2 {
		t.Errorf("maker requests = %d, want 2 (one per run of the attempt): an overflow is not retried", m)
	}
	released := 0
	evs, _ := n.store.Events(context.Background(), 1)
	for _, e := range evs {
		if e.Kind == "released" {
			released++
		}
	}
	if released != 1 || tk.Attempts != 1 {
		t.Errorf("%d releases, %d attempts charged; want the first run released, the second charged", released, tk.Attempts)
	}
}

// TestEndpointDiesMidNight: the endpoint starts answering 503 after a few requests. The
// breaker marks it down, claims stop, no ticket is released more than
// night.max_transport_releases times, and the store keeps why for ticketctl stats.
func TestEndpointDiesMidNight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	s := &shaper{shape: providerShapes["openai"], fail: func(n int, _ string) (int, string) {
		if n > 3 {
			return 503, `{"error":{"message":"upstream unavailable: all replicas down","type":"server_error"}}`
		}
		return 0, ""
	}}
	cfg := shapedConfig(t, 4, s, func(c *config.Config) {
		c.Night.Workers = 2
		c.Night.Lease = time.Hour // heartbeats follow the test's clock
		// The window closes by moving the test's clock past it, and an attempt's wall-clock
		// budget (5 minutes) follows the same clock: a longer window would blow the running
		// attempt's budget in the same jump, and that attempt would be charged for it. (The
		// machine's clock measures elapsed time on its monotonic reading: no such jump.)
		c.Night.Window = time.Minute
		c.Night.MaxTransportReleases = 2
		c.Models.Retry.MaxRetries = 2
		c.Models.Breaker = model.BreakerConfig{Failures: 4, ProbeBase: 300 * time.Millisecond, ProbeMax: 600 * time.Millisecond}
	})
	// The window closes on the test's clock once the endpoint went down, however long the
	// machine took to get there.
	clock := newFakeClock(time.Now())
	st, done := startNight(t, context.Background(), cfg, clock, model.WithClock(newInstantClock()))
	ctx := context.Background()
	clocktest.Poll(5*time.Minute, func() bool { // the night's run is 1 in a fresh store
		evs, _ := st.EndpointEvents(ctx, 1)
		return len(evs) > 0
	})
	clock.Advance(cfg.Night.Window)
	n := night{store: st, rep: awaitNight(t, done)}
	evs, err := n.store.EndpointEvents(ctx, n.rep.RunID)
	if err != nil || len(evs) == 0 || !evs[0].Down || !strings.Contains(evs[0].LastError, "all replicas down") {
		t.Fatalf("endpoint events = %+v, %v; want a down event with the server's words", evs, err)
	}
	downAt := evs[0].Since
	lateClaims := 0 // claims after the trip: at most the one each worker was already making
	for id := int64(1); id <= 4; id++ {
		events, err := n.store.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		released := 0
		for _, e := range events {
			if e.Kind == "released" && strings.HasPrefix(e.Reason, "transport:") {
				released++
			}
			if e.Kind == "claimed" && e.At.After(downAt) {
				lateClaims++
			}
		}
		if released > 2 {
			t.Errorf("ticket %d released %d times for transport faults, want at most 2", id, released)
		}
	}
	// A probe every 300-600ms never passes: a worker may land the claim it was making when
	// the breaker tripped, at any load, but no second one.
	if lateClaims > 2 {
		t.Errorf("%d claims after the endpoint went down at %s, want at most one per worker (2)", lateClaims, downAt)
	}
	if c := s.chats.Load(); c > 40 {
		t.Errorf("%d chat requests against an endpoint that went down after 3: the breaker did not stop them", c)
	}
	t.Logf("chat requests %d, endpoint events %d, down since %s: %s", s.chats.Load(), len(evs), downAt.Format(time.TimeOnly), evs[0].LastError)
	assertNothingLost(t, n.store)
}

// TestParkAfterTransportReleases: a ticket released for transport faults more than
// night.max_transport_releases times is parked until the next night with an event.
func TestParkAfterTransportReleases(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	s := &shaper{shape: providerShapes["openai"], fail: func(_ int, role string) (int, string) {
		if role == "judge" {
			return 500, `{"error":{"message":"judge replica crashed","type":"server_error"}}`
		}
		return 0, ""
	}}
	cfg := shapedConfig(t, 1, s, func(c *config.Config) {
		c.Night.MaxTransportReleases = 2
		c.Night.Lease = time.Hour // heartbeats follow the test's clock
		c.Models.Retry.MaxRetries = 0
		c.Models.Breaker.Failures = -1 // keep the breaker out of it: this is the per-ticket bound
	})
	// The window is the test's clock's, which only a night that does not end moves: parking
	// must let the night end by itself, the queue empty, at any load.
	clock := newFakeClock(time.Now())
	opts := []model.Option{model.WithClock(newInstantClock())}
	st, done := startNight(t, context.Background(), cfg, clock, opts...)
	var rep NightReport
	select {
	case rep = <-done:
	case <-time.After(5 * time.Minute):
		clock.Advance(cfg.Night.Window + cfg.Night.Grace)
		rep = <-done
	}
	n := night{store: st, rep: rep, cfg: cfg, opts: opts}
	ctx := context.Background()
	tk, err := n.store.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := n.store.Events(ctx, 1)
	kinds := []string{}
	for _, e := range events {
		kinds = append(kinds, string(e.Kind))
	}
	last := events[len(events)-1]
	if tk.State != store.StateParked || tk.Attempts != 0 || last.Kind != "parked" || !strings.Contains(last.Reason, "released 2 times tonight") ||
		!strings.Contains(last.Reason, "judge") || !strings.Contains(last.Reason, "500") || !strings.Contains(last.Reason, "until the next `ticketd once`") {
		t.Errorf("ticket %s attempts %d run_after %s, events %v (last %q); want parked until the next once, naming the judge's 500, no attempt burnt", tk.State, tk.Attempts, tk.RunAfter, kinds, last.Reason)
	}
	if n.rep.Outcome != store.OutcomePartial || !strings.Contains(n.rep.Error, "1 ticket(s) parked") {
		t.Errorf("night %s (%s), want partial saying a ticket was parked", n.rep.Outcome, n.rep.Error)
	}

	// Under once there is no schedule: the next night unparks the ticket, whatever its
	// date, and with the judge healthy again it is fixed.
	s.mu.Lock()
	s.fail = nil
	s.mu.Unlock()
	d := &Daemon{Config: n.cfg, Store: n.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ModelOptions: n.opts}
	rep, err = d.RunNight(ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	tk, _ = n.store.Get(ctx, 1)
	if tk.State != store.StateDone || rep.Outcome != store.OutcomeOK {
		t.Errorf("next night: ticket %s (%s), night %s (%s); want the ticket unparked and done, the night ok", tk.State, tk.Reason, rep.Outcome, rep.Error)
	}
	if n.rep.Stopped != nil {
		t.Errorf("the night ended by %v: parking should have let it end when the queue was empty", n.rep.Stopped)
	}
}

// TestPreflightDeadEndpoint: a night against a dead endpoint fails once its
// models.preflight_wait (1 s here, 5 min by default) has passed in backoff, naming it. The
// model client's clock is the test's, so the wait is counted, not timed.
func TestPreflightDeadEndpoint(t *testing.T) {
	f := newFixture(t, 1)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/v1"
	srv.Close()
	cfg := f.config(t, url, 1)
	cfg.Models.PreflightWait = time.Second
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := newInstantClock()
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ModelOptions: []model.Option{model.WithClock(clock)}}
	_, err = d.RunNight(context.Background(), "test")
	if !errors.Is(err, ErrPreflight) || !errors.Is(err, model.ErrTransport) || !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "connection refused") ||
		!strings.Contains(err.Error(), "models.preflight_wait 1s") {
		t.Errorf("RunNight = %v\nwant ErrPreflight naming %s, the refusal and the wait", err, url)
	}
	// The roles retry side by side on the one clock: the configured second, plus at most
	// one backoff step (models.retry.max_delay, 100ms here) of each role past it.
	if bound := cfg.Models.PreflightWait + time.Duration(len(model.Roles))*cfg.Models.Retry.MaxDelay; totalWaited(clock) == 0 || totalWaited(clock) > bound {
		t.Errorf("the preflight waited %s in backoff, want about models.preflight_wait (%s), at most %s", totalWaited(clock), cfg.Models.PreflightWait, bound)
	}
	t.Logf("backoff waits: %d, %s in all", len(clock.Waits()), totalWaited(clock))
}

// TestQuotaStopsNight: out of quota stops the night with a clear message; the ticket is
// given back without burning its attempt.
func TestQuotaStopsNight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	s := &shaper{shape: providerShapes["openai"], fail: func(_ int, role string) (int, string) {
		if role == "maker" {
			return 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`
		}
		return 0, ""
	}}
	n, _ := shapedNight(t, 3, s, func(c *config.Config) { c.Night.Workers = 2 })
	if !errors.Is(n.rep.Stopped, ErrQuota) || !strings.Contains(n.rep.Stopped.Error(), "exceeded your current quota") {
		t.Fatalf("night stopped with %v, want ErrQuota with the server's words", n.rep.Stopped)
	}
	for id := int64(1); id <= 3; id++ {
		tk, _ := n.store.Get(context.Background(), id)
		if tk.State != store.StateQueued || tk.Attempts != 0 {
			t.Errorf("ticket %d: %s with %d attempts, want queued with none burnt", id, tk.State, tk.Attempts)
		}
	}
}
