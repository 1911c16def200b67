package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/ticketd/ticketd/pipeline/tools"
)

// metric is one row of the summary and compare tables.
type metric struct {
	name   string
	value  func(Totals) float64
	format func(float64) string
}

func pct(v float64) string     { return fmt.Sprintf("%.1f%%", 100*v) }
func usd(v float64) string     { return fmt.Sprintf("$%.4f", v) }
func secs(v float64) string    { return fmt.Sprintf("%.2fs", v) }
func num(v float64) string     { return fmt.Sprintf("%.1f", v) }
func integer(v float64) string { return fmt.Sprintf("%.0f", v) }

// metrics are the figures of issue 3's table, in its order; the first-request cached
// shares follow, one row per role.
var metrics = []metric{
	{"success rate (hidden tests)", func(t Totals) float64 { return t.SuccessRate }, pct},
	{"done by the pipeline", func(t Totals) float64 { return float64(t.PipelineDone) }, integer},
	{"cost per ticket", func(t Totals) float64 { return t.CostPerTicketUSD }, usd},
	{"duration per ticket P50", func(t Totals) float64 { return t.DurationP50S }, secs},
	{"duration per ticket P90", func(t Totals) float64 { return t.DurationP90S }, secs},
	{"model requests per ticket", func(t Totals) float64 { return t.ModelRequestsPerTicket }, num},
	{"prompt tokens per ticket", func(t Totals) float64 { return t.PromptTokensPerTicket }, integer},
	{"cached tokens per ticket", func(t Totals) float64 { return t.CachedTokensPerTicket }, integer},
	{"completion tokens per ticket", func(t Totals) float64 { return t.CompletionTokensPerTicket }, integer},
	{"escalated", func(t Totals) float64 { return t.Escalated }, integer},
	{"duplicates worked twice", func(t Totals) float64 { return float64(t.DuplicatesWorkedTwice) }, integer},
	{"published fixes that conflict", func(t Totals) float64 { return float64(t.PublishedConflicts) }, integer},
	{"night wall time", func(t Totals) float64 { return t.NightS }, secs},
	{"night at an even split of its attempts", func(t Totals) float64 { return t.Shape.EvenSplitS }, secs},
	{"first claim after", func(t Totals) float64 { return t.Shape.FirstClaimS }, secs},
	{"last claim after", func(t Totals) float64 { return t.Shape.LastClaimS }, secs},
	{"tickets per hour", func(t Totals) float64 { return t.TicketsPerHour }, integer},
	{"maker calls per ticket", func(t Totals) float64 { return t.MakerCallsPerTicket }, num},
	{"tool calls per ticket", func(t Totals) float64 { return t.ToolCallsPerTicket }, num},
	{"failed tool calls per ticket", func(t Totals) float64 { return t.FailedToolCallsPerTicket }, dec2},
	{"failed edits per ticket", func(t Totals) float64 { return t.FailedEditsPerTicket }, dec2},
	{"compactions per ticket", func(t Totals) float64 { return t.CompactionsPerTicket }, dec2},
	{"reviewer calls per ticket", func(t Totals) float64 { return t.ReviewerCallsPerTicket }, dec2},
	{"review findings per ticket", func(t Totals) float64 { return t.FindingsPerTicket }, dec2},
	{"arbiter calls per ticket", func(t Totals) float64 { return t.ArbiterCallsPerTicket }, dec2},
}

// findingsMetric is the row of one reviewer's findings per ticket.
func findingsMetric(reviewer string) metric {
	return metric{"findings per ticket: " + reviewer, func(t Totals) float64 { return t.FindingsBy[reviewer] }, dec2}
}

func dec2(v float64) string { return fmt.Sprintf("%.2f", v) }

// rungMetric is the row of applied edits matched on one rung of edit_file's ladder.
func rungMetric(rung string) metric {
	return metric{"edits on rung " + rung, func(t Totals) float64 { return t.EditRungs[rung] }, integer}
}

// rungRows are the rung rows for the rungs any of ts used, in the ladder's order, then any
// rung the ladder no longer knows.
func rungRows(ts ...Totals) []metric {
	seen := map[string]bool{}
	for _, t := range ts {
		for r := range t.EditRungs {
			seen[r] = true
		}
	}
	var out []metric
	for _, r := range tools.Rungs {
		if seen[string(r)] {
			out = append(out, rungMetric(string(r)))
			delete(seen, string(r))
		}
	}
	rest := make([]string, 0, len(seen))
	for r := range seen {
		rest = append(rest, r)
	}
	sort.Strings(rest)
	for _, r := range rest {
		out = append(out, rungMetric(r))
	}
	return out
}

func shareMetric(role string) metric {
	return metric{"first request cached share: " + role, func(t Totals) float64 { return t.FirstRequestCachedShare[role] }, pct}
}

