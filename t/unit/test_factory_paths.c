/*
 * test_factory_paths.c: the paths the factory writes for a model's answer
 * (mod_svc/factory/svc_factory_reply.c, svc_factory_path_check): git's own
 * directory in every spelling a file system folds to it is refused,
 * whatever the component's length, and ordinary names are not.
 *
 * The factory is a program of its own: this test links its objects, not
 * the module's (Makefile).
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_factory.h"

#include <apr_strings.h>

static int refused(const char *path)
{
    svc_factory_err_t err;

    memset(&err, 0, sizeof(err));
    if (svc_factory_path_check(path, strlen(path), &err) == 0) {
        return 0;
    }
    SVC_CHECK_STR(err.code, SVC_FACTORY_E_PATH);
    return 1;
}

/* prefix + n copies of c + suffix. */
static const char *run_of(apr_pool_t *p, const char *prefix, char c, int n, const char *suffix)
{
    char *run = apr_palloc(p, (apr_size_t)n + 1);

    memset(run, c, (apr_size_t)n);
    run[n] = '\0';
    return apr_pstrcat(p, prefix, run, suffix, NULL);
}

SVC_TEST(git_dir_short_spellings)
{
    static const char *const bad[] = {
        ".git/config", ".GIT/hooks/pre-commit", "sub/.Git/config", ".git./config",
        ".git /config", ".git. . ./config", "git~1/config", "GIT~1./x",
        ".g\xe2\x80\x8cit/config", ".git::$INDEX_ALLOCATION/config", ".git:x", ".git",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (!refused(bad[i])) {
            fprintf(stderr, "accepted: %s\n", bad[i]);
            svc_test_failed_checks++;
        }
    }
}

/*
 * Long components: the check used to fold a component into a 64-byte
 * buffer and give up (calling it harmless) when it did not fit, so ".git"
 * with 60 trailing spaces (.git on NTFS) and ".git:" with a long stream
 * name passed. Found by t/fuzz/fuzz_factory_reply.c; its corpus keeps the
 * input (regress-git-long-component).
 */
SVC_TEST(git_dir_long_spellings)
{
    SVC_CHECK(refused(run_of(p, ".git", ' ', 60, "/config")));
    SVC_CHECK(refused(run_of(p, ".git", '.', 250, "/config")));
    SVC_CHECK(refused(run_of(p, ".git. ", ' ', 100, "")));
    SVC_CHECK(refused(run_of(p, "git~1", '.', 80, "/HEAD")));
    SVC_CHECK(refused(run_of(p, ".git:", 'x', 70, "")));
    SVC_CHECK(refused(run_of(p, "dir/.GIT:REA?Dconte", '%', 60, "ntMc/a")));
    /* A stream name that is not ASCII. */
    SVC_CHECK(refused(".git:\xc3\xa9t\xc3\xa9"));
    /* HFS+ ignorables anywhere, long or not. */
    SVC_CHECK(refused(run_of(p, ".g\xe2\x80\x8ci\xe2\x80\x8dt", ' ', 70, "/config")));
}

SVC_TEST(git_like_names_accepted)
{
    static const char *const good[] = {
        ".github/workflows/ci.yml", ".gitignore", ".gitattributes", "git/config", ".git-x",
        ".gi", "a.git", "git~2/x", ".git x", ".git.x", "\xc3\xa9.git", ".gitk",
    };
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        if (refused(good[i])) {
            fprintf(stderr, "refused: %s\n", good[i]);
            svc_test_failed_checks++;
        }
    }
    SVC_CHECK(!refused(run_of(p, ".github", 'x', 200, "/x")));
    SVC_CHECK(!refused(run_of(p, ".git", ' ', 60, "x/config")));
    SVC_CHECK(!refused(run_of(p, ".git", ' ', 60, "\xc3\xa9")));
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
