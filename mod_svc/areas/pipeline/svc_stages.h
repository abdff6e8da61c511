/*
 * svc_stages.h: a request's stages and statuses (pipeline-private):
 * advance, advance-to-build, pause and resume of the build, cancel,
 * integration approval. docs/api/pipeline.md has the diagram.
 */
#ifndef SVC_STAGES_H
#define SVC_STAGES_H

#include "svc_pipeline.h"

/* Route handlers. */
svc_handler_t svc_h_requests_advance, svc_h_requests_advance_to_build, svc_h_requests_pause,
              svc_h_requests_resume, svc_h_requests_cancel, svc_h_requests_approve;

#endif /* SVC_STAGES_H */
