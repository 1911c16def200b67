package validate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// TestSizeLimitCannotBeHidden: the ways issue 19 found to store more than max_worktree_size
// unseen — a directory made unreadable (0300) to the watcher, a file deleted while held open,
// /dev/shm, the private $HOME, and (issue 31) a memfd — each stop the check with the size reason, under bwrap and
// (where the place exists on the host's disk) without it; so do thousands of empty files,
// which take inodes but no block. A sparse file, which takes no disk, does not.
func TestSizeLimitCannotBeHidden(t *testing.T) {
	requireBwrap(t)
	const fill = "head -c 3000000 /dev/zero"
	tests := []struct {
		name   string
		script string
		modes  []sandbox.Mode
		abort  bool
	}{
		{"unreadable directory", "mkdir d; " + fill + " > d/big; chmod 0300 d; sleep 20", sandbox.Modes, true},
		{"deleted file held open", "exec 3>big; rm big; " + fill + " >&3; sleep 20", sandbox.Modes, true},
		{"dev shm", fill + " > /dev/shm/big; sleep 20", []sandbox.Mode{sandbox.ModeBwrap}, true},
		{"home", fill + " > $HOME/big; sleep 20", sandbox.Modes, true},
		// Issue 31: a memfd is tmpfs pages in no folder and, unmapped, in no process's RSS.
		{"memfd", `python3 -c "import os, time; f = os.memfd_create('x'); os.write(f, b'0' * 3000000); time.sleep(20)"`, sandbox.Modes, true},
		{"sparse file", "truncate -s 100M sparse; sleep 1", sandbox.Modes, false},
		// Empty files take no block: thousands of them used up inodes unseen.
		{"empty files", "mkdir e; cd e; for i in $(seq 2000); do : > f$i; done; sleep 20", sandbox.Modes, true},
		{"empty files in /tmp", "mkdir /tmp/e; cd /tmp/e; for i in $(seq 2000); do : > f$i; done; sleep 20", []sandbox.Mode{sandbox.ModeBwrap}, true},
	}
	for _, tt := range tests {
		for _, mode := range tt.modes {
			t.Run(tt.name+"/"+string(mode), func(t *testing.T) {
				dir := t.TempDir()
				t.Cleanup(func() { os.Chmod(filepath.Join(dir, "d"), 0o700) })
				r := Runner{Sandbox: mode, MaxWorktreeSize: 2 << 20, SizePoll: 20 * time.Millisecond, ScratchRoot: t.TempDir()}
				res := r.Run(context.Background(), dir, []Check{{Name: "hide", Kind: KindCommand, Command: []string{"sh", "-c", tt.script}, Timeout: time.Minute}})[0]
				t.Logf("uid %d: passed=%v abort=%q duration=%s output=%q", os.Geteuid(), res.Passed, res.Abort, res.Duration, res.Output)
				if (res.Abort != "") != tt.abort {
					t.Fatalf("abort=%q, want abort=%v (summary %q)", res.Abort, tt.abort, res.Summary)
				}
				if tt.abort && res.Duration > 15*time.Second {
					t.Errorf("the check was not stopped before its own end: %s", res.Duration)
				}
			})
		}
	}
}

// TestHostileJUnitReport: a conftest.py that swaps pytest's JUnit report at exit for a FIFO
// or a symlink to /dev/zero neither blocks nor exhausts the daemon: the check ends at once,
// not passed, saying the report was not a file.
func TestHostileJUnitReport(t *testing.T) {
	requireBwrap(t)
	requirePytest(t)
	for _, swap := range []string{"os.mkfifo(p)", `os.symlink("/dev/zero", p)`} {
		for _, mode := range sandbox.Modes {
			t.Run(swap+"/"+string(mode), func(t *testing.T) {
				dir := t.TempDir()
				pyTest(t, dir, "test_ok.py", "def test_ok():\n    pass\n")
				pyTest(t, dir, "conftest.py", "import os\n\n\ndef pytest_unconfigure(config):\n    p = config.option.xmlpath\n    if p:\n        os.remove(p)\n        "+swap+"\n")
				r := Runner{Sandbox: mode}
				done := make(chan Result, 1)
				go func() {
					done <- r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute}})[0]
				}()
				var res Result
				select {
				case res = <-done:
				case <-time.After(2 * time.Minute): // the hang itself is the failure
					t.Fatal("the runner blocked on the check's report")
				}
				t.Logf("passed=%v summary=%q", res.Passed, res.Summary)
				if res.Passed || !strings.Contains(res.Summary, sandbox.ErrReportNotFile.Error()) {
					t.Errorf("passed=%v summary=%q; want a failure saying the report was not a file\n%s", res.Passed, res.Summary, res.Output)
				}
			})
		}
	}
}

