-- v25 (issue 37, claim latency behind River): a claim checks nothing it cannot do without.
-- Measured on PostgreSQL 15 behind 100k finished tickets, claims alternating with River's
-- fetch: the events' foreign key on their ticket cost a claim 5-7% (about 40 µs of 600),
-- the probe of predicted_files about 2%.
--
-- events.ticket_id loses its foreign key. Every statement that writes an event takes the
-- ticket id from the ticket row it updates or reads in that statement, and a ticket row is
-- never deleted (the trigger below), so the key's check, a lookup and a row lock on the
-- ticket per event, refused nothing the store can write. events.prev_id keeps its key: it is
-- what refuses an event over a reservation that was never written.
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_ticket_id_fkey;
CREATE FUNCTION ticketd_tickets_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'tickets are never deleted: their history refers to them'; END $$;
CREATE TRIGGER tickets_no_delete BEFORE DELETE ON tickets
	FOR EACH ROW EXECUTE FUNCTION ticketd_tickets_kept();

-- tickets.predicted says the ticket has rows in predicted_files, kept by the triggers below
-- on every write of that table (the store's, and ticketctl migrate's copy): a claim of a
-- ticket without predicted files reads it from the row it leases instead of probing
-- predicted_files for every claim.
ALTER TABLE tickets ADD COLUMN predicted BOOLEAN NOT NULL DEFAULT false;
UPDATE tickets SET predicted = true WHERE id IN (SELECT ticket_id FROM predicted_files);
CREATE FUNCTION ticketd_predicted_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE tickets t SET predicted = true WHERE t.id IN (SELECT ticket_id FROM added) AND NOT t.predicted;
	RETURN NULL;
END $$;
CREATE TRIGGER predicted_files_added AFTER INSERT ON predicted_files
	REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION ticketd_predicted_added();
CREATE FUNCTION ticketd_predicted_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE tickets t SET predicted = EXISTS (SELECT 1 FROM predicted_files pf WHERE pf.ticket_id = t.id)
	WHERE t.id IN (SELECT ticket_id FROM removed) AND t.predicted;
	RETURN NULL;
END $$;
CREATE TRIGGER predicted_files_removed AFTER DELETE ON predicted_files
	REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION ticketd_predicted_removed();
CREATE FUNCTION ticketd_predicted_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'predicted_files rows are replaced (deleted and inserted), never updated'; END $$;
CREATE TRIGGER predicted_files_no_update BEFORE UPDATE ON predicted_files
	FOR EACH ROW EXECUTE FUNCTION ticketd_predicted_fixed();
