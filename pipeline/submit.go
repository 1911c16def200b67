package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/pipeline/diskfault"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// A submit runs the maker's change through named stages, in the order the design draws
// them: checks → evidence → review → judge. Each is handed the candidate and returns its
// result; one that refuses the change answers the maker (or ends the attempt), and the
// stages after it do not run.

// candidate is one submitted change, as the stages see it.
type candidate struct {
	diff    string
	changed []string // the paths it touches (changedPaths)
	summary string   // the maker's
	named   []string // the tests the maker named on this attempt's submits so far
	targets []string // the tests it must make pass (targetTests)
}

func (a *attempt) submit(ctx context.Context, args string) toolResult {
	cand, refused := a.candidate(ctx, args)
	if refused != nil {
		return *refused
	}
	c := a.checkRun(cand)
	gate, refused := a.checksStage(ctx, c, cand)
	if refused != nil {
		return *refused
	}
	ev, refused := a.evidenceStage(ctx, c, cand, gate)
	if refused != nil {
		return *refused
	}
	out := Outcome{Artifacts: Artifacts{Summary: cand.summary, Checks: gate.Results, Gate: &gate, Evidence: ev}}
	if refused := a.reviewStage(ctx, cand, &out); refused != nil {
		return *refused
	}
	if refused := a.judgeStage(ctx, c, cand, &out); refused != nil {
		return *refused
	}
	a.jr.note("submit %d: checks passed and review passed", a.submits)
	out.Status = StatusFixed
	out.Reason = "checks, checker and judge passed"
	return toolResult{final: &out}
}

// candidate reads a submit into the change it proposes, or refuses it before any check
// runs: bad arguments, no change, no test after an unverified attempt, or findings (see
// findings.go).
func (a *attempt) candidate(ctx context.Context, args string) (candidate, *toolResult) {
	var s struct {
		Summary string   `json:"summary"`
		Tests   []string `json:"tests"` // node ids the maker added or that reproduce the bug
	}
	if err := json.Unmarshal([]byte(tools.ArgsJSON(args)), &s); err != nil {
		return candidate{}, &toolResult{failed: true, text: fmt.Sprintf("error: submit arguments are not valid JSON (%v); send {\"summary\": \"...\"}", err)}
	}
	diff, err := a.job.Diff(ctx)
	if err != nil {
		a.diskFault(err) // the repository's disk, not the maker's change
		return candidate{}, &toolResult{failed: true, text: "error: could not read your changes: " + err.Error()}
	}
	if strings.TrimSpace(diff) == "" {
		a.jr.note("submit refused: no changes")
		return candidate{}, &toolResult{failed: true, text: "error: submit refused: there are no changes in the repository; edit the code first"}
	}
	a.submits++
	changed := changedPaths(ctx, a.job, a.log, diff)
	if text, refused := a.needsTestFirst(changed); refused {
		return candidate{}, &toolResult{failed: true, text: text}
	}
	for _, id := range s.Tests {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(a.named, id) {
			a.named = append(a.named, id)
		}
	}
	if found := submitFindings(ctx, a.job, a.tree, diff, changed); len(found) > 0 {
		res := a.answerFindings(s.Summary, found)
		return candidate{}, &res
	}
	if res := a.unreviewable(s.Summary, diff); res != nil {
		return candidate{}, res
	}
	return candidate{diff: diff, changed: changed, summary: s.Summary, named: slices.Clone(a.named),
		targets: targetTests(a.named, a.issueTests, a.tri, a.job.Baseline)}, nil
}

// checkRun is the checks stage's run over cand's paths and targets.
func (a *attempt) checkRun(cand candidate) *checkRun {
	return &checkRun{tree: a.tree, run: baseInfraRunner{tree: a.tree, run: a.r.Checks, changed: cand.changed},
		checks: a.job.Checks, baseline: a.job.Baseline, changed: cand.changed, targets: cand.targets,
		reruns: a.r.flakeReruns(), now: a.r.now, log: a.log, jr: a.jr}
}

