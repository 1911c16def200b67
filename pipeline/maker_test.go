package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// fakeModel is a test double for the model: each role's answers come from a function of
// the request, so a test scripts a conversation turn by turn. Usage is reported as a real
// provider would (prompt size estimated from the request), and CostPerCall, when set, is
// the price of every call.
type fakeModel struct {
	mu          sync.Mutex
	maker       func(n int, req model.Request) openai.ChatCompletionMessage
	summary     string // the triage-tier model's answer to a summary request
	CostPerCall float64
	// CostPerToken prices each prompt token (plus CostPerCall): a growing context costs more.
	CostPerToken float64
	PromptSize   func(req model.Request) int64
	// makerFinish, when set, is the finish reason of the n-th maker answer; "stop" otherwise.
	makerFinish func(n int) string
	requests    []model.Request
}

func (f *fakeModel) Chat(_ context.Context, req model.Request) (model.Response, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	n := 0
	for _, r := range f.requests {
		if r.Role == req.Role {
			n++
		}
	}
	f.mu.Unlock()
	var msg openai.ChatCompletionMessage
	switch req.Role {
	case model.RoleMaker:
		msg = f.maker(n, req)
	case model.RoleTriage:
		content := `{"summary":"double adds one too many","acceptance_criteria":["double(2) == 4"],"suspected_files":["calc.py"]}`
		if req.Messages[0].Content == summaryInstructions {
			content = f.summary
		}
		msg = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content}
	default:
		return model.Response{}, fmt.Errorf("fakeModel: no answer scripted for role %s", req.Role)
	}
	prompt := int64(estimateTokens(req.Messages, req.Tools))
	if f.PromptSize != nil {
		prompt = f.PromptSize(req)
	}
	finish := "stop"
	if req.Role == model.RoleMaker && f.makerFinish != nil {
		finish = f.makerFinish(n)
	}
	resp := model.Response{Message: msg, FinishReason: finish, Usage: model.Usage{PromptTokens: prompt, CompletionTokens: 50}}
	if f.CostPerCall > 0 || f.CostPerToken > 0 {
		c := f.CostPerCall + f.CostPerToken*float64(prompt)
		resp.CostUSD = &c
	}
	return resp, nil
}

func (f *fakeModel) makerRequests() []model.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []model.Request
	for _, r := range f.requests {
		if r.Role == model.RoleMaker {
			out = append(out, r)
		}
	}
	return out
}

// bugChecks is a CheckRunner for tests of the loop itself: one test, failing while calc.py
// holds the bug and passing once it does not, so every submit of the fix passes the gate and
// shows the evidence that it works (the gate itself is tested with real pytest elsewhere).
type bugChecks struct{}

func (bugChecks) Run(_ context.Context, dir string, checks []validate.Check) []validate.Result {
	src, _ := os.ReadFile(filepath.Join(dir, "calc.py"))
	r := validate.Result{Name: "tests", Kind: validate.KindPytest, Passed: true, Tests: 1, Summary: "1 passed",
		Outcomes: map[string]validate.Outcome{"test_calc.py::test_double": validate.OutcomePassed}}
	if strings.Contains(string(src), "x + x + 1") {
		r.Passed, r.Summary = false, "1 failed"
		r.Findings = []validate.Finding{{Test: "test_calc.py::test_double", Message: "assert 5 == 4"}}
		r.Outcomes = map[string]validate.Outcome{"test_calc.py::test_double": validate.OutcomeFailed}
	}
	return []validate.Result{r}
}

// call builds a tool call the way a server sends it.
func call(id, name string, args any) openai.ToolCall {
	raw, _ := json.Marshal(args)
	return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: string(raw)}}
}

func turn(calls ...openai.ToolCall) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: calls}
}

