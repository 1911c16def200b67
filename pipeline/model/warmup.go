package model

import (
	"context"
	"sync"
	"time"
)

// warmupRearmIdle is how long a role may sit idle before its next request is treated as
// a first request again: providers drop a cached prefix after minutes of idleness
// (OpenAI: 5 to 10), so a long-running daemon warms up again each night.
const warmupRearmIdle = 5 * time.Minute

// warmup is the shared-prefix gate: the first request of each role goes alone, and the
// others of that role wait until it has an answer (or fails, or WarmupWait elapses), so
// the prefix is written to the provider's cache once instead of once per worker.
type warmup struct {
	mu    sync.Mutex
	roles map[Role]*roleGate
	clock Clock
	wait  time.Duration
	// onWait, when set (tests), is called as a request starts waiting at the gate.
	onWait func(Role)
}

type roleGate struct {
	open     chan struct{} // closed once the leader has an answer; nil before a leader
	warm     bool
	inflight int
	lastDone time.Time
}

func newWarmup(clock Clock, wait time.Duration) *warmup {
	return &warmup{roles: make(map[Role]*roleGate), clock: clock, wait: wait}
}

// enter passes the gate for role. It returns open, non-nil for the leader, which must be
// called once the leader's answer starts (it is idempotent), and done, to be called when
// the request ends. It returns an error only when ctx ends while waiting.
func (w *warmup) enter(ctx context.Context, role Role) (open func(), done func(), err error) {
	w.mu.Lock()
	g := w.roles[role]
	if g == nil {
		g = &roleGate{}
		w.roles[role] = g
	}
	now := w.clock.Now()
	if g.warm && g.inflight == 0 && now.Sub(g.lastDone) > warmupRearmIdle {
		g.warm, g.open = false, nil
	}
	done = func() {
		w.mu.Lock()
		g.inflight--
		g.lastDone = w.clock.Now()
		w.mu.Unlock()
	}
	switch {
	case g.warm:
		g.inflight++
		w.mu.Unlock()
		return nil, done, nil
	case g.open == nil:
		ch := make(chan struct{})
		g.open = ch
		g.inflight++
		w.mu.Unlock()
		var once sync.Once
		open = func() {
			once.Do(func() {
				w.mu.Lock()
				g.warm = true
				w.mu.Unlock()
				close(ch)
			})
		}
		return open, done, nil
	}
	ch := g.open
	w.mu.Unlock()

	if w.onWait != nil {
		w.onWait(role)
	}
	select {
	case <-ch:
	case <-w.clock.After(w.wait):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	w.mu.Lock()
	g.inflight++
	w.mu.Unlock()
	return nil, done, nil
}
