/*
 * The TOML parser beyond conformance (that is test_toml_suite.c): the exact
 * text of error messages with their line and column, value positions, the
 * lookup API (NUL-bearing keys, large tables), limits, and odd inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/toml.h"
#include "testlib.h"
#include "util/strbuf.h"

static char errbuf[512];

static struct toml_value *parse(const char *s)
{
    return toml_parse(s, strlen(s), errbuf, sizeof errbuf);
}

#define CHECK_PARSE_ERR(text, expected)                                            \
    do {                                                                           \
        struct toml_value *tl_v = parse(text);                                     \
        CHECK(tl_v == NULL);                                                       \
        toml_free(tl_v);                                                           \
        CHECK_EQ_STR(errbuf, expected);                                            \
    } while (0)

TEST(error_messages)
{
    CHECK_PARSE_ERR("a = 1\na = 2\n", "line 2, column 1: duplicate key \"a\"");
    CHECK_PARSE_ERR("[server]\nport = 1\n\n  port = 2\n", "line 4, column 3: duplicate key \"port\"");
    CHECK_PARSE_ERR("x.y = 1\nx.y = 2\n", "line 2, column 3: duplicate key \"x.y\"");
    CHECK_PARSE_ERR("port 8080\n", "line 1, column 6: expected '=' after key \"port\", found '8'");
    CHECK_PARSE_ERR("port\n", "line 1, column 5: expected '=' after key \"port\", found end of line");
    CHECK_PARSE_ERR("a = \"abc\n", "line 1, column 5: unterminated string (a newline needs a multi-line string)");
    CHECK_PARSE_ERR("a = \"abc", "line 1, column 5: unterminated string");
    CHECK_PARSE_ERR("a = \"\"\"abc\n", "line 1, column 5: unterminated multi-line string");
    CHECK_PARSE_ERR("a = \"\\q\"", "line 1, column 6: invalid escape sequence: backslash followed by 'q'");
    CHECK_PARSE_ERR("a = \"\\uD800\"", "line 1, column 6: \\uD800 is not a Unicode scalar value");
    CHECK_PARSE_ERR("a = \"\\u12\"", "line 1, column 6: \\u escape needs 4 hexadecimal digits");
    CHECK_PARSE_ERR("a = \"x\ty\x01\"",
                    "line 1, column 9: control character U+0001 must be escaped in a string");
    CHECK_PARSE_ERR("[a]\n[a]\n", "line 2, column 1: table [a] is defined twice");
    CHECK_PARSE_ERR("[a]\nb.c = 1\n[a.b]\n", "line 3, column 1: table [a.b] is already defined by dotted keys");
    CHECK_PARSE_ERR("[a.b]\n[a]\nb.c = 1\n",
                    "line 3, column 1: cannot add keys to table \"b\" with dotted keys: it was "
                    "defined by a [table] header");
    CHECK_PARSE_ERR("[[a]]\n[a]\n", "line 2, column 1: [a] is an array of tables; use [[a]] to add an element");
    CHECK_PARSE_ERR("a = []\n[[a]]\n",
                    "line 2, column 1: cannot use [[a]]: \"a\" is already defined as a static array");
    CHECK_PARSE_ERR("a = 1\n[a]\n", "line 2, column 2: key \"a\" is already defined as an integer, not a table");
    CHECK_PARSE_ERR("a = 1\na.b = 2\n", "line 2, column 1: key \"a\" is already defined as an integer, not a table");
    CHECK_PARSE_ERR("a = {b = 1}\na.c = 2\n", "line 2, column 1: cannot add keys to inline table \"a\"");
    CHECK_PARSE_ERR("a = {b = 1}\n[a.c]\n", "line 2, column 2: cannot extend inline table \"a\"");
    CHECK_PARSE_ERR("a = {b = 1,}\n", "line 1, column 12: trailing comma is not allowed in an inline table");
    CHECK_PARSE_ERR("a = {b = 1\n}\n", "line 1, column 11: newlines are not allowed inside an inline table");
    CHECK_PARSE_ERR("a = {b = 1 c = 2}\n", "line 1, column 12: expected ',' or '}' in inline table, found 'c'");
    CHECK_PARSE_ERR("a = [1 2]\n", "line 1, column 8: expected ',' or ']' in array, found '2'");
    CHECK_PARSE_ERR("a = [1,\n", "line 2, column 1: expected a value after '='");
    CHECK_PARSE_ERR("a = 1 2\n", "line 1, column 7: expected end of line after value, found '2'");
    CHECK_PARSE_ERR("[a] b = 1\n", "line 1, column 5: expected end of line after table header, found 'b'");
    CHECK_PARSE_ERR("[a\n", "line 1, column 3: expected ']' to close the table header, found end of line");
    CHECK_PARSE_ERR("[[a]\n", "line 1, column 4: expected ']]' to close the table header, found ']'");
    CHECK_PARSE_ERR("[]\n", "line 1, column 2: expected a key, found ']'");
    CHECK_PARSE_ERR("a = \n", "line 1, column 5: expected a value after '='");
    CHECK_PARSE_ERR("a = yes\n", "line 1, column 5: expected a value, found bare text (strings need quotes)");
    CHECK_PARSE_ERR("a = @\n", "line 1, column 5: expected a value, found '@'");
    CHECK_PARSE_ERR("= 1\n", "line 1, column 1: expected a key or a [table] header, found '='");
    CHECK_PARSE_ERR("a = 0x\n", "line 1, column 5: invalid hexadecimal integer");
    CHECK_PARSE_ERR("a = +0x10\n",
                    "line 1, column 5: a sign is not allowed on hexadecimal, octal or binary integers");
    CHECK_PARSE_ERR("a = 9223372036854775808\n", "line 1, column 5: integer does not fit in 64 bits");
    CHECK_PARSE_ERR("a = 0x8000000000000000\n", "line 1, column 5: integer does not fit in 64 bits");
    CHECK_PARSE_ERR("a = 012\n", "line 1, column 5: leading zeros are not allowed in numbers");
    CHECK_PARSE_ERR("a = 1.\n", "line 1, column 5: a decimal point must be followed by digits");
    CHECK_PARSE_ERR("a = 1e\n", "line 1, column 5: an exponent must be followed by digits");
    CHECK_PARSE_ERR("a = 1e400\n", "line 1, column 5: float is out of range");
    CHECK_PARSE_ERR("a = 1__0\n", "line 1, column 5: invalid number");
    CHECK_PARSE_ERR("a = 1979-02-30\n", "line 1, column 5: invalid date: 1979-02-30 does not exist");
    CHECK_PARSE_ERR("a = 1979-02-03T25:00:00\n", "line 1, column 5: invalid time: 25:00:00 is out of range");
    CHECK_PARSE_ERR("a = 12:30\n", "line 1, column 5: invalid time: expected HH:MM:SS");
    CHECK_PARSE_ERR("a = 1979-02-03T01:00:00+25:00\n", "line 1, column 5: invalid time offset: out of range");
    CHECK_PARSE_ERR("# ok\n# bad \x7f\n", "line 2, column 7: control character U+007F is not allowed in a comment");
    CHECK_PARSE_ERR("a = 1\r\nb = 2\r", "line 2, column 6: expected end of line after value, found control character U+000D");
    CHECK_PARSE_ERR("\r", "line 1, column 1: carriage return must be followed by a line feed");
    /* Columns count characters, not bytes. */
    CHECK_PARSE_ERR("\"\xc3\xa9\xc3\xa9\" = 1 x\n", "line 1, column 10: expected end of line after value, found 'x'");
    CHECK_PARSE_ERR("a = \"\xff\"\n", "line 1, column 6: invalid UTF-8 byte 0xFF");
    CHECK_PARSE_ERR("\xEF\xBB\xBF" "a = 1 x\n", "line 1, column 7: expected end of line after value, found 'x'");
    CHECK_PARSE_ERR("a = 1\n\xEF\xBB\xBF", "line 2, column 1: expected a key or a [table] header, found non-ASCII character");
    CHECK_PARSE_ERR("a = \"\xed\xa0\x80\"\n", "line 1, column 6: invalid UTF-8 byte 0xED"); /* surrogate */
    CHECK_PARSE_ERR("a = \"\xc0\xaf\"\n", "line 1, column 6: invalid UTF-8 byte 0xC0");     /* overlong */
}

