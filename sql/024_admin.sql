-- 024_admin: the operator's surface (issue 24, docs/api/admin.md).
-- (022 and 023 are taken by branches of the same session.)
--
-- Users and organizations gain an ordering key for the operator's lists
-- (seq, like every other listed table's) and a suspension: when, and the
-- operator's reason. What a suspension does is the application's (the
-- token and session checks, the tenant routes, share links); the run
-- queue's claim skips a suspended org's runs (svc_run_store.c).
--
-- The platform audit log records what operators did, hash-chained like
-- the organizations' logs (001) but a chain of its own, in a table of its
-- own: an org's owner reads the org's chain, never the operators'.
--
-- Written so that running it twice changes nothing (IF NOT EXISTS, OR
-- REPLACE), like the migrations before it.

ALTER TABLE users ADD COLUMN IF NOT EXISTS seq bigserial;
ALTER TABLE users ADD COLUMN IF NOT EXISTS suspended_at timestamptz;
ALTER TABLE users ADD COLUMN IF NOT EXISTS suspended_reason text
    CHECK (char_length(suspended_reason) <= 500);
CREATE UNIQUE INDEX IF NOT EXISTS users_seq_key ON users (seq);

ALTER TABLE orgs ADD COLUMN IF NOT EXISTS seq bigserial;
ALTER TABLE orgs ADD COLUMN IF NOT EXISTS suspended_at timestamptz;
ALTER TABLE orgs ADD COLUMN IF NOT EXISTS suspended_reason text
    CHECK (char_length(suspended_reason) <= 500);
CREATE UNIQUE INDEX IF NOT EXISTS orgs_seq_key ON orgs (seq);

-- --- The platform audit log ---------------------------------------------------

CREATE TABLE IF NOT EXISTS platform_audit_log (
    id              bigserial PRIMARY KEY,
    actor_kind      text NOT NULL CHECK (actor_kind IN ('user', 'operator')),
    -- A founder through the API ('user'), or svcctl on the host ('operator',
    -- no user).
    actor_user_id   text,
    actor_token_id  text,
    action          text NOT NULL CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$'),
    target_type     text NOT NULL CHECK (target_type IN ('user', 'org', 'vcs_delivery',
                                                         'billing_event')),
    target_id       text NOT NULL,
    data            jsonb NOT NULL DEFAULT '{}',
    ip              text,
    user_agent      text,
    request_id      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    prev_hash       bytea,
    hash            bytea NOT NULL
);

CREATE OR REPLACE FUNCTION svc_platform_audit_digest(prev bytea, e platform_audit_log)
    RETURNS bytea LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN sha256(coalesce(prev, '\x'::bytea) || convert_to(json_build_array(
        e.id, e.actor_kind, e.actor_user_id, e.actor_token_id, e.action, e.target_type,
        e.target_id, e.data, e.ip, e.user_agent, e.request_id,
        (extract(epoch FROM e.created_at) * 1000000)::bigint)::text, 'UTF8'));

CREATE OR REPLACE FUNCTION svc_platform_audit_chain() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    -- One writer at a time; the id is drawn under the lock, so ids follow
    -- the chain and verification walks by id (as svc_audit_chain does).
    PERFORM pg_advisory_xact_lock(hashtextextended('svc_platform_audit', 0));
    NEW.id := nextval(pg_get_serial_sequence('platform_audit_log', 'id'));
    NEW.created_at := now();
    SELECT hash INTO NEW.prev_hash FROM platform_audit_log ORDER BY id DESC LIMIT 1;
    NEW.hash := svc_platform_audit_digest(NEW.prev_hash, NEW);
    RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS platform_audit_chain ON platform_audit_log;
CREATE TRIGGER platform_audit_chain BEFORE INSERT ON platform_audit_log
    FOR EACH ROW EXECUTE FUNCTION svc_platform_audit_chain();
DROP TRIGGER IF EXISTS platform_audit_no_update ON platform_audit_log;
CREATE TRIGGER platform_audit_no_update BEFORE UPDATE OR DELETE ON platform_audit_log
    FOR EACH ROW EXECUTE FUNCTION svc_audit_refuse();
DROP TRIGGER IF EXISTS platform_audit_no_truncate ON platform_audit_log;
CREATE TRIGGER platform_audit_no_truncate BEFORE TRUNCATE ON platform_audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION svc_audit_refuse();

-- The id of the first entry whose link or digest does not hold; NULL when
-- the whole chain verifies.
CREATE OR REPLACE FUNCTION svc_platform_audit_verify() RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    e platform_audit_log;
    prev bytea := NULL;
BEGIN
    FOR e IN SELECT * FROM platform_audit_log ORDER BY id LOOP
        IF e.prev_hash IS DISTINCT FROM prev OR e.hash <> svc_platform_audit_digest(prev, e) THEN
            RETURN e.id;
        END IF;
        prev := e.hash;
    END LOOP;
    RETURN NULL;
END $$;

-- --- A suspension reaches every token at once -----------------------------------
--
-- A token's per-request check reads the token's row alone, with the
-- revision of its user's identity (005). A suspension or its lifting is a
-- change of identity too: it bumps the revision, so a principal cached
-- before it fails that check on the next request, on every node, and is
-- looked up afresh (and refused).
DROP TRIGGER IF EXISTS users_identity_changed ON users;
CREATE TRIGGER users_identity_changed
    AFTER UPDATE OF email, name, founder, suspended_at ON users
    FOR EACH ROW
    WHEN (OLD.email IS DISTINCT FROM NEW.email
          OR OLD.name IS DISTINCT FROM NEW.name
          OR OLD.founder IS DISTINCT FROM NEW.founder
          OR OLD.suspended_at IS DISTINCT FROM NEW.suspended_at)
    EXECUTE FUNCTION svc_users_identity_changed();

-- --- Deliveries that failed, and their redelivery ---------------------------------
--
-- A code-hosting delivery whose processing failed used to leave no trace
-- (its transaction rolled back whole), so only the provider could send it
-- again. It is now kept, as failed, with its attempts and the last error:
-- an operator redelivers it (POST /api/admin/vcs/deliveries/:id/redeliver),
-- and the provider's own redelivery of the same delivery id is processed
-- again too. Deliveries recorded before this migration were processed.
ALTER TABLE vcs_webhook_deliveries ADD COLUMN IF NOT EXISTS status text NOT NULL
    DEFAULT 'processed' CHECK (status IN ('processed', 'failed'));
ALTER TABLE vcs_webhook_deliveries ADD COLUMN IF NOT EXISTS attempts integer NOT NULL
    DEFAULT 1 CHECK (attempts >= 1);
ALTER TABLE vcs_webhook_deliveries ADD COLUMN IF NOT EXISTS last_error text
    CHECK (char_length(last_error) <= 1000);
ALTER TABLE vcs_webhook_deliveries ADD COLUMN IF NOT EXISTS last_attempt_at timestamptz;
