package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// eventsOf returns a ticket's events, read back through show --json.
func eventsOf(t *testing.T, db string, id int64) []store.Event {
	t.Helper()
	var got showJSON
	decode(t, ctl(t, "--db", db, "show", "--json", strconv.FormatInt(id, 10)), &got)
	return got.Events
}

func TestRequeueAndCancel(t *testing.T) {
	f := setup(t)
	t.Setenv("USER", "alice")
	id := func(v int64) string { return strconv.FormatInt(v, 10) }
	tests := []struct {
		name      string
		args      []string
		code      int
		want      changeJSON
		lastEvent store.EventKind
	}{
		{"requeue an escalated ticket", []string{"requeue", id(f.escalated), "--note", "look at the rounding"}, exitOK,
			changeJSON{ID: f.escalated, PreviousState: store.StateEscalated, State: store.StateQueued, NextAttempt: 2, AttemptLimit: 2}, "requeued"},
		{"force a running ticket back", []string{"requeue", "--force", id(f.running)}, exitOK,
			changeJSON{ID: f.running, PreviousState: store.StateRunning, State: store.StateQueued, NextAttempt: 2, AttemptLimit: 4}, "requeued"},
		{"cancel a queued ticket", []string{"cancel", id(f.queued), "--reason", "duplicate of #1"}, exitOK,
			changeJSON{ID: f.queued, PreviousState: store.StateQueued, State: store.StateCancelled}, "cancelled"},
		{"cancel it again is a no-op", []string{"cancel", id(f.queued)}, exitOK,
			changeJSON{ID: f.queued, PreviousState: store.StateCancelled, State: store.StateCancelled}, "cancelled"},
		{"a done ticket needs --done", []string{"requeue", id(f.done)}, exitRefused,
			changeJSON{}, "completed"},
		{"requeue a done ticket", []string{"requeue", "--done", id(f.done)}, exitOK,
			changeJSON{ID: f.done, PreviousState: store.StateDone, State: store.StateQueued, NextAttempt: 2, AttemptLimit: 4, KeptBranch: "ticketd/1-average"}, "requeued"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ctl(t, append([]string{"--db", f.db, "--json"}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("ticketctl %q: exit %d, want %d\n%s", tt.args, r.code, tt.code, r.stderr)
			}
			if tt.code != exitOK {
				mustContain(t, "stderr", r.stderr, "ticketctl requeue --done")
				if evs := eventsOf(t, f.db, f.done); evs[len(evs)-1].Kind != tt.lastEvent {
					t.Errorf("refused requeue changed the ticket's history: %v", evs[len(evs)-1])
				}
				return
			}
			var got changeJSON
			decode(t, r, &got)
			if got != tt.want {
				t.Errorf("ticketctl %q: got %+v, want %+v", tt.args, got, tt.want)
			}
			evs := eventsOf(t, f.db, tt.want.ID)
			last := evs[len(evs)-1]
			if last.Kind != tt.lastEvent || last.Actor != "ticketctl:alice" {
				t.Errorf("ticketctl %q: last event %s by %q, want %s by ticketctl:alice", tt.args, last.Kind, last.Actor, tt.lastEvent)
			}
		})
	}
	var tk showJSON
	decode(t, ctl(t, "--db", f.db, "show", "--json", id(f.escalated)), &tk)
	if tk.Ticket.Attempts != 1 || tk.Ticket.AttemptsBefore != 1 || len(tk.Requeues) != 1 || tk.Requeues[0].Note != "look at the rounding" {
		t.Errorf("requeued ticket: %d attempts (%d before), requeues %+v; want its attempt kept, numbering on, and the note", tk.Ticket.Attempts, tk.Ticket.AttemptsBefore, tk.Requeues)
	}
	decode(t, ctl(t, "--db", f.db, "show", "--json", id(f.queued)), &tk)
	if tk.Ticket.Reason != "duplicate of #1" {
		t.Errorf("cancelled ticket reason %q, want the --reason", tk.Ticket.Reason)
	}
}

