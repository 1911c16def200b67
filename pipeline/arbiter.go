package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// Arbitration is the arbiter's decision on two findings of different reviewers about the
// same lines that say different things.
type Arbitration struct {
	Round    int     `json:"round"`
	A        Finding `json:"a"`
	B        Finding `json:"b"`
	Decision string  `json:"decision"` // "A", "B" or "both"
	Reason   string  `json:"reason"`
}

// reviewerRun is one reviewer's answer in one round.
type reviewerRun struct {
	rev     Reviewer
	why     string // why it applies ("" for every change)
	kept    []Finding
	dropped int
	err     error
}

// reviewersFor picks the round's reviewers: in round 1 correctness and every opt-in reviewer
// whose paths or touches the change meets; in round 2 correctness and the opt-in reviewers
// that have a round-1 finding to confirm or withdraw (a round-2 reviewer may add nothing, so
// one with nothing to confirm would be paid for an empty answer).
func (b *reviewBoard) reviewersFor(round int, diff string) []reviewerRun {
	revs := b.reviewers
	if len(revs) == 0 {
		revs = DefaultReviewers()
	}
	changed := changedFiles(diff)
	var out []reviewerRun
	for _, rv := range revs {
		switch {
		case rv.Angle == AngleCorrectness:
		case round > 1:
			if !hasReviewer(b.last, rv.Angle) {
				continue
			}
		default:
			ok, why := rv.Applies(changed, diff)
			if !ok {
				continue
			}
			out = append(out, reviewerRun{rev: rv, why: why})
			continue
		}
		out = append(out, reviewerRun{rev: rv})
	}
	// Correctness runs first: its request is the shared prefix the others extend.
	for i, r := range out {
		if r.rev.Angle == AngleCorrectness && i > 0 {
			out[0], out[i] = out[i], out[0]
		}
	}
	return out
}

func hasReviewer(fs []Finding, angle string) bool {
	for _, f := range fs {
		if reviewerOf(f) == angle {
			return true
		}
	}
	return false
}

// reviewerOf is a finding's reviewer; an untagged finding is correctness's.
func reviewerOf(f Finding) string {
	if f.Reviewer == "" {
		return AngleCorrectness
	}
	return f.Reviewer
}

// runReviewers runs the round's reviewers on the diff and returns their verified findings,
// contradictions settled by the arbiter, and how many findings it dropped as invalid. The
// first reviewer (correctness) goes alone, so its request writes the shared prefix (the
// checker's instructions, the repository, the ticket and the diff) to the provider's cache;
// the others then run in parallel on that prefix, each adding only its angle.
func (b *reviewBoard) runReviewers(ctx context.Context, round int, diff, material string) ([]Finding, int, error) {
	runs := b.reviewersFor(round, diff)
	base := b.ask.opening(model.RoleChecker, nil)
	base[1].Content += material
	runs[0] = b.reviewOnce(ctx, round, runs[0], base, diff)
	if runs[0].err == nil && len(runs) > 1 {
		var wg sync.WaitGroup
		for i := 1; i < len(runs); i++ {
			wg.Go(func() { runs[i] = b.reviewOnce(ctx, round, runs[i], base, diff) })
		}
		wg.Wait()
	}
	var (
		kept    []Finding
		dropped int
		errs    []error
	)
	for _, r := range runs {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if r.why != "" {
			b.jr.note("review round %d: %s reviewer ran (%s): %d finding(s)", round, r.rev.Angle, r.why, len(r.kept))
		}
		if r.dropped > 0 {
			b.jr.note("review round %d: %d %s finding(s) dropped (evidence not in the diff or changed files, bad schema, or new in round 2)", round, r.dropped, r.rev.Angle)
		}
		kept = append(kept, r.kept...)
		dropped += r.dropped
		if b.rec != nil {
			if err := b.rec.RecordReview(context.WithoutCancel(ctx), store.Review{TicketID: b.ask.job.Ticket.ID,
				Attempt: b.ask.job.Ticket.Attempt, Round: round, Kept: len(r.kept), Dropped: r.dropped, At: b.ask.now(),
				Reviewer: r.rev.Angle}); err != nil {
				b.log.Warn("record review round", "round", round, "reviewer", r.rev.Angle, "err", err)
			}
		}
	}
	b.dropped += dropped
	if err := errors.Join(errs...); err != nil {
		return nil, dropped, err
	}
	if round == 1 {
		var err error
		if kept, err = b.arbitrate(ctx, round, material, kept); err != nil {
			return nil, dropped, err
		}
	}
	return kept, dropped, nil
}