// setupLoop makes a git repository with calc.py and a Runner around fm, with only the maker
// role configured, so the loop is all that runs.
func setupLoop(t *testing.T, fm *fakeModel) (*Runner, Job) {
	t.Helper()
	dir := t.TempDir()
	// test_calc.py is the test bugChecks reports on, there for the test selection to find.
	git := fixtureRepo(t, dir, map[string]string{"calc.py": buggy, "test_calc.py": "from calc import double\n"})
	r := &Runner{Models: fm, Checks: bugChecks{}, Roles: map[model.Role]bool{model.RoleMaker: true}}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
	job := Job{
		Checks:   checks,
		Baseline: bugChecks{}.Run(context.Background(), dir, checks),
		Ticket:   Ticket{ID: 1, Attempt: 1, Title: "double is wrong", Body: "double(2) gives 5", Repo: "calc"},
		Dir:      dir,
		Diff: func(ctx context.Context) (string, error) {
			git("add", "-A")
			return git("diff", "--cached"), nil
		},
		BaseFile: baseFile(git, dir),
		Budget:   Budget{MaxSteps: 12, MaxTokens: 1_000_000},
	}
	return r, job
}

var fixEdit = map[string]string{"path": "calc.py", "old_text": "return x + x + 1", "new_text": "return x + x"}

func toolResults(req model.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// A turn of [read, edit, read] runs in the order given: the second read shows the edit.
func TestTurnOrderReadEditRead(t *testing.T) {
	fm := &fakeModel{}
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		if n == 1 {
			return turn(call("r1", tools.ReadFiles, map[string]any{"paths": []string{"calc.py"}}),
				call("e1", tools.EditFile, fixEdit),
				call("r2", tools.ReadFiles, map[string]any{"paths": []string{"calc.py"}}))
		}
		return turn(call("s1", tools.Submit, map[string]string{"summary": "drop the + 1"}))
	}
	r, job := setupLoop(t, fm)
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s), want fixed", out.Status, out.Reason)
	}
	res := toolResults(fm.makerRequests()[1])
	if !strings.Contains(res["r1"], "return x + x + 1") {
		t.Errorf("first read (before the edit) = %q, want the buggy line", res["r1"])
	}
	if !strings.Contains(res["e1"], "edited calc.py") {
		t.Errorf("edit result = %q", res["e1"])
	}
	if strings.Contains(res["r2"], "x + x + 1") || !strings.Contains(res["r2"], "return x + x\n") {
		t.Errorf("second read (after the edit) = %q, want the edited line", res["r2"])
	}
}

// Consecutive read-only calls run concurrently, and results come back in call order.
func TestTurnReadsRunConcurrentlyInOrder(t *testing.T) {
	fm := &fakeModel{}
	var paths []string
	for i := range 8 {
		paths = append(paths, fmt.Sprintf("f%d.py", i))
	}
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		if n == 1 {
			var calls []openai.ToolCall
			for i, p := range paths {
				calls = append(calls, call(fmt.Sprintf("r%d", i), tools.ReadFiles, map[string]any{"paths": []string{p}}))
			}
			return turn(calls...)
		}
		return turn(call("e", tools.EditFile, fixEdit), call("s", tools.Submit, map[string]string{"summary": "x"}))
	}
	r, job := setupLoop(t, fm)
	for i, p := range paths {
		os.WriteFile(filepath.Join(job.Dir, p), []byte(fmt.Sprintf("content %d\n", i)), 0o644)
	}
	if out := r.Run(context.Background(), job); out.Status != StatusFixed {
		t.Fatalf("status %s (%s)", out.Status, out.Reason)
	}
	msgs := fm.makerRequests()[1].Messages
	var order []string
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleTool {
			order = append(order, m.ToolCallID)
			want := fmt.Sprintf("content %s", strings.TrimPrefix(m.ToolCallID, "r"))
			if !strings.Contains(m.Content, want) {
				t.Errorf("result of %s = %q, want it to contain %q", m.ToolCallID, m.Content, want)
			}
		}
	}
	if got := strings.Join(order, ","); got != "r0,r1,r2,r3,r4,r5,r6,r7" {
		t.Errorf("tool results in order %s, want r0..r7", got)
	}
}

