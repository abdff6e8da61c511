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
--
-- Lock order: a change to a user locks the user's row, then their token
-- rows. Nothing may lock token rows and then update a user in one
-- transaction, or the two orders could deadlock.

-- Both tables are hot: wait a little for their locks, never forever.
SET LOCAL lock_timeout = '5s';

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

-- The bump above reaches the tokens that exist when the change is made. A
-- token inserted while the change is still uncommitted would be missed: its
-- insert's foreign-key check takes a KEY SHARE lock on the user, which an
-- UPDATE of these columns does not wait for, so the token could be read
-- (and cached) with the old identity and revision 0, and keep both after
-- the change commits. A SHARE lock on the user makes an insert wait for an
-- identity change in flight, and such a change wait for the insert; either
-- way the two are ordered.
CREATE FUNCTION svc_tokens_hold_user() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM users WHERE id = NEW.user_id FOR SHARE;
    RETURN NEW;
END
$$;

CREATE TRIGGER api_tokens_hold_user
    BEFORE INSERT ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION svc_tokens_hold_user();
