package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Stats are the figures of one night (or of all time) that ticketctl stats and the
// benchmark report.
type Stats struct {
	ByState                 map[State]int      `json:"by_state"`
	Tickets                 int                `json:"tickets"`
	SuccessRate             float64            `json:"success_rate"` // done / (done+escalated)
	AttemptsPerTicket       float64            `json:"attempts_per_ticket"`
	ModelRequestsPerTicket  float64            `json:"model_requests_per_ticket"`
	CostUSD                 float64            `json:"cost_usd"`
	CostPerDoneTicketUSD    float64            `json:"cost_per_done_ticket_usd"`
	DurationP50             time.Duration      `json:"-"` // of TicketDurations
	DurationP90             time.Duration      `json:"-"`
	FirstRequestCachedShare map[string]float64 `json:"first_request_cached_share"` // per role: sum(cached)/sum(prompt) over each ticket's first request of that role
	PromptTokens            int64              `json:"prompt_tokens"`
	CachedTokens            int64              `json:"cached_tokens"`
	CompletionTokens        int64              `json:"completion_tokens"`
	// CostUnknown is true when some model call had no known price (its cost is not in
	// CostUSD) or was abandoned before its answer (its completion is not in it).
	CostUnknown bool `json:"cost_unknown"`
	// ReviewRounds and DroppedFindings count the checker's review rounds and the findings
	// the pipeline dropped from them (evidence not in the diff, bad schema, new in round 2).
	ReviewRounds    int `json:"review_rounds"`
	DroppedFindings int `json:"dropped_findings"`
}

// MarshalJSON writes the durations as duration_p50_s / duration_p90_s (seconds).
func (st Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	return json.Marshal(struct {
		plain
		P50 float64 `json:"duration_p50_s"`
		P90 float64 `json:"duration_p90_s"`
	}{plain(st), st.DurationP50.Seconds(), st.DurationP90.Seconds()})
}

