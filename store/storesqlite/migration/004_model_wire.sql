-- v4 (issue 11, model wire robustness): whether a call's usage was reported or
-- estimated, where its cost came from (provider, price table, estimate), both cost
-- figures side by side, and the endpoint health log (circuit breaker down/up) that
-- ticketctl stats reports per night.
ALTER TABLE model_calls ADD COLUMN usage_reported INTEGER NOT NULL DEFAULT 1 CHECK (usage_reported IN (0, 1));
ALTER TABLE model_calls ADD COLUMN cost_source TEXT NOT NULL DEFAULT '';
ALTER TABLE model_calls ADD COLUMN price_cost_usd REAL;
ALTER TABLE model_calls ADD COLUMN provider_cost_usd REAL;

CREATE TABLE endpoint_events (
	id         INTEGER PRIMARY KEY,
	run_id     INTEGER REFERENCES runs (id),
	endpoint   TEXT    NOT NULL,
	base_url   TEXT    NOT NULL DEFAULT '',
	down       INTEGER NOT NULL CHECK (down IN (0, 1)),
	since      INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	last_error TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX endpoint_events_run ON endpoint_events (run_id, id);
