package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Baseline is the validators' results at one base commit of one repository under one checks
// configuration. The store keeps Results and Flaky as the caller's JSON: what a result holds
// belongs to the validators, not to the schema.
type Baseline struct {
	Repo       string
	BaseCommit string
	ChecksHash string // a hash of the checks configuration the results came from
	Results    string // JSON
	Flaky      string // JSON list of "check: test id"
	Duration   time.Duration
	CreatedAt  time.Time
	UsedAt     time.Time
	Uses       int // how many times a night reused it instead of running the checks
}

// LoadBaseline returns the stored baseline for (repo, base commit, checks hash) and marks it
// used now, so gc keeps what nights still read; ok is false when none is stored.
func (s *Store) LoadBaseline(ctx context.Context, repo, baseCommit, checksHash string) (b Baseline, ok bool, err error) {
	err = s.write(ctx, "load baseline", func(ctx context.Context, tx storedriver.Tx) error {
		var dur, created, used int64
		if err := tx.QueryRow(ctx, s.q.LoadBaseline, s.nowMS(), repo, baseCommit, checksHash).Scan(&b.Results, &b.Flaky, &dur, &created, &used, &b.Uses); err != nil {
			return err
		}
		b.Repo, b.BaseCommit, b.ChecksHash = repo, baseCommit, checksHash
		b.Duration = time.Duration(dur) * time.Millisecond
		b.CreatedAt, b.UsedAt = time.UnixMilli(created).UTC(), time.UnixMilli(used).UTC()
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Baseline{}, false, nil
	}
	if err != nil {
		return Baseline{}, false, fmt.Errorf("load baseline of %s at %s: %w", repo, baseCommit, err)
	}
	return b, true, nil
}

// SaveBaseline stores a freshly computed baseline, replacing one with the same key (a
// recomputation after the stored one was judged unusable).
func (s *Store) SaveBaseline(ctx context.Context, b Baseline) error {
	if b.Repo == "" || b.BaseCommit == "" || b.ChecksHash == "" {
		return fmt.Errorf("save baseline: repo %q, base commit %q and checks hash %q must all be set", b.Repo, b.BaseCommit, b.ChecksHash)
	}
	if b.Flaky == "" {
		b.Flaky = "[]"
	}
	err := s.write(ctx, "save baseline", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		_, err := tx.Exec(ctx, s.q.SaveBaseline, storedriver.SaveBaselineParams{Repo: b.Repo, BaseCommit: b.BaseCommit,
			ChecksHash: b.ChecksHash, Results: b.Results, Flaky: b.Flaky, DurationMS: max(b.Duration.Milliseconds(), 0),
			CreatedAt: now, UsedAt: now}.Args()...)
		return err
	})
	if err != nil {
		return fmt.Errorf("save baseline of %s at %s: %w", b.Repo, b.BaseCommit, err)
	}
	return nil
}

// PruneBaselines deletes the baselines no night has used for more than olderThan: their base
// commits are behind the branch now, and a night that meets one again recomputes it.
// Returns how many it deleted.
func (s *Store) PruneBaselines(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("prune baselines: older than %v: want >= 0", olderThan)
	}
	var n int
	err := s.write(ctx, "prune baselines", func(ctx context.Context, tx storedriver.Tx) error {
		rows, err := tx.Exec(ctx, s.q.PruneBaselines, s.nowMS()-olderThan.Milliseconds())
		n = int(rows)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune baselines unused for %v: %w", olderThan, err)
	}
	return n, nil
}