TEST(error_buffer_edge_cases)
{
    CHECK(toml_parse("a = ", 4, NULL, 0) == NULL); /* no buffer: still fails cleanly */
    char tiny[8];
    CHECK(toml_parse("a = ", 4, tiny, sizeof tiny) == NULL);
    CHECK_EQ_STR(tiny, "line 1,");
    struct toml_value *v = toml_parse(NULL, 0, errbuf, sizeof errbuf);
    CHECK(v != NULL && v->type == TOML_TABLE && v->u.table.len == 0);
    toml_free(v);
    toml_free(NULL);
}

TEST(values_and_positions)
{
    const char *doc = "\xEF\xBB\xBF# bom first\n"
                      "title = \"x\"\n"
                      "[server]\n"
                      "  port = 8080\n"
                      "  ratio = -1.5e3\n"
                      "  on = true\n"
                      "  when = 1979-05-27T07:32:00.999999-07:00\n"
                      "  day = 1979-05-27\n"
                      "  at = 07:32:00.5\n"
                      "  local = 1979-05-27 07:32:00\n"
                      "  hex = 0xDEAD_beef\n"
                      "  oct = 0o755\n"
                      "  bin = -0\n"
                      "  ml = \"\"\"\r\nline1\r\nline2 \\\r\n   end\"\"\"\n"
                      "  lit = '''C:\\path'''\n"
                      "  inf = -inf\n"
                      "  list = [1, 'two', [3], {four = 4},]\n";
    struct toml_value *root = parse(doc);
    CHECK(root != NULL);
    if (!root) {
        fprintf(stderr, "  %s\n", errbuf);
        return;
    }
    const struct toml_value *server = toml_get(root, "server");
    CHECK(server && server->type == TOML_TABLE);
    CHECK_EQ_INT(server->line, 3);
    CHECK_EQ_INT(server->column, 1);
    const struct toml_keyval *kv = toml_get_keyval(server, "port");
    CHECK(kv && kv->line == 4 && kv->column == 3);
    CHECK(kv && kv->value->type == TOML_INTEGER && kv->value->u.integer == 8080);
    CHECK_EQ_INT(kv->value->column, 10);
    CHECK(toml_get(server, "ratio")->u.floating == -1500.0);
    CHECK(toml_get(server, "on")->u.boolean);
    const struct toml_value *when = toml_get(server, "when");
    CHECK(when->type == TOML_OFFSET_DATETIME);
    CHECK_EQ_INT(when->u.datetime.year, 1979);
    CHECK_EQ_INT(when->u.datetime.nanosecond, 999999000);
    CHECK_EQ_INT(when->u.datetime.frac_digits, 6);
    CHECK_EQ_INT(when->u.datetime.offset_minutes, -420);
    CHECK(when->u.datetime.has_offset && !when->u.datetime.offset_z);
    CHECK(toml_get(server, "day")->type == TOML_LOCAL_DATE);
    const struct toml_value *at = toml_get(server, "at");
    CHECK(at->type == TOML_LOCAL_TIME && at->u.datetime.nanosecond == 500000000);
    CHECK(toml_get(server, "local")->type == TOML_LOCAL_DATETIME);
    CHECK_EQ_INT(toml_get(server, "hex")->u.integer, 0xDEADBEEF);
    CHECK_EQ_INT(toml_get(server, "oct")->u.integer, 0755);
    CHECK_EQ_INT(toml_get(server, "bin")->u.integer, 0);
    CHECK_EQ_STR(toml_get(server, "ml")->u.string.ptr, "line1\nline2 end");
    CHECK_EQ_STR(toml_get(server, "lit")->u.string.ptr, "C:\\path");
    const struct toml_value *inf = toml_get(server, "inf");
    CHECK(isinf(inf->u.floating) && inf->u.floating < 0);
    const struct toml_value *list = toml_get(server, "list");
    CHECK(list->type == TOML_ARRAY && list->u.array.len == 4);
    CHECK(list->u.array.items[3]->type == TOML_TABLE);
    CHECK(toml_get(list->u.array.items[3], "four")->u.integer == 4);
    CHECK(toml_get(root, "missing") == NULL);
    CHECK(toml_get(list, "x") == NULL); /* not a table */
    CHECK(toml_get(root, NULL) == NULL);
    CHECK_EQ_STR(toml_type_name(TOML_LOCAL_TIME), "local time");
    toml_free(root);
}

