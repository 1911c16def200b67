package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Environment is the latest setup of a repository's environment (its recipe, repos.<name>.setup)
// on one node: what an operator reads when a recipe fails (the console's "Needs you",
// ticketctl envs, /metrics), not only a line in the log.
type Environment struct {
	Repo string `json:"repo"`
	Node string `json:"node"`
	Key  string `json:"key"`
	// OK is false when the recipe failed: the repository is paused for the night, no ticket
	// charged. Cached is set when the night reused an environment built earlier.
	OK     bool `json:"ok"`
	Cached bool `json:"cached"`
	// BuiltAt and Took are when the environment in use was built and how long that took.
	BuiltAt time.Time     `json:"built_at,omitzero"`
	Took    time.Duration `json:"took"`
	// At is when this setup ran (or found the environment cached).
	At time.Time `json:"at"`
	// Error and Output say why a recipe failed (Output: its tail).
	Error  string `json:"error,omitempty"`
	Output string `json:"output,omitempty"`
}

// RecordEnvironment replaces what is known of e.Repo's environment on this node (the store's
// node when e.Node is empty).
func (s *Store) RecordEnvironment(ctx context.Context, e Environment) error {
	if e.Repo == "" {
		return fmt.Errorf("record environment: repo is empty")
	}
	if e.Node == "" {
		e.Node = s.Node()
	}
	var built any
	if !e.BuiltAt.IsZero() {
		built = e.BuiltAt.UnixMilli()
	}
	err := s.write(ctx, "record environment", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.RecordEnvironment, storedriver.RecordEnvironmentParams{Repo: e.Repo, Node: e.Node, Key: e.Key,
			OK: e.OK, Cached: e.Cached, BuiltAt: built, TookMS: max(e.Took.Milliseconds(), 0), At: s.nowMS(),
			Error: truncate(CleanText(e.Error), 4000), Output: truncate(CleanText(e.Output), 32000)}.Args()...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the environment of %s: %w", e.Repo, err)
	}
	return nil
}

// Environments returns the latest environment setup of every repository on every node.
func (s *Store) Environments(ctx context.Context) ([]Environment, error) {
	rows, err := s.rd.Query(ctx, s.q.Environments)
	if err != nil {
		return nil, fmt.Errorf("environments: %w", err)
	}
	defer rows.Close()
	out := []Environment{}
	for rows.Next() {
		var e Environment
		var ok, cached, took int64
		var built, at sql.NullInt64
		if err := rows.Scan(&e.Repo, &e.Node, &e.Key, &ok, &cached, &built, &took, &at, &e.Error, &e.Output); err != nil {
			return nil, fmt.Errorf("environments: %w", err)
		}
		e.OK, e.Cached, e.Took = ok == 1, cached == 1, time.Duration(took)*time.Millisecond
		e.BuiltAt, e.At = fromMS(built), fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}
