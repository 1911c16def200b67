-- v19 (issue 34, the morning loop), as in the SQLite engine: the rounds asked of done
-- tickets (a review on the pull request, or ticketctl revise), with what was asked and how
-- each ended.
CREATE TABLE rounds (
	ticket_id BIGINT  NOT NULL REFERENCES tickets (id),
	n         INTEGER NOT NULL CHECK (n >= 1),
	at        BIGINT  NOT NULL,
	actor     TEXT    NOT NULL DEFAULT '',
	source    TEXT    NOT NULL CHECK (source IN ('revise','review','ci')),
	note      TEXT    NOT NULL DEFAULT '',
	threads   TEXT    NOT NULL DEFAULT '[]',
	branch    TEXT    NOT NULL DEFAULT '',
	attempts  INTEGER NOT NULL DEFAULT 0,
	outcome   TEXT    NOT NULL DEFAULT 'open'
	          CHECK (outcome IN ('open','done','escalated','cancelled','refused')),
	ended_at  BIGINT,
	PRIMARY KEY (ticket_id, n)
);
