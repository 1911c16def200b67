package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// TestSystemicFailureStopsTheNight: the preflight passes, then every ticket's request fails
// the same way on the endpoint's side (servers that refuse what only a ticket's request
// carries, answer without choices, or whose context cannot hold the maker's opening
// prompt). The second ticket in a row stops the claims: nothing is charged, the third
// ticket is never claimed, and the night is stopped with the server's words.
func TestSystemicFailureStopsTheNight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	tests := []struct {
		name  string
		fail  func(n int, role string) (int, string)
		words string
	}{
		{"the same 400 on every ticket", func(int, string) (int, string) {
			return 400, `{"error":{"message":"Invalid 'messages[1].content': string too long for this deployment's content filter","type":"invalid_request_error"}}`
		}, "string too long for this deployment's content filter"},
		{"tiny context on the maker's first request", func(n int, role string) (int, string) {
			if role != "maker" {
				return 0, ""
			}
			return 400, fmt.Sprintf(`{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested %d tokens. Please reduce the length of the messages.","type":"BadRequestError","code":400}`, 36000+n)
		}, "maximum context length is 4096 tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int64
			s := &shaper{shape: providerShapes["openai"], fail: func(n int, role string) (int, string) {
				asked.Add(1)
				return tt.fail(n, role)
			}}
			n, _ := shapedNight(t, 3, s, func(c *config.Config) {
				c.Night.Workers = 1
				// A released ticket is due again at once, as on a loaded machine whose next
				// claim comes after the release's delay: the claim must still try another
				// ticket first, or the fault is taken for the first ticket's own.
				c.Night.RetryBackoff = time.Millisecond
			})
			if !errors.Is(n.rep.Stopped, ErrSystemic) || !strings.Contains(n.rep.Stopped.Error(), tt.words) {
				t.Fatalf("night stopped with %v, want ErrSystemic with %q", n.rep.Stopped, tt.words)
			}
			if n.rep.Outcome != store.OutcomeStopped || !strings.Contains(n.rep.Error, tt.words) {
				t.Errorf("night %s (%s), want stopped with the server's words", n.rep.Outcome, n.rep.Error)
			}
			if len(n.rep.Touched) != 2 {
				t.Errorf("tickets worked %v, want exactly two: claims stop after the second", n.rep.Touched)
			}
			list, err := n.store.List(context.Background(), store.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range list {
				if tk.State != store.StateQueued || tk.Attempts != 0 {
					t.Errorf("ticket %d: %s with %d attempts (%s), want queued with none charged", tk.ID, tk.State, tk.Attempts, tk.Reason)
				}
			}
			runs, _ := n.store.Runs(context.Background(), 1)
			if len(runs) != 1 || runs[0].Outcome != store.OutcomeStopped || !strings.Contains(runs[0].Error, "fails every ticket's attempt the same way") {
				t.Errorf("recorded night %+v, want stopped naming the systemic failure", runs)
			}
			t.Logf("%d failing requests; night: %s", asked.Load(), n.rep.Error)
		})
	}
}

