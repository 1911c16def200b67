package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/worktree"
)

// AttemptBranch names the branch that keeps attempt n's partial change of a ticket.
func AttemptBranch(ticketID int64, n int) string {
	return fmt.Sprintf("ticketd/%d-attempt-%d", ticketID, n)
}

// keepAttempt commits an attempt's partial change and points ticketd/<id>-attempt-<n> at it,
// so that an escalation keeps every attempt's work even though the next attempt resets the
// ticket's branch. A released attempt (window, grace, shutdown) keeps its work the same way
// and gives its number back, so the next attempt has the same n: a name already taken gets a
// suffix (ticketd/<id>-attempt-<n>-2, ...) instead of moving the branch. It returns the
// branch, "" when there was nothing to keep.
func keepAttempt(ctx context.Context, log *slog.Logger, tree fixTree, id int64, n int, reason string) string {
	if _, err := tree.commit(ctx, fmt.Sprintf("ticketd attempt %d at ticket %d (not accepted)\n\n%s", n, id, reason)); err != nil {
		log.Info("attempt left no change to keep", "err", err)
		return ""
	}
	return saveAttempt(ctx, log, tree.Tree, id, n)
}

// keepReleased is keepAttempt for an attempt stopped from outside (shutdown, window, the
// night's dollars), whose number is given back: every release of attempt n keeps its work on
// the one branch ticketd/<id>-attempt-<n>-released, moved forward to the latest (SaveOver), so a ticket stopped
// night after night does not grow a branch per stop. A charged attempt's branch is never
// this one.
func keepReleased(ctx context.Context, log *slog.Logger, tree fixTree, id int64, n int, reason string) string {
	if _, err := tree.commit(ctx, fmt.Sprintf("ticketd attempt %d at ticket %d (stopped: not accepted, not charged)\n\n%s", n, id, reason)); err != nil {
		log.Info("attempt left no change to keep", "err", err)
		return ""
	}
	branch := ReleasedBranch(id, n)
	if err := tree.SaveOver(ctx, branch); err != nil {
		log.Warn("keep released attempt branch", "branch", branch, "err", err)
		return ""
	}
	return branch
}

// ReleasedBranch names the branch that keeps the partial change of attempt n of a ticket
// when it was stopped from outside.
func ReleasedBranch(ticketID int64, n int) string {
	return AttemptBranch(ticketID, n) + "-released"
}

// saveAttempt keeps the committed attempt on the first free name of ticketd/<id>-attempt-<n>.
func saveAttempt(ctx context.Context, log *slog.Logger, tree *worktree.Tree, id int64, n int) string {
	for k := 1; k <= maxKeptPerAttempt; k++ {
		branch := AttemptBranch(id, n)
		if k > 1 {
			branch += "-" + strconv.Itoa(k)
		}
		err := tree.SaveAs(ctx, branch)
		if errors.Is(err, worktree.ErrBranchExists) {
			continue
		}
		if err != nil {
			log.Warn("keep attempt branch", "branch", branch, "err", err)
			return ""
		}
		return branch
	}
	log.Warn("keep attempt branch: every name is taken", "branch", AttemptBranch(id, n), "tried", maxKeptPerAttempt)
	return ""
}

// maxKeptPerAttempt bounds the names tried for one attempt number's kept branches.
const maxKeptPerAttempt = 100

// attemptFolder is the results/<id>/ sub-folder of an attempt kept on branch: the branch's
// name after ticketd/<id>- ("attempt-2", "attempt-2-3", "attempt-2-released"), else
// attempt-<n>.
func attemptFolder(id int64, n int, branch string) string {
	if rest, ok := strings.CutPrefix(branch, AttemptBranch(id, n)); ok {
		return "attempt-" + strconv.Itoa(n) + rest
	}
	return "attempt-" + strconv.Itoa(n)
}

// writeAttempt writes results/<id>/attempt-<n>/: the patch, the checks, the findings, the
// verdict and the stop reason of one attempt. Errors are logged, and told to fault (the
// caller ends the attempt as the machine's when the storage failed).
// save keeps each file for the database too (stored with the attempt's transition,
// store.EndAttempt), under its path in the results folder.
func writeAttempt(log *slog.Logger, dir string, save func(rel string, data []byte), fault func(error), rec record.Attempt, folder, diff string, out pipeline.Outcome) {
	folder = cmp.Or(folder, "attempt-"+strconv.Itoa(rec.Attempt))
	adir := filepath.Join(dir, folder)
	if err := os.MkdirAll(adir, 0o755); err != nil {
		log.Error("create attempt folder", "dir", adir, "err", err)
		fault(err)
		return
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(adir, name), data, 0o644); err != nil {
			log.Error("write attempt file", "dir", adir, "file", name, "err", err)
			fault(err)
		}
		save(folder+"/"+name, data)
	}
	files := map[string]any{"attempt.json": rec, "checks.json": out.Checks, "findings.json": out.Findings, "verdict.json": out.Verdict}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data, _ := json.MarshalIndent(files[name], "", "  ")
		write(name, append(data, '\n'))
	}
	write("patch", []byte(capText(diff, MaxPatchBytes, "the whole change is on the attempt's branch")))
	write("stop-reason", []byte(rec.Reason+"\n"))
}

// readAttempts reads every attempt record of the ticket, in attempt order: those in the
// database (written by any node) and those under its results folder on this disk.
func (w *resultsFolder) readAttempts(ctx context.Context, log *slog.Logger, id int64, dir string) []record.Attempt {
	byFolder := map[string]record.Attempt{}
	add := func(folder string, data []byte) {
		var r record.Attempt
		if json.Unmarshal(data, &r) == nil {
			byFolder[folder] = r
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "attempt-*", "attempt.json"))
	for _, m := range matches {
		if data, err := os.ReadFile(m); err == nil {
			add(filepath.Base(filepath.Dir(m)), data)
		}
	}
	stored, err := w.st.Artifacts(ctx, id)
	if err != nil {
		log.Warn("attempt records in the database", "err", err)
	}
	for _, a := range stored {
		folder, name, ok := strings.Cut(a.Path, "/")
		if !ok || name != "attempt.json" || !strings.HasPrefix(folder, "attempt-") {
			continue
		}
		if data, err := w.st.Artifact(ctx, id, a.Path); err == nil {
			add(folder, data)
		}
	}
	var out []record.Attempt
	for _, f := range slices.Sorted(maps.Keys(byFolder)) {
		out = append(out, byFolder[f])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Attempt < out[j].Attempt })
	return out
}

// priorUnverified is the ticket's previous attempt (the latest before attempt n) when it ended
// unverified, with its patch: the next attempt is told what was missing. nil otherwise.
func (w *resultsFolder) priorUnverified(ctx context.Context, log *slog.Logger, id int64, n int) *pipeline.PriorUnverified {
	dir := filepath.Join(w.output, strconv.FormatInt(id, 10))
	var prev *record.Attempt
	for _, r := range w.readAttempts(ctx, log, id, dir) {
		if r.Attempt < n && r.Ending != record.Released && (prev == nil || r.Attempt >= prev.Attempt) {
			prev = &r
		}
	}
	if prev == nil || prev.Status != pipeline.StatusUnverified {
		return nil
	}
	rel := attemptFolder(id, prev.Attempt, prev.Branch) + "/patch"
	patch, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		if patch, err = w.st.Artifact(ctx, id, rel); err != nil {
			log.Warn("read the unverified attempt's patch", "attempt", prev.Attempt, "err", err)
		}
	}
	return &pipeline.PriorUnverified{Attempt: prev.Attempt, Reason: prev.Reason, Patch: string(patch)}
}
