/*
 * svc_products.c: products: list and create under a project, read by id.
 */
#include "svc_products.h"
#include "svc_doc_store.h"

/* A product as the API shows it: the products row `pr` and its project `p`. */
#define PRODUCT_COLS                                                                \
    "pr.id, p.id, p.slug, p.name, pr.name,"                                         \
    " (SELECT count(*) FROM documents d WHERE d.product_id = pr.id),"               \
    " pr.created_at, pr.updated_at"

static const svc_col_t product_project[] = {
    SVC_COL_ID("prj"),
    SVC_COL_SLUG,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Website" },
    SVC_COL_END
};

static const svc_col_t product_item[] = {
    SVC_COL_ID("prd"),
    { .key = "project", .type = SVC_COL_OBJECT, .sub = product_project },
    { .key = "name", .type = SVC_COL_TEXT, .example = "Shop" },
    { .key = "documents", .type = SVC_COL_INT, .description = "How many documents it has." },
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_product = { .name = "Product", .keys = product_item,
    .description = "A product: a planning set of documents in a project." };

static const svc_stmt_t st_prd_list = {
    "svc_products_list",
    "SELECT pr.seq, " PRODUCT_COLS " FROM products pr JOIN projects p ON p.id = pr.project_id"
    " WHERE pr.project_id = $1 AND pr.seq < $2::bigint ORDER BY pr.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_prd_get = {
    "svc_products_get",
    "SELECT " PRODUCT_COLS " FROM products pr JOIN projects p ON p.id = pr.project_id"
    " WHERE pr.id = $1 AND pr.org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_prd_insert = {
    "svc_products_insert",
    "INSERT INTO products (id, org_id, project_id, name, created_by) VALUES ($1, $2, $3, $4, $5)",
    5, 0
};

static const svc_stmt_t st_prd_name = {
    "svc_products_name",
    "SELECT name FROM products WHERE id = $1 AND org_id = $2",
    2, SVC_STMT_READ
};

const svc_field_t svc_body_product_create[] = {
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200,
      .description = "Display name, 1 to 200 characters." },
    SVC_FIELD_END
};

apr_status_t svc_product_name(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *product_id, const char **pname)
{
    return svc_db_value(db, &st_prd_name, p, pname, NULL, product_id, org_id);
}

apr_status_t svc_product_check(svc_ctx_t *ctx, svc_db_t *db, const char *product_id)
{
    const char *name;
    apr_status_t rv = svc_product_name(db, ctx->pool, ctx->org->id, product_id, &name);

    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No product %s in %s.", product_id,
                        ctx->org->slug);
    }
    return rv;
}

static apr_status_t reply_product(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    return svc_reply_org_row(ctx, db, &st_prd_get, product_item, "product", id, status);
}

apr_status_t svc_h_products_list(svc_ctx_t *ctx)
{
    return svc_reply_rows(ctx, &st_prd_list, product_item, ctx->project->id, SVC_PAGE_BEFORE,
                          SVC_PAGE_FETCH);
}

static apr_status_t create_product(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = svc_id_new(ctx->pool, "prd_");
    const char *name = svc_json_str(ctx->body, "name");
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_VIEWER, SVC_PROLE_DEVELOPER)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_prd_insert, ctx->pool, NULL, id, ctx->org->id,
                              ctx->project->id, name, ctx->who->user_id)) != APR_SUCCESS
        || (rv = svc_doc_audit(ctx, db, "product.created", "product", id,
                               json_pack("{s:s,s:s}", "name", name,
                                         "project_id", ctx->project->id))) != APR_SUCCESS) {
        return rv;
    }
    return reply_product(ctx, db, id, 201);
}

apr_status_t svc_h_products_create(svc_ctx_t *ctx)
{
    return svc_write(ctx, create_product, NULL);
}

apr_status_t svc_h_products_get(svc_ctx_t *ctx)
{
    return svc_reply_one(ctx, "productId", reply_product);
}