// An easy ticket with batched reads takes three maker calls: read, edit, submit.
func TestEasyTicketTakesThreeMakerCalls(t *testing.T) {
	fm := &fakeModel{}
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		switch n {
		case 1:
			return turn(call("r", tools.ReadFiles, map[string]any{"paths": []string{"calc.py"}}))
		case 2:
			return turn(call("e", tools.EditFile, fixEdit))
		}
		return turn(call("s", tools.Submit, map[string]string{"summary": "drop the + 1"}))
	}
	r, job := setupLoop(t, fm)
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed || out.Steps > 3 || len(fm.makerRequests()) > 3 {
		t.Fatalf("status %s, %d steps, %d maker requests; want fixed in at most 3", out.Status, out.Steps, len(fm.makerRequests()))
	}
}

// A doom loop is nudged at the third identical call and stopped at the fifth.
func TestLoopGuardNudgesThenStops(t *testing.T) {
	fm := &fakeModel{}
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		if n == 1 {
			return turn(call("e", tools.EditFile, map[string]string{"path": "calc.py", "old_text": "def double(x):", "new_text": "def double(x):  # partial"}))
		}
		return turn(call(fmt.Sprintf("r%d", n), tools.ReadFiles, map[string]any{"paths": []string{"calc.py"}}))
	}
	r, job := setupLoop(t, fm)
	out := r.Run(context.Background(), job)
	if out.Status != StatusBudget || !strings.Contains(out.Reason, "loop: read_files called 5 times") {
		t.Fatalf("status %s (%s), want budget with reason loop after 5 calls", out.Status, out.Reason)
	}
	reqs := fm.makerRequests()
	if len(reqs) != 6 { // the edit, then five identical reads
		t.Fatalf("%d maker requests, want 6", len(reqs))
	}
	// The last request carries the results of reads 1..4 (ids r2..r5); the fifth read
	// ended the attempt.
	res := toolResults(reqs[len(reqs)-1])
	for i := 1; i <= 4; i++ {
		got := res[fmt.Sprintf("r%d", i+1)]
		nudged := strings.Contains(got, "Repeating it will not change it")
		if want := i >= 3; nudged != want {
			t.Errorf("read %d: nudged=%v, want %v: %q", i, nudged, want, clip(got, 300))
		}
	}
	if !strings.Contains(strings.Join(out.History, "\n"), "loop guard: nudged") {
		t.Errorf("history does not mention the nudge:\n%s", strings.Join(out.History, "\n"))
	}
	if d, _ := job.Diff(context.Background()); !strings.Contains(d, "# partial") {
		t.Errorf("partial change lost: diff %q", d)
	}
}

// Each budget stops the attempt cleanly, with the reason, and leaves the partial change in
// the worktree for the report.
func TestBudgetsStopCleanly(t *testing.T) {
	tests := []struct {
		name   string
		budget Budget
		cost   float64
		clock  time.Duration // per clock reading; 0 = real clock
		reason string
	}{
		{name: "steps", budget: Budget{MaxSteps: 4}, reason: "step limit of 4"},
		{name: "tokens", budget: Budget{MaxSteps: 50, MaxTokens: 3_000}, reason: "token limit"},
		{name: "wall clock", budget: Budget{MaxSteps: 50, WallClock: 5 * time.Minute}, clock: time.Minute, reason: "wall clock of 5m0s"},
		{name: "dollars", budget: Budget{MaxSteps: 50, MaxDollars: 0.05}, cost: 0.02, reason: "dollar limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := &fakeModel{CostPerCall: tt.cost}
			fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
				if n == 1 {
					return turn(call("e", tools.EditFile, map[string]string{"path": "calc.py", "old_text": "def double(x):", "new_text": "def double(x):  # partial"}))
				}
				// Different greps each time: no loop, just no progress.
				return turn(call(fmt.Sprintf("g%d", n), tools.Grep, map[string]string{"pattern": fmt.Sprintf("x{%d}", n)}))
			}
			r, job := setupLoop(t, fm)
			if tt.clock > 0 {
				r.Now = clocktest.New(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)).Step(tt.clock).Now
			}
			job.Budget = tt.budget
			out := r.Run(context.Background(), job)
			if out.Status != StatusBudget || !strings.Contains(out.Reason, tt.reason) {
				t.Fatalf("status %s (%s), want budget with %q", out.Status, out.Reason, tt.reason)
			}
			if d, _ := job.Diff(context.Background()); !strings.Contains(d, "# partial") {
				t.Errorf("partial change lost: diff %q", d)
			}
			if tt.cost > 0 && out.Dollars > tt.budget.MaxDollars+tt.cost {
				t.Errorf("spent $%.2f, more than one call past the $%.2f limit", out.Dollars, tt.budget.MaxDollars)
			}
		})
	}
}

