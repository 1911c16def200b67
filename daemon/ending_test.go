package daemon

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// TestDecideEndings is the table of every way an attempt ends today: what the ticket is
// charged, where its change is kept, whether a report is written and pushed, where it goes.
// Each row is an ending the worker reaches; a new ending is a new row.
func TestDecideEndings(t *testing.T) {
	window := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	lim := limits{MaxDollars: 2, WindowEnd: window}
	first := store.Lease{Attempt: 1, Ticket: store.Ticket{ID: 7, MaxAttempts: 3}}
	last := store.Lease{Attempt: 3, Ticket: store.Ticket{ID: 7, MaxAttempts: 3}}
	oc := func(c pipeline.Conclusion) pipeline.Outcome { return pipeline.Outcome{Conclusion: c} }
	ran := func(stop error) cause { return cause{Stage: stageRun, Stop: stop} }
	disk := fmt.Errorf("write results: %w", syscall.ENOSPC)
	dbGone := fmt.Errorf("claim: %w", store.ErrDatabaseGone)
	shutdown := fmt.Errorf("%w: interrupt", ErrShutdown)
	locked := fmt.Errorf("%w: /r/.git/refs/heads/x.lock is still there: if no git process runs in that repository, remove the file", worktree.ErrLocked)
	fault := &model.Fault{Endpoint: "maker", Class: "bad_request", Status: 400}

	type want struct {
		kind      endingKind
		charge    bool
		fail      store.FailureKind
		keep      keepWork
		push      bool
		report    bool
		next      store.State
		mayPark   bool
		park      bool
		final     bool
		pauseRepo bool
		fault     faultNote
		reason    string // a part of the reason, "" for any
	}
	tests := []struct {
		name  string
		cause cause
		out   pipeline.Outcome
		lease store.Lease
		lim   limits
		want  want
	}{
		// Before the run.
		{"repo not configured", cause{Stage: stageRefused, Err: errors.New(`repo "x" is not configured`)}, pipeline.Outcome{}, first, lim,
			want{kind: endRetry, charge: true, fail: store.FailFix, next: store.StateQueued, reason: "not configured"}},
		{"baseline aborted at the last attempt", cause{Stage: stageRefused, Err: errors.New("baseline checks: output limit")}, pipeline.Outcome{}, last, lim,
			want{kind: endEscalated, charge: true, fail: store.FailFix, next: store.StateEscalated}},
		{"repository gone", cause{Stage: stageGone, Err: errors.New("prepare worktree: not a repository")}, pipeline.Outcome{}, first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, pauseRepo: true, reason: "not a repository"}},
		{"environment failed", cause{Stage: stageEnv, Err: errors.New("environment of x: setup failed")}, pipeline.Outcome{}, first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued}},
		{"worktree not made", cause{Stage: stageSetup, Err: errors.New("prepare worktree: git: lock")}, pipeline.Outcome{}, first, lim,
			want{kind: endReleased, fail: store.FailTransport, next: store.StateQueued, mayPark: true}},
		{"stale git lock in the repository", cause{Stage: stageSetup, Err: fmt.Errorf("prepare worktree: %w", locked)}, pipeline.Outcome{}, first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, pauseRepo: true, fault: faultNoted, reason: "x.lock"}},
		{"setup cut by shutdown", cause{Stage: stageSetup, Err: errors.New("baseline checks: cancelled"), Stop: shutdown}, pipeline.Outcome{}, first, lim,
			want{kind: endReleased, fail: store.FailShutdown, next: store.StateQueued, reason: "shutting down"}},
		{"questions unreadable: database", cause{Stage: stageSetup, Err: fmt.Errorf("%w: %w", ErrMachineFault, dbGone)}, pipeline.Outcome{}, first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, fault: faultNoted}},

		// The run's outcome.
		{"fixed", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endDone, keep: keepFix, push: true, report: true, next: store.StateDone}},
		{"fixed as the window closed", ran(ErrWindowClosed), oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endDone, keep: keepFix, push: true, report: true, next: store.StateDone}},
		{"failed, retried", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusFailed, Reason: "gave up"}), first, lim,
			want{kind: endRetry, charge: true, fail: store.FailFix, keep: keepAttemptBranch, push: true, report: true, next: store.StateQueued, reason: "gave up"}},
		{"failed at the last attempt", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusFailed}), last, lim,
			want{kind: endEscalated, charge: true, fail: store.FailFix, keep: keepAttemptBranch, push: true, report: true, next: store.StateEscalated}},
		{"unverified, retried", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusUnverified}), first, lim,
			want{kind: endRetry, charge: true, fail: store.FailFix, keep: keepAttemptBranch, push: true, report: true, next: store.StateQueued}},
		{"unverified twice: escalated now", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusUnverified, RepeatsUnverified: 1}), first, lim,
			want{kind: endEscalated, charge: true, fail: store.FailFix, keep: keepAttemptBranch, push: true, report: true, next: store.StateEscalated, final: true}},
		{"tamper refused by rule", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusTestsChanged}), first, lim,
			want{kind: endEscalated, charge: true, fail: store.FailHuman, keep: keepAttemptBranch, push: true, report: true, next: store.StateEscalated}},
		{"step budget", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusBudget}), first, lim,
			want{kind: endRetry, charge: true, fail: store.FailBudget, keep: keepAttemptBranch, push: true, report: true, next: store.StateQueued}},
		{"dollars stop: needs budget", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusBudget, NeedsBudget: true, Reason: "spent $2"}), first, lim,
			want{kind: endNeedsBudget, keep: keepAttemptBranch, push: true, report: true, next: store.StateNeedsBudget, reason: "spent $2"}},
		{"dollars stop without a dollar budget", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusBudget, NeedsBudget: true}), first, limits{WindowEnd: window},
			want{kind: endRetry, charge: true, fail: store.FailBudget, keep: keepAttemptBranch, push: true, report: true, next: store.StateQueued}},
		{"needs info", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusNeedsInfo, Question: "which?"}), first, lim,
			want{kind: endNeedsInfo, keep: keepAttemptBranch, push: true, report: true, next: store.StateNeedsInfo}},
		{"transport fault", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusTransport, Reason: "connection reset"}), first, lim,
			want{kind: endReleased, fail: store.FailTransport, next: store.StateQueued, mayPark: true, reason: "connection reset"}},
		{"rate limited inside the window", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusTransport, RetryAt: window.Add(-time.Hour)}), first, lim,
			want{kind: endRateLimited, fail: store.FailRateLimit, next: store.StateQueued, reason: "waits until"}},
		{"rate limited past the window: parked", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusTransport, RetryAt: window.Add(time.Hour)}), first, lim,
			want{kind: endRateLimited, fail: store.FailRateLimit, next: store.StateParked, park: true, reason: "after the night's window"}},
		{"stopped by shutdown", ran(shutdown), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endReleased, fail: store.FailShutdown, keep: keepReleasedBranch, push: true, report: true, next: store.StateQueued}},
		{"stopped by the window and grace", ran(fmt.Errorf("%w and its grace", ErrWindowClosed)), oc(pipeline.Conclusion{Status: pipeline.StatusFailed}), first, lim,
			want{kind: endReleased, fail: store.FailShutdown, keep: keepReleasedBranch, push: true, report: true, next: store.StateQueued}},
		{"stopped by the night's dollars", ran(ErrNightBudget), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endReleased, fail: store.FailShutdown, keep: keepReleasedBranch, push: true, report: true, next: store.StateQueued}},
		{"stopped by the quota", ran(fmt.Errorf("%w: no credit", ErrQuota)), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endReleased, fail: store.FailShutdown, keep: keepReleasedBranch, push: true, report: true, next: store.StateQueued}},
		{"heartbeat failing", ran(fmt.Errorf("%w: timeout", errHeartbeatFailing)), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endReleased, fail: store.FailTransport, keep: keepReleasedBranch, push: true, report: true, next: store.StateQueued, mayPark: true}},
		{"storage fault in a tool call", ran(fmt.Errorf("%w: the workspace: %w", ErrMachineFault, disk)), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, keep: keepReleasedBranch, report: true, next: store.StateQueued, fault: faultPauseNode}},
		{"database full while saving the triage: pauses nothing", ran(fmt.Errorf("%w: %w: the triage: %w", ErrMachineFault, errDatabaseWrite, disk)), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, keep: keepReleasedBranch, report: true, next: store.StateQueued, fault: faultNoted}},
		{"database did not take the triage", ran(fmt.Errorf("%w: triage: %w", ErrMachineFault, dbGone)), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, keep: keepReleasedBranch, report: true, next: store.StateQueued, fault: faultNoted}},
		{"cancel requested", ran(errCancelRequested), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endCancelled, report: true, next: store.StateCancelled}},
		{"lease lost", ran(errLeaseLost), oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endDiscarded}},
		{"systemic endpoint fault", cause{Stage: stageRun, Systemic: true}, oc(pipeline.Conclusion{Status: pipeline.StatusFailed, EndpointFault: fault, Reason: "400"}), first, lim,
			want{kind: endReleased, fail: store.FailTransport, next: store.StateQueued, mayPark: true, reason: "endpoint's answer"}},
		{"endpoint fault, its own", ran(nil), oc(pipeline.Conclusion{Status: pipeline.StatusFailed, EndpointFault: fault}), first, lim,
			want{kind: endRetry, charge: true, fail: store.FailFix, keep: keepAttemptBranch, push: true, report: true, next: store.StateQueued}},
		{"worktree vanished", cause{Stage: stageRun, TreeGone: "the attempt's worktree /w vanished"}, oc(pipeline.Conclusion{Status: pipeline.StatusFailed}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, pauseRepo: true, reason: "vanished"}},
		{"base ref moved under a finished fix", cause{Stage: stageRun, TreeGone: "during the attempt: base ref gone", TreeLeft: true}, oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endDone, keep: keepFix, push: true, report: true, next: store.StateDone, pauseRepo: true}},
		{"worktree watch stopped it", ran(fmt.Errorf("%w: /w is gone", errWorktreeGone)), oc(pipeline.Conclusion{Status: pipeline.StatusStopped}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, pauseRepo: true, reason: "/w is gone"}},

		// After the run.
		{"commit failed", cause{Stage: stageCommit, Err: errors.New("nothing to commit")}, oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endRetry, charge: true, fail: store.FailFix, next: store.StateQueued, reason: "commit fix"}},
		{"commit failed: the repository moved away", cause{Stage: stageCommit, Err: errors.New("read HEAD: no such file"), TreeGone: "during the attempt: repos.x.path /r is not a git repository"},
			oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, pauseRepo: true, reason: "is not a git repository"}},
		{"commit met a stale git lock", cause{Stage: stageCommit, Err: locked}, oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, pauseRepo: true, fault: faultNoted, reason: "remove the file"}},
		{"commit met a full disk", cause{Stage: stageCommit, Err: disk}, oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, fault: faultPauseNode, reason: "commit fix"}},
		{"fix conflicts with one published tonight", cause{Stage: stageAgree, Err: &disagreement{With: []int64{4}, Why: "its change does not apply on top of theirs"}},
			oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endEscalated, charge: true, fail: store.FailHuman, keep: keepUnpublished, report: true, final: true, next: store.StateEscalated, reason: "conflicts with #4"}},
		{"agreement check's worktree failed", cause{Stage: stageAgree, Err: fmt.Errorf("%w: prepare: %w", ErrMachineFault, disk)},
			oc(pipeline.Conclusion{Status: pipeline.StatusFixed}), first, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, fault: faultPauseNode, reason: "tonight's published fixes"}},
		{"results not written", cause{Stage: stageResults, Err: disk}, oc(pipeline.Conclusion{Status: pipeline.StatusFailed}), last, lim,
			want{kind: endReleased, fail: store.FailMachine, next: store.StateQueued, fault: faultPauseNode, reason: "write the results of attempt 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := decide(tt.cause, tt.out, tt.lease, tt.lim)
			w := tt.want
			got := want{kind: e.Kind, charge: e.Charge, fail: e.Fail, keep: e.Keep, push: e.Push, report: e.Report, next: e.Next,
				mayPark: e.MayPark, park: e.Park, final: e.Final, pauseRepo: e.PauseRepo != "", fault: e.Fault, reason: w.reason}
			if got != w {
				t.Errorf("decide = %+v\nwant      %+v", got, w)
			}
			if e.Report && e.Heading == "" {
				t.Errorf("ending %q writes a report without a heading", e.Kind)
			}
			if !strings.Contains(e.Reason, w.reason) {
				t.Errorf("reason %q lacks %q", e.Reason, w.reason)
			}
			// An attempt is charged exactly when the ticket's own trouble ended it.
			if e.Charge != (e.Fail == store.FailFix || e.Fail == store.FailBudget || e.Fail == store.FailHuman) {
				t.Errorf("charge %v disagrees with failure kind %q", e.Charge, e.Fail)
			}
		})
	}
}
