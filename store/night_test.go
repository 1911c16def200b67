package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestEnginesFillEveryStatement: an engine that leaves a statement out fails here, not at
// the first night that needs it.
func TestEnginesFillEveryStatement(t *testing.T) { forEachEngine(t, testEnginesFillEveryStatement) }

func testEnginesFillEveryStatement(t *testing.T, e engine) {
	b := e.setup(t)
	v := reflect.ValueOf(*b.s.q)
	for i := range v.NumField() {
		if f := v.Field(i); f.IsZero() && v.Type().Field(i).Name != "CompleteEnded" { // optional
			t.Errorf("%s engine: SQL.%s is empty", e.name, v.Type().Field(i).Name)
		}
	}
}

// TestNightSharedByNodes: a second node joins the night the first opened; the night's
// totals and cost count both nodes' work, and each node that finishes refreshes them. A
// night every node finished is not joined again; nor is an open one older than the window.
func TestNightSharedByNodes(t *testing.T) { forEachEngine(t, testNightSharedByNodes) }

func testNightSharedByNodes(t *testing.T, e engine) {
	a := e.setup(t, func(o *Options) { o.Node = "vm-a" })
	other, err := OpenLocation(a.ctx, a.loc, Options{Now: a.clock.Now, Node: "vm-b"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	run, joined, err := a.s.JoinRun(a.ctx, "cron", time.Hour)
	if err != nil || joined {
		t.Fatalf("first node JoinRun = %d, %v, %v; want a new run", run, joined, err)
	}
	a.clock.Advance(time.Minute)
	run2, joined, err := other.JoinRun(a.ctx, "cron", time.Hour)
	if err != nil || !joined || run2 != run {
		t.Fatalf("second node JoinRun = %d, %v, %v; want to join run %d", run2, joined, err, run)
	}
	for i, s := range []*Store{a.s, other} {
		id, _, err := s.Enqueue(a.ctx, NewTicket{Source: "t", ExternalID: string(rune('a' + i))})
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Claim(a.ctx, "w", time.Minute)
		if err != nil || l.Ticket.ID != id || l.Ticket.LeaseNode != s.Node() {
			t.Fatalf("claim on %s: %+v, %v; want ticket %d leased on that node", s.Node(), l.Ticket, err, id)
		}
		cost := 0.25
		if _, err := s.RecordModelCall(a.ctx, ModelCall{TicketID: id, RunID: run, Role: "maker", CostUSD: &cost}); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(a.ctx, id, l.Token, Result{Branch: "b"}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddNote(a.ctx, id, s.Node(), "pushed b to origin"); err != nil { // a note is no second "done"
			t.Fatal(err)
		}
	}
	if total, _, err := a.s.RunCost(a.ctx, run); err != nil || total != 0.5 {
		t.Errorf("RunCost = %v, %v; want 0.5 from both nodes", total, err)
	}
	if err := a.s.FinishRun(a.ctx, run); err != nil {
		t.Fatal(err)
	}
	// vm-b still works: the night is open, a third node would join it.
	if id, joined, err := a.s.JoinRun(a.ctx, "cron", time.Hour); err != nil || !joined || id != run {
		t.Errorf("JoinRun while vm-b runs = %d, %v, %v; want to rejoin run %d", id, joined, err, run)
	}
	if err := a.s.FinishRun(a.ctx, run); err != nil {
		t.Fatal(err)
	}
	a.clock.Advance(time.Minute)
	if err := other.FinishRun(a.ctx, run); err != nil {
		t.Fatal(err)
	}
	runs, err := a.s.Runs(a.ctx, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	r := runs[0]
	if r.Claimed != 2 || r.Done != 2 || r.CostUSD != 0.5 || len(r.Nodes) != 2 || r.Nodes[0].Node != "vm-a" || r.Nodes[1].Node != "vm-b" ||
		r.Nodes[0].FinishedAt.IsZero() || !r.EndedAt.Equal(a.clock.Now()) {
		t.Errorf("night = %+v; want 2 claimed and done, $0.5, nodes vm-a then vm-b both finished, ended at the last finish", r)
	}
	if id, joined, err := other.JoinRun(a.ctx, "cron", time.Hour); err != nil || joined || id == run {
		t.Errorf("JoinRun after every node finished = %d, %v, %v; want a new night", id, joined, err)
	}
	a.clock.Advance(2 * time.Hour) // that night's vm-b died without finishing; it is past the window now
	if id, joined, err := a.s.JoinRun(a.ctx, "cron", time.Hour); err != nil || joined {
		t.Errorf("JoinRun of a stale open night = %d, %v, %v; want a new night", id, joined, err)
	}
}

// TestArtifactsKeepTheResultsFolder: a ticket's files are stored by path, replaced on a
// second save, listed with their sizes, refused outside the folder, and GC keeps only the
// report of old tickets.
func TestArtifactsKeepTheResultsFolder(t *testing.T) {
	forEachEngine(t, testArtifactsKeepTheResultsFolder)
}

func testArtifactsKeepTheResultsFolder(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1")
	for _, a := range []struct{ path, content string }{
		{"report.md", "# old"}, {"report.md", "# Ticket 1\n"}, {"patch", "diff --git a/x b/x\n"},
		{"attempt-1/stop-reason", "tests failed\n"}, {"attempt-1/binary", "\x00\xff"},
	} {
		if err := b.s.SaveArtifact(b.ctx, id, a.path, []byte(a.content)); err != nil {
			t.Fatalf("SaveArtifact(%s): %v", a.path, err)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "./report.md"} {
		if err := b.s.SaveArtifact(b.ctx, id, bad, []byte("x")); err == nil {
			t.Errorf("SaveArtifact(%q) accepted; want refused", bad)
		}
	}
	list, err := b.s.Artifacts(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range list {
		got = append(got, fmt.Sprintf("%s:%d", a.Path, a.Size))
	}
	if want := []string{"attempt-1/binary:2", "attempt-1/stop-reason:13", "patch:19", "report.md:11"}; !equal(got, want) {
		t.Errorf("Artifacts = %v; want %v (path:size)", got, want)
	}
	if c, err := b.s.Artifact(b.ctx, id, "attempt-1/binary"); err != nil || string(c) != "\x00\xff" {
		t.Errorf("Artifact(binary) = %q, %v", c, err)
	}
	if _, err := b.s.Artifact(b.ctx, id, "nope"); !errors.Is(err, ErrNoArtifact) {
		t.Errorf("Artifact(nope): %v; want ErrNoArtifact", err)
	}
	l := b.claim(t, "w")
	if err := b.s.Complete(b.ctx, id, l.Token, Result{}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(48 * time.Hour)
	if n, err := b.s.GC(b.ctx, 24*time.Hour); err != nil || n != 1 {
		t.Fatalf("GC = %d, %v", n, err)
	}
	if list, err := b.s.Artifacts(b.ctx, id); err != nil || len(list) != 1 || list[0].Path != "report.md" {
		t.Errorf("artifacts after GC = %+v, %v; want report.md only", list, err)
	}
}

// TestNightOutcomeIsTheWorstNodes: in a night several nodes shared, a node that was
// stopped or failed is not hidden by one that ended well after it; each part of the error
// names its node; a night of one node keeps its error as it was.
func TestNightOutcomeIsTheWorstNodes(t *testing.T) { forEachEngine(t, testNightOutcomeIsTheWorstNodes) }

func testNightOutcomeIsTheWorstNodes(t *testing.T, e engine) {
	a := e.setup(t, func(o *Options) { o.Node = "vm-a" })
	nodes := map[string]*Store{"vm-a": a.s}
	for _, n := range []string{"vm-b", "vm-c"} {
		s, err := OpenLocation(a.ctx, a.loc, Options{Now: a.clock.Now, Node: n})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		nodes[n] = s
	}
	type end struct {
		node    string
		outcome Outcome
		err     string
	}
	for _, c := range []struct {
		name        string
		ends        []end
		wantOutcome Outcome
		wantErr     string
	}{
		{"one node keeps its words", []end{{"vm-a", OutcomePartial, "2 ticket(s) parked"}},
			OutcomePartial, "2 ticket(s) parked"},
		{"stopped, then ok later", []end{{"vm-a", OutcomeStopped, "night.max_dollars reached"}, {"vm-b", OutcomeOK, ""}},
			OutcomeStopped, "vm-a: night.max_dollars reached"},
		{"ok, then failed", []end{{"vm-a", OutcomeOK, ""}, {"vm-b", OutcomeFailed, "preflight: HTTP 401"}},
			OutcomeFailed, "vm-b: preflight: HTTP 401"},
		{"two partial, one ok", []end{{"vm-a", OutcomePartial, "1 ticket(s) ready"}, {"vm-b", OutcomeOK, ""}, {"vm-c", OutcomePartial, "endpoint down"}},
			OutcomePartial, "vm-a: 1 ticket(s) ready; vm-c: endpoint down"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a.clock.Advance(24 * time.Hour) // a night of its own
			var run int64
			for _, x := range c.ends {
				id, _, err := nodes[x.node].JoinRun(a.ctx, "cron", time.Hour)
				if err != nil || run != 0 && id != run {
					t.Fatalf("%s JoinRun = %d, %v; want run %d", x.node, id, err, run)
				}
				run = id
			}
			for _, x := range c.ends {
				a.clock.Advance(time.Minute)
				if err := nodes[x.node].EndRun(a.ctx, run, x.outcome, x.err); err != nil {
					t.Fatal(err)
				}
			}
			runs, err := a.s.Runs(a.ctx, 1)
			if err != nil || len(runs) != 1 || runs[0].ID != run {
				t.Fatalf("Runs = %+v, %v", runs, err)
			}
			if r := runs[0]; r.Outcome != c.wantOutcome || r.Error != c.wantErr || len(r.Nodes) != len(c.ends) {
				t.Errorf("night = %s %q with %d nodes; want %s %q with %d", r.Outcome, r.Error, len(r.Nodes), c.wantOutcome, c.wantErr, len(c.ends))
			}
		})
	}
}

func TestMergeOutcome(t *testing.T) {
	tests := []struct {
		prev, next       Outcome
		prevErr, nextErr string
		want             Outcome
		wantErr          string
	}{
		{"", OutcomeOK, "", "", OutcomeOK, ""},
		{OutcomeOK, "", "", "", OutcomeOK, ""},
		{OutcomeFailed, "", "x", "", OutcomeFailed, "x"},
		{OutcomeOK, OutcomePartial, "", "p", OutcomePartial, "p"},
		{OutcomeStopped, OutcomePartial, "s", "p", OutcomeStopped, "s"},
		{OutcomePartial, OutcomePartial, "p1", "p2", OutcomePartial, "p1; p2"},
		{OutcomePartial, OutcomePartial, "p", "p", OutcomePartial, "p"},
		{OutcomeStopped, OutcomeFailed, "s", "f", OutcomeFailed, "f"},
	}
	for _, tt := range tests {
		got, gotErr := mergeOutcome(tt.prev, tt.prevErr, tt.next, tt.nextErr)
		if got != tt.want || gotErr != tt.wantErr {
			t.Errorf("mergeOutcome(%q %q, %q %q) = %q %q; want %q %q", tt.prev, tt.prevErr, tt.next, tt.nextErr, got, gotErr, tt.want, tt.wantErr)
		}
	}
}
