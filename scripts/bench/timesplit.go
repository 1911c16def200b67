package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline/timing"
	"github.com/ticketd/ticketd/store"
)

// TimeSplit is where a ticket's time went, p50 of each part over a round's tickets: the
// parts each attempt's record measured where the work happens (package timing), and
// OtherS, the ticket's duration less those parts (the pipeline's own work, store reads,
// waits between attempts, the ending's store write after the record).
type TimeSplit struct {
	ModelWaitS    float64 `json:"model_wait_p50_s"`
	ChecksS       float64 `json:"checks_p50_s"`
	GitS          float64 `json:"git_p50_s"`
	SandboxStartS float64 `json:"sandbox_start_p50_s"`
	StoreS        float64 `json:"store_p50_s"`
	OtherS        float64 `json:"other_p50_s"`
}

// splitParts are TimeSplit's fields with their names in the reports, in order.
var splitParts = []struct {
	name string
	get  func(TimeSplit) float64
	set  func(*TimeSplit, float64)
}{
	{"model wait", func(s TimeSplit) float64 { return s.ModelWaitS }, func(s *TimeSplit, v float64) { s.ModelWaitS = v }},
	{"checks", func(s TimeSplit) float64 { return s.ChecksS }, func(s *TimeSplit, v float64) { s.ChecksS = v }},
	{"git", func(s TimeSplit) float64 { return s.GitS }, func(s *TimeSplit, v float64) { s.GitS = v }},
	{"sandbox start", func(s TimeSplit) float64 { return s.SandboxStartS }, func(s *TimeSplit, v float64) { s.SandboxStartS = v }},
	{"store", func(s TimeSplit) float64 { return s.StoreS }, func(s *TimeSplit, v float64) { s.StoreS = v }},
	{"other", func(s TimeSplit) float64 { return s.OtherS }, func(s *TimeSplit, v float64) { s.OtherS = v }},
}

// splitOf is one ticket's split (not yet a percentile): its records' parts and the rest of
// its duration.
func splitOf(o Outcome) TimeSplit {
	t := *o.Time
	return TimeSplit{ModelWaitS: t.ModelWaitS, ChecksS: t.ChecksS, GitS: t.GitS, SandboxStartS: t.SandboxStartS,
		StoreS: t.StoreS, OtherS: max(o.DurationS-t.Total(), 0)}
}

// timeSplitP50 is the p50 of each part over the outcomes whose attempts left a record.
func timeSplitP50(outs []Outcome) TimeSplit {
	var per []TimeSplit
	for _, o := range outs {
		if o.Time != nil {
			per = append(per, splitOf(o))
		}
	}
	var out TimeSplit
	for _, p := range splitParts {
		vs := make([]float64, len(per))
		for i, s := range per {
			vs[i] = p.get(s)
		}
		p.set(&out, percentile(vs, 50))
	}
	return out
}

// medianSplit is each part's median over the rounds.
func medianSplit(rounds []Totals) TimeSplit {
	var out TimeSplit
	for _, p := range splitParts {
		vs := make([]float64, len(rounds))
		for i, r := range rounds {
			vs[i] = p.get(r.TimeP50)
		}
		p.set(&out, median(vs))
	}
	return out
}

// splitMetrics are the summary's rows of the split.
func splitMetrics() []metric {
	out := make([]metric, 0, len(splitParts))
	for _, p := range splitParts {
		out = append(out, metric{"ticket time P50: " + p.name, func(t Totals) float64 { return p.get(t.TimeP50) }, secs})
	}
	return out
}

// attemptTimes sums the time split of the ticket's attempt records (attempt-*/attempt.json
// among its stored results files); nil when it has none.
func attemptTimes(ctx context.Context, st *store.Store, id int64) (*timing.Split, error) {
	files, err := st.Artifacts(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list results of ticket %d: %w", id, err)
	}
	var sum *timing.Split
	for _, f := range files {
		dir, name := path.Split(f.Path)
		if name != "attempt.json" || !strings.HasPrefix(dir, "attempt-") || strings.Count(dir, "/") != 1 {
			continue
		}
		data, err := st.Artifact(ctx, id, f.Path)
		if err != nil {
			return nil, fmt.Errorf("read %s of ticket %d: %w", f.Path, id, err)
		}
		var rec record.Attempt
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("%s of ticket %d: %w", f.Path, id, err)
		}
		s := rec.Time
		if sum != nil {
			s = sum.Plus(s)
		}
		sum = &s
	}
	return sum, nil
}
