-- v24 sets the tickets table's fill factor in the PostgreSQL engine (heap-only updates);
-- SQLite has no such setting, so the step is empty here and one version names one schema.
SELECT 1;
