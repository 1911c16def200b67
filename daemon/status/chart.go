package status

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/store"
)

// callChart is a ticket's tokens per model call as stacked bars on a labelled axis: cached
// prompt tokens at the bottom, uncached prompt tokens above, completion tokens on top, the
// role of each call lettered under its bar and each attempt's calls marked off. Drawn
// server-side as SVG, so it needs no script, and the test can count the bars in the DOM.
// Every call is drawn, however many: bars get thinner, the chart never gives up.
type callChart struct {
	TicketID int64
	// Narrow is the variant drawn for a phone's width (the page carries both and its CSS
	// shows one), so the text stays legible and no bar is scrolled out of sight.
	Narrow         bool
	XTitle         string
	Width, Height  int
	PlotX, PlotY   int // the plot area's top left corner
	PlotW, PlotH   int
	Ticks          []tick
	Bars           []bar
	Attempts       []attemptMark
	Max            int64 // the axis' top value
	ShowRoleLetter bool
	Roles          []roleTotal
}

type tick struct {
	Y     float64
	Label string
}

type bar struct {
	X, W                  float64
	CachedY, CachedH      float64
	UncachedY, UncachedH  float64
	OutY, OutH            float64
	Label                 string
	Role                  string
	Letter                string
	Cached, Uncached, Out int64
	Attempt               int
	Failed                bool
}

type attemptMark struct {
	X     float64
	Label string
}

// PlotRight, PlotBottom, MidX and MidY place the axes and their titles.
func (c callChart) PlotRight() int  { return c.PlotX + c.PlotW }
func (c callChart) PlotBottom() int { return c.PlotY + c.PlotH }
func (c callChart) MidX() int       { return c.PlotX + c.PlotW/2 }
func (c callChart) MidY() int       { return c.PlotY + c.PlotH/2 }

// roleTotal sums one role's calls of the ticket, as the table under the chart shows them.
type roleTotal struct {
	Role                          string
	Letter                        string
	Calls, Failed                 int
	Prompt, Cached, Uncached, Out int64
	CostUSD                       float64
	CostUnknown, Estimated        bool
}

// Geometry of the call chart in SVG user units: callChartW wide, or callChartNarrowW for a
// phone.
const (
	callChartW       = 760
	callChartNarrowW = 380
	callChartH       = 230
	callChartLeft    = 60
	callChartRight   = 12
	callChartTop     = 22
	callChartBottom  = 44
)

// roleOrder is the order roles are listed in; others follow by name.
var roleOrder = []string{"triage", "maker", "checker", "judge"}

func roleLetter(role string) string {
	if role == "" {
		return "?"
	}
	return strings.ToUpper(role[:1])
}