// runChecks runs c's gate over the change diff (for submit and run_checks) and counts its
// first tier. The change the checks last refused, sent again as it was (a model that
// resubmits without an edit, or calls run_checks on what submit just refused), gets that
// refusal back without the same runs again (refusedChecks).
func (a *attempt) runChecks(ctx context.Context, c *checkRun, diff string) (string, Gate) {
	if r := a.refusedChecks; r != nil && diff != "" && r.diff == diff && slices.Equal(r.targets, c.targets) {
		a.jr.note("checks not run again: the change is the one they refused %s ago, unchanged", a.r.now().Sub(r.at).Round(time.Second))
		return "Your change is the same as when the checks last ran, so they were not run again. " + r.text, r.gate
	}
	a.refusedChecks = nil
	text, g := c.gate(ctx)
	outOfSpace := false
	if !g.Passed && !g.Cancelled {
		if err := checksOutOfSpace(g.Results, a.job.Dir); err != nil {
			// The disk, not the change, failed the checks: they judged nothing, and the
			// attempt ends as the machine's before the model reads them.
			a.diskFault(err)
			g.Cancelled = ctx.Err() != nil
			outOfSpace = true
		}
	}
	if diff != "" && c.reruns > 0 && !g.Passed && !g.Cancelled && !outOfSpace && len(g.TimedOut) == 0 && validate.Aborted(g.Results) == "" {
		a.refusedChecks = &checkedChange{diff: diff, targets: slices.Clone(c.targets), text: text, gate: g, at: a.r.now()}
	}
	if g.FirstTier != nil {
		a.firstTierTime += g.FirstTier.Duration
	}
	if g.Tier == TierFirst {
		a.firstTierCaught++
	}
	return text, g
}

// checksOutOfSpace is the storage failure of a check that failed saying its disk is full
// ("OSError: [Errno 28] No space left on device"), when the disk of the worktree dir is
// indeed full; nil otherwise. The words alone are not enough (a test may print them, or
// assert on them), and a check that outgrew the worktree's limit filled the disk itself:
// that ends the attempt as its own (validate.Aborted).
func checksOutOfSpace(results []validate.Result, dir string) error {
	if validate.Aborted(results) != "" {
		return nil
	}
	for _, r := range results {
		if r.Passed {
			continue
		}
		text := r.Summary + "\n" + r.Output
		for _, f := range r.Findings {
			text += "\n" + f.Message
		}
		if diskfault.Describe(errors.New(text)) == "no space left on device" && diskfault.Full(dir) {
			return fmt.Errorf("check %s failed with its disk full (%s): %w", r.Name, dir, syscall.ENOSPC)
		}
	}
	return nil
}

// checksStage runs the checks on cand; a gate that does not pass refuses it, or ends the
// attempt (cut short, aborted, tests weakened, the same failures again).
func (a *attempt) checksStage(ctx context.Context, c *checkRun, cand candidate) (Gate, *toolResult) {
	_, gate := a.runChecks(ctx, c, cand.diff)
	a.lastGate = &gate
	if gate.Cancelled && ctx.Err() != nil {
		// The budget or a shutdown cut the checks short: that is how the attempt ends, never
		// a failure of the change.
		stopped := a.stop(ctx, Outcome{Artifacts: Artifacts{Summary: cand.summary, Checks: gate.Results, Gate: &gate}}, context.Cause(ctx))
		return gate, &toolResult{failed: true, text: "The checks were cut short: " + context.Cause(ctx).Error(), final: &stopped}
	}
	if reason := validate.Aborted(gate.Results); reason != "" {
		// A check broke a limit (the worktree outgrew max_worktree_size): nothing more runs in it.
		failed := a.stop(ctx, Outcome{Artifacts: Artifacts{Summary: cand.summary, Checks: gate.Results, Gate: &gate}}, errors.New(reason))
		return gate, &toolResult{final: &failed}
	}
	if len(gate.Weakened) > 0 {
		if len(gate.editedDoctests) == len(gate.Weakened) && a.doctestRefusals < MaxDoctestRefusals {
			return gate, a.refuseEditedDoctests(gate)
		}
		res := weakenedStop(a.jr, cand.summary, gate)
		return gate, &res
	}
	if gate.Passed {
		return gate, nil
	}
	a.jr.note("submit %d: checks failed: %s", a.submits, clip(gate.Text, 300))
	text := refusedByChecks + gate.Text + "\nFix these and call submit again."
	if a.repeated("checks", gate.failedKeys, cand.diff) {
		stopped := Outcome{Conclusion: Conclusion{Status: StatusFailed, Reason: fmt.Sprintf("%s: %s", sameRefusalStop, clip(strings.Join(strings.Fields(strings.Join(gate.failedKeys, "; ")), " "), 300))}, Artifacts: Artifacts{Summary: cand.summary, Checks: gate.Results, Gate: &gate}}
		a.jr.note("stopped: %s", stopped.Reason)
		return gate, &toolResult{failed: true, text: text, final: &stopped}
	}
	return gate, &toolResult{failed: true, text: text}
}

