package github

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/store"
)

// ciVerdict is what a pull request's checks say of its head commit.
type ciVerdict struct {
	State  string // store.CIPending, CIGreen, CIRed, CIStuck
	Detail string
	// Failed are the failed check runs (for their logs).
	Failed []*gh.CheckRun
}

// stuckHelp is what to do about checks that never start; docs/github.md says more.
const stuckHelp = "a maintainer must approve the workflows for ticketd's account (Actions: \"Approve and run\"), or ticketd pushes as a GitHub App whose pushes run workflows; see docs/github.md"

// classifyChecks reads check runs and commit statuses into one verdict. A run that waits
// for approval (action_required) or no check at all long after the push is stuck: nothing
// will happen without a human. Any failure is red; anything still queued or running is
// pending; all passed (or neutral, skipped) is green. sincePush is how long ago the head was
// pushed.
func classifyChecks(runs []*gh.CheckRun, combined *gh.CombinedStatus, sincePush, stuckAfter time.Duration) ciVerdict {
	var v ciVerdict
	var waiting, running, failed, passed []string
	for _, r := range runs {
		name := r.GetName()
		switch r.GetConclusion() {
		case "action_required":
			waiting = append(waiting, name)
		case "failure", "timed_out", "startup_failure":
			failed = append(failed, name)
			v.Failed = append(v.Failed, r)
		case "success", "neutral", "skipped":
			passed = append(passed, name)
		case "cancelled", "stale":
			// Cancelled (a newer push superseded it) or stale: says nothing of this commit.
		default:
			if r.GetStatus() == "waiting" {
				waiting = append(waiting, name)
			} else {
				running = append(running, name)
			}
		}
	}
	for _, s := range combined.GetStatuses() { // nil-safe: a server may send no status object

		switch s.GetState() {
		case "failure", "error":
			failed = append(failed, s.GetContext())
		case "success":
			passed = append(passed, s.GetContext())
		default:
			running = append(running, s.GetContext())
		}
	}
	switch {
	case len(failed) > 0:
		v.State, v.Detail = store.CIRed, "failed: "+strings.Join(clipNames(failed), ", ")
	case len(waiting) > 0:
		v.State, v.Detail = store.CIStuck, fmt.Sprintf("waiting for approval (action_required): %s; %s", strings.Join(clipNames(waiting), ", "), stuckHelp)
	case len(running) > 0:
		v.State, v.Detail = store.CIPending, "running: "+strings.Join(clipNames(running), ", ")
	case len(passed) > 0:
		v.State, v.Detail = store.CIGreen, fmt.Sprintf("%d check(s) passed", len(passed))
	case sincePush >= stuckAfter:
		v.State, v.Detail = store.CIStuck, fmt.Sprintf("no check started %s after the push; %s", sincePush.Round(time.Minute), stuckHelp)
	default:
		v.State, v.Detail = store.CIPending, "no check has started yet"
	}
	return v
}

func clipNames(names []string) []string {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	if len(names) > 8 {
		return append(names[:8:8], fmt.Sprintf("and %d more", len(names)-8))
	}
	return names
}

// Log lines name failing tests in pytest's short summary ("FAILED tests/x.py::test_y - ..."
// or "ERROR tests/x.py::test_y"), each possibly after an Actions timestamp. The file, up to
// the first "::", holds no colon and ends in .py.
var (
	actionsStamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z `)
	pytestFailed = regexp.MustCompile(`^(?:FAILED|ERROR) ([^\s:][^\s:]*\.py(?:::[^\s]+)+)(?: - .*)?$`)
)

// maxLogTests bounds the test ids taken from one log: more is a broken build, not tests to
// re-run one by one.
const maxLogTests = 20

// failedTests maps a job log to the pytest node ids it reports failing, in order, each once.
// Anything else in the log (the job's own output is untrusted) is ignored; a node id that
// leaves the repository (absolute, "..", a NUL) is dropped.
func failedTests(log string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(actionsStamp.ReplaceAllString(sc.Text(), ""), "\r")
		m := pytestFailed.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id := m[1]
		file, _, _ := strings.Cut(id, "::")
		if strings.HasPrefix(file, "/") || strings.HasPrefix(file, "-") || slices.Contains(strings.Split(file, "/"), "..") || strings.ContainsAny(id, "\x00`$") {
			continue
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
		if len(out) == maxLogTests {
			break
		}
	}
	return out
}
