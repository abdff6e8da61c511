/*
 * svc_diff.h: line-based unified diffs of texts, and applying them back.
 *
 * A text is a sequence of lines, each with its '\n' except perhaps the
 * last; a line with and without its newline are different lines, as for
 * GNU diff and patch ("\ No newline at end of file"). The diff is the
 * usual unified format: "--- a/NAME", "+++ b/NAME", then hunks
 * "@@ -l,s +l,s @@" with ' ', '-' and '+' lines and `context` lines of
 * context around each change.
 *
 * The applier is strict: no fuzz and no offsets. Every context and removed
 * line must be exactly the line at the position the hunk names, hunks must
 * come in order without overlapping, and their counts must add up, so a
 * diff either reproduces the text it was made from or is refused; it never
 * produces a different text.
 */
#ifndef SVC_DIFF_H
#define SVC_DIFF_H

#include "svc_types.h"

/* Lines of context around each change (as diff -u). */
#define SVC_DIFF_CONTEXT 3

/*
 * The unified diff from a to b, allocated from p; "" when they are equal.
 * Minimal (Myers' O(ND) algorithm, in linear space) unless finding the
 * minimal diff would take more than `work` steps (0: a default suited to a
 * request, about a second's work): past that a region is given as removed
 * and added whole, which is still a correct diff, only a longer one.
 */
const char *svc_diff_unified(apr_pool_t *p, const char *a, apr_size_t alen,
                             const char *b, apr_size_t blen, const char *name, int context,
                             apr_int64_t work);

/*
 * Applies a unified diff to a: *pout (NUL-terminated, from p) and *poutlen.
 * APR_EINVAL with *perr (for people) when the diff is malformed or does not
 * apply exactly to a.
 */
apr_status_t svc_diff_apply(apr_pool_t *p, const char *a, apr_size_t alen,
                            const char *diff, apr_size_t difflen,
                            const char **pout, apr_size_t *poutlen, const char **perr);

/* Lines added and removed by a diff (for summaries). */
void svc_diff_stat(const char *diff, apr_size_t difflen, int *padded, int *premoved);

#endif /* SVC_DIFF_H */
