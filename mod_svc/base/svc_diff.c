/*
 * svc_diff.c: line diffs (Myers' O(ND) algorithm with the middle snake, in
 * linear space), the unified format, and a strict applier.
 */
#include "svc_diff.h"
#include "svc_json.h"

#include <apr_hash.h>
#include <string.h>

/* About a second of work on one core before a region is given up on. */
#define SVC_DIFF_DEFAULT_WORK 50000000

typedef struct {
    const char *s;
    apr_size_t len;             /* with its '\n', if it has one */
} line_t;

/* The lines of a text, in an array from p. */
static line_t *split_lines(apr_pool_t *p, const char *t, apr_size_t n, int *pcount)
{
    apr_size_t i, start = 0;
    int count = 0, k = 0;
    line_t *lines;

    for (i = 0; i < n; i++) {
        count += t[i] == '\n';
    }
    if (n > 0 && t[n - 1] != '\n') {
        count++;
    }
    lines = apr_palloc(p, sizeof(*lines) * (apr_size_t)(count ? count : 1));
    for (i = 0; i < n; i++) {
        if (t[i] == '\n') {
            lines[k].s = t + start;
            lines[k++].len = i + 1 - start;
            start = i + 1;
        }
    }
    if (start < n) {
        lines[k].s = t + start;
        lines[k++].len = n - start;
    }
    *pcount = count;
    return lines;
}

static int line_has_nl(const line_t *l)
{
    return l->len > 0 && l->s[l->len - 1] == '\n';
}

/* Equal lines get equal numbers, so the algorithm compares integers. */
static int *line_ids(apr_hash_t *ids, apr_pool_t *p, const line_t *lines, int n)
{
    int *out = apr_palloc(p, sizeof(int) * (apr_size_t)(n ? n : 1));
    int i;

    for (i = 0; i < n; i++) {
        int *id = apr_hash_get(ids, lines[i].s, (apr_ssize_t)lines[i].len);
        if (!id) {
            id = apr_palloc(p, sizeof(*id));
            *id = (int)apr_hash_count(ids);
            apr_hash_set(ids, lines[i].s, (apr_ssize_t)lines[i].len, id);
        }
        out[i] = *id;
    }
    return out;
}

typedef struct {
    const int *a, *b;
    char *adel, *bins;          /* which lines of a are removed, of b added */
    int *v1, *v2;               /* furthest reaching paths, reused by every bisection */
    apr_int64_t work;           /* steps left before regions are given up on */
} dctx_t;

static void mark_all(dctx_t *d, int a0, int a1, int b0, int b1)
{
    memset(d->adel + a0, 1, (apr_size_t)(a1 - a0));
    memset(d->bins + b0, 1, (apr_size_t)(b1 - b0));
}

/*
 * The middle snake of a[a0,a1) against b[b0,b1): a point (x, y) on a
 * shortest edit path, found by running the forward and the reverse search
 * at once until they overlap (Myers 1986, section 4b). 0 when the work
 * budget ran out.
 */
