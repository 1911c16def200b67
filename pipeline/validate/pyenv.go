package validate

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// A check whose command starts with python3 (or python, python3.12) where a pyenv shim comes
// first on PATH runs the shim: a bash script that runs pyenv, which reads the repository's
// .python-version, asks which interpreter that is and runs its hooks — about twenty bash,
// readlink and pyenv processes before Python starts, on every run of every check. The
// answer only changes with what pyenv reads, so the runner asks the shim once (in the
// check's own sandbox, with the check's environment and working directory, so the answer
// is what the check would get) and then runs the interpreter it names directly, with the
// environment pyenv exec would have given it (its PATH with the version's bin folder first,
// PYENV_VERSION). The answer is kept per key: the shim, the check's environment, the
// working directory and every .python-version pyenv could read from it, pyenv's global
// version file and the installed versions. A .python-version the maker writes is a new key
// and a new ask.

// shimNames are the commands resolved: a Python interpreter, whose pyenv shim does nothing
// but pick the version and exec it.
var shimNames = regexp.MustCompile(`^python[0-9.]*$`)

// shimProbeTimeout bounds the one run that asks a shim which interpreter it would run.
const shimProbeTimeout = 30 * time.Second

// shimProbe prints the interpreter pyenv ran and the environment it ran it with, NUL
// separated. -I: nothing of the working directory (the worktree) is imported, and no
// PYTHON* variable is read.
const shimProbe = `import os, sys; sys.stdout.write(sys.executable + "\0" + "\0".join(k + "=" + v for k, v in os.environ.items()))`

// shimAnswer is what a shim ran: the interpreter and its whole environment. ok is false
// when the ask failed: the check runs the shim, as it would have.
type shimAnswer struct {
	exe string
	env []string
	ok  bool
}

// shimMemo keeps the answers of one runner (a night). The zero value is ready.
type shimMemo struct {
	mu      sync.Mutex
	answers map[[sha256.Size]byte]shimAnswer
	asks    map[[sha256.Size]byte]*sync.Mutex // one ask per key at a time
}

// maxShimAnswers bounds a runner's memo; past it, it starts again.
const maxShimAnswers = 256

func (m *shimMemo) keyLock(key [sha256.Size]byte) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.asks == nil {
		m.asks = map[[sha256.Size]byte]*sync.Mutex{}
	}
	l, ok := m.asks[key]
	if !ok {
		l = &sync.Mutex{}
		m.asks[key] = l
	}
	return l
}

func (m *shimMemo) get(key [sha256.Size]byte) (shimAnswer, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.answers[key]
	return a, ok
}

func (m *shimMemo) put(key [sha256.Size]byte, a shimAnswer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answers == nil || len(m.answers) >= maxShimAnswers {
		m.answers = map[[sha256.Size]byte]shimAnswer{}
		m.asks = nil
	}
	m.answers[key] = a
}

// pyenvShim is the pyenv shim argv[0] runs under env (PATH looked up as the sandbox's
// execvp does), or "" when it runs none or one this runner does not resolve.
func pyenvShim(argv0 string, env []string) string {
	root := sandbox.PyenvRoot(env)
	if root == "" || !shimNames.MatchString(filepath.Base(argv0)) {
		return ""
	}
	prog := argv0
	if !strings.ContainsRune(prog, '/') {
		prog = sandbox.LookPath(prog, sandbox.Getenv(env, "PATH"))
	}
	if prog == "" || filepath.Dir(prog) != filepath.Join(root, "shims") {
		return ""
	}
	return prog
}

