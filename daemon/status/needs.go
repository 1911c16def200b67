package status

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store"
)

// needItem is one thing on the "Needs you" list: what it is about, why in words, what to do
// next, and the key an operator dismisses it by.
type needItem struct {
	// Key names the item for a dismissal: ticket/ID/STATE/ATTEMPTS (a ticket needing a human
	// again after more attempts is a new item), night/ID, digest/ID.
	Key   string
	Kind  string // escalated, needs_info, parked, needs_budget, night, digest ...
	Title string
	Link  string
	At    time.Time
	// Cause says why in words (the ending's reason, the failed tool call, the night's error);
	// Short is it clipped to the part that differs from the other items' causes.
	Cause, Short string
	Next         string // the suggested next step
	// Ticket is the ticket of a ticket's item (nil for a night's): the card's actions.
	Ticket *store.Summary
	// Failed is the latest failed tool call of the ticket's last attempt ("" when none).
	Failed string
	Tried  []triedLine
	// Night is the night's id of a night's item.
	Night int64
	// New marks an item from the latest night.
	New bool
	// CanAccept: an escalated ticket whose kept change the page can publish.
	CanAccept bool
}

// needSource lists the items of one kind; since is when the latest night started (zero
// before the first). A new kind of item (a red or stuck pull request) is one more source.
type needSource struct {
	name string // what failed to read, for the page's problems
	list func(ctx context.Context, s *Server, since time.Time) ([]needItem, error)
}

// needSources are the kinds of "Needs you", in the order the list shows them.
var needSources = []needSource{
	{"nights", nightNeeds},
	{"digests", digestNeeds},
	{"escalated tickets", stateNeeds(store.StateEscalated)},
	{"questions", stateNeeds(store.StateNeedsInfo)},
	{"tickets out of budget", stateNeeds(store.StateNeedsBudget)},
	{"parked tickets", stateNeeds(store.StateParked)},
}

// Bounds of what "Needs you" reads.
const (
	needsNights  = 30  // the latest nights looked at for failed or partial ones
	needsTickets = 200 // tickets of one state
	needsClip    = 160 // characters of a cause shown before "more"
	// needsDetailed is how many items are read in detail (what was tried, the failed tool
	// call: two queries each); the rest show their cause and link their page, so a long list
	// costs the refreshing page a bounded number of queries.
	needsDetailed = 40
)

// needs collects every source's items, drops the dismissed ones (counted), and clips the
// causes to the part that differs between items.
func (s *Server) needs(ctx context.Context, c *common, since time.Time) (items []needItem, dismissed int) {
	gone, err := s.store.Dismissals(ctx)
	if err != nil {
		c.problem("dismissed items", err)
	}
	for _, src := range needSources {
		got, err := src.list(ctx, s, since)
		if err != nil {
			c.problem(src.name, err)
		}
		for _, it := range got {
			if _, ok := gone[it.Key]; ok {
				dismissed++
				continue
			}
			items = append(items, it)
		}
	}
	for i := range items[:min(len(items), needsDetailed)] {
		s.detail(ctx, &items[i])
	}
	causes := make([]string, len(items))
	for i, it := range items {
		causes[i] = it.Cause
	}
	for i, short := range clipDiffering(causes, needsClip) {
		items[i].Short = short
	}
	return items, dismissed
}

// nightNeeds lists the latest nights that did not end ok: failed, partial, stopped, or whose
// process died before it could say.
func nightNeeds(ctx context.Context, s *Server, since time.Time) ([]needItem, error) {
	runs, err := s.store.Runs(ctx, needsNights)
	if err != nil {
		return nil, err
	}
	var out []needItem
	for i, r := range runs {
		if r.Outcome == store.OutcomeOK || (i == 0 && r.EndedAt.IsZero()) {
			continue // ok, or running now
		}
		outcome := cmp.Or(string(r.Outcome), "unfinished")
		out = append(out, needItem{Key: fmt.Sprintf("night/%d", r.ID), Kind: "night", Night: r.ID,
			Title: fmt.Sprintf("Night %d (%s) %s", r.ID, r.Trigger, outcome), Link: fmt.Sprintf("/nights/%d", r.ID),
			At: cmp.Or(r.EndedAt, r.StartedAt), Cause: cmp.Or(r.Error, "its process ended before it could say how the night went"),
			Next: nightNext(r.Outcome), New: !r.StartedAt.Before(since)})
	}
	return out, nil
}

// nightNext is what to do about a night that did not end ok.
func nightNext(o store.Outcome) string {
	switch o {
	case store.OutcomeFailed:
		return "Nothing was claimed: fix what the error names, then run ticketd once (or wait for the next night)."
	case store.OutcomePartial:
		return "Tickets were left unworked; they wait for the next night. Widen night.window or fix what held them if it repeats."
	case store.OutcomeStopped:
		return "The night stopped early: fix the endpoint, quota or budget it names; the queue resumes at the next night."
	}
	return "The daemon died during the night: check its log (journalctl) and the node; leases expire and the tickets are claimed again."
}

