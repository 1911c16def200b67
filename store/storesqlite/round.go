package storesqlite

import "github.com/ticketd/ticketd/store/storedriver"

// roundStatements are the statements of rounds (storedriver.RoundSQL).
var roundStatements = storedriver.RoundSQL{
	Insert: `INSERT INTO rounds (ticket_id, n, at, actor, source, note, threads, branch, attempts, outcome, ended_at)
			SELECT ?1, coalesce(max(n), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 FROM rounds WHERE ticket_id = ?1`,
	List: `SELECT n, at, actor, source, note, threads, branch, attempts, outcome, ended_at FROM rounds
			WHERE ticket_id = ?1 ORDER BY n`,
	End: `UPDATE rounds SET outcome = ?1, ended_at = ?2 WHERE ticket_id = ?3 AND outcome = 'open'`,
	Escalate: `UPDATE tickets SET state = 'escalated', updated_at = ?1, finished_at = ?2, reason = ?3, ` + reserveEvent + `
			WHERE id = ?4 AND state = 'done'`,
}
