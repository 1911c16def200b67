package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Spec describes one sandboxed command: what it may write, what it may not see, and its
// whole environment. Paths must be absolute; missing ones are skipped, except Dir.
//
// Under bwrap the command sees only what it needs: the system (SystemPaths, with the
// entries of /etc that are not world-readable hidden), the programs its PATH, its pyenv and
// its own argv[0] live in, ReadOnly, the worktree (Dir, writable, its git metadata
// read-only), Reports (writable), a private /proc, a minimal read-only /dev with a small
// private /dev/shm, and a private /tmp holding $HOME, both size-limited tmpfs. Nothing else
// of the host exists there: no /run, /var, /home or /root, so no unix socket on the host's
// disk either. /proc is read-only, and the kernel interfaces Docker protects in it masked
// where Docker masks them. It has no capability, and it is never root on the host: as root, ticketd runs it as
// Spec.User (see Probe).
type Spec struct {
	// Mode is ModeBwrap (the default) or ModeNone.
	Mode Mode
	// Bwrap is the bubblewrap binary; empty means bwrap on PATH.
	Bwrap string
	// Dir is the worktree: writable and the working directory.
	Dir string
	// Reports is a host directory the command may write reports into (pytest's JUnit XML),
	// seen as InnerReports under bwrap; NewScratch makes one. Under ModeNone, which has no
	// private /tmp, it is also TMPDIR and holds HOME. Empty means none.
	Reports string
	// TmpSize bounds the private /tmp (with $HOME) under bwrap; 0 means DefaultTmpSize,
	// negative no bound. The memory limit bounds it too (its files are memory).
	TmpSize int64
	// Hide are directories covered by an empty tmpfs where they lie inside something the
	// command sees (the daemon's config folder under /etc, the workspace around the
	// worktree, a home holding a tool path). A file is covered by /dev/null.
	Hide []string
	// ReadOnly are further paths bound read-only: the worktree's git metadata is always
	// added (GitPaths), so code under test can neither repoint nor reconfigure git; the
	// config's sandbox_paths go here too.
	ReadOnly []string
	// Writable are further paths bound writable (rarely needed: Dir and Reports already are).
	Writable []string
	// Env is the complete environment; nothing of the daemon's is inherited. Build it with
	// Env.
	Env []string
	// User is the host identity the command runs as when ticketd runs as root (zero:
	// Nobody); the worktree is made group-writable for it. Unused otherwise: the command is
	// then the daemon's own user.
	User Identity
	// GitView is a git view of Dir made by Scratch.GitView; empty means the command sees no
	// git state at all (an empty .git). The real git directories are hidden either way.
	GitView string
	// Network keeps the host's network namespace: only a repository's environment setup
	// with setup.network gets it (to download its dependencies); a check never does.
	Network bool
	// Limits bound the memory and the processes of the command under bwrap (see Limits);
	// the zero value means the defaults. ModeNone sets none.
	Limits Limits
}

// Sizes and places of the private file systems under bwrap.
const (
	// DefaultTmpSize bounds a private /tmp (with $HOME) whose Spec.TmpSize is 0.
	DefaultTmpSize int64 = 1 << 30
	// ShmSize bounds the private /dev/shm: shared memory for a test's multiprocessing, not
	// a place to store files.
	ShmSize int64 = 64 << 20
	// InnerReports is where Spec.Reports appears under bwrap.
	InnerReports = "/run/ticketd"
)

// SystemPaths are the parts of the host every sandboxed command sees read-only: the
// distribution's programs, libraries and configuration. A symlink among them (/bin ->
// usr/bin on a merged /usr) is recreated as the same symlink.
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// InnerTmp is the path the command sees as its temporary directory: "/tmp" under bwrap, the
// host Reports directory under ModeNone.
func (s Spec) InnerTmp() string {
	if s.Mode.orDefault() == ModeNone {
		if s.Reports != "" {
			return s.Reports
		}
		return os.TempDir()
	}
	return "/tmp"
}

// InnerReports is where the command writes reports the caller reads back: InnerReports
// under bwrap, the host directory itself under ModeNone.
func (s Spec) InnerReports() string {
	if s.Mode.orDefault() == ModeNone {
		return s.Reports
	}
	return InnerReports
}

