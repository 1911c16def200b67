package daemon

// attemptDollars is an attempt's dollar budget: the configured one plus what operators
// added to the ticket (ticketctl budget). 0 (no limit) stays 0.
func attemptDollars(configured, extra float64) float64 {
	if configured <= 0 {
		return configured
	}
	return configured + extra
}
