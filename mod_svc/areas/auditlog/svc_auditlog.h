/*
 * svc_auditlog.h: the audit area: reading an organization's audit log and checking its chains.
 * May call base/ and the kernel (which writes the entries); others call it through this header.
 */
#ifndef SVC_AUDITLOG_H
#define SVC_AUDITLOG_H

#include "svc_kernel.h"

/* The area's routes (svc_auditlog.c). */
extern const svc_area_t svc_auditlog_area;

/*
 * Walks a chain (org_id NULL: the user-level chain). *pbroken is the id of
 * the first entry whose link or digest does not hold, or NULL when the
 * chain verifies; *pentries counts the chain's entries.
 */
apr_status_t svc_auditlog_verify(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                 const char **pbroken, apr_int64_t *pentries);

/* Every chain that does not verify, as a JSON array text of
 * {"org_id","first_broken_id"} (for svcctl). */
apr_status_t svc_auditlog_verify_all(svc_db_t *db, apr_pool_t *p, const char **pjson);

#endif /* SVC_AUDITLOG_H */
