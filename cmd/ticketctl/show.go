package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/store"
)

// spend totals a set of model calls.
type spend struct {
	Requests         int     `json:"requests"`
	Failed           int     `json:"failed"` // calls that ended with an error
	PromptTokens     int64   `json:"prompt_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	CostUnknown      bool    `json:"cost_unknown"` // some call's price is unknown: cost_usd is a lower bound
	// EstimatedCalls sent no usage: their tokens (and costs) are estimates.
	EstimatedCalls   int     `json:"estimated_calls"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"` // the part of cost_usd that rests on estimates
	ProviderCostUSD  float64 `json:"provider_cost_usd"`  // the part the provider reported itself
	LatencyS         float64 `json:"latency_s"`
	// Compactions counts the passes that shrank the maker's conversation to fit its window.
	Compactions int `json:"compactions"`
	// Continuations counts the follow-up requests that continued answers cut at the output
	// limit (finish_reason=length).
	Continuations int `json:"continuations"`
}

func (s *spend) add(c store.ModelCall) {
	s.Requests++
	if c.Error != "" || c.ErrorClass != "" {
		s.Failed++
	}
	s.PromptTokens += c.PromptTokens
	s.CachedTokens += c.CachedTokens
	s.CacheWriteTokens += c.CacheWriteTokens
	s.CompletionTokens += c.CompletionTokens
	s.ReasoningTokens += c.ReasoningTokens
	if c.CostUSD != nil {
		s.CostUSD += *c.CostUSD
		switch c.CostSource {
		case "estimate":
			s.EstimatedCostUSD += *c.CostUSD
		case "provider":
			s.ProviderCostUSD += *c.CostUSD
		}
	} else {
		s.CostUnknown = true
	}
	if c.UsageEstimated {
		s.EstimatedCalls++
	}
	s.LatencyS += c.Latency.Seconds()
	s.Compactions += c.Compactions
	s.Continuations += c.Continuations
}

// tokensNote marks token totals that include estimates.
func (s spend) tokensNote() string {
	if s.EstimatedCalls == 0 {
		return ""
	}
	return fmt.Sprintf(" (estimated for %d of %d calls: the server sent no usage)", s.EstimatedCalls, s.Requests)
}

// costText shows a total cost with its estimated and provider-reported parts marked.
func (s spend) costText() string {
	out := fmtCost(s.CostUSD, s.CostUnknown)
	switch {
	case s.EstimatedCostUSD > 0 && s.EstimatedCostUSD >= s.CostUSD-1e-12:
		out += " (estimated)"
	case s.EstimatedCostUSD > 0:
		out += fmt.Sprintf(" (of which $%.4f estimated)", s.EstimatedCostUSD)
	}
	if s.ProviderCostUSD > 0 {
		out += fmt.Sprintf(" ($%.4f as reported by the provider)", s.ProviderCostUSD)
	}
	return out
}

// callCost shows one call's cost: "unknown", "~$x (estimated)", "$x (provider; table $y)".
func callCost(c store.ModelCall) string {
	if c.CostUSD == nil {
		return "unknown"
	}
	v := fmtCost(*c.CostUSD, false)
	switch c.CostSource {
	case "estimate":
		return "~" + v + " (estimated)"
	case "provider":
		if c.PriceCostUSD != nil {
			return fmt.Sprintf("%s (provider; table %s)", v, fmtCost(*c.PriceCostUSD, false))
		}
		return v + " (provider)"
	}
	return v
}

// callTokens shows a token count, marked "~" when estimated.
func callTokens(c store.ModelCall, n int64) string {
	if c.UsageEstimated {
		return fmt.Sprintf("~%d", n)
	}
	return fmt.Sprint(n)
}

// roleFigures is one role's spend on a ticket plus how well its first request hit the cache:
// the first request of a role is the one a stable prompt prefix should make cheap.
type roleFigures struct {
	spend
	FirstRequestPromptTokens int64   `json:"first_request_prompt_tokens"`
	FirstRequestCachedTokens int64   `json:"first_request_cached_tokens"`
	FirstRequestCachedShare  float64 `json:"first_request_cached_share"`
}

// figures totals calls overall and per role.
func figures(calls []store.ModelCall) (spend, map[string]*roleFigures) {
	var total spend
	roles := map[string]*roleFigures{}
	for _, c := range calls {
		total.add(c)
		r, ok := roles[c.Role]
		if !ok {
			r = &roleFigures{FirstRequestPromptTokens: c.PromptTokens, FirstRequestCachedTokens: c.CachedTokens}
			if c.PromptTokens > 0 {
				r.FirstRequestCachedShare = float64(c.CachedTokens) / float64(c.PromptTokens)
			}
			roles[c.Role] = r
		}
		r.add(c)
	}
	return total, roles
}

