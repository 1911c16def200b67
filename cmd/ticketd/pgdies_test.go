package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

// throwawayPostgres is a PostgreSQL server of one test's own, which the test may stop and
// start again (the shared test server cannot be stopped under the other tests).
type throwawayPostgres struct {
	url       string
	bin, data string
	port      int
	asServer  []string // the command prefix that runs a server program (runuser as root)
}

// newThrowawayPostgres initialises and starts a server in a temporary folder; it skips the
// test where PostgreSQL's server programs are not installed.
func newThrowawayPostgres(t *testing.T) *throwawayPostgres {
	t.Helper()
	bin := ""
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			bin = d
		}
	}
	if bin == "" {
		if p, err := exec.LookPath("initdb"); err == nil {
			bin = filepath.Dir(p)
		}
	}
	if bin == "" {
		testenv.Need(t, testenv.PostgreSQL, errors.New("no initdb on PATH or under /usr/lib/postgresql/*/bin: a server of the test's own cannot be started"))
	}
	p := &throwawayPostgres{bin: bin}
	dir, err := os.MkdirTemp("", "ticketd-pgdies-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 { // PostgreSQL refuses to run as root
		if out, err := exec.Command("chown", "postgres:", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot hand %s to the postgres user, so a server of the test's own cannot run as root: %v\n%s", dir, err, out)
		}
		p.asServer = []string{"runuser", "-u", "postgres", "--"}
	}
	p.data = filepath.Join(dir, "data")
	if out, err := p.server("initdb", "-D", p.data, "-U", "postgres", "--auth=trust", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	p.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
	p.start(t)
	t.Cleanup(func() { p.server("pg_ctl", "-D", p.data, "-m", "immediate", "-w", "stop").Run() })
	return p
}

