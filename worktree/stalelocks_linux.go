package worktree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// process is what RemoveStaleLocks needs of one process of the machine: its open files, and
// for a git process where it works.
type process struct {
	pid  int
	comm string
	fds  []string // the targets of its descriptors
	// For a git process: its working directory and the git directories its environment
	// names, or why they cannot be read.
	cwd     string
	gitDirs []string
	hidden  error
}

// processes is a snapshot of the machine's processes from /proc.
type processes []process

// scanProcesses reads every process of /proc but this one. A process that ends meanwhile
// is left out; one whose descriptors cannot be read (another user's, as a user) holds
// nothing as far as this scan knows: it can make no lock in a repository it cannot write.
func scanProcesses() (processes, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list the processes in /proc: %w", err)
	}
	self := os.Getpid()
	var ps processes
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || zombie(dir) {
			continue // ended: a zombie holds no file and runs nothing
		}
		p := process{pid: pid, comm: strings.TrimSpace(string(comm))}
		if fds, err := os.ReadDir(filepath.Join(dir, "fd")); err == nil {
			for _, fd := range fds {
				if target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil {
					p.fds = append(p.fds, target)
				}
			}
		}
		if p.comm == "git" || strings.HasPrefix(p.comm, "git-") {
			if !p.readGitPlaces(dir) {
				continue // ended
			}
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// readGitPlaces reads where the git process at dir (/proc/<pid>) works; false when it ended.
func (p *process) readGitPlaces(dir string) bool {
	cwd, err := os.Readlink(filepath.Join(dir, "cwd"))
	if ended(err) {
		return false
	}
	if err != nil {
		p.hidden = err
		return true
	}
	p.cwd = cwd
	env, err := os.ReadFile(filepath.Join(dir, "environ"))
	if ended(err) {
		return false
	}
	if err != nil {
		p.hidden = err
		return true
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		for _, name := range []string{"GIT_DIR=", "GIT_COMMON_DIR=", "GIT_WORK_TREE="} {
			if v, ok := strings.CutPrefix(kv, name); ok && filepath.IsAbs(v) {
				p.gitDirs = append(p.gitDirs, filepath.Clean(v))
			}
		}
	}
	return true
}

// ended says whether err, reading a file of /proc/<pid>, means the process ended.
func ended(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// zombie says whether the process at dir (/proc/<pid>) has exited and waits to be reaped.
func zombie(dir string) bool {
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || len(stat) < i+3 || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// holder names the process that holds path open ("" when none does).
func (ps processes) holder(path string) string {
	if p, ok := ps.holderOf(path); ok {
		return fmt.Sprintf("process %d (%s)", p.pid, p.comm)
	}
	return ""
}

// holderOf returns a process that holds path open.
func (ps processes) holderOf(path string) (process, bool) {
	names := []string{path}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		names = append(names, filepath.Join(dir, filepath.Base(path)))
	}
	for _, p := range ps {
		for _, fd := range p.fds {
			if slices.Contains(names, fd) {
				return p, true
			}
		}
	}
	return process{}, false
}

// gitIn says which git process runs in one of places (or may: one whose working directory
// cannot be read), "" when none does.
func (ps processes) gitIn(places []string) string {
	for _, p := range ps {
		if p.hidden != nil {
			return fmt.Sprintf("a git process (pid %d) runs whose working directory ticketd cannot read (%v): it may be working in this repository", p.pid, p.hidden)
		}
		for _, place := range places {
			if p.cwd != "" && within(p.cwd, place) {
				return fmt.Sprintf("a git process (pid %d, %s) runs in %s", p.pid, p.comm, p.cwd)
			}
			for _, d := range p.gitDirs {
				if within(d, place) {
					return fmt.Sprintf("a git process (pid %d, %s) works on %s", p.pid, p.comm, d)
				}
			}
		}
	}
	return ""
}
