package github

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the GitHub side's live figures for /metrics: the rate-limit budget the
// client last saw, the conditional requests GitHub answered 304 (free), and each
// operation's failed passes (opHealth).
func (s *Syncer) Collectors() []prometheus.Collector {
	c := s.Intake.Client
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ticketd_github_rate_remaining",
			Help: "GitHub API calls left in the current rate-limit window, as last reported."},
			func() float64 { return float64(c.Rate().Remaining) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ticketd_github_rate_limit",
			Help: "GitHub API calls allowed per rate-limit window, as last reported."},
			func() float64 { return float64(c.Rate().Limit) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ticketd_github_not_modified_total",
			Help: "GitHub GETs answered 304 against their ETag (no rate limit spent)."},
			func() float64 { return float64(c.NotModified()) }),
		&s.health,
	}
}
