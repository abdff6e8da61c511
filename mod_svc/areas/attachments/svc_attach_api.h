/*
 * svc_attach_api.h: the attachments API (attachments-private):
 * docs/api/attachments.md.
 */
#ifndef SVC_ATTACH_API_H
#define SVC_ATTACH_API_H

#include "svc_attachments.h"

/* Route handlers. */
svc_handler_t svc_h_attachments_upload, svc_h_attachments_list, svc_h_attachments_get,
              svc_h_attachments_content, svc_h_attachments_delete;

/* The routes' query parameters. */
extern const svc_qparam_t svc_query_attachments_upload[], svc_query_attachments_list[];

#endif /* SVC_ATTACH_API_H */