// showJSON is the stable shape of show --json.
type showJSON struct {
	Ticket     store.Ticket            `json:"ticket"`
	Totals     spend                   `json:"totals"`
	Roles      map[string]*roleFigures `json:"roles"`
	Events     []store.Event           `json:"events"`
	ModelCalls []store.ModelCall       `json:"model_calls"`
	Reviews    []store.Review          `json:"reviews"`
	Questions  []store.Question        `json:"questions"`
	// Files are the ticket's results folder as the database keeps it (ticketctl report).
	Files []store.Artifact `json:"files"`
	// Requeues are the ticket's requeues with their notes and kept fix branches.
	Requeues []store.Requeued `json:"requeues"`
	// Rounds are the rounds asked of the ticket's fix (a review, ticketctl revise, CI).
	Rounds []store.Round `json:"rounds"`
	// PullRequest is what the watch last saw of the ticket's pull request (review cursor,
	// checks' state); zero when it has none.
	PullRequest store.PullWatch `json:"pull_request"`
}

func cmdShow(e *env, args []string) error {
	return e.withTicket(e.flagSet("show"), args, func(s *store.Store, t store.Ticket) error {
		v, err := loadShow(e, s, t)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(v)
		}
		if err := showSummary(e.stdout, v); err != nil {
			return err
		}
		showBody(e.stdout, t)
		showRequeues(e.stdout, v.Requeues)
		showRounds(e.stdout, v.Rounds, v.PullRequest)
		showQuestions(e.stdout, t, v.Questions)
		if err := showRoles(e.stdout, v.Roles); err != nil {
			return err
		}
		if err := showEvents(e.stdout, v.Events); err != nil {
			return err
		}
		if err := showCalls(e.stdout, v.ModelCalls, v.Totals); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "full timeline with tool calls: ticketctl logs %d\n", t.ID)
		return nil
	})
}

// loadShow reads everything show prints about a ticket from the store.
func loadShow(e *env, s *store.Store, t store.Ticket) (showJSON, error) {
	v := showJSON{Ticket: t}
	var err error
	if v.Events, err = s.Events(e.ctx, t.ID); err != nil {
		return v, err
	}
	if v.ModelCalls, err = s.ModelCalls(e.ctx, t.ID); err != nil {
		return v, err
	}
	if v.Reviews, err = s.Reviews(e.ctx, t.ID); err != nil {
		return v, err
	}
	if v.Questions, err = s.Questions(e.ctx, t.ID); err != nil {
		return v, err
	}
	if v.Files, err = s.Artifacts(e.ctx, t.ID); err != nil {
		return v, err
	}
	if v.Requeues, err = s.Requeues(e.ctx, t.ID); err != nil {
		return v, err
	}
	if v.Rounds, err = s.Rounds(e.ctx, t.ID); err != nil {
		return v, err
	}
	if v.PullRequest, err = s.PullWatchOf(e.ctx, t.ID); err != nil {
		return v, err
	}
	v.Totals, v.Roles = figures(v.ModelCalls)
	return v, nil
}

