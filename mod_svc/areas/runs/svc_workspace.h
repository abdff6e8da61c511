/*
 * svc_workspace.h: a run's workspace on the host, one directory per run
 * below SvcRunWorkDir, handled as untrusted: whatever ran in the sandbox
 * may have left symlinks, odd modes or deep trees there, so nothing here
 * follows a symlink, and git never runs on it outside the sandbox.
 */
#ifndef SVC_WORKSPACE_H
#define SVC_WORKSPACE_H

#include "svc_runs.h"

/* Inside the workspace: the repository, and where the bundle step writes. */
#define SVC_WS_REPO        "repo"
#define SVC_WS_BUNDLE_DIR  "bundle"
#define SVC_WS_BUNDLE_FILE "run.bundle"

/* A fresh, empty directory for the run (what an earlier attempt left there
 * is removed first); *ppath in p. */
apr_status_t svc_workspace_make(apr_pool_t *p, const char *work_dir, const char *run_id,
                                const char **ppath);

/* Makes `name` a fresh, empty directory in the workspace (removing what is
 * there, whatever it is). */
apr_status_t svc_workspace_fresh_dir(const char *workspace, const char *name);

/* Removes a directory tree without following any symlink; what it could
 * not remove stays (APR_EGENERAL). */
apr_status_t svc_workspace_remove(const char *path);

/*
 * Reads the regular file dir/name of the workspace (neither may be a
 * symlink), at most max bytes (APR_ENOSPC beyond). *pdata in p.
 */
apr_status_t svc_workspace_read(apr_pool_t *p, const char *workspace, const char *dir,
                                const char *name, apr_size_t max,
                                unsigned char **pdata, apr_size_t *plen);

/* The names of the entries of work_dir that look like a run's workspace. */
apr_array_header_t *svc_workspace_list(apr_pool_t *p, const char *work_dir);

/* A full git object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits. */
int svc_git_id_valid(const char *s, apr_size_t len);

/*
 * The commit a git bundle (v2 or v3) holds for `ref` (refs/heads/...), from
 * its header; NULL when the data is not a bundle or has no such ref.
 */
const char *svc_bundle_head(apr_pool_t *p, const unsigned char *data, apr_size_t len,
                            const char *ref);

#endif /* SVC_WORKSPACE_H */
