/*
 * svc_attachments.h: the attachments area: files bound to a request, a document or an improvement.
 * May call base/ and the kernel; other areas call it through this header only.
 *
 * An upload is the raw request body with its own Content-Type, streamed:
 * it is spooled to a temporary file while its SHA-256 is computed and the
 * cap (SvcAttachmentLimit) held, and only then written to PostgreSQL in
 * chunks of 256 KiB, in one short transaction, so every node serves it and
 * no pooled connection waits on a slow client. A download streams the
 * chunks one by one. Neither holds the file in memory.
 */
#ifndef SVC_ATTACHMENTS_H
#define SVC_ATTACHMENTS_H

#include "svc_kernel.h"

/* The area's routes (svc_attachments_routes.c). */
extern const svc_area_t svc_attachments_area;

/*
 * The attachments bound to one thing of the org (`column` is
 * "request_id", "document_id" or "improvement_id"), oldest first, as a JSON
 * array of their metadata (*pjson, from p): what the pipeline's lifecycle
 * view shows. At most 500.
 */
apr_status_t svc_attachments_of(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                const char *column, const char *id, const char **pjson);

/* An attachment's metadata, as every answer shows it (the schema). */
extern const svc_schema_t svc_schema_attachment;

#endif /* SVC_ATTACHMENTS_H */
