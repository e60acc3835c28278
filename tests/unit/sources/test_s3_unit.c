/*
 * The S3 pieces that need no server: listing and error XML, URL parsing and
 * encoding, globs and client configuration rules. Requests against a real S3
 * server (moto), the range cache included, are covered by
 * tests/e2e/test_sources_s3.py.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/s3.h"
#include "testlib.h"
#include "util/limits.h"

static const char *LIST1 =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Name>bkt</Name><Prefix>data/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
    "<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
    "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
    "<Contents><Key>data/a+b%2Bc.parquet</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>"
    "<ETag>&quot;abc&quot;</ETag><Size>123</Size><StorageClass>STANDARD</StorageClass></Contents>"
    "<Contents><Key>data/year%3D2024/x%20y.parquet</Key><ETag>\"def\"</ETag><Size>0</Size>"
    "<Owner><ID>x</ID></Owner></Contents>"
    "<CommonPrefixes><Prefix>data/sub/</Prefix></CommonPrefixes>"
    "</ListBucketResult>";

TEST(list_page_parses_keys_tokens_and_url_encoding)
{
    struct s3_list_page p;
    struct vt_error err = {0};
    CHECK_EQ_INT(s3_list_parse(LIST1, strlen(LIST1), &p, &err), VT_ERR_OK);
    CHECK_EQ_INT(p.objects.n, 2);
    CHECK(p.is_truncated);
    CHECK_EQ_STR(p.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    if (p.objects.n == 2) {
        CHECK_EQ_STR(p.objects.items[0].key, "data/a b+c.parquet");
        CHECK_EQ_INT(p.objects.items[0].size, 123);
        CHECK_EQ_STR(p.objects.items[0].etag, "\"abc\"");
        CHECK_EQ_STR(p.objects.items[1].key, "data/year=2024/x y.parquet");
        CHECK_EQ_INT(p.objects.items[1].size, 0);
    }
    CHECK_EQ_STR(p.last_key, "data/year=2024/x y.parquet");
    s3_list_page_release(&p);
}

TEST(list_page_without_encoding_and_empty)
{
    const char *x = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                    "<Contents><Key>a%20b</Key><Size>1</Size></Contents></ListBucketResult>";
    struct s3_list_page p;
    struct vt_error err = {0};
    CHECK_EQ_INT(s3_list_parse(x, strlen(x), &p, &err), VT_ERR_OK);
    CHECK_EQ_INT(p.objects.n, 1);
    if (p.objects.n)
        CHECK_EQ_STR(p.objects.items[0].key, "a%20b"); /* not decoded without EncodingType */
    CHECK(!p.is_truncated);
    s3_list_page_release(&p);
    const char *e = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
    CHECK_EQ_INT(s3_list_parse(e, strlen(e), &p, &err), VT_ERR_OK);
    CHECK_EQ_INT(p.objects.n, 0);
    s3_list_page_release(&p);
}

TEST(list_page_rejects_hostile_or_broken_xml)
{
    const char *bad[] = {
        "",
        "<ListBucketResult>",
        "<Error><Code>AccessDenied</Code></Error>",
        "<!DOCTYPE x [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;\">]><ListBucketResult>"
        "<Contents><Key>&b;</Key><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>99999999999999999999</Size></Contents>"
        "</ListBucketResult>",
        "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%zz</Key><Size>1</Size>"
        "</Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key></Key><Size>1</Size></Contents></ListBucketResult>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct s3_list_page p;
        struct vt_error err = {0};
        enum vt_err rc = s3_list_parse(bad[i], strlen(bad[i]), &p, &err);
        if (rc == VT_ERR_OK)
            fprintf(stderr, "  accepted bad listing #%zu\n", i);
        CHECK(rc != VT_ERR_OK);
        CHECK_EQ_INT(p.objects.n, 0);
    }
    /* Deep nesting is cut off. */
    char deep[4096] = "<ListBucketResult>";
    for (int i = 0; i < 40; i++)
        strcat(deep, "<a>");
    struct s3_list_page p;
    struct vt_error err = {0};
    CHECK(s3_list_parse(deep, strlen(deep), &p, &err) != VT_ERR_OK);
    /* A key longer than S3 allows. */
    char *big = malloc(8000);
    strcpy(big, "<ListBucketResult><Contents><Key>");
    for (int i = 0; i < 2000; i++)
        strcat(big, "k");
    strcat(big, "</Key><Size>1</Size></Contents></ListBucketResult>");
    CHECK(s3_list_parse(big, strlen(big), &p, &err) != VT_ERR_OK);
    free(big);
}

