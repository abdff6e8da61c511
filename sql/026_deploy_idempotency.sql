-- 026: Idempotency-Key on deployment creation (POST .../deployments), as
-- runs (010) and requests (011) have it: a client that retries a timed-out
-- creation gets the deployment the first attempt made, not a second one.
--
-- The same key within 24 hours gives the same deployment if the request was
-- the same (fingerprint: the caller, the org and the body); a key older than
-- that is free again. svc_idempotency_sweep() removes the expired keys of
-- every creation that takes one (the run supervisor calls it each minute);
-- before it, the request keys of 011 were never removed.
CREATE TABLE IF NOT EXISTS deployment_idempotency (
    org_id        text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key           text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
    fingerprint   bytea NOT NULL CHECK (octet_length(fingerprint) = 32),
    deployment_id text NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, key)
);
CREATE INDEX IF NOT EXISTS deployment_idempotency_created
    ON deployment_idempotency (created_at);

CREATE OR REPLACE FUNCTION svc_idempotency_sweep() RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    total bigint := 0;
BEGIN
    DELETE FROM run_idempotency WHERE created_at < now() - interval '24 hours';
    GET DIAGNOSTICS n = ROW_COUNT;
    total := total + n;
    DELETE FROM request_idempotency WHERE created_at < now() - interval '24 hours';
    GET DIAGNOSTICS n = ROW_COUNT;
    total := total + n;
    DELETE FROM deployment_idempotency WHERE created_at < now() - interval '24 hours';
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN total + n;
END
$$;
