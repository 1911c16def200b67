-- v21 (issue 34, the morning loop): a round is more work on a done ticket's fix, asked by a
-- human's review on its pull request or a note (ticketctl revise): it works on the same
-- branch from its head. rounds keeps each one asked, with what was asked (the note, the
-- review threads as JSON: untrusted text, quoted to the maker), the fix branch it goes on
-- from, and how it ended (open while queued or running; done, escalated, cancelled, or
-- refused when the ticket had had review.max_rounds already).
CREATE TABLE rounds (
	ticket_id INTEGER NOT NULL REFERENCES tickets (id),
	n         INTEGER NOT NULL CHECK (n >= 1),
	at        INTEGER NOT NULL,
	actor     TEXT    NOT NULL DEFAULT '',
	source    TEXT    NOT NULL CHECK (source IN ('revise','review','ci')),
	note      TEXT    NOT NULL DEFAULT '',
	threads   TEXT    NOT NULL DEFAULT '[]',
	branch    TEXT    NOT NULL DEFAULT '',
	attempts  INTEGER NOT NULL DEFAULT 0,
	outcome   TEXT    NOT NULL DEFAULT 'open'
	          CHECK (outcome IN ('open','done','escalated','cancelled','refused')),
	ended_at  INTEGER,
	-- comment_url is the pull request comment that answered the round ('' until posted).
	comment_url TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (ticket_id, n)
) WITHOUT ROWID;

-- pull_watch is what ticketd last saw of a done ticket's pull request: the newest review it
-- handled (review_cursor, GitHub's review id), and the head commit's checks (ci_state
-- pending, green, red, stuck; ci_detail says which and what to do).
CREATE TABLE pull_watch (
	ticket_id     INTEGER  NOT NULL PRIMARY KEY REFERENCES tickets (id),
	review_cursor INTEGER  NOT NULL DEFAULT 0,
	ci_head       TEXT    NOT NULL DEFAULT '',
	ci_state      TEXT    NOT NULL DEFAULT '' CHECK (ci_state IN ('','pending','green','red','stuck')),
	ci_detail     TEXT    NOT NULL DEFAULT '',
	ci_at         INTEGER
) WITHOUT ROWID;
