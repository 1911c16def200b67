package validate

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// A check configured without a time-out gets DefaultTimeout at the base commit; once the
// baseline has run, its runs on a candidate get TimeoutFactor times what the baseline took,
// at least MinDerivedTimeout: a suite that took 90 s at the base is not killed at 120 s
// because the machine is busier tonight, and a hung test still cannot eat the night.
const (
	TimeoutFactor     = 3
	MinDerivedTimeout = 2 * time.Minute
)

// BaselineTimeouts returns checks with a time-out derived from baseline (the same checks'
// results at the base commit, matched by name) for every check configured without one. A
// check the baseline did not run, or whose run timed out, keeps DefaultTimeout. Each
// derived time-out carries a TimeoutNote naming the baseline, which a time-out repeats.
func BaselineTimeouts(checks []Check, baseline []Result) []Check {
	out := make([]Check, len(checks))
	for i, c := range checks {
		out[i] = c
		if c.Timeout > 0 {
			continue
		}
		for _, r := range baseline {
			if r.Name != c.Name || r.TimedOut || r.Duration <= 0 {
				continue
			}
			d := max(TimeoutFactor*r.Duration, MinDerivedTimeout)
			out[i].Timeout = d
			out[i].TimeoutNote = fmt.Sprintf("time-out derived from the base commit's run of %s: %d× that, at least %s; set timeout: on the check to choose it",
				r.Duration.Round(100*time.Millisecond), TimeoutFactor, MinDerivedTimeout)
			break
		}
	}
	return out
}

// LoadAverage is the machine's one-minute load average, -1 when it cannot be read: a
// time-out's note says how busy the machine was.
func LoadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return -1
	}
	l, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return -1
	}
	return l
}
