/*
 * The agent's tools on the repository: list_files, read_file, write_file
 * and edit_file. Every path obeys the rules of single mode (relative, no
 * '.', '..', empty or .git component, no control character or backslash)
 * and is reached without following a symbolic link (svc_factory_walk), so
 * a planted `docs -> /etc` in a cloned repository leads nowhere. What goes
 * wrong is told to the model as the tool's answer; the run goes on.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "svc_factory.h"

#define LIST_MAX_ENTRIES 2000
#define LIST_MAX_BYTES   (64 * 1024)
#define LIST_MAX_DEPTH   SVC_FACTORY_DEPTH_MAX
#define READ_MAX_FILE    (16 * 1024 * 1024)
#define READ_MAX_OUT     (64 * 1024)

/* The tools as the model sees them: name, what they do, JSON Schema. */
static const char tool_defs_json[] =
    "["
    "{\"name\":\"list_files\",\"description\":\"List the paths of the files below a directory "
    "of the repository (recursively; .git is left out). Paths only.\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":"
    "\"A directory relative to the top of the repository; omit it for the top.\"}},"
    "\"required\":[]}},"
    "{\"name\":\"read_file\",\"description\":\"Read a text file of the repository, whole or "
    "a range of lines (1-based, inclusive). At most 64 KiB of text is shown at once.\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
    "\"start_line\":{\"type\":\"integer\",\"minimum\":1},\"end_line\":{\"type\":\"integer\","
    "\"minimum\":1}},\"required\":[\"path\"]}},"
    "{\"name\":\"write_file\",\"description\":\"Write a whole file (created with its "
    "directories, or replaced).\",\"parameters\":{\"type\":\"object\",\"properties\":"
    "{\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\",\"description\":"
    "\"The complete new text of the file.\"}},\"required\":[\"path\",\"content\"]}},"
    "{\"name\":\"edit_file\",\"description\":\"Replace one exact span of a file's text with "
    "new text. old_text must occur exactly once in the file (copy it from read_file, white "
    "space included); otherwise nothing changes and you are told why.\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"old_text\":"
    "{\"type\":\"string\"},\"new_text\":{\"type\":\"string\"}},\"required\":[\"path\","
    "\"old_text\",\"new_text\"]}},"
    "{\"name\":\"run\",\"description\":\"Run a shell command (sh -c) in the top directory of "
    "the repository: build, test, inspect. No network. You get its exit status and the last "
    "16 KiB of its output (stdout and stderr together). Processes it leaves running are "
    "stopped when it ends.\",\"parameters\":{\"type\":\"object\",\"properties\":"
    "{\"command\":{\"type\":\"string\"}},\"required\":[\"command\"]}},"
    "{\"name\":\"finish\",\"description\":\"The work is done: everything in the repository "
    "is committed with the summary as the commit message.\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"summary\":{\"type\":\"string\",\"description\":\"One line "
    "saying what was done.\"}},\"required\":[\"summary\"]}}"
    "]";

json_t *svc_factory_tool_defs(void)
{
    json_error_t jerr;

    return json_loads(tool_defs_json, 0, &jerr);
}

