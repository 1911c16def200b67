package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
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

func nullFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func floatPtr(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	f := v.Float64
	return &f
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// RecordModelCall appends c (ID ignored) and returns its id.
func (s *Store) RecordModelCall(ctx context.Context, c ModelCall) (int64, error) {
	var id int64
	started := c.StartedAt
	if started.IsZero() {
		started = s.now()
	}
	err := s.write(ctx, "record model call", func(ctx context.Context, tx *wtx) error {
		var err error
		id, err = s.insert(ctx, tx, `INSERT INTO model_calls (ticket_id, run_id, attempt, role, model, endpoint,
				prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, reasoning_tokens, cost_usd,
				latency_ms, finish_reason, error_class, error, retries, started_at,
				usage_reported, cost_source, price_cost_usd, provider_cost_usd, compactions, completion_unknown)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.TicketID, nullID(c.RunID), c.Attempt, c.Role, c.Model, c.Endpoint,
			c.PromptTokens, c.CachedTokens, c.CacheWriteTokens, c.CompletionTokens, c.ReasoningTokens, nullFloat(c.CostUSD),
			c.Latency.Milliseconds(), c.FinishReason, c.ErrorClass, c.Error, c.Retries, started.UnixMilli(),
			!c.UsageEstimated, c.CostSource, nullFloat(c.PriceCostUSD), nullFloat(c.ProviderCostUSD), c.Compactions, c.CompletionUnknown)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record %s model call for ticket %d: %w", c.Role, c.TicketID, err)
	}
	return id, nil
}

// ModelCalls returns a ticket's model calls in the order they were made.
func (s *Store) ModelCalls(ctx context.Context, ticketID int64) ([]ModelCall, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, ticket_id, coalesce(run_id, 0), attempt, role, model, endpoint,
			prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, reasoning_tokens, cost_usd,
			latency_ms, finish_reason, error_class, error, retries, started_at,
			usage_reported, cost_source, price_cost_usd, provider_cost_usd, compactions, completion_unknown
		FROM model_calls WHERE ticket_id = ? ORDER BY id`, ticketID)
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
			&reported, &c.CostSource, &price, &prov, &c.Compactions, &unknownCompletion); err != nil {
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
	err := s.write(ctx, "record tool call", func(ctx context.Context, tx *wtx) error {
		var err error
		id, err = s.insert(ctx, tx, `INSERT INTO tool_calls (ticket_id, attempt, step, tool, args, result, ok, duration_ms, at, rung)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.TicketID, c.Attempt, c.Step, c.Tool, truncate(c.Args, maxPayload), truncate(c.Result, maxPayload),
			c.OK, c.Duration.Milliseconds(), at.UnixMilli(), c.Rung)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record tool call %s for ticket %d: %w", c.Tool, c.TicketID, err)
	}
	return id, nil
}

// ToolCalls returns a ticket's tool calls in the order they ran.
func (s *Store) ToolCalls(ctx context.Context, ticketID int64) ([]ToolCall, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, ticket_id, attempt, step, tool, args, result, ok, duration_ms, at, rung
		FROM tool_calls WHERE ticket_id = ? ORDER BY id`, ticketID)
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

// Run is one night: when it ran, why, how it ended and its totals.
type Run struct {
	ID        int64     `json:"id"`
	Trigger   string    `json:"trigger"` // "once", "cron", "demo", "bench"
	Sandbox   string    `json:"sandbox"` // "bwrap", "none"; "" when not recorded (older nights, tests)
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Outcome is how the night ended; "" while it runs, for a night whose process died
	// before it could say, and for nights before schema v12.
	Outcome Outcome `json:"outcome"`
	// Error says why a night was not ok: the server's words, the setting to change.
	Error     string  `json:"error"`
	Worked    int     `json:"worked"`  // distinct tickets claimed
	Claimed   int     `json:"claimed"` // claims (attempts and reruns)
	Done      int     `json:"done"`
	Escalated int     `json:"escalated"`
	Retried   int     `json:"retried"`
	CostUSD   float64 `json:"cost_usd"`
}

// Outcome is how a night ended.
type Outcome string

// The night outcomes, which the database CHECKs.
const (
	// OutcomeOK: the night ran and worked every ticket it could claim.
	OutcomeOK Outcome = "ok"
	// OutcomePartial: the night ran to its end but left claimable tickets unworked (the
	// window closed, an endpoint was down, tickets were parked, repositories paused).
	OutcomePartial Outcome = "partial"
	// OutcomeStopped: something stopped the night early (a systemic endpoint failure, the
	// account out of quota, the dollar budget, a shutdown).
	OutcomeStopped Outcome = "stopped"
	// OutcomeFailed: the night could not start (preflight refused, no repository healthy,
	// a key unset, no intake folder); nothing was claimed.
	OutcomeFailed Outcome = "failed"
)

// Outcomes lists every outcome, best first.
var Outcomes = []Outcome{OutcomeOK, OutcomePartial, OutcomeStopped, OutcomeFailed}

// StartRun opens a night and returns its id (pass it to ModelCall.RunID and FinishRun).
func (s *Store) StartRun(ctx context.Context, trigger string) (int64, error) {
	var id int64
	err := s.write(ctx, "start run", func(ctx context.Context, tx *wtx) error {
		var err error
		id, err = s.insert(ctx, tx, `INSERT INTO runs (trigger, started_at, after_event_id) VALUES (?, ?, (SELECT coalesce(max(id), 0) FROM events))`, trigger, s.nowMS())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("start %s run: %w", trigger, err)
	}
	return id, nil
}

// SetRunSandbox records how the night isolates the code under test ("bwrap", "none").
func (s *Store) SetRunSandbox(ctx context.Context, id int64, mode string) error {
	err := s.write(ctx, "set run sandbox", func(ctx context.Context, tx *wtx) error {
		res, err := s.exec(ctx, tx, `UPDATE runs SET sandbox = ? WHERE id = ?`, mode, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrRunNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record sandbox of run %d: %w", id, err)
	}
	return nil
}

// FinishRun closes a night without an outcome (see EndRun).
func (s *Store) FinishRun(ctx context.Context, id int64) error { return s.EndRun(ctx, id, "", "") }

// maxRunError bounds a night's recorded error.
const maxRunError = 4000

// EndRun closes a night with its outcome and error, computing its totals from the events in
// its window and the model calls tagged with it, then checkpoints the WAL. An empty outcome
// records none.
func (s *Store) EndRun(ctx context.Context, id int64, outcome Outcome, errText string) error {
	switch outcome {
	case "", OutcomeOK, OutcomePartial, OutcomeStopped, OutcomeFailed:
	default:
		return fmt.Errorf("finish run %d: outcome %q: want ok, partial, stopped or failed", id, outcome)
	}
	err := s.write(ctx, "finish run", func(ctx context.Context, tx *wtx) error {
		now := s.nowMS()
		var after int64
		row, err := s.queryRow(ctx, tx, `SELECT after_event_id FROM runs WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if err := row.Scan(&after); errors.Is(err, sql.ErrNoRows) {
			return ErrRunNotFound
		} else if err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `UPDATE runs SET ended_at = ?1, outcome = ?4, error = ?5,
			worked    = (SELECT count(DISTINCT ticket_id) FROM events WHERE id > ?2 AND at <= ?1 AND kind = 'claimed'),
			claimed   = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND kind = 'claimed'),
			done      = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND to_state = 'done'),
			escalated = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND to_state = 'escalated'),
			retried   = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND kind = 'retry'),
			cost_usd  = (SELECT coalesce(sum(cost_usd), 0) FROM model_calls WHERE run_id = ?3)
			WHERE id = ?3`, now, after, id, string(outcome), truncate(errText, maxRunError))
		return err
	})
	if err != nil {
		return fmt.Errorf("finish run %d: %w", id, err)
	}
	if err := s.Checkpoint(ctx); err != nil && !errors.Is(err, ErrBusy) {
		return fmt.Errorf("finish run %d: %w", id, err)
	}
	return nil
}

// Runs returns the latest runs, newest first (limit <= 0: all).
func (s *Store) Runs(ctx context.Context, limit int) ([]Run, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, trigger, sandbox, started_at, ended_at, outcome, error, worked,
			claimed, done, escalated, retried, cost_usd
		FROM runs ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		var r Run
		var started, ended sql.NullInt64
		if err := rows.Scan(&r.ID, &r.Trigger, &r.Sandbox, &started, &ended, &r.Outcome, &r.Error, &r.Worked,
			&r.Claimed, &r.Done, &r.Escalated, &r.Retried, &r.CostUSD); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		r.StartedAt, r.EndedAt = fromMS(started), fromMS(ended)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// NightTotal counts the nights that ended with one outcome, and when the latest of them ended.
type NightTotal struct {
	Outcome Outcome   `json:"outcome"`
	Nights  int       `json:"nights"`
	LastEnd time.Time `json:"last_end"`
}

// NightTotals returns a NightTotal for every outcome (zero counts included), best first, so
// an alert can ask how long ago the last ok night ended.
func (s *Store) NightTotals(ctx context.Context) ([]NightTotal, error) {
	byOutcome := map[Outcome]NightTotal{}
	rows, err := s.r.QueryContext(ctx, `SELECT outcome, count(*), max(ended_at) FROM runs
		WHERE outcome != '' AND ended_at IS NOT NULL GROUP BY outcome`)
	if err != nil {
		return nil, fmt.Errorf("night totals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t NightTotal
		var last sql.NullInt64
		if err := rows.Scan(&t.Outcome, &t.Nights, &last); err != nil {
			return nil, fmt.Errorf("night totals: %w", err)
		}
		t.LastEnd = fromMS(last)
		byOutcome[t.Outcome] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("night totals: %w", err)
	}
	out := make([]NightTotal, 0, len(Outcomes))
	for _, o := range Outcomes {
		t := byOutcome[o]
		t.Outcome = o
		out = append(out, t)
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
	q := `SELECT count(*), coalesce(sum(usage_reported = 0), 0), coalesce(sum(cost_usd IS NULL OR completion_unknown = 1), 0),
			coalesce(sum(CASE WHEN cost_source = 'estimate' THEN cost_usd END), 0),
			coalesce(sum(CASE WHEN cost_source = 'provider' THEN cost_usd END), 0)
		FROM model_calls`
	args := []any{}
	if runID != 0 {
		q += ` WHERE run_id = ?`
		args = append(args, runID)
	}
	if err := s.r.QueryRowContext(ctx, q, args...).Scan(&u.Calls, &u.EstimatedCalls, &u.UnknownCalls, &u.EstimatedUSD, &u.ProviderUSD); err != nil {
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
	err := s.write(ctx, "record endpoint event", func(ctx context.Context, tx *wtx) error {
		_, err := s.exec(ctx, tx, `INSERT INTO endpoint_events (run_id, endpoint, base_url, down, since, at, last_error)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, nullID(e.RunID), e.Endpoint, e.BaseURL, e.Down, e.Since.UnixMilli(), at.UnixMilli(),
			truncate(e.LastError, maxPayload))
		return err
	})
	if err != nil {
		return fmt.Errorf("record endpoint %s event: %w", e.Endpoint, err)
	}
	return nil
}

// EndpointEvents returns one run's endpoint events in order (runID 0: every run's).
func (s *Store) EndpointEvents(ctx context.Context, runID int64) ([]EndpointEvent, error) {
	q := `SELECT id, coalesce(run_id, 0), endpoint, base_url, down, since, at, last_error FROM endpoint_events`
	args := []any{}
	if runID != 0 {
		q += ` WHERE run_id = ?`
		args = append(args, runID)
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY id`, args...)
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