// reviewOnce asks one reviewer for its findings and verifies them.
func (b *reviewBoard) reviewOnce(ctx context.Context, round int, r reviewerRun, base []openai.ChatCompletionMessage, diff string) reviewerRun {
	msgs := append([]openai.ChatCompletionMessage(nil), base...)
	if text := angleInstructions[r.rev.Angle]; text != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text})
	}
	var prev []Finding
	for _, f := range b.last {
		if reviewerOf(f) == r.rev.Angle {
			f.Reviewer, f.Arbiter = "", ""
			prev = append(prev, f)
		}
	}
	if round > 1 {
		raw, _ := json.Marshal(prev)
		if prev == nil {
			raw = []byte("[]")
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf(
			"# Review round %d of %d\n\nYour findings on the previous version of the fix were:\n%s\n\nThe diff above is the maker's new version. For each of those findings, repeat it unchanged if it still holds, or leave it out to withdraw it. Do not report new findings in this round: they are discarded.\n",
			round, MaxReviewRounds, raw)})
	}
	var ans struct {
		Findings *[]Finding `json:"findings"`
	}
	if err := b.ask.askJSON(ctx, model.RoleChecker, msgs, &ans, func() error {
		if ans.Findings == nil {
			// An answer in another shape ({"issues": [...]}, {"result": "..."}) is not "no
			// findings": read as one, it would pass a change nobody reviewed.
			return errors.New(`the answer has no "findings" list; answer {"findings": [...]}, or {"findings": []} when there is none`)
		}
		return nil
	}); err != nil {
		r.err = err
		return r
	}
	kept, dropped := verifyFindings(b.dir, *ans.Findings, diff)
	for i := range kept {
		kept[i].Reviewer, kept[i].Arbiter = r.rev.Angle, ""
	}
	if round > 1 {
		kept, dropped = confirmOnly(kept, prev, dropped)
		// A confirmed finding keeps the arbiter's mark of round 1.
		for i, f := range kept {
			for _, p := range b.last {
				if reviewerOf(p) == r.rev.Angle && p.File == f.File && p.Arbiter != "" &&
					(norm(p.Finding) == norm(f.Finding) || norm(stripDiffMarkers(p.Evidence)) == norm(stripDiffMarkers(f.Evidence))) {
					kept[i].Arbiter = p.Arbiter
					break
				}
			}
		}
	}
	r.kept, r.dropped = kept, dropped
	return r
}

