package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/store"
)

func summary(repo string, cost float64, labels ...string) store.Summary {
	return store.Summary{Ticket: store.Ticket{Repo: repo, Labels: labels}, CostUSD: cost, ModelCalls: 3}
}

func TestForecast(t *testing.T) {
	finished := []store.Summary{
		summary("shop", 0.10, "bug"), summary("shop", 0.30, "bug"), // shop/bug: 0.20
		summary("shop", 1.00, "feature"), // shop: (0.1+0.3+1)/3
		summary("blog", 0.05),            // all: 1.45/4
		{Ticket: store.Ticket{Repo: "shop", Labels: []string{"bug"}}, CostUSD: 9, CostUnknown: true, ModelCalls: 1},
	}
	for _, tc := range []struct {
		name    string
		queued  []store.Summary
		limit   float64
		dollars float64
		unknown int
		over    bool
		history []store.Summary
	}{
		{"by repo and label", []store.Summary{summary("shop", 0, "bug"), summary("shop", 0, "bug")}, 1, 0.40, 0, false, finished},
		{"by repo", []store.Summary{summary("shop", 0, "docs")}, 0, 1.40 / 3, 0, false, finished},
		{"by all", []store.Summary{summary("api", 0)}, 0, 1.45 / 4, 0, false, finished},
		{"over the cap", []store.Summary{summary("shop", 0, "feature"), summary("shop", 0, "feature")}, 1.5, 2, 0, true, finished},
		{"first night", []store.Summary{summary("shop", 0)}, 1, 0, 1, false, nil},
	} {
		f := forecast(tc.queued, tc.history, tc.limit)
		if fmt.Sprintf("%.4f", f.Dollars) != fmt.Sprintf("%.4f", tc.dollars) || f.Unknown != tc.unknown || f.Over != tc.over || f.Queued != len(tc.queued) {
			t.Errorf("%s: forecast = %+v; want $%.4f, unknown %d, over %v", tc.name, f, tc.dollars, tc.unknown, tc.over)
		}
	}
}

// TestForecastInWords: what the status page shows of a forecast (Daemon.Forecast).
func TestForecastInWords(t *testing.T) {
	var d Daemon
	if got := d.Forecast(); got != "" {
		t.Errorf("Forecast before any night = %q; want none", got)
	}
	d.setForecast(Forecast{Dollars: 1.2, Queued: 3, Unknown: 1, Cap: 1, Over: true})
	got := d.Forecast()
	for _, want := range []string{"$1.20", "3 queued", "1 of them with no history", "night.max_dollars is $1.00", "exceeds it"} {
		if !strings.Contains(got, want) {
			t.Errorf("Forecast = %q; want it to say %q", got, want)
		}
	}
}
