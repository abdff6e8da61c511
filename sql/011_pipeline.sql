-- 011_pipeline: pipeline requests (stage by stage, with their history and
-- the idempotency keys of their creation), build tasks and the runs that
-- carried them out, improvements, and attachments stored in chunks
-- (docs/api/pipeline.md, docs/api/attachments.md).
--
-- As elsewhere, the invariants are the database's: a request's status fits
-- its stage (done exactly in stage done, paused only in build), it has its
-- product from planning on and its integration approval exactly when done;
-- an improvement is decided once, an approved one names its request and a
-- rejected one its reason; an attachment is bound to exactly one thing of
-- its own org. Every row names its org, and composite foreign keys keep a
-- child in its parent's org.

-- --- Requests -----------------------------------------------------------------

CREATE TABLE requests (
    id                      text PRIMARY KEY CHECK (id ~ '^rqs_[A-Za-z0-9]{16,}$'),
    org_id                  text NOT NULL,
    project_id              text NOT NULL,
    kind                    text NOT NULL CHECK (kind IN ('build', 'improvement')),
    title                   text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    body                    text NOT NULL CHECK (char_length(body) <= 65536),
    stage                   text NOT NULL DEFAULT 'intake'
                            CHECK (stage IN ('intake', 'planning', 'review', 'build',
                                             'integration', 'done')),
    status                  text NOT NULL DEFAULT 'active'
                            CHECK (status IN ('active', 'paused', 'cancelled', 'done')),
    product_id              text,
    seq                     bigserial NOT NULL UNIQUE,
    created_by              text REFERENCES users (id) ON DELETE SET NULL,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    integration_approved_by text REFERENCES users (id) ON DELETE SET NULL,
    integration_approved_at timestamptz,
    FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (product_id, org_id) REFERENCES products (id, org_id),
    CONSTRAINT requests_id_org_key UNIQUE (id, org_id),
    CONSTRAINT requests_done CHECK ((status = 'done') = (stage = 'done')),
    CONSTRAINT requests_paused_in_build CHECK (status <> 'paused' OR stage = 'build'),
    CONSTRAINT requests_product CHECK (stage = 'intake' OR product_id IS NOT NULL),
    CONSTRAINT requests_approved CHECK ((stage = 'done') = (integration_approved_at IS NOT NULL))
);
CREATE INDEX requests_org ON requests (org_id, seq DESC);
CREATE INDEX requests_project ON requests (project_id, seq DESC);

