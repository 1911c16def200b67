package status

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/store"
)

// storeCollector reads the store's figures at scrape time: the metrics are what the
// database says, so they survive restarts, cover `ticketctl serve` with no daemon running,
// and need no instrumentation in the code that writes the records. A feature that appends
// a new event kind (a rescuer, a circuit breaker opening) is counted by
// ticketd_events_total{kind} with no change here.
type storeCollector struct {
	store   *store.Store
	timeout time.Duration

	tickets, events, claims, leaseExpiries, rescues *prometheus.Desc
	calls, callErrors, tokens, cost, latency        *prometheus.Desc
	toolDuration, up                                *prometheus.Desc
	nights, lastNightEnd                            *prometheus.Desc
	envOK, envSetup                                 *prometheus.Desc
	selectionMissed                                 *prometheus.Desc
}

var _ prometheus.Collector = (*storeCollector)(nil)

func newStoreCollector(st *store.Store) *storeCollector {
	rm := []string{"role", "model"}
	return &storeCollector{
		store:         st,
		timeout:       5 * time.Second,
		tickets:       prometheus.NewDesc("ticketd_tickets", "Tickets by state.", []string{"state"}, nil),
		events:        prometheus.NewDesc("ticketd_events_total", "Ticket events by kind (the append-only history).", []string{"kind"}, nil),
		claims:        prometheus.NewDesc("ticketd_claims_total", "Claims of a ticket by a worker (one per attempt).", nil, nil),
		leaseExpiries: prometheus.NewDesc("ticketd_lease_expiries_total", "Leases that expired without the worker finishing.", nil, nil),
		rescues:       prometheus.NewDesc("ticketd_rescues_total", "Claims that took over a ticket whose lease had expired.", nil, nil),
		calls:         prometheus.NewDesc("ticketd_model_calls_total", "Model calls.", rm, nil),
		callErrors:    prometheus.NewDesc("ticketd_model_call_errors_total", "Model calls that ended in an error.", rm, nil),
		tokens:        prometheus.NewDesc("ticketd_model_tokens_total", "Model tokens by kind: prompt (all, cached included), cached, completion, reasoning.", []string{"role", "model", "kind"}, nil),
		cost:          prometheus.NewDesc("ticketd_model_cost_usd_total", "Model spend in USD (calls with a known price).", rm, nil),
		latency:       prometheus.NewDesc("ticketd_model_latency_seconds_total", "Summed model call latency.", rm, nil),
		toolDuration:  prometheus.NewDesc("ticketd_tool_call_duration_seconds", "Duration of the maker's tool calls; run_checks and submit are the validator runs.", []string{"tool"}, nil),
		up:            prometheus.NewDesc("ticketd_store_up", "1 when the ticket database answered this scrape and took this process's latest write; 0 while writes fail (disk full, read-only, the server down) or once it was deleted or replaced.", nil, nil),
		nights:        prometheus.NewDesc("ticketd_nights_total", "Nights that ended, by outcome (ok, partial, stopped, failed).", []string{"outcome"}, nil),
		envOK: prometheus.NewDesc("ticketd_environment_ok",
			"1 when the latest setup of the repository's environment (repos.<name>.setup) on the node worked, 0 when its recipe failed and the repository is paused.", []string{"repo", "node"}, nil),
		envSetup: prometheus.NewDesc("ticketd_environment_setup_seconds",
			"How long the latest build of the repository's environment took (a cached one keeps its build's figure).", []string{"repo", "node"}, nil),
		selectionMissed: prometheus.NewDesc("ticketd_selection_missed_total",
			"Fixes the night's whole suite refused after the tests their change reaches had passed them, per repository: whether test selection (checks[].full_suite: nightly) is safe there.", []string{"repo"}, nil),
		lastNightEnd: prometheus.NewDesc("ticketd_last_night_end_timestamp_seconds",
			"When the latest night of each outcome ended (Unix seconds; 0 when none has): alert on time() minus the ok one.", []string{"outcome"}, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tickets, c.events, c.claims, c.leaseExpiries, c.rescues, c.calls,
		c.callErrors, c.tokens, c.cost, c.latency, c.toolDuration, c.up, c.nights, c.lastNightEnd, c.envOK, c.envSetup, c.selectionMissed} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ov, err := c.store.Overview(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		ch <- prometheus.NewInvalidMetric(c.tickets, err)
		return
	}
	up := 1.0
	if ok, _, _ := c.store.WriteHealth(); !ok {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	for st, n := range ov.ByState {
		ch <- prometheus.MustNewConstMetric(c.tickets, prometheus.GaugeValue, float64(n), string(st))
	}
	for kind, n := range ov.Events {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(n), string(kind))
	}
	ch <- prometheus.MustNewConstMetric(c.claims, prometheus.CounterValue, float64(ov.Events[store.EventClaimed]))
	ch <- prometheus.MustNewConstMetric(c.leaseExpiries, prometheus.CounterValue, float64(ov.Events[store.EventLeaseExpired]))
	ch <- prometheus.MustNewConstMetric(c.rescues, prometheus.CounterValue, float64(ov.Rescues))
	for _, m := range ov.Calls {
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(m.Calls), m.Role, m.Model)
		ch <- prometheus.MustNewConstMetric(c.callErrors, prometheus.CounterValue, float64(m.Errors), m.Role, m.Model)
		for kind, n := range map[string]int64{"prompt": m.PromptTokens, "cached": m.CachedTokens,
			"completion": m.CompletionTokens, "reasoning": m.ReasoningTokens} {
			ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, float64(n), m.Role, m.Model, kind)
		}
		ch <- prometheus.MustNewConstMetric(c.cost, prometheus.CounterValue, m.CostUSD, m.Role, m.Model)
		ch <- prometheus.MustNewConstMetric(c.latency, prometheus.CounterValue, m.LatencySeconds, m.Role, m.Model)
	}
	if nights, err := c.store.NightTotals(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(c.nights, err)
	} else {
		for _, n := range nights {
			ch <- prometheus.MustNewConstMetric(c.nights, prometheus.CounterValue, float64(n.Nights), string(n.Outcome))
			end := 0.0
			if !n.LastEnd.IsZero() {
				end = float64(n.LastEnd.UnixMilli()) / 1000
			}
			ch <- prometheus.MustNewConstMetric(c.lastNightEnd, prometheus.GaugeValue, end, string(n.Outcome))
		}
	}
	if envs, err := c.store.Environments(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(c.envOK, err)
	} else {
		for _, e := range envs {
			ok := 0.0
			if e.OK {
				ok = 1
			}
			ch <- prometheus.MustNewConstMetric(c.envOK, prometheus.GaugeValue, ok, e.Repo, e.Node)
			ch <- prometheus.MustNewConstMetric(c.envSetup, prometheus.GaugeValue, e.Took.Seconds(), e.Repo, e.Node)
		}
	}
	c.collectSelectionMissed(ctx, ch)
	for _, t := range toolLabels(ov.Tools) {
		buckets := map[float64]uint64{}
		for i, b := range store.DurationBuckets {
			buckets[b] = uint64(t.Buckets[i])
		}
		ch <- prometheus.MustNewConstHistogram(c.toolDuration, uint64(t.Calls), t.SumSeconds, buckets, t.Tool)
	}
}

