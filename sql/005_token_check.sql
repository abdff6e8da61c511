-- 005_token_check: the per-request token check reads one row of one table.
--
-- A PAT request whose principal is cached checks, in the same round trip as
-- its first read, that the token still stands and that the cached user is
-- still right (email, name and the founder flag all feed authorization or
-- what /api/me shows). Joining users on every request for that costs a
-- second relation in every check. Instead each token carries the revision
-- of its user's identity: a change to any of those columns bumps it on all
-- of the user's tokens, in the same transaction, so the single-row check
-- sees the change as soon as it commits (docs/performance.md).

ALTER TABLE api_tokens ADD COLUMN user_rev bigint NOT NULL DEFAULT 0;

CREATE FUNCTION svc_users_identity_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    UPDATE api_tokens SET user_rev = user_rev + 1 WHERE user_id = NEW.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER users_identity_changed
    AFTER UPDATE OF email, name, founder ON users
    FOR EACH ROW
    WHEN (OLD.email IS DISTINCT FROM NEW.email
          OR OLD.name IS DISTINCT FROM NEW.name
          OR OLD.founder IS DISTINCT FROM NEW.founder)
    EXECUTE FUNCTION svc_users_identity_changed();
