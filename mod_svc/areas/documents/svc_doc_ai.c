/*
 * svc_doc_ai.c: the organization's default model at work on documents:
 * regeneration (a new draft version written by the model) and proposed
 * patches (the model's revision kept as a unified diff until someone
 * accepts or rejects it).
 *
 * Every model call has three steps, so it never holds a database
 * connection or a transaction while it waits (and never pins a worker
 * longer than SvcModelTimeout): read what the model needs and load the
 * provider; give the connection back; call the model; then write the
 * result in a fresh transaction that checks again that the document is
 * where it was. A failed call or an answer that is not what was asked for
 * writes nothing but its usage record, and answers 502 provider_error.
 */
#include "svc_doc_ai.h"
#include "svc_billing.h"
#include "svc_doc_store.h"
#include "svc_providers.h"

#include <string.h>

/* What the model is told about the other documents of the product, in all. */
#define CONTEXT_BYTES (200 * 1024)
/* The longest answer asked for. */
#define AI_MAX_TOKENS 8192

static const svc_stmt_t st_ai_doc = {
    "svc_documents_ai_doc",
    "SELECT d.current_version_id, d.kind, d.title, pr.name, v.body, d.product_id"
    " FROM documents d JOIN products pr ON pr.id = d.product_id"
    " JOIN doc_versions v ON v.id = d.current_version_id"
    " WHERE d.id = $1 AND d.org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

/* The other documents' current text, the table of contents first. */
static const svc_stmt_t st_ai_context = {
    "svc_documents_ai_context",
    "SELECT d.kind, d.title, substr(v.body, 1, $3::int), v.bytes > $3::int"
    " FROM documents d JOIN doc_versions v ON v.id = d.current_version_id"
    " WHERE d.product_id = $1 AND d.id <> $2"
    " ORDER BY d.kind = 'toc' DESC, d.seq LIMIT 500",
    3, SVC_STMT_READ | SVC_STMT_BINARY
};

#define PATCH_COLS                                                                  \
    "pc.id, pc.document_id, pc.base_version_id, pc.status, pc.summary, pc.diff,"    \
    " pc.model, pc.result_version_id, pc.created_by, pc.decided_by, pc.decided_at,"  \
    " pc.created_at"

static const svc_col_t patch_item[] = {
    SVC_COL_ID("pch"),
    { .key = "document_id", .type = SVC_COL_TEXT, .id = "doc" },
    { .key = "base_version_id", .type = SVC_COL_TEXT, .id = "ver",
      .description = "The version the diff applies to." },
    { .key = "status", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("proposed", "accepted", "rejected") },
    { .key = "summary", .type = SVC_COL_TEXT, .example = "Adds a glossary." },
    { .key = "diff", .type = SVC_COL_TEXT, .description = "A unified diff." },
    { .key = "model", .type = SVC_COL_TEXT, .example = "gpt-4o-mini" },
    { .key = "result_version_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "ver",
      .description = "Once accepted: the version it made." },
    SVC_COL_CREATED_BY,
    { .key = "decided_by", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr" },
    { .key = "decided_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_CREATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_patch = { .name = "Patch", .keys = patch_item,
    .description = "A change the model proposed for a document, as a unified diff." };

static const svc_stmt_t st_pch_get = {
    "svc_documents_patch_get",
    "SELECT " PATCH_COLS " FROM doc_patches pc WHERE pc.id = $1 AND pc.org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_pch_list = {
    "svc_documents_patches_list",
    "SELECT pc.seq, " PATCH_COLS " FROM doc_patches pc"
    " WHERE pc.document_id = $1 AND pc.org_id = $2 AND pc.seq < $3::bigint"
    " ORDER BY pc.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_pch_insert = {
    "svc_documents_patch_insert",
    "INSERT INTO doc_patches (id, org_id, document_id, base_version_id, diff, summary,"
    " instructions, result_sha256, model, created_by)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::bytea, $9, $10)",
    10, 0
};

static const svc_stmt_t st_pch_document = {
    "svc_documents_patch_document",
    "SELECT document_id FROM doc_patches WHERE id = $1 AND org_id = $2",
    2, SVC_STMT_READ
};

/* Taken after the document's lock: the order every change of a document keeps. */
static const svc_stmt_t st_pch_lock = {
    "svc_documents_patch_lock",
    "SELECT status, base_version_id, diff, result_sha256, model FROM doc_patches"
    " WHERE id = $1 AND org_id = $2 FOR UPDATE",
    2, SVC_STMT_BINARY
};

static const svc_stmt_t st_pch_decide = {
    "svc_documents_patch_decide",
    "UPDATE doc_patches SET status = $3, result_version_id = $4, decided_by = $5,"
    " decided_at = now() WHERE id = $1 AND org_id = $2",
    5, 0
};

const svc_field_t svc_body_regenerate[] = {
    { .name = "instructions", .type = SVC_FT_TEXT, .nullable = 1, .max = 10000,
      .description = "What to change or aim for, up to 10000 characters; omitted: rewrite it to "
        "be clear, complete and consistent with the other documents." },
    SVC_FIELD_END
};

const svc_field_t svc_body_patch_create[] = {
    { .name = "instructions", .type = SVC_FT_TEXT, .required = 1, .min = 1, .max = 10000,
      .description = "The change to propose, 1 to 10000 characters." },
    SVC_FIELD_END
};

static const char system_prompt[] =
    "You are the technical writer of a software product's planning documents: a table of "
    "contents and section documents, written in Markdown. You are given the product's "
    "other documents as context, one document to work on, and instructions. Keep what is "
    "right, fix what is wrong or missing, stay consistent with the other documents, and "
    "write the complete document, never a fragment or a list of changes.";

/* What the model is given, read before any call. */
typedef struct {
    const char *doc_id;
    const char *version_id;     /* the current version: the base of the result */
    const char *kind;
    const char *title;
    const char *product;
    const char *body;
    apr_size_t len;
    const char *context;        /* the other documents, capped at CONTEXT_BYTES */
} ai_input_t;

/* The longest prefix of s within n bytes that ends on a character. */
static apr_size_t utf8_cut(const char *s, apr_size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) {
        n--;
    }
    return n;
}

static apr_status_t read_input(svc_ctx_t *ctx, svc_db_t *db, const char *doc,
                               ai_input_t *in)
{
    svc_dbres_t *res;
    svc_jbuf_t b;
    const char *product;
    apr_size_t left = CONTEXT_BYTES;
    apr_status_t rv;
    int i;

    if ((rv = svc_org_row(ctx, db, &st_ai_doc, "document", doc, &res)) != APR_SUCCESS) {
        return rv;
    }
    in->doc_id = doc;
    in->version_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    in->kind = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 1));
    in->title = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 2));
    in->product = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 3));
    in->body = svc_dbres_str(res, 0, 4);
    in->len = svc_dbres_len(res, 0, 4);
    product = svc_dbres_str(res, 0, 5);
    rv = svc_db_execv(db, &st_ai_context, ctx->pool, &res, product, doc,
                      apr_itoa(ctx->pool, CONTEXT_BYTES));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    svc_jbuf_init(&b, ctx->pool, 4096);
    for (i = 0; i < svc_dbres_rows(res) && left > 0; i++) {
        const char *text = svc_dbres_str(res, i, 2);
        apr_size_t n = svc_dbres_len(res, i, 2);
        int cut = svc_dbres_bool(res, i, 3) == 1;
        const char *head = apr_psprintf(ctx->pool, "\n### %s: %s\n\n",
                                        strcmp(svc_dbres_str(res, i, 0), "toc") == 0
                                        ? "Table of contents" : "Section",
                                        svc_dbres_str(res, i, 1));
        if (n > left) {
            n = utf8_cut(text, left);
            cut = 1;
        }
        svc_jbuf_raw(&b, head, strlen(head));
        svc_jbuf_raw(&b, text, n);
        if (cut) {
            svc_jbuf_raw(&b, "\n[... cut here ...]\n", 20);
        }
        left -= n;
    }
    in->context = svc_jbuf_text(&b, NULL);
    return APR_SUCCESS;
}

