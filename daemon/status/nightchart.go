package status

import (
	"fmt"
	"strings"
)

// nightChart is success rate (bars, left axis, 0–100%) and cost (a line, right axis, USD)
// per night, oldest on the left, on one plot with both axes labelled.
type nightChart struct {
	// Narrow is the variant drawn for a phone's width (the page carries both and its CSS
	// shows one).
	Narrow        bool
	Width, Height int
	PlotX, PlotY  int
	PlotW, PlotH  int
	RateTicks     []tick
	CostTicks     []tick
	Bars          []nightBar
	CostLine      string // SVG points of the cost line
	Points        []costPoint
	XLabels       []xLabel
	MaxCost       float64
}

// PlotRight, PlotBottom, MidX and MidY place the axes and their titles.
func (c nightChart) PlotRight() int  { return c.PlotX + c.PlotW }
func (c nightChart) PlotBottom() int { return c.PlotY + c.PlotH }
func (c nightChart) MidX() int       { return c.PlotX + c.PlotW/2 }
func (c nightChart) MidY() int       { return c.PlotY + c.PlotH/2 }

type nightBar struct {
	X, W, Y, H float64
	HasRate    bool
	Label      string
	Outcome    string
}

type costPoint struct {
	X, Y  float64
	Label string
}

type xLabel struct {
	X     float64
	Label string
}

// Geometry of the nights chart in SVG user units.
const (
	nightChartW       = 760
	nightChartNarrowW = 380
	nightChartH       = 240
	nightChartLeft    = 52
	nightChartRight   = 64
	nightChartTop     = 16
	nightChartBottom  = 40
	// maxChartNights bounds the nights drawn: the latest ones.
	maxChartNights = 60
)

// newNightChart draws rows (newest first) in a chart width units wide (nightChartW, or
// nightChartNarrowW).
func newNightChart(rows []nightRow, width int) nightChart {
	c := nightChart{Narrow: width < nightChartW, Width: width, Height: nightChartH, PlotX: nightChartLeft, PlotY: nightChartTop,
		PlotW: width - nightChartLeft - nightChartRight, PlotH: nightChartH - nightChartTop - nightChartBottom}
	if len(rows) > maxChartNights {
		rows = rows[:maxChartNights]
	}
	// rows are newest first; the chart reads left to right in time.
	n := len(rows)
	if n == 0 {
		return c
	}
	top := 0.0
	for _, r := range rows {
		top = max(top, r.CostUSD)
	}
	ph := float64(c.PlotH)
	for v := 0; v <= 100; v += 25 {
		c.RateTicks = append(c.RateTicks, tick{Y: ph - float64(v)/100*ph, Label: fmt.Sprintf("%d%%", v)})
	}
	c.MaxCost, c.CostTicks = axis(top, ph, false, usdTick)
	for i := range c.RateTicks {
		c.RateTicks[i].Y += float64(c.PlotY)
	}
	for i := range c.CostTicks {
		c.CostTicks[i].Y += float64(c.PlotY)
	}
	step := float64(c.PlotW) / float64(n)
	w := min(step*0.8, 40) // a few nights do not make wall-wide bars
	base := float64(c.PlotY + c.PlotH)
	labels := 10 // at most ten labels on the x axis, five when narrow
	if c.Narrow {
		labels = 5
	}
	every := max(1, (n+labels-1)/labels)
	var pts []string
	for i := range n {
		r := rows[n-1-i]
		x := float64(c.PlotX) + float64(i)*step
		b := nightBar{X: x + (step-w)/2, W: max(w, 1), Outcome: r.OutcomeClass(), HasRate: r.HasRate}
		b.Label = fmt.Sprintf("night %d (%s): %s", r.ID, r.Started.Format("2006-01-02 15:04"), r.OutcomeText())
		if r.HasRate {
			b.H = r.Rate * ph
			b.Label += fmt.Sprintf(", success rate %.0f%% (%d done, %d escalated)", r.Rate*100, r.Done, r.Escalated)
		} else {
			// No rate, but the night's outcome still shows: a stub in its colour.
			b.H = min(4, ph)
			b.Label += ", no ticket done or escalated"
		}
		b.Y = base - b.H
		b.Label += ", cost " + usdTick(r.CostUSD)
		c.Bars = append(c.Bars, b)
		cx := x + step/2
		cy := base - r.CostUSD/c.MaxCost*ph
		c.Points = append(c.Points, costPoint{X: cx, Y: cy, Label: fmt.Sprintf("night %d: %s", r.ID, usdTick(r.CostUSD))})
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", cx, cy))
		if i%every == 0 || i == n-1 {
			c.XLabels = append(c.XLabels, xLabel{X: cx, Label: fmt.Sprint(r.ID)})
		}
	}
	c.CostLine = strings.Join(pts, " ")
	return c
}

// usdTick writes a dollar amount with as many decimals as its size needs.
func usdTick(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 10:
		return fmt.Sprintf("$%.0f", v)
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("$%.3f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}
