-- 009_vcs_app: the code-hosting App (GitHub App): installation records,
-- the flows in flight (setup wizard and install), the webhook deliveries,
-- and the repository linked to a project.
--
-- (Planned as 009 once the other branches' migrations are merged; the
-- number only orders the files.)

-- One row per installation of the App that an org linked. Kept for audit
-- whatever happens to it: unlinking sets status 'unlinked' (the App stays
-- installed at the provider); the provider's installation.deleted and
-- installation.suspend events set 'suspended' (deleted_at tells the two
-- apart), installation.unsuspend sets 'active' again.
CREATE TABLE vcs_installations (
    installation_id      bigint PRIMARY KEY CHECK (installation_id > 0),
    seq                  bigserial NOT NULL UNIQUE,
    org_id               text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    account_login        text NOT NULL CHECK (char_length(account_login) BETWEEN 1 AND 100),
    account_type         text NOT NULL
                         CHECK (account_type IN ('User', 'Organization', 'Enterprise')),
    repository_selection text NOT NULL CHECK (repository_selection IN ('all', 'selected')),
    -- What the provider's events said about the selection: [{id, full_name,
    -- private}], complete only while repository_selection is 'selected'.
    repositories         jsonb NOT NULL DEFAULT '[]'
                         CHECK (jsonb_typeof(repositories) = 'array'),
    status               text NOT NULL CHECK (status IN ('active', 'suspended', 'unlinked')),
    deleted_at           timestamptz,
    linked_by            text REFERENCES users (id) ON DELETE SET NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    -- What project links refer to: an installation of the same org.
    UNIQUE (installation_id, org_id)
);
CREATE INDEX vcs_installations_org ON vcs_installations (org_id, seq DESC);

-- Flows in flight: the setup wizard's (bound to the founder's session) and
-- the install flow's (bound to the user and the org). Only keyed hashes of
-- the state are kept; a row is consumed by the one return that presents it.
CREATE TABLE vcs_states (
    state_hash  bytea PRIMARY KEY CHECK (octet_length(state_hash) = 32),
    purpose     text NOT NULL CHECK (purpose IN ('manifest', 'install')),
    user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    session_id  text REFERENCES sessions (id) ON DELETE CASCADE,
    org_id      text REFERENCES orgs (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL CHECK (expires_at > created_at),
    CHECK ((purpose = 'manifest') = (session_id IS NOT NULL)),
    CHECK ((purpose = 'install') = (org_id IS NOT NULL))
);
CREATE INDEX vcs_states_expires ON vcs_states (expires_at);

-- Every accepted delivery of the provider's webhook, stored in the
-- transaction that applies its effect: the unique delivery id makes a
-- replay a no-op, and a delivery whose processing failed leaves no row, so
-- the provider's redelivery can succeed.
CREATE TABLE vcs_webhook_deliveries (
    seq              bigserial PRIMARY KEY,
    delivery_id      text NOT NULL UNIQUE CHECK (char_length(delivery_id) BETWEEN 1 AND 100),
    event            text NOT NULL CHECK (char_length(event) BETWEEN 1 AND 100),
    action           text CHECK (char_length(action) BETWEEN 1 AND 100),
    installation_id  bigint,
    payload          jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    received_at      timestamptz NOT NULL DEFAULT now()
);

-- The repository a project works on: one per project, reached through one
-- of the org's installations (the composite keys keep the project, the
-- installation and the link in one org).
CREATE TABLE vcs_project_repos (
    project_id       text PRIMARY KEY,
    org_id           text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    installation_id  bigint NOT NULL,
    full_name        text NOT NULL CHECK (full_name ~ '^[A-Za-z0-9-]{1,100}/[A-Za-z0-9._-]{1,100}$'),
    repo_id          bigint NOT NULL CHECK (repo_id > 0),
    private          boolean NOT NULL,
    default_branch   text NOT NULL CHECK (char_length(default_branch) BETWEEN 1 AND 255),
    linked_by        text REFERENCES users (id) ON DELETE SET NULL,
    linked_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (installation_id, org_id)
        REFERENCES vcs_installations (installation_id, org_id)
);
CREATE INDEX vcs_project_repos_installation ON vcs_project_repos (installation_id);