TEST(error_documents)
{
    const char *x = "<?xml version=\"1.0\"?><Error><Code>PermanentRedirect</Code><Message>The "
                    "bucket\nis elsewhere</Message><Region>eu-west-1</Region><RequestId>1"
                    "</RequestId></Error>";
    struct s3_error_doc d;
    CHECK(s3_error_parse(x, strlen(x), &d));
    CHECK_EQ_STR(d.code, "PermanentRedirect");
    CHECK_EQ_STR(d.message, "The bucket is elsewhere");
    CHECK_EQ_STR(d.region, "eu-west-1");
    CHECK(!s3_error_parse("<html>nope</html>", 17, &d));
    CHECK(!s3_error_parse("", 0, &d));
    CHECK(!s3_error_parse(NULL, 0, &d));
}

TEST(urls_and_encoding)
{
    struct s3_url u;
    struct vt_error err = {0};
    CHECK_EQ_INT(s3_url_parse("s3://my-bucket/a/b/*.parquet", &u, &err), VT_ERR_OK);
    CHECK_EQ_STR(u.bucket, "my-bucket");
    CHECK_EQ_STR(u.key, "a/b/*.parquet");
    s3_url_release(&u);
    CHECK_EQ_INT(s3_url_parse("s3://bkt", &u, &err), VT_ERR_OK);
    CHECK_EQ_STR(u.key, "");
    s3_url_release(&u);
    CHECK(s3_url_parse("s3://b/x", &u, &err) != VT_ERR_OK);        /* bucket too short */
    CHECK(s3_url_parse("http://bkt/x", &u, &err) != VT_ERR_OK);
    CHECK(s3_url_parse("s3://bad bucket/x", &u, &err) != VT_ERR_OK);
    char *e = s3_uri_encode("a b/c+d~e_f.g-h%é", true);
    CHECK_EQ_STR(e, "a%20b/c%2Bd~e_f.g-h%25%C3%A9");
    free(e);
    e = s3_uri_encode("x/y=z", false);
    CHECK_EQ_STR(e, "x%2Fy%3Dz");
    free(e);
}