static const char *prompt(apr_pool_t *p, const ai_input_t *in, const char *instructions,
                          const char *answer)
{
    return apr_pstrcat(p, "Product: ", in->product, "\n\n",
                       "## The product's other documents\n",
                       *in->context ? in->context : "\n(none yet)\n",
                       "\n## The document to work on\n\n",
                       "Kind: ", strcmp(in->kind, "toc") == 0 ? "table of contents" : "section",
                       "\nTitle: ", in->title, "\n\n",
                       "Its current text, between the lines:\n-----\n", in->body, "\n-----\n\n",
                       "## Instructions\n\n", instructions, "\n\n",
                       "## Your answer\n\n", answer, "\n", NULL);
}

/* The problem for a model that failed, or whose answer was unusable. */
static apr_status_t provider_failed(svc_ctx_t *ctx, const svc_llm_reply_t *reply)
{
    svc_fail(ctx, 502, "provider_error", "The model provider failed: %s", reply->error);
    ctx->problem->log_detail = apr_pstrcat(ctx->pool, reply->error_code, ": ", reply->error,
                                           NULL);
    return SVC_EPROBLEM;
}

static void unusable(apr_pool_t *p, svc_llm_reply_t *reply, const char *why)
{
    reply->error_code = "provider_error";
    reply->error = apr_pstrcat(p, "the model's answer cannot be used: ", why, NULL);
}

