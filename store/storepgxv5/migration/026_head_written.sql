-- v26 (issue 37, claim latency behind River): a committed ticket head names a written event,
-- checked once, at commit, instead of by a foreign key on every event's prev_id.
--
-- events.prev_id's key took, for every event, a lookup of the previous event and a row lock
-- on it (FOR KEY SHARE: a WAL record and a dirtied page), though events are append-only and
-- the lock guards against nothing: 13-29 us of a claim's 130-250 us in the server. With
-- scripts/peerbench behind 100k finished tickets, six pairs of runs alternating builds, a
-- claim's median against River's went from 0.935 to 0.96 (docs/bench.md).
--
-- What the key refused was a reservation left without its event: a transition that moved
-- tickets.last_event_id to a fresh id and committed before writing that event. The trigger
-- below refuses that commit itself, with the ticket and the id, so a committed head names a
-- written event and so does the head it was reserved over (every event's prev_id).
-- It is deferred: a transition reserves in one statement and writes the event in the next,
-- and at commit a volatile function's query sees every committed event, a concurrent
-- node's included (a check in the statement would see only its snapshot).
--
-- A fresh claim (queued to running) is not checked at its commit: the claim statements
-- (claimLease, claimBatch, completeAndClaim) write its event in the statement that moves
-- the head, and are the only writes that move a ticket from queued to running. The check
-- looks at the head a transition built on (prev_event_id) too, so a claim that skipped
-- its event is refused at the ticket's next transition, as the key refused it; and the
-- store's tests end with an audit of every chain (store_test.go, auditChains).
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_prev_id_fkey;
CREATE FUNCTION ticketd_head_written() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	missing BIGINT;
BEGIN
	SELECT h INTO missing FROM unnest(ARRAY[NEW.last_event_id, NEW.prev_event_id]) AS h
	WHERE h IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events WHERE id = h) LIMIT 1;
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'ticket %: event % reserved but never written', NEW.id, missing
			USING HINT = 'a transition moved the ticket''s head without writing its event: a ticketd bug, report it';
	END IF;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER tickets_head_written_insert AFTER INSERT ON tickets
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (NEW.last_event_id IS NOT NULL)
	EXECUTE FUNCTION ticketd_head_written();
CREATE CONSTRAINT TRIGGER tickets_head_written AFTER UPDATE OF last_event_id ON tickets
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (NEW.last_event_id IS NOT NULL AND NOT (OLD.state = 'queued' AND NEW.state = 'running'))
	EXECUTE FUNCTION ticketd_head_written();
