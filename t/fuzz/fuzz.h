/*
 * fuzz.h: what every libFuzzer target shares (docs/fuzzing.md): the entry
 * points, properties, and reading an input in parts. The service's targets
 * include fuzz_svc.h, which adds pools, a configuration and contexts; the
 * factory's targets use this alone, as the factory links no APR.
 *
 * A property a target checks and finds broken is a crash (FUZZ_ASSERT
 * aborts), so libFuzzer keeps the input, as it does for a sanitizer report.
 */
#ifndef SVC_FUZZ_H
#define SVC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_ASSERT(cond)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__,         \
                    __LINE__, #cond);                                         \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* An input read front to back. */
typedef struct {
    const uint8_t *data;
    size_t size;
} fuzz_in_t;

/* The next byte of the input, or 0 when it is used up. */
static inline unsigned fuzz_byte(fuzz_in_t *in)
{
    unsigned b;

    if (!in->data || in->size == 0) {
        return 0;
    }
    b = in->data[0];
    in->data++;
    in->size--;
    return b;
}

/*
 * The bytes up to the next `sep` (-1: to the end): *pat and *plen, the input
 * moved past them and the separator. 0 when the input is used up.
 */
static inline int fuzz_part(fuzz_in_t *in, int sep, const uint8_t **pat, size_t *plen)
{
    const uint8_t *end;
    size_t n;

    if (!in->data) {
        return 0;
    }
    end = sep >= 0 ? memchr(in->data, sep, in->size) : NULL;
    n = end ? (size_t)(end - in->data) : in->size;
    *pat = in->data;
    *plen = n;
    if (end) {
        in->data = end + 1;
        in->size -= n + 1;
    }
    else {
        in->data = NULL;
        in->size = 0;
    }
    return 1;
}

/* The same as a NUL-terminated copy of its own (malloc'd, so ASan sees its
 * end), or NULL when the input is used up. */
static inline char *fuzz_part_str(fuzz_in_t *in, int sep, size_t *plen)
{
    const uint8_t *at;
    size_t n;
    char *s;

    if (!fuzz_part(in, sep, &at, &n)) {
        return NULL;
    }
    s = malloc(n + 1);
    if (!s) {
        abort();
    }
    memcpy(s, at, n);
    s[n] = '\0';
    if (plen) {
        *plen = n;
    }
    return s;
}

#endif /* SVC_FUZZ_H */