/* Printable text: no control characters but tab, newline and carriage return. */
static int plain_text(const char *s, apr_size_t n)
{
    apr_size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

/*
 * The document text in the model's JSON answer ({"body": ...}, and
 * {"summary": ...} when asked for): non-empty Markdown (text, not a JSON
 * document), within SvcDocumentLimit, not cut off at max_tokens. NULL
 * when it is not, with reply turned into the failure that says why.
 */
static const char *answer_body(svc_ctx_t *ctx, svc_llm_reply_t *reply, const char **psummary)
{
    json_error_t jerr;
    json_t *obj, *inner;
    const char *body, *s;
    apr_size_t n;

    if (reply->truncated) {
        unusable(ctx->pool, reply, "it was cut off at max_tokens");
        return NULL;
    }
    obj = svc_json_pool(ctx->pool, json_loads(reply->content, 0, &jerr));
    body = svc_json_str(obj, "body");
    if (!body) {
        unusable(ctx->pool, reply, "it has no \"body\" string");
        return NULL;
    }
    n = strlen(body);
    for (s = body; *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'; s++) {
    }
    if (!*s) {
        unusable(ctx->pool, reply, "the document it wrote is empty");
        return NULL;
    }
    inner = (*s == '{' || *s == '[') ? json_loads(s, 0, &jerr) : NULL;
    if (inner) {
        json_decref(inner);
        unusable(ctx->pool, reply, "the document it wrote is JSON, not Markdown");
        return NULL;
    }
    if (!plain_text(body, n)) {
        unusable(ctx->pool, reply, "the document it wrote has control characters");
        return NULL;
    }
    if (n > ctx->conf->document_limit) {
        unusable(ctx->pool, reply, "the document it wrote is over SvcDocumentLimit");
        return NULL;
    }
    if (psummary) {
        *psummary = svc_json_str(obj, "summary");
        if (!*psummary || !**psummary || strlen(*psummary) > 2000
            || !plain_text(*psummary, strlen(*psummary))) {
            unusable(ctx->pool, reply, "it has no usable \"summary\" (1 to 2000 characters)");
            return NULL;
        }
    }
    return body;
}

/*
 * Reads the document and the rest of the product, loads the org's default
 * provider, gives the connection back, and calls the model; the answer's
 * document text is *pbody (with psummary, its summary too, and then it must
 * differ from the current text). On any failure the problem is set, and a
 * call that happened is recorded in the usage table, as an error when its
 * answer could not be used.
 */
static apr_status_t ask_model(svc_ctx_t *ctx, const char *purpose, const char *instructions,
                              const char *answer, ai_input_t *in, svc_provider_t **pprov,
                              const char **pbody, const char **psummary)
{
    const char *doc = apr_table_get(ctx->params, "docId");
    svc_llm_msg_t msg;
    svc_llm_request_t req;
    svc_llm_reply_t *reply;
    svc_usage_t usage;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = read_input(ctx, db, doc, in)) != APR_SUCCESS) {
        return rv;
    }
    /* A hard budget used up (or a plan's hard limit) refuses new model
     * work: 402 budget_exceeded. */
    if ((rv = svc_billing_admit(ctx)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_provider_default(db, ctx->pool, ctx->conf, ctx->org->id, pprov);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 409, "no_provider", "%s has no default model provider; an admin "
                        "sets one with POST /api/orgs/%s/providers.", ctx->org->slug,
                        ctx->org->slug);
    }
    if (rv == APR_EINVAL) {
        return svc_fail(ctx, 409, "provider_key_unreadable", "The default provider's key cannot "
                        "be opened (the server secret changed since it was set); an admin sets "
                        "it again.");
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* The model may take minutes: no pooled connection waits with it. */
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    memset(&req, 0, sizeof(req));
    msg.role = "user";
    msg.content = prompt(ctx->pool, in, instructions, answer);
    req.system = system_prompt;
    req.messages = &msg;
    req.nmessages = 1;
    req.json = 1;
    req.max_tokens = AI_MAX_TOKENS;
    *pbody = NULL;
    if (svc_provider_complete(ctx->pool, ctx->conf, *pprov, &req, &reply) == APR_SUCCESS) {
        *pbody = answer_body(ctx, reply, psummary);
    }
    if (*pbody && psummary && strlen(*pbody) == in->len && memcmp(*pbody, in->body, in->len) == 0) {
        unusable(ctx->pool, reply, "it proposes no change");
        *pbody = NULL;
    }
    memset(&usage, 0, sizeof(usage));
    usage.org_id = ctx->org->id;
    usage.user_id = ctx->who->user_id;
    usage.purpose = purpose;
    usage.subject_type = "document";
    usage.subject_id = doc;
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_provider_record_usage(db, ctx->pool, *pprov, &usage, reply))
           != APR_SUCCESS) {
        return rv;
    }
    return *pbody ? APR_SUCCESS : provider_failed(ctx, reply);
}

