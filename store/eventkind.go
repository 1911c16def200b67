package store

// EventKind names what an event in a ticket's history records. The kinds are stored as
// text in events.kind, so a constant's value never changes once released.
type EventKind string

// The event kinds, in the order a ticket's life usually meets them.
const (
	EventEnqueued        EventKind = "enqueued"         // intake created the ticket
	EventNote            EventKind = "note"             // a remark; the state is unchanged
	EventDuplicate       EventKind = "duplicate"        // intake linked it to an earlier ticket
	EventUnlinked        EventKind = "unlinked"         // an operator or the earlier ticket's end unlinked it
	EventClosedWith      EventKind = "closed_with"      // done with the fix of the ticket it duplicated
	EventClaimed         EventKind = "claimed"          // a worker leased it
	EventLeaseExpired    EventKind = "lease_expired"    // a lease ran out, the ticket was rescued or settled
	EventCrash           EventKind = "crash"            // its process died while it was the only attempt in flight
	EventCompleted       EventKind = "completed"        // fixed and validated
	EventRetry           EventKind = "retry"            // the attempt failed, it goes back to the queue
	EventReleased        EventKind = "released"         // given back without spending the attempt
	EventEscalated       EventKind = "escalated"        // a human must look
	EventParked          EventKind = "parked"           // out of the queue until a later night
	EventUnparked        EventKind = "unparked"         // back in the queue from parked
	EventNeedsInfo       EventKind = "needs_info"       // the maker asked a question
	EventAnswered        EventKind = "answered"         // a human answered it
	EventNeedsBudget     EventKind = "needs_budget"     // its dollars ran out with partial work kept
	EventBudgetAdded     EventKind = "budget_added"     // an operator added dollars
	EventCancelRequested EventKind = "cancel_requested" // cancellation asked while it runs
	EventCancelled       EventKind = "cancelled"        // cancelled
	EventRequeued        EventKind = "requeued"         // an operator gave it a fresh budget
	EventPublished       EventKind = "published"        // a pull request or comment went out
	EventRevised         EventKind = "revised"          // a round was asked of its done fix (review, note, CI)
	// EventSelectionMissed: the night's whole suite refused a fix that the tests its change
	// reaches had passed (the selection missed a failure); the ticket goes back to the queue.
	EventSelectionMissed EventKind = "selection_missed"
	// EventAccepted records an accepted escalation; its actor is the operator who accepted it.
	EventAccepted EventKind = "accepted"
)
