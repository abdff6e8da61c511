/*
 * svc_events.h: the events area: the organization-wide live event stream (SSE).
 * May call base/ and the kernel (whose event log it reads); others call it through this header.
 */
#ifndef SVC_EVENTS_H
#define SVC_EVENTS_H

#include "svc_kernel.h"

/* The area's routes (svc_events.c). */
extern const svc_area_t svc_events_area;

#endif /* SVC_EVENTS_H */
