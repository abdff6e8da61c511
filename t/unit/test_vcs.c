/*
 * test_vcs.c: the code-hosting App below HTTP: RS256 App JWTs checked with
 * the public key, private keys that must be refused, the webhook signature
 * (GitHub's published test vector), the credentials file, the App's
 * configuration, secretbox.
 *
 *   test_vcs [TEST]                                  run the tests
 *   test_vcs --clone-token ORG_ID INSTALLATION_ID OWNER/NAME
 *       calls svc_vcs_clone_token, the runs area's hook, with the App and
 *       provider of the environment tools/test.sh sets up (SVC_DB,
 *       VCS_API_URL, VCS_APP_*, VCS_APP_KEY_FILE) and prints "ok TOKEN
 *       EXPIRES" or "error NAME": t/vcs/clone_token.t drives it.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_config.h"
#include "svc_crypto.h"
#include "svc_json.h"
#include "svc_jwt.h"
#include "svc_vcs_app.h"
#include "svc_vcs_client.h"
#include "svc_vcs_webhook.h"

#include <apr_env.h>
#include <apr_file_io.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static apr_status_t key_free(void *k)
{
    EVP_PKEY_free(k);
    return APR_SUCCESS;
}

/* One RSA-2048 key for the whole program: making one takes long under
 * valgrind. Freed at exit. */
static EVP_PKEY *rsa2048;

static void rsa2048_free(void)
{
    EVP_PKEY_free(rsa2048);
}

/* A key of `type` ("RSA" or "EC") as PEM text: RSA-2048 is always the same
 * one, other sizes are fresh. *pkey keeps it for verifying (freed with p). */
static const char *key_pem(apr_pool_t *p, const char *type, int bits, const char *pass,
                           EVP_PKEY **pkey)
{
    EVP_PKEY *k;
    BIO *bio = BIO_new(BIO_s_mem());
    char *data;
    long n;
    const char *out;

    if (strcmp(type, "RSA") == 0 && bits == 2048) {
        if (!rsa2048) {
            rsa2048 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
            atexit(rsa2048_free);
        }
        EVP_PKEY_up_ref(rsa2048);
        k = rsa2048;
    }
    else {
        k = strcmp(type, "RSA") == 0 ? EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits)
                                     : EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    }
    if (pass) {
        PEM_write_bio_PrivateKey(bio, k, EVP_aes_128_cbc(), (unsigned char *)pass,
                                 (int)strlen(pass), NULL, NULL);
    }
    else {
        PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
    }
    n = BIO_get_mem_data(bio, &data);
    out = apr_pstrmemdup(p, data, (apr_size_t)n);
    BIO_free(bio);
    if (pkey) {
        *pkey = k;
        apr_pool_cleanup_register(p, k, key_free, apr_pool_cleanup_null);
    }
    else {
        EVP_PKEY_free(k);
    }
    return out;
}

/* 1 when the RS256 signature of the token verifies with the key. */
static int rs256_verifies(apr_pool_t *p, EVP_PKEY *key, const char *token)
{
    const char *dot = strrchr(token, '.');
    unsigned char *sig;
    apr_size_t slen;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok;

    if (!dot || svc_b64url_decode(p, dot + 1, strlen(dot + 1), &sig, &slen) != APR_SUCCESS) {
        EVP_MD_CTX_free(md);
        return 0;
    }
    ok = EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1
         && EVP_DigestVerify(md, sig, slen, (const unsigned char *)token,
                             (size_t)(dot - token)) == 1;
    EVP_MD_CTX_free(md);
    return ok;
}

static json_t *segment(apr_pool_t *p, const char *token, int which)
{
    const char *s = token, *e;
    unsigned char *out;
    apr_size_t n;
    json_error_t jerr;

    while (which-- > 0) {
        s = strchr(s, '.') + 1;
    }
    e = strchr(s, '.');
    if (svc_b64url_decode(p, s, (apr_size_t)(e - s), &out, &n) != APR_SUCCESS) {
        return NULL;
    }
    return svc_json_pool(p, json_loadb((const char *)out, n, 0, &jerr));
}

