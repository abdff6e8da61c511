/*
 * test_attachments.c: what an attachment may be called, the type it is
 * stored with, and the Content-Disposition of its download.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"
#include "svc_attach_rules.h"

SVC_TEST(names_accepted)
{
    char name255[256];

    SVC_CHECK(svc_attach_name_refusal("notes.txt") == NULL);
    SVC_CHECK(svc_attach_name_refusal("r\xC3\xA9sum\xC3\xA9 \"final\".pdf") == NULL);
    SVC_CHECK(svc_attach_name_refusal("...") == NULL);
    SVC_CHECK(svc_attach_name_refusal(".hidden") == NULL);
    SVC_CHECK(svc_attach_name_refusal("\xF0\x9F\x98\x80.png") == NULL);
    memset(name255, 'a', 255);
    name255[255] = '\0';
    SVC_CHECK(svc_attach_name_refusal(name255) == NULL);
}

SVC_TEST(names_refused)
{
    char name256[257];

    SVC_CHECK(svc_attach_name_refusal(NULL) != NULL);
    SVC_CHECK(svc_attach_name_refusal("") != NULL);
    SVC_CHECK(svc_attach_name_refusal(".") != NULL);
    SVC_CHECK(svc_attach_name_refusal("..") != NULL);
    SVC_CHECK(svc_attach_name_refusal("a/b") != NULL);
    SVC_CHECK(svc_attach_name_refusal("/etc/passwd") != NULL);
    SVC_CHECK(svc_attach_name_refusal("a\\b") != NULL);
    SVC_CHECK(svc_attach_name_refusal("a\tb") != NULL);
    SVC_CHECK(svc_attach_name_refusal("a\nb") != NULL);
    SVC_CHECK(svc_attach_name_refusal("a\x7f") != NULL);
    SVC_CHECK(svc_attach_name_refusal("a\xC2\x85") != NULL);          /* NEL, a C1 control */
    SVC_CHECK(svc_attach_name_refusal("a\xC2\x9F") != NULL);
    SVC_CHECK(svc_attach_name_refusal("a\xC2\xA0") == NULL);          /* no-break space */
    SVC_CHECK(svc_attach_name_refusal("\xFF.txt") != NULL);           /* not UTF-8 */
    SVC_CHECK(svc_attach_name_refusal("\xC0\xAF") != NULL);           /* overlong '/' */
    SVC_CHECK(svc_attach_name_refusal("\xED\xA0\x80") != NULL);       /* a surrogate */
    SVC_CHECK(svc_attach_name_refusal("\xF4\x90\x80\x80") != NULL);   /* past U+10FFFF */
    SVC_CHECK(svc_attach_name_refusal("\xE2\x82") != NULL);           /* cut short */
    memset(name256, 'a', 256);
    name256[256] = '\0';
    SVC_CHECK(svc_attach_name_refusal(name256) != NULL);
}

SVC_TEST(stored_types)
{
    SVC_CHECK_STR(svc_attach_stored_type(p, "image/png"), "image/png");
    SVC_CHECK_STR(svc_attach_stored_type(p, " Image/JPEG ; q=1"), "image/jpeg");
    SVC_CHECK_STR(svc_attach_stored_type(p, "text/plain; charset=utf-8"), "text/plain");
    SVC_CHECK_STR(svc_attach_stored_type(p, "application/pdf"), "application/pdf");
    SVC_CHECK_STR(svc_attach_stored_type(p, "application/json"), "application/json");
    SVC_CHECK_STR(svc_attach_stored_type(p, "application/zip"), "application/zip");
    SVC_CHECK_STR(svc_attach_stored_type(p, "image/gif"), "image/gif");
    SVC_CHECK_STR(svc_attach_stored_type(p, "image/webp"), "image/webp");
    SVC_CHECK_STR(svc_attach_stored_type(p, "text/html"), "application/octet-stream");
    SVC_CHECK_STR(svc_attach_stored_type(p, "image/svg+xml"), "application/octet-stream");
    SVC_CHECK_STR(svc_attach_stored_type(p, "application/xhtml+xml"), "application/octet-stream");
    SVC_CHECK_STR(svc_attach_stored_type(p, "text/plainx"), "application/octet-stream");
    SVC_CHECK_STR(svc_attach_stored_type(p, ""), "application/octet-stream");
    SVC_CHECK_STR(svc_attach_stored_type(p, NULL), "application/octet-stream");
}

SVC_TEST(disposition)
{
    SVC_CHECK_STR(svc_attach_disposition(p, "a.txt"),
                  "attachment; filename=\"a.txt\"; filename*=UTF-8''a.txt");
    SVC_CHECK_STR(svc_attach_disposition(p, "r\xC3\xA9sum\xC3\xA9 \"x\" 5%.pdf"),
                  "attachment; filename=\"r__sum__ _x_ 5_.pdf\"; "
                  "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22x%22%205%25.pdf");
    SVC_CHECK_STR(svc_attach_disposition(p, "a;b=c,d'e"),
                  "attachment; filename=\"a;b=c,d'e\"; filename*=UTF-8''a%3Bb%3Dc%2Cd%27e");
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