// showSummary prints the ticket's title and its table of facts and figures.
func showSummary(w io.Writer, v showJSON) error {
	t := v.Ticket
	fmt.Fprintf(w, "Ticket %d: %s\n", t.ID, t.Title)
	tw := newTable(w)
	for _, r := range append(ticketRows(t), spendRows(v.Totals, v.Reviews)...) {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	for _, r := range stateRows(t, v.Files) {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// ticketRows are the ticket's own facts: state, attempts, origin, outcome.
func ticketRows(t store.Ticket) [][2]string {
	state := string(t.State)
	if t.CancelRequested && !t.State.Terminal() {
		state += " (cancel requested)"
	}
	return [][2]string{
		{"state", state},
		{"attempts", attemptsText(t)},
		{"rescues", fmt.Sprintf("%d (attempts lost to an expired lease, not charged); %d crash(es) blamed on it (its attempt alone in flight when ticketd died)", t.Rescues, t.Crashes)},
		{"repo", orDash(t.Repo)},
		{"source", t.Source + " / " + t.ExternalID},
		{"labels", orDash(strings.Join(t.Labels, ", "))},
		{"priority", fmt.Sprint(t.Priority)},
		{"created", fmtTime(t.CreatedAt)},
		{"finished", fmtTime(t.FinishedAt)},
		{"branch", orDash(t.Branch)},
		{"result dir", orDash(t.ResultDir)},
		{"reason", orDash(t.Reason)},
		{"summary", orDash(clip(t.Summary, 200))},
	}
}

// spendRows are what the ticket's model calls and reviews cost and did.
func spendRows(total spend, reviews []store.Review) [][2]string {
	dropped := 0
	for _, r := range reviews {
		dropped += r.Dropped
	}
	return [][2]string{
		{"model calls", fmt.Sprintf("%d (%d failed)", total.Requests, total.Failed)},
		{"tokens", fmt.Sprintf("prompt %d, cached %d, completion %d, reasoning %d%s",
			total.PromptTokens, total.CachedTokens, total.CompletionTokens, total.ReasoningTokens, total.tokensNote())},
		{"cost", total.costText()},
		{"reviews", fmt.Sprintf("%d reviewer call(s)%s, %d finding(s) dropped (evidence not in the diff, bad schema, or new in round 2)", len(reviews), reviewersText(reviews), dropped)},
		{"compactions", fmt.Sprintf("%d (passes that shrank the maker's conversation to fit its window)", total.Compactions)},
		{"continuations", fmt.Sprintf("%d (answers cut at the output limit and continued)", total.Continuations)},
	}
}

// stateRows are the rows only some tickets have: parked, leased, with files, pruned.
func stateRows(t store.Ticket, files []store.Artifact) [][2]string {
	var rows [][2]string
	if t.State == store.StateParked {
		rows = append(rows, [2]string{"parked", fmt.Sprintf("back in the queue at the next night: a scheduled one from %s on, or the next `ticketd once`; ticketctl requeue %d puts it back now", fmtTime(t.RunAfter), t.ID)})
	}
	if t.State == store.StateRunning {
		rows = append(rows, [2]string{"lease", fmt.Sprintf("%s on node %s until %s", orDash(t.LeaseOwner), orDash(t.LeaseNode), fmtTime(t.LeaseExpiresAt))})
	} else if t.LeaseNode != "" {
		rows = append(rows, [2]string{"node", t.LeaseNode + " (of the last attempt)"})
	}
	if len(files) > 0 {
		var names []string
		for _, f := range files {
			names = append(names, f.Path)
		}
		rows = append(rows, [2]string{"files", fmt.Sprintf("%s (ticketctl report %d [FILE])", clip(strings.Join(names, " "), 200), t.ID)})
	}
	if !t.PrunedAt.IsZero() {
		rows = append(rows, [2]string{"pruned", fmtTime(t.PrunedAt) + " (body and payloads removed by gc)"})
	}
	return rows
}

// indent puts a multi-line text under a heading, two spaces in.
func indent(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ") }

// showBody prints the issue text, unless gc pruned it.
func showBody(w io.Writer, t store.Ticket) {
	if t.Body != "" {
		fmt.Fprintf(w, "\nBody:\n  %s\n", indent(t.Body))
	}
}

// showRequeues prints each requeue with who did it, the branch it kept and its note.
func showRequeues(w io.Writer, requeues []store.Requeued) {
	for _, r := range requeues {
		fmt.Fprintf(w, "\nRequeue %d by %s (%s), from %s after %d attempt(s)", r.N, orDash(r.Actor), fmtTime(r.At), r.FromState, r.Attempts)
		if r.Branch != "" {
			fmt.Fprintf(w, "; its fix branch %s is kept", r.Branch)
		}
		fmt.Fprintln(w)
		if r.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", indent(r.Note))
		}
	}
}

// showQuestions prints each question the maker asked and its answer, or how to give one.
func showQuestions(w io.Writer, t store.Ticket, questions []store.Question) {
	for _, q := range questions {
		fmt.Fprintf(w, "\nQuestion %d (asked by attempt %d, %s):\n  %s\n", q.N, q.Attempt, fmtTime(q.AskedAt), indent(q.Text))
		if q.CommentURL != "" {
			fmt.Fprintf(w, "  posted: %s\n", q.CommentURL)
		}
		if q.Answered {
			fmt.Fprintf(w, "Answer (%s, %s):\n  %s\n", orDash(q.AnsweredBy), fmtTime(q.AnsweredAt), indent(q.Answer))
		} else {
			fmt.Fprintf(w, "Not answered yet: ticketctl answer %d \"TEXT\"\n", t.ID)
		}
	}
}

// showRoles prints the spend per role, marking estimated token counts with "~".
func showRoles(w io.Writer, roles map[string]*roleFigures) error {
	if len(roles) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nPer role:\n")
	tw := newTable(w)
	fmt.Fprintln(tw, "  ROLE\tREQUESTS\tPROMPT\tCACHED\tCOMPLETION\tFIRST REQ CACHED\tCOST")
	for _, name := range slices.Sorted(maps.Keys(roles)) {
		r := roles[name]
		mark := ""
		if r.EstimatedCalls > 0 {
			mark = "~"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s%d\t%s%d\t%s%d\t%s%s\t%s\n", name, r.Requests, mark, r.PromptTokens, mark, r.CachedTokens,
			mark, r.CompletionTokens, mark, fmtShare(r.FirstRequestCachedShare), r.costText())
	}
	return tw.Flush()
}

// showEvents prints the ticket's state changes.
func showEvents(w io.Writer, events []store.Event) error {
	fmt.Fprintf(w, "\nEvents:\n")
	tw := newTable(w)
	fmt.Fprintln(tw, "  TIME\tKIND\tFROM\tTO\tATTEMPT\tACTOR\tREASON")
	for _, ev := range events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\n", fmtTime(ev.At), ev.Kind, orDash(string(ev.FromState)),
			orDash(string(ev.ToState)), ev.Attempt, orDash(ev.Actor), orDash(clip(ev.Reason, 80)))
	}
	return tw.Flush()
}

// showCalls prints one row per model call, with a legend when some usage was estimated.
func showCalls(w io.Writer, calls []store.ModelCall, total spend) error {
	if len(calls) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nModel calls:\n")
	tw := newTable(w)
	fmt.Fprintln(tw, "  #\tATTEMPT\tROLE\tMODEL\tPROMPT\tCACHED\tCOMPLETION\tCOST\tLATENCY\tFINISH\tCONT\tERROR")
	for i, c := range calls {
		errText := c.ErrorClass
		if c.Retries > 0 {
			errText = strings.TrimSpace(fmt.Sprintf("%s (%d retries)", c.ErrorClass, c.Retries))
		}
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", i+1, c.Attempt, c.Role, c.Model,
			callTokens(c, c.PromptTokens), callTokens(c, c.CachedTokens), callTokens(c, c.CompletionTokens), callCost(c),
			fmtDur(c.Latency), orDash(c.FinishReason), c.Continuations, orDash(errText))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if total.EstimatedCalls > 0 {
		fmt.Fprintf(w, "  ~ estimated: the server sent no usage; tokens are ceil(bytes/4) of the request and answer, cost is those tokens at the price table\n")
	}
	return nil
}

// reviewersText names the reviewers with their call counts when more than correctness ran.
func reviewersText(reviews []store.Review) string {
	by := map[string]int{}
	for _, r := range reviews {
		by[r.Reviewer]++
	}
	if len(by) < 2 {
		return ""
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %d", orDash(name), by[name]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// notFoundHint adds the command to try to an unknown-id error, keeping ErrNotFound wrapped.
func notFoundHint(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w (ticketctl list shows the ids)", err)
	}
	return err
}

// cmdReport prints one file of a ticket's results folder as the database keeps it, so any
// node shows what the node that worked the ticket wrote: report.md by default.
func cmdReport(e *env, args []string) error {
	fs := e.flagSet("report")
	pos, err := e.parse(fs, args, 1, 2)
	if err != nil {
		return err
	}
	id, err := e.parseID(pos[0])
	if err != nil {
		return err
	}
	name := "report.md"
	if len(pos) == 2 {
		name = pos[1]
	}
	return e.withStore(func(s *store.Store) error {
		if _, err := s.Get(e.ctx, id); err != nil {
			return notFoundHint(err)
		}
		data, err := s.Artifact(e.ctx, id, name)
		if errors.Is(err, store.ErrNoArtifact) {
			return fmt.Errorf("ticket %d has no file %s in the database; ticketctl show %d lists its files: %w", id, name, id, err)
		}
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(struct {
				TicketID int64  `json:"ticket_id"`
				Path     string `json:"path"`
				Content  string `json:"content"`
			}{id, name, string(data)})
		}
		_, err = e.stdout.Write(data)
		return err
	})
}

// attemptsText says how many attempts a ticket had, and of which budget: after a requeue the
// numbers go on, and the budget counts from there.
func attemptsText(t store.Ticket) string {
	if t.AttemptsBefore == 0 {
		return fmt.Sprintf("%d of %d", t.Attempts, t.MaxAttempts)
	}
	return fmt.Sprintf("%d (%d before the latest requeue; %d more at most, up to attempt %d)",
		t.Attempts, t.AttemptsBefore, max(t.AttemptLimit()-t.Attempts, 0), t.AttemptLimit())
}
