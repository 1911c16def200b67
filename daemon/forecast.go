package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// forecastHistory is how many recently finished tickets the forecast learns from.
const forecastHistory = 200

// Forecast is what the night's queue will probably cost: per queued ticket, the mean cost
// of recently finished tickets of the same repository and first label, else of the same
// repository, else of all; tickets with no history to go by are counted apart.
type Forecast struct {
	Dollars float64
	Queued  int
	// Unknown counts queued tickets with no finished ticket to go by (a first night).
	Unknown int
	// Cap is the night's dollar cap (night.max_dollars, 0 for none); Over says the
	// forecast exceeds it.
	Cap  float64
	Over bool
}

// forecastKey groups tickets whose costs are alike.
func forecastKey(t store.Summary) string {
	label := ""
	if len(t.Labels) > 0 {
		label = slices.Min(t.Labels)
	}
	return t.Repo + "\x00" + label
}

// forecast prices queued from finished (pure: the table test pins it).
func forecast(queued, finished []store.Summary, limit float64) Forecast {
	type mean struct {
		sum float64
		n   int
	}
	byKey, byRepo, all := map[string]*mean{}, map[string]*mean{}, &mean{}
	add := func(m map[string]*mean, k string, c float64) {
		if m[k] == nil {
			m[k] = &mean{}
		}
		m[k].sum, m[k].n = m[k].sum+c, m[k].n+1
	}
	for _, t := range finished {
		if t.CostUnknown || t.ModelCalls == 0 {
			continue
		}
		add(byKey, forecastKey(t), t.CostUSD)
		add(byRepo, t.Repo, t.CostUSD)
		all.sum, all.n = all.sum+t.CostUSD, all.n+1
	}
	f := Forecast{Queued: len(queued), Cap: limit}
	for _, t := range queued {
		switch m := byKey[forecastKey(t)]; {
		case m != nil:
			f.Dollars += m.sum / float64(m.n)
		case byRepo[t.Repo] != nil:
			f.Dollars += byRepo[t.Repo].sum / float64(byRepo[t.Repo].n)
		case all.n > 0:
			f.Dollars += all.sum / float64(all.n)
		default:
			f.Unknown++
		}
	}
	f.Over = limit > 0 && f.Dollars > limit
	return f
}

// logForecast logs the night's forecast at its start: a warning, saying so, when it
// exceeds night.max_dollars.
func (d *Daemon) logForecast(ctx context.Context, log *slog.Logger) {
	queued, err := d.Store.List(ctx, store.Filter{States: []store.State{store.StateQueued}})
	if err != nil {
		log.Warn("forecast the night's cost: read the queue", "err", err)
		return
	}
	finished, err := d.Store.List(ctx, store.Filter{States: []store.State{store.StateDone, store.StateEscalated}, Limit: forecastHistory})
	if err != nil {
		log.Warn("forecast the night's cost: read the finished tickets", "err", err)
		return
	}
	f := forecast(queued, finished, d.Config.Night.MaxDollars)
	attrs := []any{"forecast", model.FormatCost(f.Dollars, true, false), "queued", f.Queued, "without_history", f.Unknown}
	if f.Cap > 0 {
		attrs = append(attrs, "max_dollars", model.FormatCost(f.Cap, false, false))
	}
	d.setForecast(f)
	if f.Over {
		log.Warn(fmt.Sprintf("night forecast exceeds night.max_dollars: the night will likely stop at its cap with tickets left (%d queued)", f.Queued), attrs...)
		return
	}
	log.Info("night forecast", attrs...)
}

// setForecast keeps f in words for the status page (Forecast).
func (d *Daemon) setForecast(f Forecast) {
	text := fmt.Sprintf("Forecast for the night's queue: %s for %d queued ticket(s)", model.FormatCost(f.Dollars, true, false), f.Queued)
	if f.Unknown > 0 {
		text += fmt.Sprintf(", %d of them with no history to price them by", f.Unknown)
	}
	if f.Cap > 0 {
		text += fmt.Sprintf("; night.max_dollars is %s", model.FormatCost(f.Cap, false, false))
	}
	if f.Over {
		text += ": the forecast exceeds it, the night will likely stop at its cap with tickets left"
	}
	d.forecast.Store(&text)
}

// Forecast is the latest night's cost forecast in words, "" before the first night of
// this process: what the status page shows beside the night.
func (d *Daemon) Forecast() string {
	if p := d.forecast.Load(); p != nil {
		return *p
	}
	return ""
}
