-- v1: the walking skeleton: tickets with the state machine enforced by CHECKs, the
-- append-only event log and model call records.
CREATE TABLE tickets (
	id               INTEGER PRIMARY KEY,
	source           TEXT    NOT NULL,
	external_id      TEXT    NOT NULL,
	repo             TEXT    NOT NULL DEFAULT '',
	title            TEXT    NOT NULL DEFAULT '',
	body             TEXT    NOT NULL DEFAULT '',
	labels           TEXT    NOT NULL DEFAULT '[]',
	priority         INTEGER NOT NULL DEFAULT 0,
	state            TEXT    NOT NULL DEFAULT 'queued'
	                 CHECK (state IN ('queued','running','done','escalated','cancelled')),
	attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
	max_attempts     INTEGER NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
	run_after        INTEGER NOT NULL,
	lease_owner      TEXT    NOT NULL DEFAULT '',
	lease_expires_at INTEGER,
	fence_token      INTEGER NOT NULL DEFAULT 0,
	cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
	branch           TEXT    NOT NULL DEFAULT '',
	result_dir       TEXT    NOT NULL DEFAULT '',
	summary          TEXT    NOT NULL DEFAULT '',
	reason           TEXT    NOT NULL DEFAULT '',
	triage           TEXT    NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	finished_at      INTEGER,
	UNIQUE (source, external_id),
	CHECK ((state IN ('done','escalated','cancelled')) = (finished_at IS NOT NULL)),
	CHECK ((state = 'running') = (lease_expires_at IS NOT NULL))
);
-- One small index over the active tickets serves both claim branches; a claim moves its
-- entry within the same few pages, so each transition dirties one index page, not two.
-- Queries repeat its WHERE term verbatim: SQLite uses a partial index only on a literal match.
CREATE INDEX tickets_active ON tickets (state, priority DESC, run_after, id)
	WHERE state IN ('queued', 'running');

CREATE TABLE events (
	id         INTEGER PRIMARY KEY,
	ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
	at         INTEGER NOT NULL,
	kind       TEXT    NOT NULL,
	from_state TEXT    NOT NULL DEFAULT '',
	to_state   TEXT    NOT NULL DEFAULT '',
	attempt    INTEGER NOT NULL DEFAULT 0,
	actor      TEXT    NOT NULL DEFAULT '',
	reason     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX events_ticket ON events (ticket_id, id);

CREATE TABLE model_calls (
	id                 INTEGER PRIMARY KEY,
	ticket_id          INTEGER NOT NULL REFERENCES tickets (id),
	attempt            INTEGER NOT NULL DEFAULT 0,
	role               TEXT    NOT NULL DEFAULT '',
	model              TEXT    NOT NULL DEFAULT '',
	endpoint           TEXT    NOT NULL DEFAULT '',
	prompt_tokens      INTEGER NOT NULL DEFAULT 0,
	cached_tokens      INTEGER NOT NULL DEFAULT 0,
	completion_tokens  INTEGER NOT NULL DEFAULT 0,
	cost_usd           REAL,
	latency_ms         INTEGER NOT NULL DEFAULT 0,
	finish_reason      TEXT    NOT NULL DEFAULT '',
	error              TEXT    NOT NULL DEFAULT '',
	started_at         INTEGER NOT NULL
);
CREATE INDEX model_calls_ticket ON model_calls (ticket_id, id);
