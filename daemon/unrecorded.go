package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ticketd/ticketd/store"
)

// A night whose database takes no writes at its end cannot record that end. Without a
// word from it, the next start takes its part for a process that died: failed "the process
// ended without closing the night", and the one ticket in flight charged a crash toward
// night.max_rescues, though the process ran to its end and the fault was the disk's. So
// the end is kept in the workspace (this node's disk), and the next start writes it before
// it settles the nights of dead processes.

// unrecordedEnd is a night's end the database did not take.
type unrecordedEnd struct {
	Run     int64         `json:"run"`
	Node    string        `json:"node"`
	Outcome store.Outcome `json:"outcome"`
	Error   string        `json:"error"`
}

// unrecordedSuffix ends the name of the file that keeps an unrecorded end.
const unrecordedSuffix = ".unrecorded-night.json"

func (d *Daemon) unrecordedPath(run int64) string {
	return filepath.Join(d.Config.Workspace, fmt.Sprintf("night-%d%s", run, unrecordedSuffix))
}

// keepUnrecorded keeps the end of night rep.RunID that the database did not take.
func (d *Daemon) keepUnrecorded(log *slog.Logger, rep NightReport) {
	data, err := json.Marshal(unrecordedEnd{Run: rep.RunID, Node: d.Store.Node(), Outcome: rep.Outcome, Error: rep.Error})
	if err == nil {
		err = os.MkdirAll(d.Config.Workspace, 0o755)
	}
	if err == nil {
		err = os.WriteFile(d.unrecordedPath(rep.RunID), data, 0o644)
	}
	if err != nil {
		log.Error("keep the night's end for the next start to record", "run", rep.RunID, "err", err)
	}
}

// recordUnrecorded writes the ends of this node's nights that their database did not take,
// and forgets each it wrote.
func (d *Daemon) recordUnrecorded(ctx context.Context) {
	paths, _ := filepath.Glob(filepath.Join(d.Config.Workspace, "night-*"+unrecordedSuffix))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		var end unrecordedEnd
		if err == nil {
			err = json.Unmarshal(data, &end)
		}
		if err != nil {
			d.logger().Warn("read a night's end kept for the database", "file", p, "err", err)
			continue
		}
		if end.Node != d.Store.Node() {
			continue
		}
		open, err := d.openPart(ctx, end.Run)
		if err != nil {
			d.logger().Warn("read the night whose end the database did not take", "run", end.Run, "err", err)
			continue
		}
		why := strings.TrimPrefix(end.Error+"; ", "; ") + "recorded at the next start: the database took no writes when the night ended"
		if open {
			err = d.Store.EndRun(ctx, end.Run, end.Outcome, why)
		}
		switch {
		case !open || errors.Is(err, store.ErrRunNotFound):
			// Closed since (another node saw it end), or another database than the one the
			// night ran on: nothing to record.
		case err != nil:
			d.logger().Warn("record a night's end the database did not take then", "run", end.Run, "err", err)
			continue
		default:
			d.logger().Warn("recorded the end of a night its database did not take then", "run", end.Run, "outcome", end.Outcome)
		}
		if err := os.Remove(p); err != nil {
			d.logger().Warn("remove a recorded night's end", "file", p, "err", err)
		}
	}
}

// unrecordedLookBack bounds how many recent nights openPart reads.
const unrecordedLookBack = 100

// openPart says whether this node's part of night run is still open (not finished).
func (d *Daemon) openPart(ctx context.Context, run int64) (bool, error) {
	runs, err := d.Store.Runs(ctx, unrecordedLookBack)
	if err != nil {
		return false, err
	}
	for _, r := range runs {
		if r.ID != run {
			continue
		}
		for _, n := range r.Nodes {
			if n.Node == d.Store.Node() && n.FinishedAt.IsZero() {
				return true, nil
			}
		}
	}
	return false, nil
}