-- Every change of a request's stage or status: when, by whom (NULL: the
-- service itself, when the last build task's run succeeded), and how.
CREATE TABLE request_stages (
    id         bigserial PRIMARY KEY,
    request_id text NOT NULL REFERENCES requests (id) ON DELETE CASCADE,
    stage      text NOT NULL,
    status     text NOT NULL,
    via        text NOT NULL CHECK (via IN ('create', 'advance', 'advance_to_build', 'auto',
                                            'pause', 'resume', 'cancel', 'approve')),
    entered_by text REFERENCES users (id) ON DELETE SET NULL,
    entered_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX request_stages_request ON request_stages (request_id, id);

-- Idempotency-Key of POST .../requests, as run_idempotency (008) for runs.
CREATE TABLE request_idempotency (
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key         text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
    fingerprint bytea NOT NULL CHECK (octet_length(fingerprint) = 32),
    request_id  text NOT NULL REFERENCES requests (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, key)
);
CREATE INDEX request_idempotency_created ON request_idempotency (created_at);

-- --- Build tasks ----------------------------------------------------------------

-- One per section document of the request's product, made when the request
-- enters build, from the section's approved version. `status` and `run_id`
-- follow the task's latest run (the trigger below); 'pending' until a run
-- is started.
CREATE TABLE build_tasks (
    id           text PRIMARY KEY CHECK (id ~ '^tsk_[A-Za-z0-9]{16,}$'),
    org_id       text NOT NULL,
    request_id   text NOT NULL,
    document_id  text NOT NULL,
    version_id   text NOT NULL,
    position     integer NOT NULL CHECK (position > 0),
    title        text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    instructions text NOT NULL CHECK (char_length(instructions) BETWEEN 1 AND 65536),
    -- The approved section's own size, which the cost estimate's output
    -- side is reckoned from.
    section_bytes integer NOT NULL CHECK (section_bytes >= 0),
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'queued', 'running', 'succeeded', 'failed',
                                   'cancelled')),
    run_id       text REFERENCES runs (id),
    error_code   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (request_id, org_id) REFERENCES requests (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (document_id, org_id) REFERENCES documents (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (version_id, document_id) REFERENCES doc_versions (id, document_id),
    CONSTRAINT build_tasks_document_key UNIQUE (request_id, document_id),
    CONSTRAINT build_tasks_position_key UNIQUE (request_id, position),
    CONSTRAINT build_tasks_run CHECK ((status = 'pending') = (run_id IS NULL))
);
CREATE INDEX build_tasks_request ON build_tasks (request_id, position);

-- Every run a task started, newest last, with its status as the trigger
-- below keeps it.
CREATE TABLE build_task_runs (
    run_id      text PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    task_id     text NOT NULL REFERENCES build_tasks (id) ON DELETE CASCADE,
    org_id      text NOT NULL,
    status      text NOT NULL,
    error_code  text,
    created_by  text REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX build_task_runs_task ON build_task_runs (task_id, created_at);

-- A run carrying out a build task changes status (the supervisor claims,
-- finishes, reaps or requeues it; someone cancels it): in the same
-- transaction, the task follows, with its request.task event and audit
-- entry, and when the last task of a request in build has succeeded, the
-- request moves on to integration (request.stage). The runs area knows
-- nothing of this: whatever changes a run's status, the pipeline sees it,
-- exactly once, in the transaction that made the change
-- (docs/decisions.md). Audit entries come before events, as in every
-- writer: the audit chain's lock, then the event lock.
CREATE FUNCTION svc_build_task_follow_run() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    t build_tasks;
    r requests;
    moved boolean := false;
BEGIN
    UPDATE build_task_runs SET status = NEW.status, error_code = NEW.error_code,
           finished_at = NEW.finished_at
     WHERE run_id = NEW.id AND org_id = NEW.org_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    UPDATE build_tasks SET status = NEW.status, error_code = NEW.error_code, updated_at = now()
     WHERE id = NEW.task_id AND run_id = NEW.id AND org_id = NEW.org_id
     RETURNING * INTO t;
    IF NOT FOUND THEN
        -- An older run of the task: its history changed, the task did not.
        RETURN NULL;
    END IF;
    IF NEW.status = 'succeeded' THEN
        SELECT * INTO r FROM requests WHERE id = t.request_id FOR UPDATE;
        IF r.stage = 'build' AND r.status IN ('active', 'paused') AND NOT EXISTS (
               SELECT 1 FROM build_tasks WHERE request_id = r.id AND status <> 'succeeded') THEN
            UPDATE requests SET stage = 'integration', status = 'active', updated_at = now()
             WHERE id = r.id;
            INSERT INTO request_stages (request_id, stage, status, via)
                 VALUES (r.id, 'integration', 'active', 'auto');
            moved := true;
        END IF;
    END IF;
    INSERT INTO audit_log (org_id, actor_kind, action, target_type, target_id, data)
         VALUES (t.org_id, 'system', 'request.task_changed', 'build_task', t.id,
                 jsonb_build_object('request_id', t.request_id, 'status', t.status,
                                    'run_id', t.run_id, 'error_code', t.error_code));
    IF moved THEN
        INSERT INTO audit_log (org_id, actor_kind, action, target_type, target_id, data)
             VALUES (r.org_id, 'system', 'request.stage_changed', 'request', r.id,
                     jsonb_build_object('from', 'build', 'to', 'integration', 'via', 'auto',
                                        'status', 'active'));
    END IF;
    INSERT INTO events (org_id, project_id, kind, data)
         VALUES (t.org_id, NEW.project_id, 'request.task',
                 jsonb_build_object('request_id', t.request_id, 'task_id', t.id,
                                    'status', t.status, 'run_id', t.run_id));
    IF moved THEN
        INSERT INTO events (org_id, project_id, kind, data)
             VALUES (r.org_id, r.project_id, 'request.stage',
                     jsonb_build_object('request_id', r.id, 'stage', 'integration',
                                        'status', 'active'));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER runs_build_task AFTER UPDATE OF status ON runs
    FOR EACH ROW WHEN (NEW.task_id IS NOT NULL AND NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION svc_build_task_follow_run();

-- --- Improvements -----------------------------------------------------------------

-- Bug reports and feature asks of a project, filed by members (source
-- 'user') or by the service for a deployment incident ('incident', with
-- source_ref naming what it is about: at most one open improvement per
-- incident source).
CREATE TABLE improvements (
    id          text PRIMARY KEY CHECK (id ~ '^imp_[A-Za-z0-9]{16,}$'),
    org_id      text NOT NULL,
    project_id  text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('bug', 'feature')),
    title       text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    body        text NOT NULL CHECK (char_length(body) <= 65536),
    source      text NOT NULL CHECK (source IN ('user', 'incident')),
    source_ref  text CHECK (char_length(source_ref) BETWEEN 1 AND 200),
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'approved', 'rejected')),
    reason      text CHECK (char_length(reason) BETWEEN 1 AND 10000),
    request_id  text,
    seq         bigserial NOT NULL UNIQUE,
    created_by  text REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    decided_by  text REFERENCES users (id) ON DELETE SET NULL,
    decided_at  timestamptz,
    FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (request_id, org_id) REFERENCES requests (id, org_id),
    CONSTRAINT improvements_id_org_key UNIQUE (id, org_id),
    CONSTRAINT improvements_decided CHECK ((status = 'open') = (decided_at IS NULL)),
    CONSTRAINT improvements_request CHECK ((status = 'approved') = (request_id IS NOT NULL)),
    CONSTRAINT improvements_reason CHECK ((status = 'rejected') = (reason IS NOT NULL)),
    CONSTRAINT improvements_source_ref CHECK ((source = 'incident') = (source_ref IS NOT NULL))
);
CREATE INDEX improvements_project ON improvements (project_id, seq DESC);
CREATE UNIQUE INDEX improvements_request ON improvements (request_id) WHERE request_id IS NOT NULL;
CREATE UNIQUE INDEX improvements_open_incident ON improvements (project_id, source_ref)
    WHERE source = 'incident' AND status = 'open';

