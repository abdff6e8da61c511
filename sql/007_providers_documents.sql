-- 007_providers_documents: bring-your-own model providers and their usage,
-- products with planning documents (versions, decisions, AI-proposed
-- patches, reviewers' comments), and public share links.
--
-- As before, the invariants are the database's: at most one default
-- provider per org; at most one table of contents per product; a
-- document's current and approved versions are versions of that document;
-- a version's body never changes once written, and its status only leaves
-- draft once; a patch is decided once; every row names its org, and the
-- composite foreign keys keep a child in its parent's org.

-- --- Model providers -------------------------------------------------------

CREATE TABLE llm_providers (
    id          text PRIMARY KEY CHECK (id ~ '^llm_[A-Za-z0-9]{16,}$'),
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    kind        text NOT NULL CHECK (kind IN ('openai', 'anthropic')),
    base_url    text NOT NULL CHECK (char_length(base_url) BETWEEN 8 AND 2000),
    model       text NOT NULL CHECK (char_length(model) BETWEEN 1 AND 200),
    -- The API key, sealed (libsodium secretbox: nonce || MAC || ciphertext)
    -- under a key derived from the server secret; never stored in clear.
    key_box     bytea NOT NULL CHECK (octet_length(key_box) > 40),
    key_hint    text NOT NULL CHECK (char_length(key_hint) <= 4),
    is_default  boolean NOT NULL DEFAULT false,
    seq         bigserial NOT NULL UNIQUE,
    created_by  text REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT llm_providers_org_name_key UNIQUE (org_id, name)
);
CREATE UNIQUE INDEX llm_providers_one_default ON llm_providers (org_id) WHERE is_default;
CREATE INDEX llm_providers_org ON llm_providers (org_id, seq DESC);

-- Every call to a model, successful or not: what billing reads.
CREATE TABLE model_usage (
    id            bigserial PRIMARY KEY,
    org_id        text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    provider_id   text REFERENCES llm_providers (id) ON DELETE SET NULL,
    provider_kind text NOT NULL,
    model         text NOT NULL,
    input_tokens  bigint NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
    output_tokens bigint NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
    duration_ms   integer NOT NULL CHECK (duration_ms >= 0),
    user_id       text REFERENCES users (id) ON DELETE SET NULL,
    purpose       text NOT NULL
                  CHECK (purpose IN ('document.regenerate', 'document.patch', 'provider.test', 'run')),
    subject_type  text,
    subject_id    text,
    status        text NOT NULL CHECK (status IN ('ok', 'error')),
    error_code    text,
    http_status   integer,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX model_usage_org ON model_usage (org_id, created_at);

-- --- Products and documents ---------------------------------------------------

CREATE TABLE products (
    id          text PRIMARY KEY CHECK (id ~ '^prd_[A-Za-z0-9]{16,}$'),
    org_id      text NOT NULL,
    project_id  text NOT NULL,
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    seq         bigserial NOT NULL UNIQUE,
    created_by  text REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE,
    CONSTRAINT products_id_org_key UNIQUE (id, org_id)
);
CREATE INDEX products_project ON products (project_id, seq DESC);

CREATE TABLE documents (
    id                  text PRIMARY KEY CHECK (id ~ '^doc_[A-Za-z0-9]{16,}$'),
    org_id              text NOT NULL,
    product_id          text NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('toc', 'section')),
    title               text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    current_version_id  text NOT NULL,
    approved_version_id text,
    seq                 bigserial NOT NULL UNIQUE,
    created_by          text REFERENCES users (id) ON DELETE SET NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (product_id, org_id) REFERENCES products (id, org_id) ON DELETE CASCADE,
    CONSTRAINT documents_id_org_key UNIQUE (id, org_id)
);
CREATE UNIQUE INDEX documents_one_toc ON documents (product_id) WHERE kind = 'toc';
CREATE INDEX documents_product ON documents (product_id, seq DESC);

-- A version's body is stored once, here, and never changes; lists of
-- versions do not read it (PostgreSQL keeps large bodies out of line).
CREATE TABLE doc_versions (
    id               text PRIMARY KEY CHECK (id ~ '^ver_[A-Za-z0-9]{16,}$'),
    org_id           text NOT NULL,
    document_id      text NOT NULL,
    number           integer NOT NULL CHECK (number > 0),
    status           text NOT NULL DEFAULT 'draft'
                     CHECK (status IN ('draft', 'approved', 'changes_requested')),
    body             text NOT NULL CHECK (octet_length(body) <= 8388608),
    bytes            integer NOT NULL,
    author_kind      text NOT NULL CHECK (author_kind IN ('user', 'ai')),
    author_user_id   text REFERENCES users (id) ON DELETE SET NULL,
    -- For versions written by a model: which one.
    author_model     text,
    source           text NOT NULL CHECK (source IN ('create', 'edit', 'regenerate', 'patch')),
    base_version_id  text,
    decided_by       text REFERENCES users (id) ON DELETE SET NULL,
    decided_at       timestamptz,
    decision_comment text CHECK (char_length(decision_comment) <= 10000),
    seq              bigserial NOT NULL UNIQUE,
    created_at       timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (document_id, org_id) REFERENCES documents (id, org_id) ON DELETE CASCADE,
    CONSTRAINT doc_versions_number_key UNIQUE (document_id, number),
    CONSTRAINT doc_versions_id_doc_key UNIQUE (id, document_id),
    CONSTRAINT doc_versions_decided CHECK ((status = 'draft') = (decided_at IS NULL)),
    CONSTRAINT doc_versions_bytes CHECK (bytes = octet_length(body))
);
CREATE INDEX doc_versions_document ON doc_versions (document_id, seq DESC);

-- The current and approved versions are versions of the same document.
-- Deferred: a document and its first version are inserted in one
-- transaction, the document first.
ALTER TABLE documents
    ADD CONSTRAINT documents_current_version_fkey
        FOREIGN KEY (current_version_id, id) REFERENCES doc_versions (id, document_id)
        DEFERRABLE INITIALLY DEFERRED,
    ADD CONSTRAINT documents_approved_version_fkey
        FOREIGN KEY (approved_version_id, id) REFERENCES doc_versions (id, document_id)
        DEFERRABLE INITIALLY DEFERRED;

CREATE FUNCTION svc_doc_versions_guard() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body IS DISTINCT FROM OLD.body OR NEW.number <> OLD.number
       OR NEW.document_id <> OLD.document_id OR NEW.org_id <> OLD.org_id
       OR NEW.author_kind <> OLD.author_kind THEN
        RAISE EXCEPTION 'a document version never changes once written'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'doc_versions_immutable';
    END IF;
    IF OLD.status <> 'draft' AND NEW.status IS DISTINCT FROM OLD.status THEN
        RAISE EXCEPTION 'a document version is decided only once'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'doc_versions_decided_once';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER doc_versions_guard BEFORE UPDATE ON doc_versions
    FOR EACH ROW EXECUTE FUNCTION svc_doc_versions_guard();

-- AI-proposed changes: the unified diff from the base version's body to
-- the model's proposal, and a digest of the proposal, so accepting can
-- prove it rebuilt exactly that text.
CREATE TABLE doc_patches (
    id                text PRIMARY KEY CHECK (id ~ '^pch_[A-Za-z0-9]{16,}$'),
    org_id            text NOT NULL,
    document_id       text NOT NULL,
    base_version_id   text NOT NULL,
    status            text NOT NULL DEFAULT 'proposed'
                      CHECK (status IN ('proposed', 'accepted', 'rejected')),
    diff              text NOT NULL,
    summary           text NOT NULL CHECK (char_length(summary) <= 2000),
    instructions      text CHECK (char_length(instructions) <= 10000),
    result_sha256     bytea NOT NULL CHECK (octet_length(result_sha256) = 32),
    model             text NOT NULL,
    result_version_id text,
    created_by        text REFERENCES users (id) ON DELETE SET NULL,
    decided_by        text REFERENCES users (id) ON DELETE SET NULL,
    decided_at        timestamptz,
    seq               bigserial NOT NULL UNIQUE,
    created_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (document_id, org_id) REFERENCES documents (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (base_version_id, document_id) REFERENCES doc_versions (id, document_id),
    FOREIGN KEY (result_version_id, document_id) REFERENCES doc_versions (id, document_id),
    CONSTRAINT doc_patches_id_org_key UNIQUE (id, org_id),
    CONSTRAINT doc_patches_decided CHECK ((status = 'proposed') = (decided_at IS NULL)),
    CONSTRAINT doc_patches_result CHECK ((status = 'accepted') = (result_version_id IS NOT NULL))
);
CREATE INDEX doc_patches_document ON doc_patches (document_id, seq DESC);

CREATE FUNCTION svc_doc_patches_guard() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'proposed' OR NEW.diff <> OLD.diff
       OR NEW.base_version_id <> OLD.base_version_id THEN
        RAISE EXCEPTION 'a patch is decided once and never changes'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'doc_patches_decided_once';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER doc_patches_guard BEFORE UPDATE ON doc_patches
    FOR EACH ROW EXECUTE FUNCTION svc_doc_patches_guard();

-- --- Share links ------------------------------------------------------------------

-- The token is stored as a keyed BLAKE2b hash, like a PAT; token_hint is
-- its first 12 characters, for lists.
CREATE TABLE shares (
    id          text PRIMARY KEY CHECK (id ~ '^shr_[A-Za-z0-9]{16,}$'),
    org_id      text NOT NULL,
    product_id  text NOT NULL,
    token_hash  bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    token_hint  text NOT NULL,
    seq         bigserial NOT NULL UNIQUE,
    created_by  text REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    revoked_by  text REFERENCES users (id) ON DELETE SET NULL,
    FOREIGN KEY (product_id, org_id) REFERENCES products (id, org_id) ON DELETE CASCADE,
    CONSTRAINT shares_expiry_check CHECK (expires_at > created_at)
);
CREATE INDEX shares_product ON shares (product_id, seq DESC);

-- Reviewers' comments, left through a share link.
CREATE TABLE doc_comments (
    id          text PRIMARY KEY CHECK (id ~ '^cmt_[A-Za-z0-9]{16,}$'),
    org_id      text NOT NULL,
    document_id text NOT NULL,
    version_id  text NOT NULL,
    share_id    text REFERENCES shares (id) ON DELETE SET NULL,
    author_name text NOT NULL CHECK (char_length(author_name) BETWEEN 1 AND 100),
    body        text NOT NULL CHECK (char_length(body) BETWEEN 1 AND 10000),
    seq         bigserial NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (document_id, org_id) REFERENCES documents (id, org_id) ON DELETE CASCADE,
    FOREIGN KEY (version_id, document_id) REFERENCES doc_versions (id, document_id)
);
CREATE INDEX doc_comments_document ON doc_comments (document_id, seq DESC);

-- --- Rate-limit windows without the write-ahead log ------------------------------

-- The share portal counts every request against its client address: with
-- one busy client, every request updates the same row, and each commit
-- waited for the WAL to reach the disk while holding that row, so the
-- portal served about a quarter of what it serves uncounted (make bench).
-- The counters are worth nothing after a crash (a window restarts, which
-- only forgives a few requests), so they need no WAL: an unlogged table
-- commits without waiting for the disk. (Standbys do not see it either;
-- after a failover the windows start afresh.)
ALTER TABLE rate_limits SET UNLOGGED;
