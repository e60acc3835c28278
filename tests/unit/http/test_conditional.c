/*
 * ETags and preconditions (src/http/conditional.c): the comparison table and
 * examples of RFC 9110 §8.8.3 and §13.1, plus malformed input.
 */
#include "http/conditional.h"
#include "testlib.h"

static const char *const ours = "\"xyzzy\"";

TEST(etag_format)
{
    char b[HTTP_ETAG_MAX];
    CHECK_EQ_INT(http_etag_format(b, "01JD3ZQ4-3f2a10"), 0);
    CHECK_EQ_STR(b, "\"01JD3ZQ4-3f2a10\"");
    CHECK_EQ_INT(http_etag_format(b, "!#~,"), 0); /* edges of etagc, comma included */
    CHECK_EQ_STR(b, "\"!#~,\"");
    CHECK_EQ_INT(http_etag_format(b, ""), -1);
    CHECK_EQ_INT(http_etag_format(b, NULL), -1);
    CHECK_EQ_INT(http_etag_format(b, "a\"b"), -1);
    CHECK_EQ_INT(http_etag_format(b, "a b"), -1);
    CHECK_EQ_INT(http_etag_format(b, "a\x7f"), -1);
    CHECK_EQ_INT(http_etag_format(b, "caf\xc3\xa9"), -1); /* we never produce obs-text */
    char opaque[HTTP_ETAG_MAX];
    memset(opaque, 'a', sizeof opaque);
    opaque[HTTP_ETAG_MAX - 3] = '\0'; /* longest allowed */
    CHECK_EQ_INT(http_etag_format(b, opaque), 0);
    CHECK_EQ_INT((int)strlen(b), HTTP_ETAG_MAX - 1);
    opaque[HTTP_ETAG_MAX - 3] = 'a';
    opaque[HTTP_ETAG_MAX - 2] = '\0';
    CHECK_EQ_INT(http_etag_format(b, opaque), -1);
}

TEST(rfc_comparison_table)
{
    /* RFC 9110 §8.8.3.2: ETag 1 | ETag 2 | strong | weak */
    CHECK(!http_etag_list_match_strong("W/\"1\"", "W/\"1\""));
    CHECK(http_etag_list_match_weak("W/\"1\"", "W/\"1\""));
    CHECK(!http_etag_list_match_strong("W/\"1\"", "W/\"2\""));
    CHECK(!http_etag_list_match_weak("W/\"1\"", "W/\"2\""));
    CHECK(!http_etag_list_match_strong("W/\"1\"", "\"1\""));
    CHECK(http_etag_list_match_weak("W/\"1\"", "\"1\""));
    CHECK(http_etag_list_match_strong("\"1\"", "\"1\""));
    CHECK(http_etag_list_match_weak("\"1\"", "\"1\""));
}

TEST(rfc_if_none_match_examples)
{
    /* RFC 9110 §13.1.2 */
    CHECK(http_etag_list_match_weak("\"xyzzy\"", ours));
    CHECK(http_etag_list_match_weak("W/\"xyzzy\"", ours));
    CHECK(http_etag_list_match_weak("\"xyzzy\", \"r2d2xxxx\", \"c3piozzzz\"", ours));
    CHECK(http_etag_list_match_weak("W/\"xyzzy\", W/\"r2d2xxxx\", W/\"c3piozzzz\"", ours));
    CHECK(http_etag_list_match_weak("\"r2d2xxxx\", \"c3piozzzz\", \"xyzzy\"", ours));
    CHECK(http_etag_list_match_weak("*", ours));
    CHECK(!http_etag_list_match_weak("\"r2d2xxxx\", \"c3piozzzz\"", ours));
}

TEST(rfc_if_match_examples)
{
    /* RFC 9110 §13.1.1 */
    CHECK(http_etag_list_match_strong("\"xyzzy\"", ours));
    CHECK(http_etag_list_match_strong("\"xyzzy\", \"r2d2xxxx\", \"c3piozzzz\"", ours));
    CHECK(http_etag_list_match_strong("*", ours));
    CHECK(!http_etag_list_match_strong("W/\"xyzzy\"", ours));
}

TEST(list_syntax)
{
    CHECK(http_etag_list_match_weak(" \t\"xyzzy\" \t", ours));
    CHECK(http_etag_list_match_weak(",,\"a\",,\"xyzzy\",", ours));
    CHECK(http_etag_list_match_weak(" * ", ours));
    CHECK(http_etag_list_match_weak("\"a,b\", \"xyzzy\"", ours)); /* comma inside a tag */
    CHECK(!http_etag_list_match_weak("\"a,\"xyzzy\"", ours));     /* quotes pair differently */
    CHECK(!http_etag_list_match_weak(NULL, ours));
    CHECK(!http_etag_list_match_weak("", ours));
    CHECK(!http_etag_list_match_weak("\"XYZZY\"", ours));          /* opaque is case-sensitive */
    CHECK(!http_etag_list_match_weak("\"xyzzy \"", ours));
}

