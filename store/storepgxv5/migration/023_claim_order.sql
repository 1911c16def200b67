-- v23 (issue 37, workers that scale), as in the SQLite engine: among the due tickets a
-- claim takes the oldest enqueued first (priority DESC, id), so a retried ticket returns
-- to its place in line once its backoff has passed instead of going behind the queue.
-- tickets_open walks in that order, run_after in the entry to tell due from waiting.
DROP INDEX tickets_open;
CREATE INDEX tickets_open ON tickets (priority DESC, id, run_after) WHERE finished_at IS NULL;