// printSummary prints the median table with one column per round beside it.
func printSummary(w io.Writer, s Summary) error {
	fmt.Fprintf(w, "ticketd bench: %d cases × %d round(s), %d workers, scenario %s, endpoint %s", s.Cases, s.Rounds, s.Workers, s.Scenario, s.Endpoint)
	if s.Endpoint == "scripted" {
		fmt.Fprintf(w, ", simulated latency %gs per call", s.Latency)
	}
	fmt.Fprintf(w, "\ncommit %s, config %s\nmachine %s %s/%s, %d CPUs, %s\n\n", s.Commit, shortHash(s.ConfigHash),
		s.Machine.Hostname, s.Machine.GOOS, s.Machine.GOARCH, s.Machine.NumCPU, s.Machine.GoVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"METRIC", "MEDIAN"}
	for i := range s.PerRound {
		header = append(header, fmt.Sprintf("ROUND %d", i+1))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	rows := append(append([]metric{}, metrics...), splitMetrics()...)
	rows = append(rows, rungRows(append([]Totals{s.Totals}, s.PerRound...)...)...)
	for _, r := range sortedRoles(s.FindingsBy) {
		rows = append(rows, findingsMetric(r))
	}
	for _, role := range sortedRoles(s.FirstRequestCachedShare) {
		rows = append(rows, shareMetric(role))
	}
	for _, m := range rows {
		cells := []string{m.name, m.format(m.value(s.Totals))}
		for _, r := range s.PerRound {
			cells = append(cells, m.format(m.value(r)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.CostUnknown {
		fmt.Fprintln(w, "\nsome model calls had no known price: their cost is not in the figures above")
	}
	_, err := fmt.Fprintf(w, "\nsuccess is judged by the hidden tests on each ticket's branch; %d round line(s) appended to %s; the bench took %.1fs\n",
		len(s.PerRound), s.Out, s.WallS)
	return err
}

func writeSummaryJSON(w io.Writer, s Summary) error {
	enc := json.NewEncoder(w)
	return enc.Encode(s)
}

// printCompare prints result lines a and b of path side by side (as JSON with asJSON).
func printCompare(w io.Writer, path string, a, b int, asJSON bool) error {
	recs, err := readRecords(path, a, b)
	if err != nil {
		return err
	}
	ra, rb := recs[0], recs[1]
	if asJSON {
		return json.NewEncoder(w).Encode(map[string]Record{"a": ra, "b": rb})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\tLINE %d\tLINE %d\tCHANGE\n", a, b)
	info := []struct {
		name string
		f    func(Record) string
	}{
		{"timestamp", func(r Record) string { return r.Timestamp.Format("2006-01-02 15:04:05Z") }},
		{"commit", func(r Record) string { return shortCommit(r.Commit) }},
		{"config", func(r Record) string { return shortHash(r.ConfigHash) }},
		{"scenario", func(r Record) string { return r.Scenario }},
		{"endpoint", func(r Record) string { return r.Endpoint }},
		{"workers", func(r Record) string { return fmt.Sprint(r.Workers) }},
		{"latency", func(r Record) string { return fmt.Sprintf("%gs", r.Latency) }},
		{"round", func(r Record) string { return fmt.Sprintf("%d/%d", r.Round, r.Rounds) }},
		{"cases", func(r Record) string { return fmt.Sprint(len(r.Cases)) }},
		{"machine", func(r Record) string { return fmt.Sprintf("%s load %.2f", r.Machine.Hostname, r.Machine.Load1) }},
	}
	for _, i := range info {
		x, y := i.f(ra), i.f(rb)
		change := ""
		if x != y {
			change = "differs"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", i.name, x, y, change)
	}
	rows := append(append([]metric{}, metrics...), splitMetrics()...)
	rows = append(rows, rungRows(ra.Totals, rb.Totals)...)
	roles := map[string]float64{}
	for k, v := range ra.Totals.FirstRequestCachedShare {
		roles[k] = v
	}
	for k, v := range rb.Totals.FirstRequestCachedShare {
		roles[k] = v
	}
	for _, role := range sortedRoles(roles) {
		rows = append(rows, shareMetric(role))
	}
	for _, m := range rows {
		x, y := m.value(ra.Totals), m.value(rb.Totals)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.name, m.format(x), m.format(y), change(x, y))
	}
	return tw.Flush()
}

// change is b relative to a: "+12.5%", or the absolute difference when a is 0.
func change(a, b float64) string {
	switch {
	case a == b:
		return "="
	case a == 0:
		return fmt.Sprintf("%+.4g", b-a)
	default:
		return fmt.Sprintf("%+.1f%%", 100*(b-a)/a)
	}
}

func shortHash(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func shortCommit(c string) string {
	head, dirty := strings.CutSuffix(c, "-dirty")
	if len(head) > 12 {
		head = head[:12]
	}
	if dirty {
		head += "-dirty"
	}
	return head
}
