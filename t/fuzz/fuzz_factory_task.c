/*
 * fuzz_factory_task.c: the factory's first line, the task the supervisor
 * sends (mod_svc/factory/svc_factory_task.c, svc_factory_task_parse). The
 * factory is a program of its own (build/svc-factory): this target links
 * its parser objects only, with jansson, as the factory does.
 *
 * Input: the line, as read from stdin (without its newline).
 *
 * Properties: a task accepted has a run_id "run_" and [A-Za-z0-9_-], non-
 * empty instructions, an absolute repo without '.', '..' or empty
 * components, a branch name git would accept and that cannot be read as
 * an option, an author without control characters or '<' '>', and limits
 * from 1 to the factory's ceilings; a task refused says why in valid UTF-8
 * (the message travels in a JSON line), with the code task_invalid.
 */
#include "fuzz.h"
#include "svc_factory.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static int no_controls(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            return 0;
        }
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    svc_factory_task_t task;
    svc_factory_err_t err;
    json_t *msg;
    const char *s;

    memset(&err, 0, sizeof(err));
    if (svc_factory_task_parse(&task, (const char *)data, size, &err) < 0) {
        FUZZ_ASSERT(err.code && strcmp(err.code, SVC_FACTORY_E_TASK) == 0);
        FUZZ_ASSERT(task.doc == NULL);
        msg = json_string(err.message);
        FUZZ_ASSERT(msg != NULL);
        json_decref(msg);
        return 0;
    }
    FUZZ_ASSERT(task.doc && task.run_id && strncmp(task.run_id, "run_", 4) == 0);
    for (s = task.run_id + 4; *s; s++) {
        FUZZ_ASSERT((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')
                    || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_');
    }
    FUZZ_ASSERT(task.instructions && *task.instructions);
    FUZZ_ASSERT(task.repo[0] == '/' && !strstr(task.repo, "//") && !strstr(task.repo, "/./")
                && !strstr(task.repo, "/../") && no_controls(task.repo));
    FUZZ_ASSERT(task.branch[0] != '-' && !strstr(task.branch, "..")
                && strcmp(task.branch, "HEAD") != 0 && no_controls(task.branch));
    FUZZ_ASSERT(*task.author_name && no_controls(task.author_name)
                && !strpbrk(task.author_name, "<>"));
    FUZZ_ASSERT(strchr(task.author_email, '@') && no_controls(task.author_email)
                && !strpbrk(task.author_email, "<> "));
    FUZZ_ASSERT(task.limits.max_files >= 1
                && task.limits.max_files <= SVC_FACTORY_MAX_FILES_CAP);
    FUZZ_ASSERT(task.limits.max_file_bytes >= 1
                && task.limits.max_file_bytes <= SVC_FACTORY_MAX_FILE_BYTES_CAP);
    FUZZ_ASSERT(task.limits.max_total_bytes >= 1
                && task.limits.max_total_bytes <= SVC_FACTORY_MAX_TOTAL_CAP);
    svc_factory_task_free(&task);
    return 0;
}
