package store

import (
	"errors"
	"testing"
	"time"
)

func TestRateLimitRelease(t *testing.T) { forEachEngine(t, testRateLimitRelease) }

// testRateLimitRelease: a rate-limit release gives the attempt back, makes the ticket
// claimable at the provider's reset and not before, and does not count toward parking.
func testRateLimitRelease(t *testing.T, e engine) {
	b := e.setup(t)
	run, err := b.s.StartRun(b.ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	id := b.enqueue(t, "1")
	l := b.claim(t, "w1")
	reset := b.clock.Now().Add(20 * time.Second)
	to, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailRateLimit, Reason: "429, lifts in 20s", RunAfter: reset})
	if err != nil || to != StateQueued {
		t.Fatalf("Fail(rate_limit) = %s, %v; want queued", to, err)
	}
	tk, _ := b.s.Get(b.ctx, id)
	if tk.Attempts != 0 || !tk.RunAfter.Equal(reset) {
		t.Errorf("ticket attempts %d run_after %s; want 0 and %s", tk.Attempts, tk.RunAfter, reset)
	}
	if n, err := b.s.TransportReleases(b.ctx, id, run); err != nil || n != 0 {
		t.Errorf("TransportReleases = %d, %v; want 0: a rate limit with a known reset is not the endpoint failing", n, err)
	}
	b.clock.Advance(19 * time.Second)
	if _, err := b.s.Claim(b.ctx, "w1", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Fatalf("claim before the reset: %v; want ErrNoTicket", err)
	}
	b.clock.Advance(time.Second)
	if l := b.claim(t, "w1"); l.Attempt != 1 {
		t.Errorf("claim at the reset: attempt %d, want 1 (the deferred attempt was not charged)", l.Attempt)
	}
}