TEST(globs)
{
    CHECK(s3_glob_match("data/*.parquet", "data/a.parquet"));
    CHECK(!s3_glob_match("data/*.parquet", "data/x/a.parquet"));
    CHECK(s3_glob_match("data/**/*.parquet", "data/a.parquet"));
    CHECK(s3_glob_match("data/**/*.parquet", "data/x/y/a.parquet"));
    CHECK(s3_glob_match("data/**", "data/x/y/a.parquet"));
    CHECK(s3_glob_match("**/*.parquet", "a/b.parquet"));
    CHECK(!s3_glob_match("data/**/*.parquet", "other/a.parquet"));
    CHECK(s3_glob_match("f[12].parquet", "f1.parquet"));
    CHECK(!s3_glob_match("f[12].parquet", "f3.parquet"));
    CHECK(s3_glob_match("f[!12].parquet", "f3.parquet"));
    CHECK(s3_glob_match("f[a-c]?.parquet", "fbx.parquet"));
    CHECK(!s3_glob_match("f?.parquet", "f/.parquet"));
    CHECK(s3_glob_match("y=*/m=*/*", "y=2024/m=01/part-0.parquet"));
    CHECK(!s3_glob_match("a*", "b"));
    CHECK_EQ_INT(s3_glob_literal_prefix_len("data/x/*.parquet"), 7);
    CHECK_EQ_INT(s3_glob_literal_prefix_len("plain/key"), 9);
    /* Pathological patterns stay bounded. */
    CHECK(!s3_glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac"));
}

TEST(client_configuration_rules)
{
    struct s3_client *c = NULL;
    struct vt_error err = {0};
    struct s3_config cfg = {0};
    cfg.endpoint = "http://127.0.0.1:9000";
    CHECK_EQ_INT(s3_client_create(&cfg, &c, &err), VT_ERR_INVALID_CONFIG);
    CHECK_CONTAINS(vt_error_message(&err), "allow_http");
    cfg.allow_http = true;
    vt_error_clear(&err);
    CHECK_EQ_INT(s3_client_create(&cfg, &c, &err), VT_ERR_OK);
    CHECK_EQ_STR(s3_client_endpoint(c), "http://127.0.0.1:9000");
    s3_client_destroy(c);
    cfg.endpoint = "ftp://x";
    vt_error_clear(&err);
    CHECK(s3_client_create(&cfg, &c, &err) != VT_ERR_OK);
    cfg.endpoint = "https://user:pw@host";
    vt_error_clear(&err);
    CHECK(s3_client_create(&cfg, &c, &err) != VT_ERR_OK);
    /* Region: config, else AWS_REGION, else us-east-1; the default endpoint follows. */
    struct s3_config d = {0};
    setenv("AWS_REGION", "eu-central-1", 1);
    vt_error_clear(&err);
    CHECK_EQ_INT(s3_client_create(&d, &c, &err), VT_ERR_OK);
    CHECK_EQ_STR(s3_client_region(c), "eu-central-1");
    CHECK_EQ_STR(s3_client_endpoint(c), "https://s3.eu-central-1.amazonaws.com");
    s3_client_destroy(c);
    unsetenv("AWS_REGION");
    d.region = "bad region";
    vt_error_clear(&err);
    CHECK(s3_client_create(&d, &c, &err) != VT_ERR_OK);
    /* Per-dataset credential variables must exist; the message names the
     * variable, never a value. */
    struct s3_config k = {0};
    k.access_key_id_env = "VT_TEST_NO_SUCH_VAR";
    vt_error_clear(&err);
    CHECK_EQ_INT(s3_client_create(&k, &c, &err), VT_ERR_INVALID_CONFIG);
    CHECK_CONTAINS(vt_error_message(&err), "VT_TEST_NO_SUCH_VAR");
    setenv("VT_TEST_KEY", "AKIDEXAMPLE", 1);
    setenv("VT_TEST_SECRET", "very-secret-value", 1);
    k.access_key_id_env = "VT_TEST_KEY";
    k.secret_access_key_env = "VT_TEST_SECRET";
    vt_error_clear(&err);
    CHECK_EQ_INT(s3_client_create(&k, &c, &err), VT_ERR_OK);
    s3_client_destroy(c);
    /* Half a credential pair is an error. */
    setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
    unsetenv("AWS_SECRET_ACCESS_KEY");
    vt_error_clear(&err);
    CHECK_EQ_INT(s3_client_create(&d, &c, &err), VT_ERR_INVALID_CONFIG);
    CHECK(strstr(vt_error_message(&err), "AKID") == NULL);
    unsetenv("AWS_ACCESS_KEY_ID");
}

TEST(unreachable_endpoint_fails_after_retries)
{
    /* Port 1 refuses connections: a transport error, retried, then reported. */
    struct s3_config cfg = {0};
    cfg.endpoint = "http://127.0.0.1:1";
    cfg.allow_http = true;
    cfg.addressing_style = CFG_S3_ADDRESSING_PATH;
    struct s3_client *c = NULL;
    struct vt_error err = {0};
    CHECK_EQ_INT(s3_client_create(&cfg, &c, &err), VT_ERR_OK);
    struct s3_listing l;
    struct s3_outcome oc;
    CHECK_EQ_INT(s3_list(c, "bkt", "x/", NULL, NULL, 0, &l, &oc, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "gave up after retries");
    CHECK(!oc.access_denied);
    s3_client_destroy(c);
}


RUN_TESTS(TEST_CASE(list_page_parses_keys_tokens_and_url_encoding),
          TEST_CASE(list_page_without_encoding_and_empty),
          TEST_CASE(list_page_rejects_hostile_or_broken_xml), TEST_CASE(error_documents),
          TEST_CASE(urls_and_encoding), TEST_CASE(globs), TEST_CASE(client_configuration_rules),
          TEST_CASE(unreachable_endpoint_fails_after_retries))