func (p *throwawayPostgres) server(prog string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, p.asServer...), filepath.Join(p.bin, prog)), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func (p *throwawayPostgres) start(t *testing.T) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", p.port, filepath.Dir(p.data))
	if out, err := p.server("pg_ctl", "-D", p.data, "-l", filepath.Join(filepath.Dir(p.data), "server.log"), "-w", "-t", "60", "-o", opts, "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(filepath.Dir(p.data), "server.log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// die stops the server at once, as a crash or a machine going away would: no clean
// shutdown, every connection cut.
func (p *throwawayPostgres) die(t *testing.T) {
	t.Helper()
	if out, err := p.server("pg_ctl", "-D", p.data, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// TestPostgresDiesAtNightEnd: on PostgreSQL (a server of the test's own), the database
// dies as the night ends: every ticket is done and the night holds its fix's push for the
// whole suite, the remote taking it, when the server stops. The night must not hang, must
// fail its writes at once once one has waited out the write timeout, must tell the operator
// (ERROR in the log, a failing exit code, its last words naming the database and the end it
// could not record, a summary that does not count its done fix as none), and keep that end; once the server is back,
// the next start records the night as it ended (not as a process that died), charges no
// ticket a crash, and the fix is one commit, on the remote once.
func TestPostgresDiesAtNightEnd(t *testing.T) {
	t.Parallel() // a process, folder, database server and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary, runs nights and a PostgreSQL server of its own")
	}
	pg := newThrowawayPostgres(t)
	bin := buildTicketd(t)
	c := newChaosNight(t, "sqlite", 1)
	c.location = pg.url
	c.env = append(c.env, "TICKETD_DB_URL="+pg.url)
	cfg, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "store: {path: ticketd.db}\n", "store: {url_env: TICKETD_DB_URL}\nnode: solo\n", 1)
	text = strings.Replace(text, "max_attempts: 3,", "max_attempts: 3, window: 20s, grace: 5s,", 1)
	if err := os.WriteFile(c.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c.fileMore(t, 1)
	if err := os.WriteFile(c.hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, done := c.startOnce(t, bin)
	// The end: the ticket is done and its push is held at the remote.
	deadline := time.Now().Add(3 * time.Minute) // only keeps a broken daemon from hanging the test
	for {
		list := c.summaries(t)
		_, err := os.Stat(c.arrived)
		if err == nil && len(list) == 1 && list[0].State == store.StateDone {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("ticketd once ended (%v) before its night's end\n%s", err, c.log(30))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no night's end with its push held within 3 minutes\n%s", c.log(30))
		}
	}
	pg.die(t)
	os.Remove(c.hold) // the remote takes the push; the database is gone
	var exit *exec.ExitError
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("ticketd once still runs 3 minutes after its database died (window 20s, grace 5s)\n%s", c.log(30))
	}
	log, _ := os.ReadFile(filepath.Join(c.dir, "daemon.log"))
	t.Logf("ticketd once after its database died: %v\n%s", err, tail(log, 8))
	if !errors.As(err, &exit) || exit.ExitCode() == exitOK {
		t.Errorf("ticketd once exited %v after its database died at the night's end; want a failure", err)
	}
	if !strings.Contains(string(log), `"level":"ERROR"`) {
		t.Errorf("no ERROR line in the log of a night whose database died")
	}
	if words := "the night's end could not be recorded"; !strings.Contains(tail(log, 2), words) {
		t.Errorf("the night's end does not say %q:\n%s", words, tail(log, 2))
	}
	// Its writes after the first that gave up on the server are tried once each (they
	// waited the 30 s write timeout each in turn: the night ended a minute and a half late).
	if end := logLine(log, "record the night's end"); !strings.Contains(end, "has not answered since") {
		t.Errorf("the night's end was not failed at once, the database known gone by then:\n%s", end)
	}
	// Its summary does not say "0 done" of a night whose fix was done: its counts could not
	// be read.
	if summary := logLine(log, "night 1 partial:"); !strings.Contains(summary, "done and escalated unknown") {
		t.Errorf("the night's summary does not say its counts are unknown:\n%s", summary)
	}

	pg.start(t)
	os.Remove(c.arrived)
	n := c.runOnce(t, bin)
	if n.code != exitOK {
		t.Errorf("the night after the database is back: exit %d, %s (%s)\n%s", n.code, n.run.Outcome, n.run.Error, c.log(8))
	}
	var runs []store.Run
	c.look(t, func(s *store.Store) { runs, _ = s.Runs(t.Context(), 0) })
	if len(runs) != 2 || runs[1].Outcome == store.OutcomeOK || !strings.Contains(runs[1].Error, "could not be recorded") ||
		strings.Contains(runs[1].Error, store.ErrProcessEnded.Error()) {
		t.Errorf("nights %+v; want the first not ok, as it ended (its end not recorded), not a process that died", runs)
	}
	if left, _ := filepath.Glob(filepath.Join(c.workspace, "*.json")); len(left) > 0 {
		t.Errorf("the kept end is still in the workspace after the next start recorded it: %v", left)
	}
	for _, s := range c.summaries(t) {
		if s.State != store.StateDone || s.Attempts != 1 || s.Crashes != 0 {
			t.Errorf("ticket %d: %s with %d attempts, %d crashes (%s); want done with one, no crash", s.ID, s.State, s.Attempts, s.Crashes, s.Reason)
		}
		if out := strings.TrimSpace(gitOut(t, c.repo, "rev-list", "--count", "main.."+s.Branch)); out != "1" {
			t.Errorf("ticket %d's branch %s has %s commits over main; want one fix", s.ID, s.Branch, out)
		}
		if n := c.pushedTimes(t, s.Branch); n != 1 {
			t.Errorf("the remote updated %s %d times; want once", s.Branch, n)
		}
	}
	if wt := gitOut(t, c.repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left registered:\n%s", wt)
	}
	if left := processesUnder(c.dir); len(left) > 0 {
		t.Errorf("processes left under the night's folder: %v", left)
	}
}

// logLine is the first line of log holding words, or "" for none.
func logLine(log []byte, words string) string {
	for line := range strings.Lines(string(log)) {
		if strings.Contains(line, words) {
			return line
		}
	}
	return ""
}
