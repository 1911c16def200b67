package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/ticketd/ticketd/pipeline/timing"
	"github.com/ticketd/ticketd/scripts/bench/caseset"
	"github.com/ticketd/ticketd/store"
)

// Record is one round: the line appended to results.jsonl.
type Record struct {
	Timestamp  time.Time `json:"timestamp"` // when the night started, UTC
	Commit     string    `json:"commit"`    // ticketd's git commit, "-dirty" with local changes
	ConfigHash string    `json:"config_hash"`
	Machine    Machine   `json:"machine"`
	Scenario   string    `json:"scenario"` // the scripted scenario, or "real"
	Endpoint   string    `json:"endpoint"` // "scripted" or "real"
	Workers    int       `json:"workers"`
	Latency    float64   `json:"latency_s"` // the scripted model's simulated latency per call
	Seed       int64     `json:"seed"`
	Round      int       `json:"round"`
	Rounds     int       `json:"rounds"`
	CasesDir   string    `json:"cases_dir"`
	Filter     string    `json:"filter,omitempty"`
	Stopped    string    `json:"stopped,omitempty"` // why the night ended early, if it did
	Cases      []Outcome `json:"cases"`
	Totals     Totals    `json:"totals"`
}

// Machine is where a round ran.
type Machine struct {
	Hostname  string  `json:"hostname"`
	GOOS      string  `json:"goos"`
	GOARCH    string  `json:"goarch"`
	NumCPU    int     `json:"num_cpu"`
	GoVersion string  `json:"go_version"`
	Load1     float64 `json:"load1"` // one-minute load average when the round started
}

