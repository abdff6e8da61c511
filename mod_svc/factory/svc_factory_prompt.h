/*
 * svc_factory_prompt.h: the task as the model reads it, the same in both
 * modes of the factory (single: svc_factory_main.c; agent:
 * svc_factory_agent.c); each mode writes its own system prompt.
 */
#ifndef SVC_FACTORY_PROMPT_H
#define SVC_FACTORY_PROMPT_H

#include "svc_factory.h"

/* Appends the user's message of task t to buf: its instructions, its
 * context when it has one, the branch and `listing`, the files the
 * repository already tracks. */
void svc_factory_task_prompt(svc_factory_buf_t *buf, const svc_factory_task_t *t,
                             const svc_factory_buf_t *listing);

#endif /* SVC_FACTORY_PROMPT_H */
