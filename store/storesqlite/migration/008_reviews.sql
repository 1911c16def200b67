-- v8 (issue 9, review rounds): one row per checker review round, with the findings the
-- pipeline kept and those it dropped (evidence not in the diff, bad schema, new in round
-- 2), so ticketctl show and stats can count them per call.
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
