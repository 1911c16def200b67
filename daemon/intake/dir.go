package intake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/ticketd/ticketd/store"
)

// Enqueuer is the part of the store intake needs.
type Enqueuer interface {
	Enqueue(ctx context.Context, t store.NewTicket) (int64, bool, error)
}

var _ Enqueuer = (*store.Store)(nil)

// Dir is a folder of *.md issue files.
type Dir struct {
	Path        string
	DefaultRepo string         // used when a file names no repo
	Priorities  map[string]int // label -> priority; a ticket takes its labels' highest
	MaxAttempts int
	KnownRepo   func(name string) bool
	// Worked, when set, says where an issue's results already are when another ticket
	// database worked it (the file's name and its content's identity match), "" when none
	// did: such an issue is skipped, not worked again under a new database.
	Worked func(name, title, body string) string
}

// ScanReport says what one scan did. Bad files do not stop the others; each is listed.
type ScanReport struct {
	Files   int
	Added   []int64
	Invalid []error
	// Skipped are the files not taken in (those of Invalid, and those another database
	// already worked), by name, with the reason in words.
	Skipped []Skipped
}

// Skipped is an issue file a scan did not take in.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// Source is the ticket source name for this folder: a rescan of the same folder dedupes on
// (source, file name), so adding nothing twice.
func (d Dir) Source() string { return "dir:" + filepath.Clean(d.Path) }

// Scan enqueues every issue file in the folder that is not in the queue yet.
func (d Dir) Scan(ctx context.Context, q Enqueuer) (ScanReport, error) {
	var rep ScanReport
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		return rep, fmt.Errorf("scan issue folder %s: %w (check intake[].path in the config)", d.Path, err)
	}
	// Every *.md entry is read, whatever its type: readIssueFile refuses a symlink, a FIFO
	// or a folder with the reason, so the operator sees why it was not taken in.
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	skip := func(name string, err error) {
		rep.Invalid = append(rep.Invalid, err)
		rep.Skipped = append(rep.Skipped, Skipped{File: name, Reason: err.Error()})
	}
	for _, name := range names {
		rep.Files++
		path := filepath.Join(d.Path, name)
		data, err := readIssueFile(path)
		if err != nil {
			skip(name, fmt.Errorf("read issue %s: %w", path, err))
			continue
		}
		is, err := ParseIssue(data)
		if err != nil {
			skip(name, fmt.Errorf("issue %s: %w", path, err))
			continue
		}
		repo := is.Repo
		if repo == "" {
			repo = d.DefaultRepo
		}
		if repo == "" {
			skip(name, fmt.Errorf("issue %s: no repo: add \"repo: NAME\" to its front matter or set intake[].repo", path))
			continue
		}
		if d.KnownRepo != nil && !d.KnownRepo(repo) {
			skip(name, fmt.Errorf("issue %s: repo %q is not configured under repos", path, repo))
			continue
		}
		if d.Worked != nil {
			if where := d.Worked(name, is.Title, is.Body); where != "" {
				if known, _ := d.known(ctx, q, name); !known {
					skip(name, fmt.Errorf("issue %s: another ticket database already worked it (its results are in %s): not taken in again; to work it again here, move that folder away", path, where))
					continue
				}
			}
		}
		id, created, err := q.Enqueue(ctx, store.NewTicket{
			Source:      d.Source(),
			ExternalID:  name,
			Repo:        repo,
			Title:       is.Title,
			Body:        is.Body,
			Labels:      is.Labels,
			Priority:    Priority(is.Labels, d.Priorities),
			MaxAttempts: d.MaxAttempts,
		})
		if err != nil {
			return rep, fmt.Errorf("enqueue issue %s: %w", path, err)
		}
		if created {
			rep.Added = append(rep.Added, id)
		}
	}
	return rep, nil
}

// Priority is the highest priority any of the labels maps to (0 when none does). Labels and
// the keys of priorities: compare without case, whichever side the capitals are on.
func Priority(labels []string, prio map[string]int) int {
	best, found := 0, false
	for _, l := range labels {
		for k, p := range prio {
			if strings.EqualFold(k, l) && (!found || p > best) {
				best, found = p, true
			}
		}
	}
	return best
}

// readIssueFile reads an issue file without trusting it: whoever can write to the intake
// folder may leave a FIFO (which would block a plain read forever), a symlink to a file the
// daemon may read but should not publish, or a file of gigabytes. It opens without following
// a symlink and without blocking, checks on the open file that it is a regular file of at
// most MaxIssueBytes, and never reads more than that.
func readIssueFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, errors.New("is a symlink: issue files must be regular files in the folder")
		}
		if errors.Is(err, syscall.ENXIO) { // open(2) of a socket
			return nil, errors.New("is a socket: issue files must be regular files in the folder")
		}
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file (%s): issue files must be regular files", info.Mode().Type())
	}
	if info.Size() > MaxIssueBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d allowed; shorten it or attach logs elsewhere", ErrIssueTooLarge, info.Size(), MaxIssueBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxIssueBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxIssueBytes { // it grew after the stat
		return nil, fmt.Errorf("%w: more than the %d bytes allowed", ErrIssueTooLarge, MaxIssueBytes)
	}
	return data, nil
}

// known says whether the queue already holds the issue of file name (a queue that cannot
// say is asked nothing).
func (d Dir) known(ctx context.Context, q Enqueuer, name string) (bool, error) {
	k, ok := q.(interface {
		TicketBySource(ctx context.Context, source, externalID string) (int64, error)
	})
	if !ok {
		return false, nil
	}
	id, err := k.TicketBySource(ctx, d.Source(), name)
	return id != 0, err
}
