package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/store"
)

func TestExitCodes(t *testing.T) {
	f := setup(t)
	id := func(v int64) string { return strconv.FormatInt(v, 10) }
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings expected on stdout
		stderr []string // substrings expected on stderr
	}{
		{"help", []string{"help"}, exitOK, []string{"Commands:", "escalations", "Exit codes:", "3  not found"}, nil},
		{"help of a command lists its flags", []string{"help", "list"}, exitOK, []string{"--state", "--since", "--limit"}, nil},
		{"-h on a command", []string{"requeue", "-h"}, exitOK, []string{"--force"}, nil},
		{"no command", []string{"--db", f.db}, exitUsage, nil, []string{"no command given", "try: ticketctl help"}},
		{"unknown command", []string{"--db", f.db, "frobnicate"}, exitUsage, nil, []string{`unknown command "frobnicate"`, "try: ticketctl help"}},
		{"unknown flag", []string{"--db", f.db, "list", "--bogus"}, exitUsage, nil, []string{"bogus", "try: ticketctl help list"}},
		{"show without id", []string{"--db", f.db, "show"}, exitUsage, nil, []string{"want ID", "try: ticketctl help show"}},
		{"show with a bad id", []string{"--db", f.db, "show", "abc"}, exitUsage, nil, []string{`"abc" is not a positive number`}},
		{"show two ids", []string{"--db", f.db, "show", "1", "2"}, exitUsage, nil, []string{"got 2 argument(s)"}},
		{"bad state filter", []string{"--db", f.db, "list", "--state", "done,sleeping"}, exitUsage, nil, []string{`"sleeping"`, "try: ticketctl list --state"}},
		{"bad since", []string{"--db", f.db, "list", "--since", "yesterday"}, exitUsage, nil, []string{"yesterday", "try: ticketctl list --since 24h"}},
		{"list", []string{"--db", f.db, "list"}, exitOK, []string{"ID", "STATE", "Average of an empty list crashes", "ticketd/1-average"}, nil},
		{"show", []string{"--db", f.db, "show", id(f.done)}, exitOK, []string{"Per role:", "maker", "75.0%", "completed", "Model calls:"}, []string{"ticketctl logs"}},
		{"logs", []string{"--db", f.db, "logs", id(f.done)}, exitOK, []string{"read_files", "claimed", "maker"}, nil},
		{"escalations", []string{"--db", f.db, "escalations"}, exitOK, []string{"Median is wrong", "tests still fail", "/out/2"}, nil},
		{"stats", []string{"--db", f.db, "stats"}, exitOK, []string{"success rate", "50.0%", "first request cached, maker", "RUN 1"}, nil},
		{"show unknown id", []string{"--db", f.db, "show", "999"}, exitNotFound, nil, []string{"ticket not found", "ticketctl list"}},
		{"logs unknown id", []string{"--db", f.db, "logs", "999"}, exitNotFound, nil, []string{"ticket not found"}},
		{"requeue unknown id", []string{"--db", f.db, "requeue", "999"}, exitNotFound, nil, []string{"ticket not found"}},
		{"cancel unknown id", []string{"--db", f.db, "cancel", "999"}, exitNotFound, nil, []string{"ticket not found"}},
		{"stats unknown run", []string{"--db", f.db, "stats", "--run", "99"}, exitNotFound, nil, []string{"run not found"}},
		{"requeue a queued ticket is refused", []string{"--db", f.db, "requeue", id(f.queued)}, exitRefused, nil, []string{"already queued"}},
		{"requeue a running ticket needs --force", []string{"--db", f.db, "requeue", id(f.running)}, exitRefused, nil, []string{"ticketctl requeue --force " + id(f.running)}},
		{"cancel a done ticket is refused", []string{"--db", f.db, "cancel", id(f.done)}, exitRefused, nil, []string{"requeue it first"}},
		{"gc needs --older-than", []string{"--db", f.db, "gc"}, exitUsage, nil, []string{"--older-than is required", "try: ticketctl gc --older-than 720h"}},
		{"gc refuses a tiny age", []string{"--db", f.db, "gc", "--older-than", "5m"}, exitUsage, nil, []string{"at least 1h"}},
		{"add needs a title", []string{"--db", f.db, "add", "--repo", "sample"}, exitUsage, nil, []string{"--title is required", "try: ticketctl add"}},
		{"add takes one body", []string{"--db", f.db, "add", "--repo", "sample", "--title", "x", "--body", "b", "--body-file", "f"}, exitUsage, nil, []string{"not both"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ctl(t, tt.args...)
			if r.code != tt.code {
				t.Fatalf("ticketctl %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tt.args, r.code, tt.code, r.stdout, r.stderr)
			}
			mustContain(t, "stdout", r.stdout, tt.stdout...)
			mustContain(t, "stderr", r.stderr, tt.stderr...)
			if tt.code != exitOK && r.stdout != "" {
				t.Errorf("ticketctl %q failed but wrote to stdout (results only go there):\n%s", tt.args, r.stdout)
			}
		})
	}
}

