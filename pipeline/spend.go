package pipeline

import (
	"fmt"
	"strings"
)

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

// projectSpend is spendWatch.projection on the attempt's spend so far, before a maker call.
func (a *attempt) projectSpend() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.spend.projection(a.dollars, a.job.Budget.MaxDollars)
}
