/*
 * svc_utf8.h: UTF-8 one code point at a time, and counted in characters
 * (as PostgreSQL's char_length counts them).
 */
#ifndef SVC_UTF8_H
#define SVC_UTF8_H

#include "svc_types.h"

/*
 * The length of the UTF-8 sequence at s (at most n bytes, n > 0) and its
 * code point in *pcp; 0 when the bytes there are not valid UTF-8: a stray
 * continuation byte, a sequence cut short, an overlong form, a surrogate,
 * or a value past U+10FFFF.
 */
apr_size_t svc_utf8_next(const unsigned char *s, apr_size_t n, unsigned long *pcp);

/* The characters of n bytes of valid UTF-8. */
apr_size_t svc_utf8_chars(const char *s, apr_size_t n);

/* The bytes of the longest prefix of s (n bytes of valid UTF-8) that
 * holds at most `chars` characters. */
apr_size_t svc_utf8_prefix(const char *s, apr_size_t n, apr_size_t chars);

#endif /* SVC_UTF8_H */
