package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/daemon/intake"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// workBranch is the branch a ticket's attempts work on: ticketd/<id>-<slug> in its first
// round, and ticketd/<id>-<slug>-r<n> in the round a requeue started at attempt n, so a
// requeued done ticket never rewrites its validated fix branch (nor a later round an
// earlier round's).
func workBranch(t store.Ticket) string {
	b := worktree.BranchName(t.ID, t.Title)
	if t.AttemptsBefore > 0 {
		b += "-r" + strconv.Itoa(t.AttemptsBefore+1)
	}
	return b
}

// ownsBranch says whether branch is one of ticket t's work branches (of any round): a
// branch named for a ticket id this database knows, but not for its title, was left by
// another database's ticket of that id, and is not this night's to delete.
func ownsBranch(t store.Ticket, branch string) bool {
	b := worktree.BranchName(t.ID, t.Title)
	if branch == b {
		return true
	}
	rest, ok := strings.CutPrefix(branch, b+"-r")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// requeueNotes are the notes operators gave the ticket's requeues, for the maker.
func requeueNotes(ctx context.Context, st *store.Store, id int64) ([]string, error) {
	rq, err := st.Requeues(ctx, id)
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, r := range rq {
		if r.Note != "" {
			notes = append(notes, r.Note)
		}
	}
	return notes, nil
}

// ticketRecordName is the file in a ticket's results folder that says whose results they
// are: which database, which ticket, which issue and its content. A new database finds
// there what an old one already worked, and never writes over it.
const ticketRecordName = "ticket.json"

// ticketRecord is results/<id>/ticket.json.
type ticketRecord struct {
	Database   string `json:"database"` // the store's identity
	Ticket     int64  `json:"ticket"`
	Source     string `json:"source"`
	ExternalID string `json:"external_id"`
	// Content identifies the text (sha256 of title and body): an issue edited
	// since is a new one.
	Content string `json:"content"`
	State   string `json:"state"`
}

// ContentID identifies an issue's text, as ticket.json records it.
func ContentID(title, body string) string {
	sum := sha256.Sum256([]byte(store.CleanText(title) + "\n" + store.CleanText(body)))
	return hex.EncodeToString(sum[:8])
}

// resultDir is the results folder of ticket t of the database identity: results/<id>,
// unless another database's ticket of that id wrote there; then results/<id>-<database>.
func resultDir(output, identity string, t store.Ticket) string {
	dir := filepath.Join(output, strconv.FormatInt(t.ID, 10))
	rec, err := readTicketRecord(dir)
	if err != nil || identity == "" || rec.Database == "" || rec.Database == identity {
		return dir
	}
	return dir + "-" + short8(identity)
}

func short8(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func readTicketRecord(dir string) (ticketRecord, error) {
	var rec ticketRecord
	data, err := os.ReadFile(filepath.Join(dir, ticketRecordName))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", filepath.Join(dir, ticketRecordName), err)
	}
	return rec, nil
}

// writeTicketRecord writes dir/ticket.json.
func writeTicketRecord(dir, identity string, t store.Ticket, state string) error {
	data, _ := json.MarshalIndent(ticketRecord{Database: identity, Ticket: t.ID, Source: t.Source, ExternalID: t.ExternalID,
		Content: ContentID(t.Title, t.Body), State: state}, "", "  ")
	return os.WriteFile(filepath.Join(dir, ticketRecordName), append(data, '\n'), 0o644)
}

// priorWork indexes what other databases' tickets already worked, from the results folder:
// (external id, content id) -> the folder that holds it. Intake skips such an issue, saying
// where its results are, instead of working it again under a new database.
func priorWork(output, identity string) (map[[2]string]string, error) {
	out := map[[2]string]string{}
	entries, err := os.ReadDir(output)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(output, e.Name())
		rec, err := readTicketRecord(dir)
		if err != nil || rec.Database == "" || rec.Database == identity {
			continue
		}
		out[[2]string{rec.ExternalID, rec.Content}] = dir
	}
	return out, nil
}

// workedElsewhere is intake's Worked: the issues whose results another ticket database left
// in the output folder (nil when it cannot be read).
func (d *Daemon) workedElsewhere(ctx context.Context) func(name, title, body string) string {
	identity, err := d.Store.Identity(ctx)
	if err != nil {
		return nil
	}
	prior, err := priorWork(d.Config.Output, identity)
	if err != nil {
		d.logger().Warn("read what other databases worked from the results folder", "dir", d.Config.Output, "err", err)
		return nil
	}
	if len(prior) == 0 {
		return nil
	}
	return func(name, title, body string) string { return prior[[2]string{name, ContentID(title, body)}] }
}

// recordSkips keeps what a source's scan skipped where ticketctl and the console show it.
func (d *Daemon) recordSkips(ctx context.Context, source string, skipped []intake.Skipped) {
	skips := make([]store.IntakeSkip, 0, len(skipped))
	for _, k := range skipped {
		skips = append(skips, store.IntakeSkip{Path: k.File, Reason: k.Reason})
	}
	if err := d.Store.SetIntakeSkips(ctx, source, skips); err != nil {
		d.logger().Warn("record the skipped issue files", "source", source, "err", err)
	}
}

// noteGone tells of each queued ticket whose issue file was removed from the folder dir: it
// is still worked (removing a file withdraws nothing), so the log and, once, the ticket's
// history say how to withdraw it.
func (d *Daemon) noteGone(ctx context.Context, dir string, gone []intake.Gone) {
	for _, g := range gone {
		note := fmt.Sprintf("its issue file %s is no longer in %s: the ticket stays queued with the text it was taken in with; to withdraw it: ticketctl cancel %d", g.File, dir, g.Ticket)
		d.logger().Warn("issue file of a queued ticket is gone", "ticket", g.Ticket, "file", filepath.Join(dir, g.File), "hint", fmt.Sprintf("it is still worked; ticketctl cancel %d withdraws it", g.Ticket))
		evs, err := d.Store.Events(ctx, g.Ticket)
		if err != nil {
			d.logger().Warn("read the history of a ticket whose issue file is gone", "ticket", g.Ticket, "err", err)
			continue
		}
		if slices.ContainsFunc(evs, func(e store.Event) bool { return e.Kind == store.EventNote && e.Reason == note }) {
			continue
		}
		if err := d.Store.AddNote(ctx, g.Ticket, "intake", note); err != nil {
			d.logger().Warn("note on a ticket that its issue file is gone", "ticket", g.Ticket, "err", err)
		}
	}
}
