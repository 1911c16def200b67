package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
)

func TestProjectNext(t *testing.T) {
	for _, tc := range []struct {
		costs []float64
		want  float64
	}{
		{nil, 0},
		{[]float64{0.02}, 0.02},
		{[]float64{0.02, 0.02, 0.02}, 0.02},
		{[]float64{0.01, 0.02, 0.03, 0.04}, 0.05}, // growing: one more step of growth
		{[]float64{0.05, 0.03, 0.01}, 0.01},       // shrinking (compacted): never below the last
		{[]float64{0.01, 0.01, 0.01, 0.04}, 0.05}, // a jump: its share of growth
	} {
		if got := projectNext(tc.costs); fmt.Sprintf("%.4f", got) != fmt.Sprintf("%.4f", tc.want) {
			t.Errorf("projectNext(%v) = %.4f, want %.4f", tc.costs, got, tc.want)
		}
	}
}

// TestGrowingContextStopsBeforeTheCap: a maker that reads a new large file every call
// makes each call dearer than the last. The attempt stops before a call would cross its
// dollar limit, not after: it never spends past the limit, it says it was projected, and
// it needs budget (its partial change kept in the worktree).
func TestGrowingContextStopsBeforeTheCap(t *testing.T) {
	fm := &fakeModel{CostPerToken: 2e-6} // $2 per million prompt tokens
	fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
		if n == 1 {
			return turn(call("e", tools.EditFile, map[string]string{"path": "calc.py", "old_text": "def double(x):", "new_text": "def double(x):  # partial"}))
		}
		return turn(call(fmt.Sprintf("r%d", n), tools.ReadFiles, map[string]any{"paths": []string{fmt.Sprintf("big%d.py", n)}}))
	}
	r, job := setupLoop(t, fm)
	for i := range 40 {
		data := strings.Repeat(fmt.Sprintf("# filler line %d of a long module\n", i), 150)
		if err := os.WriteFile(filepath.Join(job.Dir, fmt.Sprintf("big%d.py", i)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	job.Budget = Budget{MaxSteps: 40, MaxDollars: 0.05}
	out := r.Run(context.Background(), job)
	if out.Status != StatusBudget || !out.NeedsBudget || !strings.Contains(out.Reason, "projected") {
		t.Fatalf("status %s needs_budget %v (%s); want budget, needs_budget, projected", out.Status, out.NeedsBudget, out.Reason)
	}
	if out.Dollars > job.Budget.MaxDollars {
		t.Errorf("spent $%.4f, past the $%.2f limit: the projection should have stopped first", out.Dollars, job.Budget.MaxDollars)
	}
	if d, _ := job.Diff(context.Background()); !strings.Contains(d, "# partial") {
		t.Errorf("partial change lost: diff %q", d)
	}
	reqs := fm.makerRequests()
	first, last := estimateTokens(reqs[0].Messages, nil), estimateTokens(reqs[len(reqs)-1].Messages, nil)
	if last < 2*first {
		t.Errorf("the maker's prompt went from %d to %d tokens: the test meant it to grow", first, last)
	}
	t.Logf("stopped after %d maker calls at $%.4f of $%.2f; prompt %d → %d tokens: %s", len(reqs), out.Dollars, job.Budget.MaxDollars, first, last, out.Reason)
}
