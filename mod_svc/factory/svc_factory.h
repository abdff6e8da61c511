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
/* The task's "bundle" (the run's artifact) could not be made. */
#define SVC_FACTORY_E_BUNDLE    "bundle_failed"
/* Agent mode: the run reached SvcRunMaxSteps, or the supervisor refused a
 * model call at SvcRunMaxTokens. The work so far is committed all the same
 * and the result line says why it stopped. */
#define SVC_FACTORY_E_STEPS     "step_limit"
#define SVC_FACTORY_E_TOKENS    "token_limit"

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
    /* Agent mode (optional members of the task's limits). */
    size_t max_steps;               /* tool calls a run may make (SvcRunMaxSteps) */
    int command_timeout;            /* seconds one `run` may take (SvcRunCommandTimeout) */
    size_t context_bytes;           /* the conversation is kept under this many bytes */
} svc_factory_limits_t;

#define SVC_FACTORY_MAX_STEPS_DEFAULT       50
#define SVC_FACTORY_MAX_STEPS_CAP           10000
#define SVC_FACTORY_COMMAND_TIMEOUT_DEFAULT 120
#define SVC_FACTORY_COMMAND_TIMEOUT_CAP     86400
#define SVC_FACTORY_CONTEXT_DEFAULT         (400u * 1000)
#define SVC_FACTORY_CONTEXT_MIN             4096
#define SVC_FACTORY_CONTEXT_CAP             (64u * 1024 * 1024)

/* The first line from the supervisor. The strings point into doc, which
 * the task owns (svc_factory_task_free). */
