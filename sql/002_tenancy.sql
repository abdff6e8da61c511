-- 002_tenancy: projects, project teams, and invitations to orgs and projects.
--
-- As in 001, the invariants are database facts, so a bug in C cannot break
-- them: a project slug is unique in its org; a team member is a member of
-- the project's org (and leaves every team when they leave the org); an org
-- viewer holds no project role above viewer; there is at most one pending
-- invite per (org, email) and per (project, email), so two simultaneous
-- invitations of one address cannot both succeed.

CREATE TABLE projects (
    id          text PRIMARY KEY CHECK (id ~ '^prj_[A-Za-z0-9]{16,}$'),
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    slug        text NOT NULL CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 2000),
    archived    boolean NOT NULL DEFAULT false,
    seq         bigserial NOT NULL UNIQUE,
    created_by  text REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT projects_org_slug_key UNIQUE (org_id, slug),
    -- The target of the team's composite key: a team row names the org of
    -- its project, so it cannot point at a project of another org.
    CONSTRAINT projects_id_org_key UNIQUE (id, org_id)
);

-- A project's team: org members with a project role.
CREATE TABLE project_members (
    org_id      text NOT NULL,
    project_id  text NOT NULL,
    user_id     text NOT NULL,
    role        text NOT NULL CHECK (role IN ('viewer', 'developer', 'maintainer')),
    seq         bigserial NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id),
    FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
    -- Leaving the org removes the user from every team of the org.
    FOREIGN KEY (org_id, user_id) REFERENCES org_members (org_id, user_id) ON DELETE CASCADE
);
CREATE INDEX project_members_user ON project_members (org_id, user_id);

-- An org viewer is read-only everywhere in the org, so a team role above
-- viewer is refused for them, whichever of the two rows changes. Deferred,
-- so a demotion may lower the team roles and the org role in either order.
CREATE FUNCTION svc_check_viewer_cap() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM project_members pm
               JOIN org_members m ON m.org_id = pm.org_id AND m.user_id = pm.user_id
               WHERE pm.org_id = NEW.org_id AND pm.user_id = NEW.user_id
                 AND m.role = 'viewer' AND pm.role <> 'viewer') THEN
        RAISE EXCEPTION 'an organization viewer can hold only the viewer role in a project'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'org_viewer_project_cap';
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER project_members_viewer_cap
    AFTER INSERT OR UPDATE ON project_members
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION svc_check_viewer_cap();
CREATE CONSTRAINT TRIGGER org_members_viewer_cap
    AFTER UPDATE ON org_members
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION svc_check_viewer_cap();

-- Invitations by email, to an org (project_id NULL) or to a project's team.
-- An invite is pending until it is accepted, declined, revoked, or found
-- expired by a later invite of the same address (lapsed_at); an expired
-- invite that nobody replaced stays pending in the table but is refused by
-- every query (expires_at <= now()).
CREATE TABLE invites (
    id          text PRIMARY KEY CHECK (id ~ '^inv_[A-Za-z0-9]{16,}$'),
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    project_id  text,
    email       text NOT NULL CHECK (char_length(email) BETWEEN 3 AND 254),
    role        text NOT NULL,
    invited_by  text REFERENCES users (id) ON DELETE SET NULL,
    seq         bigserial NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by text REFERENCES users (id) ON DELETE SET NULL,
    declined_at timestamptz,
    revoked_at  timestamptz,
    revoked_by  text REFERENCES users (id) ON DELETE SET NULL,
    lapsed_at   timestamptz,
    FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
    -- Owner is never invited: ownership only moves by transfer.
    CONSTRAINT invites_role_check CHECK (
        (project_id IS NULL AND role IN ('admin', 'member', 'viewer'))
        OR (project_id IS NOT NULL AND role IN ('viewer', 'developer', 'maintainer'))),
    CONSTRAINT invites_expiry_check CHECK (expires_at > created_at),
    -- At most one way out of pending.
    CONSTRAINT invites_one_outcome CHECK (
        (accepted_at IS NOT NULL)::int + (declined_at IS NOT NULL)::int
        + (revoked_at IS NOT NULL)::int + (lapsed_at IS NOT NULL)::int <= 1)
);
CREATE UNIQUE INDEX invites_pending_org ON invites (org_id, lower(email))
    WHERE project_id IS NULL AND accepted_at IS NULL AND declined_at IS NULL
      AND revoked_at IS NULL AND lapsed_at IS NULL;
CREATE UNIQUE INDEX invites_pending_project ON invites (project_id, lower(email))
    WHERE project_id IS NOT NULL AND accepted_at IS NULL AND declined_at IS NULL
      AND revoked_at IS NULL AND lapsed_at IS NULL;
CREATE INDEX invites_email ON invites (lower(email), seq DESC);
CREATE INDEX invites_org ON invites (org_id, seq DESC);

-- The audit log read filters on action and actor within an org.
CREATE INDEX audit_log_org_action ON audit_log (org_id, action, id DESC);
CREATE INDEX audit_log_org_actor ON audit_log (org_id, actor_user_id, id DESC);