TEST(nul_keys_and_strings)
{
    const char *doc = "\"a\\u0000b\" = \"x\\u0000y\"\n'a' = 1\n";
    struct toml_value *root = parse(doc);
    CHECK(root != NULL);
    if (!root)
        return;
    const struct toml_value *v = toml_getn(root, "a\0b", 3);
    CHECK(v && v->type == TOML_STRING && v->u.string.len == 3 && memcmp(v->u.string.ptr, "x\0y", 3) == 0);
    CHECK(toml_get(root, "a")->u.integer == 1); /* "a" is not "a\0b" */
    toml_free(root);
    CHECK_PARSE_ERR("\"a\\u0000\" = 1\n\"a\\u0000\" = 2\n", "line 2, column 1: duplicate key \"a?\"");
}

TEST(large_tables_use_the_index)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    for (int i = 0; i < 5000; i++)
        sb_addf(&sb, "key_%d = %d\n", i, i);
    sb_adds(&sb, "[t]\n");
    struct toml_value *root = toml_parse(sb.buf, sb.len, errbuf, sizeof errbuf);
    CHECK(root != NULL);
    if (root) {
        CHECK_EQ_INT(root->u.table.len, 5001);
        bool all = true;
        char k[32];
        for (int i = 0; i < 5000; i++) {
            snprintf(k, sizeof k, "key_%d", i);
            const struct toml_value *v = toml_get(root, k);
            all = all && v && v->u.integer == i;
        }
        CHECK(all);
        CHECK(toml_get(root, "key_5000") == NULL);
        CHECK(toml_get(root, "t") != NULL);
        CHECK(root->u.table.items[4999].line == 5000);
        toml_free(root);
    }
    sb_adds(&sb, "key_4321 = 1\n");
    root = toml_parse(sb.buf, sb.len, errbuf, sizeof errbuf);
    CHECK(root != NULL); /* inside [t] now: not a duplicate */
    toml_free(root);
    sb_adds(&sb, "[t]\n");
    CHECK(toml_parse(sb.buf, sb.len, errbuf, sizeof errbuf) == NULL);
    CHECK_EQ_STR(errbuf, "line 5003, column 1: table [t] is defined twice");
    sb_release(&sb);
}

