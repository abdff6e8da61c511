/*
 * svc_pipeline.h: the pipeline area: requests stage by stage, build tasks and their runs, cost estimates, improvements.
 * May call base/, the kernel, and the documents, providers, runs, attachments and billing areas' public headers; others call it through this header only.
 *
 * A request (a build, or an approved improvement) moves through intake,
 * planning, review, build, integration and done. Entering planning makes
 * its product and a table of contents (drafted by the org's model, or a
 * skeleton); people write and approve the documents (the documents area);
 * entering build makes one build task per section; each task is carried
 * out by a run (the runs area), and the task follows its run's status; an
 * admin or project maintainer approves the integration. Every change is an
 * event on the org's stream and an audit entry. docs/api/pipeline.md.
 */
#ifndef SVC_PIPELINE_H
#define SVC_PIPELINE_H

#include "svc_kernel.h"

/* The area's routes (svc_pipeline_routes.c). */
extern const svc_area_t svc_pipeline_area;

/* An improvement the service files by itself for a deployment incident. */
typedef struct {
    const char *org_id;
    const char *project_id;
    const char *kind;           /* "bug" (NULL means bug) or "feature" */
    const char *title;          /* 1 to 200 characters */
    const char *body;           /* what happened, up to 65536 characters */
    /* What it is about (the deployment's id, say), 1 to 200 characters: a
     * project has at most one open incident improvement per source_ref. */
    const char *source_ref;
} svc_incident_t;

/*
 * Files an incident improvement (source "incident", filed by the service)
 * with its audit entry and improvement.filed event, in the caller's
 * transaction: call it last among the transaction's writes (the event
 * takes the org's event lock). When the project has an open improvement for the same
 * source_ref, nothing is written and that one is returned (*pcreated 0).
 * *pid is the improvement's id (from p).
 */
apr_status_t svc_improvement_file_incident(svc_db_t *db, apr_pool_t *p,
                                           const svc_incident_t *inc, const char **pid,
                                           int *pcreated);

/*
 * Adds a note to an open incident improvement's body (a paragraph at its
 * end; the body stays within its bound), in the caller's transaction:
 * what happened since it was filed (the deployment recovered, say). A
 * decided improvement, or one not filed for an incident, is left as it is.
 */
apr_status_t svc_improvement_note_incident(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                           const char *id, const char *note);

#endif /* SVC_PIPELINE_H */
