package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
)

// OpenStore opens (creating if needed) the configured ticket database — the SQLite file of
// store.path, or the PostgreSQL database of store.url_env / store.url — with the configured
// durability, retry backoff and node name.
func OpenStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	loc, err := cfg.Store.Location()
	if err != nil {
		return nil, err
	}
	if !cfg.Store.Shared() {
		if err := os.MkdirAll(filepath.Dir(loc), 0o755); err != nil {
			return nil, fmt.Errorf("create folder for store.path %s: %w", loc, err)
		}
	}
	st, err := store.OpenLocation(ctx, loc, store.Options{
		Synchronous: cfg.Store.Synchronous,
		BackoffBase: cfg.Night.RetryBackoff,
		MaxRescues:  cfg.Night.MaxRescues,
		Node:        cfg.Node,
	})
	if err != nil {
		return nil, fmt.Errorf("open the store of %s: %w", storeKey(cfg), err)
	}
	return st, nil
}

// storeKey names where the configuration says the store is, for messages (never the URL,
// which may hold a password).
func storeKey(cfg config.Config) string {
	switch {
	case cfg.Store.URLEnv != "":
		return "store.url_env (" + cfg.Store.URLEnv + ")"
	case cfg.Store.URL != "":
		return "store.url"
	}
	return "store.path " + cfg.Store.Path
}
