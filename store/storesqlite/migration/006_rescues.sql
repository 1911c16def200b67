-- v6 (issue 12, crashes spend nothing): an attempt cut short by a lost lease is counted
-- in rescues, not in attempts, and bounded by the store's MaxRescues.
ALTER TABLE tickets ADD COLUMN rescues INTEGER NOT NULL DEFAULT 0 CHECK (rescues >= 0);