// shimKey digests everything the shim's answer depends on: the shim itself, the check's
// environment (PYENV_VERSION, PATH), the working directory and the .python-version files
// pyenv looks for from it up to the root, pyenv's global version file, and the installed
// versions. ok is false when one of them cannot be read: the check then runs the shim.
func shimKey(shim, dir string, env []string) (key [sha256.Size]byte, ok bool) {
	h := sha256.New()
	field := func(name string, data []byte, present bool) {
		fmt.Fprintf(h, "%s\x00%t\x00%d\x00", name, present, len(data))
		h.Write(data)
	}
	sorted := slices.Clone(env)
	slices.Sort(sorted)
	field("env", []byte(strings.Join(sorted, "\x00")), true)
	field("dir", []byte(dir), true)
	root := sandbox.PyenvRoot(env)
	files := []string{shim, filepath.Join(root, "version")}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		files = append(files, filepath.Join(d, ".python-version"))
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, p := range files {
		data, present, err := readSmallFile(p)
		if err != nil {
			return key, false
		}
		field(p, data, present)
	}
	versions, err := os.ReadDir(filepath.Join(root, "versions"))
	if err != nil && !os.IsNotExist(err) {
		return key, false
	}
	for _, v := range versions {
		field("version", []byte(v.Name()), true)
	}
	copy(key[:], h.Sum(nil))
	return key, true
}

// maxShimInput bounds a file shimKey reads.
const maxShimInput = 64 << 10

// readSmallFile reads p: present false when there is none; an error when it cannot be
// read whole (a folder, a FIFO, a large file).
func readSmallFile(p string) ([]byte, bool, error) {
	fi, err := os.Stat(p)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxShimInput {
		return nil, false, fmt.Errorf("%s is not a small regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxShimInput+1))
	if err != nil || len(data) > maxShimInput {
		return nil, false, fmt.Errorf("read %s: %v", p, err)
	}
	return data, true, nil
}

// unshim returns argv and the environment to run it with when argv[0] is a pyenv shim of
// Python: the interpreter the shim would run, with the environment it would run it in,
// asked once per key (see shimKey) in the check's own sandbox. Anything else, or an ask
// that failed, comes back unchanged: the check runs as it would have.
func (r *Runner) unshim(ctx context.Context, spec sandbox.Spec, scratch *sandbox.Scratch, argv []string) ([]string, []string) {
	if len(argv) == 0 {
		return argv, spec.Env
	}
	shim := pyenvShim(argv[0], spec.Env)
	if shim == "" {
		return argv, spec.Env
	}
	key, ok := shimKey(shim, spec.Dir, spec.Env)
	if !ok {
		return argv, spec.Env
	}
	lock := r.shims.keyLock(key)
	lock.Lock()
	defer lock.Unlock()
	a, found := r.shims.get(key)
	if !found {
		a = r.askShim(ctx, spec, scratch, shim)
		if ctx.Err() != nil {
			return argv, spec.Env // cut short: says nothing of the shim
		}
		r.shims.put(key, a)
	}
	if !a.ok {
		return argv, spec.Env
	}
	return append([]string{a.exe}, argv[1:]...), slices.Clone(a.env)
}

// askShim runs the shim once in the check's sandbox and reads what it ran.
func (r *Runner) askShim(ctx context.Context, spec sandbox.Spec, scratch *sandbox.Scratch, shim string) shimAnswer {
	out, err := r.exec(ctx, spec, scratch, []string{shim, "-I", "-c", shimProbe}, shimProbeTimeout, true)
	if err != nil || out.exitCode != 0 {
		r.logger().Debug("pyenv shim not resolved: the check runs it", "shim", shim, "exit", out.exitCode, "err", err)
		return shimAnswer{}
	}
	parts := strings.Split(out.stdout.String(), "\x00")
	exe := parts[0]
	if !filepath.IsAbs(exe) || pyenvShim(exe, spec.Env) != "" || within(exe, spec.Dir) {
		// An interpreter in the worktree would be the repository's file: the check runs the
		// shim, which picks it there, in the sandbox, as before.
		return shimAnswer{}
	}
	var env []string
	for _, kv := range parts[1:] {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" {
			env = append(env, kv)
		}
	}
	if sandbox.Getenv(env, "PATH") == "" {
		return shimAnswer{}
	}
	return shimAnswer{exe: exe, env: env, ok: true}
}

// within reports whether p lies in dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
