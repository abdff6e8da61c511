-- 004_project_role: the effective project role as one SQL function, the
-- only place the rule lives. Authorization (svc_project_resolve,
-- svc_access_recheck) and every project document the API returns read it
-- from here, so what is shown and what is enforced cannot drift apart.
--
-- Org owners and admins maintain every project; org members hold their
-- team role, or view; org viewers view whatever a team row says (the
-- org_viewer_project_cap trigger refuses more anyway); non-members: none.

CREATE FUNCTION svc_prole_effective(org_role text, team_role text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN org_role IN ('owner', 'admin') THEN 'maintainer'
        WHEN org_role = 'viewer' THEN 'viewer'
        WHEN org_role = 'member' THEN coalesce(team_role, 'viewer')
    END;
