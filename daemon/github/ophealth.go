package github

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// opHealth is what each GitHub operation's passes came to, for /metrics: a publish that
// GitHub refuses at every poll (a locked issue, a branch with no commits, a token that
// lost a scope) is retried without end and charges no ticket, so without these figures
// it would show only in the log. The zero value is ready.
type opHealth struct {
	mu       sync.Mutex
	failures map[string]float64 // op -> passes that failed (not rate-limit pauses)
	failing  map[string]bool    // op -> whether its last pass failed
	lastErr  map[string]string  // op -> its last pass's error, while failing
}

// note records one pass of op: err is nil when it worked, else the error (not a pause) it
// ended in.
func (h *opHealth) note(op string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == nil {
		h.failures, h.failing, h.lastErr = map[string]float64{}, map[string]bool{}, map[string]string{}
	}
	h.failing[op] = err != nil
	delete(h.lastErr, op)
	if err != nil {
		h.failures[op]++
		h.lastErr[op] = err.Error()
	}
}

// failingNow lists the operations whose last pass failed, "op: error", sorted.
func (h *opHealth) failingNow() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for op, e := range h.lastErr {
		out = append(out, op+": "+e)
	}
	slices.Sort(out)
	return out
}

const (
	failuresHelp = "GitHub passes (scan, publish, review rounds, pull request checks, watch) that ended in an error other than a rate-limit pause; the log says which."
	failingHelp  = "1 while the last pass of this GitHub operation ended in an error other than a rate-limit pause, else 0."
)

var (
	failuresDesc = prometheus.NewDesc("ticketd_github_failures_total", failuresHelp, []string{"op"}, nil)
	failingDesc  = prometheus.NewDesc("ticketd_github_failing", failingHelp, []string{"op"}, nil)
)

// Describe implements prometheus.Collector.
func (h *opHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- failuresDesc
	ch <- failingDesc
}

// Collect implements prometheus.Collector.
func (h *opHealth) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for op, n := range h.failures {
		ch <- prometheus.MustNewConstMetric(failuresDesc, prometheus.CounterValue, n, op)
	}
	for op, f := range h.failing {
		v := 0.0
		if f {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(failingDesc, prometheus.GaugeValue, v, op)
	}
}
