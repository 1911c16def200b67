package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Spec describes one sandboxed command: what it may write, what it may not see, and its
// whole environment. Paths must be absolute; missing ones are skipped, except Dir.
type Spec struct {
	// Mode is ModeBwrap (the default) or ModeNone.
	Mode Mode
	// Bwrap is the bubblewrap binary; empty means bwrap on PATH.
	Bwrap string
	// Dir is the worktree: writable and the working directory.
	Dir string
	// Tmp is a host directory seen as /tmp inside the sandbox (and exported as TMPDIR with
	// HOME=$TMPDIR/home in both modes), so that what the command leaves there is on disk, counted
	// and removed with it; NewScratch makes one. Empty means an in-memory tmpfs under bwrap and
	// no TMPDIR/HOME override under ModeNone.
	Tmp string
	// Hide are directories covered by an empty tmpfs: the daemon's database, results,
	// workspace, config and home. A file is covered by /dev/null.
	Hide []string
	// ReadOnly are paths bound read-only over everything else: tools under a hidden
	// directory (a pyenv root under the hidden home) and the worktree's git metadata
	// (GitPaths), so code under test can neither repoint nor reconfigure git.
	ReadOnly []string
	// Writable are further paths bound writable (rarely needed: Dir and Tmp already are).
	Writable []string
	// Env is the complete environment; nothing of the daemon's is inherited. Build it with
	// Env.
	Env []string
}

// InnerTmp is the path the command sees as its temporary directory: "/tmp" under bwrap, the
// host Tmp under ModeNone.
func (s Spec) InnerTmp() string {
	if s.Mode.orDefault() == ModeNone {
		if s.Tmp != "" {
			return s.Tmp
		}
		return os.TempDir()
	}
	return "/tmp"
}

// env completes Env with TMPDIR and HOME pointing into the private temporary directory.
func (s Spec) env() []string {
	env := slices.Clone(s.Env)
	if s.Tmp == "" && s.Mode.orDefault() == ModeNone {
		return env
	}
	tmp := s.InnerTmp()
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, "HOME=")
	})
	return append(env, "TMPDIR="+tmp, "HOME="+tmp+"/home")
}

// Command returns the command that runs argv under the spec. The caller sets Stdout, Stderr
// and Cancel and runs it. Under bwrap the process is bwrap itself, started in its own process
// group and killed when the daemon's thread that started it dies; killing it kills the
// namespace's init and so every process of the command, setsid or not. Under ModeNone the
// command runs in its own process group with the same parent-death signal.
func (s Spec) Command(ctx context.Context, argv []string) (*exec.Cmd, error) {
	args, err := s.Args(argv)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = s.env()
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would inherit the daemon's environment
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.Mode.orDefault() == ModeNone {
		cmd.Dir = s.Dir
	}
	if s.Tmp != "" {
		if err := os.MkdirAll(filepath.Join(s.Tmp, "home"), 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: create private home in %s: %w", s.Tmp, err)
		}
	}
	return cmd, nil
}

// Args returns the full argv that runs argv under the spec: argv itself under ModeNone, a
// bwrap command line otherwise. No environment value appears in it (a process inside can read
// its init's command line).
func (s Spec) Args(argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	if err := s.Mode.Valid(); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(s.Dir) {
		return nil, fmt.Errorf("sandbox: working directory %q is not absolute", s.Dir)
	}
	if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox: working directory %s is not a directory (%v)", s.Dir, err)
	}
	if err := s.findExecutable(argv[0]); err != nil {
		return nil, err
	}
	if s.Mode.orDefault() == ModeNone {
		return slices.Clone(argv), nil
	}
	bwrap := s.Bwrap
	if bwrap == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, fmt.Errorf("%w: bwrap is not on PATH; %s", ErrUnavailable, InstallHint)
		}
		bwrap = p
	}
	mounts, err := s.mounts()
	if err != nil {
		return nil, err
	}
	args := append([]string{bwrap}, namespaceArgs()...)
	args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	for _, m := range mounts {
		args = append(args, m.args()...)
	}
	args = append(args, "--chdir", s.Dir, "--")
	return append(args, argv...), nil
}

// findExecutable checks that name exists as bwrap will look it up — on the sandbox's PATH
// when it has no slash — so a typo in the config is reported as such, not as a failing check.
func (s Spec) findExecutable(name string) error {
	if strings.Contains(name, "/") {
		if fi, err := os.Stat(name); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("executable %s not found or not executable", name)
		}
		return nil
	}
	var path string
	for _, kv := range s.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return nil
		}
	}
	return fmt.Errorf("executable %q not found on the sandbox's PATH %q", name, path)
}

// mount is one bwrap mount operation on top of the read-only root.
type mount struct {
	kind   int // mountHide, mountRO, mountRW, mountTmp
	src    string
	dst    string
	isFile bool
}

const (
	mountHide = iota
	mountTmp
	mountRO
	mountRW
	mountProtect // read-only inside a writable bind (the worktree's .git)
)

