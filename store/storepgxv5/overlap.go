package storepgxv5

import "github.com/ticketd/ticketd/store/storedriver"

// overlapStatements are the statements of overlap-aware claiming (storedriver.OverlapSQL).
// Claims run side by side on several connections and nodes: one that may pass over a
// ticket first takes its turn (an advisory lock held until its transaction ends), so it
// reads the running tickets after the claim before it committed.
var overlapStatements = storedriver.OverlapSQL{
	ClearPrediction:  `DELETE FROM predicted_files WHERE ticket_id = $1`,
	InsertPrediction: `INSERT INTO predicted_files (ticket_id, file, source) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
	Prediction:       `SELECT file, source FROM predicted_files WHERE ticket_id = $1 ORDER BY file`,
	Overlapping: `SELECT DISTINCT q.ticket_id FROM tickets r
	JOIN predicted_files rf ON rf.ticket_id = r.id
	JOIN predicted_files q ON q.file = rf.file AND q.ticket_id <> r.id
	JOIN tickets qt ON qt.id = q.ticket_id
	WHERE r.finished_at IS NULL AND r.state = 'running'
		AND qt.state = 'queued' AND qt.repo = r.repo
	ORDER BY q.ticket_id`,
	Serialize: `SELECT pg_advisory_xact_lock(hashtext('ticketd:claim-overlap'))`,
}
