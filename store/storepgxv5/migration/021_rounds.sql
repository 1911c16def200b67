-- v21 (issue 34, the morning loop), as in the SQLite engine: the rounds asked of done
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
	-- comment_url is the pull request comment that answered the round ('' until posted).
	comment_url TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (ticket_id, n)
);

-- pull_watch is what ticketd last saw of a done ticket's pull request: the newest review it
-- handled (review_cursor, GitHub's review id), and the head commit's checks (ci_state
-- pending, green, red, stuck; ci_detail says which and what to do).
CREATE TABLE pull_watch (
	ticket_id     BIGINT  NOT NULL PRIMARY KEY REFERENCES tickets (id),
	review_cursor BIGINT  NOT NULL DEFAULT 0,
	ci_head       TEXT    NOT NULL DEFAULT '',
	ci_state      TEXT    NOT NULL DEFAULT '' CHECK (ci_state IN ('','pending','green','red','stuck')),
	ci_detail     TEXT    NOT NULL DEFAULT '',
	ci_at         BIGINT
);