func (m mount) args() []string {
	switch m.kind {
	case mountHide:
		if m.isFile {
			return []string{"--ro-bind", "/dev/null", m.dst}
		}
		return []string{"--tmpfs", m.dst}
	case mountTmp:
		if m.src == "" {
			return []string{"--tmpfs", m.dst}
		}
		return []string{"--bind", m.src, m.dst}
	case mountRW:
		return []string{"--bind", m.src, m.dst}
	default:
		return []string{"--ro-bind", m.src, m.dst}
	}
}

// depth is the number of path elements; mounts are applied parents first, so a path bound
// below a hidden directory (the worktree in the hidden workspace, a pyenv root in the hidden
// home) shows through, and .git inside the writable worktree stays read-only.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// mounts resolves every path (symlinks included, so the mount lands where the kernel will look)
// and orders the operations parents first; at equal depth, hiding comes before exposing.
func (s Spec) mounts() ([]mount, error) {
	var ms []mount
	add := func(kind int, p string, required bool) error {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("sandbox: path %q is not absolute", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			if required {
				return fmt.Errorf("sandbox: %w", err)
			}
			return nil // absent: nothing to hide or expose
		}
		fi, err := os.Stat(real)
		if err != nil {
			if required {
				return fmt.Errorf("sandbox: %w", err)
			}
			return nil
		}
		if real == "/" {
			return fmt.Errorf("sandbox: refusing to hide or rebind / (from %q)", p)
		}
		ms = append(ms, mount{kind: kind, src: real, dst: real, isFile: !fi.IsDir()})
		return nil
	}
	tmp := mount{kind: mountTmp, dst: "/tmp"}
	if s.Tmp != "" {
		real, err := filepath.EvalSymlinks(s.Tmp)
		if err != nil {
			return nil, fmt.Errorf("sandbox: private tmp: %w", err)
		}
		tmp.src = real
	}
	ms = append(ms, tmp)
	for _, p := range s.Hide {
		if err := add(mountHide, p, false); err != nil {
			return nil, err
		}
	}
	for _, p := range s.ReadOnly {
		if err := add(mountRO, p, false); err != nil {
			return nil, err
		}
	}
	if err := add(mountRW, s.Dir, true); err != nil {
		return nil, err
	}
	for _, p := range s.Writable {
		if err := add(mountRW, p, false); err != nil {
			return nil, err
		}
	}
	for _, p := range GitPaths(s.Dir) {
		if err := add(mountProtect, p, false); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(ms, func(a, b mount) int {
		if d := depth(a.dst) - depth(b.dst); d != 0 {
			return d
		}
		return a.kind - b.kind
	})
	return ms, nil
}

// GitPaths returns the git metadata a worktree at dir depends on: dir/.git (a file in a linked
// worktree, a directory in a clone), the worktree's private git directory and the repository's
// common git directory. Bound read-only, they keep code under test from repointing the
// worktree at another repository or adding core.fsmonitor, filters or hooks that ticketd's own
// git would later run.
func GitPaths(dir string) []string {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return nil
	}
	paths := []string{dotgit}
	if fi.IsDir() || !fi.Mode().IsRegular() {
		return paths
	}
	data, err := os.ReadFile(dotgit)
	if err != nil {
		return paths
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return paths
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	gitdir = filepath.Clean(gitdir)
	paths = append(paths, gitdir)
	if common, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		c := strings.TrimSpace(string(common))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitdir, c)
		}
		paths = append(paths, filepath.Clean(c))
	}
	return paths
}

// ToolPaths returns what must show through hidden directories for commands to find their
// tools: each PATH entry of env that lies under one of hidden (~/.local/bin, ~/go/bin under the
// hidden home), and the pyenv root (PyenvRoot), whose shims and interpreters a Python
// project's tests run. They are bound read-only.
func ToolPaths(env []string, hidden []string) []string {
	// under reports p strictly below a hidden directory: a PATH entry that is the hidden
	// directory itself (PATH=$HOME:...) must not undo the hiding.
	under := func(p string) bool {
		p = filepath.Clean(p)
		for _, h := range hidden {
			if h != "" && p != filepath.Clean(h) && strings.HasPrefix(p, strings.TrimSuffix(filepath.Clean(h), "/")+"/") {
				return true
			}
		}
		return false
	}
	var out []string
	for _, p := range filepath.SplitList(lookup(env, "PATH")) {
		if filepath.IsAbs(p) && under(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if root := PyenvRoot(env); root != "" && under(root) {
		out = append(out, root)
	}
	return out
}

// PyenvRoot is the pyenv root of env: PYENV_ROOT, else the .pyenv directory a PATH entry
// (its shims) lies in, else "". Inside the sandbox $HOME is private, so pyenv's default
// ($HOME/.pyenv) would be wrong: the caller passes PYENV_ROOT explicitly.
func PyenvRoot(env []string) string {
	if root := lookup(env, "PYENV_ROOT"); filepath.IsAbs(root) {
		return filepath.Clean(root)
	}
	for _, p := range filepath.SplitList(lookup(env, "PATH")) {
		if i := strings.Index(p, "/.pyenv/"); i >= 0 && filepath.IsAbs(p) {
			return p[:i+len("/.pyenv")]
		}
	}
	return ""
}

// lookup returns the value of name in env, the last one when repeated.
func lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest
		}
	}
	return v
}
