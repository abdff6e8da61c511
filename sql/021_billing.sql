-- 021_billing: billing and usage (issue 23, docs/api/billing.md).
-- (017-020 are taken by branches of the same session.)
--
-- An organization's account at the payment provider (Stripe's API): its
-- customer, made once per org, and what the provider's webhook said of its
-- subscription (plan, status, period); its budget for model spend and the
-- alerts that crossed it; and the provider's webhook events, recorded once
-- by their id like the code-hosting deliveries.
--
-- Usage: model calls are in model_usage (007), which gains the project
-- they were made for; runs and deployments record theirs in usage_records,
-- one row per piece of usage, by kind:
--   'run'         a run's minutes, written by a trigger on runs when the run
--                 ends (below): quantity = minutes from started_at to
--                 finished_at;
--   'deployment'  a deployment's replica-hours over [started_at, ended_at)
--                 (quantity = hours x replicas), written by the deployments
--                 area; one row per deployment and interval start, so a
--                 repeated write of the same interval changes nothing.
-- A kind of usage added later is one more value in the CHECK below and one
-- more column of GET .../usage.

-- --- Usage -----------------------------------------------------------------

CREATE TABLE usage_records (
    id          bigserial PRIMARY KEY,
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    -- Kept when the project goes: what was used was used (no foreign key).
    project_id  text,
    kind        text NOT NULL CHECK (kind IN ('run', 'deployment')),
    -- The run or the deployment.
    subject_id  text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 64),
    -- Minutes for 'run', replica-hours for 'deployment'.
    quantity    numeric(20, 6) NOT NULL CHECK (quantity >= 0),
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT usage_records_interval CHECK (ended_at >= started_at),
    CONSTRAINT usage_records_once UNIQUE (kind, subject_id, started_at)
);
-- Usage is counted by the time it ended (a run's minutes on the day it
-- finished).
CREATE INDEX usage_records_org ON usage_records (org_id, ended_at);

-- A run's minutes, written in the transaction that ends the run (the
-- supervisor's, or a cancellation's). A run cancelled before it started
-- used nothing.
CREATE FUNCTION svc_usage_run_ended() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.finished_at IS NOT NULL AND NEW.started_at IS NOT NULL
       AND (TG_OP = 'INSERT' OR OLD.finished_at IS NULL) THEN
        INSERT INTO usage_records (org_id, project_id, kind, subject_id, quantity, started_at,
                                   ended_at)
        VALUES (NEW.org_id, NEW.project_id, 'run', NEW.id,
                round(extract(epoch FROM greatest(NEW.finished_at - NEW.started_at,
                                                  interval '0')) / 60, 6),
                NEW.started_at, greatest(NEW.finished_at, NEW.started_at))
        ON CONFLICT ON CONSTRAINT usage_records_once DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER runs_usage AFTER INSERT OR UPDATE OF status ON runs
    FOR EACH ROW EXECUTE FUNCTION svc_usage_run_ended();

-- Runs that ended before this migration.
INSERT INTO usage_records (org_id, project_id, kind, subject_id, quantity, started_at, ended_at)
SELECT org_id, project_id, 'run', id,
       round(extract(epoch FROM greatest(finished_at - started_at, interval '0')) / 60, 6),
       started_at, greatest(finished_at, started_at)
FROM runs WHERE finished_at IS NOT NULL AND started_at IS NOT NULL
ON CONFLICT ON CONSTRAINT usage_records_once DO NOTHING;

