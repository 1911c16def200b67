-- v10 (issue 14, the queue at 1.5x goqite): a ticket's events are found through a chain
-- (tickets.last_event_id -> events.prev_id -> ...) instead of the events_ticket index.
-- Every commit appends each page it dirtied to the WAL, and the index cost each
-- transition a page of its own; the chain's head lives in the ticket row that the
-- transition rewrites anyway. events is rebuilt without its foreign key: without an index
-- on ticket_id, the key's parent-side checks would plan a scan of events into every
-- statement that writes tickets. events_chain does the key's job (an event names an
-- existing ticket) and refuses an event whose prev_id is not the ticket's last event, so
-- the chain can neither skip nor fork.
ALTER TABLE tickets ADD COLUMN last_event_id INTEGER;
UPDATE tickets SET last_event_id = (SELECT max(e.id) FROM events e WHERE e.ticket_id = tickets.id);

CREATE TABLE events_v10 (
	id         INTEGER PRIMARY KEY,
	ticket_id  INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	kind       TEXT    NOT NULL,
	from_state TEXT    NOT NULL DEFAULT '',
	to_state   TEXT    NOT NULL DEFAULT '',
	attempt    INTEGER NOT NULL DEFAULT 0,
	actor      TEXT    NOT NULL DEFAULT '',
	reason     TEXT    NOT NULL DEFAULT '',
	prev_id    INTEGER
);
INSERT INTO events_v10 (id, ticket_id, at, kind, from_state, to_state, attempt, actor, reason, prev_id)
	SELECT id, ticket_id, at, kind, from_state, to_state, attempt, actor, reason,
		(SELECT max(p.id) FROM events p WHERE p.ticket_id = events.ticket_id AND p.id < events.id)
	FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_v10 RENAME TO events;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_chain AFTER INSERT ON events
BEGIN
	UPDATE tickets SET last_event_id = NEW.id WHERE id = NEW.ticket_id AND last_event_id IS NEW.prev_id;
	SELECT RAISE(ABORT, 'event: its ticket must exist and prev_id must be the ticket''s last event')
		WHERE changes() = 0;
END;
