package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/intake"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/scripts/bench/caseset"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

// smallCases are three easy cases whose scripted wrong guess is a syntax error the visible
// tests catch, so scenario never must end every one of them escalated.
const smallCases = `^(pager-last-page|ledger-negative-amounts|thermo-fahrenheit)$`

// smallConfig keeps nights short: quick retries, two attempts, a fast poll. Its loopback
// endpoint makes the bench start the scripted model and point the roles at it.
const smallConfig = `night:
  workers: 3
  lease: 15s
  heartbeat: 5s
  max_attempts: 2
  retry_backoff: 100ms
  poll: 50ms
budget:
  max_steps: 12
  wall_clock: 2m
models:
  endpoints:
    scripted: {base_url: "http://127.0.0.1:1/v1"}
  roles:
    triage:  {endpoint: scripted, model: gpt-4.1-mini}
    maker:   {endpoint: scripted, model: gpt-4.1}
    checker: {endpoint: scripted, model: gpt-4.1-mini}
    judge:   {endpoint: scripted, model: gpt-4.1-mini}
`

// benchRun is one in-process `go run ./scripts/bench` with --config smallConfig, --json
// and --out in a fresh folder; it returns the summary and the result lines.
func benchRun(t *testing.T, args ...string) (Summary, []Record) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs bench nights (long tier; run without -short)")
	}
	_, err := caseset.PytestCommand(t.Context())
	testenv.Need(t, testenv.Pytest, err)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(cfg, []byte("sandbox: "+string(testSandbox(t))+"\n"+smallConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results.jsonl")
	args = append([]string{"--config", cfg, "--json", "--out", out, "--rounds", "1"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != exitOK {
		t.Fatalf("run(%q) = %d, want 0\nstderr:\n%s", args, code, stderr.String())
	}
	var sum Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("run(%q): stdout is not one JSON summary: %v\n%s", args, err, stdout.String())
	}
	n, err := countLines(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]int, n)
	for i := range lines {
		lines[i] = i + 1
	}
	recs, err := readRecords(out, lines...)
	if err != nil {
		t.Fatal(err)
	}
	return sum, recs
}

func TestBenchSolveSucceeds(t *testing.T) {
	sum, recs := benchRun(t, "--scenario", "solve", "--filter", smallCases)
	if sum.SuccessRate != 1 || sum.Escalated != 0 || sum.Cases != 3 {
		t.Errorf("scenario solve: success_rate %v, escalated %v, cases %d; want 1, 0, 3", sum.SuccessRate, sum.Escalated, sum.Cases)
	}
	if len(recs) != 1 {
		t.Fatalf("results lines = %d, want 1 (one per round)", len(recs))
	}
	r := recs[0]
	for _, o := range r.Cases {
		if !o.Success || o.State != "done" || o.ModelCalls == 0 || o.DurationS <= 0 || o.Branch == "" {
			t.Errorf("case %s: success %v state %q calls %d duration %v branch %q; want a judged, done ticket with calls and a duration",
				o.Name, o.Success, o.State, o.ModelCalls, o.DurationS, o.Branch)
		}
	}
	if !strings.HasPrefix(r.ConfigHash, "sha256:") || r.Commit == "" || r.Machine.NumCPU == 0 || r.Workers != 3 || r.Scenario != "solve" {
		t.Errorf("record header: hash %q commit %q cpus %d workers %d scenario %q", r.ConfigHash, r.Commit, r.Machine.NumCPU, r.Workers, r.Scenario)
	}
	if sum.ModelRequestsPerTicket <= 0 || sum.PromptTokensPerTicket <= 0 || sum.TicketsPerHour <= 0 || sum.CostPerTicketUSD <= 0 {
		t.Errorf("summary figures: requests %v prompt %v tickets/h %v cost %v; want all > 0",
			sum.ModelRequestsPerTicket, sum.PromptTokensPerTicket, sum.TicketsPerHour, sum.CostPerTicketUSD)
	}
	if _, ok := sum.FirstRequestCachedShare["maker"]; !ok {
		t.Errorf("first_request_cached_share = %v, want a maker entry", sum.FirstRequestCachedShare)
	}
	// The split is measured by the product (each attempt's record): a solved ticket waited
	// on the model, ran checks, git and the store.
	if s := sum.TimeP50; s.ModelWaitS <= 0 || s.ChecksS <= 0 || s.GitS <= 0 || s.StoreS <= 0 || s.SandboxStartS <= 0 {
		t.Errorf("time_p50 = %+v; want model wait, checks, git, sandbox start and store all > 0", s)
	}
}

// TestBenchNeverFails is issue 3's negative control: the number can fail.
func TestBenchNeverFails(t *testing.T) {
	sum, recs := benchRun(t, "--scenario", "never", "--filter", smallCases)
	if sum.SuccessRate != 0 || sum.Escalated != 3 {
		t.Errorf("scenario never: success_rate %v, escalated %v; want 0 and 3", sum.SuccessRate, sum.Escalated)
	}
	for _, o := range recs[0].Cases {
		if o.Success || o.State != "escalated" || o.Attempts != 2 {
			t.Errorf("case %s: success %v state %q attempts %d; want false, escalated, 2", o.Name, o.Success, o.State, o.Attempts)
		}
	}
}

// TestBenchTamperShipsNothing: a maker that cheats instead of fixing (one move per case)
// ships nothing: no ticket is done, none is solved by the hidden tests.
func TestBenchTamperShipsNothing(t *testing.T) {
	sum, recs := benchRun(t, "--scenario", "tamper", "--filter", smallCases)
	if sum.SuccessRate != 0 || sum.PipelineDone != 0 {
		t.Errorf("scenario tamper: success_rate %v, done %v; want 0 and 0", sum.SuccessRate, sum.PipelineDone)
	}
	for _, o := range recs[0].Cases {
		if o.Success || o.State == "done" {
			t.Errorf("case %s: success %v state %q branch %q; a cheat shipped", o.Name, o.Success, o.State, o.Branch)
		}
	}
}

// TestBenchCasesOutsideRepo runs a case folder copied outside the repository.
func TestBenchCasesOutsideRepo(t *testing.T) {
	cases := t.TempDir()
	copyTree(t, filepath.Join("cases", "pager-last-page"), filepath.Join(cases, "my-pager"))
	sum, recs := benchRun(t, "--cases", cases)
	if sum.Cases != 1 || sum.SuccessRate != 1 {
		t.Fatalf("--cases %s: cases %d success_rate %v; want 1 and 1 (easy case, scripted solve)", cases, sum.Cases, sum.SuccessRate)
	}
	if got := recs[0].Cases[0].Name; got != "my-pager" {
		t.Errorf("case name = %q, want my-pager", got)
	}
	if recs[0].CasesDir != cases {
		t.Errorf("cases_dir = %q, want %q", recs[0].CasesDir, cases)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == "__pycache__" || d.Name() == ".pytest_cache" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr bool
		check   func(options) bool
	}{
		{args: nil, check: func(o options) bool {
			return o.rounds == 3 && o.workers == 0 && o.scenario == scenarioByDifficulty && strings.HasSuffix(o.out, filepath.Join("scripts", "bench", "results.local.jsonl")) && !o.compare
		}},
		// Only --record writes the shared record in git: a plain run leaves the tree clean.
		{args: []string{"--record"}, check: func(o options) bool {
			return o.record && strings.HasSuffix(o.out, filepath.Join("scripts", "bench", "results.jsonl"))
		}},
		{args: []string{"--out", "x.jsonl"}, check: func(o options) bool { return o.out == "x.jsonl" }},
		{args: []string{"--record", "--out", "x.jsonl"}, wantErr: true},
		{args: []string{"--compare"}, check: func(o options) bool { return o.compare && o.compareLines == "" }},
		{args: []string{"--compare", "2,5"}, check: func(o options) bool { return o.compare && o.compareLines == "2,5" }},
		{args: []string{"--compare=1,3"}, check: func(o options) bool { return o.compare && o.compareLines == "1,3" }},
		{args: []string{"--latency", "2s", "--workers", "1"}, check: func(o options) bool { return o.latency == 2*time.Second && o.workers == 1 }},
		{args: []string{"--compare=a,b"}, wantErr: true},
		{args: []string{"--scenario", "bogus"}, wantErr: true},
		{args: []string{"--rounds", "0"}, wantErr: true},
		{args: []string{"--filter", "("}, wantErr: true},
		{args: []string{"stray"}, wantErr: true},
	}
	for _, tc := range tests {
		o, err := parseFlags(tc.args, &bytes.Buffer{})
		if (err != nil) != tc.wantErr {
			t.Errorf("parseFlags(%q): err = %v, want error %v", tc.args, err, tc.wantErr)
			continue
		}
		if err == nil && !tc.check(o) {
			t.Errorf("parseFlags(%q) = %+v, not what was asked", tc.args, o)
		}
	}
}

func TestMedianAndPercentile(t *testing.T) {
	tests := []struct {
		in           []float64
		median, p90  float64
		wantP50Equal float64
	}{
		{in: nil, median: 0, p90: 0, wantP50Equal: 0},
		{in: []float64{3}, median: 3, p90: 3, wantP50Equal: 3},
		{in: []float64{5, 1, 3}, median: 3, p90: 5, wantP50Equal: 3},
		{in: []float64{4, 1, 3, 2}, median: 2.5, p90: 4, wantP50Equal: 2},
	}
	for _, tc := range tests {
		if got := median(tc.in); got != tc.median {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.median)
		}
		if got := percentile(tc.in, 90); got != tc.p90 {
			t.Errorf("percentile(%v, 90) = %v, want %v", tc.in, got, tc.p90)
		}
		if got := percentile(tc.in, 50); got != tc.wantP50Equal {
			t.Errorf("percentile(%v, 50) = %v, want %v", tc.in, got, tc.wantP50Equal)
		}
	}
}