// conflictPairs pairs findings of different reviewers about the same lines of the same file
// (lines at most two apart, or one's evidence inside the other's): those may say different
// things, which the arbiter decides. Each finding is in at most one pair.
func conflictPairs(fs []Finding) [][2]int {
	used := make([]bool, len(fs))
	var pairs [][2]int
	for i := range fs {
		for j := i + 1; j < len(fs) && !used[i]; j++ {
			if used[j] || reviewerOf(fs[i]) == reviewerOf(fs[j]) || fs[i].File != fs[j].File {
				continue
			}
			near := fs[i].Line > 0 && fs[j].Line > 0 && abs(fs[i].Line-fs[j].Line) <= 2
			ei, ej := norm(stripDiffMarkers(fs[i].Evidence)), norm(stripDiffMarkers(fs[j].Evidence))
			if near || ei != "" && ej != "" && (strings.Contains(ei, ej) || strings.Contains(ej, ei)) {
				pairs = append(pairs, [2]int{i, j})
				used[i], used[j] = true, true
			}
		}
	}
	return pairs
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// arbitrate sends the round's conflicting pairs to one arbiter call, which only decides: A,
// B, or both (kept, marked). An arbiter that cannot answer in the schema keeps both, marked;
// an endpoint that fails stops the review like any model fault.
func (b *reviewBoard) arbitrate(ctx context.Context, round int, material string, fs []Finding) ([]Finding, error) {
	pairs := conflictPairs(fs)
	if len(pairs) == 0 {
		return fs, nil
	}
	decisions := make([]Arbitration, len(pairs))
	for k, p := range pairs {
		decisions[k] = Arbitration{Round: round, A: fs[p[0]], B: fs[p[1]], Decision: "both"}
	}
	if !b.ask.roles[model.RoleJudge] {
		for k := range decisions {
			decisions[k].Reason = "no arbiter: the judge role, whose model the arbiter uses, is not configured"
		}
	} else if err := b.askArbiter(ctx, material, decisions); err != nil {
		if ctx.Err() != nil || errors.Is(err, model.ErrTransport) || errors.Is(err, errBudget) {
			return nil, err
		}
		b.jr.note("arbiter gave no usable answer, both findings of each pair kept: %v", clip(err.Error(), 200))
		for k := range decisions {
			decisions[k].Decision, decisions[k].Reason = "both", "the arbiter gave no usable answer"
		}
	}
	drop := make([]bool, len(fs))
	for k, p := range pairs {
		d := decisions[k]
		i, j := p[0], p[1]
		switch d.Decision {
		case "A":
			drop[j] = true
			fs[i].Arbiter = fmt.Sprintf("kept over the %s reviewer's finding at %s:%d: %s", reviewerOf(fs[j]), fs[j].File, fs[j].Line, d.Reason)
		case "B":
			drop[i] = true
			fs[j].Arbiter = fmt.Sprintf("kept over the %s reviewer's finding at %s:%d: %s", reviewerOf(fs[i]), fs[i].File, fs[i].Line, d.Reason)
		default:
			fs[i].Arbiter = fmt.Sprintf("contested by the %s reviewer's finding at %s:%d; both kept: %s", reviewerOf(fs[j]), fs[j].File, fs[j].Line, d.Reason)
			fs[j].Arbiter = fmt.Sprintf("contested by the %s reviewer's finding at %s:%d; both kept: %s", reviewerOf(fs[i]), fs[i].File, fs[i].Line, d.Reason)
		}
		b.jr.note("arbiter, review round %d: %s (%s) against %s (%s) at %s:%d: %s; %s", round,
			reviewerOf(fs[i]), fs[i].Severity, reviewerOf(fs[j]), fs[j].Severity, fs[i].File, fs[i].Line, decisionWords(d.Decision), clip(d.Reason, 200))
	}
	b.arbitrations = append(b.arbitrations, decisions...)
	var out []Finding
	for i, f := range fs {
		if !drop[i] {
			out = append(out, f)
		}
	}
	return out, nil
}

func decisionWords(d string) string {
	switch d {
	case "A":
		return "the first holds"
	case "B":
		return "the second holds"
	}
	return "both kept"
}

// askArbiter asks one arbiter call for every pair and writes its decisions into ds.
func (b *reviewBoard) askArbiter(ctx context.Context, material string, ds []Arbitration) error {
	type side struct {
		Reviewer string `json:"reviewer"`
		Finding
	}
	var pairs strings.Builder
	pairs.WriteString("\n# Findings that contradict each other\n")
	for k, d := range ds {
		strip := func(f Finding) side {
			r := reviewerOf(f)
			f.Reviewer, f.Arbiter = "", ""
			return side{Reviewer: r, Finding: f}
		}
		ja, _ := json.Marshal(strip(d.A))
		jb, _ := json.Marshal(strip(d.B))
		fmt.Fprintf(&pairs, "\nPair %d:\nA: %s\nB: %s\n", k+1, ja, jb)
	}
	msgs := b.ask.opening(model.RoleArbiter, nil)
	msgs[1].Content += criteriaText(b.tri) + material + pairs.String()
	var ans struct {
		Decisions []struct {
			Pair     int    `json:"pair"`
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		} `json:"decisions"`
	}
	return b.ask.askJSON(ctx, model.RoleArbiter, msgs, &ans, func() error {
		seen := map[int]bool{}
		for _, d := range ans.Decisions {
			dec := strings.ToUpper(strings.TrimSpace(d.Decision))
			if dec == "BOTH" {
				dec = "both"
			}
			if d.Pair < 1 || d.Pair > len(ds) || seen[d.Pair] {
				return fmt.Errorf(`"pair" %d: want each of 1..%d once`, d.Pair, len(ds))
			}
			if dec != "A" && dec != "B" && dec != "both" {
				return fmt.Errorf(`pair %d: "decision" must be "A", "B" or "both", got %q`, d.Pair, d.Decision)
			}
			seen[d.Pair] = true
			ds[d.Pair-1].Decision, ds[d.Pair-1].Reason = dec, clip(strings.TrimSpace(d.Reason), 300)
		}
		if len(seen) != len(ds) {
			return fmt.Errorf("decided %d of the %d pairs; decide every pair", len(seen), len(ds))
		}
		return nil
	})
}

// reviewerTag names a finding's reviewer in the maker's feedback, when it is not correctness.
func reviewerTag(f Finding) string {
	if r := reviewerOf(f); r != AngleCorrectness {
		return r + " reviewer, "
	}
	return ""
}

// contestedNote tells the maker that a blocker was contested and the arbiter kept both.
func contestedNote(f Finding) string {
	if strings.HasPrefix(f.Arbiter, "contested") {
		return " (" + f.Arbiter + ")"
	}
	return ""
}