static int bisect(dctx_t *d, int a0, int a1, int b0, int b1, int *px, int *py)
{
    const int *A = d->a + a0, *B = d->b + b0;
    int N = a1 - a0, M = b1 - b0;
    int max_d = (N + M + 1) / 2;
    int off = max_d, vlen = 2 * max_d;
    int *v1 = d->v1, *v2 = d->v2;
    int delta = N - M;
    int front = delta % 2 != 0;
    int k1start = 0, k1end = 0, k2start = 0, k2end = 0;
    int i, D, k1, k2;

    for (i = 0; i < vlen + 2; i++) {
        v1[i] = v2[i] = -1;
    }
    v1[off + 1] = 0;
    v2[off + 1] = 0;
    for (D = 0; D < max_d; D++) {
        if (d->work <= 0) {
            return 0;
        }
        d->work -= 2 * D + 2;
        /* Forward. */
        for (k1 = -D + k1start; k1 <= D - k1end; k1 += 2) {
            int k1o = off + k1, x1, y1, k2o;

            if (k1 == -D || (k1 != D && v1[k1o - 1] < v1[k1o + 1])) {
                x1 = v1[k1o + 1];
            }
            else {
                x1 = v1[k1o - 1] + 1;
            }
            y1 = x1 - k1;
            while (x1 < N && y1 < M && A[x1] == B[y1]) {
                x1++;
                y1++;
                d->work--;
            }
            v1[k1o] = x1;
            if (x1 > N) {
                k1end += 2;
            }
            else if (y1 > M) {
                k1start += 2;
            }
            else if (front) {
                k2o = off + delta - k1;
                if (k2o >= 0 && k2o < vlen && v2[k2o] != -1 && x1 >= N - v2[k2o]) {
                    *px = a0 + x1;
                    *py = b0 + y1;
                    return 1;
                }
            }
        }
        /* Reverse. */
        for (k2 = -D + k2start; k2 <= D - k2end; k2 += 2) {
            int k2o = off + k2, x2, y2, k1o;

            if (k2 == -D || (k2 != D && v2[k2o - 1] < v2[k2o + 1])) {
                x2 = v2[k2o + 1];
            }
            else {
                x2 = v2[k2o - 1] + 1;
            }
            y2 = x2 - k2;
            while (x2 < N && y2 < M && A[N - x2 - 1] == B[M - y2 - 1]) {
                x2++;
                y2++;
                d->work--;
            }
            v2[k2o] = x2;
            if (x2 > N) {
                k2end += 2;
            }
            else if (y2 > M) {
                k2start += 2;
            }
            else if (!front) {
                k1o = off + delta - k2;
                if (k1o >= 0 && k1o < vlen && v1[k1o] != -1) {
                    int x1 = v1[k1o];
                    int y1 = off + x1 - k1o;
                    if (x1 >= N - x2) {
                        *px = a0 + x1;
                        *py = b0 + y1;
                        return 1;
                    }
                }
            }
        }
    }
    return 0;
}

static void compare(dctx_t *d, int a0, int a1, int b0, int b1)
{
    int x, y;

    while (a0 < a1 && b0 < b1 && d->a[a0] == d->b[b0]) {
        a0++;
        b0++;
    }
    while (a0 < a1 && b0 < b1 && d->a[a1 - 1] == d->b[b1 - 1]) {
        a1--;
        b1--;
    }
    if (a0 == a1 || b0 == b1 || !bisect(d, a0, a1, b0, b1, &x, &y)) {
        mark_all(d, a0, a1, b0, b1);
        return;
    }
    compare(d, a0, x, b0, y);
    compare(d, x, a1, y, b1);
}

/* One step of the edit script: '=' keeps a[ai] (= b[bi]), '-' removes
 * a[ai], '+' adds b[bi]; the other index is where the step happens. */
typedef struct {
    char t;
    int ai, bi;
} op_t;

static void write_line(svc_jbuf_t *o, char prefix, const line_t *l)
{
    int nl = line_has_nl(l);

    svc_jbuf_raw(o, &prefix, 1);
    svc_jbuf_raw(o, l->s, l->len - (apr_size_t)nl);
    svc_jbuf_raw(o, "\n", 1);
    if (!nl) {
        svc_jbuf_raw(o, "\\ No newline at end of file\n", 28);
    }
}

static void write_hunk(svc_jbuf_t *o, const op_t *ops, int start, int stop,
                       const line_t *la, const line_t *lb)
{
    int ac = 0, bc = 0, i;
    char head[80];

    for (i = start; i < stop; i++) {
        ac += ops[i].t != '+';
        bc += ops[i].t != '-';
    }
    svc_jbuf_raw(o, head, (apr_size_t)apr_snprintf(head, sizeof(head), "@@ -%d,%d +%d,%d @@\n",
                                                   ops[start].ai + (ac > 0), ac,
                                                   ops[start].bi + (bc > 0), bc));
    for (i = start; i < stop; i++) {
        if (ops[i].t == '+') {
            write_line(o, '+', &lb[ops[i].bi]);
        }
        else {
            write_line(o, ops[i].t == '=' ? ' ' : '-', &la[ops[i].ai]);
        }
    }
}

