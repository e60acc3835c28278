#include "testlib.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/errors.h"

TEST(caps_at_max)
{
    struct strbuf sb;
    sb_init(&sb, 8);
    CHECK_EQ_INT(sb_adds(&sb, "12345678"), 0);
    CHECK_EQ_INT(sb_addc(&sb, 'x'), -1);
    CHECK(sb.overflow);
    CHECK_EQ_STR(sb.buf, "12345678");
    sb_release(&sb);
}

TEST(json_escapes)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_add_json_string(&sb, "a\"b\\\n\x01", 6);
    CHECK_EQ_STR(sb.buf, "\"a\\\"b\\\\\\n\\u0001\"");
    sb_release(&sb);
}

TEST(sql_quoting)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_add_sql_ident(&sb, "we\"ird");
    sb_adds(&sb, " ");
    sb_add_sql_string(&sb, "it's");
    CHECK_EQ_STR(sb.buf, "\"we\"\"ird\" 'it''s'");
    sb_release(&sb);
}

TEST(ulid_shape)
{
    char a[27], b[27];
    ulid_new(a);
    ulid_new(b);
    CHECK_EQ_INT(strlen(a), 26);
    CHECK(strcmp(a, b) != 0);
    CHECK(a[0] <= '7'); /* top bits are zero */
}

TEST(error_first_wins)
{
    struct vt_error e = {0};
    vt_error_set(&e, VT_ERR_UNKNOWN_COLUMN, "unknown column \"%s\"", "x");
    vt_error_set(&e, VT_ERR_INTERNAL, "later");
    CHECK_EQ_INT(e.code, VT_ERR_UNKNOWN_COLUMN);
    CHECK_EQ_STR(vt_error_message(&e), "unknown column \"x\"");
    CHECK_EQ_INT(vt_err_status(VT_ERR_BODY_TOO_LARGE), 413);
    CHECK_EQ_STR(vt_err_code(VT_ERR_TIMEOUT), "timeout");
}

RUN_TESTS(TEST_CASE(caps_at_max), TEST_CASE(json_escapes), TEST_CASE(sql_quoting),
          TEST_CASE(ulid_shape), TEST_CASE(error_first_wins))