// digestNeeds lists the nights whose morning digest could not be delivered.
func digestNeeds(ctx context.Context, s *Server, since time.Time) ([]needItem, error) {
	digests, err := s.store.Digests(ctx)
	if err != nil {
		return nil, err
	}
	var out []needItem
	for _, d := range digests {
		if d.OK {
			continue
		}
		out = append(out, needItem{Key: fmt.Sprintf("digest/%d", d.RunID), Kind: "digest", Night: d.RunID,
			Title: fmt.Sprintf("Night %d's morning digest was not delivered", d.RunID), Link: fmt.Sprintf("/nights/%d", d.RunID),
			At: d.At, Cause: d.Error, Next: "Check notify.webhook.url and the receiving service; the night itself is unaffected.",
			New: !d.At.Before(since)})
	}
	slices.SortFunc(out, func(a, b needItem) int { return b.At.Compare(a.At) })
	return out, nil
}

// stateNeeds lists the tickets in st, whatever night they came from, each with its cause,
// what was tried and the next step.
func stateNeeds(st store.State) func(ctx context.Context, s *Server, since time.Time) ([]needItem, error) {
	return func(ctx context.Context, s *Server, since time.Time) ([]needItem, error) {
		tickets, err := s.store.List(ctx, store.Filter{States: []store.State{st}, Limit: needsTickets})
		if err != nil {
			return nil, err
		}
		out := make([]needItem, 0, len(tickets))
		for i := range tickets {
			t := &tickets[i]
			it := needItem{Key: fmt.Sprintf("ticket/%d/%s/%d", t.ID, t.State, t.Attempts), Kind: string(st), Ticket: t,
				Title: fmt.Sprintf("#%d %s", t.ID, t.Title), Link: fmt.Sprintf("/tickets/%d", t.ID),
				At: cmp.Or(t.FinishedAt, t.UpdatedAt), Cause: cmp.Or(t.Reason, t.Question), Next: ticketNext(*t, s)}
			it.New = !since.IsZero() && !it.At.Before(since)
			it.CanAccept = s.canAccept(t.Ticket)
			if st == store.StateNeedsInfo {
				it.Cause = "The maker asks: " + t.Question
			}
			out = append(out, it)
		}
		return out, nil
	}
}

// detail adds to a ticket's item what each attempt ended with and its last failed tool call.
func (s *Server) detail(ctx context.Context, it *needItem) {
	if it.Ticket == nil {
		return
	}
	if events, err := s.store.Events(ctx, it.Ticket.ID); err == nil {
		it.Tried = tried(events)
	}
	if calls, err := s.store.ToolCalls(ctx, it.Ticket.ID); err == nil {
		it.Failed = lastFailedCall(calls, it.Ticket.Attempts)
	}
}

// lastFailedCall names the last tool call of attempt n that failed, with the tail of what it
// returned: often the one line that says why the attempt went nowhere.
func lastFailedCall(calls []store.ToolCall, n int) string {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.Attempt == n && !c.OK {
			return fmt.Sprintf("%s failed: %s", c.Tool, tail(c.Result, 300))
		}
	}
	return ""
}

// tail is the last n characters of s, whitespace collapsed, "…" marking the cut.
func tail(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return "…" + string(r[len(r)-n+1:])
}

// ticketNext is the suggested next step for a ticket that needs a human.
func ticketNext(t store.Summary, s *Server) string {
	switch t.State {
	case store.StateEscalated:
		if s.canAccept(t.Ticket) {
			return "Read the report and the kept change: accept it, requeue with a note for the maker, or cancel."
		}
		return "Read the report: requeue with a note that tells the maker what it missed, or cancel."
	case store.StateNeedsInfo:
		return "Answer the question: the ticket goes back in the queue with your answer."
	case store.StateNeedsBudget:
		return "Add dollars per attempt if the partial work looks worth finishing, or cancel."
	case store.StateParked:
		return "Nothing to do unless the endpoint keeps failing: it comes back at the next night (requeue to run it sooner)."
	}
	return "Open the ticket."
}

// dismiss serves POST /needs/dismiss: the item (by its key) leaves "Needs you", recorded
// in the store with who (the page) and when.
func (s *Server) dismiss(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, "/") {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	item := r.PostForm.Get("item")
	if err := s.store.Dismiss(ctx, item, actor, r.PostForm.Get("note")); err != nil {
		s.message(w, http.StatusBadRequest, "Not dismissed", err.Error(), "/")
		return
	}
	s.log.Info("item dismissed on the status page", "item", item, "remote", r.RemoteAddr)
	http.Redirect(w, r, "/#needs-you", http.StatusSeeOther)
}
