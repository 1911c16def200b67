package github

import (
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
}

// note records one pass of op: failed when it ended in an error that was not a pause.
func (h *opHealth) note(op string, failed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == nil {
		h.failures, h.failing = map[string]float64{}, map[string]bool{}
	}
	if failed {
		h.failures[op]++
	}
	h.failing[op] = failed
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
