package intake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock"
)

// Enqueuer is the part of the store intake needs.
type Enqueuer interface {
	Enqueue(ctx context.Context, t store.NewTicket) (int64, bool, error)
	// Retext gives a ticket no worker claimed yet its issue's new text.
	Retext(ctx context.Context, t store.NewTicket) (store.Retexted, error)
	// SameText finds the source's ticket of a renamed or copied file.
	SameText(ctx context.Context, source, repo, title, body string) (store.Ticket, bool, error)
	// List finds the queued tickets whose file is gone.
	List(ctx context.Context, f store.Filter) ([]store.Summary, error)
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
	// Clock times the wait for files still being written (nil: the machine's clock).
	Clock clock.Clock
	// Settle is how long a file must have gone unchanged before it is read as a whole issue
	// (0: DefaultSettle).
	Settle time.Duration
	// MaxFiles bounds the issue files one scan reads (0: DefaultMaxFiles).
	MaxFiles int
	// Shared says the database is shared with other machines, whose intake folders may have
	// this path: their files of the same name are the same tickets (Source, ExternalID). A
	// file whose ticket has another title or text may then be another machine's issue, not
	// an edit: its ticket is left as it is, and the file is listed as skipped, saying so,
	// instead of the text going back and forth with each machine's scan.
	Shared bool
}

// DefaultSettle is how long an issue file must have gone unchanged before a scan takes it
// in: an editor, cp or scp still writing it changes it more often than that, and a file
// taken half-written would become a ticket with half its text.
const DefaultSettle = 2 * time.Second

// settleRounds bounds the waits of one scan for files still changing: a file that changed
// again at each of them is left for a later scan, so a writer that never stops cannot hold
// the night's start for more than settleRounds*Settle.
const settleRounds = 3

// DefaultMaxFiles bounds the issue files one scan reads: a folder of millions of files must
// not exhaust the daemon's memory nor hold the night's start for hours. The rest (by name)
// wait for a later scan and the scan says so.
const DefaultMaxFiles = 10000

// ScanReport says what one scan did. Bad files do not stop the others; each is listed.
type ScanReport struct {
	Files int
	Added []int64
	// Retexted are the queued tickets, never claimed, whose file was edited since the scan
	// that took it in: they now have its new text.
	Retexted []int64
	Invalid  []error
	// Skipped are the files not taken in (those of Invalid: refused, still being written,
	// edited after their ticket was claimed, renamed or copied, already worked by another
	// database), by name, with the reason in words.
	Skipped []Skipped
	// Gone are the queued tickets of the folder whose file is no longer in it: removing a
	// file does not withdraw its issue (ticketctl cancel does), so the operator is told. On
	// a database several machines share, another machine's folder of the same path is the
	// same source: its tickets show here too.
	Gone []Gone
}

// Gone is a queued ticket whose issue file is no longer in the folder.
type Gone struct {
	File   string `json:"file"`
	Ticket int64  `json:"ticket"`
}

// Skipped is an issue file a scan did not take in.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// Source is the ticket source name for this folder: a rescan of the same folder dedupes on
// (source, file name), so adding nothing twice.
func (d Dir) Source() string { return "dir:" + filepath.Clean(d.Path) }

// IsIssueName says whether a scan reads the folder entry name: *.md, but not what editors,
// sync tools and office suites leave beside the files they write (hidden files such as
// vim's .x.md.swp, Emacs's .#x.md lock and rsync's .x.md.XXXXXX, Emacs's #x.md# auto-save,
// ~$x.md locks), which are not issues and are passed over without a word.
func IsIssueName(name string) bool {
	if !strings.HasSuffix(name, ".md") || name == ".md" {
		return false
	}
	switch name[0] {
	case '.', '~', '#':
		return false
	}
	return true
}

