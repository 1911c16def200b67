package storesqlite

import "github.com/ticketd/ticketd/store/storedriver"

// roundStatements are the statements of rounds (storedriver.RoundSQL).
var roundStatements = storedriver.RoundSQL{
	Insert: `INSERT INTO rounds (ticket_id, n, at, actor, source, note, threads, branch, attempts, outcome, ended_at)
			SELECT ?1, coalesce(max(n), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 FROM rounds WHERE ticket_id = ?1`,
	List: `SELECT n, at, actor, source, note, threads, branch, attempts, outcome, ended_at, comment_url FROM rounds
			WHERE ticket_id = ?1 ORDER BY n`,
	Answered: `UPDATE rounds SET comment_url = ?1 WHERE ticket_id = ?2 AND n = ?3`,
	Watch:    `SELECT review_cursor, ci_head, ci_state, ci_detail, ci_at FROM pull_watch WHERE ticket_id = ?1`,
	SetCursor: `INSERT INTO pull_watch (ticket_id, review_cursor) VALUES (?1, ?2)
			ON CONFLICT (ticket_id) DO UPDATE SET review_cursor = excluded.review_cursor`,
	SetCI: `INSERT INTO pull_watch (ticket_id, ci_head, ci_state, ci_detail, ci_at) VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT (ticket_id) DO UPDATE SET ci_head = excluded.ci_head, ci_state = excluded.ci_state,
			ci_detail = excluded.ci_detail, ci_at = excluded.ci_at`,
	CIStates: `SELECT w.ticket_id, w.ci_head, w.ci_state, w.ci_detail, w.ci_at FROM pull_watch w JOIN tickets t ON t.id = w.ticket_id
			WHERE w.ci_state IN ('red','stuck') AND t.state = 'done' ORDER BY w.ticket_id`,
	End: `UPDATE rounds SET outcome = ?1, ended_at = ?2 WHERE ticket_id = ?3 AND outcome = 'open'`,
	Escalate: `UPDATE tickets SET state = 'escalated', updated_at = ?1, finished_at = ?2, reason = ?3, ` + reserveEvent + `
			WHERE id = ?4 AND state = 'done'`,
}
