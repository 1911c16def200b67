package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Run is one night: when it ran, why, how it ended, its totals and the nodes that took part.
type Run struct {
	ID        int64     `json:"id"`
	Trigger   string    `json:"trigger"` // "once", "cron", "demo", "bench"
	Sandbox   string    `json:"sandbox"` // "bwrap", "none"; "" when not recorded (older nights, tests)
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Outcome is how the night ended; "" while it runs, for a night whose process died
	// before it could say, and for nights before schema v12. With several nodes, the worst
	// any of them reported.
	Outcome Outcome `json:"outcome"`
	// Error says why a night was not ok: the server's words, the setting to change. With
	// several nodes, each part names its node ("vm-2: ...").
	Error     string  `json:"error"`
	Worked    int     `json:"worked"`  // distinct tickets claimed
	Claimed   int     `json:"claimed"` // claims (attempts and reruns)
	Done      int     `json:"done"`
	Escalated int     `json:"escalated"`
	Retried   int     `json:"retried"`
	CostUSD   float64 `json:"cost_usd"`
	// Nodes are the machines that took part, in the order they joined.
	Nodes []RunNode `json:"nodes"`
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

// RunNode is one machine's part in a night.
type RunNode struct {
	Node       string    `json:"node"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"` // zero: still running, or it died
}

// StartRun opens a night with this node in it and returns its id (pass it to
// ModelCall.RunID and FinishRun).
func (s *Store) StartRun(ctx context.Context, trigger string) (int64, error) {
	var id int64
	err := s.write(ctx, "start run", func(ctx context.Context, tx storedriver.Tx) error {
		var err error
		id, err = s.startRun(ctx, tx, trigger)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("start %s run: %w", trigger, err)
	}
	return id, nil
}

func (s *Store) startRun(ctx context.Context, tx storedriver.Tx, trigger string) (int64, error) {
	now := s.nowMS()
	id, err := tx.Insert(ctx, s.q.StartRun, trigger, now)
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, s.q.JoinRunNode, id, s.opts.Node, now)
	return id, err
}

// JoinRun puts this node in the night other nodes are running: the newest run started
// within the last within that a node has not finished yet (joined is true), or else a new
// one, as StartRun. Several nodes on one database thus share one night record, with its
// totals over all of them. Call it under LockIntake, so two nodes starting together do not
// each open a night.
func (s *Store) JoinRun(ctx context.Context, trigger string, within time.Duration) (id int64, joined bool, err error) {
	err = s.write(ctx, "join run", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		id, joined = 0, false
		err := tx.QueryRow(ctx, s.q.OpenRun, now-within.Milliseconds()).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			id, err = s.startRun(ctx, tx, trigger)
			return err
		}
		if err != nil {
			return err
		}
		joined = true
		_, err = tx.Exec(ctx, s.q.JoinRunNode, id, s.opts.Node, now)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("join or start a %s run: %w", trigger, err)
	}
	return id, joined, nil
}

