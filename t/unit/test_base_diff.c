/*
 * test_base_diff.c: unified diffs and the strict applier (base/svc_diff.c).
 *
 * Fixed cases pin the format (as GNU diff -u writes it); property tests
 * run many random edits of random texts through diff and apply, check that
 * the round trip gives the new text back byte for byte, that the diff is
 * minimal (as long as an LCS computed the slow way), and that the applier
 * refuses the diff on a text changed where the diff looks.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_crypto.h"
#include "svc_diff.h"

#include <sodium.h>

static const char *diff_of(apr_pool_t *p, const char *a, const char *b)
{
    return svc_diff_unified(p, a, strlen(a), b, strlen(b), "doc.md", SVC_DIFF_CONTEXT, 0);
}

/* Applies d to a; NULL when refused. */
static const char *apply(apr_pool_t *p, const char *a, const char *d)
{
    const char *out, *err = NULL;
    apr_size_t n;

    if (svc_diff_apply(p, a, strlen(a), d, strlen(d), &out, &n, &err) != APR_SUCCESS) {
        return NULL;
    }
    SVC_CHECK_INT(n, strlen(out));
    return out;
}

SVC_TEST(diff_equal_is_empty)
{
    SVC_CHECK_STR(diff_of(p, "", ""), "");
    SVC_CHECK_STR(diff_of(p, "a\nb\n", "a\nb\n"), "");
    SVC_CHECK_STR(apply(p, "a\nb\n", ""), "a\nb\n");
}

