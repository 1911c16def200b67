package daemon

import (
	"context"
	"sync"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// callRecorder writes each model call to the store under the current night, and keeps the
// night's running cost so the dollar budget is enforced without a query per call.
type callRecorder struct {
	store *store.Store
	runID int64

	mu      sync.Mutex
	dollars float64
	// over is called once when the night's dollars pass the limit (0 = no limit).
	limit float64
	over  func()
	fired bool
}

var _ model.Recorder = (*callRecorder)(nil)

func (r *callRecorder) RecordModelCall(ctx context.Context, c model.Call) error {
	_, err := r.store.RecordModelCall(ctx, store.ModelCall{
		TicketID:         c.TicketID,
		RunID:            r.runID,
		Attempt:          c.Attempt,
		Role:             string(c.Role),
		Model:            c.Model,
		Endpoint:         c.Endpoint,
		PromptTokens:     c.Usage.PromptTokens,
		CachedTokens:     c.Usage.CachedTokens,
		CacheWriteTokens: c.Usage.CacheWriteTokens,
		CompletionTokens: c.Usage.CompletionTokens,
		ReasoningTokens:  c.Usage.ReasoningTokens,
		CostUSD:          c.CostUSD,
		Latency:          c.Latency,
		FinishReason:     c.FinishReason,
		ErrorClass:       c.ErrorClass,
		Error:            c.Error,
		Retries:          c.Retries,
		StartedAt:        c.StartedAt,
	})
	if c.CostUSD != nil {
		r.mu.Lock()
		r.dollars += *c.CostUSD
		fire := r.limit > 0 && r.dollars >= r.limit && !r.fired
		if fire {
			r.fired = true
		}
		r.mu.Unlock()
		if fire && r.over != nil {
			r.over()
		}
	}
	return err
}

// Dollars is the night's model spend so far.
func (r *callRecorder) Dollars() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dollars
}
