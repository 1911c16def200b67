package store

import (
	"context"
	"fmt"
)

// NightTokens sums the model calls charged to one night: what /nights shows as the night's
// cached share beside the totals of its run row.
type NightTokens struct {
	RunID            int64 `json:"run_id"`
	Calls            int   `json:"calls"`
	PromptTokens     int64 `json:"prompt_tokens"` // cached included
	CachedTokens     int64 `json:"cached_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// CachedShare is the share of the night's prompt tokens the provider served from its cache
// (0 when it sent none).
func (n NightTokens) CachedShare() float64 {
	if n.PromptTokens <= 0 {
		return 0
	}
	return float64(n.CachedTokens) / float64(n.PromptTokens)
}

// NightTokens returns the token totals of the given runs, keyed by run id; a run without
// model calls is absent. It reads only those runs' calls (model_calls_run).
func (s *Store) NightTokens(ctx context.Context, runIDs []int64) (map[int64]NightTokens, error) {
	out := map[int64]NightTokens{}
	if len(runIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(runIDs))
	for i, id := range runIDs {
		args[i] = id
	}
	rows, err := s.rd.Query(ctx, s.q.NightTokens(len(runIDs)), args...)
	if err != nil {
		return nil, fmt.Errorf("token totals of %d night(s): %w", len(runIDs), err)
	}
	defer rows.Close()
	for rows.Next() {
		var n NightTokens
		if err := rows.Scan(&n.RunID, &n.Calls, &n.PromptTokens, &n.CachedTokens, &n.CompletionTokens); err != nil {
			return nil, fmt.Errorf("token totals of %d night(s): %w", len(runIDs), err)
		}
		out[n.RunID] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("token totals of %d night(s): %w", len(runIDs), err)
	}
	return out, nil
}