SVC_TEST(diff_format_as_gnu_diff)
{
    /* diff -u of these files, headers aside. */
    SVC_CHECK_STR(diff_of(p, "a\nb\nc\n", "a\nB\nc\n"),
                  "--- a/doc.md\n+++ b/doc.md\n"
                  "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
    SVC_CHECK_STR(diff_of(p, "", "x\ny\n"),
                  "--- a/doc.md\n+++ b/doc.md\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    SVC_CHECK_STR(diff_of(p, "x\ny\n", ""),
                  "--- a/doc.md\n+++ b/doc.md\n@@ -1,2 +0,0 @@\n-x\n-y\n");
    SVC_CHECK_STR(diff_of(p, "a\n", "a"),
                  "--- a/doc.md\n+++ b/doc.md\n@@ -1,1 +1,1 @@\n-a\n+a\n"
                  "\\ No newline at end of file\n");
    SVC_CHECK_STR(diff_of(p, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
                          "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n"),
                  "--- a/doc.md\n+++ b/doc.md\n"
                  "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    /* Changes 7 lines apart get hunks of their own; 6 apart share one. */
    SVC_CHECK_STR(diff_of(p, "a\n1\n2\n3\n4\n5\n6\n7\nb\n", "A\n1\n2\n3\n4\n5\n6\n7\nB\n"),
                  "--- a/doc.md\n+++ b/doc.md\n"
                  "@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n"
                  "@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-b\n+B\n");
    SVC_CHECK_STR(diff_of(p, "a\n1\n2\n3\n4\n5\n6\nb\n", "A\n1\n2\n3\n4\n5\n6\nB\n"),
                  "--- a/doc.md\n+++ b/doc.md\n"
                  "@@ -1,8 +1,8 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n 6\n-b\n+B\n");
}

SVC_TEST(diff_apply_refuses)
{
    const char *a = "one\ntwo\nthree\nfour\n";
    const char *d = diff_of(p, a, "one\n2\nthree\nfour\n");

    SVC_CHECK_STR(apply(p, a, d), "one\n2\nthree\nfour\n");
    /* The removed line, a context line, or the position differ. */
    SVC_CHECK(apply(p, "one\nTWO\nthree\nfour\n", d) == NULL);
    SVC_CHECK(apply(p, "ONE\ntwo\nthree\nfour\n", d) == NULL);
    SVC_CHECK(apply(p, "zero\none\ntwo\nthree\nfour\n", d) == NULL);
    SVC_CHECK(apply(p, "one\ntwo\n", d) == NULL);
    SVC_CHECK(apply(p, "", d) == NULL);
    /* The newline at the end counts. */
    SVC_CHECK(apply(p, "one\ntwo\nthree\nfour", d) == NULL);
    /* Malformed diffs. */
    SVC_CHECK(apply(p, a, "garbage\n") == NULL);
    SVC_CHECK(apply(p, a, "--- a/x\n+++ b/x\n") == NULL);
    SVC_CHECK(apply(p, a, "@@ -1,2 +1,2 @@\n one\n-two\n") == NULL);
    SVC_CHECK(apply(p, a, "@@ -1,1 +1,1 @@\n-one\n+1\n+extra\n") == NULL);
    SVC_CHECK(apply(p, a, "@@ -1,1 +1,1 @@\n*one\n+1\n") == NULL);
    SVC_CHECK(apply(p, a, "@@ -2,1 +1,1 @@\n-two\n+2\n") == NULL);
    SVC_CHECK(apply(p, a, "@@ -3,1 +3,1 @@\n-three\n+3\n@@ -1,1 +1,1 @@\n-one\n+1\n") == NULL);
    SVC_CHECK(apply(p, a, "@@ -9,1 +9,1 @@\n-x\n+y\n") == NULL);
    SVC_CHECK(apply(p, a, "@@ -x,1 +1,1 @@\n-one\n+1\n") == NULL);
    /* A line without its newline cannot be followed by more text. */
    SVC_CHECK(apply(p, a, "@@ -1,1 +1,1 @@\n-one\n+1\n\\ No newline at end of file\n") == NULL);
    SVC_CHECK_STR(apply(p, a, "@@ -4,1 +4,1 @@\n-four\n+4\n\\ No newline at end of file\n"),
                  "one\ntwo\nthree\n4");
}

/* ---------------------------------------------------------------------- */
/* Random texts and edits                                                  */

static unsigned rnd(unsigned n)
{
    return n ? randombytes_uniform(n) : 0;
}

/* A line from a small vocabulary, so that equal lines recur (the hard case). */
static const char *rand_line(apr_pool_t *p)
{
    static const char *const words[] = { "", "# Title", "- item", "text", "}", "  x",
                                         "The quick brown fox", "\t", "a\rb", "ünïcode" };
    return apr_pstrcat(p, words[rnd(10)], rnd(3) ? "" : svc_random_base62(p, 1 + rnd(4)), NULL);
}

static char *rand_text(apr_pool_t *p, int nlines)
{
    char *t = apr_pstrdup(p, "");
    int i;

    for (i = 0; i < nlines; i++) {
        t = apr_pstrcat(p, t, rand_line(p), "\n", NULL);
    }
    /* Now and then, no newline at the end. */
    if (nlines && rnd(4) == 0) {
        t[strlen(t) - 1] = '\0';
    }
    return t;
}

typedef struct {
    const char **v;
    int n;
} lines_t;

static lines_t to_lines(apr_pool_t *p, const char *t)
{
    lines_t l;
    const char *s = t;

    l.v = apr_palloc(p, sizeof(char *) * (strlen(t) + 1));
    l.n = 0;
    while (*s) {
        const char *e = strchr(s, '\n');
        apr_size_t n = e ? (apr_size_t)(e - s + 1) : strlen(s);
        l.v[l.n++] = apr_pstrndup(p, s, n);
        s += n;
    }
    return l;
}

static char *from_lines(apr_pool_t *p, lines_t l)
{
    char *t = apr_pstrdup(p, "");
    int i;

    for (i = 0; i < l.n; i++) {
        t = apr_pstrcat(p, t, l.v[i], NULL);
    }
    return t;
}

/* Random insertions, deletions and replacements of lines. */
static char *rand_edit(apr_pool_t *p, const char *a)
{
    lines_t l = to_lines(p, a), o;
    int edits = (int)rnd(6), e, i, at;

    o.v = apr_palloc(p, sizeof(char *) * (apr_size_t)(l.n + 64));
    for (e = 0; e < edits; e++) {
        at = (int)rnd((unsigned)l.n + 1);
        o.n = 0;
        switch (rnd(3)) {
        case 0:
            for (i = 0; i < l.n; i++) {
                if (i == at) {
                    int k, m = 1 + (int)rnd(4);
                    for (k = 0; k < m; k++) {
                        o.v[o.n++] = apr_pstrcat(p, rand_line(p), "\n", NULL);
                    }
                }
                o.v[o.n++] = l.v[i];
            }
            if (at == l.n) {
                o.v[o.n++] = apr_pstrcat(p, rand_line(p), "\n", NULL);
            }
            break;
        case 1:
            for (i = 0; i < l.n; i++) {
                if (i < at || i >= at + 1 + (int)rnd(3)) {
                    o.v[o.n++] = l.v[i];
                }
            }
            break;
        default:
            for (i = 0; i < l.n; i++) {
                o.v[o.n++] = i == at ? apr_pstrcat(p, rand_line(p), "\n", NULL) : l.v[i];
            }
        }
        /* A line without a newline may only be the last. */
        for (i = 0; i + 1 < o.n; i++) {
            apr_size_t n = strlen(o.v[i]);
            if (!n || o.v[i][n - 1] != '\n') {
                o.v[i] = apr_pstrcat(p, o.v[i], "\n", NULL);
            }
        }
        if (o.n && rnd(5) == 0) {
            o.v[o.n - 1] = apr_pstrndup(p, o.v[o.n - 1], strlen(o.v[o.n - 1]) - 1);
        }
        l = o;
        o.v = apr_palloc(p, sizeof(char *) * (apr_size_t)(l.n + 64));
    }
    return from_lines(p, l);
}

/* The length of a longest common subsequence of lines, the slow way. */
static int lcs(apr_pool_t *p, const char *a, const char *b)
{
    lines_t x = to_lines(p, a), y = to_lines(p, b);
    int *row = apr_pcalloc(p, sizeof(int) * (apr_size_t)(y.n + 1));
    int i, j;

    for (i = 1; i <= x.n; i++) {
        int diag = 0;
        for (j = 1; j <= y.n; j++) {
            int up = row[j];
            row[j] = strcmp(x.v[i - 1], y.v[j - 1]) == 0
                     ? diag + 1 : (row[j] > row[j - 1] ? row[j] : row[j - 1]);
            diag = up;
        }
    }
    return row[y.n];
}

SVC_TEST(diff_round_trips_are_exact_and_minimal)
{
    int round, bad = 0;

    for (round = 0; round < 400; round++) {
        apr_pool_t *q;
        const char *a, *b, *d, *back;
        int added, removed, na, nb;

        apr_pool_create(&q, p);
        a = rand_text(q, (int)rnd(40));
        b = rnd(10) == 0 ? rand_text(q, (int)rnd(40)) : rand_edit(q, a);
        d = diff_of(q, a, b);
        back = apply(q, a, d);
        if (!back || strcmp(back, b) != 0) {
            fprintf(stderr, "round %d: the diff did not give the text back\n", round);
            bad++;
        }
        /* Minimal: every line not in an LCS is removed or added, no more. */
        svc_diff_stat(d, strlen(d), &added, &removed);
        na = to_lines(q, a).n;
        nb = to_lines(q, b).n;
        if (added + removed != na + nb - 2 * lcs(q, a, b)) {
            fprintf(stderr, "round %d: %d+%d lines changed, LCS says %d\n", round, added,
                    removed, na + nb - 2 * lcs(q, a, b));
            bad++;
        }
        if (strcmp(a, b) == 0) {
            SVC_CHECK_STR(d, "");
        }
        apr_pool_destroy(q);
    }
    SVC_CHECK_INT(bad, 0);
}

SVC_TEST(diff_refuses_changed_bases)
{
    int round, refused = 0, tried = 0;

    for (round = 0; round < 300; round++) {
        apr_pool_t *q;
        lines_t l;
        const char *a, *b, *d, *out, *err;
        char *changed;
        apr_size_t n;
        int at;

        apr_pool_create(&q, p);
        a = rand_text(q, 5 + (int)rnd(30));
        b = rand_edit(q, a);
        d = diff_of(q, a, b);
        if (!*d) {
            apr_pool_destroy(q);
            continue;
        }
        /* Change one line the first hunk looks at (context or removed). */
        l = to_lines(q, a);
        {
            const char *h = strstr(d, "@@ -");
            at = atoi(h + 4) - 1;
        }
        if (at < 0 || at >= l.n) {
            apr_pool_destroy(q);
            continue;
        }
        l.v[at] = apr_pstrcat(q, "changed ", svc_random_base62(q, 8), "\n", NULL);
        changed = from_lines(q, l);
        tried++;
        if (svc_diff_apply(q, changed, strlen(changed), d, strlen(d), &out, &n, &err)
            != APR_SUCCESS) {
            refused++;
        }
        apr_pool_destroy(q);
    }
    SVC_CHECK(tried > 100);
    SVC_CHECK_INT(refused, tried);
}

SVC_TEST(diff_large_and_budgeted)
{
    const char *a, *b, *d, *back;
    char *x;
    int i;

    /* 3000 lines, every tenth one changed. */
    x = apr_pstrdup(p, "");
    for (i = 0; i < 3000; i++) {
        x = apr_psprintf(p, "%sline %d of the document\n", x, i);
    }
    a = x;
    x = apr_pstrdup(p, "");
    for (i = 0; i < 3000; i++) {
        x = apr_psprintf(p, "%sline %d of the %s\n", x, i, i % 10 ? "document" : "text");
    }
    b = x;
    d = diff_of(p, a, b);
    back = apply(p, a, d);
    SVC_CHECK(back && strcmp(back, b) == 0);
    /* With almost no budget the diff is one replacement, still exact. */
    d = svc_diff_unified(p, a, strlen(a), b, strlen(b), "doc.md", 3, 10);
    back = apply(p, a, d);
    SVC_CHECK(back && strcmp(back, b) == 0);
    {
        int added, removed;
        svc_diff_stat(d, strlen(d), &added, &removed);
        SVC_CHECK(added + removed > 600);
    }
}

int main(int argc, const char *const *argv)
{
    if (sodium_init() < 0) {
        return 1;
    }
    return svc_test_run(argc, argv);
}
