-- v14 (issue 25, a human when the model must ask): needs_info becomes a state, outside
-- the queue, for a ticket whose maker asked a question; the ticket keeps its open
-- question and how many it asked, and questions keeps each question with its answer and
-- the GitHub comment that asked it. A model call keeps its continuation count (answers
-- cut at finish_reason=length and continued), and a review row the reviewer (angle) it
-- was. tickets is rebuilt as at v12 (keeping v13's lease_node), since a CHECK cannot change in place.
ALTER TABLE model_calls ADD COLUMN continuations INTEGER NOT NULL DEFAULT 0 CHECK (continuations >= 0);
ALTER TABLE reviews ADD COLUMN reviewer TEXT NOT NULL DEFAULT 'correctness';

CREATE TABLE questions (
	ticket_id   INTEGER NOT NULL REFERENCES tickets (id),
	n           INTEGER NOT NULL CHECK (n >= 1),
	attempt     INTEGER NOT NULL DEFAULT 0,
	question    TEXT    NOT NULL,
	asked_at    INTEGER NOT NULL,
	answer      TEXT,
	answered_by TEXT    NOT NULL DEFAULT '',
	answered_at INTEGER,
	comment_url TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (ticket_id, n),
	CHECK ((answer IS NULL) = (answered_at IS NULL))
) WITHOUT ROWID;

DROP INDEX tickets_open;
CREATE TABLE tickets_v14 (
	id               INTEGER PRIMARY KEY,
	source           TEXT    NOT NULL,
	external_id      TEXT    NOT NULL,
	repo             TEXT    NOT NULL DEFAULT '',
	title            TEXT    NOT NULL DEFAULT '',
	body             TEXT    NOT NULL DEFAULT '',
	labels           TEXT    NOT NULL DEFAULT '[]',
	priority         INTEGER NOT NULL DEFAULT 0,
	state            TEXT    NOT NULL DEFAULT 'queued'
	                 CHECK (state IN ('queued','running','parked','needs_info','done','escalated','cancelled')),
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
	UNIQUE (source, external_id),
	CHECK ((state IN ('done','escalated','cancelled')) = (finished_at IS NOT NULL)),
	CHECK ((state = 'running') = (lease_expires_at IS NOT NULL))
);
INSERT INTO tickets_v14 (id, source, external_id, repo, title, body, labels, priority, state, attempts, max_attempts,
		run_after, lease_owner, lease_expires_at, fence_token, cancel_requested, branch, result_dir, summary, reason,
		triage, created_at, updated_at, finished_at, rescued_from, pruned_at, rescues, last_event_id, prev_event_id, lease_node)
	SELECT id, source, external_id, repo, title, body, labels, priority, state, attempts, max_attempts,
		run_after, lease_owner, lease_expires_at, fence_token, cancel_requested, branch, result_dir, summary, reason,
		triage, created_at, updated_at, finished_at, rescued_from, pruned_at, rescues, last_event_id, prev_event_id, lease_node
	FROM tickets ORDER BY id;
DROP TABLE tickets;
ALTER TABLE tickets_v14 RENAME TO tickets;
CREATE INDEX tickets_open ON tickets (priority DESC, run_after, id) WHERE finished_at IS NULL;
