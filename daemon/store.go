package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
)

// OpenStore opens (creating if needed) the configured ticket database with the configured
// durability and retry backoff.
func OpenStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	if err := os.MkdirAll(filepath.Dir(cfg.Store.Path), 0o755); err != nil {
		return nil, fmt.Errorf("create folder for store.path %s: %w", cfg.Store.Path, err)
	}
	st, err := store.Open(ctx, cfg.Store.Path, store.Options{
		Synchronous: cfg.Store.Synchronous,
		BackoffBase: cfg.Night.RetryBackoff,
		MaxRescues:  cfg.Night.MaxRescues,
	})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", cfg.Store.Path, err)
	}
	return st, nil
}