// newCallChart draws calls in a chart width units wide (callChartW, or callChartNarrowW).
func newCallChart(ticketID int64, calls []store.ModelCall, width int) callChart {
	c := callChart{TicketID: ticketID, Narrow: width < callChartW, Width: width, Height: callChartH, PlotX: callChartLeft, PlotY: callChartTop,
		PlotW: width - callChartLeft - callChartRight, PlotH: callChartH - callChartTop - callChartBottom,
		XTitle: "model calls in order, role under each bar (T triage, M maker, C checker, J judge)"}
	if c.Narrow {
		c.XTitle = "calls in order (T triage, M maker, C checker, J judge)"
	}
	roles := map[string]*roleTotal{}
	var top int64
	for _, m := range calls {
		top = max(top, m.PromptTokens+m.CompletionTokens)
		r, ok := roles[m.Role]
		if !ok {
			r = &roleTotal{Role: m.Role, Letter: roleLetter(m.Role)}
			roles[m.Role] = r
		}
		cached := min(m.CachedTokens, m.PromptTokens)
		r.Calls++
		if m.Error != "" {
			r.Failed++
		}
		r.Prompt += m.PromptTokens
		r.Cached += cached
		r.Uncached += m.PromptTokens - cached
		r.Out += m.CompletionTokens
		if m.CostUSD != nil {
			r.CostUSD += *m.CostUSD
		}
		r.CostUnknown = r.CostUnknown || m.CostUSD == nil || m.CompletionUnknown
		r.Estimated = r.Estimated || m.UsageEstimated
	}
	for _, name := range sortedRoles(roles) {
		c.Roles = append(c.Roles, *roles[name])
	}
	if len(calls) == 0 {
		return c
	}
	hi, ticks := axis(float64(top), float64(c.PlotH), true, func(v float64) string { return humanTokens(int64(v)) })
	c.Max, c.Ticks = int64(hi), ticks
	for i := range c.Ticks {
		c.Ticks[i].Y += float64(c.PlotY)
	}
	step := float64(c.PlotW) / float64(len(calls))
	w := min(step-min(step*0.2, 3), 40) // a few calls do not make wall-wide bars
	c.ShowRoleLetter = step >= 9
	scale := float64(c.PlotH) / float64(c.Max)
	base := float64(c.PlotY + c.PlotH)
	last := -1
	for i, m := range calls {
		x := float64(c.PlotX) + float64(i)*step
		if m.Attempt != last {
			c.Attempts = append(c.Attempts, attemptMark{X: x, Label: fmt.Sprintf("attempt %d", m.Attempt)})
			last = m.Attempt
		}
		cached := min(m.CachedTokens, m.PromptTokens)
		b := bar{X: x + (step-w)/2, W: max(w, 0.5), Cached: cached, Uncached: m.PromptTokens - cached, Out: m.CompletionTokens,
			Attempt: m.Attempt, Failed: m.Error != "", Role: m.Role, Letter: roleLetter(m.Role)}
		b.CachedH = float64(b.Cached) * scale
		b.UncachedH = float64(b.Uncached) * scale
		b.OutH = float64(b.Out) * scale
		b.CachedY = base - b.CachedH
		b.UncachedY = b.CachedY - b.UncachedH
		b.OutY = b.UncachedY - b.OutH
		b.Label = fmt.Sprintf("call %d, attempt %d, %s (%s): %d prompt tokens (%d cached, %d uncached), %d completion",
			i+1, m.Attempt, m.Role, m.Model, m.PromptTokens, cached, m.PromptTokens-cached, m.CompletionTokens)
		if m.Error != "" {
			b.Label += "; failed: " + m.Error
		}
		c.Bars = append(c.Bars, b)
	}
	// An attempt's label is as wide as its calls leave room for ("attempt 2", else "2").
	for i := range c.Attempts {
		end := float64(c.PlotRight())
		if i+1 < len(c.Attempts) {
			end = c.Attempts[i+1].X
		}
		if end-c.Attempts[i].X < 56 {
			c.Attempts[i].Label = strings.TrimPrefix(c.Attempts[i].Label, "attempt ")
		}
	}
	return c
}

func sortedRoles(roles map[string]*roleTotal) []string {
	var names []string
	for n := range roles {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		ia, ib := slices.Index(roleOrder, a), slices.Index(roleOrder, b)
		if ia < 0 {
			ia = len(roleOrder)
		}
		if ib < 0 {
			ib = len(roleOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	return names
}

// axis picks a round step (1, 2 or 5 times a power of ten) that splits top into at most
// four parts, and returns the axis' top (a whole number of steps at or above top) and its
// ticks from 0, each with its y offset (0 at the top of a plot of height h) and label. An
// integer axis (tokens) never has a fractional step.
func axis(top, h float64, integer bool, label func(float64) string) (float64, []tick) {
	step := niceStep(top / 4)
	if integer {
		step = max(step, 1)
	}
	hi := max(math.Ceil(top/step-1e-9), 1) * step
	var ticks []tick
	for v := 0.0; v <= hi+step/1e6; v += step {
		ticks = append(ticks, tick{Y: h - v/hi*h, Label: label(v)})
	}
	return hi, ticks
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten; 0 and less become 1.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}
