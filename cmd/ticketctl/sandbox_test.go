package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/store"
)

// TestStatsShowsSandbox: a night that ran with sandbox: none is named in ticketctl stats,
// with the risk, and its mode is in --json.
func TestStatsShowsSandbox(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s, err := store.Open(ctx, f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunSandbox(ctx, f.runID, "bwrap"); err != nil {
		t.Fatal(err)
	}
	unsafe, err := s.StartRun(ctx, "cron")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunSandbox(ctx, unsafe, "none"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunSandbox(ctx, 999, "none"); err == nil {
		t.Error("SetRunSandbox of an unknown run succeeded")
	}
	s.Close()

	r := ctl(t, "--db", f.db, "stats")
	row := ""
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "sandbox") {
			row = line
		}
	}
	if fields := strings.Fields(row); len(fields) != 4 || fields[1] != "-" || fields[2] != "none" || fields[3] != "bwrap" {
		t.Errorf("sandbox row = %q, want - none bwrap (overall, newest night first)\n%s", row, r.stdout)
	}
	if want := "warning: run " + strconv.FormatInt(unsafe, 10) + ": sandbox: none: code under test runs WITHOUT isolation"; !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "run "+strconv.FormatInt(f.runID, 10)+":") {
		t.Errorf("stderr = %q, want only %q", r.stderr, want)
	}
	var got statsReport
	decode(t, ctl(t, "--db", f.db, "stats", "--json"), &got)
	if len(got.Nights) != 2 || got.Nights[0].Run.Sandbox != "none" || got.Nights[1].Run.Sandbox != "bwrap" {
		t.Errorf("nights = %+v, want sandbox none then bwrap", got.Nights)
	}
}
