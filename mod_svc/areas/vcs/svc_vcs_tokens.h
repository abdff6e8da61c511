/*
 * svc_vcs_tokens.h: installation access tokens: minted with an App JWT,
 * cached per process (encrypted, in memory only) until five minutes before
 * they expire, never stored or logged.
 */
#ifndef SVC_VCS_TOKENS_H
#define SVC_VCS_TOKENS_H

#include "svc_vcs_client.h"

/* What a token is for, and so what it may do. */
typedef enum {
    /* One repository; contents: read, metadata: read (SPEC.md's clone token). */
    SVC_VCS_TOKEN_CLONE = 1,
    /* Every repository of the installation; metadata: read (listing). */
    SVC_VCS_TOKEN_LIST,
    /* administration: write, metadata: read (creating a repository); never cached. */
    SVC_VCS_TOKEN_ADMIN
} svc_vcs_token_e;

/*
 * A token of `kind` for the installation (`repo`: the repository's name
 * within the installation's account, for SVC_VCS_TOKEN_CLONE only), from
 * this process's cache or freshly minted through c. *ptoken is in c->p:
 * wipe it when done. Failures as svc_vcs_call's.
 */
apr_status_t svc_vcs_token(svc_vcs_call_t *c, const svc_vcs_app_t *app, apr_int64_t id,
                           const char *repo, svc_vcs_token_e kind, const char **ptoken,
                           apr_time_t *pexpires);

/* Forgets what this process cached for the installation (it was suspended,
 * unlinked or deleted). */
void svc_vcs_token_forget(apr_int64_t id);

#endif /* SVC_VCS_TOKENS_H */
