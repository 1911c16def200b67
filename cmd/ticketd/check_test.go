package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestCheck: ticketd check looks at what a night needs without running one: a good config
// passes every item (the endpoints answer the night's preflight) and leaves no database
// behind; a broken one names each problem (a repository path that is no git repository, an
// intake folder that is missing, an endpoint that does not answer) and exits 1; a config
// with several mistakes reports them all.
func TestCheck(t *testing.T) {
	f := newRunFixture(t, "@daily")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"check", "--config", f.config}, &out, &errb); code != exitOK {
		t.Fatalf("check of a good config: exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"ok    store", "ok    repos.app", "ok    models (preflight)", "a night can run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(f.db); !os.IsNotExist(err) {
		t.Errorf("check made the database (%v)", err)
	}

	cfg, _ := os.ReadFile(f.config)
	broken := strings.NewReplacer("path: app\n", "path: nowhere\n", "path: issues}", "path: missing-issues}").Replace(string(cfg))
	broken = baseURLRe.ReplaceAllString(broken, `base_url: "http://127.0.0.1:9/v1"`)
	bad := filepath.Join(f.dir, "broken.yaml")
	if err := os.WriteFile(bad, []byte(broken+"  preflight_wait: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"check", "--config", bad}, &out, &errb); code != exitFailed {
		t.Fatalf("check of a broken config: exit %d, want %d\n%s", code, exitFailed, out.String())
	}
	for _, want := range []string{"FAIL  repos.app", "not a git repository", "FAIL  intake[0]", "FAIL  models (preflight)", "item(s) would fail a night"} {
		if !strings.Contains(out.String()+errb.String(), want) {
			t.Errorf("check output lacks %q:\n%s%s", want, out.String(), errb.String())
		}
	}

	mistakes := filepath.Join(f.dir, "mistakes.yaml")
	if err := os.WriteFile(mistakes, []byte(strings.Replace(string(cfg), "night: {", "night: {max_attempts: 99, max_rescues: 0, ", 1)+"log: {format: xml}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	run(context.Background(), []string{"check", "--config", mistakes}, &out, &errb)
	for _, want := range []string{"night.max_attempts", "night.max_rescues", "log.format"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("check of a config with three mistakes lacks %q:\n%s", want, errb.String())
		}
	}
}

// TestRefusesForeignDatabase: store.path naming another program's SQLite file is refused,
// as ticketctl refuses it: ticketd adds no table to it.
func TestRefusesForeignDatabase(t *testing.T) {
	f := newRunFixture(t, "@daily")
	db, err := sql.Open("sqlite", "file:"+f.db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"once", "--config", f.config}, &out, &errb)
	if code != exitFailed || !strings.Contains(errb.String(), store.ErrNotTicketd.Error()) {
		t.Errorf("once on another program's database: exit %d, %q; want 1 naming it not ticketd's", code, errb.String())
	}
	db, _ = sql.Open("sqlite", "file:"+f.db+"?mode=ro")
	defer db.Close()
	var tables int
	db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&tables)
	if tables != 1 {
		t.Errorf("the foreign database has %d tables now; want its own one", tables)
	}
}

// TestSIGHUPIsIgnored: a hangup (a closed terminal, a stray kill -HUP) no longer kills
// ticketd without a word: it is logged and ignored, and the night goes on to its end.
func TestSIGHUPIsIgnored(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary")
	}
	bin := buildTicketd(t)
	f := newNightFixture(t, 1, 300*time.Millisecond, `{workers: 1, lease: 30s, heartbeat: 1s, poll: 50ms}`)
	var logs syncBuffer
	cmd := exec.Command(bin, "once", "--config", f.config, "--log-format", "json")
	cmd.Dir = f.dir
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for len(f.tickets(t)) == 0 || f.modelCalls(t, 1) == 0 {
		select {
		case err := <-done:
			t.Fatalf("the night ended (%v) before its attempt ran:\n%s", err, tail([]byte(logs.String()), 30))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ticketd ended with %v after SIGHUP:\n%s", err, tail([]byte(logs.String()), 20))
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the night did not end within 3 minutes")
	}
	if !strings.Contains(logs.String(), "SIGHUP received: ignored") {
		t.Errorf("the log does not say the hangup was ignored:\n%s", tail([]byte(logs.String()), 20))
	}
	if tk, ok := f.ticket(t, 1); !ok || tk.State != store.StateDone {
		t.Errorf("ticket 1: %s (%s); want done, the night undisturbed", tk.State, tk.Reason)
	}
}
