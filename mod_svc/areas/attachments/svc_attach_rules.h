/*
 * svc_attach_rules.h: what an attachment may be called and how it is
 * served (attachments-private; pure functions, unit-tested).
 */
#ifndef SVC_ATTACH_RULES_H
#define SVC_ATTACH_RULES_H

#include "svc_attachments.h"

/* The longest file name, in bytes of UTF-8. */
#define SVC_ATTACH_NAME_MAX 255

/*
 * NULL when `name` may name an attachment: 1 to 255 bytes of valid UTF-8,
 * no control character (C0, DEL or C1), no '/' or '\\' (a path), not "."
 * or "..". Otherwise why not, for the client.
 */
const char *svc_attach_name_refusal(const char *name);

/*
 * The type an upload is stored and served with: its Content-Type's media
 * type (lowercased, parameters dropped) when it is on the allow-list of
 * types safe to open in a browser of our origin (PNG, JPEG, GIF and WebP
 * images, PDF, plain text, JSON, zip), else application/octet-stream. SVG
 * and HTML never are: they can carry scripts.
 */
const char *svc_attach_stored_type(apr_pool_t *p, const char *content_type);

/*
 * The Content-Disposition of a download (RFC 6266): attachment, an ASCII
 * fallback `filename` (anything else replaced by '_') and the UTF-8 name
 * percent-encoded in `filename*` (RFC 8187).
 */
const char *svc_attach_disposition(apr_pool_t *p, const char *name);

#endif /* SVC_ATTACH_RULES_H */
