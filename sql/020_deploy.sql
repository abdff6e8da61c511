-- 020_deploy: deploy targets, deployments and the agents' work
-- (docs/api/deployments.md). 017-019 are left to branches of the same
-- session.
--
-- A deploy target is a machine of the customer's on which our agent
-- (svc-agent) runs; it authenticates with the target's enrollment key, of
-- which only a keyed hash is kept. A deployment puts a succeeded run's
-- artifact on a target: the planner proposes a plan, an admin approves it,
-- and the agent carries it out. The agent takes its work from the event log
-- (events.target_id: events addressed to one target, which only its agent's
-- stream carries), and reports each piece of work done (deploy_work).

-- Events addressed to one deploy target: its agent's work. Users' streams
-- leave them out (svc_events_after).
ALTER TABLE events ADD COLUMN target_id text;
CREATE INDEX events_target ON events (target_id, id) WHERE target_id IS NOT NULL;

-- An agent acting for its target is an actor of its own in the audit log.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_kind_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_kind_check
    CHECK (actor_kind IN ('user', 'operator', 'system', 'provider', 'agent'));

CREATE TABLE deploy_targets (
    id             text PRIMARY KEY CHECK (id ~ '^dtg_[A-Za-z0-9]{16,}$'),
    org_id         text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    seq            bigserial NOT NULL UNIQUE,
    name           text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    -- Keyed BLAKE2b of the enrollment key (svc_dek_...); NULL once removed.
    key_hash       bytea UNIQUE CHECK (octet_length(key_hash) = 32),
    key_hint       text NOT NULL CHECK (char_length(key_hint) BETWEEN 1 AND 40),
    key_created_at timestamptz NOT NULL DEFAULT now(),
    -- What the agent said of itself, and when it was last heard.
    agent_version  text CHECK (char_length(agent_version) <= 100),
    agent_hostname text CHECK (char_length(agent_hostname) <= 255),
    last_seen_at   timestamptz,
    created_by     text REFERENCES users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    removed_at     timestamptz,
    CONSTRAINT deploy_targets_key_unless_removed CHECK ((removed_at IS NULL) = (key_hash IS NOT NULL)),
    UNIQUE (id, org_id)
);
CREATE UNIQUE INDEX deploy_targets_name ON deploy_targets (org_id, name) WHERE removed_at IS NULL;
CREATE INDEX deploy_targets_org ON deploy_targets (org_id, seq) WHERE removed_at IS NULL;

CREATE TABLE deployments (
    id            text PRIMARY KEY CHECK (id ~ '^dep_[A-Za-z0-9]{16,}$'),
    org_id        text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    seq           bigserial NOT NULL UNIQUE,
    project_id    text NOT NULL,
    target_id     text NOT NULL,
    run_id        text NOT NULL REFERENCES runs (id),
    status        text NOT NULL DEFAULT 'planning'
                  CHECK (status IN ('planning', 'planned', 'plan_failed', 'deploying', 'running',
                                    'failed', 'stopping', 'stopped', 'tearing_down', 'torn_down',
                                    'separating', 'separated')),
    -- The plan proposed last (its version is plan_version), and the plan the
    -- workload runs on (approved; a replan leaves it running until the new
    -- one is approved).
    plan          jsonb,
    plan_version  integer NOT NULL DEFAULT 0 CHECK (plan_version >= 0),
    applied_plan  jsonb,
    -- Replicas the workload should have now (0: stopped).
    replicas      integer NOT NULL DEFAULT 0 CHECK (replicas BETWEEN 0 AND 10),
    error_code    text CHECK (error_code ~ '^[a-z_]{1,64}$'),
    error_message text CHECK (char_length(error_message) <= 2000),
    -- What the agent last reported of the workload: its replicas (index,
    -- port, pid, healthy, restarts), or where it was handed over to.
    workload      jsonb,
    workload_at   timestamptz,
    -- The planner's claim (one planner plans a deployment at a time).
    planner       text,
    planner_until timestamptz,
    plan_attempts integer NOT NULL DEFAULT 0,
    created_by    text REFERENCES users (id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    approved_by   text REFERENCES users (id) ON DELETE SET NULL,
    approved_at   timestamptz,
    FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (target_id, org_id) REFERENCES deploy_targets (id, org_id),
    CONSTRAINT deployments_error_iff_failed
        CHECK ((status IN ('plan_failed', 'failed')) = (error_code IS NOT NULL)),
    CONSTRAINT deployments_plan_once_planned
        CHECK (status IN ('planning', 'plan_failed', 'torn_down') OR plan IS NOT NULL
               OR applied_plan IS NOT NULL),
    CONSTRAINT deployments_applied_once_deployed
        CHECK (status NOT IN ('deploying', 'running', 'stopping', 'stopped', 'separating',
                              'separated') OR applied_plan IS NOT NULL)
);
CREATE INDEX deployments_org ON deployments (org_id, seq);
CREATE INDEX deployments_target ON deployments (target_id)
    WHERE status NOT IN ('torn_down', 'separated');
CREATE INDEX deployments_planning ON deployments (seq) WHERE status = 'planning';

-- A piece of work for an agent: what to do with a deployment, once. Its
-- event (kind agent.work, addressed to the target) carries it to the agent;
-- the agent reports it done (or failed) by its id, and a second report
-- changes nothing. A newer piece of work for the same deployment supersedes
-- an older one still open: the older one's report is recorded but moves the
-- deployment no more.
CREATE TABLE deploy_work (
    id            text PRIMARY KEY CHECK (id ~ '^wrk_[A-Za-z0-9]{16,}$'),
    org_id        text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    seq           bigserial NOT NULL UNIQUE,
    target_id     text NOT NULL,
    deployment_id text NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    action        text NOT NULL
                  CHECK (action IN ('deploy', 'stop', 'start', 'scale', 'teardown', 'separate')),
    spec          jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    outcome       text CHECK (outcome IN ('done', 'failed', 'superseded')),
    outcome_at    timestamptz,
    error_code    text CHECK (error_code ~ '^[a-z_]{1,64}$'),
    error_message text CHECK (char_length(error_message) <= 2000),
    FOREIGN KEY (target_id, org_id) REFERENCES deploy_targets (id, org_id),
    CONSTRAINT deploy_work_outcome_time CHECK ((outcome IS NULL) = (outcome_at IS NULL))
);
CREATE INDEX deploy_work_deployment ON deploy_work (deployment_id, seq);

-- The planners (svc_deploy_planner, in each node's supervisor process)
-- hear of a deployment to plan at once.
CREATE FUNCTION svc_deploy_plan_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('svc_deploy', NEW.id);
    RETURN NULL;
END $$;

CREATE TRIGGER deployments_plan_notify AFTER INSERT OR UPDATE OF status ON deployments
    FOR EACH ROW WHEN (NEW.status = 'planning') EXECUTE FUNCTION svc_deploy_plan_notify();

-- The planner's model calls are recorded as usage, as the other calls are.
ALTER TABLE model_usage DROP CONSTRAINT model_usage_purpose_check;
ALTER TABLE model_usage ADD CONSTRAINT model_usage_purpose_check
    CHECK (purpose IN ('document.regenerate', 'document.patch', 'provider.test', 'run',
                       'request.plan', 'deployment.plan'));
