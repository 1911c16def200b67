package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Overlap-aware claiming (issue 35, docs/night.md): a ticket may carry the files it is
// predicted to touch, and Claim passes over a queued ticket whose predicted files overlap
// a running ticket's of the same repository while any other ticket is ready. When only
// such tickets are ready, Claim takes one anyway (a worker never idles for a prediction):
// the night's agreement check before publishing keeps two overlapping fixes from both
// being published when they fail together.

// Where a prediction came from: the issue's own text (tracebacks, test ids) at intake, or
// triage's suspects, which replace it.
const (
	PredictedByIssue  = "issue"
	PredictedByTriage = "triage"
)

// maxPredicted bounds a ticket's prediction: an issue may paste a huge log, and a model
// may name the whole repository.
const maxPredicted = 50

// FileKey is how predicted files are compared: by file name, so that a traceback's
// absolute path on the reporter's machine meets triage's path in the repository. Two
// different files of one name count as overlapping, which only makes a ticket wait for
// other work first. "" for what names no file.
func FileKey(p string) string {
	p = strings.TrimSpace(strings.ReplaceAll(p, `\`, "/"))
	if i := strings.Index(p, "::"); i >= 0 {
		p = p[:i] // a test id: its file
	}
	base := path.Base(path.Clean("/" + p))
	if base == "/" || base == "." || base == ".." {
		return ""
	}
	return base
}

// PredictFiles replaces ticket id's predicted files with paths (compared by FileKey; at
// most 50 kept), recorded as coming from source. An empty list clears it. It changes no
// state and needs no lease: a prediction only orders claims.
func (s *Store) PredictFiles(ctx context.Context, id int64, source string, paths []string) error {
	keys := predictionKeys(paths)
	err := s.write(ctx, "predict files", func(ctx context.Context, tx storedriver.Tx) error {
		if _, _, err := s.currentState(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.Overlap.ClearPrediction, id); err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := tx.Exec(ctx, s.q.Overlap.InsertPrediction, id, k, source); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("predict the files of ticket %d (%s): %w", id, source, err)
	}
	return nil
}

// predictionKeys are paths' distinct file keys, sorted, at most maxPredicted.
func predictionKeys(paths []string) []string {
	var keys []string
	for _, p := range paths {
		if k := FileKey(p); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		if len(keys) == maxPredicted {
			break
		}
	}
	slices.Sort(keys)
	return keys
}

// Prediction is a ticket's predicted files (their keys) and where they came from.
type Prediction struct {
	Files  []string `json:"files"`
	Source string   `json:"source,omitempty"`
}

// PredictedFiles returns ticket id's prediction (empty when it has none).
func (s *Store) PredictedFiles(ctx context.Context, id int64) (Prediction, error) {
	rows, err := s.rd.Query(ctx, s.q.Overlap.Prediction, id)
	if err != nil {
		return Prediction{}, fmt.Errorf("predicted files of ticket %d: %w", id, err)
	}
	defer rows.Close()
	var p Prediction
	for rows.Next() {
		var f string
		if err := rows.Scan(&f, &p.Source); err != nil {
			return Prediction{}, fmt.Errorf("predicted files of ticket %d: %w", id, err)
		}
		p.Files = append(p.Files, f)
	}
	if err := rows.Err(); err != nil {
		return Prediction{}, fmt.Errorf("predicted files of ticket %d: %w", id, err)
	}
	return p, nil
}

// claimTurn runs first in a claim's transaction: the engine's turn (Serialize), so the
// running tickets overlapping reads include every claim committed before.
func (s *Store) claimTurn(ctx context.Context, tx storedriver.Tx) error {
	if q := s.q.Overlap.Serialize; q != "" {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("wait for the claim's turn: %w", err)
		}
	}
	return nil
}

// overlapping returns the queued tickets whose predicted files overlap a running ticket's
// of the same repository. It runs inside the claim's transaction, after claimTurn; the
// tickets claimed earlier in the same transaction count as running.
func (s *Store) overlapping(ctx context.Context, tx storedriver.Tx) ([]int64, error) {
	rows, err := tx.Query(ctx, s.q.Overlap.Overlapping)
	if err != nil {
		return nil, fmt.Errorf("tickets overlapping a running one: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("tickets overlapping a running one: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// avoidSet is what a claim passes over unless nothing else is ready: ids, a JSON array for
// storedriver.ClaimParams.Avoid ("" for none), and the reason the claim's event gives when
// it takes one of them all the same.
type avoidSet struct{ ids, reason string }

// avoiding is the claim's avoidSet: the tickets overlapping a running one and those of
// PassOver.
func (s *Store) avoiding(overlap []int64) avoidSet {
	var passed []int64
	if p := s.passOver.Load(); p != nil {
		passed = *p
	}
	var reason string
	switch {
	case len(overlap) > 0 && len(passed) > 0:
		reason = "passed over (its predicted files overlap a running ticket's, or an endpoint-side fault is being told from its own); no other ticket was ready"
	case len(overlap) > 0:
		reason = overlapReason
	case len(passed) > 0:
		reason = passOverReason
	default:
		return avoidSet{}
	}
	j, _ := json.Marshal(append(slices.Clone(overlap), passed...)) // []int64 always encodes
	return avoidSet{ids: string(j), reason: reason}
}

// overlapReason is the claim event's reason when Claim took a ticket it would have passed
// over: nothing else was ready.
const overlapReason = "its predicted files overlap a running ticket's; no other ticket was ready"

// passOverReason is the claim event's reason when Claim took a ticket of PassOver: nothing
// else was ready.
const passOverReason = "passed over after an endpoint-side fault, to try another ticket; no other ticket was ready"
