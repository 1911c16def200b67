-- v16 (issue 36, an environment recipe per repository): the latest environment setup of
-- each repository on each node — its key, whether it worked, was reused or built and in
-- how long, and a failed recipe's output — for the console's "Needs you", ticketctl envs
-- and /metrics.
CREATE TABLE environments (
	repo    TEXT    NOT NULL,
	node    TEXT    NOT NULL DEFAULT '',
	env_key TEXT    NOT NULL DEFAULT '',
	ok      INTEGER NOT NULL DEFAULT 0 CHECK (ok IN (0, 1)),
	cached  INTEGER NOT NULL DEFAULT 0 CHECK (cached IN (0, 1)),
	built_at BIGINT,
	took_ms BIGINT NOT NULL DEFAULT 0,
	at      BIGINT NOT NULL,
	error   TEXT    NOT NULL DEFAULT '',
	output  TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (repo, node)
);