TEST(nesting_is_bounded)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, "a = ");
    for (int i = 0; i < 200; i++)
        sb_addc(&sb, '[');
    CHECK(toml_parse(sb.buf, sb.len, errbuf, sizeof errbuf) == NULL);
    CHECK_CONTAINS(errbuf, "nesting too deep");
    sb_reset(&sb);
    sb_adds(&sb, "a = ");
    for (int i = 0; i < 100; i++)
        sb_addc(&sb, '[');
    for (int i = 0; i < 100; i++)
        sb_addc(&sb, ']');
    struct toml_value *v = toml_parse(sb.buf, sb.len, errbuf, sizeof errbuf);
    CHECK(v != NULL);
    toml_free(v);
    sb_reset(&sb);
    sb_adds(&sb, "[x");
    for (int i = 0; i < 200; i++)
        sb_adds(&sb, ".x");
    sb_adds(&sb, "]\n");
    CHECK(toml_parse(sb.buf, sb.len, errbuf, sizeof errbuf) == NULL);
    CHECK_CONTAINS(errbuf, "key has too many dotted parts");
    sb_reset(&sb);
    /* dotted keys inside nested inline tables add up too */
    sb_adds(&sb, "a = ");
    for (int i = 0; i < 50; i++)
        sb_adds(&sb, "{b.c.d = ");
    sb_adds(&sb, "1");
    for (int i = 0; i < 50; i++)
        sb_adds(&sb, "}");
    CHECK(toml_parse(sb.buf, sb.len, errbuf, sizeof errbuf) == NULL);
    CHECK_CONTAINS(errbuf, "nesting too deep");
    sb_release(&sb);
}

TEST(table_rules)
{
    const char *ok[] = {
        "[x.y.z.w]\n[x]\n",                             /* super-table after */
        "[fruit]\napple.color = 'red'\n[fruit.apple.texture]\nsmooth = true\n",
        "a.b.c = 1\na.b.d = 2\n",
        "[[arr]]\nx.y = 1\n[[arr]]\nx.y = 2\n",
        "[[a.b]]\n[a.b.c]\n[[a.b]]\n[a.b.c]\n",
        "a = {b.c = 1, b.d = 2}\n",
        "[a]\n[a.b]\n[a.c]\n",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct toml_value *v = parse(ok[i]);
        if (!v)
            fprintf(stderr, "  case %zu: %s\n", i, errbuf);
        CHECK(v != NULL);
        toml_free(v);
    }
    struct toml_value *v = parse("[[a.b]]\nx = 1\n[[a.b]]\nx = 2\n");
    const struct toml_value *arr = toml_get(toml_get(v, "a"), "b");
    CHECK(arr && arr->type == TOML_ARRAY && arr->u.array.len == 2);
    CHECK_EQ_INT(toml_get(arr->u.array.items[1], "x")->u.integer, 2);
    CHECK_EQ_INT(arr->u.array.items[1]->line, 3);
    toml_free(v);
}

RUN_TESTS(TEST_CASE(error_messages), TEST_CASE(error_buffer_edge_cases),
          TEST_CASE(values_and_positions), TEST_CASE(nul_keys_and_strings),
          TEST_CASE(large_tables_use_the_index), TEST_CASE(nesting_is_bounded),
          TEST_CASE(table_rules))
