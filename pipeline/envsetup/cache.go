package envsetup

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The cache's layout: <root>/<repo>/<key>/ is an environment ($ENV), <key>.json beside it the
// marker of its finished build (outside $ENV, so a recipe cannot forge it), <key>.src the
// copy of the base commit a build runs in (removed when it ends).

func markerPath(dir string) string { return dir + ".json" }

func readMarker(dir string) (marker, bool) {
	var m marker
	data, err := readSmall(markerPath(dir))
	if err != nil || json.Unmarshal(data, &m) != nil || m.Key != filepath.Base(dir) || m.BuiltAt.IsZero() {
		return marker{}, false
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return marker{}, false
	}
	return m, true
}

func writeMarker(dir string, m marker) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := markerPath(dir) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, markerPath(dir))
}

// readSmall reads a regular file of at most 1 MiB, never following a symlink.
func readSmall(p string) ([]byte, error) { return readRegular(os.Lstat, p, 1<<20) }

// readRegular reads the first limit bytes of p when stat (os.Stat to follow a symlink,
// os.Lstat not to) says it is a regular file: a FIFO is never opened, so never waited on,
// and /dev/zero never read.
func readRegular(stat func(string) (os.FileInfo, error), p string, limit int64) ([]byte, error) {
	fi, err := stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// removeEnv removes an environment, its marker and its build copy.
func removeEnv(dir string) error {
	err := os.Remove(markerPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, os.RemoveAll(dir), os.RemoveAll(dir+".src"))
}

// hasEnvs reports whether repoDir holds a finished environment.
func hasEnvs(repoDir string) bool {
	entries, _ := os.ReadDir(repoDir)
	for _, e := range entries {
		if key, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			if _, ok := readMarker(filepath.Join(repoDir, key)); ok {
				return true
			}
		}
	}
	return false
}

// copyFiles copies the tracked files of src into dst: regular files with their mode bits,
// symlinks as symlinks; nothing else (a recipe runs in exactly the base commit's files). No
// symlink is followed, in a folder on the way either (openTracked): a path through one is
// not the checkout's file and is left out, as an absent one is.
func copyFiles(src, dst string, files []string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, rel := range files {
		to := filepath.Join(dst, filepath.FromSlash(rel))
		e, err := openTracked(src, rel)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotInTree) {
				continue // a submodule's folder, or a file the checkout does not have
			}
			return err
		}
		if err := copyEntry(e, to); err != nil {
			return fmt.Errorf("copy %s: %w", rel, err)
		}
	}
	return nil
}

// copyEntry writes e at to: a symlink as the same symlink, a regular file's content with its
// mode bits; anything else is skipped.
func copyEntry(e trackedEntry, to string) error {
	if e.file != nil {
		defer e.file.Close()
	}
	if e.mode != fs.ModeSymlink && e.file == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if e.mode == fs.ModeSymlink {
		return os.Symlink(e.target, to)
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.perm|0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, e.file)
	return errors.Join(err, out.Close())
}

// chownTree gives dir and everything in it to uid:gid, symlinks themselves (never their
// targets).
func chownTree(dir string, uid, gid int) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("give %s to uid %d: %w", dir, uid, err)
	}
	return nil
}

// lockDown takes from everything in a finished environment the bits a recipe (code of the
// repository's, untrusted) could leave to outlive it: write for group and others, set-user-ID
// and set-group-ID. The environment is read by every later check of the repository, of
// every ticket: a file any local user may write would let one change what those checks
// run, and a set-ID program left there runs as whoever owns it.
func lockDown(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if m := fi.Mode(); m&(0o022|fs.ModeSetuid|fs.ModeSetgid) != 0 {
			return os.Chmod(p, m.Perm()&^0o022|m&fs.ModeSticky)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("take write for others and set-ID bits from the environment %s: %w", dir, err)
	}
	return nil
}

func hashString(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:8]
}

// Cached is one environment found in the cache.
type Cached struct {
	Repo    string    `json:"repo"` // the folder name (RepoDir)
	Key     string    `json:"key"`
	Dir     string    `json:"dir"`
	BuiltAt time.Time `json:"built_at"`
	UsedAt  time.Time `json:"used_at"`
	Took    float64   `json:"took_s"`
	// Unfinished is set for a build that did not end (no marker): never used.
	Unfinished bool `json:"unfinished,omitempty"`
}

// List returns the environments under root, by repository then newest use first.
func List(root string) ([]Cached, error) {
	repos, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list environments in %s: %w", root, err)
	}
	var out []Cached
	for _, r := range repos {
		if !r.IsDir() {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, r.Name()))
		if err != nil {
			return nil, fmt.Errorf("list environments in %s: %w", root, err)
		}
		var these []Cached
		for _, e := range entries {
			if !e.IsDir() || strings.HasSuffix(e.Name(), ".src") {
				continue
			}
			dir := filepath.Join(root, r.Name(), e.Name())
			c := Cached{Repo: r.Name(), Key: e.Name(), Dir: dir}
			if m, ok := readMarker(dir); ok {
				c.BuiltAt, c.UsedAt, c.Took = m.BuiltAt, m.UsedAt, float64(m.TookMS)/1000
			} else {
				c.Unfinished = true
				if fi, err := e.Info(); err == nil {
					c.UsedAt = fi.ModTime()
				}
			}
			these = append(these, c)
		}
		slices.SortStableFunc(these, func(a, b Cached) int { return b.UsedAt.Compare(a.UsedAt) })
		out = append(out, these...)
	}
	return out, nil
}

// Prune removes the environments under root that no night will use again: every one not
// used within olderThan, except the latest used of each repository in repos (its current
// one, however long it sat idle), and unfinished builds older than olderThan. It returns
// the folders it removed.
func Prune(root string, repos []string, olderThan time.Duration, now time.Time) ([]string, error) {
	all, err := List(root)
	if err != nil {
		return nil, err
	}
	current := map[string]bool{}
	for _, r := range repos {
		current[RepoDir(r)] = true
	}
	kept := map[string]bool{}
	var removed []string
	var errs []error
	for _, c := range all {
		latest := !c.Unfinished && current[c.Repo] && !kept[c.Repo]
		if latest {
			kept[c.Repo] = true
			continue
		}
		if now.Sub(c.UsedAt) < olderThan {
			continue
		}
		if err := removeEnv(c.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, c.Dir)
	}
	return removed, errors.Join(errs...)
}
