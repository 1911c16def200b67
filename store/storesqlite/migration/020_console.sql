-- v20 (issue 34, the console acts): an operator's dismissal of an item of "Needs you" (an
-- escalation, a question, a failed night ...), by the item's key, so the to-do list stays a
-- list of what is still to do; and each night's morning digest delivery, so a failed one is
-- shown where the operator looks and a night's digest is sent once.
CREATE TABLE dismissals (
	item  TEXT    PRIMARY KEY,
	at    INTEGER NOT NULL,
	actor TEXT    NOT NULL DEFAULT '',
	note  TEXT    NOT NULL DEFAULT ''
);
CREATE TABLE night_digests (
	run_id INTEGER PRIMARY KEY REFERENCES runs(id),
	at     INTEGER NOT NULL,
	ok     INTEGER NOT NULL CHECK (ok IN (0, 1)),
	error  TEXT    NOT NULL DEFAULT ''
);
