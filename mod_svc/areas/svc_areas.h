/*
 * svc_areas.h: the area registry, the one list of the service's areas and what they register.
 * May call every area through its public header; only the glue and svcctl call it.
 */
#ifndef SVC_AREAS_H
#define SVC_AREAS_H

#include "svc_kernel.h"

/* Every area, in the order the API and the OpenAPI document list them. */
extern const svc_area_t *const svc_areas[];

/*
 * Puts into conf what the kernel takes from areas: the list of areas (for
 * the route table and OpenAPI) and how principals are verified.
 */
void svc_areas_configure(svc_config_t *conf);

#endif /* SVC_AREAS_H */
