package pipeline

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
)

// spend counts one attempt's model calls against its Budget and says when the next call
// may not be made. Reviewers running in parallel charge it together, so its counters sit
// behind a mutex; steps is the maker loop's alone.
type spend struct {
	budget Budget
	start  time.Time
	now    func() time.Time

	steps int // maker calls made

	mu      sync.Mutex
	calls   int
	tokens  int64
	dollars float64 // known cost; calls of unknown cost count 0
	watch   spendWatch
}

func newSpend(b Budget, start time.Time, now func() time.Time) *spend {
	return &spend{budget: b, start: start, now: now}
}

// check says whether the attempt may make another model call. The wall clock is read from
// the Runner's clock here, and also enforced by a context deadline in Run for a call or a
// check that hangs.
func (s *spend) check() error {
	b := s.budget
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case b.MaxTokens > 0 && s.tokens >= b.MaxTokens:
		return fmt.Errorf("%w: token limit: %d tokens used of %d", errBudget, s.tokens, b.MaxTokens)
	case b.MaxDollars > 0 && s.dollars >= b.MaxDollars:
		return fmt.Errorf("%w: %w: $%.4f spent of $%.2f", errBudget, errDollars, s.dollars, b.MaxDollars)
	case b.WallClock > 0 && s.now().Sub(s.start) >= b.WallClock:
		return fmt.Errorf("%w: wall clock of %s", errBudget, b.WallClock)
	}
	return nil
}

// checkMaker says whether the maker may make its next call: the step limit, the bounds of
// check, and the projected cost of that call (spendWatch.projection).
func (s *spend) checkMaker() error {
	if s.budget.MaxSteps > 0 && s.steps >= s.budget.MaxSteps {
		return fmt.Errorf("%w: step limit of %d maker calls reached", errBudget, s.budget.MaxSteps)
	}
	if err := s.check(); err != nil {
		return err
	}
	s.mu.Lock()
	why := s.watch.projection(s.dollars, s.budget.MaxDollars)
	s.mu.Unlock()
	if why != "" {
		return fmt.Errorf("%w: %w: %s", errBudget, errDollars, why)
	}
	return nil
}

// charge counts one answered (or failed) request of role; a maker call that succeeded with
// a known cost also feeds the projection.
func (s *spend) charge(role model.Role, resp model.Response, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.tokens += resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	if resp.CostUSD != nil {
		s.dollars += *resp.CostUSD
		if role == model.RoleMaker && err == nil {
			s.watch.add(*resp.CostUSD, resp.Usage.PromptTokens)
		}
	}
}

// totals are the counters, read once the attempt is over.
func (s *spend) totals() (steps, calls int, tokens int64, dollars float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.steps, s.calls, s.tokens, s.dollars
}

// spendWindow is how many of the maker's last calls the projection reads: enough to see a
// trend, few enough to follow a context that started climbing.
const spendWindow = 4

// spendWatch keeps the maker's last calls' cost and prompt size, so the attempt can stop
// before a call would spend money its budget no longer has, rather than after.
type spendWatch struct {
	costs   []float64 // known cost of each maker call, oldest first (last spendWindow)
	prompts []int64   // prompt tokens of each maker call, oldest first (all of them)
}

func (w *spendWatch) add(cost float64, prompt int64) {
	w.costs = append(w.costs, cost)
	if len(w.costs) > spendWindow {
		w.costs = w.costs[1:]
	}
	w.prompts = append(w.prompts, prompt)
}

// projectNext is what the next call will probably cost: the last call's cost plus the
// average growth per call over the window (a context that grows each call costs more each
// call, cache or not), never less than the last call. 0 before any call.
func projectNext(costs []float64) float64 {
	n := len(costs)
	if n == 0 {
		return 0
	}
	last := costs[n-1]
	if n == 1 {
		return last
	}
	growth := (last - costs[0]) / float64(n-1)
	return last + max(growth, 0)
}

// projection decides whether the maker may make its next call with remaining dollars
// left: it may not when the projected cost of that call is more than what remains (the
// call would cross the cap). It returns why not, or "".
func (w *spendWatch) projection(spent, limit float64) string {
	if limit <= 0 || len(w.costs) == 0 {
		return ""
	}
	next, remaining := projectNext(w.costs), limit-spent
	if next <= remaining {
		return ""
	}
	return fmt.Sprintf("projected: the next maker call would cost about $%.4f (last calls %s%s), $%.4f of $%.2f remains",
		next, costList(w.costs), w.growthNote(), max(remaining, 0), limit)
}

// growth is the ratio of the last maker prompt to the first (1 when fewer than two).
func (w *spendWatch) growth() float64 {
	if len(w.prompts) < 2 || w.prompts[0] <= 0 {
		return 1
	}
	return float64(w.prompts[len(w.prompts)-1]) / float64(w.prompts[0])
}

func (w *spendWatch) growthNote() string {
	if g := w.growth(); g >= 1.5 {
		return fmt.Sprintf("; the prompt grew %.1f× since the first maker call, %d → %d tokens", g, w.prompts[0], w.prompts[len(w.prompts)-1])
	}
	return ""
}

func costList(costs []float64) string {
	s := make([]string, len(costs))
	for i, c := range costs {
		s[i] = fmt.Sprintf("$%.4f", c)
	}
	return strings.Join(s, ", ")
}
