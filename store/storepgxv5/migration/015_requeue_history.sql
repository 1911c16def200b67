-- v15 (issue 32, nothing lost, nobody charged), as in the SQLite engine: attempts
-- numbered on across requeues, the requeues with their notes and kept branches, lost
-- leases blamed on a ticket (crashes) and where a rescued lease was, a lease per node on
-- its night, the database's identity, and the issue files intake skipped.
ALTER TABLE tickets ADD COLUMN attempts_before INTEGER NOT NULL DEFAULT 0 CHECK (attempts_before >= 0);
ALTER TABLE tickets ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0 CHECK (crashes >= 0);
ALTER TABLE tickets ADD COLUMN rescued_node TEXT NOT NULL DEFAULT '';
ALTER TABLE run_nodes ADD COLUMN lease_expires_at BIGINT;
ALTER TABLE run_nodes ADD COLUMN died INTEGER NOT NULL DEFAULT 0 CHECK (died IN (0, 1));

CREATE TABLE requeues (
	ticket_id  BIGINT  NOT NULL REFERENCES tickets (id),
	n          INTEGER NOT NULL CHECK (n >= 1),
	at         BIGINT  NOT NULL,
	actor      TEXT    NOT NULL DEFAULT '',
	from_state TEXT    NOT NULL DEFAULT '',
	attempts   INTEGER NOT NULL DEFAULT 0,
	note       TEXT    NOT NULL DEFAULT '',
	branch     TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (ticket_id, n)
);

CREATE TABLE store_meta (
	key   TEXT NOT NULL PRIMARY KEY,
	value TEXT NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('identity', md5(random()::text || clock_timestamp()::text || txid_current()::text));

CREATE TABLE intake_skips (
	source TEXT   NOT NULL,
	path   TEXT   NOT NULL,
	reason TEXT   NOT NULL,
	at     BIGINT NOT NULL,
	PRIMARY KEY (source, path)
);
