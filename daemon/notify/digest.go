package notify

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store"
)

// Digest is the morning message: Text for people (Slack's field), the rest for scripts.
type Digest struct {
	Text       string   `json:"text"`
	Night      Night    `json:"night"`
	NeedsHuman []Ticket `json:"needs_human"`
	// NeedsHumanTotal counts every ticket waiting for a human (NeedsHuman lists the first).
	NeedsHumanTotal int     `json:"needs_human_total"`
	PullRequests    []PR    `json:"pull_requests"`
	CostUSD         float64 `json:"cost_usd"`
}

// Night is the night's record as the digest reports it.
type Night struct {
	ID        int64     `json:"id"`
	Trigger   string    `json:"trigger"`
	Outcome   string    `json:"outcome"`
	Error     string    `json:"error,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	Worked    int       `json:"worked"`
	Done      int       `json:"done"`
	Escalated int       `json:"escalated"`
}

// Ticket is a ticket waiting for a human, and why.
type Ticket struct {
	ID     int64  `json:"id"`
	Title  string `json:"title"`
	Repo   string `json:"repo"`
	State  string `json:"state"`
	Reason string `json:"reason"`
}

// PR is a pull request the night opened.
type PR struct {
	TicketID int64  `json:"ticket_id"`
	Title    string `json:"title"`
	URL      string `json:"url"`
}

// Bounds of the digest: a message, not a report.
const (
	maxListed  = 10
	maxReason  = 160
	maxScanned = 500
)

// waiting are the states of tickets that wait for a human.
var waiting = []store.State{store.StateEscalated, store.StateNeedsInfo, store.StateNeedsBudget, store.StateParked}

// Build reads night runID's digest from the store: its record, the tickets that wait for a
// human (whatever night they came from), the pull requests opened by tickets that finished in
// it, and its cost.
func Build(ctx context.Context, st *store.Store, runID int64) (Digest, error) {
	runs, err := st.Runs(ctx, 0)
	if err != nil {
		return Digest{}, fmt.Errorf("digest of night %d: %w", runID, err)
	}
	var run *store.Run
	for i := range runs {
		if runs[i].ID == runID {
			run = &runs[i]
		}
	}
	if run == nil {
		return Digest{}, fmt.Errorf("digest of night %d: %w", runID, store.ErrRunNotFound)
	}
	d := Digest{Night: Night{ID: run.ID, Trigger: run.Trigger, Outcome: cmp.Or(string(run.Outcome), "unfinished"), Error: run.Error,
		StartedAt: run.StartedAt, EndedAt: run.EndedAt, Worked: run.Worked, Done: run.Done, Escalated: run.Escalated},
		CostUSD: run.CostUSD, NeedsHuman: []Ticket{}, PullRequests: []PR{}}
	human, err := st.List(ctx, store.Filter{States: waiting, Limit: maxScanned})
	if err != nil {
		return Digest{}, fmt.Errorf("digest of night %d: %w", runID, err)
	}
	d.NeedsHumanTotal = len(human)
	for _, t := range human[:min(len(human), maxListed)] {
		d.NeedsHuman = append(d.NeedsHuman, Ticket{ID: t.ID, Title: t.Title, Repo: t.Repo, State: string(t.State),
			Reason: clip(strings.Join(strings.Fields(cmp.Or(t.Question, t.Reason)), " "), maxReason)})
	}
	if d.PullRequests, err = pullRequests(ctx, st, *run); err != nil {
		return Digest{}, fmt.Errorf("digest of night %d: %w", runID, err)
	}
	d.Text = text(d)
	return d, nil
}

// pullRequests lists the pull requests of the tickets that finished in the night.
func pullRequests(ctx context.Context, st *store.Store, run store.Run) ([]PR, error) {
	finished, err := st.FinishedSince(ctx, run.StartedAt, maxScanned)
	if err != nil {
		return nil, err
	}
	out := []PR{}
	for _, t := range finished {
		if !run.EndedAt.IsZero() && t.FinishedAt.After(run.EndedAt) {
			continue
		}
		outs, err := st.Outputs(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		for _, o := range outs {
			if o.Kind == store.OutputPullRequest {
				out = append(out, PR{TicketID: t.ID, Title: t.Title, URL: o.URL})
			}
		}
	}
	return out, nil
}

// text is the digest for people: the outcome first, then what needs them, then the PRs.
func text(d Digest) string {
	var b strings.Builder
	n := d.Night
	fmt.Fprintf(&b, "ticketd night %d (%s): %s", n.ID, n.Trigger, n.Outcome)
	if n.Error != "" {
		fmt.Fprintf(&b, " — %s", esc(clip(n.Error, 300)))
	}
	fmt.Fprintf(&b, "\n%d worked · %d done · %d escalated · $%.2f", n.Worked, n.Done, n.Escalated, d.CostUSD)
	if d.NeedsHumanTotal == 0 {
		b.WriteString("\nNothing waits for a human.")
	} else {
		fmt.Fprintf(&b, "\nNeeds a human (%d):", d.NeedsHumanTotal)
		for _, t := range d.NeedsHuman {
			fmt.Fprintf(&b, "\n• #%d %s [%s]", t.ID, esc(clip(t.Title, 80)), t.State)
			if t.Reason != "" {
				fmt.Fprintf(&b, ": %s", esc(t.Reason))
			}
		}
		if d.NeedsHumanTotal > len(d.NeedsHuman) {
			fmt.Fprintf(&b, "\n… and %d more (ticketctl escalations, or the console)", d.NeedsHumanTotal-len(d.NeedsHuman))
		}
	}
	if len(d.PullRequests) > 0 {
		fmt.Fprintf(&b, "\nPull requests opened (%d):", len(d.PullRequests))
		for _, p := range d.PullRequests {
			fmt.Fprintf(&b, "\n• #%d %s %s", p.TicketID, esc(clip(p.Title, 80)), esc(p.URL))
		}
	}
	return b.String()
}

// slackEscape is the escaping Slack asks for in a message's text: an issue's title or a
// model's reason is untrusted, and "<!channel>" or "<https://evil|your bank>" in it must show
// as typed, not ping everyone or hide a link.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func esc(s string) string { return slackEscape.Replace(s) }
