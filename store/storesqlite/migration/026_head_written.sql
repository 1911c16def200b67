-- v26 moves the PostgreSQL engine's check that a ticket's head names a written event from
-- a foreign key on events.prev_id to the commit; SQLite's reservation already refuses to
-- build on an unwritten head (SQL.ReserveEvent), so the step is empty here and one version
-- names one schema.
SELECT 1;