// A session that would pass the window is compacted and still finishes; the compaction is
// in the outcome and the history, and no request after it is over the limit.
func TestCompactionLetsALongSessionFinish(t *testing.T) {
	big := strings.Repeat("# filler line to make the module long\n", 400) // ~15k chars, ~4k tokens
	fm := &fakeModel{summary: "Read big.py and calc.py; calc.py line 2 adds 1 too many."}
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		switch {
		case n <= 6:
			return turn(call(fmt.Sprintf("r%d", n), tools.ReadFiles, map[string]any{"paths": []string{fmt.Sprintf("big%d.py", n)}}))
		case n == 7:
			return turn(call("e", tools.EditFile, fixEdit))
		}
		return turn(call("s", tools.Submit, map[string]string{"summary": "drop the + 1"}))
	}
	r, job := setupLoop(t, fm)
	for i := 1; i <= 6; i++ {
		os.WriteFile(filepath.Join(job.Dir, fmt.Sprintf("big%d.py", i)), []byte(big), 0o644)
	}
	r.ContextWindows = map[model.Role]int{model.RoleMaker: 16_000} // compact above 11,200 tokens
	r.Roles[model.RoleTriage] = true                               // the summariser
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s), want fixed\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	if out.Compactions == 0 || !strings.Contains(strings.Join(out.History, "\n"), "conversation compacted") {
		t.Errorf("compactions %d, history:\n%s", out.Compactions, strings.Join(out.History, "\n"))
	}
	recorded := 0
	for _, req := range fm.makerRequests() {
		recorded += req.Compactions
	}
	if recorded != out.Compactions {
		t.Errorf("maker requests carry %d compactions for the record, the outcome counts %d", recorded, out.Compactions)
	}
	for i, req := range fm.makerRequests() {
		if n := estimateTokens(req.Messages, req.Tools); n > 11_200 {
			t.Errorf("maker request %d is about %d tokens, over the compaction limit", i+1, n)
		}
	}
	// The edit's call survives compaction verbatim.
	last := fm.makerRequests()[len(fm.makerRequests())-1]
	found := false
	for _, m := range last.Messages {
		for _, tc := range m.ToolCalls {
			found = found || tc.Function.Name == tools.EditFile
		}
	}
	if !found {
		t.Error("the edit_file call is gone from the compacted conversation")
	}
}

// A session that cannot shrink (its one huge, recent tool output is the problem) stops with
// a clear reason instead of sending a request the server would refuse.
func TestCompactionGivesUpClearly(t *testing.T) {
	fm := &fakeModel{}
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		return turn(call(fmt.Sprintf("r%d", n), tools.ReadFiles, map[string]any{"paths": []string{"huge.py"}}))
	}
	r, job := setupLoop(t, fm)
	os.WriteFile(filepath.Join(job.Dir, "huge.py"), []byte(strings.Repeat("x = 1  # a long module line\n", 2000)), 0o644)
	r.ContextWindows = map[model.Role]int{model.RoleMaker: 8_000}
	out := r.Run(context.Background(), job)
	if out.Status != StatusBudget || !strings.Contains(out.Reason, "compaction cannot shrink it further") {
		t.Fatalf("status %s (%s), want a clear context stop", out.Status, out.Reason)
	}
}