// TestEndpointRefusingEveryRequest: after the preflight, the endpoint answers 401 (the key
// revoked mid-night), 404 (the model withdrawn), an HTML page (a proxy in the way) or a
// refusal of the machine's country to every request, and one ticket is queued.
// Before, its first attempt was released, its second met the same refusal "with nobody else
// in between" and was charged as its own, and the ticket was escalated after three charged
// attempts on a night that ended ok. Now its second attempt ending the same way stops the
// night's claims: the ticket is queued uncharged and the night is stopped with the server's
// words and the hint.
func TestEndpointRefusingEveryRequest(t *testing.T) {
	t.Parallel() // nights of their own: repository, store, model server, clock
	realNight(t)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		words  []string
	}{
		{"key revoked", 401, `{"error":{"message":"Incorrect API key provided: sk-abc***xyz.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			[]string{"HTTP 401", "Incorrect API key provided", "api_key_env"}},
		{"model withdrawn", 404, `{"error":{"message":"The model 'gpt-4.1' has been deprecated","type":"invalid_request_error","code":"model_not_found"}}`,
			[]string{"HTTP 404", "has been deprecated", "models.roles."}},
		{"a proxy's login page", 200, `<!doctype html><html><body><h1>Sign in to continue</h1></body></html>`,
			[]string{"not a JSON chat completion", "Sign in to continue", "base_url"}},
		{"the machine's country refused", 403, `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`,
			[]string{"HTTP 403", "Country, region, or territory not supported", "where this machine is"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &shaper{shape: providerShapes["openai"], fail: func(int, string) (int, string) { return tc.status, tc.body }}
			n, _ := shapedNight(t, 1, s, func(c *config.Config) { c.Night.Workers = 1 })
			t.Logf("night %s: %s", n.rep.Outcome, n.rep.Error)
			if !errors.Is(n.rep.Stopped, ErrSystemic) || n.rep.Outcome != store.OutcomeStopped {
				t.Errorf("night %s, stopped by %v; want stopped by ErrSystemic", n.rep.Outcome, n.rep.Stopped)
			}
			for _, w := range tc.words {
				if !strings.Contains(n.rep.Error, w) {
					t.Errorf("the night's error lacks %q", w)
				}
			}
			tk, _ := n.store.Get(context.Background(), 1)
			if tk.State != store.StateQueued || tk.Attempts != 0 {
				t.Errorf("ticket: %s with %d attempts (%s); want queued with none charged", tk.State, tk.Attempts, tk.Reason)
			}
		})
	}
}

// TestColdModelAnswersEmpty: after the preflight, the endpoint answers the next requests
// without choices, as OpenRouter does while a model warms up from a cold start. The answers
// are transport faults: retried, then the endpoint is marked down until a probe gets an
// answer, and the one queued ticket is fixed with no attempt charged; the night is not
// stopped. Before, the first such answer failed the attempt as an unusable answer, and a
// lone ticket meeting it twice was charged (or, two tickets, the night stopped).
func TestColdModelAnswersEmpty(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	var empties atomic.Int64
	s := &shaper{shape: providerShapes["openrouter"], fail: func(int, string) (int, string) {
		if empties.Add(1) <= 8 {
			return 200, `{"id":"gen-1","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":0,"total_tokens":1200}}`
		}
		return 0, ""
	}}
	n, _ := shapedNight(t, 1, s, func(c *config.Config) {
		c.Night.Workers = 1
		// The breaker's probes wait on the real clock: short, so that the test is.
		c.Models.Breaker.ProbeBase, c.Models.Breaker.ProbeMax = 20*time.Millisecond, 50*time.Millisecond
	})
	t.Logf("night %s: %s", n.rep.Outcome, n.rep.Error)
	if n.rep.Stopped != nil {
		t.Errorf("night stopped by %v, want it to run to the end", n.rep.Stopped)
	}
	tk, _ := n.store.Get(context.Background(), 1)
	if tk.State != store.StateDone || tk.Attempts != 1 {
		t.Errorf("ticket: %s with %d attempts (%s); want done, charged only for the attempt that fixed it", tk.State, tk.Attempts, tk.Reason)
	}
	if empties.Load() < 8 {
		t.Errorf("the server answered %d times without choices, want 8: the test proves nothing", empties.Load())
	}
}

// TestSystemicGuardSequences: what the guard decides for a sequence of attempt endings (a
// fault of the endpoint, or an ending on the ticket's own that resets it): release (unspent)
// or charge, and whether the claims stop.
func TestSystemicGuardSequences(t *testing.T) {
	key := &model.Fault{Endpoint: "e", Class: model.ErrorClassRejected, Status: 401, Said: "Incorrect API key", AnyRequest: true}
	filter := &model.Fault{Endpoint: "e", Class: model.ErrorClassRejected, Status: 400, Said: "content filter"}
	type step struct {
		ticket int64
		fault  *model.Fault // nil: the attempt ended otherwise (reset)
	}
	tests := []struct {
		name        string
		steps       []step
		wantRelease []bool // per fault step
		wantStopped bool
	}{
		{"a lone ticket meets a 401 twice", []step{{1, key}, {1, key}}, []bool{true, true}, true},
		{"a lone ticket meets a 401 once: a glitch", []step{{1, key}, {1, nil}}, []bool{true}, false},
		{"a 401, another fault, the 401 again", []step{{1, key}, {2, filter}, {1, key}}, []bool{true, true, true}, false},
		{"two tickets meet a 401", []step{{1, key}, {2, key}}, []bool{true, true}, true},
		{"a lone ticket's own refusal", []step{{1, filter}, {1, filter}}, []bool{true, false}, false},
		{"two tickets meet the same refusal", []step{{1, filter}, {2, filter}}, []bool{true, true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s systemic
			var stopped error
			stop := func(err error) { stopped = err }
			var got []bool
			var seq []string
			for _, st := range tt.steps {
				if st.fault == nil {
					seq = append(seq, fmt.Sprintf("#%d ok", st.ticket))
					s.reset()
					continue
				}
				seq = append(seq, fmt.Sprintf("#%d HTTP %d", st.ticket, st.fault.Status))
				got = append(got, s.release(slog.New(slog.DiscardHandler), st.ticket, st.fault, stop))
			}
			if !slices.Equal(got, tt.wantRelease) || (stopped != nil) != tt.wantStopped {
				t.Errorf("%s: released %v, stopped %v; want released %v, stopped %v", strings.Join(seq, ", "), got, stopped, tt.wantRelease, tt.wantStopped)
			}
			if stopped != nil && !errors.Is(stopped, ErrSystemic) {
				t.Errorf("stopped with %v, want ErrSystemic", stopped)
			}
		})
	}
}

// TestOneTicketsOwnRefusalIsCharged: a refusal that only one ticket meets (its other
// tickets pass) is released once, then charged as the ticket's own when it meets it again
// with nobody else failing in between: the night goes on and nothing is stopped.
func TestOneTicketsOwnRefusalIsCharged(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	s := &shaper{shape: providerShapes["openai"]}
	s.failBody = func(body []byte) (int, string) {
		if strings.Contains(string(body), "Surcharge rule 0 ") {
			return 400, `{"error":{"message":"The response was filtered due to the prompt triggering the content management policy.","code":"content_filter"}}`
		}
		return 0, ""
	}
	n, _ := shapedNight(t, 2, s, func(c *config.Config) { c.Night.Workers = 1; c.Night.MaxAttempts = 1 })
	if n.rep.Stopped != nil {
		t.Fatalf("night stopped with %v, want it to go on", n.rep.Stopped)
	}
	t1, _ := n.store.Get(context.Background(), 1)
	t2, _ := n.store.Get(context.Background(), 2)
	if t1.State != store.StateEscalated || !strings.Contains(t1.Reason, "content management policy") || t2.State != store.StateDone {
		t.Errorf("ticket 1 %s (%s), ticket 2 %s; want 1 escalated with the server's words, 2 done", t1.State, t1.Reason, t2.State)
	}
}
