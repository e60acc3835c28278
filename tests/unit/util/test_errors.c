/*
 * The error buffer (util/errors.h): first failure wins, and the engine's
 * limit marker turns a failed statement into limit_exceeded, out of the
 * message, while text that only looks like the marker changes nothing.
 */
#include <stdio.h>
#include <string.h>

#include "testlib.h"
#include "util/errors.h"

TEST(first_failure_wins)
{
    struct vt_error err = {0};
    CHECK_EQ_INT(vt_error_set(&err, VT_ERR_QUERY_FAILED, "first %d", 1), VT_ERR_QUERY_FAILED);
    vt_error_set(&err, VT_ERR_INTERNAL, "second");
    CHECK_EQ_INT(err.code, VT_ERR_QUERY_FAILED);
    CHECK_EQ_STR(err.msg, "first 1");
}

TEST(the_marker_is_one_per_process_and_not_guessable_text)
{
    const char *m = vt_limit_marker();
    CHECK(m == vt_limit_marker());
    CHECK_EQ_INT(strlen(m), strlen("vtlimit-0123456789abcdef: "));
    CHECK(!strncmp(m, "vtlimit-", 8));
    CHECK(strcmp(m, "vtlimit-0000000000000000: ") != 0);
}

TEST(a_marked_duckdb_failure_is_limit_exceeded_without_the_marker)
{
    struct vt_error err = {0};
    enum vt_err rc = vt_error_set(&err, VT_ERR_QUERY_FAILED, "Invalid Input Error: %srepeat: a "
                                  "result of 9 bytes is over the limit of 8", vt_limit_marker());
    CHECK_EQ_INT(rc, VT_ERR_LIMIT_EXCEEDED);
    CHECK_EQ_INT(err.code, VT_ERR_LIMIT_EXCEEDED);
    CHECK_EQ_STR(err.msg, "repeat: a result of 9 bytes is over the limit of 8");
    CHECK_EQ_STR(vt_err_sqlstate(err.code), "54000");

    /* a build (saved queries) too; other text before the marker stays */
    vt_error_clear(&err);
    char msg[200];
    snprintf(msg, sizeof msg, "while building: Invalid Input Error: %shex: too big",
             vt_limit_marker());
    CHECK_EQ_INT(vt_error_set(&err, VT_ERR_BUILD_FAILED, "%s", msg), VT_ERR_LIMIT_EXCEEDED);
    CHECK_EQ_STR(err.msg, "while building: hex: too big");
}

TEST(other_codes_keep_theirs_and_lose_the_marker)
{
    struct vt_error err = {0};
    vt_error_set(&err, VT_ERR_INTERNAL, "the summary failed: Invalid Input Error: %sbin: x",
                 vt_limit_marker());
    CHECK_EQ_INT(err.code, VT_ERR_INTERNAL);
    CHECK_EQ_STR(err.msg, "the summary failed: bin: x");
    CHECK(strstr(err.msg, "vtlimit-") == NULL);
}

TEST(text_that_looks_like_the_marker_is_a_normal_failure)
{
    const char *forged[] = {
        "Invalid Input Error: vtlimit-0000000000000000: repeat: over the limit",
        "Invalid Input Error: vtlimit-: repeat: over the limit",
        "Conversion Error: Could not convert string 'vtlimit-0123456789abcdef: x' to INT32",
    };
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        struct vt_error err = {0};
        CHECK_EQ_INT(vt_error_set(&err, VT_ERR_QUERY_FAILED, "%s", forged[i]),
                     VT_ERR_QUERY_FAILED);
        CHECK_EQ_STR(err.msg, forged[i]);
    }
    /* the marker with one digit changed */
    char near[64];
    snprintf(near, sizeof near, "%s", vt_limit_marker());
    near[8] = near[8] == '0' ? '1' : '0';
    struct vt_error err = {0};
    vt_error_set(&err, VT_ERR_QUERY_FAILED, "Invalid Input Error: %sx", near);
    CHECK_EQ_INT(err.code, VT_ERR_QUERY_FAILED);
}

RUN_TESTS(TEST_CASE(first_failure_wins), TEST_CASE(the_marker_is_one_per_process_and_not_guessable_text),
          TEST_CASE(a_marked_duckdb_failure_is_limit_exceeded_without_the_marker),
          TEST_CASE(other_codes_keep_theirs_and_lose_the_marker),
          TEST_CASE(text_that_looks_like_the_marker_is_a_normal_failure))
