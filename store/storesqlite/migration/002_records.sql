-- v2: the records issue 4 asks for: nights (runs), tool calls, the finer model call
-- accounting, a marker for pruned tickets, the lease rescue marker, and triggers that
-- make the event log append-only in the database itself.
CREATE TABLE runs (
	id         INTEGER PRIMARY KEY,
	trigger    TEXT    NOT NULL DEFAULT '',
	started_at INTEGER NOT NULL,
	ended_at   INTEGER,
	claimed    INTEGER NOT NULL DEFAULT 0,
	done       INTEGER NOT NULL DEFAULT 0,
	escalated  INTEGER NOT NULL DEFAULT 0,
	retried    INTEGER NOT NULL DEFAULT 0,
	cost_usd   REAL    NOT NULL DEFAULT 0,
	-- events with id > after_event_id and at <= ended_at belong to the run: a rowid range
	-- instead of an index on events.at that every transition would have to maintain.
	after_event_id INTEGER NOT NULL DEFAULT 0
);

ALTER TABLE model_calls ADD COLUMN run_id INTEGER REFERENCES runs (id);
ALTER TABLE model_calls ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_calls ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_calls ADD COLUMN error_class TEXT NOT NULL DEFAULT '';
ALTER TABLE model_calls ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
CREATE INDEX model_calls_run ON model_calls (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE tool_calls (
	id          INTEGER PRIMARY KEY,
	ticket_id   INTEGER NOT NULL REFERENCES tickets (id),
	attempt     INTEGER NOT NULL DEFAULT 0,
	step        INTEGER NOT NULL DEFAULT 0,
	tool        TEXT    NOT NULL,
	args        TEXT    NOT NULL DEFAULT '',
	result      TEXT    NOT NULL DEFAULT '',
	ok          INTEGER NOT NULL DEFAULT 0 CHECK (ok IN (0, 1)),
	duration_ms INTEGER NOT NULL DEFAULT 0,
	at          INTEGER NOT NULL
);
CREATE INDEX tool_calls_ticket ON tool_calls (ticket_id, id);

ALTER TABLE tickets ADD COLUMN rescued_from TEXT;
ALTER TABLE tickets ADD COLUMN pruned_at INTEGER;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
