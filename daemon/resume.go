package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// A ticket stopped for budget keeps its partial work on ticketd/<id>-attempt-<n>; when an
// operator adds money (ticketctl budget ID +$X), its next attempt starts from that work,
// not from scratch: the kept files are written into the new worktree through the maker's
// workspace, so they are part of the fix as if this attempt had written them, and the
// maker is told so. A kept branch that is gone or unreadable is said in the notes, and the
// attempt starts from the base.

// resumedNote starts the ticket's note that an attempt resumed from kept partial work.
const resumedNote = "resumed from the partial work on "

// resumeBranch is the kept branch the attempt resumes from: the ticket's branch when the
// last event but notes before this attempt's claim is budget_added; "" otherwise.
func resumeBranch(evs []store.Event, t store.Ticket) string {
	if !strings.Contains(t.Branch, "-attempt-") {
		return ""
	}
	claim := len(evs) - 1
	for claim >= 0 && evs[claim].Kind != store.EventClaimed {
		claim--
	}
	for i := claim - 1; i >= 0; i-- {
		switch evs[i].Kind {
		case store.EventNote: // notes (a baseline's) change nothing
		case store.EventBudgetAdded:
			return t.Branch
		default:
			return ""
		}
	}
	return ""
}

// resume writes the partial work of the attempt stopped for budget into a's worktree, and
// notes it for the maker.
func (a *attemptRun) resume(ctx context.Context, st *store.Store) error {
	evs, err := st.Events(ctx, a.lease.Ticket.ID)
	if err != nil {
		return fmt.Errorf("read the ticket's history: %w", err)
	}
	branch := resumeBranch(evs, a.lease.Ticket)
	if branch == "" {
		return nil
	}
	paths, err := worktree.BranchChanges(ctx, a.tree.RepoPath, a.tree.BaseCommit, branch)
	if err == nil {
		err = a.writeKept(ctx, branch, paths)
	}
	if err != nil {
		a.notes = append(a.notes, fmt.Sprintf("The partial work of the attempt stopped for budget (branch %s) could not be taken over (%v): this attempt starts from the base.", branch, err))
		return nil
	}
	if err := st.AddNote(ctx, a.lease.Ticket.ID, st.Node(), fmt.Sprintf("%s%s: %s", resumedNote, branch, strings.Join(paths, ", "))); err != nil {
		return fmt.Errorf("note the resumed work: %w", err)
	}
	a.notes = append(a.notes, fmt.Sprintf("Money was added after an earlier attempt stopped for budget. This attempt starts from that attempt's partial work (branch %s), already in the worktree: %s. Read them before changing them; continue from there rather than starting over.",
		branch, strings.Join(paths, ", ")))
	return nil
}

// writeKept writes each of paths as branch holds it through the maker's workspace; a file
// the branch deleted is left as it is at the base (the tools cannot delete).
func (a *attemptRun) writeKept(ctx context.Context, branch string, paths []string) error {
	ws := a.fix.ws
	for _, p := range paths {
		data, found, err := a.tree.FileOn(ctx, branch, p)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		if _, err := ws.ReadFiles(ctx, []tools.ReadRequest{{Path: p}}); err != nil {
			return err
		}
		if _, err := ws.WriteFile(ctx, p, string(data)); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}
