-- v22 (issue 35, overlap-aware claiming), as in the SQLite engine: the files a ticket is
-- predicted to touch, by file name, from its issue text or from triage's suspects.
CREATE TABLE predicted_files (
	ticket_id BIGINT NOT NULL REFERENCES tickets (id),
	file      TEXT   NOT NULL,
	source    TEXT   NOT NULL DEFAULT '',
	PRIMARY KEY (ticket_id, file)
);
CREATE INDEX predicted_files_file ON predicted_files (file, ticket_id);
