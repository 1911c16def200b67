package storesqlite

import "github.com/ticketd/ticketd/store/storedriver"

// consoleStatements are the statements of the console's records (storedriver.ConsoleSQL).
var consoleStatements = storedriver.ConsoleSQL{
	Dismiss: `INSERT INTO dismissals (item, at, actor, note) VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (item) DO UPDATE SET at = excluded.at, actor = excluded.actor, note = excluded.note`,
	Undismiss:  `DELETE FROM dismissals WHERE item = ?1`,
	Dismissals: `SELECT item, at, actor, note FROM dismissals ORDER BY at, item`,
	RecordDigest: `INSERT INTO night_digests (run_id, at, ok, error) VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (run_id) DO UPDATE SET at = excluded.at, ok = excluded.ok, error = excluded.error`,
	Digests: `SELECT run_id, at, ok, error FROM night_digests ORDER BY run_id`,
}
