package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

// Results reads the files of a ticket's results folder: report.md, patch and, per attempt,
// attempt-<n>/{attempt.json,checks.json,findings.json,verdict.json,patch,stop-reason}. The
// page shows them; it never writes them. Names are slash-separated and relative.
type Results interface {
	// ReadResult returns the file's content, at most max bytes (and whether it was cut);
	// an fs.ErrNotExist error when the ticket has no such file.
	ReadResult(ctx context.Context, t store.Ticket, name string, max int64) (data []byte, cut bool, err error)
	// ResultFolders lists the attempt-* sub-folders of the ticket's results.
	ResultFolders(ctx context.Context, t store.Ticket) ([]string, error)
}

// DirResults reads results from the folder recorded on the ticket (store.Ticket.ResultDir),
// on this machine's disk: what a daemon writes beside its database.
type DirResults struct{}

var _ Results = DirResults{}

// errBadName refuses a results file name that could leave the folder.
var errBadName = errors.New("not a file name inside the results folder")

// ReadResult reads a regular file only (never a FIFO or a device, which would hang or
// flood the page), without following a symlink at the last element, and through os.Root, so
// a folder on the way that is a symlink cannot lead out of the results folder either.
func (DirResults) ReadResult(_ context.Context, t store.Ticket, name string, max int64) ([]byte, bool, error) {
	if t.ResultDir == "" {
		return nil, false, fmt.Errorf("ticket %d has no results folder: %w", t.ID, fs.ErrNotExist)
	}
	if !validResultName(name) {
		return nil, false, fmt.Errorf("results file %q of ticket %d: %w", name, t.ID, errBadName)
	}
	root, err := os.OpenRoot(t.ResultDir)
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	p := filepath.Join(t.ResultDir, filepath.FromSlash(name))
	fi, err := root.Lstat(filepath.FromSlash(name))
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("results file %s is not a regular file (%s): %w", p, fi.Mode().Type(), fs.ErrNotExist)
	}
	f, err := root.Open(filepath.FromSlash(name))
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}

// ResultFolders lists the attempt folders, in attempt order.
func (DirResults) ResultFolders(_ context.Context, t store.Ticket) ([]string, error) {
	if t.ResultDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(t.ResultDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "attempt-") {
			out = append(out, e.Name())
		}
	}
	sortFolders(out)
	return out, nil
}

// validResultName accepts clean relative slash paths of at most two parts, such as
// report.md or attempt-2/patch.
func validResultName(name string) bool {
	if name == "" || path.Clean(name) != name || path.IsAbs(name) || strings.HasPrefix(name, "..") || strings.Contains(name, "\\") {
		return false
	}
	return strings.Count(name, "/") <= 1
}

// sortFolders orders attempt folders by attempt number, then name (attempt-2 before
// attempt-2-released before attempt-10).
func sortFolders(folders []string) {
	sort.SliceStable(folders, func(i, j int) bool {
		ni, nj := folderAttempt(folders[i]), folderAttempt(folders[j])
		if ni != nj {
			return ni < nj
		}
		return folders[i] < folders[j]
	})
}

// folderAttempt is the attempt number an attempt-<n>[-suffix] folder names (0 when none).
func folderAttempt(folder string) int {
	rest := strings.TrimPrefix(folder, "attempt-")
	num, _, _ := strings.Cut(rest, "-")
	n, _ := strconv.Atoi(num)
	return n
}

// Bounds of what the ticket page reads from the results folder.
const (
	maxReportRead = 1 << 20   // report.md (the daemon caps it at 1 MiB too)
	maxPatchShown = 256 << 10 // an attempt's patch on the page; the file link has it all
	maxJSONRead   = 1 << 20
)

// attemptView is one attempt folder, read for the ticket page.
type attemptView struct {
	Folder   string
	File     record.Attempt
	Checks   []validate.Result
	Patch    diffView
	Problems []string // files that could not be read
}

// readAttempt reads one attempt folder; unreadable parts are named in Problems.
func readAttempt(ctx context.Context, r Results, t store.Ticket, folder string) attemptView {
	v := attemptView{Folder: folder, File: record.Attempt{Attempt: folderAttempt(folder)}}
	readJSON := func(name string, into any) {
		data, _, err := r.ReadResult(ctx, t, folder+"/"+name, maxJSONRead)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err == nil {
			err = json.Unmarshal(data, into)
		}
		if err != nil {
			v.Problems = append(v.Problems, fmt.Sprintf("%s/%s: %v", folder, name, err))
		}
	}
	readJSON("attempt.json", &v.File)
	readJSON("checks.json", &v.Checks)
	if len(v.File.Findings) == 0 {
		readJSON("findings.json", &v.File.Findings)
	}
	if v.File.Verdict == nil {
		readJSON("verdict.json", &v.File.Verdict)
	}
	if v.File.Reason == "" {
		if data, _, err := r.ReadResult(ctx, t, folder+"/stop-reason", 64<<10); err == nil {
			v.File.Reason = strings.TrimSpace(string(data))
		}
	}
	data, cut, err := r.ReadResult(ctx, t, folder+"/patch", maxPatchShown)
	switch {
	case err == nil:
		v.Patch = newDiffView(string(data), cut)
	case !errors.Is(err, fs.ErrNotExist):
		v.Problems = append(v.Problems, fmt.Sprintf("%s/patch: %v", folder, err))
	}
	return v
}

// diffView is a unified diff split into lines classed for colour (added, removed, hunk,
// file header), so the page needs no script to highlight it.
type diffView struct {
	Lines       []diffLine
	Files       int
	Added, Gone int
	Cut         bool // the patch was longer than maxPatchShown
}

type diffLine struct {
	Class, Text string
}

func newDiffView(diff string, cut bool) diffView {
	v := diffView{Cut: cut}
	if strings.TrimSpace(diff) == "" {
		return v
	}
	plain := 0 // "+++ " headers, which count the files of a diff without git's headers
	for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		c := ""
		switch {
		case strings.HasPrefix(l, "diff --git "):
			c = "file"
			v.Files++
		case strings.HasPrefix(l, "+++"):
			c = "meta"
			plain++
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "index "):
			c = "meta"
		case strings.HasPrefix(l, "@@"):
			c = "hunk"
		case strings.HasPrefix(l, "+"):
			c = "add"
			v.Added++
		case strings.HasPrefix(l, "-"):
			c = "del"
			v.Gone++
		}
		v.Lines = append(v.Lines, diffLine{c, l})
	}
	if v.Files == 0 {
		v.Files = plain
	}
	return v
}

// Empty reports whether the diff has no lines.
func (v diffView) Empty() bool { return len(v.Lines) == 0 }

// attemptsOf lists the attempt folders of a ticket, or none when the reader has none.
func attemptsOf(ctx context.Context, r Results, t store.Ticket) ([]string, error) {
	folders, err := r.ResultFolders(ctx, t)
	if err != nil {
		return nil, err
	}
	return slices.Clip(folders), nil
}