/* The conflict of a document that changed while the model was writing. */
static apr_status_t moved_on(svc_ctx_t *ctx, const svc_doc_state_t *st, const char *base)
{
    return svc_fail(ctx, 409, "conflict", "The document changed while the model was writing "
                    "(its current version is now %s, not %s); nothing was written.",
                    st->current_version_id, base);
}

/* What the model wrote, to store as the document's new version. */
typedef struct {
    ai_input_t in;
    svc_provider_t *prov;
    svc_new_version_t nv;
} regenerated_t;

static apr_status_t store_regenerated(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const regenerated_t *r = baton;
    const char *vid = svc_id_new(ctx->pool, "ver_");
    svc_doc_state_t *st;
    int number;
    apr_status_t rv;

    if ((rv = svc_doc_lock(ctx, db, r->in.doc_id, &st)) != APR_SUCCESS) {
        return rv;
    }
    if (strcmp(st->current_version_id, r->in.version_id) != 0) {
        return moved_on(ctx, st, r->in.version_id);
    }
    if ((rv = svc_doc_version_add(ctx, db, r->in.doc_id, vid, &r->nv, &number)) != APR_SUCCESS
        || (rv = svc_doc_audit(ctx, db, "document.regenerated", "document", r->in.doc_id,
                               json_pack("{s:s,s:i,s:s,s:s,s:s,s:I}", "version_id", vid,
                                         "number", number, "base_version_id", r->in.version_id,
                                         "provider_id", svc_provider_id(r->prov),
                                         "model", svc_provider_model(r->prov),
                                         "bytes", (json_int_t)strlen(r->nv.body))))
           != APR_SUCCESS) {
        return rv;
    }
    return svc_doc_reply_version(ctx, db, vid, 201);
}

