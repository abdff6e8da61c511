/*
 * svc-factory: the default factory program of a run. The supervisor starts
 * it in a sandbox without network, with the run's workspace at /workspace,
 * and speaks a line-based JSON protocol with it on stdin/stdout
 * (docs/api/factory-protocol.md). It never sees a provider key: it asks the
 * supervisor to make the one model call for it.
 *
 * A separate program: it links jansson and libc only, never the module's
 * objects, so nothing of the service's own state can reach the sandbox.
 */
#ifndef SVC_FACTORY_H
#define SVC_FACTORY_H

#include <stdarg.h>
#include <stddef.h>

#include <jansson.h>

/* Error codes of the protocol's "error" line (static strings). */
#define SVC_FACTORY_E_REPLY     "model_reply_invalid"
#define SVC_FACTORY_E_PATH      "path_refused"
#define SVC_FACTORY_E_PROVIDER  "provider_error"
#define SVC_FACTORY_E_NOPROV    "no_provider"
#define SVC_FACTORY_E_TIMEOUT   "timeout"
#define SVC_FACTORY_E_GIT       "git_failed"
#define SVC_FACTORY_E_TASK      "task_invalid"
#define SVC_FACTORY_E_INTERNAL  "internal"

/* Exit statuses: 0 a result was sent, 1 an error was sent or the run was
 * cancelled (EOF on stdin), 2 the program was called wrongly. */
#define SVC_FACTORY_EXIT_OK     0
#define SVC_FACTORY_EXIT_FAILED 1
#define SVC_FACTORY_EXIT_USAGE  2

/* A protocol line the factory writes is at most this long, newline included
 * (log lines are shortened to fit). */
#define SVC_FACTORY_LINE_OUT_MAX 4096
/* An error message is at most this many bytes of text. */
#define SVC_FACTORY_MSG_MAX      2048

/* Hard ceilings on what a task may ask for; the supervisor's limits are
 * usually far below them. They bound the memory a reply can take. */
#define SVC_FACTORY_MAX_FILES_CAP      10000
#define SVC_FACTORY_MAX_FILE_BYTES_CAP (64u * 1024 * 1024)
#define SVC_FACTORY_MAX_TOTAL_CAP      (64u * 1024 * 1024)

#define SVC_FACTORY_PATH_MAX   1024   /* bytes of one path of a reply */
#define SVC_FACTORY_DEPTH_MAX  32     /* components of one path */
#define SVC_FACTORY_NAME_MAX   255    /* bytes of one component (Linux's NAME_MAX) */

/* Why something failed: a protocol error code and a message for people. */
typedef struct {
    const char *code;
    char message[SVC_FACTORY_MSG_MAX];
} svc_factory_err_t;

