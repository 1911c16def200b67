package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/store"
)

// statsJSON is the stable shape of one scope's figures in stats --json.
type statsJSON struct {
	ByState                 map[store.State]int `json:"by_state"` // all six states, zeros included
	Tickets                 int                 `json:"tickets"`
	SuccessRate             float64             `json:"success_rate"`        // done / (done + escalated)
	AttemptsPerTicket       float64             `json:"attempts_per_ticket"` // over tickets attempted at least once
	ModelRequestsPerTicket  float64             `json:"model_requests_per_ticket"`
	CostUSD                 float64             `json:"cost_usd"`
	CostUnknown             bool                `json:"cost_unknown"`             // some call's price is unknown: costs are lower bounds
	CostPerDoneTicketUSD    float64             `json:"cost_per_done_ticket_usd"` // all spend (escalations included) / done tickets
	DurationP50S            float64             `json:"duration_p50_s"`           // finished tickets, created -> finished
	DurationP90S            float64             `json:"duration_p90_s"`
	PromptTokens            int64               `json:"prompt_tokens"`
	CachedTokens            int64               `json:"cached_tokens"`
	CompletionTokens        int64               `json:"completion_tokens"`
	FirstRequestCachedShare map[string]float64  `json:"first_request_cached_share"` // per role: sum(cached)/sum(prompt) of each ticket's first request of the role
	// EstimatedCalls sent no usage: token figures include estimates; EstimatedCostUSD is
	// the part of cost_usd priced from them, ProviderCostUSD the part providers reported.
	EstimatedCalls   int     `json:"estimated_calls"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	ProviderCostUSD  float64 `json:"provider_cost_usd"`
	// Endpoints are the night's endpoint down periods (empty for the overall scope).
	Endpoints []endpointJSON `json:"endpoints"`
	// ReviewRounds counts checker review rounds; DroppedFindings the findings dropped from
	// them (evidence not in the diff, bad schema, new in round 2).
	ReviewRounds    int `json:"review_rounds"`
	DroppedFindings int `json:"dropped_findings"`
	// FromRecord: a night's column whose tickets, done, escalated, success rate and cost are
	// the night's own record (what it did then, as /nights shows it), not its tickets' states
	// now; the other states are not part of that record and read 0 (shown as "-").
	FromRecord bool `json:"from_record"`
}

// nightJSON is one run's figures.
type nightJSON struct {
	Run store.Run `json:"run"`
	statsJSON
}

// statsReport is the whole of stats --json: the scope's figures at the top level, and with no
// --run, the latest nights beside them.
type statsReport struct {
	// LastNight is the latest night that ended, with its outcome and error; null when none has.
	LastNight *nightRowJSON `json:"last_night"`
	Scope     string        `json:"scope"` // "overall" or "run"
	Run       *store.Run    `json:"run,omitempty"`
	statsJSON
	Nights []nightJSON `json:"nights"`
}

// fromStore copies the store's figures into the CLI's own JSON shape, so a change of tags in
// store cannot silently change what scripts read.
func fromStore(st store.Stats) statsJSON {
	out := statsJSON{
		ByState:                 map[store.State]int{},
		Tickets:                 st.Tickets,
		SuccessRate:             st.SuccessRate,
		AttemptsPerTicket:       st.AttemptsPerTicket,
		ModelRequestsPerTicket:  st.ModelRequestsPerTicket,
		CostUSD:                 st.CostUSD,
		CostUnknown:             st.CostUnknown,
		CostPerDoneTicketUSD:    st.CostPerDoneTicketUSD,
		DurationP50S:            st.DurationP50.Seconds(),
		DurationP90S:            st.DurationP90.Seconds(),
		PromptTokens:            st.PromptTokens,
		CachedTokens:            st.CachedTokens,
		CompletionTokens:        st.CompletionTokens,
		FirstRequestCachedShare: map[string]float64{},
		ReviewRounds:            st.ReviewRounds,
		DroppedFindings:         st.DroppedFindings,
	}
	for _, k := range store.States {
		out.ByState[k] = st.ByState[k]
	}
	for role, v := range st.FirstRequestCachedShare {
		out.FirstRequestCachedShare[role] = v
	}
	return out
}

func cmdStats(e *env, args []string) error {
	fs := e.flagSet("stats")
	runID := fs.Int64("run", 0, "only night (run) `ID`")
	nights := fs.Int("nights", 5, "show the latest `N` nights beside the overall figures")
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *runID < 0 || *nights < 0 {
		return usagef("ticketctl stats --nights 5", "stats: --run and --nights want a number >= 0")
	}
	return e.withStore(func(s *store.Store) error {
		rep := statsReport{Scope: "overall", Nights: []nightJSON{}}
		last, err := lastNight(e, s)
		if err != nil {
			return err
		}
		rep.LastNight = last
		if *runID > 0 {
			err = runStats(e.ctx, s, *runID, &rep)
		} else {
			err = overallStats(e.ctx, s, *nights, &rep)
		}
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(rep)
		}
		return printStats(e, rep)
	})
}

// scopeStats are the figures of one night, or of all of them for runID 0, with the
// estimated parts marked.
func scopeStats(ctx context.Context, s *store.Store, runID int64) (statsJSON, error) {
	st, err := s.Stats(ctx, runID)
	if err != nil {
		return statsJSON{}, err
	}
	out := fromStore(st)
	if err := addEstimates(ctx, s, runID, &out); err != nil {
		return statsJSON{}, err
	}
	return out, nil
}

// runStats fills rep with the figures of night runID alone (stats --run).
func runStats(ctx context.Context, s *store.Store, runID int64, rep *statsReport) error {
	runs, err := s.Runs(ctx, 0)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(runs, func(r store.Run) bool { return r.ID == runID })
	if i < 0 {
		return fmt.Errorf("stats: run %d: %w (ticketctl stats lists the latest runs)", runID, store.ErrRunNotFound)
	}
	st, err := scopeStats(ctx, s, runID)
	if err != nil {
		return err
	}
	fromRecord(&st, runs[i], i == 0)
	rep.Scope, rep.Run, rep.statsJSON = "run", &runs[i], st
	return nil
}

// fromRecord puts night r's own record in st: the tickets it worked, the done and escalated
// it counted when it ended, and its cost, rather than where its tickets stand now (a ticket
// escalated that night and fixed since counts as that night's escalation, as on /nights). A
// night still running has no record yet: its figures stay the live ones.
func fromRecord(st *statsJSON, r store.Run, latest bool) {
	if latest && r.EndedAt.IsZero() {
		return
	}
	for k := range st.ByState {
		st.ByState[k] = 0
	}
	st.FromRecord = true
	st.Tickets, st.ByState[store.StateDone], st.ByState[store.StateEscalated] = r.Worked, r.Done, r.Escalated
	st.SuccessRate, st.CostPerDoneTicketUSD = 0, 0
	if r.Done+r.Escalated > 0 {
		st.SuccessRate = float64(r.Done) / float64(r.Done+r.Escalated)
	}
	st.CostUSD = r.CostUSD
	if r.Done > 0 {
		st.CostPerDoneTicketUSD = r.CostUSD / float64(r.Done)
	}
}

// overallStats fills rep with the overall figures and those of the latest nights.
func overallStats(ctx context.Context, s *store.Store, nights int, rep *statsReport) error {
	st, err := scopeStats(ctx, s, 0)
	if err != nil {
		return err
	}
	rep.statsJSON = st
	if nights == 0 {
		return nil
	}
	runs, err := s.Runs(ctx, nights)
	if err != nil {
		return err
	}
	for _, r := range runs {
		st, err := scopeStats(ctx, s, r.ID)
		if err != nil {
			return err
		}
		fromRecord(&st, r, r.ID == runs[0].ID)
		rep.Nights = append(rep.Nights, nightJSON{Run: r, statsJSON: st})
	}
	return nil
}

// statsColumn is one column of the stats table: overall (or the one run) first, then nights.
type statsColumn struct {
	title   string
	st      statsJSON
	sandbox string
	nodes   string
}

// statsRow is one metric of the stats table and how to show it for a column.
type statsRow struct {
	name string
	f    func(statsJSON) string
}

// printStats shows the figures as a table: one column per scope (overall first, then nights).
func printStats(e *env, rep statsReport) error {
	printLastNight(e.stdout, rep.LastNight)
	cols, unsandboxed := statsColumns(rep)
	if err := writeStatsTable(e.stdout, cols, append(slices.Clone(statsRows), roleRows(cols)...)); err != nil {
		return err
	}
	for _, id := range unsandboxed {
		fmt.Fprintf(e.stderr, "warning: run %d: %s\n", id, sandbox.NoneWarning)
	}
	printHealth(e.stdout, rep)
	if rep.Run == nil && len(rep.Nights) == 0 {
		fmt.Fprintln(e.stderr, "no nights recorded yet: per-night columns appear after ticketd once or a scheduled night")
	}
	return nil
}

// statsColumns makes the table's columns, and lists the nights that ran without a sandbox.
func statsColumns(rep statsReport) (cols []statsColumn, unsandboxed []int64) {
	cols = []statsColumn{{"OVERALL", rep.statsJSON, "-", "-"}}
	if rep.Run != nil {
		cols[0].title = fmt.Sprintf("RUN %d (%s %s)", rep.Run.ID, rep.Run.Trigger, rep.Run.StartedAt.Local().Format("01-02 15:04"))
		cols[0].sandbox = cmp.Or(rep.Run.Sandbox, "-")
		cols[0].nodes = nodeNames(*rep.Run)
		if rep.Run.Sandbox == string(sandbox.ModeNone) {
			unsandboxed = append(unsandboxed, rep.Run.ID)
		}
	}
	for i, n := range rep.Nights {
		cols = append(cols, statsColumn{fmt.Sprintf("RUN %d (%s %s, %s)", n.Run.ID, n.Run.Trigger, n.Run.StartedAt.Local().Format("01-02 15:04"), nightOutcome(n.Run, i == 0)), n.statsJSON, cmp.Or(n.Run.Sandbox, "-"), nodeNames(n.Run)})
		if n.Run.Sandbox == string(sandbox.ModeNone) {
			unsandboxed = append(unsandboxed, n.Run.ID)
		}
	}
	return cols, unsandboxed
}

// statsRows are the metrics every stats table shows, in order.
var statsRows = []statsRow{
	{"tickets", func(s statsJSON) string { return fmt.Sprint(s.Tickets) }},
	{"queued", func(s statsJSON) string { return recordCell(s, s.ByState[store.StateQueued]) }},
	{"running", func(s statsJSON) string { return recordCell(s, s.ByState[store.StateRunning]) }},
	{"parked", func(s statsJSON) string { return recordCell(s, s.ByState[store.StateParked]) }},
	{"needs_info", func(s statsJSON) string { return recordCell(s, s.ByState[store.StateNeedsInfo]) }},
	{"done", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateDone]) }},
	{"escalated", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateEscalated]) }},
	{"cancelled", func(s statsJSON) string { return recordCell(s, s.ByState[store.StateCancelled]) }},
	{"success rate", func(s statsJSON) string { return fmtShare(s.SuccessRate) }},
	{"attempts per ticket", func(s statsJSON) string { return fmt.Sprintf("%.2f", s.AttemptsPerTicket) }},
	{"model requests per ticket", func(s statsJSON) string { return fmt.Sprintf("%.1f", s.ModelRequestsPerTicket) }},
	{"cost", func(s statsJSON) string { return costCell(s.CostUSD, s, true) }},
	{"cost per done ticket", func(s statsJSON) string { return costCell(s.CostPerDoneTicketUSD, s, false) }},
	{"duration P50", func(s statsJSON) string { return fmtDur(time.Duration(s.DurationP50S * float64(time.Second))) }},
	{"duration P90", func(s statsJSON) string { return fmtDur(time.Duration(s.DurationP90S * float64(time.Second))) }},
	{"prompt tokens", func(s statsJSON) string { return tokensCell(s.PromptTokens, s) }},
	{"cached tokens", func(s statsJSON) string { return tokensCell(s.CachedTokens, s) }},
	{"completion tokens", func(s statsJSON) string { return tokensCell(s.CompletionTokens, s) }},
	{"calls with estimated usage", func(s statsJSON) string { return fmt.Sprint(s.EstimatedCalls) }},
	{"review rounds", func(s statsJSON) string { return fmt.Sprint(s.ReviewRounds) }},
	{"checker findings dropped", func(s statsJSON) string { return fmt.Sprint(s.DroppedFindings) }},
}

// recordCell shows a state's count, "-" in a night's column from its record, which does not
// keep that state.
func recordCell(s statsJSON, n int) string {
	if s.FromRecord {
		return "-"
	}
	return fmt.Sprint(n)
}

// roleRows add one "first request cached" row per role any column has figures for.
func roleRows(cols []statsColumn) []statsRow {
	roles := map[string]bool{}
	for _, c := range cols {
		for r := range c.st.FirstRequestCachedShare {
			roles[r] = true
		}
	}
	var rows []statsRow
	for _, role := range slices.Sorted(maps.Keys(roles)) {
		rows = append(rows, statsRow{"first request cached, " + role, func(s statsJSON) string { return firstCachedCell(s, role) }})
	}
	return rows
}

// firstCachedCell shows how much of role's first request hit the cache, "~" when estimated.
func firstCachedCell(s statsJSON, role string) string {
	v, ok := s.FirstRequestCachedShare[role]
	if !ok {
		return "-"
	}
	if s.EstimatedCalls > 0 {
		return "~" + fmtShare(v)
	}
	return fmtShare(v)
}

// writeStatsTable prints the metric rows, then each column's sandbox and nodes.
func writeStatsTable(w io.Writer, cols []statsColumn, rows []statsRow) error {
	tw := newTable(w)
	statsLine(tw, "METRIC", cols, func(c statsColumn) string { return c.title })
	for _, r := range rows {
		statsLine(tw, r.name, cols, func(c statsColumn) string { return r.f(c.st) })
	}
	statsLine(tw, "sandbox", cols, func(c statsColumn) string { return c.sandbox })
	statsLine(tw, "nodes", cols, func(c statsColumn) string { return c.nodes })
	return tw.Flush()
}

// statsLine prints one line of the stats table: its name, then one cell per column.
func statsLine(w io.Writer, name string, cols []statsColumn, cell func(statsColumn) string) {
	fmt.Fprint(w, name)
	for _, c := range cols {
		fmt.Fprintf(w, "\t%s", cell(c))
	}
	fmt.Fprintln(w)
}

// nodeNames lists the machines of a night, marking those that did not finish it (still
// running, or died).
func nodeNames(r store.Run) string {
	var names []string
	for _, n := range r.Nodes {
		name := n.Node
		if n.FinishedAt.IsZero() {
			name += "*"
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}