// Stats computes figures over all tickets (runID 0) or over one run: the tickets claimed in
// its window or charged to it by a model call, and the model calls tagged with it.
func (s *Store) Stats(ctx context.Context, runID int64) (Stats, error) {
	st := Stats{ByState: map[State]int{}, FirstRequestCachedShare: map[string]float64{}}
	for _, k := range States {
		st.ByState[k] = 0
	}
	run := runID != 0
	var args []any
	if run {
		var after int64
		var ended sql.NullInt64
		err := s.rd.QueryRow(ctx, s.q.RunWindow, runID).Scan(&after, &ended)
		if errors.Is(err, sql.ErrNoRows) {
			return Stats{}, fmt.Errorf("stats of run %d: %w", runID, ErrRunNotFound)
		} else if err != nil {
			return Stats{}, fmt.Errorf("stats of run %d: %w", runID, err)
		}
		end := s.nowMS()
		if ended.Valid {
			end = ended.Int64
		}
		args = []any{after, end, runID}
	}
	rows, err := s.rd.Query(ctx, s.q.StatsTickets(run), args...)
	if err != nil {
		return Stats{}, fmt.Errorf("stats of run %d: tickets: %w", runID, err)
	}
	attempts := 0
	for rows.Next() {
		var (
			state State
			n     int
		)
		if err := rows.Scan(&state, &n); err != nil {
			rows.Close()
			return Stats{}, fmt.Errorf("stats of run %d: tickets: %w", runID, err)
		}
		st.ByState[state]++
		st.Tickets++
		attempts += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("stats of run %d: tickets: %w", runID, err)
	}

	var calls int
	var unknown int
	err = s.rd.QueryRow(ctx, s.q.StatsCalls(run), args...).
		Scan(&calls, &st.CostUSD, &unknown, &st.PromptTokens, &st.CachedTokens, &st.CompletionTokens)
	if err != nil {
		return Stats{}, fmt.Errorf("stats of run %d: model calls: %w", runID, err)
	}
	st.CostUnknown = unknown != 0

	rows, err = s.rd.Query(ctx, s.q.StatsFirstRequests(run), args...)
	if err != nil {
		return Stats{}, fmt.Errorf("stats of run %d: first requests: %w", runID, err)
	}
	for rows.Next() {
		var role string
		var cached, prompt int64
		if err := rows.Scan(&role, &cached, &prompt); err != nil {
			rows.Close()
			return Stats{}, fmt.Errorf("stats of run %d: first requests: %w", runID, err)
		}
		if prompt > 0 {
			st.FirstRequestCachedShare[role] = float64(cached) / float64(prompt)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("stats of run %d: first requests: %w", runID, err)
	}

	if err := s.rd.QueryRow(ctx, s.q.StatsReviews(run), args...).Scan(&st.ReviewRounds, &st.DroppedFindings); err != nil {
		return Stats{}, fmt.Errorf("stats of run %d: reviews: %w", runID, err)
	}

	done, esc := st.ByState[StateDone], st.ByState[StateEscalated]
	if done+esc > 0 {
		st.SuccessRate = float64(done) / float64(done+esc)
	}
	if st.Tickets > 0 {
		st.AttemptsPerTicket = float64(attempts) / float64(st.Tickets)
		st.ModelRequestsPerTicket = float64(calls) / float64(st.Tickets)
	}
	if done > 0 {
		st.CostPerDoneTicketUSD = st.CostUSD / float64(done)
	}
	byTicket, err := s.TicketDurations(ctx, runID)
	if err != nil {
		return Stats{}, err
	}
	durations := slices.Collect(maps.Values(byTicket))
	st.DurationP50, st.DurationP90 = percentile(durations, 50), percentile(durations, 90)
	return st, nil
}

// TicketDurations is the one definition of a ticket's duration, which ticketctl stats and
// the benchmark both report: from its first claim to its end. Over all time (runID 0) that
// is each finished ticket's first claim to finished_at; over one night, the first claim in
// the night to finished_at, or to the night's end (now, while it runs) for a ticket that
// did not finish in it. Time in the queue before a claim is not the ticket's work and is
// not counted; a ticket never claimed has no duration.
func (s *Store) TicketDurations(ctx context.Context, runID int64) (map[int64]time.Duration, error) {
	end := int64(0)
	var args []any
	if runID != 0 {
		var after int64
		var ended sql.NullInt64
		err := s.rd.QueryRow(ctx, s.q.RunWindow, runID).Scan(&after, &ended)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("ticket durations of run %d: %w", runID, ErrRunNotFound)
		} else if err != nil {
			return nil, fmt.Errorf("ticket durations of run %d: %w", runID, err)
		}
		end = s.nowMS()
		if ended.Valid {
			end = ended.Int64
		}
		args = []any{after, end}
	}
	rows, err := s.rd.Query(ctx, s.q.TicketDurations(runID != 0), args...)
	if err != nil {
		return nil, fmt.Errorf("ticket durations of run %d: %w", runID, err)
	}
	defer rows.Close()
	out := map[int64]time.Duration{}
	for rows.Next() {
		var id, first int64
		var finished sql.NullInt64
		if err := rows.Scan(&id, &first, &finished); err != nil {
			return nil, fmt.Errorf("ticket durations of run %d: %w", runID, err)
		}
		stop := finished.Int64
		switch {
		case runID == 0 && !finished.Valid:
			continue // still open: no end yet
		case runID != 0 && (!finished.Valid || finished.Int64 > end):
			stop = end // did not finish in this night
		}
		out[id] = time.Duration(max(stop-first, 0)) * time.Millisecond
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ticket durations of run %d: %w", runID, err)
	}
	return out, nil
}

// percentile is the nearest-rank percentile p of ds (0 when empty).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	rank := (p*len(ds) + 99) / 100 // ceil(p/100 * n)
	return ds[max(rank, 1)-1]
}

// FinishedBefore returns the terminal tickets finished before cutoff, oldest first: what
// ticketctl gc deletes branches and result folders of.
func (s *Store) FinishedBefore(ctx context.Context, cutoff time.Time) ([]Ticket, error) {
	rows, err := s.rd.Query(ctx, s.q.FinishedBefore, cutoff.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("tickets finished before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	defer rows.Close()
	out := []Ticket{}
	for rows.Next() {
		t, err := scanTicket(rows)
		if err != nil {
			return nil, fmt.Errorf("tickets finished before %s: %w", cutoff.Format(time.RFC3339), err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tickets finished before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return out, nil
}

// GC empties the bulky columns (body, triage, summary; tool call arguments and results) of
// terminal tickets finished more than olderThan ago and deletes their artifacts but
// report.md, keeping the ticket rows, events and model call accounting. Returns how many tickets it pruned; pruned tickets are skipped
// next time.
func (s *Store) GC(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("gc: older than %v: want >= 0", olderThan)
	}
	var n int
	err := s.write(ctx, "gc", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		cutoff := now - olderThan.Milliseconds()
		if _, err := tx.Exec(ctx, s.q.GCToolCalls, cutoff); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.GCArtifacts, cutoff); err != nil {
			return err
		}
		rows, err := tx.Exec(ctx, s.q.GCTickets, now, cutoff)
		n = int(rows)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("gc tickets finished over %v ago: %w", olderThan, err)
	}
	return n, nil
}