// overflowModel refuses any maker request above limit tokens as a server does when its real
// window is smaller than configured (model.ErrContextOverflow), and answers the rest.
type overflowModel struct {
	*fakeModel
	limit   int
	refused int
}

func (o *overflowModel) Chat(ctx context.Context, req model.Request) (model.Response, error) {
	if req.Role == model.RoleMaker && estimateTokens(req.Messages, req.Tools) > o.limit {
		o.refused++
		return model.Response{}, fmt.Errorf("models.roles.maker: %w (HTTP 400 from local)", model.ErrContextOverflow)
	}
	return o.fakeModel.Chat(ctx, req)
}

// A server that refuses a request as too long (its window is smaller than the configured
// one) gets a compacted conversation on the next call, and the attempt finishes.
func TestContextOverflowCompactsAndRetries(t *testing.T) {
	big := strings.Repeat("# filler line to make the module long\n", 300)
	fm := &fakeModel{summary: "Read the big modules; calc.py adds 1 too many."}
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		switch {
		case n <= 4:
			return turn(call(fmt.Sprintf("r%d", n), tools.ReadFiles, map[string]any{"paths": []string{fmt.Sprintf("big%d.py", n)}}))
		case n == 5:
			return turn(call("e", tools.EditFile, fixEdit))
		}
		return turn(call("s", tools.Submit, map[string]string{"summary": "drop the + 1"}))
	}
	om := &overflowModel{fakeModel: fm, limit: 9_000}
	r, job := setupLoop(t, fm)
	r.Models = om
	r.Roles[model.RoleTriage] = true
	for i := 1; i <= 4; i++ {
		os.WriteFile(filepath.Join(job.Dir, fmt.Sprintf("big%d.py", i)), []byte(big), 0o644)
	}
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s), want fixed\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	if om.refused != 1 || out.Compactions == 0 {
		t.Errorf("%d requests refused, %d compactions; want 1 refusal, then compaction", om.refused, out.Compactions)
	}
}

// A submit's arguments in the shapes models send that hold one reading (fenced, encoded
// twice, empty) are read; two objects run together are refused, not half read.
func TestSubmitArgumentShapes(t *testing.T) {
	tests := []struct {
		name, args string
		want       Status
		summary    string
	}{
		{"fenced", "```json\n{\"summary\": \"drop the + 1\"}\n```", StatusFixed, "drop the + 1"},
		{"encoded twice", `"{\"summary\": \"drop the + 1\"}"`, StatusFixed, "drop the + 1"},
		{"empty", ``, StatusFixed, ""},
		{"two objects", `{"summary": "a"}{"summary": "b"}`, StatusBudget, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := &fakeModel{}
			fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
				if n == 1 {
					return turn(call("e", tools.EditFile, fixEdit))
				}
				s := call(fmt.Sprintf("s%d", n), tools.Submit, nil)
				s.Function.Arguments = tt.args
				return turn(s)
			}
			r, job := setupLoop(t, fm)
			out := r.Run(context.Background(), job)
			if out.Status != tt.want || out.Summary != tt.summary {
				t.Fatalf("submit arguments %q: status %s (%s), summary %q; want %s, summary %q", tt.args, out.Status, out.Reason, out.Summary, tt.want, tt.summary)
			}
			if tt.want != StatusFixed && !strings.Contains(toolResults(fm.makerRequests()[2])["s2"], "not valid JSON") {
				t.Errorf("submit arguments %q: result %q, want it refused as not valid JSON", tt.args, toolResults(fm.makerRequests()[2])["s2"])
			}
		})
	}
}

