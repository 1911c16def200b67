// Package tools implements the file tools the maker model uses inside one worktree. Every
// path is resolved component by component, symlinks included, and must stay inside the
// worktree and outside any .git; only regular files are read or written, and a file may be
// overwritten only if the model read it in this attempt and it has not changed since.
package tools

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Limits keep tool results small enough for a model's context and bound the work one call
// can cause, whatever the repository holds.
const (
	// MaxResultBytes caps one tool result; read_files shares it among the files it returns.
	MaxResultBytes = 60 << 10
	// MaxScanBytes is how far read_files reads into a file: up to it a file is counted and
	// hashed whole (so it can be overwritten later); a line range must start within it.
	MaxScanBytes = 16 << 20
	// MaxEditBytes is the largest file edit_file and write_file rewrite.
	MaxEditBytes = 16 << 20
	// MaxGrepFileBytes is the largest file grep searches; bigger ones are named as skipped.
	MaxGrepFileBytes = 2 << 20
	// MaxGrepScanBytes is how much file content one grep reads in all: a repository of
	// thousands of megabyte-sized files (fixtures, data, vendored bundles) would otherwise
	// be read whole by every grep that matches little.
	MaxGrepScanBytes = 256 << 20
	MaxListEntries   = 2000
	MaxGrepMatches   = 200
)

// Workspace is one attempt's view of a worktree. It remembers what each file held when the
// model last read it, since write_file may only overwrite a file the model has seen as it is.
type Workspace struct {
	root  string // real path
	given string // as passed to NewWorkspace, made absolute (symlink targets may use it)

	mu      sync.Mutex
	read    map[string]readState
	written map[string]Written // by relative path: what the tools last wrote there
	// rewritten are the paths Rewrite put in their checkout form since TakeRewritten
	// last asked.
	rewritten map[string]bool
	allow     []string // protected paths the repository allows (SetAllowPaths)

	bytesRead atomic.Int64 // file bytes read by all tools, for tests and benchmarks
}

// readState is what a file held when the model last saw it whole; hash is "" for a file
// too large to hash, which therefore cannot be overwritten with write_file.
type readState struct {
	hash string
	size int64
}

// NewWorkspace confines tools to root, which must be an existing directory.
func NewWorkspace(root string) (*Workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	return &Workspace{root: real, given: filepath.Clean(abs), read: map[string]readState{}, written: map[string]Written{}}, nil
}

// Root is the worktree's real path.
func (w *Workspace) Root() string { return w.root }

// BytesRead is how many bytes of file content the tools have read so far.
func (w *Workspace) BytesRead() int64 { return w.bytesRead.Load() }

func (w *Workspace) markRead(abs string, st readState) {
	w.mu.Lock()
	w.read[abs] = st
	w.mu.Unlock()
}

func (w *Workspace) lastRead(abs string) (readState, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.read[abs]
	return st, ok
}

// Written is a file as the tools last wrote it in this attempt. The maker has no shell: these
// are all the changes it means, so the fix is built from them, never from the working copy,
// where the checks may have left files of their own.
type Written struct {
	Path string // relative to the worktree, slash-separated
	Data []byte
	Mode fs.FileMode
}

func (w *Workspace) markWritten(rel string, data []byte, mode fs.FileMode) {
	w.mu.Lock()
	w.written[rel] = Written{Path: rel, Data: data, Mode: mode}
	w.mu.Unlock()
}

// Written returns every file the tools wrote in this attempt, as last written, sorted by path.
func (w *Workspace) Written() []Written {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Written, 0, len(w.written))
	for _, f := range w.written {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Written) int { return strings.Compare(a.Path, b.Path) })
	return out
}
