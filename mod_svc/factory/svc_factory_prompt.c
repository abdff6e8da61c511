/*
 * svc_factory_prompt.c: the task as the model reads it (svc_factory_prompt.h).
 */
#include "svc_factory_prompt.h"

void svc_factory_task_prompt(svc_factory_buf_t *buf, const svc_factory_task_t *t,
                             const svc_factory_buf_t *listing)
{
    svc_factory_buf_puts(buf, "# Task\n\n");
    svc_factory_buf_puts(buf, t->instructions);
    if (t->context && *t->context) {
        svc_factory_buf_puts(buf, "\n\n# Context\n\n");
        svc_factory_buf_puts(buf, t->context);
    }
    svc_factory_buf_printf(buf, "\n\n# Repository\n\nBranch %s. Files already tracked:\n",
                           t->branch);
    svc_factory_buf_add(buf, listing->data ? listing->data : "", listing->len);
}