typedef struct {
    json_t *doc;
    const char *run_id, *instructions;
    const char *repo, *branch;
    const char *author_name, *author_email;
    const char *context;            /* NULL when absent */
    const char *bundle;             /* where the git bundle of the branch goes; NULL: none */
    int agent;                      /* "mode": "agent" (else "single", the default) */
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

/* Walks the directories of path below rootfd. On success *pdirfd is the
 * last directory (rootfd itself or a descriptor to close) and *pname the
 * file's name inside it (pointing into copy, which has room for
 * SVC_FACTORY_PATH_MAX + 1 bytes). With create, missing directories are
 * made; without, *pdirfd is -1 when one is missing. */
int svc_factory_walk(int *pdirfd, const char **pname, int rootfd, const char *path, char *copy,
                     int create, svc_factory_err_t *perr);

/* One file, by the rules of svc_factory_path_check and without following a
 * symlink: written whole (a plain file with one link, or made), or read
 * (a plain file of at most max bytes; *pdata malloc'd, NUL-terminated).
 * path_refused says what is wrong with the path. */
int svc_factory_write_path(int rootfd, const char *path, const char *content, size_t len,
                           svc_factory_err_t *perr);
int svc_factory_read_path(int rootfd, const char *path, size_t max, char **pdata,
                          size_t *plen, svc_factory_err_t *perr);

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

/* --- svc_factory_shared.c: the factory's state and what both modes share ----- */

typedef struct {
    svc_factory_in_t in;
    svc_factory_task_t task;
    svc_factory_git_t git;
    svc_factory_reply_t reply;      /* single mode: the model's answer */
    json_t *reply_msg;              /* the supervisor's last model_reply line */
    char *home;                     /* git's HOME, beside the repository */
    char *start;                    /* HEAD when the run began; NULL: a new repository */
    int rootfd;                     /* the repository's top directory */
    int next_id;                    /* the id of the next model request */
    /* The outcome, for the result line. */
    char *summary;                  /* malloc'd */
    char *sha;                      /* malloc'd */
    json_t *files;                  /* the paths, in order */
    svc_factory_err_t stopped;      /* agent mode: code set when it stopped at a limit */
} svc_factory_t;

/* Not a protocol code: stdin ended, the supervisor cancelled the run. */
extern const char svc_factory_cancelled[];

/*
 * One model call: sends msg (its "type" and "id" are set here) and reads
 * the supervisor's model_reply, checked member by member (agent mode: with
 * tool_calls, stop and usage). On ok:true *preply is the line (owned by
 * f->reply_msg until the next call). ok:false ends here with its code
 * (perr) when the code is one the protocol passes on; anything else is
 * internal, "protocol: ...". EOF: perr->code is svc_factory_cancelled.
 */
int svc_factory_model_call(svc_factory_t *f, json_t *msg, json_t **preply,
                           svc_factory_err_t *perr);

/*
 * Commits everything git sees in the workspace (git add -A: what a
 * .gitignore ignores stays out) on the run's branch with summary as the
 * message, then sets f->sha and f->files: the paths the run changed since
 * f->start (every path when the repository is new).
 */
int svc_factory_commit_all(svc_factory_t *f, const char *summary, svc_factory_err_t *perr);

/* git commit (of what is staged) with this message; the commit's id into
 * f->sha. */
int svc_factory_commit(svc_factory_t *f, const char *summary, svc_factory_err_t *perr);
int svc_factory_head(svc_factory_t *f, svc_factory_err_t *perr);
/* The task's bundle, when it asks for one: `git bundle create` of HEAD and
 * the run's branch (after the last commit, before the result line). */
int svc_factory_bundle(svc_factory_t *f, svc_factory_err_t *perr);

/* The size limit of the supervisor's model_reply line for these limits. */
size_t svc_factory_reply_line_max(const svc_factory_limits_t *l);

/* --- svc_factory_agent.c: the agent's loop -------------------------------------- */

/* From the prepared repository to the commit: model calls with tools until
 * the model calls finish, or a limit stops it (f->stopped, work committed). */
int svc_factory_agent(svc_factory_t *f, const svc_factory_buf_t *listing,
                      svc_factory_err_t *perr);

/* --- svc_factory_tools.c: the tools on the workspace ---------------------------- */

/* What a tool did: its text for the model, whether that is an error, and
 * the short form of its arguments for the run's step line. */
typedef struct {
    svc_factory_buf_t text;
    int is_error;
    char brief[201];
} svc_factory_tool_out_t;

/* Appends any bytes to buf as valid UTF-8 for a JSON line: invalid bytes
 * and NUL as '?', control characters but newline and tab as spaces. */
void svc_factory_tool_text(svc_factory_buf_t *buf, const char *text, size_t len);

/* The tools' JSON Schema definitions, for the model request (new reference). */
json_t *svc_factory_tool_defs(void);

/* list_files, read_file, write_file and edit_file; 0 when the name is one
 * of them (out filled, failures included), -1 for another name. */
int svc_factory_tool_fs(svc_factory_t *f, const char *name, json_t *args,
                        svc_factory_tool_out_t *out);

/* --- svc_factory_run.c: the `run` tool ------------------------------------------ */

/* The last bytes of a command's output the model sees. */
#define SVC_FACTORY_RUN_TAIL (16 * 1024)

typedef struct {
    int exit_status;                /* -1 when it was killed (timed_out, or signal) */
    int signal;                     /* the signal that ended it, or 0 */
    int timed_out;                  /* killed at the command timeout */
    int leftovers;                  /* processes it left behind, killed after it */
    long duration_ms;
    size_t total;                   /* bytes of output in all */
    char *tail;                     /* its last SVC_FACTORY_RUN_TAIL bytes (malloc'd) */
    size_t tail_len;
} svc_factory_run_t;

/* Once, before the first command: the factory becomes the subreaper of
 * what commands leave behind, and undumpable (a command cannot open its
 * descriptors through /proc). */
void svc_factory_run_init(void);

/*
 * Runs `sh -c command` in cwd with envp, its stdin /dev/null, stdout and
 * stderr one pipe, in a new session; kills it (its process group) after
 * timeout_s seconds; then kills every process it left behind. Each line of
 * output goes to the log as it comes. -1 (internal) only when it could not
 * be started at all.
 */
int svc_factory_run(svc_factory_run_t *res, const char *command, const char *cwd,
                    int timeout_s, char *const *envp, svc_factory_err_t *perr);
void svc_factory_run_free(svc_factory_run_t *res);

#endif /* SVC_FACTORY_H */