// Scan enqueues every issue file in the folder that is not in the queue yet, and gives the
// edit of a file whose ticket no worker claimed yet to that ticket. A file that changed
// less than Settle ago (an editor or a copy may still be writing it) is read only once it
// has stopped changing: the scan waits for it, up to settleRounds times Settle, then leaves
// it for a later scan, listed as skipped.
func (d Dir) Scan(ctx context.Context, q Enqueuer) (ScanReport, error) {
	var rep ScanReport
	names, more, err := d.list()
	if err != nil {
		return rep, err
	}
	rep.Files = len(names)
	sc := scan{d: d, q: q, rep: &rep, clk: d.Clock, settle: cmp.Or(d.Settle, DefaultSettle),
		changing: map[string]fileSig{}, ready: map[string]fileSig{}}
	if sc.clk == nil {
		sc.clk = clock.Real{}
	}
	if more > 0 {
		sc.skip(fmt.Sprintf("(%d more files)", more), fmt.Errorf("issue folder %s holds %d issue files, more than the %d one scan reads: the %d last by name wait for a later scan; move the files of finished tickets out of the folder", d.Path, len(names)+more, len(names), more))
	}
	// First every file is looked at, then waited for, then read in name order: tickets are
	// numbered (and, of one priority, claimed) in the order of their files' names, whichever
	// had to be waited for.
	for _, name := range names {
		sc.look(name, nil)
	}
	for round := 0; len(sc.changing) > 0 && round < settleRounds; round++ {
		select {
		case <-ctx.Done():
			return rep, fmt.Errorf("wait for issue files still being written in %s: %w", d.Path, context.Cause(ctx))
		case <-sc.clk.After(sc.settle):
		}
		waiting := sc.changing
		sc.changing = map[string]fileSig{}
		for _, name := range slices.Sorted(maps.Keys(waiting)) {
			prev := waiting[name]
			sc.look(name, &prev)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sc.changing)) {
		sc.skip(name, fmt.Errorf("issue %s: still being written (it changed again within each of %d waits of %s): taken in at a later scan once it has stopped changing; write issues elsewhere and move them into the folder", filepath.Join(d.Path, name), settleRounds, sc.settle))
	}
	for _, name := range slices.Sorted(maps.Keys(sc.ready)) {
		if err := sc.take(ctx, name, sc.ready[name]); err != nil {
			return rep, err
		}
	}
	if more == 0 { // the listing is whole: what it lacks is gone
		if rep.Gone, err = d.gone(ctx, q, names); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// gone returns the queued tickets of the folder whose file is not among names.
func (d Dir) gone(ctx context.Context, q Enqueuer, names []string) ([]Gone, error) {
	queued, err := q.List(ctx, store.Filter{States: []store.State{store.StateQueued}})
	if err != nil {
		return nil, fmt.Errorf("look for queued tickets of %s whose file is gone: %w", d.Path, err)
	}
	var out []Gone
	for _, t := range queued {
		if _, found := slices.BinarySearch(names, t.ExternalID); t.Source == d.Source() && !found {
			out = append(out, Gone{File: t.ExternalID, Ticket: t.ID})
		}
	}
	slices.SortFunc(out, func(a, b Gone) int { return cmp.Compare(a.Ticket, b.Ticket) })
	return out, nil
}

// list returns the folder's issue file names, sorted, at most MaxFiles of them, and how
// many more there are. It never holds more than twice MaxFiles names.
func (d Dir) list() (names []string, more int, err error) {
	limit := cmp.Or(d.MaxFiles, DefaultMaxFiles)
	f, err := os.Open(d.Path)
	if err != nil {
		return nil, 0, fmt.Errorf("scan issue folder %s: %w (check intake[].path in the config)", d.Path, err)
	}
	defer f.Close()
	for {
		batch, err := f.Readdirnames(1024)
		for _, name := range batch {
			if !IsIssueName(name) {
				continue
			}
			names = append(names, name)
			if len(names) == 2*limit { // keep the first names in order, count the rest
				slices.Sort(names)
				more += len(names) - limit
				names = names[:limit]
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("scan issue folder %s: %w (check intake[].path in the config)", d.Path, err)
		}
	}
	slices.Sort(names)
	if len(names) > limit {
		more += len(names) - limit
		names = names[:limit]
	}
	return names, more, nil
}

// scan is one Scan's state.
type scan struct {
	d        Dir
	q        Enqueuer
	rep      *ScanReport
	clk      clock.Clock
	settle   time.Duration
	changing map[string]fileSig // files seen changing, waiting to settle, by name
	ready    map[string]fileSig // files that stopped changing, to read, by name
}

func (sc *scan) skip(name string, err error) {
	sc.rep.Invalid = append(sc.rep.Invalid, err)
	sc.rep.Skipped = append(sc.rep.Skipped, Skipped{File: name, Reason: err.Error()})
}

// look sorts the file name into ready, changing or skipped: a regular file is ready when it
// is unchanged since prev (its state at the last look), or, at the first look, was last
// modified at least Settle ago.
func (sc *scan) look(name string, prev *fileSig) {
	// A file's name becomes the ticket's external id, shown by ticketctl on a terminal: one
	// with control characters (an escape sequence) or not UTF-8 is refused, and shown quoted.
	if !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		sc.skip(strconv.Quote(name), fmt.Errorf("issue file %s: its name holds control characters or is not UTF-8: rename it", strconv.Quote(filepath.Join(sc.d.Path, name))))
		return
	}
	path := filepath.Join(sc.d.Path, name)
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return // removed or renamed since the listing: nothing to take in
	case err != nil:
		sc.skip(name, fmt.Errorf("read issue %s: %w", path, err))
		return
	}
	// What is not a regular file is refused unopened: opening a FIFO, a socket or a device
	// node can block or act (a watchdog's reboots when closed).
	if err := notRegular(info.Mode()); err != nil {
		sc.skip(name, fmt.Errorf("read issue %s: %w", path, err))
		return
	}
	sig := sigOf(info)
	if prev != nil && sig == *prev || prev == nil && sc.clk.Now().Sub(info.ModTime()) >= sc.settle {
		sc.ready[name] = sig
		return
	}
	sc.changing[name] = sig
}

// take reads the ready issue file name, as it was when it stopped changing (sig), and
// enqueues it, or gives its ticket its new text.
func (sc *scan) take(ctx context.Context, name string, sig fileSig) error {
	d := sc.d
	path := filepath.Join(d.Path, name)
	data, read, err := readIssueFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		sc.skip(name, fmt.Errorf("read issue %s: %w", path, err))
		return nil
	}
	if sigOf(read) != sig { // it changed, or was replaced, since it stopped changing
		sc.skip(name, fmt.Errorf("issue %s: changed again as the scan came to read it: taken in at a later scan once it has stopped changing", path))
		return nil
	}
	is, err := ParseIssue(data)
	if err != nil {
		sc.skip(name, fmt.Errorf("issue %s: %w", path, err))
		return nil
	}
	repo := is.Repo
	if repo == "" {
		repo = d.DefaultRepo
	}
	if repo == "" {
		sc.skip(name, fmt.Errorf("issue %s: no repo: add \"repo: NAME\" to its front matter or set intake[].repo", path))
		return nil
	}
	if d.KnownRepo != nil && !d.KnownRepo(repo) {
		sc.skip(name, fmt.Errorf("issue %s: repo %q is not configured under repos", path, repo))
		return nil
	}
	if d.Worked != nil {
		if where := d.Worked(name, is.Title, is.Body); where != "" {
			if known, _ := d.known(ctx, sc.q, name); !known {
				sc.skip(name, fmt.Errorf("issue %s: another ticket database already worked it (its results are in %s): not taken in again; to work it again here, move that folder away", path, where))
				return nil
			}
		}
	}
	nt := store.NewTicket{
		Source:      d.Source(),
		ExternalID:  name,
		Repo:        repo,
		Title:       is.Title,
		Body:        is.Body,
		Labels:      is.Labels,
		Priority:    Priority(is.Labels, d.Priorities),
		MaxAttempts: d.MaxAttempts,
	}
	if d.Shared {
		other, err := d.otherText(ctx, sc.q, nt)
		if err != nil {
			return fmt.Errorf("read the ticket of issue %s: %w", path, err)
		}
		if other != 0 {
			sc.skip(name, fmt.Errorf("issue %s has the file name of ticket #%d but another title or text: on a database several machines share, tickets are keyed on the folder's path and the file name, so this may be another machine's issue file of the same name, or an edit; not taken in, and ticket #%d is left as it is: give the file a name no other machine's folder of this path uses (for an edit too: a new name is a new ticket), or give each machine's folder its own path", path, other, other))
			return nil
		}
	}
	// A file already taken in may have been edited since: its ticket takes the new text
	// while no worker has claimed it, and keeps the text it was worked with after.
	re, err := sc.q.Retext(ctx, nt)
	if err != nil {
		return fmt.Errorf("take in the edit of issue %s: %w", path, err)
	}
	switch {
	case re.Changed:
		sc.rep.Retexted = append(sc.rep.Retexted, re.ID)
		return nil
	case re.Kept:
		sc.skip(name, fmt.Errorf("issue %s changed since ticket #%d took it in (now %s): a ticket a worker has claimed, or one out of the queue, keeps the text it was taken in with; to have the new text worked, give the file a new name (a new ticket), or put the old text back to clear this", path, re.ID, re.State))
		return nil
	case re.ID != 0:
		return nil
	}
	// A new name with the text of a ticket already taken in is that issue renamed or copied
	// (mv a.md b.md while a.md's ticket waits): taken in again, it would be fixed twice.
	same, ok, err := sc.q.SameText(ctx, nt.Source, nt.Repo, nt.Title, nt.Body)
	if err != nil {
		return fmt.Errorf("look for the ticket of issue %s under another file name: %w", path, err)
	}
	if ok {
		sc.skip(name, fmt.Errorf("issue %s has the title and text of ticket #%d, taken in from %s (now %s): not taken in twice (a renamed or copied file); to have that issue worked again, ticketctl requeue %d; if this is another report, make its text say how it differs", path, same.ID, same.ExternalID, same.State, same.ID))
		return nil
	}
	id, created, err := sc.q.Enqueue(ctx, nt)
	if err != nil {
		return fmt.Errorf("enqueue issue %s: %w", path, err)
	}
	if created {
		sc.rep.Added = append(sc.rep.Added, id)
	}
	return nil
}

