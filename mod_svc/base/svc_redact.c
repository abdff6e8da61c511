/*
 * svc_redact.c: secret-shaped substrings out, for logs: ours, other
 * services' tokens and keys, credentials after a scheme or a setting's
 * name, the password of a URL.
 */
#include "svc_redact.h"

#include <ctype.h>
#include <string.h>

static int is_b62(char c)
{
    return isalnum((unsigned char)c) != 0;
}

static int is_b64url(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_';
}

static int ci_prefix(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * Length of a secret starting at s, or 0. *nojwt: where a JWT cannot start
 * before, in s's own terms (s is the line at the position asked); a JWT's
 * scan that fails (a run without a dot, or too short) says so for the rest
 * of the run, which would fail the same way, so that "eyJeyJeyJ..." costs
 * one scan of its run, not one per "eyJ".
 */
static apr_size_t secret_at(const char *s, const char **nojwt)
{
    const char *q;
    apr_size_t n;

    /* Our own: svc_<kind>_<at least 16 base62>. */
    if (strncmp(s, "svc_", 4) == 0) {
        q = s + 4;
        while (*q >= 'a' && *q <= 'z') {
            q++;
        }
        if (q > s + 4 && *q == '_') {
            q++;
            for (n = 0; is_b62(q[n]); n++) {
            }
            if (n >= 16) {
                return (apr_size_t)(q - s) + n;
            }
        }
    }
    /* A payment provider's secret key or webhook signing secret (Stripe's
     * shapes: sk_live_, sk_test_, restricted rk_*, whsec_), which a
     * provider's error message or a misconfigured trace could carry. */
    {
        static const char *const pay[] = {
            "sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_", NULL
        };
        int i;
        for (i = 0; pay[i]; i++) {
            apr_size_t k = strlen(pay[i]);
            if (strncmp(s, pay[i], k) == 0) {
                for (n = 0; is_b62(s[k + n]); n++) {
                }
                if (n >= 16) {
                    return k + n;
                }
            }
        }
    }
    /* A JWT: three base64url segments, the first one a JSON header ("eyJ"). */
    if (s >= *nojwt && strncmp(s, "eyJ", 3) == 0) {
        int dots = 0;
        for (n = 0; is_b64url(s[n]) || s[n] == '.'; n++) {
            dots += s[n] == '.';
        }
        if (dots >= 1 && n >= 16) {
            return n;
        }
        *nojwt = s + n;
    }
    return 0;
}

/*
 * Length of another service's credential starting at s, at the start of a
 * word: GitHub's tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), API
 * keys of the sk- kind (OpenAI's sk-..., sk-proj-..., Anthropic's
 * sk-ant-...), AWS access key ids. Or 0.
 */
static apr_size_t foreign_at(const char *s)
{
    apr_size_t n;

    if (s[0] == 'g' && s[1] == 'h' && s[2] && strchr("pousr", s[2]) && s[3] == '_') {
        for (n = 4; is_b62(s[n]); n++) {
        }
        if (n - 4 >= 20) {
            return n;
        }
    }
    if (strncmp(s, "github_pat_", 11) == 0) {
        for (n = 11; is_b62(s[n]) || s[n] == '_'; n++) {
        }
        if (n - 11 >= 20) {
            return n;
        }
    }
    if (strncmp(s, "sk-", 3) == 0) {
        for (n = 3; is_b64url(s[n]); n++) {
        }
        if (n - 3 >= 16) {
            return n;
        }
    }
    if (strncmp(s, "AKIA", 4) == 0 || strncmp(s, "ASIA", 4) == 0) {
        for (n = 4; (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9'); n++) {
        }
        if (n == 20) {
            return n;
        }
    }
    return 0;
}

/* Where a value after a keyword ends. */
static apr_size_t value_len(const char *v)
{
    apr_size_t n;

    for (n = 0; v[n] && !isspace((unsigned char)v[n]) && v[n] != '&' && v[n] != ';'
                && v[n] != '"' && v[n] != '\'' && v[n] != ',' && v[n] != '}'; n++) {
    }
    return n;
}

/* Length of a credential following a keyword at s ("Bearer x", "session=x",
 * "password: x", "\"api_key\": \"x\""): *pkw is how much of s to keep. */
static apr_size_t keyword_at(const char *s, apr_size_t *pkw)
{
    static const char *const schemes[] = { "bearer ", "basic ", "service_session=", "code=",
                                           NULL };
    /* Settings that hold a secret, longest first where one begins another. */
    static const char *const names[] = {
        "access_token", "refresh_token", "client_secret", "secret_key", "access_key",
        "private_key", "auth_token", "api_key", "api-key", "apikey", "password", "passwd",
        "secret", "token", NULL
    };
    apr_size_t k, n;
    int i;

    for (i = 0; schemes[i]; i++) {
        if (ci_prefix(s, schemes[i])) {
            *pkw = strlen(schemes[i]);
            /* RFC 9110 allows more than one space after the scheme. */
            while (s[*pkw] == ' ') {
                (*pkw)++;
            }
            return value_len(s + *pkw);
        }
    }
    for (i = 0; names[i]; i++) {
        if (!ci_prefix(s, names[i])) {
            continue;
        }
        /* name, a quote that closes a JSON or Python key, spaces, '=' or
         * ':', spaces, a quote that opens the value. */
        k = strlen(names[i]);
        if (s[k] == '"' || s[k] == '\'') {
            k++;
        }
        while (s[k] == ' ') {
            k++;
        }
        if (s[k] != '=' && s[k] != ':') {
            return 0;
        }
        k++;
        while (s[k] == ' ') {
            k++;
        }
        if (s[k] == '"' || s[k] == '\'') {
            k++;
        }
        n = value_len(s + k);
        *pkw = k;
        return n;
    }
    return 0;
}

/* At "://": the length of the user information's password (the URL's
 * "user:" is kept, *pkeep), or 0. */
static apr_size_t url_password_at(const char *s, apr_size_t *pkeep)
{
    apr_size_t end = strcspn(s + 3, "/?#@ \t\r\n\"'<>"), colon;
    const char *c;

    if (s[3 + end] != '@' || !(c = memchr(s + 3, ':', end))) {
        return 0;
    }
    colon = (apr_size_t)(c - s);
    *pkeep = colon + 1;
    return 3 + end - colon - 1;
}

static apr_size_t any_secret_at(const char *s, apr_size_t i, const char **nojwt);

/* Whether a secret starts in s[from, to): the user part of a URL whose
 * password is redacted, which would otherwise be copied as it is. */
static int secret_within(const char *s, apr_size_t from, apr_size_t to)
{
    const char *nojwt = s;

    for (; from < to; from++) {
        if (any_secret_at(s, from, &nojwt) > 0) {
            return 1;
        }
    }
    return 0;
}

/* Length of a secret of any shape starting at s + i, or 0: other
 * services' shapes only at the start of a word. *nojwt: see secret_at. */
static apr_size_t any_secret_at(const char *s, apr_size_t i, const char **nojwt)
{
    apr_size_t n = secret_at(s + i, nojwt);

    if (n == 0 && (i == 0 || !is_b64url(s[i - 1]))) {
        n = foreign_at(s + i);
    }
    return n;
}

/* The characters every secret shape is made of. */
static int in_secret_class(char c)
{
    return is_b64url(c) || c == '.';
}

/*
 * Where the redaction of [from, end) must end: further, when a secret
 * starts inside it and runs past it. A greedy match can swallow the start
 * of the next secret ("sk_test_AAAAsvc", then "_pat_<random part>": the
 * token's "svc" taken as the end of the key), and what is left of the
 * second one then matches no shape any more (found by t/fuzz/fuzz_auth.c;
 * its corpus keeps the inputs, regress-redact-*). Overlapping secrets
 * are redacted as one.
 *
 * A secret is one run of in_secret_class characters, so one that starts
 * in a run ends by the run's end: runs that end within [from, end) are
 * skipped whole, and a run is searched only until the redaction reaches
 * its end. That keeps this linear in the line, long runs included.
 */
static apr_size_t redaction_end(const char *s, apr_size_t from, apr_size_t end,
                                const char **nojwt)
{
    apr_size_t j = from, r, n;

    while (j < end) {
        if (!in_secret_class(s[j])) {
            j++;
            continue;
        }
        for (r = j; in_secret_class(s[r]); r++) {
        }
        for (; j < end && end < r; j++) {
            if ((n = any_secret_at(s, j, nojwt)) > 0 && j + n > end) {
                end = j + n;
            }
        }
        j = r;
    }
    return end;
}

const char *svc_redact(apr_pool_t *p, const char *s)
{
    apr_size_t len, i = 0, o = 0;
    const char *nojwt;
    char *out;

    if (!s) {
        return NULL;
    }
    len = strlen(s);
    nojwt = s;
    /* "[REDACTED]" is 10 bytes and replaces at least one byte each time. */
    out = apr_palloc(p, len * 10 + 1);
    while (i < len) {
        apr_size_t kw = 0, n;
        int boundary = (i == 0) || !is_b64url(s[i - 1]);

        /* Our secret shapes are distinctive enough to redact wherever they
         * start (after "%20", inside a word): over-redacting costs nothing. */
        if ((n = any_secret_at(s, i, &nojwt)) > 0) {
            memcpy(out + o, "[REDACTED]", 10);
            o += 10;
            i = redaction_end(s, i, i + n, &nojwt);
            continue;
        }
        /* A URL's password, or a keyword's value: the kw bytes that name it
         * stay, the n bytes of the secret go. A URL whose user part is a
         * secret itself (https://<GitHub token>:x-oauth-basic@github.com/)
         * keeps only its "://". A value ends where no secret goes on
         * (value_len stops at characters no secret has). */
        if (s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/'
            && (n = url_password_at(s + i, &kw)) > 0) {
            if (secret_within(s, i + 3, i + kw - 1)) {
                n += kw - 3;
                kw = 3;
            }
        }
        else if (!boundary || (n = keyword_at(s + i, &kw)) == 0) {
            out[o++] = s[i++];
            continue;
        }
        memcpy(out + o, s + i, kw);
        o += kw;
        memcpy(out + o, "[REDACTED]", 10);
        o += 10;
        i += kw + n;
    }
    out[o] = '\0';
    return out;
}

const char *svc_printable(apr_pool_t *p, const char *s, apr_size_t max)
{
    apr_size_t n = strlen(s), i;
    char *out;

    if (n > max) {
        n = max;
    }
    out = apr_pstrmemdup(p, s, n);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c < 0x20 || c > 0x7e) {
            out[i] = '?';
        }
    }
    return out;
}

const char *svc_redact_query(apr_pool_t *p, const char *q, svc_redact_each_fn each,
                             void *baton)
{
    const char *out = NULL;

    while (q) {
        const char *amp = strchr(q, '&');
        apr_size_t n = amp ? (apr_size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', n);
        const char *part;

        if (n == 0) {
            part = "";
        }
        else if (eq) {
            part = apr_pstrcat(p, apr_pstrmemdup(p, q, (apr_size_t)(eq - q) + 1), "[REDACTED]",
                               NULL);
            if (each) {
                each(baton, eq + 1, n - (apr_size_t)(eq - q) - 1);
            }
        }
        else {
            part = "[REDACTED]";
            if (each) {
                each(baton, q, n);
            }
        }
        out = out ? apr_pstrcat(p, out, "&", part, NULL) : part;
        q = amp ? amp + 1 : NULL;
    }
    return out ? out : "";
}