// An answer cut at the output limit stopped inside its last tool call: that call is not run
// (a server may have "repaired" its cut arguments into a shorter file) and the maker is
// told why; the calls before it run.
func TestCutAnswerLastCallNotRun(t *testing.T) {
	fm := &fakeModel{makerFinish: func(n int) string {
		if n == 1 {
			return "length"
		}
		return "stop"
	}}
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		if n == 1 {
			return turn(call("e", tools.EditFile, fixEdit),
				call("w", tools.WriteFile, map[string]string{"path": "calc.py", "content": "def double(x):\n    return x +"}))
		}
		return turn(call("s", tools.Submit, map[string]string{"summary": "drop the + 1"}))
	}
	r, job := setupLoop(t, fm)
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s), want fixed", out.Status, out.Reason)
	}
	got, _ := os.ReadFile(filepath.Join(job.Dir, "calc.py"))
	if !strings.Contains(string(got), "return x + x\n") {
		t.Errorf("calc.py = %q: the cut write_file ran", got)
	}
	res := toolResults(fm.makerRequests()[1])
	if !strings.Contains(res["e"], "edited calc.py") || !strings.Contains(res["w"], "cut off at the output limit") {
		t.Errorf("results: edit %q, cut write %q; want the edit run and the write refused as cut", res["e"], res["w"])
	}
}

// A maker answer without a tool call is told what it was, in words that are true of it, and
// the stop reason after the third says so too.
func TestIdleAnswersToldWhatTheyWere(t *testing.T) {
	tests := []struct {
		name           string
		msg            openai.ChatCompletionMessage
		finish         string
		nudge, because string
	}{
		{"plain text", openai.ChatCompletionMessage{Content: "The bug is in calc.py."}, "stop", "Nobody reads plain answers", `"The bug is in calc.py."`},
		{"refusal", openai.ChatCompletionMessage{Refusal: "I can't help with that."}, "stop", "You declined the task", `a refusal: "I can't help with that."`},
		{"content filter", openai.ChatCompletionMessage{}, "content_filter", "content filter", "finish_reason content_filter"},
		{"cut before any call", openai.ChatCompletionMessage{}, "length", "cut off at the output limit", "finish_reason length"},
		{"empty", openai.ChatCompletionMessage{}, "stop", "Your answer was empty", "an empty answer"},
		{"tool call as text", openai.ChatCompletionMessage{Content: "<tool_call>\n{\"name\": \"read_files\", \"arguments\": {\"paths\": [\"calc.py\"]}}\n</tool_call>"}, "stop",
			"function-calling interface", "tool-call parser"},
		{"tool call as JSON text", openai.ChatCompletionMessage{Content: "```json\n{\"name\": \"grep\", \"parameters\": {\"pattern\": \"double\"}}\n```"}, "stop",
			"function-calling interface", "tool call written as text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := &fakeModel{makerFinish: func(int) string { return tt.finish }}
			fm.maker = func(int, model.Request) openai.ChatCompletionMessage { return tt.msg }
			r, job := setupLoop(t, fm)
			out := r.Run(context.Background(), job)
			if out.Status != StatusFailed || !strings.Contains(out.Reason, "without using a tool") || !strings.Contains(out.Reason, tt.because) {
				t.Errorf("answer %+v (finish %s): status %s (%s), want failed naming %q", tt.msg, tt.finish, out.Status, out.Reason, tt.because)
			}
			reqs := fm.makerRequests()
			if len(reqs) != maxIdleTurns {
				t.Fatalf("%d maker requests, want %d", len(reqs), maxIdleTurns)
			}
			msgs := reqs[1].Messages
			if last := msgs[len(msgs)-1]; last.Role != openai.ChatMessageRoleUser || !strings.Contains(last.Content, tt.nudge) {
				t.Errorf("answer %+v (finish %s): the maker was told %q, want %q", tt.msg, tt.finish, last.Content, tt.nudge)
			}
		})
	}
}

