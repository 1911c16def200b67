package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
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