func TestListJSON(t *testing.T) {
	f := setup(t)
	var all []map[string]any
	decode(t, ctl(t, "--db", f.db, "list", "--json"), &all)
	if len(all) != 4 {
		t.Fatalf("list --json: %d tickets, want 4", len(all))
	}
	// Acceptance of issue 2: these keys on every element.
	for _, tk := range all {
		for _, k := range []string{"id", "state", "attempts", "title", "branch", "model_calls", "cost_usd"} {
			if _, ok := tk[k]; !ok {
				t.Errorf("ticket %v lacks key %q: %v", tk["id"], k, tk)
			}
		}
	}
	done := all[slices.IndexFunc(all, func(m map[string]any) bool { return m["id"] == float64(f.done) })]
	if done["state"] != "done" || done["branch"] != "ticketd/1-average" || done["model_calls"] != float64(3) || done["attempts"] != float64(1) {
		t.Errorf("done ticket: got %v, want state done, branch ticketd/1-average, 3 model calls, 1 attempt", done)
	}
	if c := done["cost_usd"].(float64); c < 0.00599 || c > 0.00601 {
		t.Errorf("done ticket cost_usd = %v, want 0.006", c)
	}

	tests := []struct {
		args []string
		want []int64
	}{
		{[]string{"--state", "done,escalated"}, []int64{f.escalated, f.done}},
		{[]string{"--state", "QUEUED"}, []int64{f.queued}},
		{[]string{"--repo", "other"}, nil},
		{[]string{"--limit", "2"}, []int64{f.queued, f.running}},
		{[]string{"--since", "1h"}, nil}, // the fixture is two days old
		{[]string{"--since", "72h"}, []int64{f.queued, f.running, f.escalated, f.done}},
	}
	for _, tt := range tests {
		var got []struct{ ID int64 }
		args := append([]string{"--db", f.db, "list", "--json"}, tt.args...)
		r := ctl(t, args...)
		decode(t, r, &got)
		var ids []int64
		for _, g := range got {
			ids = append(ids, g.ID)
		}
		if !slices.Equal(ids, tt.want) {
			t.Errorf("list %q: ids %v, want %v", tt.args, ids, tt.want)
		}
		if !strings.HasPrefix(strings.TrimSpace(r.stdout), "[") {
			t.Errorf("list %q: --json is not an array even when empty: %q", tt.args, r.stdout)
		}
	}
}

