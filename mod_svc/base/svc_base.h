/*
 * svc_base.h: base/, the layer that knows nothing of the service's domain or of httpd.
 * May call only APR, jansson, libsodium, OpenSSL, libcurl and libpq; every other layer calls it.
 *
 * JSON in and out (svc_json.h), data access on libpq with the mod_dbd traps
 * handled (svc_db.h), the one outbound HTTP client (svc_http.h), randomness,
 * MACs, secret tokens, sealed secrets and encodings (svc_crypto.h), line
 * diffs and their strict application (svc_diff.h), JWTs (svc_jwt.h), redaction for logs
 * (svc_redact.h), secrets by reference (svc_secret.h) and the embedded
 * schema migrations (svc_migrate.h).
 */
#ifndef SVC_BASE_H
#define SVC_BASE_H

#include "svc_types.h"
#include "svc_crypto.h"
#include "svc_db.h"
#include "svc_diff.h"
#include "svc_http.h"
#include "svc_json.h"
#include "svc_jwt.h"
#include "svc_migrate.h"
#include "svc_redact.h"
#include "svc_secret.h"

#endif /* SVC_BASE_H */