static apr_status_t regenerate(svc_ctx_t *ctx)
{
    const char *instructions = svc_json_str(ctx->body, "instructions");
    regenerated_t r;
    apr_status_t rv;

    memset(&r, 0, sizeof(r));
    rv = ask_model(ctx, "document.regenerate",
                   instructions && *instructions ? instructions
                   : "Rewrite the document: clear, complete, and consistent with the other "
                     "documents.",
                   "Answer with one JSON object: {\"body\": \"<the complete new document, in "
                   "Markdown>\"}.", &r.in, &r.prov, &r.nv.body, NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    r.nv.author_kind = "ai";
    r.nv.author_model = svc_provider_model(r.prov);
    r.nv.source = "regenerate";
    r.nv.base_version_id = r.in.version_id;
    return svc_write(ctx, store_regenerated, &r);
}

/*
 * A regeneration uses one answer of the model: the caller claims the
 * document first (svc_model_claim: a statement of its own, nothing held
 * across the call), so simultaneous regenerations pay for one call and the
 * others are told at once; the claim is given back whatever happened. (A
 * patch is not claimed: each proposal is kept.)
 */
apr_status_t svc_h_documents_regenerate(svc_ctx_t *ctx)
{
    const char *doc = apr_table_get(ctx->params, "docId");
    /* The org is part of the subject: an id of another org's document
     * claims nothing of theirs. */
    const char *subject = apr_pstrcat(ctx->pool, "document:", ctx->org->id, "/", doc, NULL);
    const char *claim = NULL;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_model_claim(db, ctx->pool, ctx->conf, ctx->org->id, subject, &claim);
    if (rv == SVC_ECONFLICT) {
        return svc_fail(ctx, 409, "conflict", "Document %s is being regenerated by another "
                        "call; nothing changed. Read the document again once that call has "
                        "answered.", doc);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = regenerate(ctx);
    if (svc_ctx_db(ctx, &db) == APR_SUCCESS) {
        (void)svc_model_unclaim(db, ctx->pool, subject, claim);
    }
    return rv;
}

static apr_status_t reply_patch(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    return svc_reply_org_row(ctx, db, &st_pch_get, patch_item, "patch", id, status);
}

/* A patch the model proposed, to store. */
typedef struct {
    ai_input_t in;
    svc_provider_t *prov;
    const char *summary, *diff;
    unsigned char digest[32];       /* of the proposed text */
} proposed_t;

static apr_status_t store_patch(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const proposed_t *pr = baton;
    const char *id = svc_id_new(ctx->pool, "pch_");
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_NONE)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_pch_insert, ctx->pool, NULL, id, ctx->org->id, pr->in.doc_id,
                      pr->in.version_id, pr->diff, pr->summary,
                      svc_json_str(ctx->body, "instructions"),
                      svc_bytea_param(ctx->pool, pr->digest, sizeof(pr->digest)),
                      svc_provider_model(pr->prov), ctx->who->user_id);
    if (rv == SVC_EINTEGRITY) {
        return svc_fail(ctx, 404, "not_found", "Document %s was deleted meanwhile.",
                        pr->in.doc_id);
    }
    if (rv != APR_SUCCESS
        || (rv = svc_doc_audit(ctx, db, "patch.proposed", "patch", id,
                               json_pack("{s:s,s:s,s:s,s:s}", "document_id", pr->in.doc_id,
                                         "base_version_id", pr->in.version_id,
                                         "provider_id", svc_provider_id(pr->prov),
                                         "model", svc_provider_model(pr->prov))))
           != APR_SUCCESS) {
        return rv;
    }
    return reply_patch(ctx, db, id, 201);
}

apr_status_t svc_h_patches_create(svc_ctx_t *ctx)
{
    const char *proposal, *back, *err;
    apr_size_t back_len;
    proposed_t pr;
    apr_status_t rv;

    memset(&pr, 0, sizeof(pr));
    rv = ask_model(ctx, "document.patch", svc_json_str(ctx->body, "instructions"),
                   "Answer with one JSON object: {\"summary\": \"<what you changed and why, in "
                   "one or two sentences>\", \"body\": \"<the complete revised document, in "
                   "Markdown>\"}.", &pr.in, &pr.prov, &proposal, &pr.summary);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    pr.diff = svc_diff_unified(ctx->pool, pr.in.body, pr.in.len, proposal, strlen(proposal),
                               apr_pstrcat(ctx->pool, pr.in.doc_id, ".md", NULL),
                               SVC_DIFF_CONTEXT, 0);
    /* What is stored must rebuild the proposal exactly, or nothing is stored. */
    if (svc_diff_apply(ctx->pool, pr.in.body, pr.in.len, pr.diff, strlen(pr.diff), &back,
                       &back_len, &err) != APR_SUCCESS
        || back_len != strlen(proposal) || memcmp(back, proposal, back_len)) {
        return APR_EGENERAL;
    }
    svc_sha256(pr.digest, (const unsigned char *)proposal, strlen(proposal));
    return svc_write(ctx, store_patch, &pr);
}