// env completes Env with TMPDIR and HOME pointing into the private temporary directory.
func (s Spec) env() []string {
	env := slices.Clone(s.Env)
	if s.Reports == "" && s.Mode.orDefault() == ModeNone {
		return env
	}
	tmp := s.InnerTmp()
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, "HOME=")
	})
	env = append(env, "TMPDIR="+tmp, "HOME="+tmp+"/home")
	if s.GitView != "" && s.Mode.orDefault() == ModeBwrap && os.Geteuid() == 0 {
		// As root the worktree belongs to host root, not to the check's user: git would call
		// it dubious. Command-scope config (the only scope git takes safe.directory from
		// besides the system's and the user's) trusts this one worktree, whose git state is
		// the view's.
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0="+s.Dir)
	}
	return env
}

// Command returns the command that runs argv under the spec. The caller sets Stdout, Stderr
// and Cancel and runs it; Stdin is the spec's and must stay so (empty: under bwrap, once the
// command has started, it also lets go of the descriptors handed to bwrap and sets the
// Limits on the sandbox before the command runs in it). Under bwrap the process is bwrap itself, started in its own process
// group and killed when the daemon's thread that started it dies; killing it kills the
// namespace's init and so every process of the command, setsid or not. Under ModeNone the
// command runs in its own process group with the same parent-death signal.
func (s Spec) Command(ctx context.Context, argv []string) (*exec.Cmd, error) {
	args, err := s.Args(argv)
	if err != nil {
		return nil, err
	}
	if err := closeInheritedOnExec(); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = s.env()
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would inherit the daemon's environment
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var ns *userNS
	if s.Mode.orDefault() == ModeBwrap && os.Geteuid() == 0 {
		if ns, err = s.asUser(ctx, cmd); err != nil {
			return nil, err
		}
	} else if s.Mode.orDefault() == ModeBwrap {
		if ns, err = newUserNamespace(ctx, Identity{UID: os.Geteuid(), GID: os.Getegid()}, s.Limits.PtyCount()); err != nil {
			return nil, err
		}
		cmd.ExtraFiles = []*os.File{ns.file}
	}
	if s.Mode.orDefault() == ModeBwrap {
		fail := func(err error, more ...*os.File) (*exec.Cmd, error) {
			ns.close()
			closeAll(append(cmd.ExtraFiles, more...))
			return nil, err
		}
		filter, err := seccompFile(ShmSegmentCap(os.Geteuid(), s.Limits.MemoryBytes()))
		if err != nil {
			return fail(err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, filter)
		infoR, infoW, blockR, blockW, err := limitPipes()
		if err != nil {
			return fail(err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, infoW, blockR)
		st := &starter{cmd: cmd, limits: s.Limits, info: infoR, block: blockW}
		euid := os.Geteuid()
		fd := func(f *os.File) int { return 3 + slices.Index(cmd.ExtraFiles, f) } // ExtraFiles start at 3
		if s.Limits.PtyCount() > 0 {
			readyR, readyW, err := os.Pipe()
			if err != nil {
				return fail(fmt.Errorf("sandbox: pipe for the sandbox's shell: %w", err), infoR, blockW)
			}
			goR, goW, err := os.Pipe()
			if err != nil {
				return fail(fmt.Errorf("sandbox: pipe for the sandbox's shell: %w", err), infoR, blockW, readyR, readyW)
			}
			cmd.ExtraFiles = append(cmd.ExtraFiles, readyW, goR)
			st.ptys = &ptyHandover{ns: ns, ready: readyR, goW: goW}
			if fd(readyW) != readyFD(euid) || fd(goR) != goFD(euid) {
				return fail(fmt.Errorf("sandbox: the sandbox's shell's descriptors would be %d and %d; it is told %d and %d",
					fd(readyW), fd(goR), readyFD(euid), goFD(euid)), infoR, blockW, readyR, goW)
			}
		}
		if fd(filter) != seccompFD(euid) || fd(infoW) != infoFD(euid) || fd(blockR) != blockFD(euid) {
			return fail(fmt.Errorf("sandbox: bwrap's descriptors would be seccomp %d, info %d, block %d; it is told %d, %d, %d",
				fd(filter), fd(infoW), fd(blockR), seccompFD(euid), infoFD(euid), blockFD(euid)), infoR, blockW)
		}
		st.handed = slices.Clone(cmd.ExtraFiles)
		cmd.Stdin = st
	}
	if s.Mode.orDefault() == ModeNone {
		cmd.Dir = s.Dir
		if s.Reports != "" {
			if err := os.MkdirAll(filepath.Join(s.Reports, "home"), 0o700); err != nil {
				return nil, fmt.Errorf("sandbox: create private home in %s: %w", s.Reports, err)
			}
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
	prog, err := s.findExecutable(argv[0])
	if err != nil {
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
	mounts, err := s.mounts(prog)
	if err != nil {
		return nil, err
	}
	args := append([]string{bwrap}, namespaceArgs(s.Network)...)
	args = append(args, userArgs(os.Geteuid(), s.User)...)
	args = append(args, "--seccomp", strconv.Itoa(seccompFD(os.Geteuid())))
	args = append(args, limitArgs(os.Geteuid())...)
	args = append(args, "--dev", "/dev", "--size", strconv.FormatInt(s.shmSize(), 10), "--tmpfs", "/dev/shm", "--remount-ro", "/dev")
	args = append(args, procArgs()...)
	for _, m := range mounts {
		args = append(args, m.args(s.tmpSize())...)
	}
	// The folders hiding something are empty tmpfs: read-only once everything below them is
	// mounted, so nothing can be stored there.
	for _, m := range mounts {
		if m.kind == mountHide && !m.isFile {
			args = append(args, "--remount-ro", m.dst)
		}
	}
	// The root bwrap builds is a tmpfs: read-only, so nothing can be stored outside the
	// size-limited places.
	args = append(args, "--remount-ro", "/", "--chdir", s.Dir, "--")
	args = append(args, sandboxShellArgs(os.Geteuid(), s.Limits.PtyCount() > 0)...)
	return append(args, argv...), nil
}

// closeUserNSArgs start the command through a shell that closes descriptor userNSFD first.
// bwrap joins the user namespace it is handed there (--userns) but
// never closes it, so every process of the check would inherit a descriptor of its own user
// namespace: it grants nothing /proc/self/ns/user does not (no setns into the namespace one
// is in, no NS_GET_PARENT beyond it), but a check holds no descriptor of ticketd's making.
// The shell execs the command in its place: same process, same argv.
func closeUserNSArgs(int) []string {
	return []string{"/bin/sh", "-c", `exec ` + strconv.Itoa(userNSFD) + `<&- "$0" "$@"`}
}

// tmpSize is the size of the private /tmp: TmpSize (its default for 0, none when
// negative), and never more than the memory limit. A tmpfs's files are memory in no
// process's Pss, so the watch of the check's whole memory does not see them: a /tmp larger
// than the limit would let a check under a 256 MiB limit hold 1 GiB of the host's memory
// there.
func (s Spec) tmpSize() int64 {
	size := s.TmpSize
	if size == 0 {
		size = DefaultTmpSize
	}
	if mem := s.Limits.MemoryBytes(); mem > 0 && (size < 0 || size > mem) {
		return mem
	}
	return size
}

// shmSize is the size of the private /dev/shm: ShmSize, never more than the memory limit
// (as tmpSize).
func (s Spec) shmSize() int64 {
	if mem := s.Limits.MemoryBytes(); mem > 0 {
		return min(ShmSize, mem)
	}
	return ShmSize
}

// userArgs put the command in a user namespace without any capability, whoever runs the
// daemon, and in which no further user namespace may be made, so no capability can be
// regained: the namespace newUserNamespace made (passed as fd userNSFD: Command puts it
// there), where the counts the kernel keeps per user (inotify, fanotify) are bounded. As a
// user the command is that user. As root it is id, a host user other than root: bwrap's own
// namespace would map the command to host root, whose files (sysctls among them) obey plain
// owner bits.
func userArgs(euid int, id Identity) []string {
	if euid != 0 {
		return []string{"--userns", strconv.Itoa(userNSFD), "--cap-drop", "ALL"}
	}
	id = id.orDefault()
	return []string{"--userns", strconv.Itoa(userNSFD), "--uid", strconv.Itoa(id.UID), "--gid", strconv.Itoa(id.GID), "--cap-drop", "ALL"}
}

// seccompFD is the descriptor bwrap reads the keyring filter (seccomp.go) from: the one
// after the user namespace in cmd.ExtraFiles, whoever runs ticketd.
func seccompFD(int) int { return userNSFD + 1 }

// userNSFD is the descriptor the checks' user namespace has in bwrap: the first of
// cmd.ExtraFiles.
const userNSFD = 3

// findExecutable checks that name exists as bwrap will look it up — on the sandbox's PATH
// when it has no slash — so a typo in the config is reported as such, not as a failing check.
// It returns the program's path on the host.
func (s Spec) findExecutable(name string) (string, error) {
	if strings.Contains(name, "/") {
		if fi, err := os.Stat(name); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("executable %s not found or not executable", name)
		}
		return name, nil
	}
	path := Getenv(s.Env, "PATH")
	if p := LookPath(name, path); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("executable %q not found on the sandbox's PATH %q", name, path)
}

// LookPath is the first executable regular file name in the absolute folders of path, as
// the sandbox's execvp finds a program without a slash (a relative folder would be
// resolved in the sandbox's working directory, which the host cannot see), or "".
func LookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// mount is one bwrap mount operation.
type mount struct {
	kind   int
	src    string
	dst    string
	isFile bool
}

const (
	mountSystem = iota // a system path: bound read-only, or a symlink recreated
	mountHide
	mountTmp
	mountRO
	mountRW
)

func (m mount) args(tmpSize int64) []string {
	switch m.kind {
	case mountSystem:
		if m.isFile { // a symlink: src is its target
			return []string{"--symlink", m.src, m.dst}
		}
		return []string{"--ro-bind", m.src, m.dst}
	case mountHide:
		if m.isFile {
			return []string{"--ro-bind", "/dev/null", m.dst}
		}
		return []string{"--tmpfs", m.dst}
	case mountTmp:
		var args []string
		if tmpSize > 0 {
			args = append(args, "--size", strconv.FormatInt(tmpSize, 10))
		}
		return append(args, "--tmpfs", m.dst, "--dir", m.dst+"/home")
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
func (s Spec) mounts(prog string) ([]mount, error) {
	mp := &mountPlan{ms: systemMounts(), seen: map[string]bool{}}
	if err := mp.addAll(mountHide, etcSecrets.list()); err != nil {
		return nil, err
	}
	mp.ms = append(mp.ms, mount{kind: mountTmp, dst: "/tmp"})
	if err := mp.addAll(mountHide, s.Hide); err != nil {
		return nil, err
	}
	if err := mp.addAll(mountRO, s.toolRoots(prog)); err != nil {
		return nil, err
	}
	if err := mp.addAll(mountRO, s.ReadOnly); err != nil {
		return nil, err
	}
	if err := mp.add(mountRW, s.Dir, true); err != nil {
		return nil, err
	}
	if s.Reports != "" {
		real, err := filepath.EvalSymlinks(s.Reports)
		if err != nil {
			return nil, fmt.Errorf("sandbox: reports directory: %w", err)
		}
		mp.ms = append(mp.ms, mount{kind: mountRW, src: real, dst: InnerReports})
	}
	if err := mp.addAll(mountRW, s.Writable); err != nil {
		return nil, err
	}
	if err := s.gitMounts(mp); err != nil {
		return nil, err
	}
	slices.SortStableFunc(mp.ms, func(a, b mount) int {
		if d := depth(a.dst) - depth(b.dst); d != 0 {
			return d
		}
		return a.kind - b.kind
	})
	return mp.ms, nil
}

// systemMounts are the SystemPaths present on this machine: directories bound read-only,
// symlinks (/bin -> usr/bin on merged-/usr systems) recreated as they are.
func systemMounts() []mount {
	var ms []mount
	for _, p := range SystemPaths {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			ms = append(ms, mount{kind: mountSystem, src: target, dst: p, isFile: true})
		case fi.IsDir():
			ms = append(ms, mount{kind: mountSystem, src: p, dst: p})
		}
	}
	return ms
}

// toolRoots are the folders of the tools and the program the command needs, less what the
// system paths show already and what the spec hides.
func (s Spec) toolRoots(prog string) []string {
	var out []string
	for _, p := range append(ToolPaths(s.Env), ProgramRoots(prog)...) {
		if underSystem(p) || slices.Contains(s.Hide, p) || p == "/" {
			continue
		}
		out = append(out, p)
	}
	return out
}

// mountPlan collects the mounts of one command, each path resolved and added once per kind.
type mountPlan struct {
	ms   []mount
	seen map[string]bool // kind + destination
}

// addAll adds paths that may be absent (nothing to hide or expose then).
func (mp *mountPlan) addAll(kind int, paths []string) error {
	for _, p := range paths {
		if err := mp.add(kind, p, false); err != nil {
			return err
		}
	}
	return nil
}

// add resolves p and adds a mount of kind for it; an absent p is an error only when
// required. A read-only path given through a symlink (a PATH entry) is mounted under both
// names, since the command finds it under either.
func (mp *mountPlan) add(kind int, p string, required bool) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("sandbox: path %q is not absolute", p)
	}
	real, fi, err := resolve(p)
	if err != nil {
		if required {
			return fmt.Errorf("sandbox: %w", err)
		}
		return nil // absent: nothing to hide or expose
	}
	if real == "/" {
		return fmt.Errorf("sandbox: refusing to hide or bind / (from %q)", p)
	}
	for _, dst := range []string{real, filepath.Clean(p)} {
		key := strconv.Itoa(kind) + dst
		if mp.seen[key] || kind == mountRO && dst != real && underSystem(dst) {
			continue
		}
		mp.seen[key] = true
		mp.ms = append(mp.ms, mount{kind: kind, src: real, dst: dst, isFile: !fi.IsDir()})
		if kind != mountRO {
			break
		}
	}
	return nil
}

// resolve is p with its symlinks followed, and what it is.
func resolve(p string) (string, fs.FileInfo, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	return real, fi, nil
}

// underSystem reports whether p (cleaned, absolute) lies in one of SystemPaths, which every
// command sees already.
func underSystem(p string) bool {
	p = filepath.Clean(p)
	for _, sys := range SystemPaths {
		if p == sys || strings.HasPrefix(p, sys+"/") {
			return true
		}
	}
	return false
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

// ToolPaths returns the directories a command's tools live in, outside the system paths: each
// absolute PATH entry of env, the pyenv root (PyenvRoot), whose shims and interpreters a
// Python project's tests run, and VIRTUAL_ENV. The sandbox binds them read-only.
func ToolPaths(env []string) []string {
	var out []string
	add := func(p string) {
		if p = filepath.Clean(p); filepath.IsAbs(p) && p != "/" && !underSystem(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range filepath.SplitList(Getenv(env, "PATH")) {
		if filepath.IsAbs(p) {
			add(p)
		}
	}
	if root := PyenvRoot(env); root != "" {
		add(root)
	}
	if venv := Getenv(env, "VIRTUAL_ENV"); filepath.IsAbs(venv) {
		add(venv)
	}
	return out
}

// ProgramRoots returns what must be visible for prog (a host path) to run: its folder, or
// for an interpreter in a virtualenv or an installed prefix (<prefix>/bin/python with
// <prefix>/lib beside it) that whole prefix, for prog and for what its symlinks lead to
// (a virtualenv's python is a link to a pyenv or system interpreter).
func ProgramRoots(prog string) []string {
	if !filepath.IsAbs(prog) {
		return nil
	}
	var out []string
	for _, p := range []string{prog, evalSymlinks(prog)} {
		dir := filepath.Dir(p)
		root := dir
		if parent := filepath.Dir(dir); filepath.Base(dir) == "bin" && parent != "/" {
			if exists(filepath.Join(parent, "pyvenv.cfg")) || exists(filepath.Join(parent, "lib")) {
				root = parent
			}
		}
		if root != "/" && !underSystem(root) && !slices.Contains(out, root) {
			out = append(out, root)
		}
	}
	return out
}

func evalSymlinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// PyenvRoot is the pyenv root of env: PYENV_ROOT, else the .pyenv directory a PATH entry
// (its shims) lies in, else "". Inside the sandbox $HOME is private, so pyenv's default
// ($HOME/.pyenv) would be wrong: the caller passes PYENV_ROOT explicitly.
func PyenvRoot(env []string) string {
	if root := Getenv(env, "PYENV_ROOT"); filepath.IsAbs(root) {
		return filepath.Clean(root)
	}
	for _, p := range filepath.SplitList(Getenv(env, "PATH")) {
		if i := strings.Index(p, "/.pyenv/"); i >= 0 && filepath.IsAbs(p) {
			return p[:i+len("/.pyenv")]
		}
	}
	return ""
}

// Getenv is the value of name in env, the last one when repeated (as the sandboxed
// command's getenv sees it), or "".
func Getenv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest
		}
	}
	return v
}