TEST(malformed_members)
{
    CHECK(!http_etag_list_match_weak("xyzzy", ours));             /* unquoted */
    CHECK(!http_etag_list_match_weak("w/\"xyzzy\"", ours));       /* W/ is case-sensitive */
    CHECK(!http_etag_list_match_weak("\"xyzzy", ours));           /* unterminated */
    CHECK(!http_etag_list_match_weak("\"xyzzy\"x", ours));        /* junk after the tag */
    CHECK(!http_etag_list_match_weak("*, \"a\"", ours));          /* * only alone */
    CHECK(!http_etag_list_match_weak("**", ours));
    CHECK(!http_etag_list_match_weak("W/ \"xyzzy\"", ours));
    /* a bad member does not hide a good one */
    CHECK(http_etag_list_match_weak("garbage, \"xyzzy\"", ours));
    CHECK(http_etag_list_match_weak("\"a\"b, \"xyzzy\"", ours));
    CHECK(http_etag_list_match_weak("\"a\"b\"c,d\", \"xyzzy\"", ours));
    CHECK(http_etag_list_match_weak("\x01\xff, W/\"xyzzy\"", ours));
    CHECK(http_etag_list_match_weak("\"caf\xc3\xa9\", \"xyzzy\"", ours)); /* obs-text member */
    /* our own tag malformed or missing: nothing but * matches */
    CHECK(!http_etag_list_match_weak("\"xyzzy\"", "xyzzy"));
    CHECK(!http_etag_list_match_weak("\"xyzzy\"", NULL));
    CHECK(http_etag_list_match_weak("*", NULL));
}

TEST(preconditions)
{
    CHECK_EQ_INT(http_preconditions(true, NULL, NULL, ours), HTTP_PRECOND_PASS);
    CHECK_EQ_INT(http_preconditions(true, NULL, "\"xyzzy\"", ours), HTTP_PRECOND_NOT_MODIFIED);
    CHECK_EQ_INT(http_preconditions(true, NULL, "W/\"xyzzy\"", ours), HTTP_PRECOND_NOT_MODIFIED);
    CHECK_EQ_INT(http_preconditions(true, NULL, "*", ours), HTTP_PRECOND_NOT_MODIFIED);
    CHECK_EQ_INT(http_preconditions(true, NULL, "\"other\"", ours), HTTP_PRECOND_PASS);
    CHECK_EQ_INT(http_preconditions(true, NULL, "garbage", ours), HTTP_PRECOND_PASS);
    CHECK_EQ_INT(http_preconditions(false, NULL, "\"xyzzy\"", ours), HTTP_PRECOND_FAILED);
    CHECK_EQ_INT(http_preconditions(false, NULL, "*", ours), HTTP_PRECOND_FAILED);
    CHECK_EQ_INT(http_preconditions(true, "\"xyzzy\"", NULL, ours), HTTP_PRECOND_PASS);
    CHECK_EQ_INT(http_preconditions(true, "*", NULL, ours), HTTP_PRECOND_PASS);
    CHECK_EQ_INT(http_preconditions(true, "\"other\"", NULL, ours), HTTP_PRECOND_FAILED);
    CHECK_EQ_INT(http_preconditions(true, "W/\"xyzzy\"", NULL, ours), HTTP_PRECOND_FAILED);
    CHECK_EQ_INT(http_preconditions(true, "garbage", NULL, ours), HTTP_PRECOND_FAILED);
    /* If-Match is evaluated first (RFC 9110 §13.2.2) */
    CHECK_EQ_INT(http_preconditions(true, "\"other\"", "\"xyzzy\"", ours), HTTP_PRECOND_FAILED);
    CHECK_EQ_INT(http_preconditions(true, "\"xyzzy\"", "\"xyzzy\"", ours),
                 HTTP_PRECOND_NOT_MODIFIED);
}

TEST(if_range)
{
    CHECK(http_if_range_allows(NULL, ours));
    CHECK(http_if_range_allows("\"xyzzy\"", ours));
    CHECK(http_if_range_allows("  \"xyzzy\"\t", ours));
    CHECK(!http_if_range_allows("W/\"xyzzy\"", ours)); /* weak never matches strongly */
    CHECK(!http_if_range_allows("\"other\"", ours));
    CHECK(!http_if_range_allows("\"xyzzy\", \"other\"", ours)); /* a single tag only */
    CHECK(!http_if_range_allows("Sat, 29 Oct 1994 19:43:31 GMT", ours)); /* HTTP-date */
    CHECK(!http_if_range_allows("", ours));
    CHECK(!http_if_range_allows("*", ours));
    CHECK(!http_if_range_allows("\"xyzzy\"", NULL));
    CHECK(!http_if_range_allows("W/\"1\"", "W/\"1\"")); /* even if ours were weak */
}

RUN_TESTS(TEST_CASE(etag_format), TEST_CASE(rfc_comparison_table),
          TEST_CASE(rfc_if_none_match_examples), TEST_CASE(rfc_if_match_examples),
          TEST_CASE(list_syntax), TEST_CASE(malformed_members), TEST_CASE(preconditions),
          TEST_CASE(if_range))
