-- 006_events: the durable event log behind the live streams (SSE).
--
-- Every event is a row first; a stream replays what follows the client's
-- Last-Event-ID, then follows new rows as they commit. For that to lose and
-- duplicate nothing, the ids of one org's events must follow the order in
-- which they commit: a BEFORE INSERT trigger takes a per-org lock held to
-- the end of the transaction and only then draws the id (as the audit chain
-- does), so a transaction that drew a lower id has always committed before
-- one with a higher id becomes visible. Writers emit events last in their
-- transactions, so the lock is held only for the commit.
--
-- An AFTER INSERT trigger sends NOTIFY svc_events with 'org_id:id'; the
-- notification is delivered at commit, and wakes the streams of every
-- httpd child (and every node) through one LISTEN connection each.

CREATE TABLE events (
    id          bigserial PRIMARY KEY,
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    project_id  text,
    run_id      text,
    kind        text NOT NULL CHECK (kind ~ '^[a-z_]+(\.[a-z_]+)+$'),
    data        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX events_org ON events (org_id, id);
CREATE INDEX events_run ON events (run_id, id) WHERE run_id IS NOT NULL;

CREATE FUNCTION svc_events_order() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('svc_events:' || NEW.org_id, 0));
    NEW.id := nextval(pg_get_serial_sequence('events', 'id'));
    NEW.created_at := now();
    RETURN NEW;
END $$;

CREATE FUNCTION svc_events_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('svc_events', NEW.org_id || ':' || NEW.id);
    RETURN NULL;
END $$;

CREATE TRIGGER events_order BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION svc_events_order();
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION svc_events_notify();
