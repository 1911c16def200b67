-- v18 (issue 35, duplicates at intake), as in the SQLite engine: the state duplicate and
-- the links of duplicates to the ticket that is worked for them.
ALTER TABLE tickets DROP CONSTRAINT tickets_state_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_state_check
	CHECK (state IN ('queued','running','parked','needs_info','needs_budget','duplicate','done','escalated','cancelled'));
CREATE TABLE duplicate_links (
	ticket_id   BIGINT PRIMARY KEY REFERENCES tickets (id),
	of_id       BIGINT NOT NULL REFERENCES tickets (id),
	reason      TEXT   NOT NULL DEFAULT '',
	linked_at   BIGINT NOT NULL,
	unlinked_at BIGINT,
	unlinked_by TEXT   NOT NULL DEFAULT '',
	CHECK (ticket_id <> of_id)
);
CREATE INDEX duplicate_links_of ON duplicate_links (of_id) WHERE unlinked_at IS NULL;
