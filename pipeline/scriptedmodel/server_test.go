package scriptedmodel

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

const ticketText = "Average of an empty list crashes\n\nCalling mean([]) raises ZeroDivisionError."

// makerTools is the shared contract's tool list, in its fixed order.
var makerTools = func() []openai.Tool {
	var tools []openai.Tool
	for _, name := range []string{"read_files", "list_files", "grep", "edit_file", "write_file", "run_checks", "submit", "ask_human"} {
		tools = append(tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Description: "ticketd maker tool " + name, Parameters: json.RawMessage(`{"type":"object"}`),
		}})
	}
	return tools
}()

// bundle is a started server and a go-openai client pointed at it.
type bundle struct {
	srv    *Server
	client *openai.Client
	url    string
}

func setup(t *testing.T, cases []Case, opts Options) *bundle {
	t.Helper()
	srv, err := New(cases, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	url, err := srv.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = url
	return &bundle{srv: srv, client: openai.NewClientWithConfig(cfg), url: url}
}

func readTestdata(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fakeRepo is a minimal stand-in for the pipeline's worktree and tools, enough to drive
// the scripted maker end to end: exact-match edits and a check that compares the files
// with the intended result.
type fakeRepo struct {
	files       map[string]string
	want        map[string]string
	failOn      string // edit_file calls whose old_text contains failOn answer "error:"
	failEdits   int    // ... this many times (a flaky match)
	submitCount int
}

func newFakeRepo(t *testing.T) *fakeRepo {
	return &fakeRepo{
		files: map[string]string{"calc/stats.py": readTestdata(t, "stats/base/calc/stats.py")},
		want: map[string]string{
			"calc/stats.py":      readTestdata(t, "stats/want/calc/stats.py"),
			"calc/test_empty.py": readTestdata(t, "stats/want/calc/test_empty.py"),
		},
	}
}

// run executes one tool call; done reports a passing submit.
func (r *fakeRepo) run(name, args string) (result string, done bool) {
	var a struct {
		Paths                  []string
		Path, Content, Summary string
		OldText                string `json:"old_text"`
		NewText                string `json:"new_text"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return "error: arguments are not valid JSON: " + err.Error(), false
	}
	switch name {
	case "read_files":
		var b strings.Builder
		for _, p := range a.Paths {
			fmt.Fprintf(&b, "== %s ==\n%s\n", p, r.files[p])
		}
		return b.String(), false
	case "edit_file":
		if r.failEdits > 0 && strings.Contains(a.OldText, r.failOn) {
			r.failEdits--
			return "error: old_text not found in " + a.Path + "; re-read the file", false
		}
		if strings.Count(r.files[a.Path], a.OldText) != 1 {
			return "error: old_text must match exactly once in " + a.Path, false
		}
		r.files[a.Path] = strings.Replace(r.files[a.Path], a.OldText, a.NewText, 1)
		return "ok", false
	case "write_file":
		r.files[a.Path] = a.Content
		return "ok", false
	case "submit":
		r.submitCount++
		for p, w := range r.want {
			if r.files[p] != w {
				return "checks failed: " + p + " does not pass the tests", false
			}
		}
		return "submitted", true
	}
	return "error: unknown tool " + name, false
}

// drive runs a maker conversation for at most steps model calls and returns one line per
// assistant turn ("read_files", "edit_file+write_file", ...) and whether it ended passing.
func drive(t *testing.T, b *bundle, repo *fakeRepo, steps int) (turns []string, passed bool) {
	t.Helper()
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You fix bugs.\nticketd role: maker\n"},
		{Role: openai.ChatMessageRoleUser, Content: ticketText},
	}
	for range steps {
		resp, err := b.client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
			Model: "maker-model", Messages: msgs, Tools: makerTools,
		})
		if err != nil {
			t.Fatalf("step %d: %v", len(turns)+1, err)
		}
		m := resp.Choices[0].Message
		if resp.Choices[0].FinishReason != openai.FinishReasonToolCalls || len(m.ToolCalls) == 0 {
			t.Fatalf("step %d: finish %q with %d tool calls, want tool calls", len(turns)+1, resp.Choices[0].FinishReason, len(m.ToolCalls))
		}
		msgs = append(msgs, m)
		var names []string
		for _, tc := range m.ToolCalls {
			names = append(names, tc.Function.Name)
			res, done := repo.run(tc.Function.Name, tc.Function.Arguments)
			if done {
				return append(turns, strings.Join(names, "+")), true
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: res})
		}
		turns = append(turns, strings.Join(names, "+"))
	}
	return turns, false
}

func TestMakerBehaviours(t *testing.T) {
	patch := readTestdata(t, "stats/fix.patch")
	fix := "edit_file+edit_file+write_file"
	tests := []struct {
		name      string
		c         Case
		failEdits int
		steps     int
		want      []string
		passed    bool
	}{
		{name: "solve", c: Case{Behaviour: BehaviourSolve},
			steps: 10, want: []string{"read_files", fix, "submit"}, passed: true},
		// The wrong guess comes with the patch's test (its new test file), as a model writes
		// its regression test beside its first fix; the fix then only edits the code.
		{name: "wrong then right", c: Case{Behaviour: BehaviourWrongThenRight},
			steps: 10, want: []string{"read_files", "edit_file+write_file", "submit", "edit_file+edit_file+edit_file", "submit"}, passed: true},
		// A refused late fixer checks again instead of resubmitting an unchanged change.
		{name: "late fix after 2", c: Case{Behaviour: BehaviourLateFix},
			steps: 12, want: []string{"read_files", "edit_file+write_file", "submit", "read_files", "run_checks", "edit_file+edit_file+edit_file", "submit"}, passed: true},
		{name: "late fix after 3", c: Case{Behaviour: BehaviourLateFix, LateAfter: 3},
			steps: 12, want: []string{"read_files", "edit_file+write_file", "submit", "read_files", "run_checks", "run_checks", "edit_file+edit_file+edit_file", "submit"}, passed: true},
		{name: "never", c: Case{Behaviour: BehaviourNever},
			steps: 7, want: []string{"read_files", "edit_file+write_file", "submit", "read_files", "submit", "read_files", "submit"}, passed: false},
		{name: "loop", c: Case{Behaviour: BehaviourLoop},
			steps: 4, want: []string{"read_files", "read_files", "read_files", "read_files"}, passed: false},
		{name: "malformed args", c: Case{Behaviour: BehaviourMalformedArgs},
			steps: 10, want: []string{"read_files", "read_files", fix, "submit"}, passed: true},
		{name: "edit error is re-read and retried once", c: Case{Behaviour: BehaviourSolve}, failEdits: 1,
			steps: 10, want: []string{"read_files", fix, "read_files", "edit_file", "submit"}, passed: true},
		{name: "edit failing twice is given up", c: Case{Behaviour: BehaviourSolve}, failEdits: 2,
			steps: 6, want: []string{"read_files", fix, "read_files", "edit_file", "submit", "read_files"}, passed: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			c.Match, c.Patch = "empty list", patch
			b := setup(t, []Case{c}, Options{})
			repo := newFakeRepo(t)
			repo.failOn, repo.failEdits = "def mean", tt.failEdits
			got, passed := drive(t, b, repo, tt.steps)
			if strings.Join(got, " | ") != strings.Join(tt.want, " | ") || passed != tt.passed {
				t.Errorf("behaviour %s:\n got  %q passed=%v\n want %q passed=%v", c.Behaviour, got, passed, tt.want, tt.passed)
			}
			if tt.passed {
				for p, w := range repo.want {
					if repo.files[p] != w {
						t.Errorf("%s after the conversation:\n%s\nwant:\n%s", p, repo.files[p], w)
					}
				}
			}
			for _, r := range b.srv.Requests() {
				if r.Role != "maker" || r.Status != 200 || r.Model != "maker-model" || r.Case != "empty list" {
					t.Errorf("recorded %+v, want a 200 maker request for case %q", r, "empty list")
				}
			}
		})
	}
}

func TestLoopRepeatsIdenticalCall(t *testing.T) {
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch"), Behaviour: BehaviourLoop}}, Options{})
	msgs := []openai.ChatCompletionMessage{
		{Role: "system", Content: "ticketd role: maker"}, {Role: "user", Content: ticketText},
	}
	var args []string
	for range 3 {
		resp, err := b.client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: makerTools})
		if err != nil {
			t.Fatal(err)
		}
		tc := resp.Choices[0].Message.ToolCalls[0]
		args = append(args, tc.Function.Name+" "+tc.Function.Arguments)
		msgs = append(msgs, resp.Choices[0].Message, openai.ChatCompletionMessage{Role: "tool", ToolCallID: tc.ID, Content: "same file"})
	}
	if args[0] != args[1] || args[1] != args[2] || args[0] != `read_files {"paths":["calc/stats.py"]}` {
		t.Errorf("loop calls = %q, want three identical read_files of calc/stats.py", args)
	}
}

// The wrong first guess is a partial fix of the project code, a behavioural bug: here the
// median hunk with the old return kept before the new one, so the old answer still wins.
func TestWrongEditIsAPartialFix(t *testing.T) {
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch"), Behaviour: BehaviourWrongThenRight}}, Options{})
	repo := newFakeRepo(t)
	turns, _ := drive(t, b, repo, 2)
	got := repo.files["calc/stats.py"]
	if len(turns) != 2 || !strings.HasSuffix(got, "        return s[mid]\n    return s[mid]\n    return (s[mid - 1] + s[mid]) / 2\n") || strings.Contains(got, "if not xs") {
		t.Errorf("after %q stats.py is:\n%s\nwant the old return kept before the new one and the mean hunk not applied", turns, got)
	}
}

// ask sends one request for role and returns the answer's content.
func ask(t *testing.T, b *bundle, role string, req openai.ChatCompletionRequest) openai.ChatCompletionResponse {
	t.Helper()
	req.Model = "cheap-model"
	req.Messages = append([]openai.ChatCompletionMessage{
		{Role: "system", Content: "Instructions.\nticketd role: " + role},
		{Role: "user", Content: ticketText},
	}, req.Messages...)
	resp, err := b.client.CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatalf("%s request: %v", role, err)
	}
	return resp
}

func TestReviewRoles(t *testing.T) {
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch"), CheckerBlocksOnce: true, JudgeFailsOnce: true}}, Options{})
	tests := []struct{ role, want string }{
		{"triage", `{"summary":"Scripted triage: Average of an empty list crashes","acceptance_criteria":["The problem described in the ticket no longer occurs: Average of an empty list crashes","The existing tests still pass"],"suspected_files":["calc/stats.py","calc/test_empty.py"]}`},
		{"checker", `{"findings":[{"file":"calc/stats.py","line":2,"severity":"blocker","category":"test","finding":"Scripted checker blocker: the change lacks a regression test for the reported case.","evidence":"    if not xs:"}]}`},
		{"checker", `{"findings":[]}`},
		{"judge", `{"verdict":"fail","unmet":["The problem described in the ticket no longer occurs: Average of an empty list crashes"],"reason":"Scripted judge: first verdict fails by scenario (JudgeFailsOnce)."}`},
		{"judge", `{"verdict":"pass","unmet":[],"reason":"Scripted judge: the change addresses Average of an empty list crashes."}`},
	}
	// The judge is shown the diff under review, as ticketd shows it.
	shown := []openai.ChatCompletionMessage{{Role: "user", Content: "# Proposed fix\n\n```diff\n" + readTestdata(t, "stats/fix.patch") + "```\n"}}
	for i, tt := range tests {
		var req openai.ChatCompletionRequest
		if tt.role == "judge" {
			req.Messages = shown
		}
		resp := ask(t, b, tt.role, req)
		if got := resp.Choices[0].Message.Content; got != tt.want || resp.Choices[0].FinishReason != "stop" {
			t.Errorf("request %d (%s):\n got  %s (finish %s)\n want %s", i, tt.role, got, resp.Choices[0].FinishReason, tt.want)
		}
		if resp.SystemFingerprint != SystemFingerprint || resp.Model != "cheap-model" {
			t.Errorf("request %d labelled %q/%q, want %q/cheap-model", i, resp.SystemFingerprint, resp.Model, SystemFingerprint)
		}
	}
	// A diff without the whole fix fails, whatever the scenario says.
	partial := []openai.ChatCompletionMessage{{Role: "user", Content: "```diff\n+    if not xs:\n+        return 0.0\n```\n"}}
	if got := ask(t, b, "judge", openai.ChatCompletionRequest{Messages: partial}).Choices[0].Message.Content; !strings.Contains(got, `"verdict":"fail"`) {
		t.Errorf("judge on a partial fix: %s, want fail", got)
	}
}

func TestUsageIsComputedFromTheRequest(t *testing.T) {
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch")}}, Options{})
	short := ask(t, b, "triage", openai.ChatCompletionRequest{})
	long := ask(t, b, "triage", openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: strings.Repeat("more context ", 100)}}})
	reasoned := ask(t, b, "triage", openai.ChatCompletionRequest{ReasoningEffort: "low"})
	recs := b.srv.Requests()
	for i, resp := range []openai.ChatCompletionResponse{short, long, reasoned} {
		var req chatRequest
		if err := json.Unmarshal(recs[i].Body, &req); err != nil {
			t.Fatal(err)
		}
		wantPrompt := (len(canonicalPrompt(req.Tools, req.Messages)) + 3) / 4
		wantVisible := (len(resp.Choices[0].Message.Content) + 3) / 4
		u := resp.Usage
		if u.PromptTokens != wantPrompt || u.CompletionTokens != wantVisible+u.CompletionTokensDetails.ReasoningTokens ||
			u.TotalTokens != u.PromptTokens+u.CompletionTokens || recs[i].Usage.PromptTokens != wantPrompt {
			t.Errorf("request %d usage %+v, want prompt %d, visible completion %d", i, u, wantPrompt, wantVisible)
		}
	}
	if long.Usage.PromptTokens <= short.Usage.PromptTokens+300 {
		t.Errorf("a 1300-byte longer prompt counted %d tokens vs %d", long.Usage.PromptTokens, short.Usage.PromptTokens)
	}
	if r := reasoned.Usage.CompletionTokensDetails; r == nil || r.ReasoningTokens == 0 || short.Usage.CompletionTokensDetails.ReasoningTokens != 0 {
		t.Errorf("reasoning tokens: low effort %+v, none %+v; want >0 and 0", r, short.Usage.CompletionTokensDetails)
	}
}

func TestMaxTokensCutsTheAnswer(t *testing.T) {
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch")}}, Options{})
	full := ask(t, b, "triage", openai.ChatCompletionRequest{}).Choices[0].Message.Content
	for _, limit := range []int{1, 10, 25} {
		resp := ask(t, b, "triage", openai.ChatCompletionRequest{MaxCompletionTokens: limit})
		got := resp.Choices[0].Message.Content
		if resp.Choices[0].FinishReason != openai.FinishReasonLength || !strings.HasPrefix(full, got) ||
			len(got) != limit*4 || resp.Usage.CompletionTokens != limit {
			t.Errorf("max %d: finish %q, content %q (%d tokens); want length, the first %d bytes of %q", limit,
				resp.Choices[0].FinishReason, got, resp.Usage.CompletionTokens, limit*4, full)
		}
	}
	// The deprecated max_tokens field is honoured too, and a roomy limit changes nothing.
	//lint:ignore SA1019 older clients still send max_tokens, and the double must honour it
	if r := ask(t, b, "triage", openai.ChatCompletionRequest{MaxTokens: 5}); r.Choices[0].FinishReason != "length" {
		t.Errorf("max_tokens 5: finish %q, want length", r.Choices[0].FinishReason)
	}
	if r := ask(t, b, "triage", openai.ChatCompletionRequest{MaxCompletionTokens: 32000}); r.Choices[0].Message.Content != full {
		t.Errorf("max 32000 changed the answer to %q", r.Choices[0].Message.Content)
	}
}

func TestListModels(t *testing.T) {
	b := setup(t, []Case{{Patch: readTestdata(t, "stats/fix.patch")}}, Options{Models: []string{"gpt-x", "gpt-y-mini"}})
	list, err := b.client.ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 2 || list.Models[0].ID != "gpt-x" || list.Models[1].OwnedBy != SystemFingerprint {
		t.Errorf("models = %+v, want gpt-x and gpt-y-mini owned by the test double", list.Models)
	}
}

func TestNewValidatesCases(t *testing.T) {
	patch := readTestdata(t, "stats/fix.patch")
	del := "--- a/x.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
	tests := []struct {
		name  string
		cases []Case
		opts  Options
		want  string
	}{
		{"bad patch names its case", []Case{{Match: "a", Patch: patch}, {Match: "b", Patch: "not a diff"}}, Options{}, `case 1 (match "b"): invalid patch`},
		{"two defaults", []Case{{Patch: patch}, {Patch: patch}}, Options{}, "second default case"},
		{"unknown behaviour", []Case{{Match: "a", Patch: patch, Behaviour: "dance"}}, Options{}, `unknown behaviour "dance"`},
		{"deleted file", []Case{{Match: "a", Patch: del}}, Options{}, "deletes x.py"},
		{"no cases", nil, Options{}, "no cases"},
		{"fault rates", []Case{{Patch: patch}}, Options{Faults: Faults{RateLimitRate: 0.7, ServerErrorRate: 0.5}}, "sum to at most 1"},
		{"role fault rates", []Case{{Patch: patch}}, Options{RoleFaults: map[string]Faults{"judge": {RateLimitRate: -1}}}, "RoleFaults[judge] rates"},
		{"role fault role", []Case{{Patch: patch}}, Options{RoleFaults: map[string]Faults{"poet": {}}}, `role "poet"`},
	}
	for _, tt := range tests {
		_, err := New(tt.cases, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New error = %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	if _, err := New([]Case{{Match: "b", Patch: "x"}}, Options{}); !errors.Is(err, ErrInvalidPatch) {
		t.Errorf("bad patch error %v does not wrap ErrInvalidPatch", err)
	}
}

func TestMaxTokensCutsAToolCall(t *testing.T) {
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch")}}, Options{})
	resp, err := b.client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "m", Tools: makerTools, MaxCompletionTokens: 5,
		Messages: []openai.ChatCompletionMessage{{Role: "system", Content: "ticketd role: maker"}, {Role: "user", Content: ticketText}},
	})
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if resp.Choices[0].FinishReason != openai.FinishReasonLength || len(calls) != 1 ||
		calls[0].Function.Arguments != `{"paths":[` || json.Valid([]byte(calls[0].Function.Arguments)) {
		t.Errorf("max 5 tokens: finish %q, calls %+v; want length and read_files arguments cut to 10 bytes", resp.Choices[0].FinishReason, calls)
	}
}

func TestLatencyWaitsAndHonoursCancellation(t *testing.T) {
	patch := readTestdata(t, "stats/fix.patch")
	b := setup(t, []Case{{Match: "empty list", Patch: patch, Latency: 20 * time.Millisecond}}, Options{Latency: 10 * time.Millisecond})
	start := time.Now()
	ask(t, b, "triage", openai.ChatCompletionRequest{})
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("answer came after %v, want at least the 30ms of Options.Latency + Case.Latency", d)
	}

	srv, err := New([]Case{{Match: "empty list", Patch: patch}}, Options{Latency: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("worker shut down"))
	if err := srv.wait(ctx, &exchange{plan: srv.plans[0]}); err == nil || !strings.Contains(err.Error(), "worker shut down") {
		t.Errorf("wait with a cancelled context = %v, want the cancellation cause", err)
	}
}

// TestConcurrentTicketsShareTheStaticPrefix drives three maker conversations at once, as
// three workers would, and checks the scenario routing under -race and that a ticket's
// first request finds the shared static prefix (tools + instructions) in the cache.
func TestConcurrentTicketsShareTheStaticPrefix(t *testing.T) {
	patch := readTestdata(t, "stats/fix.patch")
	b := setup(t, []Case{
		{Match: "ticket-1", Patch: patch}, {Match: "ticket-2", Patch: patch, Behaviour: BehaviourWrongThenRight}, {Match: "ticket-3", Patch: patch},
	}, Options{})
	system := "ticketd role: maker\n" + strings.Repeat("Static instructions that never change. ", 200) // ~2000 tokens
	run := func(ticket string) ([]string, bool, error) {
		repo := &fakeRepo{files: map[string]string{"calc/stats.py": readTestdata(t, "stats/base/calc/stats.py")}, want: map[string]string{
			"calc/stats.py": readTestdata(t, "stats/want/calc/stats.py"), "calc/test_empty.py": readTestdata(t, "stats/want/calc/test_empty.py"),
		}}
		msgs := []openai.ChatCompletionMessage{{Role: "system", Content: system}, {Role: "user", Content: ticket + ": " + ticketText}}
		var turns []string
		for range 10 {
			resp, err := b.client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: makerTools})
			if err != nil {
				return turns, false, err
			}
			m := resp.Choices[0].Message
			msgs = append(msgs, m)
			turns = append(turns, m.ToolCalls[0].Function.Name)
			for _, tc := range m.ToolCalls {
				res, done := repo.run(tc.Function.Name, tc.Function.Arguments)
				if done {
					return turns, true, nil
				}
				msgs = append(msgs, openai.ChatCompletionMessage{Role: "tool", ToolCallID: tc.ID, Content: res})
			}
		}
		return turns, false, nil
	}
	// The first ticket runs alone, so it writes the prefix once; the others then run together.
	if _, ok, err := run("ticket-1"); !ok || err != nil {
		t.Fatalf("ticket-1 did not pass: %v", err)
	}
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i, ticket := range []string{"ticket-2", "ticket-3"} {
		wg.Go(func() {
			turns, ok, err := run(ticket)
			results[i] = fmt.Sprintf("%s passed=%v err=%v turns=%v", ticket, ok, err, turns)
		})
	}
	wg.Wait()
	if !strings.HasPrefix(results[0], "ticket-2 passed=true err=<nil> turns=[read_files edit_file submit edit_file submit]") ||
		!strings.HasPrefix(results[1], "ticket-3 passed=true err=<nil> turns=[read_files edit_file submit]") {
		t.Errorf("concurrent tickets:\n%s", strings.Join(results, "\n"))
	}
	firsts := map[string]Recorded{}
	for _, r := range b.srv.Requests() {
		if _, ok := firsts[r.Case]; !ok {
			firsts[r.Case] = r
		}
	}
	for _, c := range []string{"ticket-2", "ticket-3"} {
		u := firsts[c].Usage
		if share := float64(u.CachedTokens) / float64(u.PromptTokens); share < 0.9 {
			t.Errorf("%s first request: cached %d of %d prompt tokens (%.2f), want >= 0.9", c, u.CachedTokens, u.PromptTokens, share)
		}
	}
}

func TestCaseMatching(t *testing.T) {
	plans := []*plan{{Case: Case{Match: "Totals are wrong"}}, {Case: Case{Match: "Average"}}, {Case: Case{Match: "Average of an empty list"}}}
	def := &plan{Case: Case{Match: ""}}
	tests := []struct {
		name  string
		users []string
		def   *plan
		want  string
	}{
		{"longest of two at the same place", []string{ticketText}, nil, "Average of an empty list"},
		{"earliest wins over a later quote", []string{"Totals are wrong\n\n```diff\n+# Average of an empty list\n```"}, nil, "Totals are wrong"},
		{"later user message", []string{"hello", "see: Totals are wrong"}, nil, "Totals are wrong"},
		{"default", []string{"nothing known"}, def, "(default)"},
		{"none", []string{"nothing known"}, nil, "(error)"},
	}
	for _, tt := range tests {
		var msgs []message
		for _, u := range tt.users {
			msgs = append(msgs, message{Role: "user", text: u})
		}
		got := "(error)"
		if p, err := matchCase(plans, tt.def, msgs); err == nil {
			got = cmp.Or(p.Match, "(default)")
		}
		if got != tt.want {
			t.Errorf("%s: users %q matched %q, want %q", tt.name, tt.users, got, tt.want)
		}
	}
}
