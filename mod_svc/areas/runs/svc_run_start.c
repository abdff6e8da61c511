/*
 * svc_run_start.c: runs queued and cancelled in the caller's transaction
 * (svc_runs.h): by the runs API itself, and by other areas (the pipeline's
 * build tasks).
 */
#include "svc_runs.h"
#include "svc_run_store.h"
#include "svc_vcs.h"

static const svc_stmt_t st_queue = {
    "svc_runs_queue_for",
    "INSERT INTO runs (id, org_id, project_id, instructions, request_id, task_id,"
    " created_by, timeout_seconds, repository, repo_installation_id, max_steps, max_tokens,"
    " command_timeout)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::int, $9, $10::bigint, $11::int, $12::bigint,"
    " $13::int)",
    13, 0
};

/* A queued run is cancelled at once; a running one is asked to stop (the
 * NOTIFY of sql/010 tells its supervisor). */
static const svc_stmt_t st_cancel = {
    "svc_runs_cancel_for",
    "UPDATE runs SET cancel_requested = true,"
    " status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,"
    " finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END"
    " WHERE id = $1 AND org_id = $2 AND status IN ('queued', 'running') RETURNING status",
    2, 0
};

static const svc_stmt_t st_hold = {
    "svc_runs_hold",
    "SELECT 1 FROM runs WHERE id = $1 AND org_id = $2 FOR UPDATE",
    2, 0
};

apr_status_t svc_run_queue(svc_db_t *db, apr_pool_t *p, const svc_run_spec_t *spec,
                           const char **pid)
{
    const char *id = svc_id_new(p, "run_");
    const char *repository = spec->repository;
    const char *installation = spec->repo_installation_id;
    apr_status_t rv;

    /* A run of a project with a linked repository works on it, whoever
     * starts it (the pipeline's build tasks as much as the runs API, which
     * has looked already to check a `repository` it was given). */
    if (!repository) {
        apr_int64_t inst = 0;

        rv = svc_vcs_project_repository(db, p, spec->org_id, spec->project_id, &repository,
                                        &inst);
        if (rv == SVC_ENOTFOUND) {
            repository = NULL;
        }
        else if (rv != APR_SUCCESS) {
            return rv;
        }
        else {
            installation = apr_psprintf(p, "%" APR_INT64_T_FMT, inst);
        }
    }
    rv = svc_db_execv(db, &st_queue, p, NULL, id, spec->org_id, spec->project_id,
                      spec->instructions, spec->request_id, spec->task_id, spec->created_by,
                      apr_itoa(p, spec->timeout_seconds), repository, installation,
                      apr_itoa(p, spec->max_steps > 0 ? spec->max_steps : 50),
                      apr_psprintf(p, "%" APR_INT64_T_FMT,
                                   spec->max_tokens > 0 ? spec->max_tokens : 2000000),
                      apr_itoa(p, spec->command_timeout > 0 ? spec->command_timeout : 120));
    if (rv == APR_SUCCESS) {
        *pid = id;
    }
    return rv;
}

apr_status_t svc_run_cancel_for(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                const char *run_id, const char **pstatus)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_cancel, p, &res, run_id, org_id);

    *pstatus = NULL;
    if (rv == APR_SUCCESS && svc_dbres_rows(res) == 1) {
        *pstatus = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
    }
    return rv;
}

apr_status_t svc_run_hold(svc_db_t *db, apr_pool_t *p, const char *org_id, const char *run_id)
{
    return svc_db_execv(db, &st_hold, p, NULL, run_id, org_id);
}

apr_status_t svc_run_announce(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *project_id, const char *run_id, const char *status)
{
    return svc_run_emit_status(db, p, org_id, project_id, run_id, status, NULL, NULL);
}
