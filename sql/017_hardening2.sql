-- 017_hardening2: what the second hardening round (issue 17) needs of the schema.

-- --- Event ids per organization ---------------------------------------------------
--
-- Event ids came from one sequence for every org, so the gap between two ids
-- on one org's stream counted the other orgs' events: how busy the other
-- tenants were, event by event. Each org now draws from a counter of its
-- own, under the same per-org lock as before (sql/006), so an org's ids
-- still grow in commit order, which the streams rely on (mod_svc_sse.c:
-- "after the last id sent" never skips or repeats). The counter's row is
-- updated in the writer's transaction, so a rolled-back event gives its id
-- back: an org's ids have no gaps at all.
--
-- Ids already given keep their values and each org's counter starts at its
-- highest, so a client's Last-Event-ID stays valid across the upgrade. Ids
-- are unique per org only: (org_id, id) is the key.

CREATE TABLE event_counters (
    org_id   text PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    last_id  bigint NOT NULL CHECK (last_id > 0)
);

INSERT INTO event_counters (org_id, last_id)
     SELECT org_id, max(id) FROM events GROUP BY org_id;

CREATE OR REPLACE FUNCTION svc_events_order() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    -- The lock orders the org's writers; the counter's row lock alone
    -- would too, but the lock is what sql/006 documents and keeps for the
    -- org's first event, which has no row yet.
    PERFORM pg_advisory_xact_lock(hashtextextended('svc_events:' || NEW.org_id, 0));
    INSERT INTO event_counters AS c (org_id, last_id) VALUES (NEW.org_id, 1)
        ON CONFLICT (org_id) DO UPDATE SET last_id = c.last_id + 1
        RETURNING c.last_id INTO NEW.id;
    NEW.created_at := now();
    RETURN NEW;
END $$;

ALTER TABLE events DROP CONSTRAINT events_pkey;
ALTER TABLE events ALTER COLUMN id DROP DEFAULT;
DROP SEQUENCE events_id_seq;
-- The key serves what events_org served: an org's events after an id.
ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (org_id, id);
DROP INDEX events_org;

-- --- Model call claims ------------------------------------------------------------
--
-- Some changes ask the org's model first and use one answer only: a request
-- leaving intake (its table of contents), a document's regeneration. Of
-- simultaneous callers each paid for a call, and all but one answer were
-- thrown away. The first caller now claims the subject before calling, in
-- a statement of its own (no transaction or connection is held across the
-- call: DESIGN.md), and gives the claim back when its change is written or
-- has failed; the others find it and answer 409. A claim whose holder died
-- ends at expires_at (SvcModelTimeout and a margin after it was taken), when
-- the next caller takes it over.

CREATE TABLE model_claims (
    subject     text PRIMARY KEY,           -- 'request:<org id>/<request id>', ...
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    token       text NOT NULL,              -- the holder's, so only it gives the claim back
    expires_at  timestamptz NOT NULL
);