func TestShowJSON(t *testing.T) {
	f := setup(t)
	var got showJSON
	decode(t, ctl(t, "--db", f.db, "--json", "show", strconv.FormatInt(f.done, 10)), &got)
	if got.Ticket.ID != f.done || got.Ticket.State != store.StateDone {
		t.Errorf("ticket = %d %s, want %d done", got.Ticket.ID, got.Ticket.State, f.done)
	}
	if got.Totals.Requests != 3 || got.Totals.PromptTokens != 6000 || got.Totals.CachedTokens != 4000 || got.Totals.CompletionTokens != 600 {
		t.Errorf("totals = %+v, want 3 requests, 6000 prompt, 4000 cached, 600 completion", got.Totals)
	}
	maker, triage := got.Roles["maker"], got.Roles["triage"]
	if maker == nil || triage == nil {
		t.Fatalf("roles = %v, want maker and triage", got.Roles)
	}
	// The maker's first request: 1500 cached of 2000 prompt; later requests do not count.
	if maker.Requests != 2 || maker.FirstRequestCachedShare != 0.75 || maker.FirstRequestPromptTokens != 2000 {
		t.Errorf("maker = %+v, want 2 requests, first request 2000 prompt, share 0.75", *maker)
	}
	if triage.Requests != 1 || triage.FirstRequestCachedShare != 0 {
		t.Errorf("triage = %+v, want 1 request, share 0", *triage)
	}
	var kinds []string
	for _, e := range got.Events {
		kinds = append(kinds, string(e.Kind))
	}
	if !slices.Equal(kinds, []string{"enqueued", "claimed", "completed"}) {
		t.Errorf("event kinds = %v, want [enqueued claimed completed]", kinds)
	}
	if len(got.ModelCalls) != 3 {
		t.Errorf("model calls = %d, want 3", len(got.ModelCalls))
	}

	// An unknown price makes the total a lower bound, flagged as such.
	var esc showJSON
	decode(t, ctl(t, "--db", f.db, "show", strconv.FormatInt(f.escalated, 10), "--json"), &esc)
	if !esc.Totals.CostUnknown || !esc.Roles["maker"].CostUnknown {
		t.Errorf("escalated ticket with an unpriced call: totals %+v, want cost_unknown", esc.Totals)
	}
}

func TestStatsJSON(t *testing.T) {
	f := setup(t)
	r := ctl(t, "--db", f.db, "stats", "--json")
	var raw map[string]any
	decode(t, r, &raw)
	// Acceptance of issue 5: these top-level keys, the share keyed by role.
	for _, k := range []string{"first_request_cached_share", "model_requests_per_ticket", "cost_per_done_ticket_usd",
		"success_rate", "attempts_per_ticket", "duration_p50_s", "duration_p90_s", "by_state", "nights"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("stats --json lacks %q:\n%s", k, r.stdout)
		}
	}
	if _, ok := raw["first_request_cached_share"].(map[string]any); !ok {
		t.Errorf("first_request_cached_share is %T, want an object keyed by role", raw["first_request_cached_share"])
	}

	var got statsReport
	decode(t, r, &got)
	// First requests per role over all tickets: maker 1500 of (2000 + 1000), triage 0 of 1000.
	wantShare := map[string]float64{"maker": 0.5, "triage": 0}
	for role, want := range wantShare {
		if v, ok := got.FirstRequestCachedShare[role]; !ok || v != want {
			t.Errorf("first_request_cached_share[%s] = %v (present %v), want %v", role, v, ok, want)
		}
	}
	if got.Scope != "overall" || got.Tickets != 4 || got.ByState[store.StateDone] != 1 || got.ByState[store.StateCancelled] != 0 {
		t.Errorf("overall = %+v, want 4 tickets, 1 done, cancelled present as 0", got.statsJSON)
	}
	if got.SuccessRate != 0.5 {
		t.Errorf("success_rate = %v, want 0.5 (1 done, 1 escalated)", got.SuccessRate)
	}
	if !got.CostUnknown || got.CostPerDoneTicketUSD < 0.00599 || got.CostPerDoneTicketUSD > 0.00601 {
		t.Errorf("cost_per_done_ticket_usd = %v, cost_unknown %v; want 0.006 and true", got.CostPerDoneTicketUSD, got.CostUnknown)
	}
	if len(got.Nights) != 1 || got.Nights[0].Run.ID != f.runID || got.Nights[0].Run.Trigger != "once" {
		t.Fatalf("nights = %+v, want the one run %d", got.Nights, f.runID)
	}

	var one statsReport
	decode(t, ctl(t, "--db", f.db, "stats", "--json", "--run", strconv.FormatInt(f.runID, 10)), &one)
	if one.Scope != "run" || one.Run == nil || one.Run.ID != f.runID || len(one.Nights) != 0 {
		t.Errorf("stats --run: scope %q run %v nights %d, want scope run, run %d, no nights", one.Scope, one.Run, len(one.Nights), f.runID)
	}
	if one.ModelRequestsPerTicket <= 0 {
		t.Errorf("stats --run: model_requests_per_ticket = %v, want > 0", one.ModelRequestsPerTicket)
	}
}