func TestCancelRunningFlagsTheWorker(t *testing.T) {
	f := setup(t)
	r := ctl(t, "--db", f.db, "cancel", strconv.FormatInt(f.running, 10))
	if r.code != exitOK {
		t.Fatalf("cancel running: exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "cancel requested", "next heartbeat")
	var got showJSON
	decode(t, ctl(t, "--db", f.db, "show", "--json", strconv.FormatInt(f.running, 10)), &got)
	if got.Ticket.State != store.StateRunning || !got.Ticket.CancelRequested {
		t.Errorf("after cancel: state %s cancel_requested %v, want running with the flag set", got.Ticket.State, got.Ticket.CancelRequested)
	}
}

func TestAdd(t *testing.T) {
	f := setup(t)
	bodyFile := filepath.Join(t.TempDir(), "issue.md")
	if err := os.WriteFile(bodyFile, []byte("mean([]) raises ZeroDivisionError\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	add := func(args ...string) addJSON {
		t.Helper()
		r := ctl(t, append([]string{"--db", f.db, "add", "--json"}, args...)...)
		if r.code != exitOK {
			t.Fatalf("add %q: exit %d: %s", args, r.code, r.stderr)
		}
		var got addJSON
		decode(t, r, &got)
		return got
	}
	a := add("--repo", "sample", "--title", "Mean of nothing", "--body-file", bodyFile, "--label", "bug", "--label", "math,urgent", "--priority", "7")
	b := add("--repo", "sample", "--title", "Mean of nothing")
	if !a.Created || !b.Created || a.ID == b.ID || a.ExternalID == b.ExternalID || a.Source != "ticketctl" {
		t.Errorf("two adds of the same title: %+v and %+v, want two created tickets with distinct external ids, source ticketctl", a, b)
	}
	var got showJSON
	decode(t, ctl(t, "--db", f.db, "show", "--json", strconv.FormatInt(a.ID, 10)), &got)
	tk := got.Ticket
	if tk.State != store.StateQueued || tk.Repo != "sample" || tk.Priority != 7 || tk.Body != "mean([]) raises ZeroDivisionError\n" ||
		!slices.Equal(tk.Labels, []string{"bug", "math", "urgent"}) || tk.Source != "ticketctl" {
		t.Errorf("added ticket = %+v, want queued, repo sample, priority 7, the file's body, labels bug,math,urgent", tk)
	}

	// Without --json the result (the id) is alone on stdout, the note on stderr.
	r := ctl(t, "--db", f.db, "add", "--repo", "sample", "--title", "Plain")
	if n, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64); r.code != exitOK || err != nil || n <= b.ID {
		t.Errorf("add: exit %d, stdout %q, want a new id alone", r.code, r.stdout)
	}
	mustContain(t, "stderr", r.stderr, "queued", "ticketctl show")

	// With --config, the repository must be one the daemon knows.
	cfg := writeConfig(t, f.db)
	r = ctl(t, "--config", cfg, "add", "--repo", "nosuch", "--title", "x")
	if r.code != exitUsage {
		t.Errorf("add to an unknown repo: exit %d, want %d: %s", r.code, exitUsage, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, `"nosuch"`, "have: sample")
	// Also when --db names the database beside the --config, and with a suggestion.
	r = ctl(t, "--db", f.db, "--config", cfg, "add", "--repo", "sampel", "--title", "x")
	if r.code != exitUsage {
		t.Errorf("add --db with --config to an unknown repo: exit %d, want %d: %s", r.code, exitUsage, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, `"sampel"`, "did you mean sample?")
	// Without a config nothing can be checked: the ticket is added, with a note that says so.
	r = ctl(t, "--db", f.db, "add", "--repo", "nosuch", "--title", "x")
	if r.code != exitOK {
		t.Errorf("add without a config: exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "not checked", "--config")
	if r := ctl(t, "--config", cfg, "add", "--repo", "sample", "--title", "x"); r.code != exitOK {
		t.Errorf("add to a configured repo: exit %d: %s", r.code, r.stderr)
	}
	if r := ctl(t, "--db", f.db, "add", "--repo", "sample", "--title", "x", "--body-file", filepath.Join(t.TempDir(), "none")); r.code != exitError {
		t.Errorf("add with a missing body file: exit %d, want %d", r.code, exitError)
	}
}

func TestLogsTimeline(t *testing.T) {
	f := setup(t)
	var got []logEntry
	decode(t, ctl(t, "--db", f.db, "logs", "--json", strconv.FormatInt(f.done, 10)), &got)
	var types []string
	for i, l := range got {
		types = append(types, l.Type)
		if i > 0 && l.At.Before(got[i-1].At) {
			t.Errorf("entry %d at %s is before entry %d at %s", i, l.At, i-1, got[i-1].At)
		}
	}
	want := []string{"event", "event", "model_call", "model_call", "model_call", "tool_call", "event"}
	if !slices.Equal(types, want) {
		t.Errorf("timeline types = %v, want %v", types, want)
	}
	if got[5].ToolCall == nil || got[5].ToolCall.Tool != "read_files" || got[2].ModelCall == nil || got[2].ModelCall.Role != "triage" {
		t.Errorf("timeline entries do not carry their records: %+v", got)
	}

	var first []logEntry
	decode(t, ctl(t, "--db", f.db, "logs", "--json", "--attempt", "1", strconv.FormatInt(f.done, 10)), &first)
	if len(first) != len(got)-1 { // all but the enqueued event (attempt 0)
		t.Errorf("logs --attempt 1: %d entries, want %d", len(first), len(got)-1)
	}
}

func TestGC(t *testing.T) {
	f := setup(t)
	// A baseline last used two days ago, and one used now.
	for _, at := range []time.Time{time.Now().Add(-48 * time.Hour), time.Now()} {
		s, err := store.Open(context.Background(), f.db, store.Options{Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SaveBaseline(context.Background(), store.Baseline{Repo: "sample", BaseCommit: at.Format(time.RFC3339), ChecksHash: "h", Results: "[]"}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	var got gcJSON
	decode(t, ctl(t, "--db", f.db, "gc", "--json", "--older-than", "30d"), &got)
	if got.Pruned != 0 || got.BaselinesPruned != 0 || got.OlderThanS != 30*24*3600 {
		t.Errorf("gc --older-than 30d on a two-day-old database: %+v, want 0 pruned", got)
	}
	decode(t, ctl(t, "--db", f.db, "gc", "--json", "--older-than", "24h"), &got)
	if got.Pruned != 2 || got.BaselinesPruned != 1 {
		t.Errorf("gc --older-than 24h: pruned %d tickets, %d baselines; want 2 (the done and escalated tickets) and 1 (the unused baseline)", got.Pruned, got.BaselinesPruned)
	}
	var tk showJSON
	decode(t, ctl(t, "--db", f.db, "show", "--json", strconv.FormatInt(f.done, 10)), &tk)
	if tk.Ticket.Body != "" || tk.Ticket.PrunedAt.IsZero() || len(tk.Events) != 3 || tk.Totals.Requests != 3 {
		t.Errorf("pruned ticket: body %q pruned_at %v, %d events, %d calls; want empty body, pruned, history and calls kept",
			tk.Ticket.Body, tk.Ticket.PrunedAt, len(tk.Events), tk.Totals.Requests)
	}
	decode(t, ctl(t, "--db", f.db, "show", "--json", strconv.FormatInt(f.queued, 10)), &tk)
	if tk.Ticket.Body == "" {
		t.Errorf("gc pruned the queued ticket's body")
	}
}

// TestSafeWhileDaemonRuns drives commands while another store handle (the daemon's) is open
// and writing.
func TestSafeWhileDaemonRuns(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	daemon, err := store.Open(ctx, f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Close() })
	for i := range 5 {
		if _, _, err := daemon.Enqueue(ctx, store.NewTicket{Source: "daemon", ExternalID: strconv.Itoa(i), Repo: "sample", Title: "t"}); err != nil {
			t.Fatal(err)
		}
		if r := ctl(t, "--db", f.db, "add", "--repo", "sample", "--title", "by hand"); r.code != exitOK {
			t.Fatalf("add while the daemon's handle writes: exit %d: %s", r.code, r.stderr)
		}
	}
	var all []struct{ ID int64 }
	decode(t, ctl(t, "--db", f.db, "list", "--json", "--limit", "0"), &all)
	if len(all) != 4+10 {
		t.Errorf("list: %d tickets, want 14", len(all))
	}
}

func TestAddBodyFromStdin(t *testing.T) {
	f := setup(t)
	var out, errb strings.Builder
	e := &env{ctx: context.Background(), stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false },
		stdin: strings.NewReader("typed into a pipe\n")}
	if err := e.dispatch([]string{"--db", f.db, "--json", "add", "--repo", "sample", "--title", "piped", "--body-file", "-"}); err != nil {
		t.Fatalf("add --body-file -: %v (stderr %s)", err, errb.String())
	}
	var got addJSON
	decode(t, result{stdout: out.String()}, &got)
	var tk showJSON
	decode(t, ctl(t, "--db", f.db, "show", "--json", strconv.FormatInt(got.ID, 10)), &tk)
	if tk.Ticket.Body != "typed into a pipe\n" {
		t.Errorf("body = %q, want what stdin held", tk.Ticket.Body)
	}
}

func TestEscalationsJSON(t *testing.T) {
	f := setup(t)
	var got []map[string]any
	decode(t, ctl(t, "--db", f.db, "escalations", "--json"), &got)
	if len(got) != 1 || got[0]["id"] != float64(f.escalated) || got[0]["result_dir"] != "/out/2" ||
		!strings.Contains(got[0]["reason"].(string), "tests still fail") {
		t.Errorf("escalations --json = %v, want ticket %d with its reason and result_dir /out/2", got, f.escalated)
	}
	decode(t, ctl(t, "--db", f.db, "escalations", "--json", "--repo", "other"), &got)
	if len(got) != 0 {
		t.Errorf("escalations --repo other = %v, want []", got)
	}
}

func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("this is not SQLite, it is a shopping list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := ctl(t, "--db", path, "list")
	if r.code != exitError {
		t.Fatalf("list on a text file: exit %d, want %d\n%s", r.code, exitError, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "database "+path, "not a ticketd database")
}

// TestNeverWritesToAForeignFile: an empty file, another program's SQLite database and a
// text file are refused by every command, read or write, and left byte for byte as they
// were: no schema, no journal mode, no -wal beside them.
func TestNeverWritesToAForeignFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, path := range []string{empty, other} {
		before, _ := os.ReadFile(path)
		for _, args := range [][]string{{"list"}, {"stats"}, {"nights"}, {"add", "--repo", "r", "--title", "t"}, {"requeue", "1"}, {"gc", "--older-than", "1h"}} {
			r := ctl(t, append([]string{"--db", path}, args...)...)
			if r.code != exitError || !strings.Contains(r.stderr, "not a ticketd database") || !strings.Contains(r.stderr, "writes nothing") {
				t.Errorf("%v on %s: exit %d, stderr %q; want 1, refused", args, filepath.Base(path), r.code, r.stderr)
			}
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(before, after) {
			t.Errorf("%s changed under ticketctl", path)
		}
		for _, side := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Stat(path + side); err == nil {
				t.Errorf("ticketctl left %s%s", path, side)
			}
		}
	}
}
