package model

import (
	"sync"
	"time"
)

// EndpointStatus is an endpoint's health as the circuit breaker sees it.
type EndpointStatus struct {
	Name    string
	BaseURL string
	Down    bool
	// Since is when the endpoint was marked down (or, once up, when it came back).
	Since time.Time
	// LastError is the last transport failure's text (the server's words kept, secrets
	// removed).
	LastError string
	// Failures is the current run of consecutive transport failures.
	Failures int
	// NextProbe is when a down endpoint is probed next.
	NextProbe time.Time
}

// breaker is one endpoint's circuit breaker: after cfg.Failures transport failures in a
// row the endpoint is down, requests to it fail at once with ErrEndpointDown, and a probe
// (the preflight request) is due after ProbeBase, doubling to ProbeMax after each failed
// probe. Any answer that is not a transport fault, or a passing probe, closes it.
type breaker struct {
	cfg   BreakerConfig
	clock Clock

	mu       sync.Mutex
	st       EndpointStatus
	probeGap time.Duration
	probing  bool
}

func newBreaker(name, baseURL string, cfg BreakerConfig, clock Clock) *breaker {
	return &breaker{cfg: cfg, clock: clock, st: EndpointStatus{Name: name, BaseURL: baseURL}}
}

// status returns a copy of the state.
func (b *breaker) status() EndpointStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st
}

func (b *breaker) down() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Down
}

// failure counts a transport failure and reports whether it tripped the breaker now.
func (b *breaker) failure(msg string) (tripped bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st.Failures++
	b.st.LastError = msg
	if b.cfg.Failures < 0 || b.st.Down || b.st.Failures < b.cfg.Failures {
		return false
	}
	now := b.clock.Now()
	b.st.Down, b.st.Since = true, now
	b.probeGap = b.cfg.ProbeBase
	b.st.NextProbe = now.Add(b.probeGap)
	return true
}

// success closes the breaker and reports whether it was open.
func (b *breaker) success() (recovered bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.st.Down
	b.st.Failures = 0
	if was {
		b.st.Down, b.st.Since, b.st.NextProbe = false, b.clock.Now(), time.Time{}
	}
	return was
}

// takeProbe reports whether the caller should probe now (down, due, and nobody else
// probing); the caller must then call probed.
func (b *breaker) takeProbe() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.st.Down || b.probing || b.clock.Now().Before(b.st.NextProbe) {
		return false
	}
	b.probing = true
	return true
}

// probed records a probe's result.
func (b *breaker) probed(err error, msg string) (recovered bool) {
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
	if err == nil {
		return b.success()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st.LastError = msg
	b.probeGap = min(2*b.probeGap, b.cfg.ProbeMax)
	b.st.NextProbe = b.clock.Now().Add(b.probeGap)
	return false
}
