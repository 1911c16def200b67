-- v22 (issue 35, overlap-aware claiming): the files a ticket is predicted to touch, by
-- file name (store.FileKey), from its issue text at intake or from triage's suspects. A
-- claim passes over a queued ticket whose predicted files overlap a running ticket's of
-- the same repository while other work is ready (store.Claim).
CREATE TABLE predicted_files (
	ticket_id INTEGER NOT NULL REFERENCES tickets(id),
	file      TEXT    NOT NULL,
	source    TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (ticket_id, file)
);
CREATE INDEX predicted_files_file ON predicted_files (file, ticket_id);
