/*
 * svc_attach_api.c: uploading, listing, reading, downloading and deleting
 * attachments (docs/api/attachments.md).
 *
 * An upload is received in three steps, so neither memory nor a pooled
 * database connection depends on the file or on how fast the client sends
 * it: the target is checked and the connection given back; the body is
 * read piece by piece (svc_body_read holds the cap) into a temporary file,
 * unlinked when the request ends, while its SHA-256 is computed; then one
 * short transaction writes the attachment's row and its chunks of 256 KiB
 * (read back from the file one at a time) and the audit entry. Over the
 * cap, or a client that stops sending: nothing reached the database.
 */
#include "svc_attach_api.h"
#include "svc_attach_rules.h"

#include <apr_file_io.h>
#include <apr_lib.h>
#include <sodium.h>
#include <string.h>

/* One stored chunk; the largest value a chunk row holds (sql/011). */
#define CHUNK (256 * 1024)
/* What is read from the client at a time. */
#define READ_PIECE (64 * 1024)

/* The things an attachment may be bound to: the query parameter (and
 * column), the id prefix, and what it is called in messages. */
typedef struct {
    const char *column;
    const char *prefix;
    const char *what;
} target_kind_t;

static const target_kind_t kinds[] = {
    { "request_id", "rqs_", "request" },
    { "document_id", "doc_", "document" },
    { "improvement_id", "imp_", "improvement" },
    { NULL, NULL, NULL }
};

#define ATT_COLS                                                                    \
    "a.id, a.filename, a.content_type, a.size, encode(a.sha256, 'hex'),"            \
    " a.request_id, a.document_id, a.improvement_id, a.created_by, a.created_at"

