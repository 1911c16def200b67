package daemon

import (
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// An attempt ends in one of a few ways. decide names which, from what happened and nothing
// else (no store, no disk, no clock), and perform (perform.go) carries it out: every ending is
// a row of one table test (ending_test.go) instead of a path through stacked switches.

// endingKind is how an attempt ended: the record's endings (record.Ending), and two that
// leave no record.
type endingKind string

const (
	endDone        = endingKind(record.Done)
	endRetry       = endingKind(record.Retry)
	endEscalated   = endingKind(record.Escalated)
	endCancelled   = endingKind(record.Cancelled)
	endReleased    = endingKind(record.Released)
	endNeedsInfo   = endingKind(record.NeedsInfo)
	endNeedsBudget = endingKind(record.NeedsBudget)
	// endRateLimited waits for the provider's reset: back to the queue until then, or parked
	// when it falls after the window. No report.
	endRateLimited endingKind = "rate_limited"
	// endDiscarded is an attempt whose lease was lost: the ticket is someone else's now, and
	// nothing of the attempt is written.
	endDiscarded endingKind = "discarded"
)

// heading is the report's heading of an ending.
func (k endingKind) heading() string {
	return map[endingKind]string{
		endDone:        "Fixed",
		endRetry:       "Not fixed yet (will be retried)",
		endEscalated:   "Escalated: needs a human",
		endCancelled:   "Cancelled",
		endReleased:    "Stopped from outside and released (the attempt is not spent; the ticket runs again)",
		endNeedsInfo:   "Waiting for an answer: the maker asked a question (the attempt is not spent)",
		endNeedsBudget: "Waiting for money: its dollars stopped it, before the cap (the attempt is not spent)",
	}[k]
}

// stage is where an attempt ended: in its preparation, its run, or after the run.
type stage int

const (
	// stageRefused: the ticket cannot be attempted as configured (a repository not under
	// repos, a base commit whose own checks break a limit): a charged failure.
	stageRefused stage = iota
	// stageGone: the repository or its base ref is gone, or its base is too large to check
	// out: the machine's fault, the repository is paused.
	stageGone
	// stageEnv: the repository's environment could not be built: the machine's fault.
	stageEnv
	// stageSetup: the worktree, the baseline or the ticket's questions could not be had:
	// released; whose fault it was follows from the error and the attempt's stop cause.
	stageSetup
	// stageRun: the pipeline ran; the outcome says how it ended.
	stageRun
	// stageCommit: the fix passed but its commit failed.
	stageCommit
	// stageResults: a charged attempt's results could not be written (the storage failed).
	stageResults
	// stageAgree: the committed fix was checked against the night's published fixes
	// (agree.go): a *disagreement, or the check could not run.
	stageAgree
)

// cause is what ended an attempt, as decide reads it.
type cause struct {
	Stage stage
	// Err is the error that ended a stage other than the run (nil for stageRun).
	Err error
	// Stop is why the attempt's context ended (context.Cause): a shutdown, the window, a lost
	// lease, a cancel request, the machine; nil when it did not.
	Stop error
	// TreeGone says why the attempt's worktree, its repository or its base ref vanished
	// under the run (or, for stageCommit, by the failed commit), "" when none did; TreeLeft
	// says the worktree folder is still there to commit.
	TreeGone string
	TreeLeft bool
	// Systemic says the run ended on an endpoint fault that every ticket meets: released.
	Systemic bool
}

// limits are the settings decide reads.
type limits struct {
	MaxDollars float64   // budget.max_dollars: 0 means none, so dollars never stop for money
	WindowEnd  time.Time // the night's window: a rate limit lifting after it parks the ticket
}

// keepWork says where an attempt's change is kept.
type keepWork int

const (
	keepNothing        keepWork = iota
	keepAttemptBranch           // committed on ticketd/<id>-attempt-<n>
	keepReleasedBranch          // committed on ticketd/<id>-attempt-<n>-released, moved to the latest
	keepFix                     // committed on the ticket's branch: the fix
	// keepUnpublished keeps the committed fix on the ticket's branch, never published: it
	// conflicts with a fix published tonight.
	keepUnpublished
)

// faultNote says what the night records of the machine's fault.
type faultNote int

const (
	faultNone      faultNote = iota
	faultNoted               // one of the night's machine faults (partial night)
	faultPauseNode           // a storage fault: this node claims no more tickets tonight
)

// ending is decide's answer: everything perform needs to end the attempt.
type ending struct {
	Kind endingKind
	// Charge says the attempt counts against the ticket's attempts.
	Charge bool
	// Fail is the failure recorded (store.Fail), "" for the endings with their own store call.
	Fail store.FailureKind
	// Reason is the failure's or the release's reason.
	Reason string
	// Final escalates a charged failure now (the same unverified patch twice).
	Final bool
	// RunAfter is when a rate-limited ticket may run again; Park parks it instead (the limit
	// lifts after the window); MayPark parks a transport release made too often tonight.
	RunAfter time.Time
	Park     bool
	MayPark  bool
	Keep     keepWork
	Push     bool
	Report   bool
	// Next is the state the ticket is meant to reach ("" for a lost lease: not ours to move).
	// The store has the last word (a cancel request, the attempt limit).
	Next store.State
	// Heading is the report's heading ("" for the endings without a report).
	Heading string
	// PauseRepo, when set, pauses the ticket's repository for the night with this reason.
	PauseRepo string
	Fault     faultNote
}

// decide says how an attempt ends. It is pure: the same facts give the same ending.
func decide(c cause, out pipeline.Outcome, lease store.Lease, lim limits) ending {
	e := decideStage(c, out, lease, lim)
	if e.Fail == store.FailMachine && errors.Is(c.Err, worktree.ErrLocked) {
		// A lock file git left in the repository stays until an operator removes it: every
		// attempt on the repository may meet it, so it is paused for the night, naming the file.
		e.PauseRepo = e.Reason
	}
	e.Heading = e.Kind.heading()
	return e
}

// decideStage is decide by the stage the attempt ended in.
func decideStage(c cause, out pipeline.Outcome, lease store.Lease, lim limits) ending {
	switch c.Stage {
	case stageRefused:
		return charged(store.FailFix, c.Err.Error(), false, false, lease)
	case stageGone:
		e := machineRelease(c.Err.Error())
		e.PauseRepo = e.Reason
		return e
	case stageEnv:
		return machineRelease(c.Err.Error())
	case stageSetup:
		return release(c.Stop, c.Err)
	case stageCommit:
		if c.TreeGone != "" {
			// The repository (or the worktree) went away under the finished fix: the
			// machine's fault, paused as a vanished repository is.
			e := machineRelease(fmt.Sprintf("commit fix: %s: %v", c.TreeGone, c.Err))
			e.PauseRepo = c.TreeGone
			return e
		}
		if mc, machine := machineCause(c.Err); machine {
			e := machineRelease(fmt.Sprintf("commit fix: %v", mc))
			e.Fault = faultOf(mc)
			return e
		}
		return charged(store.FailFix, fmt.Sprintf("commit fix: %v", c.Err), false, false, lease)
	case stageAgree:
		return decideAgree(c, lease)
	case stageResults:
		mc, _ := machineCause(c.Err)
		e := machineRelease(fmt.Sprintf("write the results of attempt %d: %v", lease.Attempt, mc))
		e.Fault = faultOf(mc)
		return e
	}
	return decideRun(c, out, lease, lim)
}

// decideAgree is decide for a fix that may not be published: one that conflicts with a fix
// published tonight is escalated at once, for a human, its fix kept unpublished (another
// attempt would write the same fix against the same base); a check that could not run
// gives the ticket back unspent.
func decideAgree(c cause, lease store.Lease) ending {
	var d *disagreement
	if errors.As(c.Err, &d) {
		e := charged(store.FailHuman, d.Error(), true, true, lease)
		e.Keep, e.Report = keepUnpublished, true
		return e
	}
	if mc, machine := machineCause(c.Err); machine {
		e := machineRelease(fmt.Sprintf("check the fix against tonight's published fixes: %v", mc))
		e.Fault = faultOf(mc)
		return e
	}
	return release(c.Stop, fmt.Errorf("check the fix against tonight's published fixes: %w", c.Err))
}

// decideRun is decide for an attempt whose pipeline ran.
func decideRun(c cause, out pipeline.Outcome, lease store.Lease, lim limits) ending {
	pause := c.TreeGone
	if pause == "" && errors.Is(c.Stop, errWorktreeGone) {
		pause = c.Stop.Error()
	}
	if treeRelease(c, out) {
		// Whatever the model saw after its ground vanished was the machine's fault.
		e := machineRelease(pause)
		e.PauseRepo = pause
		return e
	}
	e := decideStop(c, out, lease, lim)
	e.PauseRepo = pause
	return e
}

// treeRelease says whether the attempt's worktree or base ref vanished under it with no
// finished fix left to commit: released unspent.
func treeRelease(c cause, out pipeline.Outcome) bool {
	gone := c.TreeGone != "" || errors.Is(c.Stop, errWorktreeGone)
	return gone && (!c.TreeLeft || out.Status != pipeline.StatusFixed || c.Stop != nil)
}

// decideStop is decideRun past a vanished worktree: a stop from outside first, then the
// outcome's status.
func decideStop(c cause, out pipeline.Outcome, lease store.Lease, lim limits) ending {
	switch {
	case out.EndpointFault != nil && c.Systemic:
		return release(c.Stop, fmt.Errorf("the model endpoint's answer, not this ticket, ended the attempt: %s", oneLine(out.Reason)))
	case errors.Is(c.Stop, errLeaseLost):
		return ending{Kind: endDiscarded}
	case errors.Is(c.Stop, ErrMachineFault):
		// What the attempt did is kept as a stopped attempt's is; never pushed.
		e := release(c.Stop, c.Stop)
		e.Keep, e.Report = keepReleasedBranch, true
		return e
	case errors.Is(c.Stop, errCancelRequested):
		return ending{Kind: endCancelled, Report: true, Next: store.StateCancelled,
			Reason: "cancelled by an operator while running"}
	case c.Stop != nil && out.Status != pipeline.StatusFixed:
		// Stopped from outside (window and grace, shutdown, the night's dollars).
		e := release(c.Stop, c.Stop)
		e.Keep, e.Push, e.Report = keepReleasedBranch, true, true
		return e
	}
	return decideStatus(c, out, lease, lim)
}

// decideStatus is decideStop for an attempt nothing stopped from outside: its outcome's
// status says how it ended.
func decideStatus(c cause, out pipeline.Outcome, lease store.Lease, lim limits) ending {
	switch out.Status {
	case pipeline.StatusFixed:
		return ending{Kind: endDone, Keep: keepFix, Push: true, Report: true, Next: store.StateDone}
	case pipeline.StatusNeedsInfo:
		return ending{Kind: endNeedsInfo, Keep: keepAttemptBranch, Push: true, Report: true, Next: store.StateNeedsInfo}
	case pipeline.StatusBudget:
		if out.NeedsBudget && lim.MaxDollars > 0 {
			return ending{Kind: endNeedsBudget, Reason: oneLine(out.Reason), Keep: keepAttemptBranch, Push: true, Report: true, Next: store.StateNeedsBudget}
		}
	case pipeline.StatusTransport:
		if !out.RetryAt.IsZero() {
			f, park := rateLimitEnding(out.RetryAt, lim.WindowEnd, oneLine(out.Reason))
			next := store.StateQueued
			if park {
				next = store.StateParked
			}
			return ending{Kind: endRateLimited, Fail: f.Kind, Reason: f.Reason, RunAfter: f.RunAfter, Park: park, Next: next}
		}
		return release(c.Stop, errors.New(out.Reason))
	case pipeline.StatusStopped:
		return release(c.Stop, errors.New(out.Reason))
	}
	return failedAttempt(out, lease)
}

// failedAttempt is a charged attempt that did not fix the ticket: retried or escalated, its
// change kept on its own branch (the next attempt resets the ticket's).
func failedAttempt(out pipeline.Outcome, lease store.Lease) ending {
	kind := store.FailFix
	switch out.Status {
	case pipeline.StatusBudget:
		kind = store.FailBudget
	case pipeline.StatusTestsChanged:
		kind = store.FailHuman // refused by rule: escalated at once, for ticketctl accept
	}
	// The same unverified patch a second time escalates now: a retry would only repeat it.
	e := charged(kind, oneLine(out.Reason), out.RepeatsUnverified > 0, out.RepeatsUnverified > 0 || kind == store.FailHuman, lease)
	e.Keep, e.Push, e.Report = keepAttemptBranch, true, true
	return e
}

// charged is a failure that spends the attempt: escalated at the last attempt, or at once.
func charged(kind store.FailureKind, reason string, final, now bool, lease store.Lease) ending {
	e := ending{Kind: endRetry, Charge: true, Fail: kind, Reason: reason, Final: final, Next: store.StateQueued}
	if now || lease.Attempt >= lease.Ticket.AttemptLimit() {
		e.Kind, e.Next = endEscalated, store.StateEscalated
	}
	return e
}

// machineRelease gives the ticket back unspent: the machine failed the attempt.
func machineRelease(reason string) ending {
	return ending{Kind: endReleased, Fail: store.FailMachine, Reason: reason, Next: store.StateQueued}
}

// release gives the ticket back unspent for err; stop is the attempt's stop cause. A stop
// from outside (shutdown, window, the night's dollars, the quota) names the release; else the
// machine's fault does; else it is a transport fault, parked when too frequent.
func release(stop, err error) ending {
	if stop != nil && (errors.Is(stop, ErrShutdown) || errors.Is(stop, ErrNightBudget) || errors.Is(stop, ErrWindowClosed) || errors.Is(stop, ErrQuota)) {
		return ending{Kind: endReleased, Fail: store.FailShutdown, Reason: stop.Error(), Next: store.StateQueued}
	}
	if mc, machine := machineCause(err); machine {
		e := machineRelease(mc.Error())
		e.Fault = faultOf(mc)
		return e
	}
	return ending{Kind: endReleased, Fail: store.FailTransport, Reason: err.Error(), MayPark: true, Next: store.StateQueued}
}

// faultOf is what the night records of a machine fault: a storage fault of the workspace or
// the results pauses the node; the ticket database's own does not (its health watch resumes
// claims).
func faultOf(err error) faultNote {
	if workspaceFault(err) {
		return faultPauseNode
	}
	return faultNoted
}