static void say(svc_factory_tool_out_t *out, int is_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(svc_factory_tool_out_t *out, int is_error, const char *fmt, ...)
{
    char text[SVC_FACTORY_MSG_MAX * 2];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    out->is_error = is_error;
    svc_factory_buf_puts(&out->text, text);
}

static void brief(svc_factory_tool_out_t *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void brief(svc_factory_tool_out_t *out, const char *fmt, ...)
{
    char raw[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    svc_factory_clean(out->brief, sizeof(out->brief) - 1, raw, strlen(raw));
}

/* Appends text that may be anything to buf as valid UTF-8: invalid bytes
 * and NUL become '?', control characters but newline and tab a space. */
static void add_text(svc_factory_buf_t *buf, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0, start = 0;

    while (i < len) {
        unsigned int cp = 0;
        size_t n = svc_factory_utf8_next(&cp, p + i, len - i);
        const char *repl = NULL;

        if (n == 0) {
            repl = "?";
            n = 1;
        }
        else if (cp == 0) {
            repl = "?";
        }
        else if ((cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7f) {
            repl = " ";
        }
        if (repl) {
            svc_factory_buf_add(buf, text + start, i - start);
            svc_factory_buf_puts(buf, repl);
            start = i + n;
        }
        i += n;
    }
    svc_factory_buf_add(buf, text + start, len - start);
}

void svc_factory_tool_text(svc_factory_buf_t *buf, const char *text, size_t len)
{
    add_text(buf, text, len);
}

/* The string member name of args, or NULL. */
static const char *arg_str(json_t *args, const char *name, size_t *plen)
{
    json_t *v = json_object_get(args, name);

    if (plen) {
        *plen = json_is_string(v) ? json_string_length(v) : 0;
    }
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* --- list_files ------------------------------------------------------------- */

typedef struct {
    char **paths;
    size_t n, cap;
    size_t bytes;
    size_t more;                    /* entries not kept */
} listing_t;

static void listing_add(listing_t *l, const char *path, const char *suffix)
{
    size_t len = strlen(path) + strlen(suffix);
    char *copy;

    if (l->n >= LIST_MAX_ENTRIES || l->bytes + len + 1 > LIST_MAX_BYTES) {
        l->more++;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **p = realloc(l->paths, cap * sizeof(*p));

        if (!p) {
            l->more++;
            return;
        }
        l->paths = p;
        l->cap = cap;
    }
    copy = malloc(len + 1);
    if (!copy) {
        l->more++;
        return;
    }
    strcpy(copy, path);
    strcat(copy, suffix);
    l->paths[l->n++] = copy;
    l->bytes += len + 1;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every entry below the open directory fd (which this closes), named from
 * prefix; directories are entered without following a symlink. */
static void list_dir(listing_t *l, int fd, const char *prefix, int depth)
{
    DIR *d = fdopendir(fd);
    struct dirent *de;
    int entries = 0;

    if (!d) {
        close(fd);
        return;
    }
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        char *path;
        size_t n;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        entries++;
        /* git's own directory is not the project's. */
        if (strcmp(de->d_name, ".git") == 0) {
            continue;
        }
        n = strlen(prefix) + strlen(de->d_name) + 2;
        path = malloc(n);
        if (!path) {
            continue;
        }
        snprintf(path, n, "%s%s%s", prefix, *prefix ? "/" : "", de->d_name);
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            free(path);
            continue;
        }
        if (S_ISDIR(st.st_mode) && depth < LIST_MAX_DEPTH) {
            int sub = openat(dirfd(d), de->d_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            size_t before = l->n + l->more;

            if (sub >= 0) {
                list_dir(l, sub, path, depth + 1);
            }
            if (l->n + l->more == before) {
                listing_add(l, path, "/");      /* an empty directory */
            }
        }
        else if (S_ISLNK(st.st_mode)) {
            listing_add(l, path, " (symbolic link: not followed)");
        }
        else {
            listing_add(l, path, "");
        }
        free(path);
    }
    (void)entries;
    closedir(d);
}

static void list_files(svc_factory_t *f, json_t *args, svc_factory_tool_out_t *out)
{
    const char *path = arg_str(args, "path", NULL);
    svc_factory_err_t err;
    listing_t l = { 0 };
    const char *name;
    char *copy = NULL;
    int dirfd = -1, fd = -1;
    size_t i;

    if (json_object_get(args, "path") && !path) {
        say(out, 1, "path must be a string (a directory), or left out for the top");
        brief(out, "(bad arguments)");
        return;
    }
    if (!path || !*path || strcmp(path, ".") == 0 || strcmp(path, "/") == 0) {
        path = "";
    }
    brief(out, "%s", *path ? path : ".");
    if (!*path) {
        fd = dup(f->rootfd);
    }
    else {
        size_t len = strlen(path);

        /* "src/" names the directory src. */
        while (len > 1 && path[len - 1] == '/') {
            len--;
        }
        copy = malloc(SVC_FACTORY_PATH_MAX + 1);
        if (!copy) {
            say(out, 1, "out of memory");
            return;
        }
        if (len > SVC_FACTORY_PATH_MAX) {
            say(out, 1, "path '%.200s...' is too long", path);
            goto cleanup;
        }
        memcpy(copy, path, len);
        copy[len] = '\0';
        {
            char *walk_copy = malloc(SVC_FACTORY_PATH_MAX + 1);

            if (!walk_copy) {
                say(out, 1, "out of memory");
                goto cleanup;
            }
            if (svc_factory_path_check(copy, len, &err) < 0
                || svc_factory_walk(&dirfd, &name, f->rootfd, copy, walk_copy, 0, &err) < 0) {
                say(out, 1, "%s", err.message);
                free(walk_copy);
                goto cleanup;
            }
            if (dirfd >= 0) {
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno != ENOENT) {
                    say(out, 1, "'%s' is not a directory (or is a symbolic link)", copy);
                    free(walk_copy);
                    goto cleanup;
                }
            }
            free(walk_copy);
        }
        if (fd < 0) {
            say(out, 1, "there is no directory '%s'", copy);
            goto cleanup;
        }
    }
    if (fd < 0) {
        say(out, 1, "cannot open the repository: %s", strerror(errno));
        goto cleanup;
    }
    list_dir(&l, fd, copy ? copy : "", 0);
    qsort(l.paths, l.n, sizeof(*l.paths), str_cmp);
    for (i = 0; i < l.n; i++) {
        add_text(&out->text, l.paths[i], strlen(l.paths[i]));
        svc_factory_buf_puts(&out->text, "\n");
    }
    if (l.n == 0 && l.more == 0) {
        svc_factory_buf_puts(&out->text, "(no files)\n");
    }
    if (l.more) {
        svc_factory_buf_printf(&out->text, "[... and %zu more paths not shown: list a "
                               "directory further down]\n", l.more);
    }
cleanup:
    for (i = 0; i < l.n; i++) {
        free(l.paths[i]);
    }
    free(l.paths);
    free(copy);
    if (dirfd >= 0 && dirfd != f->rootfd) {
        close(dirfd);
    }
}

/* --- read_file -------------------------------------------------------------- */

/* Whether a json value is a positive integer (for line numbers). */
static int line_arg(json_t *args, const char *name, size_t *pv, int *pbad)
{
    json_t *v = json_object_get(args, name);

    if (!v || json_is_null(v)) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1) {
        *pbad = 1;
        return 0;
    }
    *pv = (size_t)json_integer_value(v);
    return 1;
}

static void read_file(svc_factory_t *f, json_t *args, svc_factory_tool_out_t *out)
{
    const char *path = arg_str(args, "path", NULL);
    size_t first = 1, last = 0, lines = 0, i, len = 0, from = 0, to, shown_last;
    int has_first, has_last, bad = 0;
    svc_factory_err_t err;
    char *data = NULL;

    if (!path) {
        say(out, 1, "read_file needs path (a string)");
        brief(out, "(bad arguments)");
        return;
    }
    has_first = line_arg(args, "start_line", &first, &bad);
    has_last = line_arg(args, "end_line", &last, &bad);
    if (has_last) {
        brief(out, "%s (lines %zu-%zu)", path, first, last);
    }
    else if (has_first) {
        brief(out, "%s (lines %zu-end)", path, first);
    }
    else {
        brief(out, "%s", path);
    }
    if (bad) {
        say(out, 1, "start_line and end_line must be whole numbers from 1");
        return;
    }
    if (svc_factory_read_path(f->rootfd, path, READ_MAX_FILE, &data, &len, &err) < 0) {
        say(out, 1, "%s", err.message);
        return;
    }
    if (memchr(data, '\0', len < 8192 ? len : 8192)) {
        say(out, 0, "'%s' is a binary file (%zu bytes); it is not shown", path, len);
        goto cleanup;
    }
    for (i = 0; i < len; i++) {
        lines += data[i] == '\n';
    }
    if (len > 0 && data[len - 1] != '\n') {
        lines++;
    }
    if (!has_last || last > lines) {
        last = lines;
    }
    if (len == 0) {
        say(out, 0, "(the file '%s' is empty)", path);
        goto cleanup;
    }
    if (first > lines || first > last) {
        say(out, 1, "'%s' has %zu lines: start_line %zu is past its end (or after end_line)",
            path, lines, first);
        goto cleanup;
    }
    /* The byte range of lines first..last. */
    {
        size_t line = 1;

        for (i = 0; i < len && line < first; i++) {
            if (data[i] == '\n') {
                line++;
            }
        }
        from = i;
        for (; i < len && line <= last; i++) {
            if (data[i] == '\n') {
                line++;
            }
        }
        to = i;
    }
    shown_last = last;
    if (to - from > READ_MAX_OUT) {
        /* Cut at the end of a line, or inside one that is longer than
         * everything that may be shown. */
        size_t cut = from + READ_MAX_OUT, line = first;

        while (cut > from && data[cut - 1] != '\n') {
            cut--;
        }
        if (cut == from) {
            cut = from + READ_MAX_OUT;
        }
        for (i = from; i < cut; i++) {
            line += data[i] == '\n';
        }
        shown_last = line - (cut > from && data[cut - 1] == '\n' ? 1 : 0);
        to = cut;
    }
    add_text(&out->text, data + from, to - from);
    if (first > 1 || shown_last < lines) {
        svc_factory_buf_printf(&out->text, "%s[lines %zu-%zu of %zu shown%s]\n",
                               to > from && data[to - 1] == '\n' ? "" : "\n", first,
                               shown_last, lines,
                               shown_last < last ? ": the rest did not fit; ask for a range "
                               "with start_line and end_line" : "");
    }
cleanup:
    free(data);
}

/* --- write_file and edit_file ------------------------------------------------- */

static size_t count_lines(const char *s, size_t len)
{
    size_t n = 0, i;

    for (i = 0; i < len; i++) {
        n += s[i] == '\n';
    }
    return n + (len > 0 && s[len - 1] != '\n');
}

static void write_file(svc_factory_t *f, json_t *args, svc_factory_tool_out_t *out)
{
    size_t len;
    const char *path = arg_str(args, "path", NULL);
    const char *content = arg_str(args, "content", &len);
    svc_factory_err_t err;

    if (!path || !content) {
        say(out, 1, "write_file needs path and content (strings)");
        brief(out, "%s", path ? path : "(bad arguments)");
        return;
    }
    brief(out, "%s (%zu bytes)", path, len);
    if (len > f->task.limits.max_file_bytes) {
        say(out, 1, "'%s' would be %zu bytes, more than the limit of %zu; nothing was written",
            path, len, f->task.limits.max_file_bytes);
        return;
    }
    if (svc_factory_write_path(f->rootfd, path, content, len, &err) < 0) {
        say(out, 1, "%s; nothing was written", err.message);
        return;
    }
    say(out, 0, "wrote %s (%zu bytes, %zu lines)", path, len, count_lines(content, len));
}

static void edit_file(svc_factory_t *f, json_t *args, svc_factory_tool_out_t *out)
{
    size_t old_len, new_len, len = 0, count = 0, first = 0;
    const char *path = arg_str(args, "path", NULL);
    const char *old_text = arg_str(args, "old_text", &old_len);
    const char *new_text = arg_str(args, "new_text", &new_len);
    svc_factory_buf_t edited = { 0 };
    svc_factory_err_t err;
    char *data = NULL;
    const char *at;

    if (!path || !old_text || !new_text) {
        say(out, 1, "edit_file needs path, old_text and new_text (strings)");
        brief(out, "%s", path ? path : "(bad arguments)");
        return;
    }
    brief(out, "%s", path);
    if (old_len == 0) {
        say(out, 1, "old_text is empty: give the exact text to replace; nothing was changed");
        return;
    }
    if (svc_factory_read_path(f->rootfd, path, f->task.limits.max_file_bytes, &data, &len,
                              &err) < 0) {
        say(out, 1, "%s; nothing was changed", err.message);
        return;
    }
    for (at = data; (at = memmem(at, len - (size_t)(at - data), old_text, old_len)) != NULL;
         at += old_len) {
        if (count++ == 0) {
            first = (size_t)(at - data);
        }
    }
    if (count == 0) {
        say(out, 1, "old_text was not found in %s; nothing was changed. Read the file again "
            "and copy the text exactly, white space and line ends included.", path);
        goto cleanup;
    }
    if (count > 1) {
        say(out, 1, "old_text occurs %zu times in %s; it must occur exactly once, so nothing "
            "was changed. Include more of the lines around it to make it unique.", count,
            path);
        goto cleanup;
    }
    if (len - old_len + new_len > f->task.limits.max_file_bytes) {
        say(out, 1, "%s would be more than the limit of %zu bytes; nothing was changed", path,
            f->task.limits.max_file_bytes);
        goto cleanup;
    }
    svc_factory_buf_add(&edited, data, first);
    svc_factory_buf_add(&edited, new_text, new_len);
    svc_factory_buf_add(&edited, data + first + old_len, len - first - old_len);
    if (edited.failed) {
        say(out, 1, "out of memory; nothing was changed");
        goto cleanup;
    }
    if (svc_factory_write_path(f->rootfd, path, edited.data ? edited.data : "", edited.len,
                               &err) < 0) {
        say(out, 1, "%s; nothing was changed", err.message);
        goto cleanup;
    }
    say(out, 0, "edited %s: replaced %zu line(s) with %zu", path,
        count_lines(old_text, old_len), count_lines(new_text, new_len));
cleanup:
    svc_factory_buf_free(&edited);
    free(data);
}

int svc_factory_tool_fs(svc_factory_t *f, const char *name, json_t *args,
                        svc_factory_tool_out_t *out)
{
    if (strcmp(name, "list_files") == 0) {
        list_files(f, args, out);
    }
    else if (strcmp(name, "read_file") == 0) {
        read_file(f, args, out);
    }
    else if (strcmp(name, "write_file") == 0) {
        write_file(f, args, out);
    }
    else if (strcmp(name, "edit_file") == 0) {
        edit_file(f, args, out);
    }
    else {
        return -1;
    }
    if (out->text.failed) {
        svc_factory_buf_free(&out->text);
        out->is_error = 1;
        svc_factory_buf_puts(&out->text, "out of memory");
    }
    return 0;
}
