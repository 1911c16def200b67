package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// InnerGitDir is where a check's git view (Spec.GitView) appears under bwrap.
const InnerGitDir = "/run/ticketd-git"

// A check sees its worktree's git state only through a view made for it: a git directory
// holding HEAD (its own branch and commit), its own branch ref, a copy of its index and the
// shallow list, with the repository's object store bound read-only at objects. Nothing else
// of the clone: no config (remote URLs with tokens, http.extraheader), no other branch or
// tag (other tickets' work), no other worktree, no logs or hooks. The real git directories
// are hidden. Without a view a check sees an empty .git, and git there says so.

// The entries of a git view folder on the host.
const (
	gitViewDir  = "git"     // the git directory, seen as InnerGitDir
	gitViewLink = "gitfile" // the worktree's .git file, pointing at InnerGitDir
)

// GitView writes the git view of the worktree at dir beside the scratch folder (so Remove
// and RemoveLeftovers remove it too) and returns its path, for Spec.GitView. It fails when
// dir's git state cannot be read (no HEAD, an unborn branch, a format it does not know);
// the check then runs without git.
func (s *Scratch) GitView(dir string) (string, error) {
	dest := s.Dir + "-git"
	if err := writeGitView(dir, dest); err != nil {
		os.RemoveAll(dest)
		return "", err
	}
	return dest, nil
}

// writeGitView makes the view of the worktree at dir in dest.
func writeGitView(dir, dest string) error {
	gitdir, common, err := gitDirs(dir)
	if err != nil {
		return err
	}
	head, err := os.ReadFile(filepath.Join(gitdir, "HEAD"))
	if err != nil {
		return fmt.Errorf("git view of %s: %w", dir, err)
	}
	ref, symbolic := strings.CutPrefix(strings.TrimSpace(string(head)), "ref:")
	ref = strings.TrimSpace(ref)
	hash := ref
	if symbolic {
		if !strings.HasPrefix(ref, "refs/heads/") || strings.Contains(ref, "..") {
			return fmt.Errorf("git view of %s: HEAD names %q, not a branch", dir, ref)
		}
		if hash, err = resolveRef(common, ref); err != nil {
			return fmt.Errorf("git view of %s: %w", dir, err)
		}
	}
	if !isHash(hash) {
		return fmt.Errorf("git view of %s: HEAD is %q, not a commit id", dir, hash)
	}
	g := filepath.Join(dest, gitViewDir)
	for _, d := range []string{"objects", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(g, d), 0o755); err != nil {
			return fmt.Errorf("git view of %s: %w", dir, err)
		}
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
	if len(hash) == 64 {
		config = "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n\tobjectformat = sha256\n"
	}
	files := map[string]string{"config": config, "HEAD": hash + "\n"}
	if symbolic {
		files["HEAD"] = "ref: " + ref + "\n"
		files[filepath.FromSlash(ref)] = hash + "\n"
		if err := os.MkdirAll(filepath.Dir(filepath.Join(g, filepath.FromSlash(ref))), 0o755); err != nil {
			return fmt.Errorf("git view of %s: %w", dir, err)
		}
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(g, name), []byte(text), 0o644); err != nil {
			return fmt.Errorf("git view of %s: %w", dir, err)
		}
	}
	for src, name := range map[string]string{filepath.Join(gitdir, "index"): "index", filepath.Join(common, "shallow"): "shallow"} {
		if err := copyRegular(src, filepath.Join(g, name)); err != nil {
			return fmt.Errorf("git view of %s: %w", dir, err)
		}
	}
	return os.WriteFile(filepath.Join(dest, gitViewLink), []byte("gitdir: "+InnerGitDir+"\n"), 0o644)
}

// gitDirs returns the worktree's own git directory and the repository's common one (the same
// for a clone).
func gitDirs(dir string) (gitdir, common string, err error) {
	paths := GitPaths(dir)
	switch len(paths) {
	case 0:
		return "", "", fmt.Errorf("git view of %s: no .git", dir)
	case 1:
		fi, err := os.Lstat(paths[0])
		if err != nil || !fi.IsDir() {
			return "", "", fmt.Errorf("git view of %s: .git is neither a folder nor a gitdir file", dir)
		}
		return paths[0], paths[0], nil
	case 2:
		return paths[1], paths[1], nil
	}
	return paths[1], paths[2], nil
}

// resolveRef finds ref's commit id: its loose file in the common git directory, else its
// line in packed-refs.
func resolveRef(common, ref string) (string, error) {
	if data, err := os.ReadFile(filepath.Join(common, filepath.FromSlash(ref))); err == nil {
		return strings.TrimSpace(string(data)), nil
	}
	f, err := os.Open(filepath.Join(common, "packed-refs"))
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", ref, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if hash, name, ok := strings.Cut(sc.Text(), " "); ok && name == ref {
			return hash, nil
		}
	}
	return "", fmt.Errorf("resolve %s: not in %s (an unborn branch?)", ref, common)
}

func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// copyRegular copies src to dst when src is a regular file; a missing src is no error.
func copyRegular(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// gitMounts are the mounts of the worktree's git metadata: the real git directories hidden,
// and in their place the view (when the spec has one) or an empty .git.
func (s Spec) gitMounts(add func(kind int, p string, required bool) error, ms *[]mount) error {
	paths := GitPaths(s.Dir)
	if len(paths) == 0 {
		return nil
	}
	dotgit := paths[0]
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return nil
	}
	isDir := fi.IsDir()
	for _, p := range paths[1:] {
		if err := add(mountHide, p, false); err != nil {
			return err
		}
	}
	_, common, derr := gitDirs(s.Dir)
	view := s.GitView
	if view != "" && derr == nil {
		objects := filepath.Join(common, "objects")
		if isDir {
			*ms = append(*ms, mount{kind: mountRO, src: filepath.Join(view, gitViewDir), dst: dotgit},
				mount{kind: mountRO, src: objects, dst: filepath.Join(dotgit, "objects")})
			return nil
		}
		*ms = append(*ms, mount{kind: mountRO, src: filepath.Join(view, gitViewLink), dst: dotgit, isFile: true},
			mount{kind: mountRO, src: filepath.Join(view, gitViewDir), dst: InnerGitDir},
			mount{kind: mountRO, src: objects, dst: InnerGitDir + "/objects"})
		return nil
	}
	if isDir {
		*ms = append(*ms, mount{kind: mountHide, dst: dotgit})
		return nil
	}
	*ms = append(*ms, mount{kind: mountHide, dst: dotgit, isFile: true})
	return nil
}
