package daemon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// TestLockInstance: a second ticketd on the same workspace, or on the same database with a
// workspace of its own, refuses to start naming the first one's pid; once the first lets go
// the second starts.
func TestLockInstance(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Config{Workspace: filepath.Join(dir, "work"), Store: config.Store{Path: filepath.Join(dir, "db", "ticketd.db")}}
	release, err := LockInstance(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())
	otherWorkspace := cfg
	otherWorkspace.Workspace = filepath.Join(dir, "work2")
	otherDB := cfg
	otherDB.Store.Path = filepath.Join(dir, "other.db")
	for _, c := range []struct {
		name string
		cfg  config.Config
		what string
	}{{"same workspace and database", cfg, "workspace"}, {"same database", otherWorkspace, "database"}, {"same workspace", otherDB, "workspace"}} {
		_, err := LockInstance(c.cfg)
		if !errors.Is(err, ErrAnotherInstance) || !strings.Contains(err.Error(), "pid "+pid) || !strings.Contains(err.Error(), c.what) {
			t.Errorf("%s: LockInstance = %v, want ErrAnotherInstance naming the %s and pid %s", c.name, err, c.what, pid)
		}
	}
	release()
	again, err := LockInstance(cfg)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

// TestLockInstanceSharedStore: nodes on one PostgreSQL store lock only their workspaces (the
// database is shared by design), and no lock file lands beside a store path they do not have.
func TestLockInstanceSharedStore(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	node := func(name string) config.Config {
		return config.Config{Workspace: filepath.Join(dir, name, "work"), Store: config.Store{URLEnv: "TICKETD_DB_URL"}}
	}
	a, err := LockInstance(node("vm-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a()
	b, err := LockInstance(node("vm-b"))
	if err != nil {
		t.Fatalf("a second node on the shared store: %v; want it to start", err)
	}
	defer b()
	if _, err := LockInstance(node("vm-a")); !errors.Is(err, ErrAnotherInstance) || !strings.Contains(err.Error(), "workspace") {
		t.Errorf("a second ticketd on vm-a's workspace: %v; want ErrAnotherInstance naming the workspace", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the working directory holds %v; want only the two nodes' folders", names)
	}
}

// TestLockDatabaseFollowsTheFile: a second ticketd reaching the same SQLite file through a
// symbolic link or a hard link (another path, another lock file beside it) is refused: the
// lock is on the file's identity. Before, it started, deleted the first one's live branches
// and took over its running tickets.
func TestLockDatabaseFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "ticketd.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{Workspace: filepath.Join(dir, "work"), Store: config.Store{Path: db}}
	release, err := LockDatabase(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	sym, hard := filepath.Join(dir, "sym.db"), filepath.Join(dir, "hard.db")
	if err := os.Symlink(db, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(db, hard); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{sym, hard} {
		other := config.Config{Workspace: filepath.Join(dir, "work-"+filepath.Base(path)), Store: config.Store{Path: path}}
		if r, err := LockInstance(other); err != nil {
			t.Fatalf("the path locks of %s: %v (they cannot see the link)", filepath.Base(path), err)
		} else {
			defer r()
		}
		_, err := LockDatabase(other)
		if !errors.Is(err, ErrAnotherInstance) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
			t.Errorf("a second ticketd on %s: %v; want ErrAnotherInstance naming pid %d", filepath.Base(path), err, os.Getpid())
		}
	}
}

// endedPID is the pid of a process that has ended and been reaped.
func endedPID(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(cmd.Process.Pid)
}

// TestLockInstanceOutlivesTheHoldersForks: a SIGKILLed ticketd's locks stay held, for
// milliseconds after its parent saw it end, by the processes it had forked that had not yet
// run their programs (each holds a copy of the lock's descriptor). A ticketd started in
// that moment (cmd/ticketd's TestKillsBlameNoTicket once, at load 19) was refused as
// another instance. Now, while the pid in the lock has ended, the lock is tried again until
// it is free, within a bound; a live holder is refused at once, and a lock an ended
// ticketd's leftover keeps for good is named as such. Here the test holds each lock on a
// descriptor of its own (the fork's copy) and writes an ended pid in it.
func TestLockInstanceOutlivesTheHoldersForks(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Config{Workspace: filepath.Join(dir, "work"), Store: config.Store{Path: filepath.Join(dir, "ticketd.db")}}
	if err := os.MkdirAll(cfg.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Store.Path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := endedPID(t)
	// hold takes path's lock as a dead ticketd's fork would hold it, naming ended.
	hold := func(path string) func() {
		t.Helper()
		release, err := lockFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(ended+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return release
	}
	for _, lock := range []struct {
		name string
		path string
		take func(Clock) (func(), error)
	}{
		{"workspace", filepath.Join(cfg.Workspace, instanceLockName), func(c Clock) (func(), error) { return LockInstance(cfg, c) }},
		{"database path", cfg.Store.Path + ".lock", func(c Clock) (func(), error) { return LockInstance(cfg, c) }},
	} {
		t.Run(lock.name, func(t *testing.T) {
			// The fork lets go while the new ticketd waits: it starts.
			forkCopy := hold(lock.path)
			t.Cleanup(func() { forkCopy() }) // when the test fails before it lets go
			clk := clocktest.New(time.Now())
			type result struct {
				release func()
				err     error
			}
			got := make(chan result, 1)
			go func() {
				r, err := lock.take(clk)
				got <- result{r, err}
			}()
			var early *result
			clocktest.WaitFor(t, time.Minute, "LockInstance waits for the ended holder's lock", func() bool {
				select {
				case r := <-got:
					early = &r
					return true
				default:
					return len(clk.Waits()) > 0
				}
			})
			if early != nil {
				t.Fatalf("LockInstance answered without waiting for the ended holder's fork to let go: %v", early.err)
			}
			forkCopy()
			clk.Advance(holderGonePoll)
			r := <-got
			if r.err != nil {
				t.Fatalf("LockInstance once the ended holder's fork let go: %v", r.err)
			}
			r.release()

			// The fork never lets go: refused after the bound, naming what holds it.
			defer hold(lock.path)()
			auto := clocktest.New(time.Now()).AutoAdvance(0)
			_, err := lock.take(auto)
			if !errors.Is(err, ErrAnotherInstance) || !strings.Contains(err.Error(), "pid "+ended+", which has ended, left behind") {
				t.Errorf("LockInstance with the lock kept by an ended holder's leftover: %v; want ErrAnotherInstance saying pid %s ended and left it behind", err, ended)
			}
			var waited time.Duration
			for _, w := range auto.Waits() {
				waited += w
			}
			if waited < holderGoneWait {
				t.Errorf("waited %v before refusing; want %v", waited, holderGoneWait)
			}
		})
	}
	t.Run("database file", func(t *testing.T) {
		// The database file's lock names its holder from /proc/locks, where an ended
		// holder's flock stays under its pid: the test's own lock here names this (live)
		// process, so only the refusal at once is checked.
		release, err := LockDatabase(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		clk := clocktest.New(time.Now()).AutoAdvance(0)
		if _, err := LockDatabase(cfg, clk); !errors.Is(err, ErrAnotherInstance) || len(clk.Waits()) != 0 {
			t.Errorf("LockDatabase with a live holder: %v after %d waits; want ErrAnotherInstance at once", err, len(clk.Waits()))
		}
	})
	t.Run("live holder", func(t *testing.T) {
		release, err := LockInstance(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		clk := clocktest.New(time.Now()).AutoAdvance(0)
		if _, err := LockInstance(cfg, clk); !errors.Is(err, ErrAnotherInstance) || !strings.Contains(err.Error(), "in use by ticketd pid "+strconv.Itoa(os.Getpid())) || len(clk.Waits()) != 0 {
			t.Errorf("LockInstance with a live holder: %v after %d waits; want ErrAnotherInstance naming pid %d at once", err, len(clk.Waits()), os.Getpid())
		}
	})
}
