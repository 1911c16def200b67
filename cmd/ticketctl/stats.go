package main

import (
	"cmp"
	"fmt"
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
			runs, err := s.Runs(e.ctx, 0)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(runs, func(r store.Run) bool { return r.ID == *runID })
			if i < 0 {
				return fmt.Errorf("stats: run %d: %w (ticketctl stats lists the latest runs)", *runID, store.ErrRunNotFound)
			}
			st, err := s.Stats(e.ctx, *runID)
			if err != nil {
				return err
			}
			rep.Scope, rep.Run, rep.statsJSON = "run", &runs[i], fromStore(st)
			if err := addEstimates(e.ctx, s, *runID, &rep.statsJSON); err != nil {
				return err
			}
		} else {
			st, err := s.Stats(e.ctx, 0)
			if err != nil {
				return err
			}
			rep.statsJSON = fromStore(st)
			if err := addEstimates(e.ctx, s, 0, &rep.statsJSON); err != nil {
				return err
			}
			if *nights > 0 {
				runs, err := s.Runs(e.ctx, *nights)
				if err != nil {
					return err
				}
				for _, r := range runs {
					st, err := s.Stats(e.ctx, r.ID)
					if err != nil {
						return err
					}
					nj := nightJSON{Run: r, statsJSON: fromStore(st)}
					if err := addEstimates(e.ctx, s, r.ID, &nj.statsJSON); err != nil {
						return err
					}
					rep.Nights = append(rep.Nights, nj)
				}
			}
		}
		if e.g.json {
			return e.printJSON(rep)
		}
		return printStats(e, rep)
	})
}

// printStats shows the figures as a table: one column per scope (overall first, then nights).
func printStats(e *env, rep statsReport) error {
	type column struct {
		title   string
		st      statsJSON
		sandbox string
		nodes   string
	}
	printLastNight(e.stdout, rep.LastNight)
	cols := []column{{"OVERALL", rep.statsJSON, "-", "-"}}
	var unsandboxed []int64
	if rep.Run != nil {
		cols[0].title = fmt.Sprintf("RUN %d (%s %s)", rep.Run.ID, rep.Run.Trigger, rep.Run.StartedAt.Local().Format("01-02 15:04"))
		cols[0].sandbox = cmp.Or(rep.Run.Sandbox, "-")
		cols[0].nodes = nodeNames(*rep.Run)
		if rep.Run.Sandbox == string(sandbox.ModeNone) {
			unsandboxed = append(unsandboxed, rep.Run.ID)
		}
	}
	for i, n := range rep.Nights {
		cols = append(cols, column{fmt.Sprintf("RUN %d (%s %s, %s)", n.Run.ID, n.Run.Trigger, n.Run.StartedAt.Local().Format("01-02 15:04"), nightOutcome(n.Run, i == 0)), n.statsJSON, cmp.Or(n.Run.Sandbox, "-"), nodeNames(n.Run)})
		if n.Run.Sandbox == string(sandbox.ModeNone) {
			unsandboxed = append(unsandboxed, n.Run.ID)
		}
	}
	roles := map[string]bool{}
	for _, c := range cols {
		for r := range c.st.FirstRequestCachedShare {
			roles[r] = true
		}
	}
	rows := []struct {
		name string
		f    func(statsJSON) string
	}{
		{"tickets", func(s statsJSON) string { return fmt.Sprint(s.Tickets) }},
		{"queued", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateQueued]) }},
		{"running", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateRunning]) }},
		{"parked", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateParked]) }},
		{"needs_info", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateNeedsInfo]) }},
		{"done", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateDone]) }},
		{"escalated", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateEscalated]) }},
		{"cancelled", func(s statsJSON) string { return fmt.Sprint(s.ByState[store.StateCancelled]) }},
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
	for _, role := range slices.Sorted(maps.Keys(roles)) {
		rows = append(rows, struct {
			name string
			f    func(statsJSON) string
		}{"first request cached, " + role, func(s statsJSON) string {
			v, ok := s.FirstRequestCachedShare[role]
			if !ok {
				return "-"
			}
			if s.EstimatedCalls > 0 {
				return "~" + fmtShare(v)
			}
			return fmtShare(v)
		}})
	}
	tw := e.table()
	fmt.Fprint(tw, "METRIC")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.title)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprint(tw, r.name)
		for _, c := range cols {
			fmt.Fprintf(tw, "\t%s", r.f(c.st))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "sandbox")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.sandbox)
	}
	fmt.Fprintln(tw)
	fmt.Fprint(tw, "nodes")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.nodes)
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
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
