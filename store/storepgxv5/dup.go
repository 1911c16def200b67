package storepgxv5

import "github.com/ticketd/ticketd/store/storedriver"

// dupStatements are the statements of duplicates at intake (storedriver.DupSQL).
var dupStatements = storedriver.DupSQL{
	Link: `UPDATE tickets SET state = 'duplicate', updated_at = $1, reason = $2, ` + reserveEvent + `
			WHERE id = $3 AND state = 'queued' AND attempts = 0 AND attempts_before = 0`,
	InsertLink: `INSERT INTO duplicate_links (ticket_id, of_id, reason, linked_at) VALUES ($1, $2, $3, $4)`,
	LinkOf:     `SELECT of_id, reason, unlinked_at FROM duplicate_links WHERE ticket_id = $1`,
	LinkedTo:   `SELECT ticket_id FROM duplicate_links WHERE of_id = $1 AND unlinked_at IS NULL ORDER BY ticket_id`,
	Unlink: `UPDATE tickets SET state = 'queued', run_after = $1, updated_at = $2, reason = $3, ` + reserveEvent + `
			WHERE id = $4 AND state = 'duplicate'`,
	EndLink: `UPDATE duplicate_links SET unlinked_at = $1, unlinked_by = $2 WHERE ticket_id = $3 AND unlinked_at IS NULL`,
	Close: `UPDATE tickets SET state = 'done', updated_at = $1, finished_at = $2, reason = $3, branch = $4, summary = $5, ` + reserveEvent + `
			WHERE id = $6 AND state = 'duplicate'`,
}