// Many tool calls in one answer: identical read-only calls run once and the copies point to
// its result (the loop guard, whose nudge the model cannot read before the answer ends,
// does not stop an attempt over one answer), and calls past maxTurnCalls are not run, with
// the reason.
func TestManyCallsInOneAnswer(t *testing.T) {
	tests := []struct {
		name  string
		calls func() []openai.ToolCall
		check func(res map[string]string) string
	}{
		{"six identical reads", func() []openai.ToolCall {
			var calls []openai.ToolCall
			for i := range 6 {
				calls = append(calls, call(fmt.Sprintf("r%d", i), tools.ReadFiles, map[string]any{"paths": []string{"calc.py"}}))
			}
			return calls
		}, func(res map[string]string) string {
			if !strings.Contains(res["r0"], "return x + x + 1") {
				return "the first read has no content: " + res["r0"]
			}
			for i := 1; i < 6; i++ {
				if got := res[fmt.Sprintf("r%d", i)]; !strings.Contains(got, "as r0 earlier in this answer") {
					return fmt.Sprintf("read r%d = %q, want a pointer to r0", i, got)
				}
			}
			return ""
		}},
		{"forty greps", func() []openai.ToolCall {
			var calls []openai.ToolCall
			for i := range 40 {
				calls = append(calls, call(fmt.Sprintf("g%d", i), tools.Grep, map[string]string{"pattern": fmt.Sprintf("x{%d}", i+1)}))
			}
			return calls
		}, func(res map[string]string) string {
			if strings.Contains(res["g31"], "not run") || !strings.Contains(res["g32"], "at most 32 tool calls, and yours made 40") || !strings.Contains(res["g39"], "not run") {
				return fmt.Sprintf("g31 = %q, g32 = %q, g39 = %q; want the first 32 run and the rest refused", res["g31"], res["g32"], res["g39"])
			}
			return ""
		}},
		{"an edit whose new text holds its old text, sent twice", func() []openai.ToolCall {
			edit := map[string]string{"path": "calc.py", "old_text": "def double(x):", "new_text": "def double(x):  # doubles"}
			return []openai.ToolCall{call("e1", tools.EditFile, edit), call("e2", tools.EditFile, edit)}
		}, func(res map[string]string) string {
			if !strings.Contains(res["e2"], "as e1 earlier in this answer") {
				return fmt.Sprintf("second edit = %q, want a pointer to e1", res["e2"])
			}
			return ""
		}},
		{"a refused submit sent twice", func() []openai.ToolCall {
			partial := map[string]string{"path": "calc.py", "old_text": "def double(x):", "new_text": "def double(x):  # partial"}
			return []openai.ToolCall{call("e", tools.EditFile, partial), call("s1", tools.Submit, map[string]string{"summary": "x"}), call("s2", tools.Submit, map[string]string{"summary": "x"})}
		}, func(res map[string]string) string {
			if !strings.Contains(res["s1"], "Not accepted") || !strings.Contains(res["s2"], "as s1 earlier in this answer") {
				return fmt.Sprintf("submits: %q, %q; want the first refused, the second a pointer to it", clip(res["s1"], 100), res["s2"])
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := &fakeModel{}
			fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
				if n == 1 {
					return turn(tt.calls()...)
				}
				return turn(call("e", tools.EditFile, fixEdit), call("s", tools.Submit, map[string]string{"summary": "drop the + 1"}))
			}
			r, job := setupLoop(t, fm)
			out := r.Run(context.Background(), job)
			if out.Status != StatusFixed {
				t.Fatalf("status %s (%s), want fixed", out.Status, out.Reason)
			}
			if bad := tt.check(toolResults(fm.makerRequests()[1])); bad != "" {
				t.Error(bad)
			}
		})
	}
}