SVC_TEST(rs256_app_jwt)
{
    EVP_PKEY *pub, *loaded;
    const char *pem = key_pem(p, "RSA", 2048, NULL, &pub);
    const char *err = NULL, *token;
    svc_vcs_app_t app;
    apr_int64_t now = (apr_int64_t)time(NULL);
    json_t *claims;

    SVC_CHECK(svc_rsa_key_from_pem(p, pem, strlen(pem), &loaded, &err) == APR_SUCCESS);
    memset(&app, 0, sizeof(app));
    app.id = 424242;
    app.key = loaded;
    token = svc_vcs_app_jwt(p, &app);
    SVC_CHECK(token != NULL);
    if (!token) {
        return;
    }
    SVC_CHECK(rs256_verifies(p, pub, token));
    SVC_CHECK_STR(svc_json_dump(p, segment(p, token, 0)), "{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
    claims = segment(p, token, 1);
    SVC_CHECK_INT(svc_json_int(claims, "iss", 0), 424242);
    /* iat 60 s back for clock skew; exp under the provider's 10 minutes. */
    SVC_CHECK(svc_json_int(claims, "iat", 0) <= now - 59 && svc_json_int(claims, "iat", 0) >= now - 61);
    SVC_CHECK(svc_json_int(claims, "exp", 0) > now + 500 && svc_json_int(claims, "exp", 0) < now + 600);
    /* Another key's public half does not verify it. */
    {
        EVP_PKEY *other;
        key_pem(p, "RSA", 1024, NULL, &other);
        SVC_CHECK(!rs256_verifies(p, other, token));
    }
}

SVC_TEST(private_keys_refused)
{
    EVP_PKEY *k;
    const char *err = NULL;
    const char *ec = key_pem(p, "EC", 0, NULL, NULL);
    const char *small = key_pem(p, "RSA", 1024, NULL, NULL);
    const char *locked = key_pem(p, "RSA", 2048, "passphrase", NULL);
    static const char garbage[] = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";

    SVC_CHECK(svc_rsa_key_from_pem(p, garbage, strlen(garbage), &k, &err) == APR_EINVAL);
    SVC_CHECK(k == NULL && strstr(err, "not an unencrypted PEM"));
    SVC_CHECK(svc_rsa_key_from_pem(p, ec, strlen(ec), &k, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "not an RSA key") != NULL);
    SVC_CHECK(svc_rsa_key_from_pem(p, small, strlen(small), &k, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "2048") != NULL);
    /* An encrypted key: refused, never a passphrase prompt. */
    SVC_CHECK(svc_rsa_key_from_pem(p, locked, strlen(locked), &k, &err) == APR_EINVAL);
    SVC_CHECK(svc_rsa_key_from_pem(p, "", 0, &k, &err) == APR_EINVAL);
}

SVC_TEST(webhook_signature)
{
    static const char secret[] = "It's a Secret to Everybody";
    static const char vector[] =
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    static const char upper[] =
        "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17";
    static const char body[] = "Hello, World!";
    apr_size_t sl = strlen(secret), bl = strlen(body);

    SVC_CHECK(svc_vcs_signature_ok(p, secret, sl, vector, body, bl));
    SVC_CHECK(svc_vcs_signature_ok(p, secret, sl, upper, body, bl));
    SVC_CHECK(!svc_vcs_signature_ok(p, secret, sl, vector, "Hello, World?", bl));
    SVC_CHECK(!svc_vcs_signature_ok(p, "It's a Secret to Everybody!", sl + 1, vector, body, bl));
    SVC_CHECK(!svc_vcs_signature_ok(p, secret, sl, vector + 7, body, bl));
    SVC_CHECK(!svc_vcs_signature_ok(p, secret, sl, NULL, body, bl));
    SVC_CHECK(!svc_vcs_signature_ok(p, secret, sl, "sha256=", body, bl));
    SVC_CHECK(!svc_vcs_signature_ok(p, secret, sl, apr_pstrcat(p, vector, "0", NULL), body, bl));
    SVC_CHECK(!svc_vcs_signature_ok(p, secret, sl,
                                    "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59", body, bl));
}

static const char *tmpdir(apr_pool_t *p)
{
    char *d = apr_pstrdup(p, "/tmp/svc-vcs-unit.XXXXXX");

    return mkdtemp(d);
}

SVC_TEST(credentials_file)
{
    const char *dir = tmpdir(p);
    const char *path = apr_pstrcat(p, dir, "/vcs-app.env", NULL);
    const char *values[SVC_VCS_NKEYS] = {
        "123", "my-app", "Iv23liabc", "a\"quote$dollar`tick\\back",
        "line one\nline two", "-----BEGIN KEY-----\nABC\n-----END KEY-----\n"
    };
    apr_table_t *t;
    const char *err = NULL;
    struct stat st;
    int i;
    FILE *f;

    SVC_CHECK(dir != NULL);
    SVC_CHECK(svc_vcs_credentials_read(p, path, &t, &err) == APR_SUCCESS);
    SVC_CHECK(apr_is_empty_table(t));
    SVC_CHECK(svc_vcs_credentials_write(p, path, values, &err) == APR_SUCCESS);
    SVC_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    SVC_CHECK(svc_vcs_credentials_read(p, path, &t, &err) == APR_SUCCESS);
    for (i = 0; i < SVC_VCS_NKEYS; i++) {
        SVC_CHECK_STR(apr_table_get(t, svc_vcs_keys[i].env), values[i]);
    }
    /* Written again: replaced, not appended. */
    values[1] = "renamed";
    SVC_CHECK(svc_vcs_credentials_write(p, path, values, &err) == APR_SUCCESS);
    SVC_CHECK(svc_vcs_credentials_read(p, path, &t, &err) == APR_SUCCESS);
    SVC_CHECK_STR(apr_table_get(t, "VCS_APP_SLUG"), "renamed");
    SVC_CHECK(apr_table_elts(t)->nelts == SVC_VCS_NKEYS);

    /* What an operator may write by hand. */
    f = fopen(path, "w");
    fputs("# comment\n\nexport VCS_APP_ID=77\nVCS_APP_SLUG = bad\n", f);
    fclose(f);
    chmod(path, 0600);
    SVC_CHECK(svc_vcs_credentials_read(p, path, &t, &err) == APR_EINVAL);
    SVC_CHECK(err && strstr(err, "line 4") != NULL);
    f = fopen(path, "w");
    fputs("# comment\n\nexport VCS_APP_ID=77\nVCS_APP_SLUG=\"ok\"  \n", f);
    fclose(f);
    SVC_CHECK(svc_vcs_credentials_read(p, path, &t, &err) == APR_SUCCESS);
    SVC_CHECK_STR(apr_table_get(t, "VCS_APP_ID"), "77");
    SVC_CHECK_STR(apr_table_get(t, "VCS_APP_SLUG"), "ok");
    /* Readable by others: refused, like any secret file. */
    chmod(path, 0644);
    SVC_CHECK(svc_vcs_credentials_read(p, path, &t, &err) == APR_EACCES);
    unlink(path);
    rmdir(dir);
}

SVC_TEST(configure)
{
    const char *dir = tmpdir(p);
    const char *path = apr_pstrcat(p, dir, "/vcs-app.env", NULL);
    const char *pem = key_pem(p, "RSA", 2048, NULL, NULL);
    const char *escaped = pem, *err = NULL;
    const char *values[SVC_VCS_NKEYS];
    svc_vcs_refs_t refs;
    svc_config_t conf;
    char *e;

    /* All six by reference to variables nobody set: off, each one named. */
    memset(&refs, 0, sizeof(refs));
    refs.app_id = "env:SVC_UNIT_UNSET_ID";
    refs.slug = "env:SVC_UNIT_UNSET_SLUG";
    refs.client_id = "env:SVC_UNIT_UNSET_CLIENT_ID";
    refs.client_secret = "env:SVC_UNIT_UNSET_CLIENT_SECRET";
    refs.webhook_secret = "env:SVC_UNIT_UNSET_WEBHOOK_SECRET";
    refs.private_key = "env:SVC_UNIT_UNSET_PEM";
    svc_config_defaults(&conf, p);
    SVC_CHECK(svc_vcs_configure(&conf, &refs, p, &err) == APR_SUCCESS);
    SVC_CHECK(svc_vcs_app(&conf) == NULL);
    SVC_CHECK_STR(conf.vcs_app_off, "missing SVC_UNIT_UNSET_ID, SVC_UNIT_UNSET_SLUG, "
                  "SVC_UNIT_UNSET_CLIENT_ID, SVC_UNIT_UNSET_CLIENT_SECRET, "
                  "SVC_UNIT_UNSET_WEBHOOK_SECRET, SVC_UNIT_UNSET_PEM");

    /* The wizard's file stands in for the unset variables of those names,
     * with the key's newlines escaped as the file keeps them. */
    e = apr_pstrdup(p, "");
    for (; *escaped; escaped++) {
        e = apr_pstrcat(p, e, *escaped == '\n' ? "\\n" : apr_pstrndup(p, escaped, 1), NULL);
    }
    values[0] = "77";
    values[1] = "unit-app";
    values[2] = "Iv23liunit";
    values[3] = "client-secret";
    values[4] = "hook-secret";
    values[5] = e;
    SVC_CHECK(svc_vcs_credentials_write(p, path, values, &err) == APR_SUCCESS);
    {
        apr_file_t *f;
        const char *text = apr_pstrcat(p, "SVC_UNIT_UNSET_ID=77\nSVC_UNIT_UNSET_SLUG=unit-app\n"
                                       "SVC_UNIT_UNSET_CLIENT_ID=Iv23liunit\n"
                                       "SVC_UNIT_UNSET_CLIENT_SECRET=client-secret\n"
                                       "SVC_UNIT_UNSET_WEBHOOK_SECRET=hook-secret\n"
                                       "SVC_UNIT_UNSET_PEM=\"", e, "\"\n", NULL);
        apr_size_t n = strlen(text);
        apr_file_open(&f, path, APR_FOPEN_WRITE | APR_FOPEN_TRUNCATE, 0, p);
        apr_file_write_full(f, text, n, &n);
        apr_file_close(f);
    }
    refs.credentials = path;
    svc_config_defaults(&conf, p);
    SVC_CHECK(svc_vcs_configure(&conf, &refs, p, &err) == APR_SUCCESS);
    SVC_CHECK(conf.vcs_app_off == NULL);
    SVC_CHECK(svc_vcs_app(&conf) != NULL && svc_vcs_app(&conf)->id == 77);
    SVC_CHECK(svc_vcs_app(&conf) && svc_vcs_app(&conf)->key != NULL);
    SVC_CHECK_STR(svc_vcs_app(&conf)->webhook_secret, "hook-secret");

    /* A literal secret is refused outright; a literal id is fine. */
    refs.client_secret = "client-secret";
    SVC_CHECK(svc_vcs_configure(&conf, &refs, p, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "SvcVcsAppClientSecret must be a reference") != NULL);
    refs.client_secret = "env:SVC_UNIT_UNSET_CLIENT_SECRET";

    /* A key that does not parse: off, saying so; the id is still known. */
    refs.private_key = apr_pstrcat(p, "file:", path, NULL);
    svc_config_defaults(&conf, p);
    SVC_CHECK(svc_vcs_configure(&conf, &refs, p, &err) == APR_SUCCESS);
    SVC_CHECK(svc_vcs_app(&conf) == NULL);
    SVC_CHECK(conf.vcs_app_off && strstr(conf.vcs_app_off, "does not hold a usable private key"));
    SVC_CHECK(conf.vcs_app && conf.vcs_app->id == 77);

    /* A reference that is present but broken stops the start. */
    refs.private_key = "file:/nonexistent/key.pem";
    SVC_CHECK(svc_vcs_configure(&conf, &refs, p, &err) != APR_SUCCESS);
    unlink(path);
    rmdir(dir);
}

SVC_TEST(secretbox)
{
    unsigned char key[32], box[SVC_BOX_OVERHEAD + 5], out[5];

    svc_random_bytes(key, sizeof(key));
    svc_box_seal_into(box, key, (const unsigned char *)"token", 5);
    SVC_CHECK(memcmp(box + SVC_BOX_OVERHEAD, "token", 5) != 0);
    SVC_CHECK(svc_box_open_into(out, key, box, sizeof(box)) == APR_SUCCESS);
    SVC_CHECK(memcmp(out, "token", 5) == 0);
    box[sizeof(box) - 1] ^= 1;
    SVC_CHECK(svc_box_open_into(out, key, box, sizeof(box)) == APR_EINVAL);
    SVC_CHECK(svc_box_open_into(out, key, box, 10) == APR_EINVAL);
}

SVC_TEST(full_names)
{
    SVC_CHECK(svc_vcs_full_name_valid("octo-org/api.v2_x"));
    SVC_CHECK(!svc_vcs_full_name_valid("octo-org"));
    SVC_CHECK(!svc_vcs_full_name_valid("/api"));
    SVC_CHECK(!svc_vcs_full_name_valid("octo/"));
    SVC_CHECK(!svc_vcs_full_name_valid("octo/a/b"));
    SVC_CHECK(!svc_vcs_full_name_valid("octo/.."));
    SVC_CHECK(!svc_vcs_full_name_valid("oc to/api"));
    SVC_CHECK(!svc_vcs_full_name_valid("octo_org/api"));
    SVC_CHECK(!svc_vcs_full_name_valid(NULL));
}

SVC_TEST(html_escape)
{
    SVC_CHECK_STR(svc_vcs_html(p, "<a href=\"x\">Tom's & co</a>"),
                  "&lt;a href=&quot;x&quot;&gt;Tom&#39;s &amp; co&lt;/a&gt;");
}

/* ---------------------------------------------------------------------- */
/* --clone-token                                                          */

static int clone_main(const char *org_id, const char *installation, const char *full_name)
{
    apr_pool_t *p;
    svc_config_t conf;
    svc_vcs_refs_t refs;
    svc_db_t *db;
    char *db_info = NULL, *api = NULL, *key = NULL;
    const char *err = NULL, *token;
    apr_time_t expires;
    apr_status_t rv;
    int rc = 1;

    apr_initialize();
    svc_crypto_init();
    apr_pool_create(&p, NULL);
    svc_config_defaults(&conf, p);
    apr_env_get(&db_info, "SVC_DB", p);
    apr_env_get(&api, "VCS_API_URL", p);
    apr_env_get(&key, "VCS_APP_KEY_FILE", p);
    if (!db_info || !api || !key) {
        fprintf(stderr, "test_vcs --clone-token: SVC_DB, VCS_API_URL and VCS_APP_KEY_FILE\n");
        return 2;
    }
    conf.vcs_api_url = api;
    memset(&refs, 0, sizeof(refs));
    refs.private_key = apr_pstrcat(p, "file:", key, NULL);
    if (svc_http_global_init() != APR_SUCCESS
        || svc_vcs_configure(&conf, &refs, p, &err) != APR_SUCCESS || !svc_vcs_app(&conf)
        || svc_db_connect(&db, db_info, p, &err) != APR_SUCCESS) {
        fprintf(stderr, "test_vcs --clone-token: %s\n", err ? err : conf.vcs_app_off);
        return 2;
    }
    rv = svc_vcs_clone_token(db, p, &conf, org_id, apr_atoi64(installation), full_name, &token,
                             &expires);
    if (rv == APR_SUCCESS) {
        printf("ok %s %" APR_INT64_T_FMT "\n", token, (apr_int64_t)apr_time_sec(expires));
        svc_wipe((void *)token, strlen(token));
        rc = 0;
    }
    else {
        printf("error %s\n", rv == SVC_ENOTFOUND ? "not_found" : rv == APR_EACCES ? "refused"
                              : rv == APR_ENOTIMPL ? "not_configured" : "other");
        rc = 0;
    }
    apr_pool_destroy(p);
    svc_http_global_cleanup();
    apr_terminate();
    return rc;
}

int main(int argc, const char *const *argv)
{
    if (argc == 5 && strcmp(argv[1], "--clone-token") == 0) {
        return clone_main(argv[2], argv[3], argv[4]);
    }
    svc_crypto_init();
    return svc_test_run(argc, argv);
}
