package storedriver

// DupSQL is an engine's statements for duplicates at intake (issue 35): a ticket that
// reports the same failure as an earlier one of its repository waits in the state
// duplicate, linked in duplicate_links, and is closed with that ticket when it ends done.
type DupSQL struct {
	// Link (transition): updated_at, reason, id; a queued ticket never attempted to
	// duplicate.
	Link string
	// InsertLink: ticket_id, of_id, reason, linked_at.
	InsertLink string
	// LinkOf: ticket_id -> of_id, reason, unlinked_at (NULL while linked).
	LinkOf string
	// LinkedTo: of_id -> ticket_id of its duplicates still linked, by id.
	LinkedTo string
	// Unlink (transition): run_after, updated_at, reason, id; duplicate to queued.
	// EndLink: unlinked_at, unlinked_by, ticket_id.
	Unlink, EndLink string
	// Close (transition): updated_at, finished_at, reason, branch, summary, id; duplicate to
	// done with the branch of the fix it was closed with.
	Close string
}
