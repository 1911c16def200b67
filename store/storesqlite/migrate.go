package storesqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrations are the forward-only schema steps; migrations[i] takes the schema from
// version i to version i+1. Never edit a released step: append a new one. Each step runs in
// its own transaction together with its schema_migrations row, so a crash mid-migration
// leaves the database at the previous version.
var migrations = []string{
	// v1: the walking skeleton: tickets with the state machine enforced by CHECKs, the
	// append-only event log and model call records.
	`
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
`,
	// v2: the records issue 4 asks for: nights (runs), tool calls, the finer model call
	// accounting, a marker for pruned tickets, the lease rescue marker, and triggers that
	// make the event log append-only in the database itself.
	`
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
`,
	// v3 (issue 8, the sandbox): how each night isolated the code under test, so that
	// ticketctl stats shows a night that ran with sandbox: none.
	`
ALTER TABLE runs ADD COLUMN sandbox TEXT NOT NULL DEFAULT '';
`,
	// v4 (issue 11, model wire robustness): whether a call's usage was reported or
	// estimated, where its cost came from (provider, price table, estimate), both cost
	// figures side by side, and the endpoint health log (circuit breaker down/up) that
	// ticketctl stats reports per night.
	`
ALTER TABLE model_calls ADD COLUMN usage_reported INTEGER NOT NULL DEFAULT 1 CHECK (usage_reported IN (0, 1));
ALTER TABLE model_calls ADD COLUMN cost_source TEXT NOT NULL DEFAULT '';
ALTER TABLE model_calls ADD COLUMN price_cost_usd REAL;
ALTER TABLE model_calls ADD COLUMN provider_cost_usd REAL;

CREATE TABLE endpoint_events (
	id         INTEGER PRIMARY KEY,
	run_id     INTEGER REFERENCES runs (id),
	endpoint   TEXT    NOT NULL,
	base_url   TEXT    NOT NULL DEFAULT '',
	down       INTEGER NOT NULL CHECK (down IN (0, 1)),
	since      INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	last_error TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX endpoint_events_run ON endpoint_events (run_id, id);
`,
	// v5 (issue 13, GitHub output): what ticketd published for a ticket, so a restart never
	// opens a second pull request or posts a second comment.
	`
CREATE TABLE outputs (
	ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
	kind       TEXT    NOT NULL CHECK (kind IN ('pull_request', 'comment')),
	url        TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	PRIMARY KEY (ticket_id, kind)
);
`,
	// v6 (issue 12, crashes spend nothing): an attempt cut short by a lost lease is counted
	// in rescues, not in attempts, and bounded by the store's MaxRescues.
	`
ALTER TABLE tickets ADD COLUMN rescues INTEGER NOT NULL DEFAULT 0 CHECK (rescues >= 0);
`,
	// v7 (issue 10, the maker for real models): which rung of edit_file's matching ladder
	// applied an edit, so ticketctl logs and the bench can count them; and how many
	// compaction passes ran before a maker request.
	`
ALTER TABLE tool_calls ADD COLUMN rung TEXT NOT NULL DEFAULT '';
ALTER TABLE model_calls ADD COLUMN compactions INTEGER NOT NULL DEFAULT 0 CHECK (compactions >= 0);
`,
	// v8 (issue 9, review rounds): one row per checker review round, with the findings the
	// pipeline kept and those it dropped (evidence not in the diff, bad schema, new in round
	// 2), so ticketctl show and stats can count them per call.
	`
CREATE TABLE reviews (
	id         INTEGER PRIMARY KEY,
	ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
	attempt    INTEGER NOT NULL DEFAULT 0,
	round      INTEGER NOT NULL CHECK (round >= 1),
	kept       INTEGER NOT NULL DEFAULT 0 CHECK (kept >= 0),
	dropped    INTEGER NOT NULL DEFAULT 0 CHECK (dropped >= 0),
	at         INTEGER NOT NULL
);
CREATE INDEX reviews_ticket ON reviews (ticket_id, id);
`,
	// v9 (issue 14, baselines kept across nights): the checks' results at a base commit, per
	// repository and checks configuration, so a night at an unchanged base runs no baseline
	// check; used_at lets ticketctl gc prune those no night has used for a while.
	`
CREATE TABLE baselines (
	repo        TEXT    NOT NULL,
	base_commit TEXT    NOT NULL,
	checks_hash TEXT    NOT NULL,
	results     TEXT    NOT NULL,
	flaky       TEXT    NOT NULL DEFAULT '[]',
	duration_ms INTEGER NOT NULL DEFAULT 0 CHECK (duration_ms >= 0),
	created_at  INTEGER NOT NULL,
	used_at     INTEGER NOT NULL,
	uses        INTEGER NOT NULL DEFAULT 0 CHECK (uses >= 0),
	PRIMARY KEY (repo, base_commit, checks_hash)
) WITHOUT ROWID;
CREATE INDEX baselines_used ON baselines (used_at);
`,
	// v10 (issue 14, the queue at 1.5x goqite): a ticket's events are found through a chain
	// (tickets.last_event_id -> events.prev_id -> ...) instead of the events_ticket index.
	// Every commit appends each page it dirtied to the WAL, and the index cost each
	// transition a page of its own; the chain's head lives in the ticket row that the
	// transition rewrites anyway. events is rebuilt without its foreign key: without an index
	// on ticket_id, the key's parent-side checks would plan a scan of events into every
	// statement that writes tickets. events_chain does the key's job (an event names an
	// existing ticket) and refuses an event whose prev_id is not the ticket's last event, so
	// the chain can neither skip nor fork.
	`
ALTER TABLE tickets ADD COLUMN last_event_id INTEGER;
UPDATE tickets SET last_event_id = (SELECT max(e.id) FROM events e WHERE e.ticket_id = tickets.id);

CREATE TABLE events_v10 (
	id         INTEGER PRIMARY KEY,
	ticket_id  INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	kind       TEXT    NOT NULL,
	from_state TEXT    NOT NULL DEFAULT '',
	to_state   TEXT    NOT NULL DEFAULT '',
	attempt    INTEGER NOT NULL DEFAULT 0,
	actor      TEXT    NOT NULL DEFAULT '',
	reason     TEXT    NOT NULL DEFAULT '',
	prev_id    INTEGER
);
INSERT INTO events_v10 (id, ticket_id, at, kind, from_state, to_state, attempt, actor, reason, prev_id)
	SELECT id, ticket_id, at, kind, from_state, to_state, attempt, actor, reason,
		(SELECT max(p.id) FROM events p WHERE p.ticket_id = events.ticket_id AND p.id < events.id)
	FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_v10 RENAME TO events;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_chain AFTER INSERT ON events
BEGIN
	UPDATE tickets SET last_event_id = NEW.id WHERE id = NEW.ticket_id AND last_event_id IS NEW.prev_id;
	SELECT RAISE(ABORT, 'event: its ticket must exist and prev_id must be the ticket''s last event')
		WHERE changes() = 0;
END;
`,
	// v11 (issue 14): the transition that changes a ticket reserves the id of the event it
	// appends (reserveEvent, events.go), so an event no longer costs a second write of the
	// ticket row through events_chain. The ticket row keeps the head (last_event_id) and,
	// between a reservation and its event, the head before it (prev_event_id). The chain's
	// rules move to where they are cheap: an event takes the reserved id, so one without a
	// reservation collides with the head (primary key); a reservation is made only on top of
	// a head that exists; CHECK (prev_id < id) refuses loops. events gets its foreign key
	// back (an event names an existing ticket): without an index on ticket_id the key costs a
	// scan of events only when a ticket is deleted, which nothing does.
	//
	// tickets_active (state, priority, run_after, id) gives way to tickets_open, the same
	// order over the tickets not yet finished: a claim changes a ticket's state but not its
	// place in tickets_open, so it dirties no index page (a queue cycle dirtied 10 pages, now
	// 9). Claims read the state in the row; the open tickets are the live queue, not history.
	`
DROP TRIGGER IF EXISTS events_chain;
DROP INDEX tickets_active;
CREATE INDEX tickets_open ON tickets (priority DESC, run_after, id) WHERE finished_at IS NULL;
ALTER TABLE tickets ADD COLUMN prev_event_id INTEGER;

CREATE TABLE events_v11 (
	id         INTEGER PRIMARY KEY,
	ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
	at         INTEGER NOT NULL,
	kind       TEXT    NOT NULL,
	from_state TEXT    NOT NULL DEFAULT '',
	to_state   TEXT    NOT NULL DEFAULT '',
	attempt    INTEGER NOT NULL DEFAULT 0,
	actor      TEXT    NOT NULL DEFAULT '',
	reason     TEXT    NOT NULL DEFAULT '',
	prev_id    INTEGER CHECK (prev_id < id)
);
INSERT INTO events_v11 (id, ticket_id, at, kind, from_state, to_state, attempt, actor, reason, prev_id)
	SELECT id, ticket_id, at, kind, from_state, to_state, attempt, actor, reason, prev_id FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_v11 RENAME TO events;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
`,
	// v12 (issue 21, nights that fail loudly): a night records its outcome (ok, partial,
	// stopped, failed; '' while it runs or when its process died), the error that explains
	// it, and how many distinct tickets it worked; a model call abandoned before its answer
	// (a client-side time-out) says its completion is unknown. Parked becomes a state of its
	// own, outside the queue, that ticketctl shows and requeue undoes: SQLite cannot change
	// a CHECK in place, so tickets is rebuilt the way SQLite documents (a new table, copy,
	// drop, rename) with foreign keys off for the step (see withoutForeignKeys); the other
	// tables' references name tickets and so the new table, and foreign_key_check must come
	// back empty before the step commits.
	`
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
`,
	// v13 (issue 24, several machines on one queue): the node (machine) holding each lease;
	// the nodes that took part in a night; and what an operator reads of a ticket (its
	// results folder: patch, report.md, attempt-<n>/...) kept in the database, so any node's
	// ticketctl shows it.
	`
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
`,
	// v14 (issue 25, a human when the model must ask): needs_info becomes a state, outside
	// the queue, for a ticket whose maker asked a question; the ticket keeps its open
	// question and how many it asked, and questions keeps each question with its answer and
	// the GitHub comment that asked it. A model call keeps its continuation count (answers
	// cut at finish_reason=length and continued), and a review row the reviewer (angle) it
	// was. tickets is rebuilt as at v12 (keeping v13's lease_node), since a CHECK cannot change in place.
	`
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
`,
	// v15 (issue 32, nothing lost, nobody charged): history that survives a requeue — a
	// ticket numbers its attempts on, and attempts_before is where the latest requeue gave it
	// a fresh budget; requeues keeps each requeue with its note for the maker and the fix
	// branch it kept. Lost leases are told apart: crashes counts those blamed on the ticket
	// (the only attempt in flight when its process died), rescued_node where the lease it
	// took over was. A night's node holds a lease on it (run_nodes.lease_expires_at), so the
	// living can close a dead node's part (died). store_meta holds the database's identity,
	// which a night compares with the file it writes; intake_skips the issue files intake
	// could not read, for ticketctl and the console.
	`
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
`,
	// v16 (issue 36, an environment recipe per repository): the latest environment setup of
	// each repository on each node — its key, whether it worked, was reused or built and in
	// how long, and a failed recipe's output — for the console's "Needs you", ticketctl envs
	// and /metrics.
	`
CREATE TABLE environments (
	repo    TEXT    NOT NULL,
	node    TEXT    NOT NULL DEFAULT '',
	env_key TEXT    NOT NULL DEFAULT '',
	ok      INTEGER NOT NULL DEFAULT 0 CHECK (ok IN (0, 1)),
	cached  INTEGER NOT NULL DEFAULT 0 CHECK (cached IN (0, 1)),
	built_at INTEGER,
	took_ms INTEGER NOT NULL DEFAULT 0,
	at      INTEGER NOT NULL,
	error   TEXT    NOT NULL DEFAULT '',
	output  TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (repo, node)
) WITHOUT ROWID;
`,
	// v17 (issue 35, spending that acts before the money is gone): needs_budget becomes a
	// state, outside the queue, for a ticket its dollars stopped with its partial work kept;
	// budget_extra_usd is what operators added to its per-attempt dollars (ticketctl
	// budget). tickets is rebuilt as at v14 with v15's columns, since a CHECK cannot change
	// in place.
	`
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
`,
	// v18 (issue 35, duplicates at intake): duplicate becomes a state, outside the queue, for
	// a ticket that reports the same failure as an earlier one of its repository; the link
	// (and an operator's unlink, kept so the ticket is not linked again) is in
	// duplicate_links. tickets is rebuilt as at v17, since a CHECK cannot change in place.
	`
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
`,
}

