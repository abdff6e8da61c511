-- 003_signin: sign-in through the code-hosting provider's OAuth app.
--
-- A user is matched by the provider's stable numeric user id, never by
-- email (emails change hands; ids do not). Users created by svcctl have no
-- provider id until their first sign-in links them (see docs/decisions.md).

ALTER TABLE users
    ADD COLUMN vcs_user_id bigint CHECK (vcs_user_id > 0),
    ADD COLUMN vcs_login   text CHECK (char_length(vcs_login) BETWEEN 1 AND 100);
CREATE UNIQUE INDEX users_vcs_user_id_key ON users (vcs_user_id);

-- Sign-ins in flight, between /auth/login and /auth/callback. Nothing here
-- is usable by a reader of a dump: the state and the browser-binding nonce
-- are kept as keyed hashes, and the PKCE verifier is not stored at all (it
-- is derived from the state with a server key when the callback comes).
-- A row is consumed by the one callback that presents its state.
CREATE TABLE oauth_states (
    state_hash  bytea PRIMARY KEY CHECK (octet_length(state_hash) = 32),
    nonce_hash  bytea NOT NULL CHECK (octet_length(nonce_hash) = 32),
    return_to   text CHECK (char_length(return_to) BETWEEN 1 AND 2048),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL CHECK (expires_at > created_at)
);
CREATE INDEX oauth_states_expires ON oauth_states (expires_at);
