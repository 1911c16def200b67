package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// NewTicket is what a source hands to Enqueue.
type NewTicket struct {
	Source, ExternalID, Repo, Title, Body string
	Labels                                []string
	Priority                              int // higher first
	MaxAttempts                           int // 0 = DefaultMaxAttempts
}

// Ticket is one row of the queue as stored.
type Ticket struct {
	ID              int64     `json:"id"`
	Source          string    `json:"source"`
	ExternalID      string    `json:"external_id"`
	Repo            string    `json:"repo"`
	Title           string    `json:"title"`
	Body            string    `json:"body"`
	Labels          []string  `json:"labels"`
	Priority        int       `json:"priority"`
	State           State     `json:"state"`
	Attempts        int       `json:"attempts"`
	MaxAttempts     int       `json:"max_attempts"`
	RunAfter        time.Time `json:"run_after"`
	LeaseOwner      string    `json:"lease_owner"`               // current or last holder
	LeaseExpiresAt  time.Time `json:"lease_expires_at,omitzero"` // zero when not leased
	FenceToken      int64     `json:"fence_token"`
	CancelRequested bool      `json:"cancel_requested"`
	Branch          string    `json:"branch"`
	ResultDir       string    `json:"result_dir"`
	Summary         string    `json:"summary"`
	Reason          string    `json:"reason"` // last failure / escalation / cancel reason
	Triage          string    `json:"triage,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	FinishedAt      time.Time `json:"finished_at,omitzero"` // zero unless terminal
	// RescuedFrom names the worker whose expired lease the latest claim took over.
	RescuedFrom string `json:"rescued_from,omitempty"`
	// PrunedAt is when GC emptied the bulky columns (body, triage, tool call payloads).
	PrunedAt time.Time `json:"pruned_at,omitzero"`
	// Rescues counts attempts lost to an expired lease (crash, kill, reboot): they are not in
	// Attempts. Only those blamed on the ticket (Crashes) can escalate it.
	Rescues int `json:"rescues"`
	// LeaseNode is the machine (Options.Node) of the current or last lease holder.
	LeaseNode string `json:"lease_node,omitempty"`
	// Question is the maker's open question while the ticket is needs_info ("" otherwise);
	// Questions counts the questions asked on the ticket, answered or not.
	Question  string `json:"question,omitempty"`
	Questions int    `json:"questions"`
	// AttemptsBefore is how many attempts the ticket had when it was last requeued: attempt
	// numbers go on after a requeue (Attempts never restarts), and the requeue gives a fresh
	// budget of MaxAttempts from there (see AttemptLimit).
	AttemptsBefore int `json:"attempts_before"`
	// Crashes counts the lost leases blamed on the ticket: its attempt was the only one in
	// flight when the process died (SettleDead). Reaching the store's MaxRescues escalates it.
	Crashes int `json:"crashes"`
	// BudgetExtra is the dollars operators added to each of its attempts (AddBudget), on top
	// of the configured per-attempt budget.
	BudgetExtra float64 `json:"budget_extra_usd,omitempty"`
}

// AttemptLimit is the attempt number whose failure escalates the ticket: MaxAttempts after
// the latest requeue.
func (t Ticket) AttemptLimit() int { return t.AttemptsBefore + t.MaxAttempts }

type scanner interface{ Scan(dest ...any) error }

func scanTicket(sc scanner, extra ...any) (Ticket, error) {
	var (
		t                                    Ticket
		labels                               string
		runAfter, leaseExp, created, updated sql.NullInt64
		finished, pruned                     sql.NullInt64
		cancel                               int
	)
	dest := []any{&t.ID, &t.Source, &t.ExternalID, &t.Repo, &t.Title, &t.Body, &labels,
		&t.Priority, &t.State, &t.Attempts, &t.MaxAttempts, &runAfter, &t.LeaseOwner,
		&leaseExp, &t.FenceToken, &cancel, &t.Branch, &t.ResultDir, &t.Summary, &t.Reason,
		&t.Triage, &created, &updated, &finished, &t.RescuedFrom, &pruned, &t.Rescues, &t.LeaseNode, &t.Question, &t.Questions,
		&t.AttemptsBefore, &t.Crashes, &t.BudgetExtra}
	if err := sc.Scan(append(dest, extra...)...); err != nil {
		return Ticket{}, err
	}
	if labels != "" && labels != "[]" { // most tickets have none: skip the decoder
		if err := json.Unmarshal([]byte(labels), &t.Labels); err != nil {
			return Ticket{}, fmt.Errorf("ticket %d: decode labels %q: %w", t.ID, labels, err)
		}
	}
	if t.Labels == nil {
		t.Labels = []string{}
	}
	t.RunAfter, t.LeaseExpiresAt = fromMS(runAfter), fromMS(leaseExp)
	t.CreatedAt, t.UpdatedAt, t.FinishedAt = fromMS(created), fromMS(updated), fromMS(finished)
	t.PrunedAt = fromMS(pruned)
	t.CancelRequested = cancel != 0
	return t, nil
}

// Enqueue adds a ticket unless one with the same (Source, ExternalID) exists, in which case
// it returns that ticket's id and created=false and changes nothing. Control characters are
// removed from the title and body (CleanText), with a note on the ticket saying so.
func (s *Store) Enqueue(ctx context.Context, nt NewTicket) (id int64, created bool, err error) {
	if nt.Source == "" || nt.ExternalID == "" {
		return 0, false, fmt.Errorf("enqueue %q: source and external id are required (got source=%q external_id=%q)", nt.Title, nt.Source, nt.ExternalID)
	}
	if nt.MaxAttempts < 0 {
		return 0, false, fmt.Errorf("enqueue %s/%s: max attempts %d: want >= 0 (0 = default %d)", nt.Source, nt.ExternalID, nt.MaxAttempts, DefaultMaxAttempts)
	}
	labels := nt.Labels
	if labels == nil {
		labels = []string{}
	}
	lj, err := json.Marshal(labels)
	if err != nil {
		return 0, false, fmt.Errorf("enqueue %s/%s: encode labels: %w", nt.Source, nt.ExternalID, err)
	}
	maxAttempts := nt.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = DefaultMaxAttempts
	}
	// Control characters never enter the queue: the warning goes on the ticket.
	warning := cleanNote(nt.Title, nt.Body)
	title, body := CleanText(nt.Title), CleanText(nt.Body)
	err = s.write(ctx, "enqueue", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		id, created = 0, false
		newID, err := tx.Insert(ctx, s.q.Enqueue, storedriver.EnqueueParams{Source: nt.Source, ExternalID: nt.ExternalID,
			Repo: nt.Repo, Title: title, Body: body, Labels: string(lj), Priority: nt.Priority, MaxAttempts: maxAttempts,
			RunAfter: now, CreatedAt: now, UpdatedAt: now}.Args()...)
		if errors.Is(err, sql.ErrNoRows) { // already known: (source, external_id) names one ticket
			return tx.QueryRow(ctx, s.q.TicketBySource, nt.Source, nt.ExternalID).Scan(&id)
		}
		if err != nil {
			return err
		}
		id, created = newID, true
		if err := s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventEnqueued, To: StateQueued, Actor: nt.Source}); err != nil {
			return err
		}
		if warning == "" {
			return nil
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventNote, From: StateQueued, To: StateQueued, Actor: "ticketd", Reason: warning, Reserve: true})
	})
	if err != nil {
		return 0, false, fmt.Errorf("enqueue %s/%s: %w", nt.Source, nt.ExternalID, err)
	}
	if created {
		s.eng.Notify()
	}
	return id, created, nil
}

// Get returns one ticket, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (Ticket, error) {
	t, err := scanTicket(s.rd.QueryRow(ctx, s.q.GetTicket, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Ticket{}, fmt.Errorf("get ticket %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("get ticket %d: %w", id, err)
	}
	return t, nil
}

// Filter narrows List; zero fields do not filter.
type Filter struct {
	States []State
	Repo   string
	Since  time.Time // created_at >= Since
	// BeforeID keeps tickets with a smaller id: the next page of a newest-first list is
	// the one before the last id shown (a keyset page, as cheap deep in the history as at
	// its start).
	BeforeID int64
	Limit    int
}

// Summary is a ticket with its model spend, as ticketctl list shows it.
type Summary struct {
	Ticket
	ModelCalls       int     `json:"model_calls"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	CostUnknown      bool    `json:"cost_unknown"` // some call had unknown cost, or an unknown completion
	// CostEstimated is true when some call's usage was estimated (the server sent none, or
	// the request was abandoned on a time-out): CostUSD is then partly an estimate.
	CostEstimated bool          `json:"cost_estimated"`
	Duration      time.Duration `json:"-"` // created->finished, or so far
}