// withoutForeignKeys are the steps that rebuild a table others reference: they run with
// foreign key enforcement off (a connection setting SQLite ignores inside a transaction),
// and PRAGMA foreign_key_check must find nothing before they commit.
var withoutForeignKeys = map[int]bool{12: true, 14: true, 17: true, 18: true}

// SchemaVersion is the schema version this build migrates databases to.
var SchemaVersion = len(migrations)

// migrate brings db forward to version target (len(migrations) in production; tests stop
// earlier to build databases as older binaries left them).
func migrate(ctx context.Context, db *sql.DB, target int, now int64) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	current, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("database schema is v%d but this ticketd knows only up to v%d: upgrade ticketd, the schema is never migrated backwards", current, len(migrations))
	}
	for v := current + 1; v <= target; v++ {
		if err := applyMigration(ctx, db, v, now); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, version int, now int64) error {
	// One pinned connection: the foreign key setting belongs to it, not to the pool.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate to v%d: connect: %w", version, err)
	}
	defer conn.Close()
	if withoutForeignKeys[version] {
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return fmt.Errorf("migrate to v%d: foreign keys off: %w", version, err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate to v%d: begin: %w", version, err)
	}
	defer tx.Rollback()
	// Another process opening the same new database (ticketctl while the daemon starts)
	// may have applied it since the version was read: the transaction holds the write
	// lock, so this look is the one that counts.
	var applied int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&applied); err != nil {
		return fmt.Errorf("migrate to v%d: read schema version: %w", version, err)
	}
	if applied > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, migrations[version-1]); err != nil {
		return fmt.Errorf("migrate to v%d: %w", version, err)
	}
	if withoutForeignKeys[version] {
		var table, parent sql.NullString
		var rowid, fkid sql.NullInt64
		err := tx.QueryRowContext(ctx, `PRAGMA foreign_key_check`).Scan(&table, &rowid, &parent, &fkid)
		if err == nil {
			return fmt.Errorf("migrate to v%d: a row of %s (rowid %d) lost the row it references", version, table.String, rowid.Int64)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("migrate to v%d: foreign key check: %w", version, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, version, now); err != nil {
		return fmt.Errorf("migrate to v%d: record version: %w", version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate to v%d: commit: %w", version, err)
	}
	return nil
}

func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
