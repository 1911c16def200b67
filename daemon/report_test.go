package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestReportMarksCosts: report.md writes a cost resting on estimates with "~" and one that
// misses a call's cost with "+ unknown", as ticketctl show does.
func TestReportMarksCosts(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	tests := []struct {
		name  string
		calls []store.ModelCall
		want  string
	}{
		{"reported", []store.ModelCall{{CostUSD: v(0.01)}, {CostUSD: v(0.02)}}, "- cost: $0.0300\n"},
		{"estimated", []store.ModelCall{{CostUSD: v(0.01)}, {CostUSD: v(0.02), UsageEstimated: true}}, "- cost: ~$0.0300 (~: partly estimated"},
		{"unpriced", []store.ModelCall{{CostUSD: v(0.01)}, {}}, "- cost: $0.0100 + unknown (+ unknown:"},
		{"abandoned", []store.ModelCall{{CostUSD: v(0.01), UsageEstimated: true, CompletionUnknown: true}}, "- cost: ~$0.0100 + unknown (~: partly estimated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderReport(reportInput{Ticket: store.Ticket{ID: 1, Title: "x", CreatedAt: time.Now()}, Ending: "done", Calls: tt.calls, Now: time.Now()})
			if !strings.Contains(got, tt.want) {
				t.Errorf("report lacks %q:\n%s", tt.want, got)
			}
		})
	}
}
