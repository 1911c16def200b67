-- v20 (issue 34, the console acts), as in the SQLite engine: dismissals of "Needs you"
-- items by key, and each night's morning digest delivery.
CREATE TABLE dismissals (
	item  TEXT   PRIMARY KEY,
	at    BIGINT NOT NULL,
	actor TEXT   NOT NULL DEFAULT '',
	note  TEXT   NOT NULL DEFAULT ''
);
CREATE TABLE night_digests (
	run_id BIGINT  PRIMARY KEY REFERENCES runs (id),
	at     BIGINT  NOT NULL,
	ok     INTEGER NOT NULL CHECK (ok IN (0, 1)),
	error  TEXT    NOT NULL DEFAULT ''
);
