-- 027_telemetry_dedup: a telemetry batch the agent sends again is stored
-- once (docs/api/deployments.md, "Telemetry"; docs/decisions.md).
-- Idempotent: every statement may run again.
--
-- svc-agent numbers every figure it takes (a sample or a probe) from 0 in
-- the boot it chose when it started, and sends its figures in that order;
-- a batch the service committed but whose answer the agent never saw comes
-- again with the next one. Per (target, boot) the service keeps the highest
-- number it took, in the transaction of the figures: a figure at or below
-- it was taken already and is skipped. One row per agent start, touched
-- once per batch, instead of two more columns and a unique index on every
-- sample and probe.
--
-- A row not touched for 48 hours goes (svc_telemetry_sweep, hourly): any
-- figure at or below its number is older than the 24 hours a figure may
-- be, and refused for that anyway. A removed target reports nothing more,
-- so its rows go the same way; a deleted org takes its targets' with it.
CREATE TABLE IF NOT EXISTS deploy_telemetry_boots (
    target_id text NOT NULL REFERENCES deploy_targets (id) ON DELETE CASCADE,
    boot      text NOT NULL CHECK (boot ~ '^[0-9a-f]{32}$'),
    seq       bigint NOT NULL DEFAULT -1 CHECK (seq >= -1),
    seen_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (target_id, boot)
);
CREATE INDEX IF NOT EXISTS deploy_telemetry_boots_seen ON deploy_telemetry_boots (seen_at);