static const svc_col_t attachment_item[] = {
    SVC_COL_ID("att"),
    { .key = "filename", .type = SVC_COL_TEXT, .example = "mockup.png" },
    { .key = "content_type", .type = SVC_COL_TEXT, .example = "image/png",
      .description = "The type it is served with: the upload's, when on the allow-list, else "
        "application/octet-stream." },
    { .key = "size", .type = SVC_COL_INT, .description = "Bytes." },
    { .key = "sha256", .type = SVC_COL_TEXT, .format = "hex" },
    { .key = "request_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "rqs" },
    { .key = "document_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "doc" },
    { .key = "improvement_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "imp" },
    SVC_COL_CREATED_BY,
    SVC_COL_CREATED_AT,
    SVC_COL_END
};

/* svc_attachments_of builds the same keys in SQL (st_of). */
const svc_schema_t svc_schema_attachment = { .name = "Attachment", .keys = attachment_item,
    .description = "A file bound to exactly one request, document or improvement "
        "(docs/api/attachments.md); its bytes are at .../content." };

/* Whether the org has the thing an attachment is to be bound to. */
static const svc_stmt_t st_target_exists = {
    "svc_attachments_target_exists",
    "SELECT CASE $1 WHEN 'request_id' THEN"
    "  EXISTS (SELECT 1 FROM requests WHERE id = $2 AND org_id = $3)"
    " WHEN 'document_id' THEN EXISTS (SELECT 1 FROM documents WHERE id = $2 AND org_id = $3)"
    " ELSE EXISTS (SELECT 1 FROM improvements WHERE id = $2 AND org_id = $3) END",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_insert = {
    "svc_attachments_insert",
    "INSERT INTO attachments (id, org_id, request_id, document_id, improvement_id, filename,"
    " content_type, size, sha256, chunks, created_by)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::bigint, $9::bytea, $10::int, $11)",
    11, 0
};

static const svc_stmt_t st_chunk_insert = {
    "svc_attachments_chunk_insert",
    "INSERT INTO attachment_chunks (attachment_id, n, data) VALUES ($1, $2::int, $3::bytea)",
    3, 0
};

static const svc_stmt_t st_get = {
    "svc_attachments_get",
    "SELECT " ATT_COLS " FROM attachments a WHERE a.id = $1 AND a.org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_list = {
    "svc_attachments_list",
    "SELECT a.seq, " ATT_COLS " FROM attachments a WHERE a.org_id = $1"
    " AND ($2::text IS NULL OR a.request_id = $2) AND ($3::text IS NULL OR a.document_id = $3)"
    " AND ($4::text IS NULL OR a.improvement_id = $4)"
    " AND a.seq < $5::bigint ORDER BY a.seq DESC LIMIT $6::int",
    6, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_of = {
    "svc_attachments_of",
    "SELECT coalesce(json_agg(json_build_object('id', a.id, 'filename', a.filename,"
    " 'content_type', a.content_type, 'size', a.size, 'sha256', encode(a.sha256, 'hex'),"
    " 'request_id', a.request_id, 'document_id', a.document_id,"
    " 'improvement_id', a.improvement_id, 'created_by', a.created_by,"
    " 'created_at', svc_ts(a.created_at)) ORDER BY a.seq), '[]'::json)::text"
    " FROM (SELECT * FROM attachments WHERE org_id = $1 AND CASE $2"
    "  WHEN 'request_id' THEN request_id WHEN 'document_id' THEN document_id"
    "  ELSE improvement_id END = $3 ORDER BY seq LIMIT 500) a",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_head = {
    "svc_attachments_head",
    "SELECT filename, content_type, size, chunks, sha256 FROM attachments"
    " WHERE id = $1 AND org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_chunk = {
    "svc_attachments_chunk",
    "SELECT data FROM attachment_chunks WHERE attachment_id = $1 AND n = $2::int",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_lock = {
    "svc_attachments_lock",
    "SELECT created_by, filename, size FROM attachments WHERE id = $1 AND org_id = $2"
    " FOR UPDATE",
    2, 0
};

static const svc_stmt_t st_delete = {
    "svc_attachments_delete",
    "DELETE FROM attachments WHERE id = $1 AND org_id = $2",
    2, 0
};

const svc_qparam_t svc_query_attachments_upload[] = {
    { "request_id", "string", "The request the file belongs to (or document_id, or "
      "improvement_id: exactly one of the three)." },
    { "document_id", "string", "The document the file belongs to." },
    { "improvement_id", "string", "The improvement the file belongs to." },
    { "filename", "string", "The name it is downloaded as: 1 to 255 bytes of UTF-8, no path, "
      "no control characters." },
    { NULL, NULL, NULL }
};

const svc_qparam_t svc_query_attachments_list[] = {
    { "request_id", "string", "Only the files of this request." },
    { "document_id", "string", "Only the files of this document." },
    { "improvement_id", "string", "Only the files of this improvement." },
    { NULL, NULL, NULL }
};

/* An id of this kind: its prefix, then 1 to 60 letters and digits. */
static int id_shaped(const char *id, const char *prefix)
{
    apr_size_t pl = strlen(prefix), n = strlen(id), i;

    if (n <= pl || n > 64 || strncmp(id, prefix, pl) != 0) {
        return 0;
    }
    for (i = pl; i < n; i++) {
        if (!apr_isalnum(id[i])) {
            return 0;
        }
    }
    return 1;
}

/*
 * The target named in the query: at most one of request_id, document_id
 * and improvement_id (exactly one when `required`), well-formed, and
 * existing in the org (404 otherwise). *pkind is NULL when none was given.
 */
static apr_status_t target_of(svc_ctx_t *ctx, svc_db_t *db, int required,
                              const target_kind_t **pkind, const char **pid)
{
    const target_kind_t *k, *found = NULL;
    const char *id = NULL;
    svc_dbres_t *res;
    apr_status_t rv;
    int n = 0;

    for (k = kinds; k->column; k++) {
        const char *v = apr_table_get(ctx->query, k->column);
        if (v) {
            n++;
            found = k;
            id = v;
        }
    }
    if (n > 1 || (required && n == 0)) {
        svc_fail_field(ctx, "request_id", n ? "invalid_value" : "required",
                       "Name exactly one of request_id, document_id and improvement_id.");
        return SVC_EPROBLEM;
    }
    *pkind = found;
    *pid = id;
    if (!found) {
        return APR_SUCCESS;
    }
    if (!id_shaped(id, found->prefix)) {
        svc_fail_field(ctx, found->column, "invalid_id", "%s must be an id starting with %s.",
                       found->column, found->prefix);
        return SVC_EPROBLEM;
    }
    rv = svc_db_execv(db, &st_target_exists, ctx->pool, &res, found->column, id, ctx->org->id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_bool(res, 0, 0) != 1) {
        return svc_fail(ctx, 404, "not_found", "No %s %s in %s.", found->what, id,
                        ctx->org->slug);
    }
    return APR_SUCCESS;
}

/* The upload spooled to a temporary file. */
typedef struct {
    apr_file_t *file;
    apr_off_t size;
    unsigned char sha256[crypto_hash_sha256_BYTES];
} spool_t;

/*
 * Reads the whole body into a temporary file (deleted when it is closed,
 * at the latest when the request ends), hashing it on the way. The cap is
 * svc_body_read's: past it, a 413 problem and nothing kept.
 */
static apr_status_t spool_body(svc_ctx_t *ctx, spool_t *sp)
{
    crypto_hash_sha256_state st;
    const char *dir;
    char *tmpl;
    char *buf = apr_palloc(ctx->pool, READ_PIECE);
    apr_status_t rv;

    if ((rv = apr_temp_dir_get(&dir, ctx->pool)) != APR_SUCCESS) {
        return rv;
    }
    tmpl = apr_pstrcat(ctx->pool, dir, "/svc-upload-XXXXXX", NULL);
    rv = apr_file_mktemp(&sp->file, tmpl, APR_FOPEN_CREATE | APR_FOPEN_READ | APR_FOPEN_WRITE
                         | APR_FOPEN_EXCL | APR_FOPEN_DELONCLOSE | APR_FOPEN_BINARY,
                         ctx->pool);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    crypto_hash_sha256_init(&st);
    sp->size = 0;
    for (;;) {
        apr_size_t n = READ_PIECE;

        if ((rv = svc_body_read(ctx, buf, &n)) != APR_SUCCESS) {
            return rv;
        }
        if (n == 0) {
            break;
        }
        crypto_hash_sha256_update(&st, (const unsigned char *)buf, n);
        if ((rv = apr_file_write_full(sp->file, buf, n, NULL)) != APR_SUCCESS) {
            return rv;
        }
        sp->size += (apr_off_t)n;
    }
    crypto_hash_sha256_final(&st, sp->sha256);
    return APR_SUCCESS;
}

/* Writes the spooled file as chunk rows, one chunk in memory at a time. */
static apr_status_t store_chunks(svc_ctx_t *ctx, svc_db_t *db, const char *id, spool_t *sp)
{
    apr_off_t at = 0;
    apr_pool_t *sub;
    unsigned char *buf = apr_palloc(ctx->pool, CHUNK);
    apr_status_t rv;
    int n = 0;

    if ((rv = apr_file_seek(sp->file, APR_SET, &at)) != APR_SUCCESS) {
        return rv;
    }
    apr_pool_create(&sub, ctx->pool);
    while (rv == APR_SUCCESS && at < sp->size) {
        apr_size_t len = sp->size - at < CHUNK ? (apr_size_t)(sp->size - at) : CHUNK;

        apr_pool_clear(sub);
        rv = apr_file_read_full(sp->file, buf, len, NULL);
        if (rv == APR_SUCCESS) {
            rv = svc_db_execv(db, &st_chunk_insert, sub, NULL, id, apr_itoa(sub, n),
                              svc_bytea_param(sub, buf, len));
        }
        at += (apr_off_t)len;
        n++;
    }
    apr_pool_destroy(sub);
    return rv;
}

static apr_status_t reply_attachment(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    return svc_reply_org_row(ctx, db, &st_get, attachment_item, "attachment", id, status);
}

/* A file received in full, to store. */
typedef struct {
    const char *id, *filename, *type;
    const target_kind_t *kind;
    const char *target;
    spool_t *sp;
} upload_t;

/* Stores the spooled file (baton: an upload_t) in chunks, audit-logged. */
static apr_status_t store_upload(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const upload_t *u = baton;
    const target_kind_t *kind = u->kind;
    spool_t *sp = u->sp;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_insert, ctx->pool, NULL, u->id, ctx->org->id,
                      kind == &kinds[0] ? u->target : NULL, kind == &kinds[1] ? u->target : NULL,
                      kind == &kinds[2] ? u->target : NULL, u->filename, u->type,
                      apr_off_t_toa(ctx->pool, sp->size),
                      svc_bytea_param(ctx->pool, sp->sha256, sizeof(sp->sha256)),
                      apr_itoa(ctx->pool, (int)((sp->size + CHUNK - 1) / CHUNK)),
                      ctx->who->user_id);
    if (rv == SVC_EINTEGRITY) {
        /* The target went away while the file was being received. */
        return svc_fail(ctx, 404, "not_found", "No %s %s in %s.", kind->what, u->target,
                        ctx->org->slug);
    }
    if (rv != APR_SUCCESS
        || (rv = store_chunks(ctx, db, u->id, sp)) != APR_SUCCESS
        || (rv = svc_audit_member(ctx, db, "attachment.uploaded", "attachment", u->id,
                                  json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", kind->column,
                                            u->target, "filename", u->filename,
                                            "content_type", u->type, "sha256",
                                            svc_hex(ctx->pool, sp->sha256, sizeof(sp->sha256)),
                                            "size", (json_int_t)sp->size, "id", u->id)))
           != APR_SUCCESS) {
        return rv;
    }
    return reply_attachment(ctx, db, u->id, 201);
}

apr_status_t svc_h_attachments_upload(svc_ctx_t *ctx)
{
    const char *filename = apr_table_get(ctx->query, "filename");
    const char *type = svc_attach_stored_type(ctx->pool,
                                              apr_table_get(ctx->headers_in, "Content-Type"));
    const char *id = svc_id_new(ctx->pool, "att_");
    const char *why = svc_attach_name_refusal(filename);
    const target_kind_t *kind;
    const char *target;
    upload_t u;
    spool_t sp;
    svc_db_t *db;
    apr_status_t rv;

    if (why) {
        svc_fail_field(ctx, "filename", filename ? "invalid_value" : "required", "%s", why);
        return SVC_EPROBLEM;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = target_of(ctx, db, 1, &kind, &target)) != APR_SUCCESS) {
        return rv;
    }
    /* No pooled connection waits while the client sends the file. */
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS
        || (rv = spool_body(ctx, &sp)) != APR_SUCCESS) {
        return rv;
    }
    u.id = id;
    u.filename = filename;
    u.type = type;
    u.kind = kind;
    u.target = target;
    u.sp = &sp;
    rv = svc_write(ctx, store_upload, &u);
    apr_file_close(sp.file);
    return rv;
}

apr_status_t svc_h_attachments_list(svc_ctx_t *ctx)
{
    const target_kind_t *kind;
    const char *target;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = target_of(ctx, db, 0, &kind, &target)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_rows(ctx, &st_list, attachment_item, ctx->org->id,
                          kind == &kinds[0] ? target : NULL, kind == &kinds[1] ? target : NULL,
                          kind == &kinds[2] ? target : NULL, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

apr_status_t svc_h_attachments_get(svc_ctx_t *ctx)
{
    return svc_reply_one(ctx, "id", reply_attachment);
}

/* Where a download is: the next chunk to send, of how many. */
typedef struct {
    const char *id;
    int next;
    int chunks;
} download_t;

/* One chunk per call, read through a connection lent for that read only. */
static apr_status_t next_chunk(svc_ctx_t *ctx, void *baton, apr_pool_t *scratch,
                               const char **pdata, apr_size_t *plen)
{
    download_t *d = baton;
    svc_db_t *db;
    apr_status_t rv;

    *plen = 0;
    if (d->next >= d->chunks) {
        return APR_SUCCESS;
    }
    /* SVC_ENOTFOUND: deleted while it was being sent. */
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_value(db, &st_chunk, scratch, pdata, plen, d->id,
                              apr_itoa(scratch, d->next))) != APR_SUCCESS) {
        return rv;
    }
    d->next++;
    return APR_SUCCESS;
}

apr_status_t svc_h_attachments_content(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "id");
    char digest[sodium_base64_ENCODED_LEN(crypto_hash_sha256_BYTES,
                                          sodium_base64_VARIANT_ORIGINAL)];
    download_t *d;
    svc_dbres_t *res;
    apr_int64_t size, chunks;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_org_row(ctx, db, &st_head, "attachment", id, &res)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_int64(res, 0, 2, &size) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 3, &chunks) != APR_SUCCESS
        || svc_dbres_len(res, 0, 4) != crypto_hash_sha256_BYTES) {
        return SVC_EDB;
    }
    d = apr_pcalloc(ctx->pool, sizeof(*d));
    d->id = id;
    d->chunks = (int)chunks;
    /* Safe to open from our own origin: never rendered as what it is not
     * (the type is from the allow-list, nosniff is on every answer), saved
     * rather than shown, and sandboxed if a browser shows it anyway. */
    apr_table_setn(ctx->headers_out, "Content-Disposition",
                   svc_attach_disposition(ctx->pool, svc_dbres_str(res, 0, 0)));
    apr_table_setn(ctx->headers_out, "Content-Security-Policy", "default-src 'none'; sandbox");
    sodium_bin2base64(digest, sizeof(digest), (const unsigned char *)svc_dbres_str(res, 0, 4),
                      crypto_hash_sha256_BYTES, sodium_base64_VARIANT_ORIGINAL);
    apr_table_setn(ctx->headers_out, "Repr-Digest",
                   apr_pstrcat(ctx->pool, "sha-256=:", digest, ":", NULL));
    return svc_reply_produced(ctx, 200, apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 1)),
                              (apr_off_t)size, next_chunk, d);
}

