package status

import (
	"fmt"

	"github.com/ticketd/ticketd/store"
)

// chart is a ticket's tokens per model call as stacked bars: cached prompt tokens at the
// bottom, uncached prompt tokens above, completion tokens on top. Drawn server-side as SVG,
// so the page needs no chart library and the test can count the bars in the DOM.
type chart struct {
	TicketID      int64
	Width, Height int
	Bars          []bar
	Max           int64
}

type bar struct {
	X, W                  int
	CachedY, CachedH      float64
	UncachedY, UncachedH  float64
	OutY, OutH            float64
	Label                 string // tooltip: untrusted-free, but escaped by the template anyway
	Cached, Uncached, Out int64
	Attempt               int
	AttemptStart, Failed  bool
}

// Chart geometry in SVG user units.
const (
	chartHeight = 90
	chartPlot   = 80 // bars' maximum height; the rest is the baseline margin
	chartMaxBar = 18
	chartWidth  = 560
)

func newChart(ticketID int64, calls []store.ModelCall) chart {
	c := chart{TicketID: ticketID, Height: chartHeight}
	if len(calls) == 0 {
		return c
	}
	for _, m := range calls {
		c.Max = max(c.Max, m.PromptTokens+m.CompletionTokens)
	}
	step := min(chartMaxBar+2, max(chartWidth/len(calls), 2))
	c.Width = max(step*len(calls), 40)
	scale := 0.0
	if c.Max > 0 {
		scale = chartPlot / float64(c.Max)
	}
	base := float64(chartPlot) + 2
	last := -1
	for i, m := range calls {
		cached := min(m.CachedTokens, m.PromptTokens)
		b := bar{X: i * step, W: max(step-2, 1), Cached: cached, Uncached: m.PromptTokens - cached, Out: m.CompletionTokens,
			Attempt: m.Attempt, AttemptStart: m.Attempt != last && i > 0, Failed: m.Error != ""}
		last = m.Attempt
		b.CachedH = float64(b.Cached) * scale
		b.UncachedH = float64(b.Uncached) * scale
		b.OutH = float64(b.Out) * scale
		b.CachedY = base - b.CachedH
		b.UncachedY = b.CachedY - b.UncachedH
		b.OutY = b.UncachedY - b.OutH
		b.Label = fmt.Sprintf("call %d (attempt %d, %s %s): %d prompt tokens, %d cached, %d completion",
			i+1, m.Attempt, m.Role, m.Model, m.PromptTokens, cached, m.CompletionTokens)
		if m.Error != "" {
			b.Label += "; error: " + m.Error
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}
