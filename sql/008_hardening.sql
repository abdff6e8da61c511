-- 008_hardening: what an outside probe of the running service found
-- (issue 14). Each part says which finding it answers.

-- rate_limits is written by every rate-limited request: wait a little for
-- its lock, never forever.
SET LOCAL lock_timeout = '5s';

-- --- The audit chains, checked in one pass (item 2) -------------------------
--
-- Verifying every chain ran svc_audit_verify once per chain, each walking
-- the chain with `org_id IS NOT DISTINCT FROM`, which no index serves (a
-- scan of the whole table per chain); worse, the planner pushed the
-- "broken" filter below the DISTINCT, so it ran once per audit row: 13,210
-- rows took over 12 minutes. Now, in one ordered pass, each entry is
-- checked twice: sealed (its hash is the digest of its own prev_hash and
-- columns, computed exactly once) and linked (its prev_hash is the hash of
-- the entry before it in its chain). Both together are what the walk of
-- 001 checked. A filter on org_id is pushed into the view (it is the
-- window's partition), so checking one chain reads that chain only.

CREATE VIEW audit_chain_links AS
    SELECT l.id, l.org_id,
           l.prev_hash IS DISTINCT FROM lag(l.hash) OVER w OR NOT l.sealed AS broken
    FROM (SELECT a.id, a.org_id, a.hash, a.prev_hash,
                 a.hash = svc_audit_digest(a.prev_hash, a) AS sealed
          FROM audit_log a) l
    WINDOW w AS (PARTITION BY l.org_id ORDER BY l.id);

-- One chain (org_id NULL: the user-level chain): the first entry whose link
-- or digest does not hold (NULL when it verifies), and how many entries.
-- Two statements, so each is served by the (org_id, id) index.
CREATE FUNCTION svc_audit_check(chain_org text, OUT first_broken_id bigint, OUT entries bigint)
    LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF chain_org IS NULL THEN
        SELECT min(l.id) FILTER (WHERE l.broken), count(*) INTO first_broken_id, entries
            FROM audit_chain_links l WHERE l.org_id IS NULL;
    ELSE
        SELECT min(l.id) FILTER (WHERE l.broken), count(*) INTO first_broken_id, entries
            FROM audit_chain_links l WHERE l.org_id = chain_org;
    END IF;
END $$;

-- Every chain, in one pass over the table.
CREATE FUNCTION svc_audit_check_all()
    RETURNS TABLE (org_id text, first_broken_id bigint, entries bigint)
    LANGUAGE sql STABLE AS $$
    SELECT l.org_id, min(l.id) FILTER (WHERE l.broken), count(*)
    FROM audit_chain_links l GROUP BY l.org_id
$$;

-- The walk of 001, kept for whoever calls it, now linear in its chain.
CREATE OR REPLACE FUNCTION svc_audit_verify(chain_org text) RETURNS bigint
    LANGUAGE sql STABLE
    RETURN (SELECT c.first_broken_id FROM svc_audit_check(chain_org) c);

-- Appending looked up the previous entry with the same unindexable
-- comparison: for a chain whose last entry is old, a backward scan over
-- every newer entry of every other chain, on each insert.
CREATE OR REPLACE FUNCTION svc_audit_chain() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    -- One writer per chain at a time; the id is drawn under the lock so ids
    -- follow chain order and verification can walk by id.
    PERFORM pg_advisory_xact_lock(hashtextextended('svc_audit:' || coalesce(NEW.org_id, ''), 0));
    NEW.id := nextval(pg_get_serial_sequence('audit_log', 'id'));
    NEW.created_at := now();
    IF NEW.org_id IS NULL THEN
        SELECT hash INTO NEW.prev_hash FROM audit_log
            WHERE org_id IS NULL ORDER BY id DESC LIMIT 1;
    ELSE
        SELECT hash INTO NEW.prev_hash FROM audit_log
            WHERE org_id = NEW.org_id ORDER BY id DESC LIMIT 1;
    END IF;
    NEW.hash := svc_audit_digest(NEW.prev_hash, NEW);
    RETURN NEW;
END $$;

-- --- Rate-limit windows are swept, whatever their key (item 6) --------------
--
-- Old windows were deleted only by the next hit of the same key, so the
-- windows of one-off subjects (unauthenticated clients with many addresses)
-- stayed forever. Each row now says when its window ends, and whoever opens
-- a window deletes a bounded batch of expired ones (svc_ratelimit.c).
-- Existing rows are given the longest period a class may have (one day).
ALTER TABLE rate_limits ADD COLUMN window_end bigint;
UPDATE rate_limits SET window_end = window_start + 86400;
ALTER TABLE rate_limits ALTER COLUMN window_end SET NOT NULL;
CREATE INDEX rate_limits_window_end ON rate_limits (window_end);

-- --- Linking a provider identity to an account by email (decision) ----------
--
-- Sign-in linked a provider identity to an existing account with the same
-- verified email, so whoever got a provider account with that address took
-- over an account an operator had made. Now an account is linked by email
-- only when an operator allowed it (svcctl user add --allow-email-link, or
-- svcctl user allow-email-link) and it has no provider identity yet; the
-- link uses the permission up.
ALTER TABLE users ADD COLUMN link_by_email boolean NOT NULL DEFAULT false;
