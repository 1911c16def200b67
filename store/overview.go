package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Overview is the set of figures /metrics and the status page read at request time, so
// they are always what the database says, also for a daemon that restarted.
type Overview struct {
	ByState map[State]int `json:"by_state"`
	// Events counts the event log by kind (claimed, lease_expired, retry, ...), so any kind a
	// later feature appends is counted without a change here.
	Events map[EventKind]int64 `json:"events"`
	// Rescues counts claims that took over a ticket whose lease had expired.
	Rescues int64        `json:"rescues"`
	Calls   []CallTotals `json:"calls"`
	Tools   []ToolTotals `json:"tools"`
}

// CallTotals sums the model calls of one role and model.
type CallTotals struct {
	Role             string  `json:"role"`
	Model            string  `json:"model"`
	Calls            int64   `json:"calls"`
	Errors           int64   `json:"errors"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	CostUSD          float64 `json:"cost_usd"` // calls with a known price only
	LatencySeconds   float64 `json:"latency_seconds"`
}

// ToolTotals is the duration distribution of one tool's calls (run_checks and submit are
// the validator runs): Buckets[i] counts calls at most DurationBuckets[i] seconds.
type ToolTotals struct {
	Tool       string  `json:"tool"`
	Calls      int64   `json:"calls"`
	Failed     int64   `json:"failed"`
	SumSeconds float64 `json:"sum_seconds"`
	Buckets    []int64 `json:"buckets"`
}

// DurationBuckets are the upper bounds, in seconds, of ToolTotals.Buckets.
var DurationBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Overview reads the current figures. It scans the event and call tables; at tens of
// thousands of rows that is milliseconds, fine for a scrape every few seconds.
func (s *Store) Overview(ctx context.Context) (Overview, error) {
	ov := Overview{ByState: map[State]int{}, Events: map[EventKind]int64{}}
	for _, st := range States {
		ov.ByState[st] = 0
	}
	err := s.each(ctx, s.q.CountByState, nil, func(r storedriver.Rows) error {
		var st State
		var n int
		if err := r.Scan(&st, &n); err != nil {
			return err
		}
		ov.ByState[st] = n
		return nil
	})
	if err != nil {
		return ov, fmt.Errorf("overview: tickets: %w", err)
	}
	err = s.each(ctx, s.q.EventKinds, nil, func(r storedriver.Rows) error {
		var kind EventKind
		var n, rescued int64
		if err := r.Scan(&kind, &n, &rescued); err != nil {
			return err
		}
		ov.Events[kind] = n
		ov.Rescues += rescued
		return nil
	})
	if err != nil {
		return ov, fmt.Errorf("overview: events: %w", err)
	}
	err = s.each(ctx, s.q.CallTotals, nil, func(r storedriver.Rows) error {
		var c CallTotals
		var latencyMS int64
		if err := r.Scan(&c.Role, &c.Model, &c.Calls, &c.Errors, &c.PromptTokens, &c.CachedTokens,
			&c.CompletionTokens, &c.ReasoningTokens, &c.CostUSD, &latencyMS); err != nil {
			return err
		}
		c.LatencySeconds = float64(latencyMS) / 1000
		ov.Calls = append(ov.Calls, c)
		return nil
	})
	if err != nil {
		return ov, fmt.Errorf("overview: model calls: %w", err)
	}
	bucketsMS := make([]int64, len(DurationBuckets))
	for i, b := range DurationBuckets {
		bucketsMS[i] = int64(b * 1000)
	}
	q := s.q.ToolTotals(bucketsMS)
	err = s.each(ctx, q, nil, func(r storedriver.Rows) error {
		t := ToolTotals{Buckets: make([]int64, len(DurationBuckets))}
		var sumMS int64
		dest := []any{&t.Tool, &t.Calls, &t.Failed, &sumMS}
		for i := range t.Buckets {
			dest = append(dest, &t.Buckets[i])
		}
		if err := r.Scan(dest...); err != nil {
			return err
		}
		t.SumSeconds = float64(sumMS) / 1000
		ov.Tools = append(ov.Tools, t)
		return nil
	})
	if err != nil {
		return ov, fmt.Errorf("overview: tool calls: %w", err)
	}
	return ov, nil
}

// Progress is where a running ticket's current attempt stands.
type Progress struct {
	TicketID   int64     `json:"ticket_id"`
	Attempt    int       `json:"attempt"`
	Step       int       `json:"step"`      // the maker's latest step with a tool call
	LastTool   string    `json:"last_tool"` // its tool
	ModelCalls int       `json:"model_calls"`
	LastAt     time.Time `json:"last_at,omitzero"` // latest tool or model call
}

// Progress returns the current attempt's progress of ticket id (attempt = its attempts).
func (s *Store) Progress(ctx context.Context, id int64) (Progress, error) {
	p := Progress{TicketID: id}
	var toolAt, callAt sql.NullInt64
	err := s.rd.QueryRow(ctx, s.q.Progress, id).Scan(&p.Attempt, &p.Step, &p.LastTool, &toolAt, &p.ModelCalls, &callAt)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("progress of ticket %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("progress of ticket %d: %w", id, err)
	}
	p.LastAt = fromMS(toolAt)
	if c := fromMS(callAt); c.After(p.LastAt) {
		p.LastAt = c
	}
	return p, nil
}

// FinishedSince returns tickets that reached a terminal state at or after since, newest
// first, at most limit, with their model spend.
func (s *Store) FinishedSince(ctx context.Context, since time.Time, limit int) ([]Summary, error) {
	all, err := s.List(ctx, Filter{States: []State{StateDone, StateEscalated, StateCancelled}, Limit: max(limit*4, 200)})
	if err != nil {
		return nil, err
	}
	out := []Summary{}
	for _, t := range all {
		if !t.FinishedAt.Before(since) {
			out = append(out, t)
		}
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// each runs a read query and calls fn for each row.
func (s *Store) each(ctx context.Context, q string, args []any, fn func(storedriver.Rows) error) error {
	rows, err := s.rd.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
