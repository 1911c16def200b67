-- v12 (issue 21, nights that fail loudly): a night records its outcome (ok, partial,
-- stopped, failed; '' while it runs or when its process died), the error that explains
-- it, and how many distinct tickets it worked; a model call abandoned before its answer
-- (a client-side time-out) says its completion is unknown. Parked becomes a state of its
-- own, outside the queue, that ticketctl shows and requeue undoes: SQLite cannot change
-- a CHECK in place, so tickets is rebuilt the way SQLite documents (a new table, copy,
-- drop, rename) with foreign keys off for the step (see withoutForeignKeys); the other
-- tables' references name tickets and so the new table, and foreign_key_check must come
-- back empty before the step commits.
ALTER TABLE runs ADD COLUMN outcome TEXT NOT NULL DEFAULT ''
	CHECK (outcome IN ('', 'ok', 'partial', 'stopped', 'failed'));
ALTER TABLE runs ADD COLUMN error TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN worked INTEGER NOT NULL DEFAULT 0 CHECK (worked >= 0);
ALTER TABLE model_calls ADD COLUMN completion_unknown INTEGER NOT NULL DEFAULT 0 CHECK (completion_unknown IN (0, 1));

DROP INDEX tickets_open;
CREATE TABLE tickets_v12 (
	id               INTEGER PRIMARY KEY,
	source           TEXT    NOT NULL,
	external_id      TEXT    NOT NULL,
	repo             TEXT    NOT NULL DEFAULT '',
	title            TEXT    NOT NULL DEFAULT '',
	body             TEXT    NOT NULL DEFAULT '',
	labels           TEXT    NOT NULL DEFAULT '[]',
	priority         INTEGER NOT NULL DEFAULT 0,
	state            TEXT    NOT NULL DEFAULT 'queued'
	                 CHECK (state IN ('queued','running','parked','done','escalated','cancelled')),
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
	rescued_from     TEXT,
	pruned_at        INTEGER,
	rescues          INTEGER NOT NULL DEFAULT 0 CHECK (rescues >= 0),
	last_event_id    INTEGER,
	prev_event_id    INTEGER,
	UNIQUE (source, external_id),
	CHECK ((state IN ('done','escalated','cancelled')) = (finished_at IS NOT NULL)),
	CHECK ((state = 'running') = (lease_expires_at IS NOT NULL))
);
INSERT INTO tickets_v12 (id, source, external_id, repo, title, body, labels, priority, state, attempts, max_attempts,
		run_after, lease_owner, lease_expires_at, fence_token, cancel_requested, branch, result_dir, summary, reason,
		triage, created_at, updated_at, finished_at, rescued_from, pruned_at, rescues, last_event_id, prev_event_id)
	SELECT id, source, external_id, repo, title, body, labels, priority, state, attempts, max_attempts,
		run_after, lease_owner, lease_expires_at, fence_token, cancel_requested, branch, result_dir, summary, reason,
		triage, created_at, updated_at, finished_at, rescued_from, pruned_at, rescues, last_event_id, prev_event_id
	FROM tickets ORDER BY id;
DROP TABLE tickets;
ALTER TABLE tickets_v12 RENAME TO tickets;
CREATE INDEX tickets_open ON tickets (priority DESC, run_after, id) WHERE finished_at IS NULL;
