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
	ID               int64         `json:"id"`
	TicketID         int64         `json:"ticket_id"`
	RunID            int64         `json:"run_id"` // 0 when none
	Attempt          int           `json:"attempt"`
	Role             string        `json:"role"`
	Model            string        `json:"model"`
	Endpoint         string        `json:"endpoint"`
	PromptTokens     int64         `json:"prompt_tokens"`
	CachedTokens     int64         `json:"cached_tokens"`
	CacheWriteTokens int64         `json:"cache_write_tokens"`
	CompletionTokens int64         `json:"completion_tokens"`
	ReasoningTokens  int64         `json:"reasoning_tokens"`
	CostUSD          *float64      `json:"cost_usd"` // nil = unknown model price, never recorded as zero
	Latency          time.Duration `json:"-"`
	FinishReason     string        `json:"finish_reason"`
	ErrorClass       string        `json:"error_class"` // "", "rate_limit", "server", "network", "timeout", "bad_request", ...
	Error            string        `json:"error"`
	Retries          int           `json:"retries"`
	StartedAt        time.Time     `json:"started_at"`
}

// MarshalJSON writes Latency as latency_s (seconds).
func (c ModelCall) MarshalJSON() ([]byte, error) {
	type plain ModelCall
	return json.Marshal(struct {
		plain
		LatencyS float64 `json:"latency_s"`
	}{plain(c), c.Latency.Seconds()})
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
	var cost any
	if c.CostUSD != nil {
		cost = *c.CostUSD
	}
	err := s.write(ctx, "record model call", func(ctx context.Context, tx *wtx) error {
		row, err := s.queryRow(ctx, tx, `INSERT INTO model_calls (ticket_id, run_id, attempt, role, model, endpoint,
				prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, reasoning_tokens, cost_usd,
				latency_ms, finish_reason, error_class, error, retries, started_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			c.TicketID, nullID(c.RunID), c.Attempt, c.Role, c.Model, c.Endpoint,
			c.PromptTokens, c.CachedTokens, c.CacheWriteTokens, c.CompletionTokens, c.ReasoningTokens, cost,
			c.Latency.Milliseconds(), c.FinishReason, c.ErrorClass, c.Error, c.Retries, started.UnixMilli())
		if err != nil {
			return err
		}
		return row.Scan(&id)
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
			latency_ms, finish_reason, error_class, error, retries, started_at
		FROM model_calls WHERE ticket_id = ? ORDER BY id`, ticketID)
	if err != nil {
		return nil, fmt.Errorf("model calls of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	out := []ModelCall{}
	for rows.Next() {
		var (
			c         ModelCall
			cost      sql.NullFloat64
			latencyMS int64
			started   sql.NullInt64
		)
		if err := rows.Scan(&c.ID, &c.TicketID, &c.RunID, &c.Attempt, &c.Role, &c.Model, &c.Endpoint,
			&c.PromptTokens, &c.CachedTokens, &c.CacheWriteTokens, &c.CompletionTokens, &c.ReasoningTokens, &cost,
			&latencyMS, &c.FinishReason, &c.ErrorClass, &c.Error, &c.Retries, &started); err != nil {
			return nil, fmt.Errorf("model calls of ticket %d: %w", ticketID, err)
		}
		if cost.Valid {
			v := cost.Float64
			c.CostUSD = &v
		}
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
	ID       int64         `json:"id"`
	TicketID int64         `json:"ticket_id"`
	Attempt  int           `json:"attempt"`
	Step     int           `json:"step"`
	Tool     string        `json:"tool"`
	Args     string        `json:"args"`   // truncated to 4 KiB
	Result   string        `json:"result"` // truncated to 4 KiB
	OK       bool          `json:"ok"`
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
		row, err := s.queryRow(ctx, tx, `INSERT INTO tool_calls (ticket_id, attempt, step, tool, args, result, ok, duration_ms, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			c.TicketID, c.Attempt, c.Step, c.Tool, truncate(c.Args, maxPayload), truncate(c.Result, maxPayload),
			c.OK, c.Duration.Milliseconds(), at.UnixMilli())
		if err != nil {
			return err
		}
		return row.Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("record tool call %s for ticket %d: %w", c.Tool, c.TicketID, err)
	}
	return id, nil
}

// ToolCalls returns a ticket's tool calls in the order they ran.
func (s *Store) ToolCalls(ctx context.Context, ticketID int64) ([]ToolCall, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, ticket_id, attempt, step, tool, args, result, ok, duration_ms, at
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
		if err := rows.Scan(&c.ID, &c.TicketID, &c.Attempt, &c.Step, &c.Tool, &c.Args, &c.Result, &ok, &ms, &at); err != nil {
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

// Run is one night: when it ran, why, and its totals.
type Run struct {
	ID        int64     `json:"id"`
	Trigger   string    `json:"trigger"` // "once", "cron", "demo", "bench"
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	Claimed   int       `json:"claimed"`
	Done      int       `json:"done"`
	Escalated int       `json:"escalated"`
	Retried   int       `json:"retried"`
	CostUSD   float64   `json:"cost_usd"`
}

// StartRun opens a night and returns its id (pass it to ModelCall.RunID and FinishRun).
func (s *Store) StartRun(ctx context.Context, trigger string) (int64, error) {
	var id int64
	err := s.write(ctx, "start run", func(ctx context.Context, tx *wtx) error {
		row, err := s.queryRow(ctx, tx, `INSERT INTO runs (trigger, started_at, after_event_id) VALUES (?, ?, (SELECT coalesce(max(id), 0) FROM events)) RETURNING id`, trigger, s.nowMS())
		if err != nil {
			return err
		}
		return row.Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("start %s run: %w", trigger, err)
	}
	return id, nil
}

// FinishRun closes a night, computing its totals from the events in its window and the
// model calls tagged with it, then checkpoints the WAL.
func (s *Store) FinishRun(ctx context.Context, id int64) error {
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
		_, err = s.exec(ctx, tx, `UPDATE runs SET ended_at = ?,
			claimed   = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND kind = 'claimed'),
			done      = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND to_state = 'done'),
			escalated = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND to_state = 'escalated'),
			retried   = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND kind = 'retry'),
			cost_usd  = (SELECT coalesce(sum(cost_usd), 0) FROM model_calls WHERE run_id = ?3)
			WHERE id = ?3`, now, after, id)
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
	rows, err := s.r.QueryContext(ctx, `SELECT id, trigger, started_at, ended_at, claimed, done, escalated, retried, cost_usd
		FROM runs ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		var r Run
		var started, ended sql.NullInt64
		if err := rows.Scan(&r.ID, &r.Trigger, &started, &ended, &r.Claimed, &r.Done, &r.Escalated, &r.Retried, &r.CostUSD); err != nil {
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
