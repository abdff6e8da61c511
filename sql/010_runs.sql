-- 010_runs: factory runs, their queue and leases, logs, artifacts, and the
-- idempotency keys of run creation (docs/api/runs.md).
--
-- A run is queued by the API and claimed by a run supervisor (one per httpd,
-- any node): claiming sets status 'running' and a lease (lease_owner,
-- lease_expires_at) that the supervisor renews every few seconds. A run whose
-- lease ran out (its node died) is failed with error code 'lost' by whichever
-- supervisor notices first. The constraints below keep the columns of a run
-- consistent with its status whatever the C code does.
--
-- NOTIFY svc_runs wakes the supervisors: 'queued:<id>' when a run is queued,
-- 'cancel:<id>' when the cancellation of a running run is asked for.

CREATE TABLE runs (
    id               text PRIMARY KEY CHECK (id ~ '^run_[A-Za-z0-9]{16,}$'),
    org_id           text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    project_id       text NOT NULL,
    seq              bigserial NOT NULL UNIQUE,
    status           text NOT NULL DEFAULT 'queued'
                     CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    instructions     text NOT NULL CHECK (char_length(instructions) BETWEEN 1 AND 65536),
    request_id       text CHECK (char_length(request_id) BETWEEN 1 AND 64),
    task_id          text CHECK (char_length(task_id) BETWEEN 1 AND 64),
    created_by       text REFERENCES users (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    -- SvcRunTimeout of the server the run was created through.
    timeout_seconds  integer NOT NULL CHECK (timeout_seconds BETWEEN 1 AND 604800),
    cancel_requested boolean NOT NULL DEFAULT false,
    result           jsonb,
    error_code       text CHECK (error_code ~ '^[a-z_]{1,64}$'),
    error_message    text CHECK (char_length(error_message) <= 2000),
    lease_owner      text,
    lease_expires_at timestamptz,
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- Bytes of log stored so far, and whether the rest was dropped.
    log_bytes        bigint NOT NULL DEFAULT 0 CHECK (log_bytes >= 0),
    log_dropped      boolean NOT NULL DEFAULT false,
    artifact_bytes   bigint CHECK (artifact_bytes >= 0),
    FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
    CONSTRAINT runs_result_iff_succeeded CHECK ((status = 'succeeded') = (result IS NOT NULL)),
    CONSTRAINT runs_error_iff_failed CHECK ((status = 'failed') = (error_code IS NOT NULL)),
    CONSTRAINT runs_finished_iff_final
        CHECK ((status IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CONSTRAINT runs_lease_iff_running
        CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT runs_started_unless_queued
        CHECK ((status = 'queued') = (started_at IS NULL) OR status = 'cancelled')
);
CREATE INDEX runs_project ON runs (project_id, seq);
CREATE INDEX runs_queue ON runs (seq) WHERE status = 'queued';
CREATE INDEX runs_leases ON runs (lease_expires_at) WHERE status = 'running';

-- The log, in the chunks the supervisor flushed: byte_offset is where the
-- chunk starts in the run's whole log (UTF-8, lines ending in \n).
CREATE TABLE run_logs (
    run_id      text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    byte_offset bigint NOT NULL CHECK (byte_offset >= 0),
    data        text NOT NULL CHECK (octet_length(data) > 0),
    PRIMARY KEY (run_id, byte_offset)
);

-- The workspace repository of a succeeded run as a git bundle, in parts
-- (so no single value is large), served by every node.
CREATE TABLE run_artifacts (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    part   integer NOT NULL CHECK (part >= 0),
    data   bytea NOT NULL,
    PRIMARY KEY (run_id, part)
);

-- Idempotency-Key of POST .../runs: the same key within 24 hours gives the
-- same run, if the request was the same (fingerprint: the caller, the
-- project and the body); rows older than 24 hours no longer count and are
-- swept by the supervisors.
CREATE TABLE run_idempotency (
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key         text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
    fingerprint bytea NOT NULL CHECK (octet_length(fingerprint) = 32),
    run_id      text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, key)
);
CREATE INDEX run_idempotency_created ON run_idempotency (created_at);

CREATE FUNCTION svc_runs_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'queued' AND (TG_OP = 'INSERT' OR OLD.status <> 'queued') THEN
        PERFORM pg_notify('svc_runs', 'queued:' || NEW.id);
    ELSIF TG_OP = 'UPDATE' AND NEW.cancel_requested AND NOT OLD.cancel_requested THEN
        PERFORM pg_notify('svc_runs', 'cancel:' || NEW.id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER runs_notify AFTER INSERT OR UPDATE OF status, cancel_requested ON runs
    FOR EACH ROW EXECUTE FUNCTION svc_runs_notify();