// fileSig is what changes when a file is written, replaced or renamed over: its identity,
// size, modification and change times (ctime cannot be set back by the writer).
type fileSig struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

func sigOf(info os.FileInfo) fileSig {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileSig{size: info.Size(), mtime: syscall.NsecToTimespec(info.ModTime().UnixNano())}
	}
	return fileSig{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
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
// daemon may read but should not publish (or to /dev/zero), or a file of gigabytes. It opens
// without following a symlink and without blocking, checks on the open file that it is a
// regular file of at most MaxIssueBytes, and never reads more than that. It returns the
// open file's state after the read, for the caller to see whether it changed meanwhile.
func readIssueFile(path string) ([]byte, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return nil, nil, errors.New("is a symlink: issue files must be regular files in the folder")
		case errors.Is(err, syscall.ENXIO): // open(2) of a socket
			return nil, nil, errors.New("is a socket: issue files must be regular files in the folder")
		case errors.Is(err, fs.ErrPermission):
			return nil, nil, fmt.Errorf("%w: make it readable by the user ticketd runs as (uid %d)", err, os.Getuid())
		}
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if err := notRegular(info.Mode()); err != nil {
		return nil, nil, err
	}
	if info.Size() > MaxIssueBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes, more than the %d allowed; shorten it or attach logs elsewhere", ErrIssueTooLarge, info.Size(), MaxIssueBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxIssueBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > MaxIssueBytes { // it grew after the stat
		return nil, nil, fmt.Errorf("%w: more than the %d bytes allowed", ErrIssueTooLarge, MaxIssueBytes)
	}
	if info, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	return data, info, nil
}

