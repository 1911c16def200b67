-- v17 (issue 35, spending that acts before the money is gone), as in the SQLite engine:
-- the state needs_budget and what operators added to a ticket's dollars.
ALTER TABLE tickets DROP CONSTRAINT tickets_state_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_state_check
	CHECK (state IN ('queued','running','parked','needs_info','needs_budget','done','escalated','cancelled'));
ALTER TABLE tickets ADD COLUMN budget_extra_usd DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (budget_extra_usd >= 0);