const char *svc_diff_unified(apr_pool_t *p, const char *a, apr_size_t alen,
                             const char *b, apr_size_t blen, const char *name, int context,
                             apr_int64_t work)
{
    apr_hash_t *ids = apr_hash_make(p);
    line_t *la, *lb;
    int na, nb, i, j, k, n, floor_, start, stop, last, e, r;
    svc_jbuf_t o;
    dctx_t d;
    op_t *ops;

    la = split_lines(p, a, alen, &na);
    lb = split_lines(p, b, blen, &nb);
    d.a = line_ids(ids, p, la, na);
    d.b = line_ids(ids, p, lb, nb);
    d.adel = apr_pcalloc(p, (apr_size_t)na + 1);
    d.bins = apr_pcalloc(p, (apr_size_t)nb + 1);
    d.v1 = apr_palloc(p, sizeof(int) * ((apr_size_t)na + (apr_size_t)nb + 4));
    d.v2 = apr_palloc(p, sizeof(int) * ((apr_size_t)na + (apr_size_t)nb + 4));
    d.work = work > 0 ? work : SVC_DIFF_DEFAULT_WORK;
    compare(&d, 0, na, 0, nb);

    ops = apr_palloc(p, sizeof(*ops) * ((apr_size_t)na + (apr_size_t)nb + 1));
    for (i = 0, j = 0, n = 0; i < na || j < nb; n++) {
        ops[n].ai = i;
        ops[n].bi = j;
        if (i < na && (d.adel[i] || j >= nb)) {
            ops[n].t = '-';
            i++;
        }
        else if (j < nb && (d.bins[j] || i >= na)) {
            ops[n].t = '+';
            j++;
        }
        else {
            ops[n].t = '=';
            i++;
            j++;
        }
    }

    svc_jbuf_init(&o, p, 256);
    if (context < 0) {
        context = 0;
    }
    for (k = 0, floor_ = 0;;) {
        while (k < n && ops[k].t == '=') {
            k++;
        }
        if (k == n) {
            break;
        }
        if (o.len == 0) {
            svc_jbuf_raw(&o, "--- a/", 6);
            svc_jbuf_raw(&o, name, strlen(name));
            svc_jbuf_raw(&o, "\n+++ b/", 7);
            svc_jbuf_raw(&o, name, strlen(name));
            svc_jbuf_raw(&o, "\n", 1);
        }
        start = k - context < floor_ ? floor_ : k - context;
        /* Changes closer than twice the context share a hunk. */
        for (e = k, last = k; e < n;) {
            if (ops[e].t != '=') {
                last = ++e;
                continue;
            }
            for (r = e; r < n && ops[r].t == '='; r++) {
            }
            if (r == n || r - e > 2 * context) {
                break;
            }
            e = r;
        }
        stop = last + context > n ? n : last + context;
        write_hunk(&o, ops, start, stop, la, lb);
        k = floor_ = stop;
    }
    return svc_jbuf_text(&o, NULL);
}

/* The next line of a diff (without its '\n'), or 0 at the end. */
static int next_diff_line(const char **pcur, const char *end, const char **pline,
                          apr_size_t *plen)
{
    const char *s = *pcur, *nl;

    if (s >= end) {
        return 0;
    }
    nl = memchr(s, '\n', (apr_size_t)(end - s));
    *pline = s;
    *plen = nl ? (apr_size_t)(nl - s) : (apr_size_t)(end - s);
    *pcur = nl ? nl + 1 : end;
    return 1;
}

/* "N" or "N,M" at *ps: the numbers, and *ps after them. */
static int parse_range(const char **ps, const char *end, long *pstart, long *pcount)
{
    const char *s = *ps;
    long v = 0;
    int digits = 0;

    for (; s < end && *s >= '0' && *s <= '9' && digits < 9; s++, digits++) {
        v = v * 10 + (*s - '0');
    }
    if (!digits) {
        return 0;
    }
    *pstart = v;
    *pcount = 1;
    if (s < end && *s == ',') {
        v = 0;
        digits = 0;
        for (s++; s < end && *s >= '0' && *s <= '9' && digits < 9; s++, digits++) {
            v = v * 10 + (*s - '0');
        }
        if (!digits) {
            return 0;
        }
        *pcount = v;
    }
    *ps = s;
    return 1;
}

static int parse_hunk_header(const char *l, apr_size_t len, long *as, long *ac, long *bs,
                             long *bc)
{
    const char *s = l + 4, *end = l + len;

    if (len < 4 || memcmp(l, "@@ -", 4) != 0 || !parse_range(&s, end, as, ac)
        || end - s < 2 || memcmp(s, " +", 2) != 0) {
        return 0;
    }
    s += 2;
    if (!parse_range(&s, end, bs, bc) || end - s < 3 || memcmp(s, " @@", 3) != 0) {
        return 0;
    }
    return 1;
}

