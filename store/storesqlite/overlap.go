package storesqlite

import "github.com/ticketd/ticketd/store/storedriver"

// overlapStatements are the statements of overlap-aware claiming (storedriver.OverlapSQL).
// SQLite writes one transaction at a time: a claim needs no turn of its own.
var overlapStatements = storedriver.OverlapSQL{
	ClearPrediction:  `DELETE FROM predicted_files WHERE ticket_id = ?1`,
	InsertPrediction: `INSERT INTO predicted_files (ticket_id, file, source) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING`,
	Prediction:       `SELECT file, source FROM predicted_files WHERE ticket_id = ?1 ORDER BY file`,
	Overlapping:      overlapping,
}

// overlapping starts from the running tickets (a handful, through tickets_open) and meets
// the queued ones on the file index.
const overlapping = `SELECT DISTINCT q.ticket_id FROM tickets r
	JOIN predicted_files rf ON rf.ticket_id = r.id
	JOIN predicted_files q ON q.file = rf.file AND q.ticket_id <> r.id
	JOIN tickets qt ON qt.id = q.ticket_id
	WHERE r.finished_at IS NULL AND r.state = 'running'
		AND qt.state = 'queued' AND qt.repo = r.repo
	ORDER BY q.ticket_id`
