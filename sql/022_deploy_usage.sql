-- 022_deploy_usage: deployments record their replica-hours (issue 23;
-- docs/api/billing.md, "Deployment hours"; docs/decisions.md).
--
-- A deployment's replica-time is counted while its workload runs as the
-- agent reported it: from the move to `running` until the next move that
-- changes what runs (scale, stop, start, teardown, separate, an approved
-- plan) or a failure. The open piece of that time lives in the row:
-- usage_from (when it began) and usage_replicas (how many replicas it
-- counts). Each move that ends it writes it to usage_records (kind
-- 'deployment', sql/021) in the move's own transaction, cut at every full
-- UTC hour, and the planners' sweep cuts a piece still open at each full
-- hour the same way (svc_deploy_store.c). So a crash of httpd or
-- PostgreSQL between two moves loses nothing (the start is in the row) and
-- a write repeated after one doubles nothing (usage_records_once: one row
-- per deployment and start).

ALTER TABLE deployments ADD COLUMN IF NOT EXISTS usage_from timestamptz;
ALTER TABLE deployments ADD COLUMN IF NOT EXISTS usage_replicas integer
    CHECK (usage_replicas BETWEEN 0 AND 10);
ALTER TABLE deployments DROP CONSTRAINT IF EXISTS deployments_usage_open;
ALTER TABLE deployments ADD CONSTRAINT deployments_usage_open
    CHECK ((usage_from IS NULL) = (usage_replicas IS NULL));

-- The sweep looks for open pieces begun before the last full hour.
CREATE INDEX IF NOT EXISTS deployments_usage ON deployments (usage_from)
    WHERE usage_from IS NOT NULL;

-- Deployments running when this migration runs count from their last move
-- (to running: updated_at is that move's time) with the replicas they have.
UPDATE deployments SET usage_from = updated_at, usage_replicas = replicas
    WHERE status = 'running' AND usage_from IS NULL;