// SetRunSandbox records how the night isolates the code under test ("bwrap", "none").
func (s *Store) SetRunSandbox(ctx context.Context, id int64, mode string) error {
	err := s.write(ctx, "set run sandbox", func(ctx context.Context, tx storedriver.Tx) error {
		n, err := tx.Exec(ctx, s.q.SetRunSandbox, mode, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrRunNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record sandbox of run %d: %w", id, err)
	}
	return nil
}

// FinishRun closes this node's part of a night without an outcome (see EndRun).
func (s *Store) FinishRun(ctx context.Context, id int64) error { return s.EndRun(ctx, id, "", "") }

// outcomeRank orders outcomes from none (0) through Outcomes, best first; -1 for one that
// is not an outcome.
func outcomeRank(o Outcome) int {
	if o == "" {
		return 0
	}
	if i := slices.Index(Outcomes, o); i >= 0 {
		return i + 1
	}
	return -1
}

// mergeOutcome is a night's outcome and error once another node reported its own: the worse
// of the two outcomes with its error, or, when both are as bad, both errors. An empty
// outcome (FinishRun) changes nothing.
func mergeOutcome(prev Outcome, prevErr string, next Outcome, nextErr string) (Outcome, string) {
	switch r, p := outcomeRank(next), outcomeRank(prev); {
	case r > p:
		return next, nextErr
	case r < p || nextErr == "" || nextErr == prevErr:
		return prev, prevErr
	case prevErr == "":
		return prev, nextErr
	}
	return prev, prevErr + "; " + nextErr
}

// maxRunError bounds a night's recorded error.
const maxRunError = 4000

// EndRun records that this node is done with the night, with the night's outcome and
// error as this node saw it (an empty outcome records none), and (re)computes the night's
// totals from the events in its window and the model calls tagged with it, over every
// node: each node that finishes refreshes them, and ended_at is the last one's. The night's
// outcome is the worst any of its nodes reported (see mergeOutcome), so a node that failed
// or was stopped is not hidden by one that finished well after it. Then it checkpoints the
// WAL (SQLite).
func (s *Store) EndRun(ctx context.Context, id int64, outcome Outcome, errText string) error {
	if outcomeRank(outcome) < 0 {
		return fmt.Errorf("finish run %d: outcome %q: want ok, partial, stopped or failed", id, outcome)
	}
	err := s.write(ctx, "finish run", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		var after int64
		var prev Outcome
		var prevErr string
		var nodes int
		if err := tx.QueryRow(ctx, s.q.RunEnding, id).Scan(&after, &prev, &prevErr, &nodes); errors.Is(err, sql.ErrNoRows) {
			return ErrRunNotFound
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.FinishRunNode, now, id, s.opts.Node); err != nil {
			return err
		}
		if nodes > 1 && errText != "" {
			errText = s.opts.Node + ": " + errText
		}
		outcome, errText = mergeOutcome(prev, prevErr, outcome, errText)
		_, err := tx.Exec(ctx, s.q.FinishRun, storedriver.FinishRunParams{EndedAt: now, AfterEventID: after, ID: id,
			Outcome: string(outcome), Error: truncate(errText, maxRunError)}.Args()...)
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
		limit = math.MaxInt32
	}
	rows, err := s.rd.Query(ctx, s.q.Runs, limit)
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
	rows.Close()
	for i := range out {
		if out[i].Nodes, err = s.RunNodes(ctx, out[i].ID); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
	}
	return out, nil
}

// RunNodes returns the nodes that took part in run id, in the order they joined.
func (s *Store) RunNodes(ctx context.Context, id int64) ([]RunNode, error) {
	rows, err := s.rd.Query(ctx, s.q.RunNodes, id)
	if err != nil {
		return nil, fmt.Errorf("nodes of run %d: %w", id, err)
	}
	defer rows.Close()
	out := []RunNode{}
	for rows.Next() {
		var n RunNode
		var started, finished sql.NullInt64
		if err := rows.Scan(&n.Node, &started, &finished); err != nil {
			return nil, fmt.Errorf("nodes of run %d: %w", id, err)
		}
		n.StartedAt, n.FinishedAt = fromMS(started), fromMS(finished)
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("nodes of run %d: %w", id, err)
	}
	return out, nil
}

// RunCost is the model spend of run id so far, over every node, and the part of it that
// rests on estimated usage: what the night's dollar cap counts.
func (s *Store) RunCost(ctx context.Context, id int64) (total, estimated float64, err error) {
	if err := s.rd.QueryRow(ctx, s.q.RunCost, id).Scan(&total, &estimated); err != nil {
		return 0, 0, fmt.Errorf("cost of run %d: %w", id, err)
	}
	return total, estimated, nil
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
	rows, err := s.rd.Query(ctx, s.q.NightTotals)
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
