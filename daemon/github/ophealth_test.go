package github

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// gathered is reg's series as name{label="value"} -> value.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// TestFailedPassesOnMetrics: a scan GitHub refuses shows on /metrics as failing until a
// pass succeeds, and counts once per failed pass; a rate-limit pause is neither.
func TestFailedPassesOnMetrics(t *testing.T) {
	b, cn := setupCanned(t)
	s := &Syncer{Intake: b.intake, Logger: b.intake.Logger}
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&s.health)
	reset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	steps := []struct {
		name            string
		answer          reply
		failures, fails int
	}{
		{"token refused", reply{401, nil, `{"message":"Bad credentials","status":"401"}`}, 1, 1},
		{"refused again", reply{401, nil, `{"message":"Bad credentials","status":"401"}`}, 2, 1},
		{"listed", reply{200, nil, `[]`}, 2, 0},
		{"rate limited", reply{403, map[string]string{"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
			"X-RateLimit-Reset": reset}, `{"message":"API rate limit exceeded for user ID 1."}`}, 2, 0},
	}
	for _, st := range steps {
		cn.set("GET /repos/acme/app/issues", st.answer)
		s.Scan(ctx)
		got := gathered(t, reg)
		want := map[string]float64{`ticketd_github_failures_total{op="scan"}`: float64(st.failures), `ticketd_github_failing{op="scan"}`: float64(st.fails)}
		if !maps.Equal(got, want) {
			t.Errorf("after %s: metrics %v, want %v", st.name, got, want)
		}
	}
}
