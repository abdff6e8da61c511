/*
 * svc_products.h: products, the planning sets of projects (documents-private).
 */
#ifndef SVC_PRODUCTS_H
#define SVC_PRODUCTS_H

#include "svc_documents.h"

/* Route handlers. */
svc_handler_t svc_h_products_list, svc_h_products_create, svc_h_products_get;

/* The routes' request bodies. */
extern const svc_field_t svc_body_product_create[];

/* A product. */
extern const svc_schema_t svc_schema_product;

/* A 404 problem unless the org has this product. */
apr_status_t svc_product_check(svc_ctx_t *ctx, svc_db_t *db, const char *product_id);

#endif /* SVC_PRODUCTS_H */
