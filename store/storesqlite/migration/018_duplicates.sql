-- v18 (issue 35, duplicates at intake): duplicate becomes a state, outside the queue, for
-- a ticket that reports the same failure as an earlier one of its repository; the link
-- (and an operator's unlink, kept so the ticket is not linked again) is in
-- duplicate_links. tickets is rebuilt as at v17, since a CHECK cannot change in place.
DROP INDEX tickets_open;
CREATE TABLE tickets_v18 (
	id               INTEGER PRIMARY KEY,
	source           TEXT    NOT NULL,
	external_id      TEXT    NOT NULL,
	repo             TEXT    NOT NULL DEFAULT '',
	title            TEXT    NOT NULL DEFAULT '',
	body             TEXT    NOT NULL DEFAULT '',
	labels           TEXT    NOT NULL DEFAULT '[]',
	priority         INTEGER NOT NULL DEFAULT 0,
	state            TEXT    NOT NULL DEFAULT 'queued'
	                 CHECK (state IN ('queued','running','parked','needs_info','needs_budget','duplicate','done','escalated','cancelled')),
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
INSERT INTO tickets_v18 (id, source, external_id, repo, title, body, labels, priority, state, attempts, max_attempts,
		run_after, lease_owner, lease_expires_at, fence_token, cancel_requested, branch, result_dir, summary, reason,
		triage, created_at, updated_at, finished_at, rescued_from, pruned_at, rescues, last_event_id, prev_event_id, lease_node,
		question, questions, attempts_before, crashes, rescued_node, budget_extra_usd)
	SELECT id, source, external_id, repo, title, body, labels, priority, state, attempts, max_attempts,
		run_after, lease_owner, lease_expires_at, fence_token, cancel_requested, branch, result_dir, summary, reason,
		triage, created_at, updated_at, finished_at, rescued_from, pruned_at, rescues, last_event_id, prev_event_id, lease_node,
		question, questions, attempts_before, crashes, rescued_node, budget_extra_usd
	FROM tickets ORDER BY id;
DROP TABLE tickets;
ALTER TABLE tickets_v18 RENAME TO tickets;
CREATE INDEX tickets_open ON tickets (priority DESC, run_after, id) WHERE finished_at IS NULL;
CREATE TABLE duplicate_links (
	ticket_id   INTEGER PRIMARY KEY REFERENCES tickets(id),
	of_id       INTEGER NOT NULL REFERENCES tickets(id),
	reason      TEXT    NOT NULL DEFAULT '',
	linked_at   INTEGER NOT NULL,
	unlinked_at INTEGER,
	unlinked_by TEXT    NOT NULL DEFAULT '',
	CHECK (ticket_id <> of_id)
);
CREATE INDEX duplicate_links_of ON duplicate_links (of_id) WHERE unlinked_at IS NULL;
