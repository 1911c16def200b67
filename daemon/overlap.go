package daemon

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/ticketd/ticketd/daemon/dupes"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/store"
)

// Overlap-aware claiming (docs/night.md) needs to know, before a ticket is claimed, which
// files it will touch. Two predictions feed it: at intake, the project files the issue's
// own text names (a traceback's frames, a path in prose), free and available for the
// whole queue before the night; and at the first attempt, triage's suspects, which
// replace it for later claims (a retry, and every claim while this attempt runs). A
// ticket with neither is claimed as it always was: nothing says what it overlaps.

// afterIntake is what follows each intake: duplicates linked, files predicted.
func (d *Daemon) afterIntake(ctx context.Context) {
	d.linkDuplicates(ctx)
	d.predictFromIssues(ctx)
}

// predictFromIssues predicts the files of each queued ticket triage has not seen that has
// no prediction yet, from its issue text. Failures are logged: an unpredicted ticket is
// only claimed without regard to overlap.
func (d *Daemon) predictFromIssues(ctx context.Context) {
	log := d.logger()
	queued, err := d.Store.List(ctx, store.Filter{States: []store.State{store.StateQueued}, Limit: maxOpenForDuplicates})
	if err != nil {
		log.Warn("predict files: list queued tickets", "err", err)
		return
	}
	for _, t := range queued {
		if t.Triage != "" {
			continue
		}
		files := dupes.Files(t.Title, t.Body)
		if len(files) == 0 {
			continue
		}
		if p, err := d.Store.PredictedFiles(ctx, t.ID); err != nil || len(p.Files) > 0 {
			continue
		}
		if err := d.Store.PredictFiles(ctx, t.ID, store.PredictedByIssue, files); err != nil {
			log.Warn("predict files from the issue", "ticket", t.ID, "err", err)
		}
	}
}

// predictFromTriage replaces a ticket's prediction with triage's suspects (raw is the
// triage as saved); a triage that suspects nothing leaves the issue's prediction.
func (d *Daemon) predictFromTriage(ctx context.Context, log *slog.Logger, id int64, raw string) {
	var t pipeline.Triage
	if err := json.Unmarshal([]byte(raw), &t); err != nil || len(t.SuspectedFiles) == 0 {
		return
	}
	if err := d.Store.PredictFiles(ctx, id, store.PredictedByTriage, t.SuspectedFiles); err != nil {
		log.Warn("predict files from triage", "err", err)
	}
}
