-- 023_telemetry: what the deploy agents report of their workloads (issue
-- 22, docs/api/deployments.md, "Telemetry"): log uploads asked for by a
-- member, resource samples, health probes, and the incident bookkeeping of
-- each deployment. 022 and 024 are taken by branches of the same session.
-- Idempotent: every statement may run again.
--
-- The agent is the only source of these figures. Times are the service's:
-- the agent says how long ago it took a sample or probe ("ago", seconds),
-- never its own clock, which may be wrong.

-- A member asks for fresh logs; the agent uploads the last lines of each
-- replica's output against the request's id (once: a second upload of the
-- same request changes nothing). The text is stored as shown: each line
-- prefixed by its replica, valid UTF-8 (invalid bytes replaced), the
-- target's key redacted, at most 256 KiB per replica.
CREATE TABLE IF NOT EXISTS deploy_log_requests (
    id            text PRIMARY KEY CHECK (id ~ '^lgr_[A-Za-z0-9]{16,}$'),
    org_id        text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    seq           bigserial NOT NULL UNIQUE,
    deployment_id text NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    target_id     text NOT NULL,
    lines         integer NOT NULL CHECK (lines BETWEEN 1 AND 5000),
    requested_by  text REFERENCES users (id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    uploaded_at   timestamptz,
    body          text CHECK (octet_length(body) <= 4 * 1024 * 1024),
    truncated     boolean NOT NULL DEFAULT false,
    CONSTRAINT deploy_log_requests_uploaded CHECK ((uploaded_at IS NULL) = (body IS NULL))
);
CREATE INDEX IF NOT EXISTS deploy_log_requests_dep
    ON deploy_log_requests (deployment_id, uploaded_at DESC) WHERE uploaded_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS deploy_log_requests_created ON deploy_log_requests (created_at);

-- A replica's resources at a moment, sampled by the agent from /proc every
-- 15 seconds: CPU seconds used since it started (user + system, of its
-- processes), resident memory, open file descriptors, and how often the
-- agent restarted it. Swept after 30 days.
CREATE TABLE IF NOT EXISTS deploy_metrics (
    deployment_id text NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    replica       smallint NOT NULL CHECK (replica BETWEEN 0 AND 9),
    at            timestamptz NOT NULL,
    cpu_seconds   double precision NOT NULL CHECK (cpu_seconds >= 0),
    rss_bytes     bigint NOT NULL CHECK (rss_bytes >= 0),
    fds           integer NOT NULL CHECK (fds >= 0),
    restarts      integer NOT NULL CHECK (restarts >= 0),
    PRIMARY KEY (deployment_id, replica, at)
);
CREATE INDEX IF NOT EXISTS deploy_metrics_at ON deploy_metrics (at);
-- A deployment's newest figures and a window of them (uptime, metrics, the
-- deployment's document).
CREATE INDEX IF NOT EXISTS deploy_metrics_dep_at ON deploy_metrics (deployment_id, at);

-- A health probe of a replica (GET of its plan's health_path), every 10
-- seconds: up (2xx or 3xx) or down, and how long the answer took (NULL:
-- none came). Swept after 30 days.
CREATE TABLE IF NOT EXISTS deploy_probes (
    deployment_id text NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    replica       smallint NOT NULL CHECK (replica BETWEEN 0 AND 9),
    at            timestamptz NOT NULL,
    ok            boolean NOT NULL,
    latency_ms    integer CHECK (latency_ms BETWEEN 0 AND 600000),
    PRIMARY KEY (deployment_id, replica, at)
);
CREATE INDEX IF NOT EXISTS deploy_probes_at ON deploy_probes (at);
CREATE INDEX IF NOT EXISTS deploy_probes_dep_at ON deploy_probes (deployment_id, at);

-- A deployment's incidents (the improvements the service filed for it):
-- the one open now and how often it failed since, when one was last filed
-- (at most one an hour), and whether it recovered.
CREATE TABLE IF NOT EXISTS deploy_incidents (
    deployment_id   text PRIMARY KEY REFERENCES deployments (id) ON DELETE CASCADE,
    org_id          text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    improvement_id  text,
    reason          text CHECK (reason IN ('probes_failed', 'crash_loop')),
    failures        integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    last_failure_at timestamptz,
    filed_at        timestamptz,
    recovered_at    timestamptz
);

-- The service acts for itself (an incident filed) as 'system' in the audit
-- log (001): nothing to add.