// evidenceStage looks for what shows that cand, which passed the checks (gate), fixes the
// bug; without it the change goes back for a test or the attempt ends unverified.
func (a *attempt) evidenceStage(ctx context.Context, c *checkRun, cand candidate, gate Gate) (*Evidence, *toolResult) {
	ev, runs, err := evidence(ctx, c, cand, gate, verificationChecks(a.tri, a.job.Checks))
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx) // the evidence runs were cut short: they showed nothing
	}
	if err != nil {
		failed := a.stop(ctx, Outcome{Artifacts: Artifacts{Summary: cand.summary, Checks: gate.Results, Gate: &gate}}, err)
		return nil, &toolResult{final: &failed}
	}
	a.verified = runs
	if !ev.Found() {
		res := a.noEvidence(cand, gate, ev)
		return ev, &res
	}
	a.lastRefusal = nil
	a.jr.note("submit %d: checks passed; evidence: %s", a.submits, clip(strings.Join(strings.Fields(ev.Text()), " "), 300))
	return ev, nil
}

// reviewStage has the checker's reviewers read cand; their findings go on out.
func (a *attempt) reviewStage(ctx context.Context, cand candidate, out *Outcome) *toolResult {
	rev, err := a.board.review(ctx, cand)
	if err != nil {
		// A review that cannot run is not the fix's fault, but the fix may not ship unreviewed.
		failed := a.stop(ctx, *out, fmt.Errorf("review: %w", err))
		return &toolResult{final: &failed}
	}
	out.Findings = rev.findings
	if rev.feedback != "" {
		res := a.rejected(rev, *out)
		return &res
	}
	return nil
}

// judgeStage has the judge decide whether cand meets the acceptance criteria, given what
// showed it works; its verdict goes on out.
func (a *attempt) judgeStage(ctx context.Context, c *checkRun, cand candidate, out *Outcome) *toolResult {
	criteria := func() string {
		text, runs := criteriaEvidence(ctx, c, a.verified, verificationChecks(a.tri, a.job.Checks), cand.diff)
		a.verified = runs
		return criteriaText(a.tri) + text + evidenceText(out.Evidence)
	}
	rev, err := a.board.judge(ctx, cand, criteria)
	if err != nil {
		// As in the review stage; the report shows the outcome before the review.
		before := *out
		before.Findings = nil
		failed := a.stop(ctx, before, fmt.Errorf("review: %w", err))
		return &toolResult{final: &failed}
	}
	out.Verdict = rev.verdict
	if rev.feedback != "" {
		res := a.rejected(rev, *out)
		return &res
	}
	return nil
}

// rejected answers a change the checker or the judge rejected: back to the maker while a
// review round is left, else the attempt ends.
func (a *attempt) rejected(rev reviewResult, out Outcome) toolResult {
	who, prefix := "checker", refusedByChecker
	if rev.by == model.RoleJudge {
		who, prefix = "judge", refusedByJudge
	}
	a.jr.note("submit %d: checks passed, %s rejected (review round %d of %d): %s", a.submits, who, a.board.rounds, MaxReviewRounds, clip(rev.feedback, 300))
	if rev.final {
		stopped := out
		stopped.Status = StatusFailed
		stopped.Reason = fmt.Sprintf("the %s still rejects the fix after %d review rounds: %s", who, MaxReviewRounds, clip(strings.Join(strings.Fields(rev.feedback), " "), 400))
		a.jr.note("stopped: %s", stopped.Reason)
		return toolResult{failed: true, text: prefix + rev.feedback, final: &stopped}
	}
	return toolResult{failed: true, text: prefix + rev.feedback, review: &out}
}

// evidenceText is the evidence stage's finding, for the judge.
func evidenceText(ev *Evidence) string {
	if ev == nil || !ev.Found() {
		return ""
	}
	return "\n# Evidence that the fix works\n\n" + ev.Text()
}

// Who refused a submit, in the words the maker reads. Each names the gate that spoke and
// what already passed, so a model never chases a test failure that a reviewer's remark was.
const (
	refusedByChecks  = "Not accepted: the checks failed (tests, lint and type checks, compared with the base commit). The change was not reviewed.\n\n"
	refusedByChecker = "Not accepted: the checks passed, but the code reviewer (checker) found blocking defects in your change.\n\n"
	refusedByJudge   = "Not accepted: the checks passed and the code reviewer found no blocker, but the judge found acceptance criteria not met.\n\n"
	refusedNoProof   = "Not accepted: the checks pass, but nothing shows that your change fixes the reported bug. The change was not reviewed.\n\n"
)

