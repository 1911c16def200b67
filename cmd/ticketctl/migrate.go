package main

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/ticketd/ticketd/store"
)

// migrateJSON is the stable shape of migrate --json.
type migrateJSON struct {
	From   string             `json:"from"`
	To     string             `json:"to"` // the URL without its password
	Tables []store.TableCount `json:"tables"`
}

var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cmdMigrate copies the SQLite store (--db, --config or TICKETD_DB) into the empty
// PostgreSQL database whose URL the variable --to-url-env names, history included.
func cmdMigrate(e *env, args []string) error {
	fs := e.flagSet("migrate")
	toEnv := fs.String("to-url-env", "", "the environment `VARIABLE` holding the PostgreSQL URL to copy into (required)")
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	const hint = "TICKETD_DB_URL=postgres://... ticketctl --db ./ticketd.db migrate --to-url-env TICKETD_DB_URL"
	if *toEnv == "" {
		return usagef(hint, "migrate: --to-url-env is required (the name of the variable holding the target URL, never the URL itself)")
	}
	if !envVarName.MatchString(*toEnv) {
		return usagef(hint, "migrate: --to-url-env %q is not a variable name; pass the variable's name, not the URL", *toEnv)
	}
	url, ok := e.lookupEnv(*toEnv)
	if !ok || url == "" {
		return usagef(hint, "migrate: the variable %s is not set; export the PostgreSQL URL in it", *toEnv)
	}
	if !store.IsURL(url) {
		return usagef(hint, "migrate: %s does not hold a postgres:// URL", *toEnv)
	}
	from, _, err := e.dbPath()
	if err != nil {
		return err
	}
	if store.IsURL(from) {
		return usagef(hint, "migrate: the source is already a PostgreSQL database; migrate copies a SQLite file (--db ./ticketd.db) into one")
	}
	return e.withStore(func(src *store.Store) error {
		dst, err := store.OpenURL(e.ctx, url, store.Options{})
		if err != nil {
			return fmt.Errorf("migrate: open the target (%s): %w", *toEnv, err)
		}
		defer dst.Close()
		rep, err := src.CopyTo(e.ctx, dst)
		if errors.Is(err, store.ErrNotEmpty) {
			return fmt.Errorf("migrate: %w; nothing was copied", err)
		}
		if err != nil {
			return fmt.Errorf("migrate: %w; the target was left as it was", err)
		}
		if e.g.json {
			return e.printJSON(migrateJSON{From: src.Path(), To: dst.Path(), Tables: rep.Tables})
		}
		fmt.Fprintf(e.stdout, "copied %s into %s:\n", src.Path(), dst.Path())
		tw := e.table()
		for _, t := range rep.Tables {
			fmt.Fprintf(tw, "  %s\t%d\n", t.Table, t.Rows)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "point every node's config at it (store: {url_env: %s}) before the next night\n", *toEnv)
		return nil
	})
}
