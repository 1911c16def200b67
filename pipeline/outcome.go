package pipeline

import (
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// Status is how an attempt ended.
type Status string

const (
	StatusFixed     Status = "fixed"     // checks, checker and judge passed: commit it
	StatusFailed    Status = "failed"    // the model gave up or could not produce a passing fix
	StatusBudget    Status = "budget"    // a step, token or time bound, or the loop guard, stopped it
	StatusTransport Status = "transport" // the model endpoint kept failing: not the ticket's fault
	StatusStopped   Status = "stopped"   // the context was cancelled (shutdown or ticket cancelled)
	// StatusUnverified: the change passes the checks, but nothing shows that it fixes the
	// reported bug (no test fails at the base and passes with it, no verification does
	// either). It is never shipped; its patch is kept for a human.
	StatusUnverified Status = "unverified"
	// StatusNeedsInfo: the maker asked a human a question (Outcome.Question). The ticket
	// waits for the answer; the attempt is not charged.
	StatusNeedsInfo Status = "needs_info"
	// StatusTestsChanged: the change weakens tests the base passed (Gate.Weakened: edited,
	// skipped, deleted or renamed), or still carries suppressions, test configuration or
	// protected paths after being told (see findings.go). It is never shipped by itself: the
	// ticket escalates at once, its patch and branch kept, and a human may accept it.
	StatusTestsChanged Status = "tests_changed"
)

// Outcome is what one attempt produced: how it ended (Conclusion), what it leaves for the
// report, the branch and the next attempt (Artifacts), and what it cost (Metrics). The three
// are embedded, so out.Status, out.Gate and out.Dollars read as before.
type Outcome struct {
	Conclusion
	Artifacts
	Metrics
}

// Conclusion is how an attempt ended: what the caller decides the ticket's fate on.
type Conclusion struct {
	Status   Status
	Reason   string
	Question string // the maker's question (StatusNeedsInfo)
	// RepeatsUnverified is the attempt whose unverified patch this attempt ended with again,
	// unverified again (0 when it did not): a further attempt would only repeat it.
	RepeatsUnverified int
	// EndpointFault is set when the attempt ended on a model request that failed for a
	// reason on the endpoint's side, which would fail any ticket's request the same way: a
	// refusal (4xx other than quota), an unusable answer (streamed, not JSON),
	// or a context overflow before the conversation grew (triage, the maker's first
	// request). The night compares them across tickets to tell a systemic failure.
	EndpointFault *model.Fault
	// NeedsBudget says a StatusBudget attempt was stopped by its dollars (spent, or projected
	// to be spent by the next maker call), with its partial work kept: more money resumes it.
	NeedsBudget bool
	// RetryAt is, for an attempt stopped by a rate limit (StatusTransport), when the
	// provider said it lifts: the ticket waits until then. Zero when it did not say.
	RetryAt time.Time
}

// Artifacts are what an attempt leaves for the report and a human: the change's summary and
// what each stage found on the last submit that reached it.
type Artifacts struct {
	Summary string            // the maker's submit summary
	Triage  *Triage           // the triage used (fresh or cached)
	Checks  []validate.Result // the last validator run on a submitted change
	Gate    *Gate             // that run compared with the base commit
	// Evidence is what showed (or failed to show) that the last submitted change fixes the
	// bug; nil when no submit got past the checks.
	Evidence      *Evidence
	Findings      []Finding // the checker's verified findings on the last review
	Verdict       *Verdict  // the judge's last verdict
	JudgeAdvisory bool      // the verdict only annotates (judge: advisory)
	History       []string  // what was tried, one line each, for the report
	Flaky         []string  // tests that failed on a candidate, then passed alone ("check: id")
	// Arbitrations are the arbiter's decisions on contradicting findings, in order.
	Arbitrations []Arbitration
}

// Metrics are what an attempt cost and how its stages went, for the record and /metrics.
type Metrics struct {
	Steps   int
	Tokens  int64
	Dollars float64 // known model spend of this attempt
	Calls   int
	Submits int
	// Compactions counts the passes that shrank the maker's conversation to fit its window.
	Compactions int
	// ReviewRounds and DroppedFindings count the attempt's reviews and the checker findings
	// dropped (invented evidence, bad schema, new in round 2).
	ReviewRounds    int
	DroppedFindings int
	Duration        time.Duration
	// FirstTierCaught counts the check runs (submits and run_checks) that the first tier
	// failed, so the whole suite did not run; FirstTierTime is the time all first tiers took.
	FirstTierCaught int
	FirstTierTime   time.Duration
}