// collectSelectionMissed sends ticketd_selection_missed_total per repository.
func (c *storeCollector) collectSelectionMissed(ctx context.Context, ch chan<- prometheus.Metric) {
	missed, err := c.store.SelectionMissed(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.selectionMissed, err)
		return
	}
	for repo, n := range missed {
		ch <- prometheus.MustNewConstMetric(c.selectionMissed, prometheus.CounterValue, float64(n), repo)
	}
}

// otherTool is the tool label of every call whose name is not one of ticketd's tools.
const otherTool = "other"

// toolLabels folds the calls of tools ticketd does not offer — names a model made up, each
// a new label value — into one "other" series, so model output cannot grow the scrape.
func toolLabels(in []store.ToolTotals) []store.ToolTotals {
	var out []store.ToolTotals
	other := -1
	for _, t := range in {
		if tools.Known(t.Tool) {
			out = append(out, t)
			continue
		}
		if other < 0 {
			other = len(out)
			out = append(out, store.ToolTotals{Tool: otherTool, Buckets: make([]int64, len(store.DurationBuckets))})
		}
		o := &out[other]
		o.Calls += t.Calls
		o.Failed += t.Failed
		o.SumSeconds += t.SumSeconds
		for i := range o.Buckets {
			if i < len(t.Buckets) {
				o.Buckets[i] += t.Buckets[i]
			}
		}
	}
	return out
}