-- The model drafts a request's table of contents when it enters planning.
ALTER TABLE model_usage DROP CONSTRAINT model_usage_purpose_check;
ALTER TABLE model_usage ADD CONSTRAINT model_usage_purpose_check
    CHECK (purpose IN ('document.regenerate', 'document.patch', 'provider.test', 'run',
                       'request.plan'));
CREATE INDEX model_usage_subject ON model_usage (subject_type, subject_id)
    WHERE subject_id IS NOT NULL;

-- --- Attachments --------------------------------------------------------------------

-- A file bound to exactly one request, document or improvement of its org.
-- Its bytes are attachment_chunks rows of at most 256 KiB, numbered from 0,
-- written in the transaction that makes the attachment row; content_type
-- is the type stored for downloads (from an allow-list, else
-- application/octet-stream).
CREATE TABLE attachments (
    id             text PRIMARY KEY CHECK (id ~ '^att_[A-Za-z0-9]{16,}$'),
    org_id         text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    request_id     text,
    document_id    text,
    improvement_id text,
    filename       text NOT NULL CHECK (octet_length(filename) BETWEEN 1 AND 255),
    content_type   text NOT NULL,
    size           bigint NOT NULL CHECK (size >= 0),
    sha256         bytea NOT NULL CHECK (octet_length(sha256) = 32),
    chunks         integer NOT NULL CHECK (chunks >= 0),
    seq            bigserial NOT NULL UNIQUE,
    created_by     text REFERENCES users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (request_id, org_id) REFERENCES requests (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (document_id, org_id) REFERENCES documents (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (improvement_id, org_id) REFERENCES improvements (id, org_id) ON DELETE CASCADE,
    CONSTRAINT attachments_one_target
        CHECK (num_nonnulls(request_id, document_id, improvement_id) = 1)
);
CREATE INDEX attachments_org ON attachments (org_id, seq DESC);
CREATE INDEX attachments_request ON attachments (request_id, seq DESC) WHERE request_id IS NOT NULL;
CREATE INDEX attachments_document ON attachments (document_id, seq DESC)
    WHERE document_id IS NOT NULL;
CREATE INDEX attachments_improvement ON attachments (improvement_id, seq DESC)
    WHERE improvement_id IS NOT NULL;

CREATE TABLE attachment_chunks (
    attachment_id text NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
    n             integer NOT NULL CHECK (n >= 0),
    data          bytea NOT NULL CHECK (octet_length(data) BETWEEN 1 AND 262144),
    PRIMARY KEY (attachment_id, n)
);
-- Uploads are mostly compressed already (images, PDF, zip): store the
-- chunks out of line without trying to compress them again.
ALTER TABLE attachment_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
