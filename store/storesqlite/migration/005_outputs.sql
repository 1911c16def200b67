-- v5 (issue 13, GitHub output): what ticketd published for a ticket, so a restart never
-- opens a second pull request or posts a second comment.
CREATE TABLE outputs (
	ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
	kind       TEXT    NOT NULL CHECK (kind IN ('pull_request', 'comment')),
	url        TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	PRIMARY KEY (ticket_id, kind)
);
