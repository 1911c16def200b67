package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline/timing"
	"github.com/ticketd/ticketd/store"
)

func TestTimeSplitP50(t *testing.T) {
	split := func(m, c, g, sb, st float64) *timing.Split {
		return &timing.Split{ModelWaitS: m, ChecksS: c, GitS: g, SandboxStartS: sb, StoreS: st}
	}
	tests := []struct {
		name string
		outs []Outcome
		want TimeSplit
	}{
		{name: "no records: zero", outs: []Outcome{{DurationS: 10}}},
		{
			name: "one ticket: its parts, the rest is other",
			outs: []Outcome{{DurationS: 10, Time: split(4, 3, 1, 0.5, 0.25)}},
			want: TimeSplit{ModelWaitS: 4, ChecksS: 3, GitS: 1, SandboxStartS: 0.5, StoreS: 0.25, OtherS: 1.25},
		},
		{
			name: "each part's own p50; other never negative; tickets without records left out",
			outs: []Outcome{
				{DurationS: 10, Time: split(4, 3, 1, 0.5, 0.25)},
				{DurationS: 5, Time: split(6, 1, 0.2, 0.1, 0.1)}, // parts exceed the duration (parallel reviewers)
				{DurationS: 30, Time: split(20, 5, 2, 1, 1)},
				{DurationS: 99},
			},
			want: TimeSplit{ModelWaitS: 6, ChecksS: 3, GitS: 1, SandboxStartS: 0.5, StoreS: 0.25, OtherS: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := timeSplitP50(tt.outs); got != tt.want {
				t.Errorf("timeSplitP50 = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMedianSplit(t *testing.T) {
	rounds := []Totals{{TimeP50: TimeSplit{GitS: 1, OtherS: 3}}, {TimeP50: TimeSplit{GitS: 3, OtherS: 1}}, {TimeP50: TimeSplit{GitS: 2, OtherS: 9}}}
	if got, want := medianSplit(rounds), (TimeSplit{GitS: 2, OtherS: 3}); got != want {
		t.Errorf("medianSplit = %+v, want %+v", got, want)
	}
}

func TestAttemptTimes(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	enqueue := func(ext string) int64 {
		t.Helper()
		id, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: ext, Repo: "r", Title: "t" + ext})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	save := func(id int64, p string, rec any) {
		t.Helper()
		data, _ := json.Marshal(rec)
		if err := st.SaveArtifact(ctx, id, p, data); err != nil {
			t.Fatal(err)
		}
	}
	two, none := enqueue("1"), enqueue("2")
	save(two, "attempt-1/attempt.json", record.Attempt{Attempt: 1, Time: timing.Split{ModelWaitS: 2, GitS: 0.5}})
	save(two, "attempt-2-round-2/attempt.json", record.Attempt{Attempt: 2, Time: timing.Split{ModelWaitS: 1, StoreS: 0.25}})
	save(two, "attempt-1/checks.json", map[string]float64{"model_wait_s": 100}) // not a record
	save(none, "report.md", "no attempt record")
	tests := []struct {
		name string
		id   int64
		want *timing.Split
	}{
		{"two attempts: summed", two, &timing.Split{ModelWaitS: 3, GitS: 0.5, StoreS: 0.25}},
		{"no record: nil", none, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := attemptTimes(ctx, st, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("attemptTimes = %+v, want %+v", got, tt.want)
			}
		})
	}
}