-- The project a model call was made for, from what it was about, so usage
-- can be grouped by project. Set by the database, so every caller that
-- records a call (and every area that adds one) gets it without saying so;
-- calls about nothing in a project (a provider's test) have none. Kept
-- when the project goes, as usage_records' is.
ALTER TABLE model_usage ADD COLUMN project_id text;

CREATE FUNCTION svc_usage_model_project() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.project_id IS NULL AND NEW.subject_id IS NOT NULL THEN
        CASE NEW.subject_type
        WHEN 'run' THEN
            SELECT project_id INTO NEW.project_id FROM runs WHERE id = NEW.subject_id;
        WHEN 'document' THEN
            SELECT p.project_id INTO NEW.project_id
            FROM documents d JOIN products p ON p.id = d.product_id
            WHERE d.id = NEW.subject_id;
        WHEN 'request' THEN
            SELECT project_id INTO NEW.project_id FROM requests WHERE id = NEW.subject_id;
        WHEN 'deployment' THEN
            -- Planned only once the deployments area's table exists, so this
            -- file does not depend on it (PL/pgSQL plans a statement when it
            -- first runs).
            SELECT project_id INTO NEW.project_id FROM deployments WHERE id = NEW.subject_id;
        ELSE
            NULL;
        END CASE;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER model_usage_project BEFORE INSERT ON model_usage
    FOR EACH ROW EXECUTE FUNCTION svc_usage_model_project();

UPDATE model_usage u SET project_id = r.project_id
    FROM runs r WHERE u.subject_type = 'run' AND r.id = u.subject_id;
UPDATE model_usage u SET project_id = p.project_id
    FROM documents d JOIN products p ON p.id = d.product_id
    WHERE u.subject_type = 'document' AND d.id = u.subject_id;
UPDATE model_usage u SET project_id = q.project_id
    FROM requests q WHERE u.subject_type = 'request' AND q.id = u.subject_id;

-- --- The account at the payment provider -------------------------------------

CREATE TABLE billing_accounts (
    org_id               text PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    -- The provider's customer, made once per org (POST /v1/customers with
    -- the org's id in its metadata); NULL until a payment route needs it.
    customer_id          text UNIQUE CHECK (customer_id ~ '^[A-Za-z0-9_]{1,255}$'),
    subscription_id      text CHECK (subscription_id ~ '^[A-Za-z0-9_]{1,255}$'),
    -- The plan (an SvcBillingPlan id) whose price the subscription has, and
    -- that price as the provider names it.
    plan_id              text CHECK (char_length(plan_id) BETWEEN 1 AND 64),
    price_id             text CHECK (char_length(price_id) BETWEEN 1 AND 255),
    status               text NOT NULL DEFAULT 'none'
                         CHECK (status IN ('none', 'active', 'past_due', 'canceled')),
    -- The provider's own word for it (trialing, unpaid, incomplete, ...).
    provider_status      text CHECK (char_length(provider_status) BETWEEN 1 AND 64),
    current_period_start timestamptz,
    current_period_end   timestamptz,
    -- The provider's creation time of the last subscription event applied:
    -- events come in any order, and an older one changes nothing.
    subscription_event_at timestamptz,
    -- The budget for model spend per calendar month (UTC), in whole US
    -- dollars; NULL: none. Alerts at these percentages; hard: new runs,
    -- regenerations and build tasks are refused once it is spent.
    budget_usd           bigint CHECK (budget_usd BETWEEN 1 AND 100000000),
    budget_alerts        integer[] NOT NULL DEFAULT '{80,90,100}'
                         CHECK (cardinality(budget_alerts) <= 10
                                AND 1 <= ALL (budget_alerts) AND 100 >= ALL (budget_alerts)),
    budget_hard          boolean NOT NULL DEFAULT false,
    -- Up to when model spend was last compared with the budget (the
    -- supervisors' sweep looks at orgs with calls after it).
    budget_checked_at    timestamptz,
    -- The provider's upcoming-invoice preview, cached a few minutes.
    next_invoice         jsonb CHECK (next_invoice IS NULL OR jsonb_typeof(next_invoice) = 'object'),
    next_invoice_at      timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT billing_accounts_subscription_has_customer
        CHECK (subscription_id IS NULL OR customer_id IS NOT NULL)
);
CREATE INDEX billing_accounts_budget ON billing_accounts (org_id) WHERE budget_usd IS NOT NULL;

-- One alert per level per month: the first crossing writes it (with its
-- audit entry and billing.budget event), later ones find it there.
CREATE TABLE billing_budget_alerts (
    org_id     text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    month      date NOT NULL CHECK (extract(day FROM month) = 1),
    level      integer NOT NULL CHECK (level BETWEEN 1 AND 100),
    budget_usd bigint NOT NULL,
    spend_usd  numeric(20, 6) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, month, level)
);

-- --- The provider's webhook ----------------------------------------------------

-- Every event accepted at POST /webhooks/billing, once by its id: the first
-- delivery is recorded with its effect in one transaction; a redelivery
-- finds the row and changes nothing. org_id is the org it was about, when
-- one was found.
CREATE TABLE billing_webhook_events (
    seq         bigserial PRIMARY KEY,
    event_id    text NOT NULL UNIQUE CHECK (event_id ~ '^[A-Za-z0-9_]{1,255}$'),
    type        text NOT NULL CHECK (char_length(type) BETWEEN 1 AND 100),
    org_id      text REFERENCES orgs (id) ON DELETE SET NULL,
    livemode    boolean NOT NULL DEFAULT false,
    -- The event's own creation time (its `created`).
    created     timestamptz,
    received_at timestamptz NOT NULL DEFAULT now(),
    payload     jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object')
);
