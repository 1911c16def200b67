package storedriver

// OverlapSQL is an engine's statements for overlap-aware claiming (issue 35): the files a
// ticket is predicted to touch, and the queued tickets a claim passes over while other
// work is ready.
type OverlapSQL struct {
	// ClearPrediction: ticket_id; InsertPrediction: ticket_id, file, source (a repeat is
	// ignored).
	ClearPrediction, InsertPrediction string
	// Prediction: ticket_id -> file, source, by file.
	Prediction string
	// Overlapping: -> id of each queued ticket one of whose predicted files is predicted
	// for a running ticket of the same repository, by id.
	Overlapping string
	// Serialize, run first in a claim that may pass over a ticket, makes such claims take
	// turns where the engine runs claims side by side (PostgreSQL: a transaction-level
	// advisory lock), so two claims never each miss the other's ticket; "" where the engine
	// writes one transaction at a time (SQLite).
	Serialize string
}
