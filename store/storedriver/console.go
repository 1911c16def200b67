package storedriver

// ConsoleSQL is an engine's statements for what the console records (issue 34): dismissals
// of "Needs you" items, and each night's morning digest delivery.
type ConsoleSQL struct {
	// Dismiss: item, at, actor, note; replaces an earlier dismissal of item.
	// Undismiss: item. Dismissals: -> item, at, actor, note, by at.
	Dismiss, Undismiss, Dismissals string
	// RecordDigest: run_id, at, ok, error; replaces the night's row (a retry that worked).
	// Digests: -> run_id, at, ok, error, by run_id.
	RecordDigest, Digests string
}

// DismissParams are Dismiss's arguments.
type DismissParams struct {
	Item        string
	At          int64
	Actor, Note string
}

func (p DismissParams) Args() []any { return []any{p.Item, p.At, p.Actor, p.Note} }

// RecordDigestParams are RecordDigest's arguments.
type RecordDigestParams struct {
	RunID, At int64
	OK        int // 1: delivered
	Error     string
}

func (p RecordDigestParams) Args() []any { return []any{p.RunID, p.At, p.OK, p.Error} }
