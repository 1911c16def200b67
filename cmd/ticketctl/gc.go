package main

import (
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store"
)

// gcJSON is the stable shape of gc --json.
type gcJSON struct {
	Pruned int `json:"pruned"` // tickets whose bulky columns were emptied
	// BaselinesPruned counts kept baselines (checks results at a base commit) no night
	// used within the age; a night that meets their base again recomputes them.
	BaselinesPruned int     `json:"baselines_pruned"`
	OlderThanS      float64 `json:"older_than_s"`
}

func cmdGC(e *env, args []string) error {
	fs := e.flagSet("gc")
	olderThan := fs.String("older-than", "", "prune tickets finished, and baselines unused, more than `AGE` ago (720h or 30d); required")
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *olderThan == "" {
		return usagef("ticketctl gc --older-than 720h", "gc: --older-than is required (it says how much recent detail to keep)")
	}
	age, err := parseDuration(*olderThan)
	if err != nil {
		return usagef("ticketctl gc --older-than 720h", "gc: --older-than: %v", err)
	}
	if age < time.Hour {
		return usagef("ticketctl gc --older-than 720h", "gc: --older-than %s would prune tickets that just finished; want at least 1h", *olderThan)
	}
	return e.withStore(func(s *store.Store) error {
		n, err := s.GC(e.ctx, age)
		if err != nil {
			return err
		}
		nb, err := s.PruneBaselines(e.ctx, age)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(gcJSON{Pruned: n, BaselinesPruned: nb, OlderThanS: age.Seconds()})
		}
		fmt.Fprintf(e.stdout, "pruned %d ticket(s) finished more than %s ago (body, triage, summary and tool payloads; events and costs kept)\n", n, *olderThan)
		fmt.Fprintf(e.stdout, "deleted %d baseline(s) no night used in %s (recomputed if a night meets their base commit again)\n", nb, *olderThan)
		return nil
	})
}
