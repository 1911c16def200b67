package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// scratchPrefix starts the name of every scratch directory, followed by the owning daemon's
// pid, so that a daemon starting after a crash can tell its predecessors' leftovers from the
// live directories of another daemon on the same machine.
const scratchPrefix = "ticketd-scratch-"

// legacyPrefix named the JUnit folders of releases before the sandbox, without a pid: they
// are removed once a day old, when no check can still be writing them.
const (
	legacyPrefix = "ticketd-junit-"
	legacyAge    = 24 * time.Hour
)

// Scratch is one command's private temporary directory on the host, seen as /tmp inside the
// sandbox (Spec.Tmp), with the private $HOME in it. Reports the caller reads back (pytest's
// JUnit XML) go here too.
type Scratch struct {
	// Dir is the host path.
	Dir string
}

// NewScratch creates a scratch directory in root (empty means os.TempDir()).
func NewScratch(root string) (*Scratch, error) {
	if root == "" {
		root = os.TempDir()
	}
	dir, err := os.MkdirTemp(root, scratchPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("create scratch directory in %s: %w", root, err)
	}
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create scratch home in %s: %w", dir, err)
	}
	return &Scratch{Dir: dir}, nil
}

// newProbeDir creates the folder a sandbox probe runs in, in root (empty means os.TempDir()),
// named as a scratch directory of this process: a probe killed with its daemon is removed by
// the next start's RemoveLeftovers instead of staying for good.
func newProbeDir(root string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	return os.MkdirTemp(root, scratchPrefix+strconv.Itoa(os.Getpid())+"-probe-")
}

// Remove deletes the scratch directory and everything the command left in it, and its git
// view (GitView) when it has one.
func (s *Scratch) Remove() error {
	return errors.Join(removeAll(s.Dir), removeAll(s.Dir+"-git"))
}

// RemoveLeftovers deletes the scratch directories in root (empty means os.TempDir()) whose
// daemon is gone — what a crashed or killed daemon could not clean — and returns their paths.
func RemoveLeftovers(root string) ([]string, error) {
	if root == "" {
		root = os.TempDir()
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list leftover scratch directories in %s: %w", root, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if strings.HasPrefix(e.Name(), legacyPrefix) {
			if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < legacyAge {
				continue
			}
		} else {
			rest, ok := strings.CutPrefix(e.Name(), scratchPrefix)
			if !ok {
				continue
			}
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if err != nil || pid == os.Getpid() || processAlive(pid) {
				continue
			}
		}
		p := filepath.Join(root, e.Name())
		if err := removeAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// processAlive reports whether pid exists (a zombie counts: its parent may still clean up).
func processAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// removeAll is os.RemoveAll that first makes read-only directories the command left
// writable again, so a test's chmod cannot keep its files on disk.
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
