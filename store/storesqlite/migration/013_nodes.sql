-- v13 (issue 24, several machines on one queue): the node (machine) holding each lease;
-- the nodes that took part in a night; and what an operator reads of a ticket (its
-- results folder: patch, report.md, attempt-<n>/...) kept in the database, so any node's
-- ticketctl shows it.
ALTER TABLE tickets ADD COLUMN lease_node TEXT NOT NULL DEFAULT '';

CREATE TABLE run_nodes (
	run_id      INTEGER NOT NULL REFERENCES runs (id),
	node        TEXT    NOT NULL,
	started_at  INTEGER NOT NULL,
	finished_at INTEGER,
	PRIMARY KEY (run_id, node)
) WITHOUT ROWID;

CREATE TABLE artifacts (
	ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
	path       TEXT    NOT NULL,
	content    BLOB    NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (ticket_id, path)
) WITHOUT ROWID;
