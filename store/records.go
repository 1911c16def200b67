package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// maxPayload bounds tool call arguments and results kept in the database.
const maxPayload = 4 << 10

// ModelCall is one request to a model endpoint, successful or not.
type ModelCall struct {
	ID               int64    `json:"id"`
	TicketID         int64    `json:"ticket_id"`
	RunID            int64    `json:"run_id"` // 0 when none
	Attempt          int      `json:"attempt"`
	Role             string   `json:"role"`
	Model            string   `json:"model"`
	Endpoint         string   `json:"endpoint"`
	PromptTokens     int64    `json:"prompt_tokens"`
	CachedTokens     int64    `json:"cached_tokens"`
	CacheWriteTokens int64    `json:"cache_write_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	ReasoningTokens  int64    `json:"reasoning_tokens"`
	CostUSD          *float64 `json:"cost_usd"` // nil = unknown model price, never recorded as zero
	// UsageEstimated is true when the server sent no usage and the token counts are
	// estimates (then CostUSD is an estimate too). Stored as usage_reported = 0.
	UsageEstimated bool `json:"usage_estimated"`
	// CompletionUnknown is true for a request abandoned before its answer (a client-side
	// time-out the server may have completed and billed): its prompt is estimated, its
	// completion is not known, so its cost is a lower bound.
	CompletionUnknown bool `json:"completion_unknown,omitempty"`
	// Compactions is how many compaction passes shrank the maker's conversation just
	// before this call.
	Compactions int `json:"compactions,omitempty"`
	// Continuations counts the follow-up requests that continued an answer cut at
	// finish_reason=length; its tokens are the sum over them.
	Continuations int `json:"continuations"`
	// CostSource is "provider", "price_table", "estimate", "unknown", or "" (older rows).
	CostSource      string        `json:"cost_source"`
	PriceCostUSD    *float64      `json:"price_cost_usd"`    // the price-table figure, beside a provider's cost
	ProviderCostUSD *float64      `json:"provider_cost_usd"` // the provider's own reported cost
	Latency         time.Duration `json:"-"`
	FinishReason    string        `json:"finish_reason"`
	ErrorClass      string        `json:"error_class"` // "", "rate_limit", "server", "network", "timeout", "bad_request", ...
	Error           string        `json:"error"`
	Retries         int           `json:"retries"`
	StartedAt       time.Time     `json:"started_at"`
}

// MarshalJSON writes Latency as latency_s (seconds).
func (c ModelCall) MarshalJSON() ([]byte, error) {
	type plain ModelCall
	return json.Marshal(struct {
		plain
		LatencyS float64 `json:"latency_s"`
	}{plain(c), c.Latency.Seconds()})
}

func floatPtr(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	f := v.Float64
	return &f
}

// RecordModelCall appends c (ID ignored) and returns its id.
func (s *Store) RecordModelCall(ctx context.Context, c ModelCall) (int64, error) {
	var id int64
	started := c.StartedAt
	if started.IsZero() {
		started = s.now()
	}
	err := s.write(ctx, "record model call", func(ctx context.Context, tx storedriver.Tx) error {
		var err error
		id, err = tx.Insert(ctx, s.q.InsertModelCall, storedriver.InsertModelCallParams{
			TicketID: c.TicketID, RunID: c.RunID, Attempt: c.Attempt, Role: c.Role, Model: c.Model, Endpoint: c.Endpoint,
			PromptTokens: c.PromptTokens, CachedTokens: c.CachedTokens, CacheWriteTokens: c.CacheWriteTokens,
			CompletionTokens: c.CompletionTokens, Reasoning: c.ReasoningTokens, CostUSD: c.CostUSD,
			LatencyMS: c.Latency.Milliseconds(), FinishReason: c.FinishReason, ErrorClass: c.ErrorClass, Error: c.Error,
			Retries: c.Retries, StartedAt: started.UnixMilli(), UsageReported: !c.UsageEstimated, CostSource: c.CostSource,
			PriceCostUSD: c.PriceCostUSD, ProviderCostUSD: c.ProviderCostUSD, Compactions: c.Compactions,
			CompletionUnknown: c.CompletionUnknown, Continuations: c.Continuations}.Args()...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record %s model call for ticket %d: %w", c.Role, c.TicketID, err)
	}
	return id, nil
}

// ModelCalls returns a ticket's model calls in the order they were made.
func (s *Store) ModelCalls(ctx context.Context, ticketID int64) ([]ModelCall, error) {
	rows, err := s.rd.Query(ctx, s.q.ModelCalls, ticketID)
	if err != nil {
		return nil, fmt.Errorf("model calls of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	out := []ModelCall{}
	for rows.Next() {
		var (
			c                 ModelCall
			cost, price, prov sql.NullFloat64
			latencyMS         int64
			started           sql.NullInt64
			reported          int
			unknownCompletion int
		)
		if err := rows.Scan(&c.ID, &c.TicketID, &c.RunID, &c.Attempt, &c.Role, &c.Model, &c.Endpoint,
			&c.PromptTokens, &c.CachedTokens, &c.CacheWriteTokens, &c.CompletionTokens, &c.ReasoningTokens, &cost,
			&latencyMS, &c.FinishReason, &c.ErrorClass, &c.Error, &c.Retries, &started,
			&reported, &c.CostSource, &price, &prov, &c.Compactions, &unknownCompletion, &c.Continuations); err != nil {
			return nil, fmt.Errorf("model calls of ticket %d: %w", ticketID, err)
		}
		c.CostUSD, c.PriceCostUSD, c.ProviderCostUSD = floatPtr(cost), floatPtr(price), floatPtr(prov)
		c.UsageEstimated, c.CompletionUnknown = reported == 0, unknownCompletion != 0
		c.Latency = time.Duration(latencyMS) * time.Millisecond
		c.StartedAt = fromMS(started)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("model calls of ticket %d: %w", ticketID, err)
	}
	return out, nil
}

// ToolCall is one tool the maker ran.
type ToolCall struct {
	ID       int64  `json:"id"`
	TicketID int64  `json:"ticket_id"`
	Attempt  int    `json:"attempt"`
	Step     int    `json:"step"`
	Tool     string `json:"tool"`
	Args     string `json:"args"`   // truncated to 4 KiB
	Result   string `json:"result"` // truncated to 4 KiB
	OK       bool   `json:"ok"`
	// Rung is the edit_file matching rung that applied an edit ("exact", "indent_shift",
	// ...); empty for other tools and failed edits.
	Rung     string        `json:"rung,omitempty"`
	Duration time.Duration `json:"-"`
	At       time.Time     `json:"at"`
}

// MarshalJSON writes Duration as duration_s (seconds).
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	return json.Marshal(struct {
		plain
		DurationS float64 `json:"duration_s"`
	}{plain(c), c.Duration.Seconds()})
}

// truncate cuts v to at most n bytes on a UTF-8 boundary and says so.
func truncate(v string, n int) string {
	if len(v) <= n {
		return v
	}
	const mark = "…[truncated]"
	cut := n - len(mark)
	for cut > 0 && v[cut]&0xC0 == 0x80 {
		cut--
	}
	return v[:cut] + mark
}

// RecordToolCall appends c (ID ignored; Args and Result truncated) and returns its id.
func (s *Store) RecordToolCall(ctx context.Context, c ToolCall) (int64, error) {
	var id int64
	at := c.At
	if at.IsZero() {
		at = s.now()
	}
	err := s.write(ctx, "record tool call", func(ctx context.Context, tx storedriver.Tx) error {
		var err error
		id, err = tx.Insert(ctx, s.q.InsertToolCall, storedriver.InsertToolCallParams{TicketID: c.TicketID, Attempt: c.Attempt,
			Step: c.Step, Tool: c.Tool, Input: truncate(c.Args, maxPayload), Result: truncate(c.Result, maxPayload),
			OK: c.OK, DurationMS: c.Duration.Milliseconds(), At: at.UnixMilli(), Rung: c.Rung}.Args()...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record tool call %s for ticket %d: %w", c.Tool, c.TicketID, err)
	}
	return id, nil
}

// ToolCalls returns a ticket's tool calls in the order they ran.
func (s *Store) ToolCalls(ctx context.Context, ticketID int64) ([]ToolCall, error) {
	rows, err := s.rd.Query(ctx, s.q.ToolCalls, ticketID)
	if err != nil {
		return nil, fmt.Errorf("tool calls of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	out := []ToolCall{}
	for rows.Next() {
		var (
			c  ToolCall
			ms int64
			at sql.NullInt64
			ok int
		)
		if err := rows.Scan(&c.ID, &c.TicketID, &c.Attempt, &c.Step, &c.Tool, &c.Args, &c.Result, &ok, &ms, &at, &c.Rung); err != nil {
			return nil, fmt.Errorf("tool calls of ticket %d: %w", ticketID, err)
		}
		c.OK, c.Duration, c.At = ok != 0, time.Duration(ms)*time.Millisecond, fromMS(at)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tool calls of ticket %d: %w", ticketID, err)
	}
	return out, nil
}

// UsageEstimates counts, over all model calls (runID 0) or one run's, how many there were
// and how many carried estimated usage (the server sent none), so reports can mark the
// figures that rest on estimates.
type UsageEstimates struct {
	Calls          int     `json:"calls"`
	EstimatedCalls int     `json:"estimated_calls"`
	EstimatedUSD   float64 `json:"estimated_cost_usd"` // the part of the cost that is estimated
	// UnknownCalls have no known cost (no price) or an unknown completion (abandoned).
	UnknownCalls int     `json:"unknown_cost_calls"`
	ProviderUSD  float64 `json:"provider_cost_usd"` // the part the provider reported itself
}

// UsageEstimates returns the estimate counts of all calls (runID 0) or of one run.
func (s *Store) UsageEstimates(ctx context.Context, runID int64) (UsageEstimates, error) {
	var u UsageEstimates
	q, args := s.q.UsageEstimates, []any{}
	if runID != 0 {
		q, args = s.q.UsageEstimatesRun, []any{runID}
	}
	if err := s.rd.QueryRow(ctx, q, args...).Scan(&u.Calls, &u.EstimatedCalls, &u.UnknownCalls, &u.EstimatedUSD, &u.ProviderUSD); err != nil {
		return u, fmt.Errorf("usage estimates of run %d: %w", runID, err)
	}
	return u, nil
}

// EndpointEvent is one change of a model endpoint's health seen by the circuit breaker:
// marked down, still down after a failed probe, or up again.
type EndpointEvent struct {
	ID        int64     `json:"id"`
	RunID     int64     `json:"run_id"`
	Endpoint  string    `json:"endpoint"`
	BaseURL   string    `json:"base_url"`
	Down      bool      `json:"down"`
	Since     time.Time `json:"since"` // down since, or up since
	At        time.Time `json:"at"`
	LastError string    `json:"last_error"` // truncated to 4 KiB
}

// RecordEndpointEvent appends e (ID ignored; At defaults to now).
func (s *Store) RecordEndpointEvent(ctx context.Context, e EndpointEvent) error {
	at := e.At
	if at.IsZero() {
		at = s.now()
	}
	err := s.write(ctx, "record endpoint event", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.InsertEndpointEvent, storedriver.InsertEndpointEventParams{RunID: e.RunID, Endpoint: e.Endpoint,
			BaseURL: e.BaseURL, Down: e.Down, Since: e.Since.UnixMilli(), At: at.UnixMilli(),
			LastError: truncate(e.LastError, maxPayload)}.Args()...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record endpoint %s event: %w", e.Endpoint, err)
	}
	return nil
}

// EndpointEvents returns one run's endpoint events in order (runID 0: every run's).
func (s *Store) EndpointEvents(ctx context.Context, runID int64) ([]EndpointEvent, error) {
	q, args := s.q.EndpointEvents, []any{}
	if runID != 0 {
		q, args = s.q.EndpointEventsRun, []any{runID}
	}
	rows, err := s.rd.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("endpoint events of run %d: %w", runID, err)
	}
	defer rows.Close()
	out := []EndpointEvent{}
	for rows.Next() {
		var e EndpointEvent
		var down int
		var since, at sql.NullInt64
		if err := rows.Scan(&e.ID, &e.RunID, &e.Endpoint, &e.BaseURL, &down, &since, &at, &e.LastError); err != nil {
			return nil, fmt.Errorf("endpoint events of run %d: %w", runID, err)
		}
		e.Down, e.Since, e.At = down != 0, fromMS(since), fromMS(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("endpoint events of run %d: %w", runID, err)
	}
	return out, nil
}