// sameRefusalStop opens the reason of an attempt stopped because a submit was refused with
// the same failures as the one before, with no file changed in between: a loop, which more
// submits would only pay for.
const sameRefusalStop = "the same checks failed twice with no change"

// checkedChange is a change the checks refused: its diff and target tests, and the gate's
// answer. What the checks run on is exactly the maker's files (the daemon's fixGuard cleans
// the worktree to them before each check), so the same diff and targets are the same runs;
// a gate that timed out, ran out of disk or aborted is not kept (the machine may differ
// next time), nor one that passed (the stages after it decide), nor one made without flake
// re-runs (Runner.FlakeReruns < 0): then a test that failed once was never run again, and
// the same change checked again is the only second chance a flaky test gets.
type checkedChange struct {
	diff    string
	targets []string
	text    string
	gate    Gate
	at      time.Time
}

// refusal is a refused submit: what refused it, the keys of what failed, and the diff.
type refusal struct {
	kind string
	keys []string
	diff string
}

// repeated records a refused submit and reports whether it repeats the previous one: the
// same gate refused it for the same failures, and no file changed since.
func (a *attempt) repeated(kind string, keys []string, diff string) bool {
	r := &refusal{kind: kind, keys: slices.Clone(keys), diff: diff}
	prev := a.lastRefusal
	a.lastRefusal = r
	return prev != nil && prev.kind == r.kind && slices.Equal(prev.keys, r.keys) && prev.diff == r.diff
}

// noEvidence answers a submit that passed the checks with nothing showing that it fixes the
// bug: sent back for a regression test while the repository has tests and refusals are left,
// else the attempt ends unverified, its patch kept for a human and never shipped.
func (a *attempt) noEvidence(cand candidate, gate Gate, ev *Evidence) toolResult {
	why := "no test fails at the base commit and passes with the change"
	if a.tri != nil && len(a.tri.Verifications) > 0 {
		why += ", and no verification command fails at the base commit and passes with it"
	}
	var b strings.Builder
	if len(ev.PassAtBase) > 0 {
		fmt.Fprintf(&b, "Your test(s) %s pass at the base commit too: ticketd ran them against the code as it was before your change, and they did not fail, so they do not reproduce the bug. Change them so that they fail without your fix.\n",
			strings.Join(clipList(ev.PassAtBase, 10), ", "))
		why += fmt.Sprintf(" (the change's tests %s pass at the base commit too)", strings.Join(clipList(ev.PassAtBase, 5), ", "))
	} else if len(ev.NotRun) == 0 {
		b.WriteString("No test fails at the base commit and passes with your change.\n")
	}
	if len(ev.NotRun) > 0 {
		fmt.Fprintf(&b, "Your test(s) %s did not run: the checks skipped them with your change, so they show nothing either way. A skipped test is not a passing one.\n",
			strings.Join(clipList(ev.NotRun, 10), ", "))
		why += fmt.Sprintf(" (the change's tests %s did not run: skipped)", strings.Join(clipList(ev.NotRun, 5), ", "))
		if ev.AsyncNotRun {
			fmt.Fprintf(&b, "%s.\n", asyncSkipAdvice)
			why += "; " + asyncSkipAdvice
		}
	}
	if len(ev.Uncollected) > 0 {
		fmt.Fprintf(&b, "Your test file(s) did not run: pytest could not collect them with your change, so none of their tests ran, the ones you added included: %s. A file that does not import tests nothing. "+
			"When it fails the same way at the base commit, the cause is the checks' environment, not your change: a module the checks' interpreter lacks is for the operator to install; if a test file that imports can hold a regression test for the fix, put it there.\n",
			strings.Join(clipList(ev.Uncollected, 5), "; "))
		why += fmt.Sprintf(" (the change's test files could not be collected: %s)", strings.Join(clipList(ev.Uncollected, 3), "; "))
	}
	if len(ev.NewTests) == 0 && len(ev.NotRun) == 0 && len(ev.Uncollected) == 0 && len(ev.TestChanges) > 0 {
		// Upstream fixes often add an assertion to an existing test; here that never runs
		// against the fix, and a maker told only "no test fails" would resubmit the same.
		fmt.Fprintf(&b, "Your edits to %s do not count: ticketd runs each test the base commit already has as the base commit has it, so an assertion added to an existing test never runs against your fix. Put the regression test in a new test function (or method) whose name the base commit lacks.\n",
			strings.Join(clipList(ev.TestChanges, 5), ", "))
	}
	for _, n := range ev.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	b.WriteString("Add a regression test beside the existing tests, in their style, that fails without your fix and passes with it (ticketd runs it against the base commit to check), name its pytest node id in submit's \"tests\", and submit again.")
	keys := append(append(append([]string{"no evidence"}, ev.PassAtBase...), ev.NotRun...), ev.Uncollected...)
	repeat := a.repeated("evidence", keys, cand.diff)
	if hasTestSuite(a.job.Baseline) && a.evidenceRefusals < MaxEvidenceRefusals && !repeat {
		a.evidenceRefusals++
		a.jr.note("submit %d: checks passed, but nothing shows the fix works (%s); asked for a regression test (%d of %d)", a.submits, why, a.evidenceRefusals, MaxEvidenceRefusals)
		return toolResult{failed: true, text: refusedNoProof + b.String()}
	}
	switch {
	case repeat:
		why += "; the same change was submitted again without one"
	case a.evidenceRefusals > 0:
		why += fmt.Sprintf("; asked %d time(s) for a regression test", a.evidenceRefusals)
	case !hasTestSuite(a.job.Baseline):
		why += "; the repository has no test suite to add one to"
	}
	out := Outcome{Conclusion: Conclusion{Status: StatusUnverified, Reason: "unverified, patch attached: the checks pass, but " + why}, Artifacts: Artifacts{Summary: cand.summary, Checks: gate.Results, Gate: &gate, Evidence: ev}}
	if prior := a.job.Ticket.Unverified; prior != nil && samePatch(prior.Patch, cand.diff) {
		out.RepeatsUnverified = prior.Attempt
		out.Reason += fmt.Sprintf("; the same patch as attempt %d, unverified again: a further attempt would only repeat it", prior.Attempt)
	}
	a.jr.note("stopped: %s", out.Reason)
	return toolResult{failed: true, text: refusedNoProof + b.String(), final: &out}
}