apr_status_t svc_h_patches_list(svc_ctx_t *ctx)
{
    return svc_doc_reply_children(ctx, &st_pch_list, patch_item);
}

/*
 * Accepts (baton non-NULL) or rejects a proposed patch. Accepting applies
 * the stored diff to its base version, which must still be the document's
 * current one (409 conflict otherwise: the patch was made for a text that
 * is gone), checks the result against the digest of what the model
 * proposed, and writes it as a new draft. A decided patch is 409
 * invalid_status.
 */
static apr_status_t decide_patch(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "patchId");
    const char *vid = svc_id_new(ctx->pool, "ver_");
    const char *doc, *status, *base, *diff, *out, *err, *body;
    int accept = baton != NULL;
    unsigned char digest[32];
    apr_size_t out_len, body_len;
    svc_new_version_t nv;
    svc_doc_state_t *st;
    svc_dbres_t *res;
    int number = 0;
    apr_status_t rv;

    if ((rv = svc_doc_lock_via(ctx, db, &st_pch_document, "patch", id, &st)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_pch_lock, ctx->pool, &res, id, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    doc = st->id;
    status = svc_dbres_str(res, 0, 0);
    base = svc_dbres_str(res, 0, 1);
    if (strcmp(status, "proposed") != 0) {
        return svc_fail(ctx, 409, "invalid_status", "Patch %s is %s already.", id, status);
    }
    if (accept) {
        if (strcmp(st->current_version_id, base) != 0) {
            return svc_fail(ctx, 409, "conflict", "Patch %s was proposed for version %s; the "
                            "document's current version is %s. Ask for a new patch.", id, base,
                            st->current_version_id);
        }
        diff = svc_dbres_str(res, 0, 2);
        if ((rv = svc_doc_version_body(ctx, db, base, &body, &body_len)) != APR_SUCCESS) {
            return rv;
        }
        if (svc_diff_apply(ctx->pool, body, body_len, diff, svc_dbres_len(res, 0, 2), &out,
                           &out_len, &err) != APR_SUCCESS) {
            return svc_fail(ctx, 409, "conflict", "Patch %s does not apply: %s.", id, err);
        }
        svc_sha256(digest, (const unsigned char *)out, out_len);
        if (svc_dbres_len(res, 0, 3) != sizeof(digest)
            || !svc_ct_equal(digest, svc_dbres_str(res, 0, 3), sizeof(digest))) {
            return svc_fail(ctx, 409, "conflict", "Patch %s does not rebuild the text that was "
                            "proposed; ask for a new patch.", id);
        }
        memset(&nv, 0, sizeof(nv));
        nv.body = out;
        nv.author_kind = "ai";
        nv.author_model = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 4));
        nv.source = "patch";
        nv.base_version_id = apr_pstrdup(ctx->pool, base);
        if ((rv = svc_doc_version_add(ctx, db, doc, vid, &nv, &number)) != APR_SUCCESS) {
            return rv;
        }
    }
    if ((rv = svc_db_execv(db, &st_pch_decide, ctx->pool, NULL, id, ctx->org->id,
                           accept ? "accepted" : "rejected", accept ? vid : NULL,
                           ctx->who->user_id)) != APR_SUCCESS
        || (rv = svc_doc_audit(ctx, db, accept ? "patch.accepted" : "patch.rejected", "patch",
                               id, accept ? json_pack("{s:s,s:s,s:i}", "document_id", doc,
                                                      "version_id", vid, "number", number)
                                          : json_pack("{s:s}", "document_id", doc)))
           != APR_SUCCESS) {
        return rv;
    }
    return reply_patch(ctx, db, id, 200);
}

apr_status_t svc_h_patches_accept(svc_ctx_t *ctx)
{
    static const int accept = 1;

    return svc_write(ctx, decide_patch, (void *)&accept);
}

apr_status_t svc_h_patches_reject(svc_ctx_t *ctx)
{
    return svc_write(ctx, decide_patch, NULL);
}
