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
