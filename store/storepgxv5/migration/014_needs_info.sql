-- v14 (issue 25, a human when the model must ask), as in the SQLite engine: the state
-- needs_info, a ticket's open question and count of questions, the questions with their
-- answers, a model call's continuations and a review's reviewer.
ALTER TABLE tickets DROP CONSTRAINT tickets_state_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_state_check
	CHECK (state IN ('queued','running','parked','needs_info','done','escalated','cancelled'));
ALTER TABLE tickets ADD COLUMN question TEXT NOT NULL DEFAULT '';
ALTER TABLE tickets ADD COLUMN questions INTEGER NOT NULL DEFAULT 0 CHECK (questions >= 0);
ALTER TABLE model_calls ADD COLUMN continuations INTEGER NOT NULL DEFAULT 0 CHECK (continuations >= 0);
ALTER TABLE reviews ADD COLUMN reviewer TEXT NOT NULL DEFAULT 'correctness';

CREATE TABLE questions (
	ticket_id   BIGINT  NOT NULL REFERENCES tickets (id),
	n           INTEGER NOT NULL CHECK (n >= 1),
	attempt     INTEGER NOT NULL DEFAULT 0,
	question    TEXT    NOT NULL,
	asked_at    BIGINT  NOT NULL,
	answer      TEXT,
	answered_by TEXT    NOT NULL DEFAULT '',
	answered_at BIGINT,
	comment_url TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (ticket_id, n),
	CHECK ((answer IS NULL) = (answered_at IS NULL))
);
