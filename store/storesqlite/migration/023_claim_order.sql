-- v23 (issue 37, workers that scale): among the due tickets a claim takes the oldest
-- enqueued first (priority DESC, id), not the earliest due (priority DESC, run_after, id).
-- A ticket whose attempt failed waits out its backoff and then returns to its place in
-- line: under the old order its new run_after put it behind every ticket enqueued before
-- it became due, and with several workers its last attempts were the night's tail, the
-- other workers idle. tickets_open walks in the new order; run_after stays in the entry,
-- after the key that orders it, so a claim still tells a waiting ticket from a due one
-- without reading its row. A claim changes no index page (state is not in the index); a
-- retry rewrites its entry in place instead of moving it.
DROP INDEX tickets_open;
CREATE INDEX tickets_open ON tickets (priority DESC, id, run_after) WHERE finished_at IS NULL;