static apr_status_t delete_attachment(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *owner;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_org_row(ctx, db, &st_lock, "attachment", id, &res)) != APR_SUCCESS) {
        return rv;
    }
    owner = svc_dbres_str(res, 0, 0);
    /* Whoever uploaded it, or an admin. */
    if ((!owner || strcmp(owner, ctx->who->user_id) != 0)
        && (rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS) {
        if (rv == SVC_EPROBLEM && ctx->problem->status == 403) {
            rv = svc_fail(ctx, 403, "forbidden", "Only whoever uploaded an attachment, or an "
                          "admin, may delete it.");
        }
        return rv;
    }
    if ((rv = svc_audit_member(ctx, db, "attachment.deleted", "attachment", id,
                              json_pack("{s:s,s:s}", "filename", svc_dbres_str(res, 0, 1),
                                        "id", id))) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_delete, ctx->pool, NULL, id, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_empty(ctx);
}

apr_status_t svc_h_attachments_delete(svc_ctx_t *ctx)
{
    return svc_write(ctx, delete_attachment, NULL);
}

apr_status_t svc_attachments_of(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                const char *column, const char *id, const char **pjson)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_of, p, &res, org_id, column, id);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    *pjson = svc_dbres_str(res, 0, 0);
    return APR_SUCCESS;
}