// Outcome is one case in one round.
type Outcome struct {
	Name       string `json:"name"`
	Difficulty string `json:"difficulty"`
	Scripted   string `json:"scripted,omitempty"` // the scripted maker's behaviour
	Ticket     int64  `json:"ticket"`
	State      string `json:"state"` // the ticket's final state; not_enqueued if intake refused it
	Attempts   int    `json:"attempts"`
	// Success is the hidden tests passing on the ticket's branch; never the pipeline's verdict.
	Success          bool    `json:"success"`
	JudgeError       string  `json:"judge_error,omitempty"`
	Branch           string  `json:"branch,omitempty"`
	ModelCalls       int     `json:"model_calls"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	CostUnknown      bool    `json:"cost_unknown,omitempty"`
	DurationS        float64 `json:"duration_s"` // store.TicketDurations: first claim to end
	Claimed          bool    `json:"claimed"`
	Reason           string  `json:"reason,omitempty"`
	// How the maker worked, from the store's model_calls and tool_calls rows. A failed tool
	// call is any the product answered with an error, refused submits included; failed
	// edits are the edit_file calls among them.
	MakerCalls      int            `json:"maker_calls"`
	Compactions     int            `json:"compactions"`
	ToolCalls       int            `json:"tool_calls"`
	FailedToolCalls int            `json:"failed_tool_calls"`
	FailedEdits     int            `json:"failed_edits"`
	EditRungs       map[string]int `json:"edit_rungs,omitempty"` // applied edit_file calls per matching rung
	// How it was reviewed: reviewer calls (one per reviewer and round), the findings the
	// reviewers' first rounds kept (in all and per reviewer), arbiter calls.
	ReviewerCalls int            `json:"reviewer_calls"`
	Findings      int            `json:"findings"`
	FindingsBy    map[string]int `json:"findings_by,omitempty"`
	ArbiterCalls  int            `json:"arbiter_calls"`
	// Time is where the ticket's attempts spent their time, summed over their records
	// (timesplit.go); nil when no attempt left one.
	Time *timing.Split `json:"time,omitempty"`
}

// Totals are one round's figures, and (as medians) the summary's.
type Totals struct {
	Tickets                   int                `json:"tickets"`
	Solved                    int                `json:"solved"`
	PipelineDone              int                `json:"pipeline_done"` // tickets the pipeline called done
	SuccessRate               float64            `json:"success_rate"`
	CostUSD                   float64            `json:"cost_usd"`
	CostPerTicketUSD          float64            `json:"cost_per_ticket_usd"`
	CostUnknown               bool               `json:"cost_unknown,omitempty"`
	DurationP50S              float64            `json:"duration_p50_s"`
	DurationP90S              float64            `json:"duration_p90_s"`
	ModelRequestsPerTicket    float64            `json:"model_requests_per_ticket"`
	PromptTokensPerTicket     float64            `json:"prompt_tokens_per_ticket"`
	CachedTokensPerTicket     float64            `json:"cached_tokens_per_ticket"`
	CompletionTokensPerTicket float64            `json:"completion_tokens_per_ticket"`
	FirstRequestCachedShare   map[string]float64 `json:"first_request_cached_share"`
	Escalated                 float64            `json:"escalated"`
	NightS                    float64            `json:"night_s"`
	TicketsPerHour            float64            `json:"tickets_per_hour"`
	MakerCallsPerTicket       float64            `json:"maker_calls_per_ticket"`
	ToolCallsPerTicket        float64            `json:"tool_calls_per_ticket"`
	FailedToolCallsPerTicket  float64            `json:"failed_tool_calls_per_ticket"`
	FailedEditsPerTicket      float64            `json:"failed_edits_per_ticket"`
	CompactionsPerTicket      float64            `json:"compactions_per_ticket"`
	// EditRungs counts the applied edit_file calls of all tickets per matching rung.
	EditRungs map[string]float64 `json:"edit_rungs"`
	// Reviewers are the checker's angles of the round; the per-ticket figures of the review
	// follow, findings per reviewer in FindingsBy.
	Reviewers              []string           `json:"reviewers,omitempty"`
	ReviewerCallsPerTicket float64            `json:"reviewer_calls_per_ticket"`
	FindingsPerTicket      float64            `json:"findings_per_ticket"`
	FindingsBy             map[string]float64 `json:"findings_by,omitempty"`
	ArbiterCallsPerTicket  float64            `json:"arbiter_calls_per_ticket"`
	// DuplicatesWorkedTwice and PublishedConflicts are the night's figures over the cases
	// with companions (nightfigures.go); over rounds, the worst round's.
	DuplicatesWorkedTwice int `json:"duplicates_worked_twice"`
	PublishedConflicts    int `json:"published_fixes_that_conflict"`
	// TimeP50 splits a ticket's time: p50 of each part (timesplit.go).
	TimeP50 TimeSplit `json:"time_p50"`
	// Shape is how the night spent its wall time over its workers (nightshape.go).
	Shape NightShape `json:"night_shape"`
}

// Summary is the median over the rounds of one bench run.
type Summary struct {
	Totals
	Rounds     int      `json:"rounds"`
	Workers    int      `json:"workers"`
	Latency    float64  `json:"latency_s"`
	Scenario   string   `json:"scenario"`
	Endpoint   string   `json:"endpoint"`
	Cases      int      `json:"cases"`
	Commit     string   `json:"commit"`
	ConfigHash string   `json:"config_hash"`
	Machine    Machine  `json:"machine"`
	Out        string   `json:"out"`
	WallS      float64  `json:"wall_s"` // the whole bench, all rounds, judging included
	PerRound   []Totals `json:"per_round"`
}

// totals computes a round's figures from its outcomes.
func totals(outs []Outcome, night time.Duration, share map[string]float64) Totals {
	t := Totals{Tickets: len(outs), FirstRequestCachedShare: share, NightS: night.Seconds()}
	if t.FirstRequestCachedShare == nil {
		t.FirstRequestCachedShare = map[string]float64{}
	}
	var calls, makers, toolCalls, failedTools, failedEdits, compactions, reviewerCalls, findings, arbiters int
	t.FindingsBy = map[string]float64{}
	t.EditRungs = map[string]float64{}
	var prompt, cached, completion int64
	var durations []float64
	for _, o := range outs {
		if o.Success {
			t.Solved++
		}
		if o.State == string(store.StateDone) {
			t.PipelineDone++
		}
		if o.State == string(store.StateEscalated) {
			t.Escalated++
		}
		t.CostUSD += o.CostUSD
		t.CostUnknown = t.CostUnknown || o.CostUnknown
		calls += o.ModelCalls
		makers, toolCalls, compactions = makers+o.MakerCalls, toolCalls+o.ToolCalls, compactions+o.Compactions
		failedTools, failedEdits = failedTools+o.FailedToolCalls, failedEdits+o.FailedEdits
		for r, n := range o.EditRungs {
			t.EditRungs[r] += float64(n)
		}
		reviewerCalls, findings, arbiters = reviewerCalls+o.ReviewerCalls, findings+o.Findings, arbiters+o.ArbiterCalls
		for r, n := range o.FindingsBy {
			t.FindingsBy[r] += float64(n)
		}
		prompt, cached, completion = prompt+o.PromptTokens, cached+o.CachedTokens, completion+o.CompletionTokens
		if o.Claimed { // a ticket never claimed has no duration
			durations = append(durations, o.DurationS)
		}
	}
	if n := float64(len(outs)); n > 0 {
		t.SuccessRate = float64(t.Solved) / n
		t.CostPerTicketUSD = t.CostUSD / n
		t.ModelRequestsPerTicket = float64(calls) / n
		t.PromptTokensPerTicket = float64(prompt) / n
		t.CachedTokensPerTicket = float64(cached) / n
		t.CompletionTokensPerTicket = float64(completion) / n
		t.MakerCallsPerTicket = float64(makers) / n
		t.ToolCallsPerTicket = float64(toolCalls) / n
		t.FailedToolCallsPerTicket = float64(failedTools) / n
		t.FailedEditsPerTicket = float64(failedEdits) / n
		t.CompactionsPerTicket = float64(compactions) / n
		t.ReviewerCallsPerTicket = float64(reviewerCalls) / n
		t.FindingsPerTicket = float64(findings) / n
		t.ArbiterCallsPerTicket = float64(arbiters) / n
		for r := range t.FindingsBy {
			t.FindingsBy[r] /= n
		}
	}
	t.DurationP50S, t.DurationP90S = percentile(durations, 50), percentile(durations, 90)
	t.TimeP50 = timeSplitP50(outs)
	if night > 0 {
		t.TicketsPerHour = float64(len(outs)) / night.Hours()
	}
	return t
}

// percentile is the nearest-rank percentile p of vs (0 when empty), as store.Stats uses.
func percentile(vs []float64, p int) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	rank := (p*len(vs) + 99) / 100
	return vs[max(rank, 1)-1]
}

// median of vs; the mean of the middle two for an even count, 0 when empty.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	m := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[m]
	}
	return (vs[m-1] + vs[m]) / 2
}

// worst is a must-be-zero figure over the rounds: the largest.
func worst(rounds []Totals, f func(Totals) int) int {
	w := 0
	for _, r := range rounds {
		w = max(w, f(r))
	}
	return w
}

// medianTotals takes the median of every figure over the rounds, each figure on its own.
func medianTotals(rounds []Totals) Totals {
	pick := func(f func(Totals) float64) float64 {
		vs := make([]float64, len(rounds))
		for i, r := range rounds {
			vs[i] = f(r)
		}
		return median(vs)
	}
	m := Totals{
		Tickets:                   int(pick(func(t Totals) float64 { return float64(t.Tickets) })),
		Solved:                    int(pick(func(t Totals) float64 { return float64(t.Solved) })),
		PipelineDone:              int(pick(func(t Totals) float64 { return float64(t.PipelineDone) })),
		SuccessRate:               pick(func(t Totals) float64 { return t.SuccessRate }),
		CostUSD:                   pick(func(t Totals) float64 { return t.CostUSD }),
		CostPerTicketUSD:          pick(func(t Totals) float64 { return t.CostPerTicketUSD }),
		DurationP50S:              pick(func(t Totals) float64 { return t.DurationP50S }),
		DurationP90S:              pick(func(t Totals) float64 { return t.DurationP90S }),
		ModelRequestsPerTicket:    pick(func(t Totals) float64 { return t.ModelRequestsPerTicket }),
		PromptTokensPerTicket:     pick(func(t Totals) float64 { return t.PromptTokensPerTicket }),
		CachedTokensPerTicket:     pick(func(t Totals) float64 { return t.CachedTokensPerTicket }),
		CompletionTokensPerTicket: pick(func(t Totals) float64 { return t.CompletionTokensPerTicket }),
		Escalated:                 pick(func(t Totals) float64 { return t.Escalated }),
		NightS:                    pick(func(t Totals) float64 { return t.NightS }),
		TicketsPerHour:            pick(func(t Totals) float64 { return t.TicketsPerHour }),
		MakerCallsPerTicket:       pick(func(t Totals) float64 { return t.MakerCallsPerTicket }),
		ToolCallsPerTicket:        pick(func(t Totals) float64 { return t.ToolCallsPerTicket }),
		FailedToolCallsPerTicket:  pick(func(t Totals) float64 { return t.FailedToolCallsPerTicket }),
		FailedEditsPerTicket:      pick(func(t Totals) float64 { return t.FailedEditsPerTicket }),
		CompactionsPerTicket:      pick(func(t Totals) float64 { return t.CompactionsPerTicket }),
		ReviewerCallsPerTicket:    pick(func(t Totals) float64 { return t.ReviewerCallsPerTicket }),
		FindingsPerTicket:         pick(func(t Totals) float64 { return t.FindingsPerTicket }),
		ArbiterCallsPerTicket:     pick(func(t Totals) float64 { return t.ArbiterCallsPerTicket }),
		TimeP50:                   medianSplit(rounds),
		FindingsBy:                map[string]float64{},
		FirstRequestCachedShare:   map[string]float64{},
		EditRungs:                 map[string]float64{},
		DuplicatesWorkedTwice:     worst(rounds, func(t Totals) int { return t.DuplicatesWorkedTwice }),
		PublishedConflicts:        worst(rounds, func(t Totals) int { return t.PublishedConflicts }),
		Shape: NightShape{
			FirstClaimS: pick(func(t Totals) float64 { return t.Shape.FirstClaimS }),
			LastClaimS:  pick(func(t Totals) float64 { return t.Shape.LastClaimS }),
			AttemptsS:   pick(func(t Totals) float64 { return t.Shape.AttemptsS }),
			EvenSplitS:  pick(func(t Totals) float64 { return t.Shape.EvenSplitS }),
		},
	}
	rungs := map[string]bool{}
	for _, r := range rounds {
		for rung := range r.EditRungs {
			rungs[rung] = true
		}
	}
	for rung := range rungs {
		m.EditRungs[rung] = pick(func(t Totals) float64 { return t.EditRungs[rung] }) // a round without it counts 0
	}
	reviewers := map[string]bool{}
	for _, r := range rounds {
		for name := range r.FindingsBy {
			reviewers[name] = true
		}
		if m.Reviewers == nil {
			m.Reviewers = r.Reviewers
		}
	}
	for name := range reviewers {
		m.FindingsBy[name] = pick(func(t Totals) float64 { return t.FindingsBy[name] })
	}
	roles := map[string]bool{}
	for _, r := range rounds {
		m.CostUnknown = m.CostUnknown || r.CostUnknown
		for role := range r.FirstRequestCachedShare {
			roles[role] = true
		}
	}
	for role := range roles {
		var vs []float64
		for _, r := range rounds {
			if v, ok := r.FirstRequestCachedShare[role]; ok {
				vs = append(vs, v)
			}
		}
		m.FirstRequestCachedShare[role] = median(vs)
	}
	return m
}

// bench loads the cases and runs every round, appending each round's line to --out.
func bench(ctx context.Context, o options, stderr io.Writer, log *slog.Logger) (Summary, error) {
	start := time.Now()
	wd, err := os.Getwd()
	if err != nil {
		return Summary{}, fmt.Errorf("find the working folder: %w", err)
	}
	root := moduleRoot(wd)
	if o.casesDir == "" {
		if root == "" {
			return Summary{}, fmt.Errorf("find the case set: %s is not inside the ticketd module; pass --cases DIR", wd)
		}
		o.casesDir = filepath.Join(root, "scripts", "bench", "cases")
	}
	cases, err := caseset.Load(o.casesDir)
	if err != nil {
		return Summary{}, err
	}
	if o.filter != nil {
		cases = slices.DeleteFunc(cases, func(k caseset.Case) bool { return !o.filter.MatchString(k.Name) })
		if len(cases) == 0 {
			return Summary{}, fmt.Errorf("%w %q in %s", errNoCaseMatches, o.filter, o.casesDir)
		}
	}
	pytest, err := caseset.PytestCommand(ctx)
	if err != nil {
		return Summary{}, err
	}
	base, err := baseConfig(o)
	if err != nil {
		return Summary{}, err
	}
	host, _ := os.Hostname()
	e := &env{
		o: o, cases: cases, base: base, real: usesRealEndpoint(o, base), pytest: pytest,
		log: log, stderr: stderr, commit: gitCommit(ctx, root),
		machine: Machine{Hostname: host, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version()},
	}
	if e.real {
		fmt.Fprintf(stderr, "bench: %s names a real endpoint: the scripted model is not started and --scenario/--latency are ignored\n", o.configFile)
	}
	sum := Summary{Rounds: o.rounds, Latency: o.latency.Seconds(), Scenario: e.scenarioName(), Endpoint: "scripted",
		Cases: len(cases), Commit: e.commit, Machine: e.machine, Out: o.out}
	if e.real {
		sum.Endpoint, sum.Latency = "real", 0
	}
	for n := 1; n <= o.rounds; n++ {
		rec, err := e.runRound(ctx, n)
		if err != nil {
			return sum, err
		}
		if err := appendRecord(o.out, rec); err != nil {
			return sum, err
		}
		fmt.Fprintf(stderr, "round %d/%d: %d/%d solved (hidden tests), %d done by the pipeline, %.0f escalated, night %.1fs\n",
			n, o.rounds, rec.Totals.Solved, rec.Totals.Tickets, rec.Totals.PipelineDone, rec.Totals.Escalated, rec.Totals.NightS)
		sum.PerRound = append(sum.PerRound, rec.Totals)
		sum.Workers, sum.ConfigHash, sum.Machine = rec.Workers, rec.ConfigHash, rec.Machine
	}
	sum.Totals = medianTotals(sum.PerRound)
	sum.WallS = time.Since(start).Seconds()
	return sum, nil
}

// appendRecord appends rec as one line to path, creating it if needed; it never rewrites.
func appendRecord(path string, rec Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode round %d: %w", rec.Round, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append result to %s: %w", path, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("append result to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append result to %s: %w", path, err)
	}
	return nil
}

// readRecords reads the given 1-based lines of a results file.
func readRecords(path string, lines ...int) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	want := map[int]bool{}
	for _, l := range lines {
		want[l] = true
	}
	got := map[int]Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if !want[n] {
			continue
		}
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: not a bench result line: %w", path, n, err)
		}
		got[n] = r
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	out := make([]Record, 0, len(lines))
	for _, l := range lines {
		r, ok := got[l]
		if !ok {
			return nil, fmt.Errorf("%s has no line %d", path, l)
		}
		out = append(out, r)
	}
	return out, nil
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}

func sortedRoles(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
