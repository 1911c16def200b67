package daemon

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

func TestRateLimitEnding(t *testing.T) {
	end := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		retryAt time.Time
		park    bool
	}{
		{"reset 20 s away", end.Add(-6*time.Hour + 20*time.Second), false},
		{"reset a second before the window ends", end.Add(-time.Second), false},
		{"reset at the window's end", end, true},
		{"reset tomorrow", end.Add(20 * time.Hour), true},
	} {
		f, park := rateLimitEnding(tc.retryAt, end, "429")
		if park != tc.park || f.Kind != store.FailRateLimit || !f.RunAfter.Equal(tc.retryAt) {
			t.Errorf("%s: rateLimitEnding(%s) = %+v, park %v; want kind rate_limit, run_after %s, park %v", tc.name, tc.retryAt, f, park, tc.retryAt, tc.park)
		}
	}
}

// modelClock gives the model client the night's fake clock: a wait fires when the test
// advances the clock past it.
type modelClock struct{ *fakeClock }

func (c modelClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.AfterFunc(d, func() { ch <- c.Now() })
	return ch
}

// TestRateLimitDeferredInsideTheNight: the provider answers the ticket's first request 429
// and says (in OpenAI's x-ratelimit-reset-requests, no Retry-After) that the limit lifts in
// 20 s, longer than the client waits in a call. The ticket goes back to the queue, claimable
// in 20 s, unspent; when the night's clock reaches the reset it is claimed again and fixed,
// in the same night. One clock (the test's) drives the store, the daemon, the model client
// and the scripted model: nothing sleeps 20 s.
func TestRateLimitDeferredInsideTheNight(t *testing.T) {
	t.Parallel()
	realNight(t)
	for _, style := range []string{"openai", "openai-text", "anthropic"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1)
			clock := newFakeClock(time.Now())
			_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Now: clock.Now,
				RoleFaults: map[string]scriptedmodel.Faults{"triage": {RateLimitAfter: 1, RateLimitWindow: 20 * time.Second, RateLimitStyle: style}}})
			cfg := f.config(t, url, 1)
			cfg.Models.Retry.MaxWait = 5 * time.Second // a 20 s reset is not waited in a call
			cfg.Night.Lease = time.Hour
			ctx := context.Background()
			st, err := store.Open(ctx, cfg.Store.Path, store.Options{Now: clock.Now, BackoffBase: cfg.Night.RetryBackoff})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clock,
				ModelOptions: []model.Option{model.WithClock(modelClock{clock})}}
			start := clock.Now()
			done := make(chan NightReport, 1)
			go func() {
				rep, err := d.RunNight(ctx, "test")
				if err != nil {
					t.Errorf("night: %v", err)
				}
				done <- rep
			}()

			// The preflight's triage request is the account's one allowed request; the ticket's
			// triage is refused. The event that the ticket went back for the rate limit; the bound only keeps a
			// broken night from hanging the test.
			var deferred store.Event
			for deadline := time.Now().Add(2 * time.Minute); deferred.Kind == "" && time.Now().Before(deadline); {
				events, _ := st.Events(ctx, 1)
				for _, e := range events {
					if e.Kind == "released" && strings.HasPrefix(e.Reason, "rate_limit:") {
						deferred = e
					}
				}
				select {
				case rep := <-done:
					t.Fatalf("the night ended (%s: %s) before the ticket was deferred; events %v", rep.Outcome, rep.Error, events)
				case <-time.After(20 * time.Millisecond):
				}
			}
			tk, err := st.Get(ctx, 1)
			if err != nil || deferred.Kind == "" || tk.State != store.StateQueued || tk.Attempts != 0 || !tk.RunAfter.Equal(start.Add(20*time.Second).Truncate(time.Millisecond)) {
				t.Fatalf("ticket %s attempts %d run_after %s (%v), deferred %+v; want queued, unspent, run_after start+20s", tk.State, tk.Attempts, tk.RunAfter, err, deferred)
			}
			clock.Advance(20 * time.Second)
			rep := awaitNight(t, done)
			tk, _ = st.Get(ctx, 1)
			if tk.State != store.StateDone || tk.Attempts != 1 || rep.Outcome != store.OutcomeOK {
				t.Errorf("after the reset: ticket %s attempts %d (%s), night %s (%s); want done on its first charged attempt, night ok", tk.State, tk.Attempts, tk.Reason, rep.Outcome, rep.Error)
			}
		})
	}
}