// MarshalJSON writes Duration as duration_s (seconds).
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	return json.Marshal(struct {
		plain
		DurationS float64 `json:"duration_s"`
	}{plain(s), s.Duration.Seconds()})
}

// List returns tickets matching f, newest first, with their model call totals. Its cost
// grows with the tickets it returns, not with the history: a state filter inside
// {queued, running} walks the open-tickets index, and the totals aggregate only the
// listed tickets' calls through model_calls_ticket.
func (s *Store) List(ctx context.Context, f Filter) ([]Summary, error) {
	spec := storedriver.ListSpec{Repo: f.Repo, BeforeID: f.BeforeID, Limit: f.Limit}
	if !f.Since.IsZero() {
		spec.Since = f.Since.UnixMilli()
	}
	for _, st := range f.States {
		if !st.Valid() {
			return nil, fmt.Errorf("list tickets: unknown state %q: want one of queued, running, parked, needs_info, needs_budget, duplicate, done, escalated, cancelled", st)
		}
		spec.States = append(spec.States, string(st))
	}
	q, args := s.q.List(spec)
	rows, err := s.rd.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list tickets: %w", err)
	}
	defer rows.Close()
	now := s.now()
	out := []Summary{}
	for rows.Next() {
		var (
			sm                 Summary
			unknown, estimated int
		)
		t, err := scanTicket(rows, &sm.ModelCalls, &sm.PromptTokens, &sm.CachedTokens, &sm.CompletionTokens, &sm.CostUSD, &unknown, &estimated)
		if err != nil {
			return nil, fmt.Errorf("list tickets: %w", err)
		}
		sm.Ticket, sm.CostUnknown, sm.CostEstimated = t, unknown != 0, estimated != 0
		end := t.FinishedAt
		if end.IsZero() {
			end = now
		}
		sm.Duration = max(end.Sub(t.CreatedAt), 0)
		out = append(out, sm)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tickets: %w", err)
	}
	return out, nil
}
