-- v9 (issue 14, baselines kept across nights): the checks' results at a base commit, per
-- repository and checks configuration, so a night at an unchanged base runs no baseline
-- check; used_at lets ticketctl gc prune those no night has used for a while.
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
