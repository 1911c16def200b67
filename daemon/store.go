package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
)

// OpenStore opens (creating if needed) the configured ticket database — the SQLite file of
// store.path, or the PostgreSQL database of store.url_env / store.url — with the configured
// durability, retry backoff and node name. clk is the daemon's clock (Daemon.Clock), so the
// store stamps leases, events and due times on the same time as the night; none given: the
// machine's.
func OpenStore(ctx context.Context, cfg config.Config, clk ...Clock) (*store.Store, error) {
	loc, err := cfg.Store.Location()
	if err != nil {
		return nil, err
	}
	if !cfg.Store.Shared() {
		if err := os.MkdirAll(filepath.Dir(loc), 0o755); err != nil {
			return nil, fmt.Errorf("create folder for store.path %s: %w", loc, err)
		}
		if err := refuseForeignFile(ctx, loc); err != nil {
			return nil, err
		}
	}
	st, err := store.OpenLocation(ctx, loc, store.Options{
		Synchronous: cfg.Store.Synchronous,
		BackoffBase: cfg.Night.RetryBackoff,
		MaxRescues:  cfg.Night.MaxRescues,
		Node:        cfg.Node,
		Now:         clockOf(clk).Now,
	})
	if err != nil {
		return nil, fmt.Errorf("open the store of %s: %w", storeKey(cfg), err)
	}
	return st, nil
}

// refuseForeignFile refuses a store.path that holds something else than a ticketd database
// (another program's SQLite file, any other file), as ticketctl does: ticketd would add its
// tables to it. A missing or empty file becomes a new database.
func refuseForeignFile(ctx context.Context, path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && fi.Mode().IsRegular() && fi.Size() == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store.path %s: %w", path, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("store.path %s is a folder: name the database file inside it (such as %s)", path, filepath.Join(path, "ticketd.db"))
	}
	// Only a file that surely is not ticketd's is refused; one that cannot be read now (busy)
	// is left to the store's own opening, which waits and says.
	if _, err := store.Inspect(ctx, path); errors.Is(err, store.ErrNotTicketd) {
		return fmt.Errorf("store.path %s: %w; ticketd writes nothing to it: point store.path at ticketd's database, or at a new file", path, err)
	}
	return nil
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
