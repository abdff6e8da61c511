-- 001_foundation: users, organizations and memberships, personal access
-- tokens, sessions, the hash-chained audit log and rate-limit windows.
--
-- Invariants live here, not only in C: slugs and enums are CHECKed, an org
-- has exactly one owner (unique partial index + deferred constraint
-- trigger), and the audit log refuses UPDATE, DELETE and TRUNCATE.

-- RFC 3339 UTC with seconds, the one time format of the API.
CREATE FUNCTION svc_ts(t timestamptz) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');

CREATE TABLE users (
    id          text PRIMARY KEY CHECK (id ~ '^usr_[A-Za-z0-9]{16,}$'),
    email       text NOT NULL CHECK (char_length(email) BETWEEN 3 AND 254),
    name        text NOT NULL DEFAULT '' CHECK (char_length(name) <= 200),
    founder     boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE orgs (
    id          text PRIMARY KEY CHECK (id ~ '^org_[A-Za-z0-9]{16,}$'),
    slug        text NOT NULL UNIQUE
                CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE org_members (
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role        text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    seq         bigserial NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX org_members_user ON org_members (user_id);
-- At most one owner per org...
CREATE UNIQUE INDEX org_members_one_owner ON org_members (org_id) WHERE role = 'owner';

-- ...and at least one, checked when the transaction commits, so an ownership
-- swap can demote the old owner first and promote the new one after (the
-- unique index above is not deferrable, so promoting first fails).
CREATE FUNCTION svc_check_one_owner() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    oid text;
BEGIN
    IF TG_TABLE_NAME = 'orgs' THEN
        oid := NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        oid := OLD.org_id;
    ELSE
        oid := NEW.org_id;
    END IF;
    IF EXISTS (SELECT 1 FROM orgs WHERE id = oid)
       AND (SELECT count(*) FROM org_members WHERE org_id = oid AND role = 'owner') <> 1 THEN
        RAISE EXCEPTION 'organization % must have exactly one owner', oid
            USING ERRCODE = 'check_violation', CONSTRAINT = 'org_exactly_one_owner';
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER org_members_exactly_one_owner
    AFTER INSERT OR UPDATE OR DELETE ON org_members
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION svc_check_one_owner();
CREATE CONSTRAINT TRIGGER orgs_exactly_one_owner
    AFTER INSERT ON orgs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION svc_check_one_owner();

-- Personal access tokens. The secret is kept only as a keyed BLAKE2b hash
-- (random secrets need no slow KDF); the display prefix is for listings.
CREATE TABLE api_tokens (
    id              text PRIMARY KEY CHECK (id ~ '^tok_[A-Za-z0-9]{16,}$'),
    seq             bigserial NOT NULL UNIQUE,
    user_id         text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id          text REFERENCES orgs (id) ON DELETE CASCADE,
    name            text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    scope           text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    secret_hash     bytea NOT NULL UNIQUE CHECK (octet_length(secret_hash) = 32),
    display_prefix  text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz CHECK (expires_at IS NULL OR expires_at <= created_at + interval '365 days'),
    last_used_at    timestamptz,
    last_used_ip    text,
    revoked_at      timestamptz
);
CREATE INDEX api_tokens_user ON api_tokens (user_id, seq DESC);

-- Server-side sessions behind the service_session cookie: the JWT carries
-- the id, and a session is only good while its row says so.
CREATE TABLE sessions (
    id            text PRIMARY KEY CHECK (id ~ '^ses_[A-Za-z0-9]{16,}$'),
    seq           bigserial NOT NULL UNIQUE,
    user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    revoked_at    timestamptz,
    last_seen_at  timestamptz,
    ip            text,
    user_agent    text
);
CREATE INDEX sessions_user ON sessions (user_id, seq DESC);

-- The audit log: append-only, each entry chained to the previous entry of
-- the same org (org_id NULL is the user-level chain), so tampering shows.
CREATE TABLE audit_log (
    id              bigserial PRIMARY KEY,
    org_id          text,
    actor_kind      text NOT NULL CHECK (actor_kind IN ('user', 'operator', 'system', 'provider')),
    actor_user_id   text,
    actor_token_id  text,
    action          text NOT NULL CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$'),
    target_type     text,
    target_id       text,
    data            jsonb NOT NULL DEFAULT '{}',
    ip              text,
    user_agent      text,
    request_id      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    prev_hash       bytea,
    hash            bytea NOT NULL
);
CREATE INDEX audit_log_org ON audit_log (org_id, id DESC);

-- The digest of one entry: every column but the hash itself, in a fixed
-- order and a fixed text form (jsonb's output is canonical; the time is
-- taken as epoch microseconds so the session time zone cannot change it).
CREATE FUNCTION svc_audit_digest(prev bytea, e audit_log) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN sha256(coalesce(prev, '\x'::bytea) || convert_to(json_build_array(
        e.id, e.org_id, e.actor_kind, e.actor_user_id, e.actor_token_id, e.action,
        e.target_type, e.target_id, e.data, e.ip, e.user_agent, e.request_id,
        (extract(epoch FROM e.created_at) * 1000000)::bigint)::text, 'UTF8'));

CREATE FUNCTION svc_audit_chain() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    -- One writer per chain at a time; the id is drawn under the lock so ids
    -- follow chain order and verification can walk by id.
    PERFORM pg_advisory_xact_lock(hashtextextended('svc_audit:' || coalesce(NEW.org_id, ''), 0));
    NEW.id := nextval(pg_get_serial_sequence('audit_log', 'id'));
    NEW.created_at := now();
    SELECT hash INTO NEW.prev_hash FROM audit_log
        WHERE org_id IS NOT DISTINCT FROM NEW.org_id ORDER BY id DESC LIMIT 1;
    NEW.hash := svc_audit_digest(NEW.prev_hash, NEW);
    RETURN NEW;
END $$;

CREATE FUNCTION svc_audit_refuse() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER audit_log_chain BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION svc_audit_chain();
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION svc_audit_refuse();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION svc_audit_refuse();

-- Walks one chain and returns the id of the first entry whose link or
-- digest does not hold, or NULL when the whole chain verifies.
CREATE FUNCTION svc_audit_verify(chain_org text) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    e audit_log;
    prev bytea := NULL;
BEGIN
    FOR e IN SELECT * FROM audit_log WHERE org_id IS NOT DISTINCT FROM chain_org ORDER BY id LOOP
        IF e.prev_hash IS DISTINCT FROM prev OR e.hash <> svc_audit_digest(prev, e) THEN
            RETURN e.id;
        END IF;
        prev := e.hash;
    END LOOP;
    RETURN NULL;
END $$;

-- Fixed-window counters shared by every node.
CREATE TABLE rate_limits (
    key           text NOT NULL,
    window_start  bigint NOT NULL,
    count         integer NOT NULL,
    PRIMARY KEY (key, window_start)
);
