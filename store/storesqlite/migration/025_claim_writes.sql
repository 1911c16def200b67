-- v25 trims what a claim writes in the PostgreSQL engine (the event's key on its ticket,
-- a flag for predicted files); SQLite's claim pays for neither, so the step is empty here
-- and one version names one schema.
SELECT 1;
