package status

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/ticketd/ticketd/store"
)

// StoreResults reads a ticket's results from the database (the files each attempt's ending
// wrote with it, store.EndAttempt): the one source ticketctl show and report.md read too,
// whichever node worked the ticket. The results folder on disk is an export of it; it is
// read (Fallback) only for a ticket the database holds no results files for, one worked
// before they were kept there.
type StoreResults struct {
	Store    *store.Store
	Fallback Results // nil: a ticket without stored files has none
}

var _ Results = StoreResults{}

// ReadResult returns the stored file, or the folder's for an old ticket.
func (r StoreResults) ReadResult(ctx context.Context, t store.Ticket, name string, max int64) ([]byte, bool, error) {
	if !validResultName(name) {
		return nil, false, fmt.Errorf("results file %q of ticket %d: %w", name, t.ID, errBadName)
	}
	data, err := r.Store.Artifact(ctx, t.ID, name)
	if errors.Is(err, store.ErrNoArtifact) {
		stored, lerr := r.Store.Artifacts(ctx, t.ID)
		if lerr != nil {
			return nil, false, lerr
		}
		if len(stored) == 0 && r.Fallback != nil {
			return r.Fallback.ReadResult(ctx, t, name, max)
		}
		return nil, false, fmt.Errorf("results file %s of ticket %d: %w", name, t.ID, fs.ErrNotExist)
	}
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}

// ResultFolders lists the attempt folders the stored files name, in attempt order, or the
// folder's for an old ticket.
func (r StoreResults) ResultFolders(ctx context.Context, t store.Ticket) ([]string, error) {
	stored, err := r.Store.Artifacts(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	if len(stored) == 0 {
		if r.Fallback == nil {
			return nil, nil
		}
		return r.Fallback.ResultFolders(ctx, t)
	}
	seen := map[string]bool{}
	var out []string
	for _, a := range stored {
		folder, _, ok := strings.Cut(a.Path, "/")
		if ok && strings.HasPrefix(folder, "attempt-") && !seen[folder] {
			seen[folder] = true
			out = append(out, folder)
		}
	}
	sortFolders(out)
	return out, nil
}