/* Fills perr and returns -1, so failures read `return svc_factory_fail(...)`. */
int svc_factory_fail(svc_factory_err_t *perr, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef struct {
    size_t max_files;
    size_t max_file_bytes;
    size_t max_total_bytes;
} svc_factory_limits_t;

/* The first line from the supervisor. The strings point into doc, which
 * the task owns (svc_factory_task_free). */
typedef struct {
    json_t *doc;
    const char *run_id;
    const char *instructions;
    const char *repo;
    const char *branch;
    const char *author_name;
    const char *author_email;
    const char *context;            /* NULL when absent */
    svc_factory_limits_t limits;
} svc_factory_task_t;

/* One file of the model's answer; path and content point into the reply's
 * doc. */
typedef struct {
    const char *path;
    size_t path_len;
    const char *content;
    size_t content_len;
} svc_factory_file_t;

typedef struct {
    json_t *doc;
    const char *summary;
    svc_factory_file_t *files;      /* malloc'd; nfiles entries */
    size_t nfiles;
} svc_factory_reply_t;

/* --- svc_factory_text.c: UTF-8 and a growable buffer --------------------- */

/* Length of the valid UTF-8 sequence at p (at most n bytes), its code point
 * in *pcp; 0 when the bytes there are not valid UTF-8. */
size_t svc_factory_utf8_next(unsigned int *pcp, const unsigned char *p, size_t n);

/* Copies at most max bytes of text into out (NUL-terminated; out has room
 * for max + 1), replacing invalid UTF-8 by '?' and control characters but
 * tab by ' ', never cutting a character in two. Returns the bytes written. */
size_t svc_factory_clean(char *out, size_t max, const char *text, size_t len);

typedef struct {
    char *data;                     /* NUL-terminated; NULL until written */
    size_t len;
    size_t cap;
    int failed;                     /* an allocation failed */
} svc_factory_buf_t;

void svc_factory_buf_add(svc_factory_buf_t *buf, const char *s, size_t len);
void svc_factory_buf_puts(svc_factory_buf_t *buf, const char *s);
void svc_factory_buf_printf(svc_factory_buf_t *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void svc_factory_buf_free(svc_factory_buf_t *buf);

/* --- svc_factory_proto.c: the protocol's lines --------------------------- */

typedef struct {
    int fd;
    char *buf;
    size_t start;                   /* first unread byte */
    size_t scanned;                 /* no newline in [start, scanned) */
    size_t len;
    size_t cap;
    int eof;
} svc_factory_in_t;

/* Reads the next '\n'-terminated line of at most max bytes. Returns 1 with
 * *pline (NUL-terminated, valid until the next call) and *plen; 0 at the end
 * of input (a last line without its newline counts as not sent); -1 when the
 * line is longer than max (errno E2BIG) or reading failed. */
int svc_factory_read_line(svc_factory_in_t *in, size_t max, char **pline, size_t *plen);
void svc_factory_in_free(svc_factory_in_t *in);

/* Writes msg as one line on stdout. Returns -1 when stdout is gone (the
 * supervisor died); every later send fails too. */
int svc_factory_send(json_t *msg);
int svc_factory_out_broken(void);

/* A "log" line, shortened to fit SVC_FACTORY_LINE_OUT_MAX. */
void svc_factory_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Each line of text as a log line, with a prefix ("git: "). */
void svc_factory_log_lines(const char *prefix, const char *text, size_t len);

/* --- svc_factory_task.c ------------------------------------------------------ */

int svc_factory_task_parse(svc_factory_task_t *ptask, const char *line, size_t len,
                           svc_factory_err_t *perr);
void svc_factory_task_free(svc_factory_task_t *task);

/* --- svc_factory_reply.c ----------------------------------------------------- */

/* Parses the model's text: exactly {"summary","files":[{"path","content"}]},
 * optionally inside one ```json fence. model_reply_invalid otherwise. */
int svc_factory_reply_parse(svc_factory_reply_t *preply, const char *text, size_t len,
                            svc_factory_err_t *perr);
/* Every path acceptable and the limits kept, before anything is written:
 * path_refused naming the first offending path otherwise. */
int svc_factory_reply_check(const svc_factory_reply_t *reply,
                            const svc_factory_limits_t *limits, svc_factory_err_t *perr);
void svc_factory_reply_free(svc_factory_reply_t *reply);

/* One path by the rules of the protocol (relative, no '.', '..', empty or
 * .git component, no control character or backslash, bounded in length,
 * depth and component length). */
int svc_factory_path_check(const char *path, size_t len, svc_factory_err_t *perr);

/* --- svc_factory_write.c ----------------------------------------------------- */

/* Opens the repository's top directory (not following a symlink there). */
int svc_factory_open_repo(int *pfd, const char *repo, svc_factory_err_t *perr);
/* Refuses (path_refused) a path whose existing components are not plain
 * directories, or whose file exists as anything but a plain file with one
 * link. Writes nothing. */
int svc_factory_preflight(int rootfd, const svc_factory_reply_t *reply,
                          svc_factory_err_t *perr);
/* Writes every file below rootfd without following a symlink anywhere. */
int svc_factory_write_files(int rootfd, const svc_factory_reply_t *reply,
                            svc_factory_err_t *perr);

/* --- svc_factory_git.c ------------------------------------------------------- */

typedef struct {
    char **env;                     /* malloc'd, NULL-terminated */
    char *safe_dir;                 /* "safe.directory=<repo>" */
} svc_factory_git_t;

int svc_factory_git_init(svc_factory_git_t *pgit, const svc_factory_task_t *task,
                         const char *home, svc_factory_err_t *perr);
void svc_factory_git_free(svc_factory_git_t *git);

/* Runs git with args (NULL-terminated) in dir (NULL: the current one),
 * feeding in (may be NULL) to its stdin. Keeps at most out_max bytes of its
 * stdout in *pout (malloc'd, NUL-terminated; *ptruncated set when more came)
 * when pout is given. Its stderr goes to the log. git_failed when git does
 * not exit 0. */
int svc_factory_git_run(svc_factory_git_t *git, const char *dir, const char *const *args,
                        const char *in, size_t in_len, char **pout, size_t *pout_len,
                        size_t out_max, int *ptruncated, svc_factory_err_t *perr);

#endif /* SVC_FACTORY_H */