func TestMedianTotalsPerRole(t *testing.T) {
	rounds := []Totals{
		{SuccessRate: 0.9, TicketsPerHour: 100, FirstRequestCachedShare: map[string]float64{"maker": 0.5}},
		{SuccessRate: 0.8, TicketsPerHour: 300, FirstRequestCachedShare: map[string]float64{"maker": 0.9, "triage": 0.2}},
		{SuccessRate: 1.0, TicketsPerHour: 200, FirstRequestCachedShare: map[string]float64{"maker": 0.7}},
	}
	m := medianTotals(rounds)
	if m.SuccessRate != 0.9 || m.TicketsPerHour != 200 || m.FirstRequestCachedShare["maker"] != 0.7 || m.FirstRequestCachedShare["triage"] != 0.2 {
		t.Errorf("medianTotals(%+v) = %+v; want success 0.9, tickets/h 200, maker 0.7, triage 0.2", rounds, m)
	}
}

func TestTotals(t *testing.T) {
	outs := []Outcome{
		{State: "done", Success: true, Attempts: 1, ModelCalls: 4, PromptTokens: 100, CostUSD: 0.02, DurationS: 1, Claimed: true},
		{State: "done", Success: false, Attempts: 1, ModelCalls: 6, PromptTokens: 300, CostUSD: 0.04, DurationS: 3, Claimed: true},
		{State: "escalated", Attempts: 2, ModelCalls: 8, CostUSD: 0.06, DurationS: 2, Claimed: true},
		{State: "not_enqueued"},
	}
	got := totals(outs, 30*time.Second, nil)
	want := Totals{Tickets: 4, Solved: 1, PipelineDone: 2, SuccessRate: 0.25, Escalated: 1, CostPerTicketUSD: 0.03,
		ModelRequestsPerTicket: 4.5, PromptTokensPerTicket: 100, DurationP50S: 2, DurationP90S: 3, TicketsPerHour: 480, NightS: 30}
	if got.Tickets != want.Tickets || got.Solved != want.Solved || got.PipelineDone != want.PipelineDone ||
		got.SuccessRate != want.SuccessRate || got.Escalated != want.Escalated || !near(got.CostPerTicketUSD, want.CostPerTicketUSD) ||
		got.ModelRequestsPerTicket != want.ModelRequestsPerTicket || got.PromptTokensPerTicket != want.PromptTokensPerTicket ||
		got.DurationP50S != want.DurationP50S || got.DurationP90S != want.DurationP90S || !near(got.TicketsPerHour, want.TicketsPerHour) {
		t.Errorf("totals(%+v)\n got  %+v\n want %+v", outs, got, want)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"http://127.0.0.1:8080/v1", true},
		{"http://localhost:11434/v1", true},
		{"http://[::1]:9000/v1", true},
		{"https://api.openai.com/v1", false},
		{"http://10.0.0.5:8000/v1", false},
		{"", false}, // empty means api.openai.com
	}
	for _, tc := range tests {
		if got := isLoopback(tc.url); got != tc.want {
			t.Errorf("isLoopback(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

func TestDirty(t *testing.T) {
	tests := []struct {
		status string
		want   bool
	}{
		{"", false},
		{"?? results.jsonl\n", false},
		{" M store/queue.go\n", true},
		{"?? store/commit.go\n", true},
		{" M scripts/bench/results.jsonl\n", false},
		{" M scripts/bench/results.jsonl\n M scripts/bench/round.go\n", true},
	}
	for _, tc := range tests {
		if got := dirty(tc.status); got != tc.want {
			t.Errorf("dirty(%q) = %v, want %v", tc.status, got, tc.want)
		}
	}
}

// TestIssueFileParses checks that every case's intake file parses back to its own title,
// labels and body, and names the case as its repo.
func TestIssueFileParses(t *testing.T) {
	cases, err := caseset.Load("cases")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range cases {
		is, err := intake.ParseIssue([]byte(issueFile(k)))
		if err != nil {
			t.Errorf("case %s: ParseIssue(issueFile) error %v", k.Name, err)
			continue
		}
		if is.Title != k.Title || is.Repo != k.Name || is.Body != k.Body || strings.Join(is.Labels, ",") != strings.Join(k.Labels, ",") {
			t.Errorf("case %s: parsed %+v; want title %q repo %q labels %v and the body", k.Name, is, k.Title, k.Name, k.Labels)
		}
	}
}

// TestRoundConfigHash checks that the hash ignores the round's folder and the scripted
// model's port but not a knob.
func TestRoundConfigHash(t *testing.T) {
	cases, err := caseset.Load("cases")
	if err != nil {
		t.Fatal(err)
	}
	cases = cases[:2]
	base, err := baseConfig(options{workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	hash := func(cfg config.Config, url string) string {
		t.Helper()
		_, _, h, err := roundConfig(cfg, t.TempDir(), cases, url)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := hash(base, "http://127.0.0.1:40001/v1"), hash(base, "http://127.0.0.1:40002/v1")
	if a != b {
		t.Errorf("hash differs between rounds of one config: %s vs %s", a, b)
	}
	other := base
	other.Night.Workers = 1
	if c := hash(other, "http://127.0.0.1:40001/v1"); c == a {
		t.Errorf("hash %s is the same for workers 3 and 1", c)
	}
}

func TestCompare(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results.jsonl")
	for i, rate := range []float64{0.5, 0.8, 0.9} {
		rec := Record{Round: 1, Rounds: 1, Scenario: "solve", Workers: i + 1, ConfigHash: "sha256:abc",
			Totals: Totals{SuccessRate: rate, FirstRequestCachedShare: map[string]float64{"maker": 0.5}}}
		if err := appendRecord(out, rec); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--compare"}, []string{"LINE 2", "LINE 3", "80.0%", "90.0%", "+12.5%", "first request cached share: maker"}},
		{[]string{"--compare", "1,3"}, []string{"LINE 1", "LINE 3", "50.0%", "90.0%", "+80.0%"}},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		args := append(tc.args, "--out", out)
		if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
			t.Fatalf("run(%q) = %d\n%s", args, code, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("run(%q) output lacks %q:\n%s", args, w, stdout.String())
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--compare", "1,9", "--out", out}, &stdout, &stderr); code != exitError {
		t.Errorf("--compare 1,9 on a 3-line file: exit %d, want %d", code, exitError)
	}
}

func TestUsesRealEndpoint(t *testing.T) {
	withURL := func(urls ...string) config.Config {
		c := config.Default()
		c.Models.Endpoints = map[string]model.Endpoint{}
		for i, u := range urls {
			c.Models.Endpoints[fmt.Sprint("ep", i)] = model.Endpoint{BaseURL: u}
		}
		return c
	}
	tests := []struct {
		name string
		o    options
		cfg  config.Config
		want bool
	}{
		{"no --config is always scripted", options{}, withURL("https://api.openai.com/v1"), false},
		{"loopback endpoints are scripted", options{configFile: "x.yaml"}, withURL("http://127.0.0.1:1/v1", "http://localhost:2/v1"), false},
		{"a remote endpoint is real", options{configFile: "x.yaml"}, withURL("http://127.0.0.1:1/v1", "https://api.openai.com/v1"), true},
		{"an empty base_url is api.openai.com", options{configFile: "x.yaml"}, withURL(""), true},
	}
	for _, tc := range tests {
		if got := usesRealEndpoint(tc.o, tc.cfg); got != tc.want {
			t.Errorf("%s: usesRealEndpoint(%+v, endpoints %v) = %v, want %v", tc.name, tc.o, tc.cfg.Models.Endpoints, got, tc.want)
		}
	}
}

func TestPrintSummary(t *testing.T) {
	r1 := Totals{SuccessRate: 0.9, CostPerTicketUSD: 0.0141, DurationP50S: 1.2, TicketsPerHour: 7000,
		FirstRequestCachedShare: map[string]float64{"maker": 0.756}, MakerCallsPerTicket: 4.25, FailedEditsPerTicket: 0.33,
		EditRungs: map[string]float64{"exact": 40, "indent_shift": 3, "anchors": 1}}
	s := Summary{Totals: r1, Rounds: 1, Workers: 3, Scenario: "by-difficulty", Endpoint: "scripted", Cases: 30,
		Out: "results.jsonl", PerRound: []Totals{r1}}
	var b bytes.Buffer
	if err := printSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"30 cases × 1 round(s), 3 workers", "success rate (hidden tests)", "90.0%", "$0.0141",
		"first request cached share: maker", "75.6%", "ROUND 1", "7000", "maker calls per ticket", "4.2",
		"failed edits per ticket", "0.33", "edits on rung exact", "edits on rung indent_shift"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printSummary output lacks %q:\n%s", want, b.String())
		}
	}
	// The rung rows follow the ladder's order: exact, then indent_shift, then anchors.
	if i, j, k := strings.Index(b.String(), "rung exact"), strings.Index(b.String(), "rung indent_shift"), strings.Index(b.String(), "rung anchors"); !(i < j && j < k) {
		t.Errorf("rung rows out of ladder order (%d, %d, %d):\n%s", i, j, k, b.String())
	}
}

// TestToolFigures reads a ticket's maker calls, compactions, failed calls and rungs back
// from a real store file, as outcomes does after a night.
func TestToolFigures(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "1", Repo: "r", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, mc := range []store.ModelCall{
		{TicketID: id, Attempt: 1, Role: "triage", Model: "m"},
		{TicketID: id, Attempt: 1, Role: "maker", Model: "m"},
		{TicketID: id, Attempt: 1, Role: "maker", Model: "m", Compactions: 2},
		{TicketID: id, Attempt: 1, Role: "judge", Model: "m", Compactions: 0},
	} {
		if _, err := st.RecordModelCall(ctx, mc); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []store.ToolCall{
		{Tool: "read_files", OK: true},
		{Tool: "edit_file", OK: false},
		{Tool: "edit_file", OK: true, Rung: "indent_shift"},
		{Tool: "edit_file", OK: true, Rung: "exact"},
		{Tool: "edit_file", OK: true, Rung: "exact"},
		{Tool: "submit", OK: false},
	} {
		tc.TicketID, tc.Attempt, tc.Step = id, 1, i
		if _, err := st.RecordToolCall(ctx, tc); err != nil {
			t.Fatal(err)
		}
	}
	o := Outcome{Ticket: id}
	if err := toolFigures(ctx, st, &o); err != nil {
		t.Fatal(err)
	}
	want := Outcome{Ticket: id, MakerCalls: 2, Compactions: 2, ToolCalls: 6, FailedToolCalls: 2, FailedEdits: 1,
		EditRungs: map[string]int{"exact": 2, "indent_shift": 1}}
	if fmt.Sprint(o) != fmt.Sprint(want) {
		t.Errorf("toolFigures\n got  %+v\n want %+v", o, want)
	}
}

func TestTotalsToolFigures(t *testing.T) {
	outs := []Outcome{
		{MakerCalls: 3, ToolCalls: 4, FailedToolCalls: 1, FailedEdits: 1, Compactions: 1, EditRungs: map[string]int{"exact": 2}},
		{MakerCalls: 5, ToolCalls: 8, FailedToolCalls: 3, FailedEdits: 0, EditRungs: map[string]int{"exact": 1, "whitespace": 1}},
	}
	got := totals(outs, time.Minute, nil)
	if got.MakerCallsPerTicket != 4 || got.ToolCallsPerTicket != 6 || got.FailedToolCallsPerTicket != 2 ||
		got.FailedEditsPerTicket != 0.5 || got.CompactionsPerTicket != 0.5 || got.EditRungs["exact"] != 3 || got.EditRungs["whitespace"] != 1 {
		t.Errorf("totals(%+v) = %+v", outs, got)
	}
	m := medianTotals([]Totals{got, {EditRungs: map[string]float64{"exact": 1}}, {EditRungs: map[string]float64{"exact": 5}}})
	if m.EditRungs["exact"] != 3 || m.EditRungs["whitespace"] != 0 {
		t.Errorf("median rungs = %v, want exact 3 and whitespace 0 (absent in two rounds of three)", m.EditRungs)
	}
}

// TestBenchRealisticScenario runs the small cases plain and realistic: both solve them all,
// and the realistic maker works harder, which the new figures show.
func TestBenchRealisticScenario(t *testing.T) {
	plain, precs := benchRun(t, "--scenario", "plain", "--filter", smallCases)
	real, rrecs := benchRun(t, "--scenario", "realistic", "--filter", smallCases)
	t.Logf("plain: maker %.2f tools %.2f failed %.2f rungs %v", plain.MakerCallsPerTicket, plain.ToolCallsPerTicket, plain.FailedToolCallsPerTicket, plain.EditRungs)
	t.Logf("realistic: maker %.2f tools %.2f failed %.2f rungs %v", real.MakerCallsPerTicket, real.ToolCallsPerTicket, real.FailedToolCallsPerTicket, real.EditRungs)
	if plain.SuccessRate != 1 || real.SuccessRate != 1 {
		t.Errorf("success: plain %v, realistic %v; want 1 and 1", plain.SuccessRate, real.SuccessRate)
	}
	if real.Scenario != "realistic" || rrecs[0].Scenario != "realistic" || precs[0].Scenario != "plain" {
		t.Errorf("scenario names: summary %q, lines %q and %q", real.Scenario, rrecs[0].Scenario, precs[0].Scenario)
	}
	if plain.MakerCallsPerTicket <= 0 || plain.ToolCallsPerTicket <= 0 || plain.EditRungs["exact"] == 0 {
		t.Errorf("plain figures missing: maker %v tools %v rungs %v", plain.MakerCallsPerTicket, plain.ToolCallsPerTicket, plain.EditRungs)
	}
	if real.ToolCallsPerTicket <= plain.ToolCallsPerTicket || real.MakerCallsPerTicket <= plain.MakerCallsPerTicket {
		t.Errorf("realistic maker made no extra calls: maker %v vs %v, tools %v vs %v",
			real.MakerCallsPerTicket, plain.MakerCallsPerTicket, real.ToolCallsPerTicket, plain.ToolCallsPerTicket)
	}
	for _, o := range rrecs[0].Cases {
		if o.MakerCalls == 0 || o.ToolCalls == 0 || o.Scripted == "" {
			t.Errorf("case %s line: maker_calls %d tool_calls %d scripted %q", o.Name, o.MakerCalls, o.ToolCalls, o.Scripted)
		}
	}
}

// testSandbox is the checks' sandbox in these tests: bwrap where it works, else none
// (logged). Their subject is the bench, not the sandbox (pipeline/sandbox's tests are).
func testSandbox(t *testing.T) sandbox.Mode {
	t.Helper()
	_, err := sandbox.Probe(context.Background(), "")
	if testenv.Have(t, testenv.Bubblewrap, err) {
		return sandbox.ModeBwrap
	}
	return sandbox.ModeNone
}
