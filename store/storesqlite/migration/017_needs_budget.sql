-- v17 (issue 35, spending that acts before the money is gone): needs_budget becomes a
-- state, outside the queue, for a ticket its dollars stopped with its partial work kept;
-- budget_extra_usd is what operators added to its per-attempt dollars (ticketctl
-- budget). tickets is rebuilt as at v14 with v15's columns, since a CHECK cannot change
-- in place.
DROP INDEX tickets_open;
CREATE TABLE tickets_v17 (
	id               INTEGER PRIMARY KEY,
	source           TEXT    NOT NULL,
	external_id      TEXT    NOT NULL,
	repo             TEXT    NOT NULL DEFAULT '',
	title            TEXT    NOT NULL DEFAULT '',
	body             TEXT    NOT NULL DEFAULT '',
	labels           TEXT    NOT NULL DEFAULT '[]',
	priority         INTEGER NOT NULL DEFAULT 0,
	state            TEXT    NOT NULL DEFAULT 'queued'
	                 CHECK (state IN ('queued','running','parked','needs_info','needs_budget','done','escalated','cancelled')),
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
	lease_node       TEXT    NOT NULL DEFAULT '',
	question         TEXT    NOT NULL DEFAULT '',
	questions        INTEGER NOT NULL DEFAULT 0 CHECK (questions >= 0),
	attempts_before  INTEGER NOT NULL DEFAULT 0 CHECK (attempts_before >= 0),
	crashes          INTEGER NOT NULL DEFAULT 0 CHECK (crashes >= 0),
	rescued_node     TEXT    NOT NULL DEFAULT '',
	budget_extra_usd REAL    NOT NULL DEFAULT 0 CHECK (budget_extra_usd >= 0),
	UNIQUE (source, external_id),
	CHECK ((state IN ('done','escalated','cancelled')) = (finished_at IS NOT NULL)),
	CHECK ((state = 'running') = (lease_expires_at IS NOT NULL))
);
INSERT INTO tickets_v17 (id, source, external_id, repo, title, body, labels, priority, state, attempts, max_attempts,
		run_after, lease_owner, lease_expires_at, fence_token, cancel_requested, branch, result_dir, summary, reason,
		triage, created_at, updated_at, finished_at, rescued_from, pruned_at, rescues, last_event_id, prev_event_id, lease_node,
		question, questions, attempts_before, crashes, rescued_node)
	SELECT id, source, external_id, repo, title, body, labels, priority, state, attempts, max_attempts,
		run_after, lease_owner, lease_expires_at, fence_token, cancel_requested, branch, result_dir, summary, reason,
		triage, created_at, updated_at, finished_at, rescued_from, pruned_at, rescues, last_event_id, prev_event_id, lease_node,
		question, questions, attempts_before, crashes, rescued_node
	FROM tickets ORDER BY id;
DROP TABLE tickets;
ALTER TABLE tickets_v17 RENAME TO tickets;
CREATE INDEX tickets_open ON tickets (priority DESC, run_after, id) WHERE finished_at IS NULL;