// MaxReviewDiff is the longest diff the checker's reviewers and the judge are given: about
// 15,000 tokens, beside the repository map, the issue and the evidence.
const MaxReviewDiff = 60_000

// unreviewable refuses a submit whose diff is longer than the reviewers read, where a
// checker or a judge reviews: cut to MaxReviewDiff, the part past the cut would ship unread
// (a 70 KB generated table first in path order, then `if "pytest" in sys.argv[0]` in the
// code). The maker is told once and may make the change smaller; a change that truly needs
// that much (a large data file) ends for a human, its patch and branch kept (ticketctl
// accept publishes it). nil when the diff fits, or when no model reviews.
func (a *attempt) unreviewable(summary, diff string) *toolResult {
	if len(diff) <= MaxReviewDiff || !a.board.ask.roles[model.RoleChecker] && !a.board.ask.roles[model.RoleJudge] {
		return nil
	}
	files := diffSizes(diff)
	what := fmt.Sprintf("change's diff is %d bytes, longer than the %d the checker and the judge read, so part of it would ship unreviewed (largest: %s)",
		len(diff), MaxReviewDiff, strings.Join(clipList(files, 5), ", "))
	why := "the " + what
	text := refusedTooLarge + "The " + what + ".\n\nKeep the change to what the fix needs: no reformatting, no generated or vendored files, no large data. If the fix truly needs it, say why in the submit summary and submit it unchanged: the attempt then ends, and a human reviews and may accept it."
	if a.largeRefusals == 0 {
		a.largeRefusals++
		a.jr.note("submit %d: refused before the checks: %s", a.submits, why)
		return &toolResult{failed: true, text: text}
	}
	out := Outcome{Conclusion: Conclusion{Status: StatusTestsChanged, Reason: "too large to review, kept for a human (ticketctl accept publishes it): " + why}, Artifacts: Artifacts{Summary: summary}}
	a.jr.note("stopped: %s", out.Reason)
	return &toolResult{failed: true, text: text, final: &out}
}

// refusedTooLarge opens the answer to a submit too large to review.
const refusedTooLarge = "Not accepted: your change is too large for the reviewers to read whole. Nothing was run.\n\n"

// diffSizes lists "path (N bytes)" for each file of diff, largest first.
func diffSizes(diff string) []string {
	fds := splitDiff(diff)
	slices.SortStableFunc(fds, func(x, y fileDiff) int { return len(y.body) - len(x.body) })
	out := make([]string, 0, len(fds))
	for _, fd := range fds {
		name := fd.path
		if name == "" { // a binary file's diff has no ---/+++ lines
			first, _, _ := strings.Cut(fd.body, "\n")
			name = strings.TrimPrefix(first, "diff --git ")
		}
		out = append(out, fmt.Sprintf("%s (%d bytes)", name, len(fd.body)))
	}
	return out
}