// makeDB creates a database holding one ticket titled title, and returns its path.
func makeDB(t *testing.T, title string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ticketd.db")
	s, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Enqueue(context.Background(), store.NewTicket{Source: "test", ExternalID: title, Repo: "sample", Title: title}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDatabaseResolution(t *testing.T) {
	fromFlag, fromConfig, fromEnv := makeDB(t, "flag"), makeDB(t, "config"), makeDB(t, "env")
	cfg := writeConfig(t, fromConfig)
	missing := filepath.Join(t.TempDir(), "nope", "ticketd.db")
	tests := []struct {
		name      string
		env       string
		args      []string
		code      int
		wantTitle string // the database used, known by its only ticket
		stderr    string
	}{
		{"--db wins over --config and TICKETD_DB", fromEnv, []string{"--db", fromFlag, "--config", cfg}, exitOK, "flag", ""},
		{"--db after the command", fromEnv, []string{"--config", cfg, "list", "--db", fromFlag}, exitOK, "flag", ""},
		{"--config wins over TICKETD_DB", fromEnv, []string{"--config", cfg}, exitOK, "config", ""},
		{"TICKETD_DB alone", fromEnv, nil, exitOK, "env", ""},
		{"nothing named", "", nil, exitUsage, "", "no database named"},
		{"a missing --db is not created", fromEnv, []string{"--db", missing}, exitError, "", "does not exist"},
		{"a missing TICKETD_DB is not created", missing, nil, exitError, "", "from TICKETD_DB"},
		{"a directory", "", []string{"--db", filepath.Dir(fromFlag)}, exitError, "", "is a directory"},
		{"a broken config", fromEnv, []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, exitError, "", "load --config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TICKETD_DB", tt.env)
			args := tt.args
			if !slices.Contains(args, "list") {
				args = append(args, "list")
			}
			r := ctl(t, append(args, "--json")...)
			if r.code != tt.code {
				t.Fatalf("ticketctl %q with TICKETD_DB=%q: exit %d, want %d\nstderr: %s", args, tt.env, r.code, tt.code, r.stderr)
			}
			mustContain(t, "stderr", r.stderr, tt.stderr)
			if tt.wantTitle != "" {
				var got []struct{ Title string }
				decode(t, r, &got)
				if len(got) != 1 || got[0].Title != tt.wantTitle {
					t.Errorf("ticketctl %q used the database with %v, want the one with %q", args, got, tt.wantTitle)
				}
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("%s exists after ticketctl was pointed at it (err %v): it must never create a database", missing, err)
	}
}

func TestFlagPositions(t *testing.T) {
	f := setup(t)
	id := strconv.FormatInt(f.done, 10)
	want := ctl(t, "--db", f.db, "--json", "show", id)
	if want.code != exitOK {
		t.Fatalf("show: exit %d: %s", want.code, want.stderr)
	}
	for _, args := range [][]string{
		{"--db", f.db, "show", id, "--json"},
		{"--db", f.db, "show", "--json", id},
		{"show", id, "--db", f.db, "--json"},
		{"--json=true", "show", "--db=" + f.db, id},
		{"--db", f.db, "show", "--json", "--", id},
	} {
		got := ctl(t, args...)
		if got.code != exitOK || got.stdout != want.stdout {
			t.Errorf("ticketctl %q: exit %d, stdout differs from %q: %v\n%s", args, got.code, "--json show ID", got.stdout != want.stdout, got.stderr)
		}
	}
}
