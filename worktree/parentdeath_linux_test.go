package worktree

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gitChildArg makes the test binary act as a ticketd that runs git (runGitChild), for the
// tests that SIGKILL it.
const gitChildArg = "ticketd-test-git-child"

func init() {
	if len(os.Args) >= 4 && os.Args[1] == gitChildArg {
		os.Exit(runGitChild(os.Args[2:]))
	}
}

// runGitChild runs ticketd's git on the repository args[1] as args[0] says: "fifo" hashes
// the blob it reads from the named pipe args[2] into the repository (git waits for a
// writer); "refs" creates and deletes a branch under refs/heads/ticketd/ in a loop, saying
// "ready" once the first pair is done, until it is killed.
func runGitChild(args []string) int {
	ctx := context.Background()
	repo, err := openRepo(ctx, args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch args[0] {
	case "fifo":
		if _, err := repo.git(ctx, nil, "hash-object", "-w", args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "refs":
		for i := 0; ; i++ {
			ref := fmt.Sprintf("%s%d-loop", OwnRefs, i%3)
			repo.git(ctx, nil, "update-ref", ref, "HEAD")
			repo.git(ctx, nil, "update-ref", "-d", ref)
			if i == 0 {
				fmt.Println("ready")
			}
		}
	}
	fmt.Fprintln(os.Stderr, "unknown mode", args[0])
	return 2
}

// startGitChild starts the test binary as runGitChild with args.
func startGitChild(t *testing.T, stdout io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{gitChildArg}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// processGone says whether pid has exited (a zombie no one reaped counts as exited).
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(after, "Z") || strings.HasPrefix(after, "X")
}

// TestLocalGitOutlivesTicketd: ticketd is SIGKILLed while its git works on the repository.
// The git (here `hash-object -w`, waiting for its input on a named pipe) must finish its
// work rather than die with ticketd: git makes its first lock file before it installs the
// handler that removes it on a signal, so a git told to die at a random moment can leave
// refs/heads/ticketd/<branch>.lock, which refuses every later update of that branch (and
// paused TestSIGKILLNight's repository). Before, every git got SIGTERM when ticketd died.
func TestLocalGitOutlivesTicketd(t *testing.T) {
	repo := newRepo(t, true)
	fifo := filepath.Join(t.TempDir(), "blob")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	child := startGitChild(t, io.Discard, "fifo", repo, fifo)
	// git opens the pipe to read it: opening it to write without blocking works from then.
	var w *os.File
	waitUntil(t, "ticketd's git opens the pipe", func() bool {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		w = f
		return err == nil
	})
	var gitProc process
	waitUntil(t, "the git process holds the pipe", func() bool {
		procs, err := scanProcesses()
		if err != nil {
			t.Fatal(err)
		}
		p, ok := procs.holderOf(fifo)
		gitProc = p
		return ok && p.comm == "git"
	})
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	// ticketd is gone: a git that outlived it reads this and writes the blob.
	const content = "written after ticketd died\n"
	_, werr := w.Write([]byte(content))
	w.Close()
	waitUntil(t, "the git process ends", func() bool { return processGone(gitProc.pid) })
	cmd := exec.Command("git", "hash-object", "--stdin")
	cmd.Dir = repo
	cmd.Stdin = strings.NewReader(content)
	id, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	check := exec.Command("git", "cat-file", "-e", strings.TrimSpace(string(id)))
	check.Dir = repo
	if err := check.Run(); err != nil {
		t.Errorf("the blob git was writing when ticketd died is not in the repository (cat-file: %v; write to git: %v): git died with ticketd", err, werr)
	}
}

// TestKilledTicketdLeavesNoRefLock is the reproduction of TestSIGKILLNight's stale lock: a
// ticketd that updates refs/heads/ticketd/* in a loop is SIGKILLed at random moments, and
// after each kill, once no git runs in the repository, no lock file may be left there.
// TICKETD_TEST_LOCK_KILLS sets the number of kills (default 25; with every git told to die
// with ticketd, 1000 kills left 1 to 3 locks on an idle 2-core machine: see the report).
func TestKilledTicketdLeavesNoRefLock(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a process many times")
	}
	kills := 25
	if n, err := strconv.Atoi(os.Getenv("TICKETD_TEST_LOCK_KILLS")); err == nil && n > 0 {
		kills = n
	}
	repo := newRepo(t, true)
	dirs, err := openRepo(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	places := []string{repo, dirs.WorkTree, dirs.CommonDir}
	rng := rand.New(rand.NewPCG(3, 7))
	var left []string
	for k := range kills {
		r, w := io.Pipe()
		child := startGitChild(t, w, "refs", repo)
		line, err := bufio.NewReader(r).ReadString('\n')
		if err != nil || line != "ready\n" {
			t.Fatalf("kill %d: the git loop said %q (%v)", k, line, err)
		}
		go io.Copy(io.Discard, r)
		// The pause is the test's input: a kill at a random moment of the loop.
		time.Sleep(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
		if err := child.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		child.Wait()
		w.Close()
		busy := ""
		waitUntil(t, "no git runs in the repository", func() bool {
			ps, err := scanProcesses()
			if err != nil {
				t.Fatal(err)
			}
			if b := ps.gitIn(places); b != busy {
				busy = b
				if b != "" {
					t.Logf("kill %d: %s", k, b)
				}
			}
			return busy == ""
		})
		locks, err := ownLockFiles(dirs.CommonDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range locks {
			left = append(left, fmt.Sprintf("kill %d: %s", k, filepath.Base(l)))
			os.Remove(l)
		}
	}
	t.Logf("%d kills, %d lock files left", kills, len(left))
	if len(left) > 0 {
		t.Errorf("git left lock files in ticketd's branches after ticketd was killed:\n%s", strings.Join(left, "\n"))
	}
}
