package storedriver

// RoundSQL is an engine's statements for rounds (issue 34): more work asked of a done
// ticket's fix by a review on its pull request or an operator's note, on the same branch.
type RoundSQL struct {
	// Insert: InsertRoundParams; numbers the round on from the ticket's last.
	Insert string
	// List: ticket_id -> n, at, actor, source, note, threads, branch, attempts, outcome,
	// ended_at (NULL while open), comment_url, by n.
	List string
	// Answered: comment_url, ticket_id, n.
	Answered string
	// Watch: ticket_id -> review_cursor, ci_head, ci_state, ci_detail, ci_at (NULL never).
	Watch string
	// SetCursor: ticket_id, review_cursor; creates the row.
	SetCursor string
	// SetCI: SetCIParams; creates the row.
	SetCI string
	// CIStates: -> ticket_id, ci_head, ci_state, ci_detail, ci_at of done tickets' pull
	// requests whose checks are red or stuck (a ticket back in work is ticketd's), by
	// ticket_id.
	CIStates string
	// End: outcome, ended_at, ticket_id; ends the ticket's open round.
	End string
	// Escalate (transition): updated_at, finished_at, reason, id; a done ticket whose rounds
	// are spent to escalated.
	Escalate string
}

// InsertRoundParams are RoundSQL.Insert's arguments.
type InsertRoundParams struct {
	TicketID, At                         int64
	Actor, Source, Note, Threads, Branch string
	Attempts                             int
	Outcome                              string
	EndedAt                              any // int64, or nil for NULL (an open round)
}

func (p InsertRoundParams) Args() []any {
	return []any{p.TicketID, p.At, p.Actor, p.Source, p.Note, p.Threads, p.Branch, p.Attempts, p.Outcome, p.EndedAt}
}

// SetCIParams are RoundSQL.SetCI's arguments.
type SetCIParams struct {
	TicketID            int64
	Head, State, Detail string
	At                  int64
}

func (p SetCIParams) Args() []any { return []any{p.TicketID, p.Head, p.State, p.Detail, p.At} }
