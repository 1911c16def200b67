package daemon

import (
	"context"
	"log/slog"
	"sync"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// callRecorder writes each model call to the store under the current night and enforces
// the night's dollar budget on the night's cost over every node (a read of the run's sum
// after each priced call), keeping this node's own running cost for its report. Estimated
// costs (a server that sends no usage) count like reported ones: a budget that ignored
// them could never trip.
type callRecorder struct {
	store *store.Store
	runID int64

	mu        sync.Mutex
	dollars   float64
	estimated float64 // the part of dollars that rests on estimated usage
	unknown   bool    // some call's cost is unknown (no price, or its completion unknown)
	// over is called once when the night's dollars pass the limit (0 = no limit).
	limit float64
	over  func()
	fired bool
	// quota is called once when a call finds the account out of quota or credit.
	quota      func(msg string)
	quotaFired bool
	// down says the database takes no writes now, failed is told of a record it refused
	// (see watch); pending are the calls kept meanwhile, recorded by flush.
	down    func() bool
	failed  func(error)
	pending []store.ModelCall
}

// watch makes the recorder keep the calls the database does not take (while down says it
// is down, or when a write fails as the database's fault), telling failed of each such
// failure, and record them when flush is called: the calls are spent either way, and a
// night's cost must count them.
func (r *callRecorder) watch(down func() bool, failed func(error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down, r.failed = down, failed
}

// keep holds a call the database did not take; it reports whether it did (a recorder
// that watches nothing keeps nothing).
func (r *callRecorder) keep(mc store.ModelCall, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down == nil || (err != nil && !store.IsWriteFault(err)) {
		return false
	}
	r.pending = append(r.pending, mc)
	return true
}

// isDown says whether the database is known to take no writes now.
func (r *callRecorder) isDown() bool {
	r.mu.Lock()
	down := r.down
	r.mu.Unlock()
	return down != nil && down()
}

// flush records the calls kept while the database took no writes; those it still refuses
// stay kept (a later flush tries again), and the end of the night says how many were lost.
func (r *callRecorder) flush(ctx context.Context, log *slog.Logger) {
	r.mu.Lock()
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	recorded := 0
	for i, mc := range pending {
		if _, err := r.store.RecordModelCall(ctx, mc); err != nil {
			r.mu.Lock()
			r.pending = append(pending[i:], r.pending...)
			r.mu.Unlock()
			log.Error("record the model calls kept while the ticket database took no writes: still refused",
				"recorded", recorded, "kept", len(pending)-i, "err", err)
			return
		}
		recorded++
	}
	log.Info("recorded the model calls made while the ticket database took no writes", "calls", recorded)
}

var _ model.Recorder = (*callRecorder)(nil)

func (r *callRecorder) RecordModelCall(ctx context.Context, c model.Call) error {
	mc := store.ModelCall{
		TicketID:          c.TicketID,
		RunID:             r.runID,
		Attempt:           c.Attempt,
		Role:              string(c.Role),
		Model:             c.Model,
		Endpoint:          c.Endpoint,
		PromptTokens:      c.Usage.PromptTokens,
		CachedTokens:      c.Usage.CachedTokens,
		CacheWriteTokens:  c.Usage.CacheWriteTokens,
		CompletionTokens:  c.Usage.CompletionTokens,
		ReasoningTokens:   c.Usage.ReasoningTokens,
		CostUSD:           c.CostUSD,
		UsageEstimated:    c.UsageEstimated,
		CompletionUnknown: c.CompletionUnknown,
		CostSource:        c.CostSource,
		PriceCostUSD:      c.PriceCostUSD,
		ProviderCostUSD:   c.ProviderCostUSD,
		Latency:           c.Latency,
		FinishReason:      c.FinishReason,
		ErrorClass:        c.ErrorClass,
		Error:             c.Error,
		Retries:           c.Retries,
		StartedAt:         c.StartedAt,
		Compactions:       c.Compactions,
		Continuations:     c.Continuations,
	}
	var err error
	if r.isDown() {
		// No write while the database is known to be down: the call waits for it.
		r.keep(mc, nil)
	} else if _, err = r.store.RecordModelCall(ctx, mc); err != nil && r.keep(mc, err) {
		r.mu.Lock()
		failed := r.failed
		r.mu.Unlock()
		failed(err)
		err = nil // kept: recorded when the database takes writes again
	}
	if c.CostUSD == nil || c.CompletionUnknown {
		r.mu.Lock()
		r.unknown = true
		r.mu.Unlock()
	}
	if c.CostUSD != nil {
		r.mu.Lock()
		r.dollars += *c.CostUSD
		if c.CostSource == model.CostSourceEstimate {
			r.estimated += *c.CostUSD
		}
		spent := r.dollars
		r.mu.Unlock()
		if r.limit > 0 && err == nil {
			// The cap is the night's, over every node on the database.
			if total, _, terr := r.store.RunCost(ctx, r.runID); terr == nil {
				spent = max(spent, total)
			}
		}
		r.mu.Lock()
		fire := r.limit > 0 && spent >= r.limit && !r.fired
		if fire {
			r.fired = true
		}
		r.mu.Unlock()
		if fire && r.over != nil {
			r.over()
		}
	}
	if c.ErrorClass == model.ErrorClassQuota {
		r.mu.Lock()
		fire := !r.quotaFired
		r.quotaFired = true
		r.mu.Unlock()
		if fire && r.quota != nil {
			r.quota(c.Error)
		}
	}
	return err
}

// Dollars is this node's model spend in the night so far, estimates included.
func (r *callRecorder) Dollars() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dollars
}

// CostUnknown says whether some call's cost is unknown, making Dollars a lower bound.
func (r *callRecorder) CostUnknown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unknown
}

// EstimatedDollars is the part of Dollars computed from estimated usage.
func (r *callRecorder) EstimatedDollars() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.estimated
}

// endpointLog returns the model client's endpoint observer for one night: it logs each
// health change and keeps it in the store, where ticketctl stats reads it.
func endpointLog(st *store.Store, runID int64, log *slog.Logger) func(model.EndpointStatus) {
	return func(s model.EndpointStatus) {
		if s.Down {
			log.Warn("claims paused: model endpoint down", "endpoint", s.Name, "base_url", s.BaseURL,
				"down_since", s.Since, "last_error", s.LastError, "next_probe", s.NextProbe)
		} else {
			log.Info("claims resume: model endpoint up again", "endpoint", s.Name, "base_url", s.BaseURL)
		}
		err := st.RecordEndpointEvent(context.Background(), store.EndpointEvent{RunID: runID, Endpoint: s.Name,
			BaseURL: s.BaseURL, Down: s.Down, Since: s.Since, LastError: s.LastError})
		if err != nil {
			log.Error("record endpoint health", "endpoint", s.Name, "err", err)
		}
	}
}