#define APPLY_FAIL(why)                                                       \
    do {                                                                      \
        *perr = (why);                                                        \
        return APR_EINVAL;                                                    \
    } while (0)

apr_status_t svc_diff_apply(apr_pool_t *p, const char *a, apr_size_t alen,
                            const char *diff, apr_size_t difflen,
                            const char **pout, apr_size_t *poutlen, const char **perr)
{
    const char *cur = diff, *end = diff + difflen, *l, *peek;
    apr_size_t len, plen;
    long as, ac, bs, bc, ra, rb, a0, b0;
    long cursor = 0, out_lines = 0;
    int na, hunks = 0, out_open = 0;
    line_t *la = split_lines(p, a, alen, &na);
    svc_jbuf_t o;

    svc_jbuf_init(&o, p, alen + 64);
    while (next_diff_line(&cur, end, &l, &len)) {
        if (!hunks && ((len >= 4 && memcmp(l, "--- ", 4) == 0)
                       || (len >= 4 && memcmp(l, "+++ ", 4) == 0))) {
            continue;
        }
        if (!parse_hunk_header(l, len, &as, &ac, &bs, &bc)) {
            APPLY_FAIL("the diff has a line that is neither a header nor a hunk");
        }
        a0 = ac ? as - 1 : as;
        b0 = bc ? bs - 1 : bs;
        if (a0 < cursor || a0 + ac > na) {
            APPLY_FAIL("a hunk is out of order or beyond the end of the text");
        }
        if (out_open && a0 > cursor) {
            APPLY_FAIL("a line without a final newline is followed by more text");
        }
        for (; cursor < a0; cursor++, out_lines++) {
            svc_jbuf_raw(&o, la[cursor].s, la[cursor].len);
        }
        if (b0 != out_lines) {
            APPLY_FAIL("a hunk's position in the new text does not add up");
        }
        for (ra = 0, rb = 0; ra < ac || rb < bc;) {
            const char *content;
            apr_size_t clen;
            const char *save = cur;
            int nl = 1;

            if (!next_diff_line(&cur, end, &l, &len) || len == 0) {
                APPLY_FAIL("a hunk is shorter than its header says");
            }
            content = l + 1;
            clen = len - 1;
            /* "\ No newline at end of file" belongs to the line before it. */
            save = cur;
            if (next_diff_line(&cur, end, &peek, &plen) && plen > 0 && peek[0] == '\\') {
                nl = 0;
            }
            else {
                cur = save;
            }
            if (l[0] == ' ' || l[0] == '-') {
                const line_t *x = &la[cursor];
                if (ra >= ac || cursor >= na || x->len != clen + (apr_size_t)nl
                    || memcmp(x->s, content, clen) != 0 || line_has_nl(x) != nl) {
                    APPLY_FAIL("the diff does not match the text it is applied to");
                }
                cursor++;
                ra++;
            }
            else if (l[0] != '+') {
                APPLY_FAIL("a hunk has a line that does not start with ' ', '-' or '+'");
            }
            if (l[0] == ' ' || l[0] == '+') {
                if (rb >= bc || out_open) {
                    APPLY_FAIL("a hunk adds more lines than its header says");
                }
                svc_jbuf_raw(&o, content, clen);
                if (nl) {
                    svc_jbuf_raw(&o, "\n", 1);
                }
                out_open = !nl;
                out_lines++;
                rb++;
            }
        }
        hunks++;
    }
    if (!hunks && difflen > 0) {
        APPLY_FAIL("the diff has no hunk");
    }
    if (out_open && cursor < na) {
        APPLY_FAIL("a line without a final newline is followed by more text");
    }
    for (; cursor < na; cursor++) {
        svc_jbuf_raw(&o, la[cursor].s, la[cursor].len);
    }
    *pout = svc_jbuf_text(&o, poutlen);
    return APR_SUCCESS;
}

void svc_diff_stat(const char *diff, apr_size_t difflen, int *padded, int *premoved)
{
    const char *cur = diff, *end = diff + difflen, *l;
    int in_hunks = 0;
    apr_size_t len;

    *padded = *premoved = 0;
    while (next_diff_line(&cur, end, &l, &len)) {
        if (len >= 2 && l[0] == '@' && l[1] == '@') {
            in_hunks = 1;
        }
        else if (in_hunks && len > 0) {
            *padded += l[0] == '+';
            *premoved += l[0] == '-';
        }
    }
}