// notRegular says why a file of mode m is no issue file, nil for a regular file.
func notRegular(m fs.FileMode) error {
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeSymlink != 0:
		return errors.New("is a symlink: issue files must be regular files in the folder")
	case m&fs.ModeSocket != 0:
		return errors.New("is a socket: issue files must be regular files in the folder")
	}
	return fmt.Errorf("is not a regular file (%s): issue files must be regular files", m.Type())
}

// known says whether the queue already holds the issue of file name (a queue that cannot
// say is asked nothing).
// otherText is the ticket of nt's file name when its title or text differs from nt's, 0
// when there is none or it has the same.
func (d Dir) otherText(ctx context.Context, q Enqueuer, nt store.NewTicket) (int64, error) {
	k, ok := q.(interface {
		TicketBySource(ctx context.Context, source, externalID string) (int64, error)
		Get(ctx context.Context, id int64) (store.Ticket, error)
	})
	if !ok {
		return 0, nil
	}
	id, err := k.TicketBySource(ctx, nt.Source, nt.ExternalID)
	if err != nil || id == 0 {
		return 0, err
	}
	t, err := k.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	if t.Title == store.CleanText(nt.Title) && t.Body == store.CleanText(nt.Body) { // as the store keeps them
		return 0, nil
	}
	return id, nil
}

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
