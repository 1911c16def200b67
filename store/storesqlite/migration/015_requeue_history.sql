-- v15 (issue 32, nothing lost, nobody charged): history that survives a requeue — a
-- ticket numbers its attempts on, and attempts_before is where the latest requeue gave it
-- a fresh budget; requeues keeps each requeue with its note for the maker and the fix
-- branch it kept. Lost leases are told apart: crashes counts those blamed on the ticket
-- (the only attempt in flight when its process died), rescued_node where the lease it
-- took over was. A night's node holds a lease on it (run_nodes.lease_expires_at), so the
-- living can close a dead node's part (died). store_meta holds the database's identity,
-- which a night compares with the file it writes; intake_skips the issue files intake
-- could not read, for ticketctl and the console.
ALTER TABLE tickets ADD COLUMN attempts_before INTEGER NOT NULL DEFAULT 0 CHECK (attempts_before >= 0);
ALTER TABLE tickets ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0 CHECK (crashes >= 0);
ALTER TABLE tickets ADD COLUMN rescued_node TEXT NOT NULL DEFAULT '';
ALTER TABLE run_nodes ADD COLUMN lease_expires_at INTEGER;
ALTER TABLE run_nodes ADD COLUMN died INTEGER NOT NULL DEFAULT 0 CHECK (died IN (0, 1));

CREATE TABLE requeues (
	ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
	n          INTEGER NOT NULL CHECK (n >= 1),
	at         INTEGER NOT NULL,
	actor      TEXT    NOT NULL DEFAULT '',
	from_state TEXT    NOT NULL DEFAULT '',
	attempts   INTEGER NOT NULL DEFAULT 0,
	note       TEXT    NOT NULL DEFAULT '',
	branch     TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (ticket_id, n)
) WITHOUT ROWID;

CREATE TABLE store_meta (
	key   TEXT NOT NULL PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO store_meta (key, value) VALUES ('identity', lower(hex(randomblob(16))));

CREATE TABLE intake_skips (
	source TEXT    NOT NULL,
	path   TEXT    NOT NULL,
	reason TEXT    NOT NULL,
	at     INTEGER NOT NULL,
	PRIMARY KEY (source, path)
) WITHOUT ROWID;
