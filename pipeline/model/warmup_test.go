package model

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestWarmupOrdering: the first maker request goes alone; two more maker requests wait at
// the gate until it has answered, while a triage request is not held by the maker's gate.
func TestWarmupOrdering(t *testing.T) {
	leaderIn := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		who := r.Header.Get("X-Test-Who")
		mu.Lock()
		order = append(order, who)
		mu.Unlock()
		if n == 0 {
			close(leaderIn)
			<-release
		}
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	cfg := testConfig(srv.URL)
	b := setup(t, cfg, WithHTTPClient(&http.Client{Transport: whoTransport{}}))
	b.clock.AutoAdvance(DefaultWarmupWait) // the bound never elapses in this test
	waiting := make(chan Role, 4)
	b.client.warm.onWait = func(r Role) { waiting <- r }

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	chat := func(who string, role Role) {
		defer wg.Done()
		ctx := context.WithValue(context.Background(), whoKey{}, who)
		if _, err := b.client.Chat(ctx, Request{Role: role, Messages: userMsg("x").Messages}); err != nil {
			errs <- err
		}
	}
	wg.Add(1)
	go chat("maker-1", RoleMaker)
	<-leaderIn
	passed := make(chan string, 2)
	for _, who := range []string{"maker-2", "maker-3"} {
		wg.Add(1)
		go func() {
			chat(who, RoleMaker)
			passed <- who
		}()
	}
	for range 2 {
		select {
		case r := <-waiting:
			if r != RoleMaker {
				t.Errorf("waiting role = %s, want maker", r)
			}
		case who := <-passed:
			close(release)
			t.Fatalf("%s finished while the maker leader had not answered", who)
		}
	}
	// A triage leader passes while the maker leader is still out.
	wg.Add(1)
	chat("triage-1", RoleTriage)

	mu.Lock()
	before := append([]string(nil), order...)
	mu.Unlock()
	if len(before) != 2 || before[0] != "maker-1" || before[1] != "triage-1" {
		t.Errorf("requests before the maker leader answered = %v, want [maker-1 triage-1]", before)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(order) != 4 {
		t.Errorf("requests = %v, want 4", order)
	}
	// Later maker requests pass without waiting.
	wg.Add(1)
	chat("maker-4", RoleMaker)
	select {
	case r := <-waiting:
		t.Errorf("%s request waited after warm-up", r)
	default:
	}
}

// TestWarmupBound: when the leader takes longer than WarmupWait, the others go anyway.
func TestWarmupBound(t *testing.T) {
	leaderIn := make(chan struct{})
	release := make(chan struct{})
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
		if n == 0 {
			close(leaderIn)
			<-release
		}
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	b := setup(t, testConfig(srv.URL))
	done := make(chan error, 1)
	go func() {
		_, err := b.client.Chat(context.Background(), userMsg("leader"))
		done <- err
	}()
	<-leaderIn
	// The fake clock fires the 20s bound at once: the follower must not block.
	if _, err := b.client.Chat(context.Background(), userMsg("follower")); err != nil {
		t.Fatal(err)
	}
	if got := b.clock.Waits(); !equalDurations(got, []time.Duration{DefaultWarmupWait}) {
		t.Errorf("waits = %v, want one of warmup_wait %s", got, DefaultWarmupWait)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWarmupOpensOnFailure: a leader refused by the endpoint lets the others through.
func TestWarmupOpensOnFailure(t *testing.T) {
	leaderIn := make(chan struct{})
	release := make(chan struct{})
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
		if n == 0 {
			close(leaderIn)
			<-release
			writeJSON(w, 400, `{"error":{"message":"bad"}}`)
			return
		}
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	b := setup(t, testConfig(srv.URL))
	b.clock.AutoAdvance(DefaultWarmupWait)
	waiting := make(chan Role, 1)
	b.client.warm.onWait = func(r Role) { waiting <- r }
	leaderErr := make(chan error, 1)
	go func() {
		_, err := b.client.Chat(context.Background(), userMsg("leader"))
		leaderErr <- err
	}()
	<-leaderIn
	followerErr := make(chan error, 1)
	go func() {
		_, err := b.client.Chat(context.Background(), userMsg("follower"))
		followerErr <- err
	}()
	select {
	case <-waiting:
	case err := <-followerErr:
		close(release)
		t.Fatalf("follower finished (%v) before the leader answered", err)
	}
	close(release)
	if err := <-leaderErr; err == nil {
		t.Error("leader: want the 400 error")
	}
	if err := <-followerErr; err != nil {
		t.Errorf("follower: %v, want success after the leader failed", err)
	}
}

// TestWarmupRearmsAfterIdle: after the provider's cache would have expired, the next
// request of a role leads again.
func TestWarmupRearmsAfterIdle(t *testing.T) {
	clock := newFakeClock()
	w := newWarmup(clock, DefaultWarmupWait)
	ctx := context.Background()
	steps := []struct {
		advance    time.Duration
		wantLeader bool
	}{
		{0, true},                   // first request
		{time.Minute, false},        // warm
		{warmupRearmIdle, false},    // exactly the idle bound: still warm
		{warmupRearmIdle + 1, true}, // idle too long: lead again
		{time.Second, false},        // warm again
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		open, done, err := w.enter(ctx, RoleChecker)
		if err != nil {
			t.Fatal(err)
		}
		if (open != nil) != s.wantLeader {
			t.Errorf("step %d (after %s idle): leader = %v, want %v", i, s.advance, open != nil, s.wantLeader)
		}
		if open != nil {
			open()
		}
		done()
	}
}

type whoKey struct{}

// whoTransport labels each request with the test's name for it.
type whoTransport struct{}

func (whoTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if who, ok := r.Context().Value(whoKey{}).(string); ok {
		r = r.Clone(r.Context())
		r.Header.Set("X-Test-Who", who)
	}
	return http.DefaultTransport.RoundTrip(r)
}