// TestOtherTicketsHomeUnreachable: while one ticket's check keeps a secret in its $HOME,
// another ticket's check, run at the same time with the scratch root outside /tmp (TMPDIR
// elsewhere, as issue 19's probe had it), finds it nowhere; without the sandbox it does.
func TestOtherTicketsHomeUnreachable(t *testing.T) {
	requireBwrap(t)
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			scratchRoot := t.TempDir() // stands for a TMPDIR outside /tmp; in bwrap's view, absent
			r := Runner{Sandbox: m.mode, ScratchRoot: scratchRoot}
			a, b := t.TempDir(), t.TempDir()
			holding := make(chan Result, 1)
			go func() {
				holding <- r.Run(context.Background(), a, []Check{{Name: "holder", Kind: KindCommand, Timeout: time.Minute,
					// It keeps its $HOME until the peek is over (the test touches "release"),
					// not for a time a loaded machine could outlast.
					Command: []string{"sh", "-c", "echo ticket-a-secret > $HOME/token; touch ready; while [ ! -e release ]; do sleep 0.05; done"}}})[0]
			}()
			clocktest.WaitFor(t, 2*time.Minute, "the first check started", func() bool {
				_, err := os.Stat(filepath.Join(a, "ready"))
				return err == nil
			})
			res := r.Run(context.Background(), b, []Check{{Name: "peek", Kind: KindCommand, Timeout: time.Minute,
				Command: []string{"sh", "-c", "grep -rl ticket-a-secret " + scratchRoot + " /tmp/ticketd-scratch-* /var/tmp/ticketd-scratch-* 2>/dev/null | grep -q . && echo FOUND; true"}}})[0]
			if err := os.WriteFile(filepath.Join(a, "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if held := <-holding; held.TimedOut || !held.Passed {
				t.Fatalf("mode %s: the holder did not keep its $HOME through the peek: %+v", m.mode, held)
			}
			found := strings.Contains(res.Output, "FOUND")
			t.Logf("mode %s: found=%v output=%q", m.mode, found, res.Output)
			if found == m.isolated {
				t.Errorf("mode %s: another ticket's $HOME found=%v, want %v", m.mode, found, !m.isolated)
			}
		})
	}
}

// TestDeepFoldersStopTheCheck: a chain of thousands of nested folders (milliseconds of
// mkdir, a few megabytes) made each look of the size watch take minutes when every folder
// was opened by its path from the top, leaving the check free to write anything in the
// meantime. Folders nested deeper than any project's count as over the limit at once.
func TestDeepFoldersStopTheCheck(t *testing.T) {
	requireBwrap(t)
	script := `python3 -c "import os, time
for _ in range(3000):
    os.mkdir('d'); os.chdir('d')
time.sleep(20)"`
	for _, mode := range sandbox.Modes {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			r := Runner{Sandbox: mode, SizePoll: 20 * time.Millisecond, ScratchRoot: t.TempDir()}
			res := r.Run(context.Background(), dir, []Check{{Name: "deep", Kind: KindCommand, Command: []string{"sh", "-c", script}, Timeout: time.Minute}})[0]
			t.Logf("uid %d: passed=%v abort=%q duration=%s output=%q", os.Geteuid(), res.Passed, res.Abort, res.Duration, res.Output)
			if !strings.Contains(res.Abort, "nested folders more than") {
				t.Fatalf("a check nesting 3000 folders was not stopped for it: %q", res.Summary)
			}
			if res.Duration > 15*time.Second {
				t.Errorf("the check was not stopped before its own end: %s", res.Duration)
			}
		})
	}
}

// TestWhatACheckLeavesIsLookedAt: what a check writes just before it ends is seen by one
// last look of the size watch: a burst past the limit, and a tree of long folder names whose
// paths pass 4096 bytes (git's status cannot see into it, so nothing would undo what the
// check stored there, for the next check and the next ticket to read). The poll is an hour:
// only the looks as the check starts and ends can see them.
func TestWhatACheckLeavesIsLookedAt(t *testing.T) {
	requireBwrap(t)
	tests := []struct {
		name, script, want string
	}{
		{"a burst before the end", "sleep 0.5; head -c 3000000 /dev/zero > big", "grew past its size limit"},
		{"a path git cannot see", `sleep 0.5; python3 -c "import os
n = 'x' * 250
for _ in range(20):
    os.mkdir(n); os.chdir(n)
open('note', 'w').write('for the next check')"`, "a path of more than"},
	}
	for _, tt := range tests {
		for _, mode := range sandbox.Modes {
			t.Run(tt.name+"/"+string(mode), func(t *testing.T) {
				dir := t.TempDir()
				r := Runner{Sandbox: mode, MaxWorktreeSize: 2 << 20, SizePoll: time.Hour, ScratchRoot: t.TempDir()}
				res := r.Run(context.Background(), dir, []Check{{Name: "leave", Kind: KindCommand, Command: []string{"sh", "-c", tt.script}, Timeout: time.Minute}})[0]
				t.Logf("uid %d: passed=%v abort=%q output=%q", os.Geteuid(), res.Passed, res.Abort, res.Output)
				if res.Passed || !strings.Contains(res.Abort, tt.want) {
					t.Errorf("passed=%v abort=%q, want the attempt abandoned for %q", res.Passed, res.Abort, tt.want)
				}
			})
		}
	}
}
