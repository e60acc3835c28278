/*
 * Tests of the JSON row writer (src/encode/json_rows.c, json_format.c): exact
 * text for every DuckDB type and edge value, built with SQL in an in-memory
 * database; chunk boundaries, row ranges and null masks; randomized
 * round-trips of doubles and floats (strtod gives the same bits, no more
 * digits than the shortest %.{p}g); dates and timestamps read back by
 * DuckDB's own cast; every output parsed by jansson as well.
 */
#include <duckdb.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/json_digits.h"
#include "encode/json_format.h"
#include "encode/json_rows.h"
#include "testlib.h"

static duckdb_database db;
static duckdb_connection con;

static void open_db(void)
{
    if (!con && (duckdb_open(NULL, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess)) {
        fprintf(stderr, "cannot open DuckDB\n");
        exit(2);
    }
}

static void exec(const char *sql)
{
    open_db();
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        fprintf(stderr, "  SQL failed: %s: %s\n", sql, duckdb_result_error(&res));
        tl_failed_checks++;
    }
    duckdb_destroy_result(&res);
}

/* Equal texts; else prints where they first differ (outputs are long). */
static bool same_text(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    if (a[i] == b[i])
        return true;
    size_t from = i > 60 ? i - 60 : 0;
    fprintf(stderr, "  differ at %zu:\n    %.120s\n    %.120s\n", i, a + from, b + from);
    return false;
}

/* "[" + rows + "]" must parse (numbers as reals: jansson refuses integers
 * beyond 64 bits otherwise). */
static bool valid_json_array(const char *rows)
{
    size_t n = strlen(rows);
    char *doc = malloc(n + 3);
    doc[0] = '[';
    memcpy(doc + 1, rows, n);
    doc[n + 1] = ']';
    doc[n + 2] = 0;
    json_error_t e;
    json_t *j = json_loads(doc, JSON_DECODE_INT_AS_REAL, &e);
    if (!j)
        fprintf(stderr, "  invalid JSON (%s at %d): %.200s\n", e.text, e.position, doc);
    json_decref(j);
    free(doc);
    return j != NULL;
}

/* Runs sql and returns all its rows as the encoder writes them, as array
 * rows or (lines) NDJSON (caller frees); NULL when the query or the encoder
 * fails. */
static char *encode_lines(const char *sql, bool lines)
{
    open_db();
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        fprintf(stderr, "  SQL failed: %s: %s\n", sql, duckdb_result_error(&res));
        duckdb_destroy_result(&res);
        return NULL;
    }
    char err[256];
    struct json_rows *enc = json_rows_create_for_result(&res, err, sizeof err);
    if (!enc)
        fprintf(stderr, "  encoder: %s\n", err);
    struct strbuf sb;
    sb_init(&sb, 0);
    duckdb_data_chunk ch;
    bool ok = enc != NULL;
    if (enc)
        json_rows_set_lines(enc, lines);
    while (ok && (ch = duckdb_fetch_chunk(res))) {
        if (json_rows_encode_chunk(enc, ch, &sb) < 0)
            ok = false;
        duckdb_destroy_data_chunk(&ch);
    }
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
    char *out = sb_detach(&sb, NULL);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

static char *encode_sql(const char *sql)
{
    return encode_lines(sql, false);
}

/* The rows of sql must be exactly `want`, and valid JSON. */
#define CHECK_ROWS(sql, want)                                                    \
    do {                                                                         \
        char *got_ = encode_sql(sql);                                            \
        CHECK_EQ_STR(got_, want);                                                \
        if (got_)                                                                \
            CHECK(valid_json_array(got_));                                       \
        free(got_);                                                              \
    } while (0)

/* Single value: SELECT <expr> AS v gives {"v":<want>}. */
#define CHECK_VAL(expr, want) CHECK_ROWS("SELECT " expr " AS v", "{\"v\":" want "}")

TEST(integers_all_widths)
{
    CHECK_VAL("(-128)::TINYINT", "-128");
    CHECK_VAL("127::TINYINT", "127");
    CHECK_VAL("(-32768)::SMALLINT", "-32768");
    CHECK_VAL("32767::SMALLINT", "32767");
    CHECK_VAL("(-2147483648)::INTEGER", "-2147483648");
    CHECK_VAL("2147483647::INTEGER", "2147483647");
    CHECK_VAL("(-9223372036854775808)::BIGINT", "-9223372036854775808");
    CHECK_VAL("9223372036854775807::BIGINT", "9223372036854775807");
    CHECK_VAL("0::UTINYINT", "0");
    CHECK_VAL("255::UTINYINT", "255");
    CHECK_VAL("65535::USMALLINT", "65535");
    CHECK_VAL("4294967295::UINTEGER", "4294967295");
    CHECK_VAL("18446744073709551615::UBIGINT", "18446744073709551615");
    CHECK_VAL("(-170141183460469231731687303715884105727::HUGEINT - 1)",
              "-170141183460469231731687303715884105728");
    CHECK_VAL("170141183460469231731687303715884105727::HUGEINT",
              "170141183460469231731687303715884105727");
    CHECK_VAL("(-18446744073709551616)::HUGEINT", "-18446744073709551616");
    CHECK_VAL("10000000000000000000000000000000000000::HUGEINT",
              "10000000000000000000000000000000000000");
    CHECK_VAL("0::HUGEINT", "0");
    CHECK_VAL("340282366920938463463374607431768211455::UHUGEINT",
              "340282366920938463463374607431768211455");
    CHECK_VAL("18446744073709551616::UHUGEINT", "18446744073709551616");
    CHECK_VAL("true", "true");
    CHECK_VAL("false", "false");
    CHECK_VAL("NULL::INTEGER", "null");
    CHECK_VAL("NULL", "null");
}

TEST(doubles_and_floats)
{
    CHECK_VAL("0.0::DOUBLE", "0.0");
    CHECK_VAL("'-0.0'::DOUBLE", "-0.0");
    CHECK_VAL("1.0::DOUBLE", "1.0");
    CHECK_VAL("(-1.5)::DOUBLE", "-1.5");
    CHECK_VAL("0.1::DOUBLE", "0.1");
    CHECK_VAL("(0.1::DOUBLE + 0.2::DOUBLE)", "0.30000000000000004");
    CHECK_VAL("1e21::DOUBLE", "1e21");
    CHECK_VAL("1e20::DOUBLE", "100000000000000000000.0");
    CHECK_VAL("123456789012345680000.0::DOUBLE", "123456789012345680000.0");
    CHECK_VAL("1e-7::DOUBLE", "1e-7");
    CHECK_VAL("0.000001::DOUBLE", "0.000001");
    CHECK_VAL("1.5e-10::DOUBLE", "1.5e-10");
    CHECK_VAL("5e-324::DOUBLE", "5e-324");
    CHECK_VAL("2.2250738585072014e-308::DOUBLE", "2.2250738585072014e-308");
    CHECK_VAL("1.7976931348623157e308::DOUBLE", "1.7976931348623157e308");
    CHECK_VAL("(-1.7976931348623157e308)::DOUBLE", "-1.7976931348623157e308");
    CHECK_VAL("9007199254740993::DOUBLE", "9007199254740992.0");
    CHECK_VAL("123456789.125::DOUBLE", "123456789.125");
    CHECK_VAL("'nan'::DOUBLE", "null");
    CHECK_VAL("'inf'::DOUBLE", "null");
    CHECK_VAL("'-inf'::DOUBLE", "null");
    /* FLOAT: the shortest digits for float32, not the widened double's */
    CHECK_VAL("0.1::FLOAT", "0.1");
    CHECK_VAL("'-0.0'::FLOAT", "-0.0");
    CHECK_VAL("1.0::FLOAT", "1.0");
    CHECK_VAL("16777217::FLOAT", "16777216.0");
    CHECK_VAL("3.4028235e38::FLOAT", "3.4028235e38");
    CHECK_VAL("1e-45::FLOAT", "1e-45");
    CHECK_VAL("1.1754944e-38::FLOAT", "1.1754944e-38");
    CHECK_VAL("3.14159::FLOAT", "3.14159");
    CHECK_VAL("'nan'::FLOAT", "null");
    CHECK_VAL("'-inf'::FLOAT", "null");
}

TEST(decimals_every_width)
{
    CHECK_VAL("1.5::DECIMAL(4,1)", "1.5");          /* int16 */
    CHECK_VAL("(-0.05)::DECIMAL(4,2)", "-0.05");
    CHECK_VAL("0::DECIMAL(4,2)", "0.00");
    CHECK_VAL("99.99::DECIMAL(4,2)", "99.99");
    CHECK_VAL("123.450::DECIMAL(9,3)", "123.450");  /* int32 */
    CHECK_VAL("(-1234567.89)::DECIMAL(9,2)", "-1234567.89");
    CHECK_VAL("0.000000001::DECIMAL(9,9)", "0.000000001");
    CHECK_VAL("42::DECIMAL(9,0)", "42");
    CHECK_VAL("(-999999999999999999)::DECIMAL(18,0)", "-999999999999999999"); /* int64 */
    CHECK_VAL("0.123456789012345678::DECIMAL(18,18)", "0.123456789012345678");
    CHECK_VAL("(-0.000000000000000001)::DECIMAL(18,18)", "-0.000000000000000001");
    CHECK_VAL("12345678901234567890123456789.123456789::DECIMAL(38,9)",
              "12345678901234567890123456789.123456789"); /* hugeint */
    CHECK_VAL("(-99999999999999999999999999999999999999)::DECIMAL(38,0)",
              "-99999999999999999999999999999999999999");
    CHECK_VAL("0.00000000000000000000000000000000000001::DECIMAL(38,38)",
              "0.00000000000000000000000000000000000001");
    CHECK_VAL("(-0.5)::DECIMAL(38,37)", "-0.5000000000000000000000000000000000000");
    CHECK_VAL("0::DECIMAL(38,10)", "0.0000000000");
}

TEST(strings_and_blobs)
{
    CHECK_VAL("''", "\"\"");
    CHECK_VAL("'plain'", "\"plain\"");
    CHECK_VAL("'say \"hi\"'", "\"say \\\"hi\\\"\"");
    CHECK_VAL("'back\\slash'", "\"back\\\\slash\"");
    CHECK_VAL("chr(10) || chr(13) || chr(9) || chr(8) || chr(12)", "\"\\n\\r\\t\\b\\f\"");
    CHECK_VAL("chr(1) || chr(31) || chr(127)", "\"\\u0001\\u001f\x7f\"");
    CHECK_VAL("'héllo ✓ 😀 日本'", "\"héllo ✓ 😀 日本\"");
    /* long strings cross the 16-byte blocks; escapes at block edges */
    CHECK_VAL("'abcdefghijklmno\"pqrstuvwxyz0123456789\\'", "\"abcdefghijklmno\\\"pqrstuvwxyz0123456789\\\\\"");
    CHECK_VAL("repeat('a\"', 20)", "\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"\"");
    CHECK_VAL("'\\x00\\xFF'::BLOB", "\"AP8=\"");
    CHECK_VAL("'abc'::BLOB", "\"YWJj\"");
    CHECK_VAL("'ab'::BLOB", "\"YWI=\"");
    CHECK_VAL("''::BLOB", "\"\"");
    CHECK_VAL("'a'::ENUM('a', 'b\"c')", "\"a\"");
    CHECK_VAL("'b\"c'::ENUM('a', 'b\"c')", "\"b\\\"c\"");

    /* a string far longer than one escape block, mostly clean */
    char *got = encode_sql("SELECT repeat('x', 10000) || chr(10) || repeat('y', 5000) AS v");
    CHECK(got != NULL);
    if (got) {
        CHECK_EQ_INT(strlen(got), 6 + 10000 + 2 + 5000 + 2);
        CHECK(strstr(got, "x\\ny") != NULL);
        CHECK(valid_json_array(got));
    }
    free(got);
    got = encode_sql("SELECT repeat(chr(1), 9000) AS v");
    CHECK(got && strlen(got) == 6 + 6 * 9000 + 2);
    free(got);
}

TEST(dates_times_timestamps)
{
    CHECK_VAL("'2024-02-29'::DATE", "\"2024-02-29\"");
    CHECK_VAL("'1970-01-01'::DATE", "\"1970-01-01\"");
    CHECK_VAL("'1969-12-31'::DATE", "\"1969-12-31\"");
    CHECK_VAL("'1900-03-01'::DATE", "\"1900-03-01\"");
    CHECK_VAL("'0001-01-01'::DATE", "\"0001-01-01\"");
    CHECK_VAL("'0001-01-01 (BC)'::DATE", "\"0000-01-01\"");
    CHECK_VAL("'0044-03-15 (BC)'::DATE", "\"-0043-03-15\"");
    CHECK_VAL("'10000-01-01'::DATE", "\"10000-01-01\"");
    CHECK_VAL("'5881580-07-10'::DATE", "\"5881580-07-10\"");
    CHECK_VAL("'5877642-06-25 (BC)'::DATE", "\"-5877641-06-25\"");
    CHECK_VAL("'infinity'::DATE", "\"infinity\"");
    CHECK_VAL("'-infinity'::DATE", "\"-infinity\"");

    CHECK_VAL("'00:00:00'::TIME", "\"00:00:00\"");
    CHECK_VAL("'13:05:09.25'::TIME", "\"13:05:09.25\"");
    CHECK_VAL("'23:59:59.999999'::TIME", "\"23:59:59.999999\"");
    CHECK_VAL("'24:00:00'::TIME", "\"24:00:00\"");
    CHECK_VAL("'13:00:00+05:30'::TIMETZ", "\"13:00:00+05:30\"");
    CHECK_VAL("'13:00:00.5-08'::TIMETZ", "\"13:00:00.5-08:00\"");
    CHECK_VAL("'13:00:00+00'::TIMETZ", "\"13:00:00+00:00\"");
    CHECK_VAL("'13:00:00+15:59:59'::TIMETZ", "\"13:00:00+15:59:59\"");

    CHECK_VAL("'2024-01-01 10:00:00'::TIMESTAMP", "\"2024-01-01T10:00:00\"");
    CHECK_VAL("'2024-01-01 10:00:00.5'::TIMESTAMP", "\"2024-01-01T10:00:00.5\"");
    CHECK_VAL("'2024-01-01 10:00:00.000001'::TIMESTAMP", "\"2024-01-01T10:00:00.000001\"");
    CHECK_VAL("'1969-12-31 23:59:59.999999'::TIMESTAMP", "\"1969-12-31T23:59:59.999999\"");
    CHECK_VAL("'1900-01-01 00:00:00.1'::TIMESTAMP", "\"1900-01-01T00:00:00.1\"");
    CHECK_VAL("'0044-03-15 (BC) 12:00:00'::TIMESTAMP", "\"-0043-03-15T12:00:00\"");
    CHECK_VAL("'290309-12-22 (BC) 00:00:00'::TIMESTAMP", "\"-290308-12-22T00:00:00\"");
    CHECK_VAL("'294247-01-10 04:00:54.775806'::TIMESTAMP", "\"294247-01-10T04:00:54.775806\"");
    CHECK_VAL("'infinity'::TIMESTAMP", "\"infinity\"");
    CHECK_VAL("'-infinity'::TIMESTAMP", "\"-infinity\"");
    CHECK_VAL("'2024-01-01 10:00:01'::TIMESTAMP_S", "\"2024-01-01T10:00:01\"");
    CHECK_VAL("'1969-12-31 23:59:59'::TIMESTAMP_S", "\"1969-12-31T23:59:59\"");
    CHECK_VAL("'2024-01-01 10:00:01.120'::TIMESTAMP_MS", "\"2024-01-01T10:00:01.12\"");
    CHECK_VAL("'1969-12-31 23:59:59.999'::TIMESTAMP_MS", "\"1969-12-31T23:59:59.999\"");
    CHECK_VAL("'2024-01-01 10:00:00.123456789'::TIMESTAMP_NS", "\"2024-01-01T10:00:00.123456789\"");
    CHECK_VAL("'1969-12-31 23:59:59.000000001'::TIMESTAMP_NS", "\"1969-12-31T23:59:59.000000001\"");
    CHECK_VAL("'2024-01-01 10:00:00'::TIMESTAMP_NS", "\"2024-01-01T10:00:00\"");
    exec("SET TimeZone = 'UTC'");
    CHECK_VAL("'2024-01-01 10:00:00+02'::TIMESTAMPTZ", "\"2024-01-01T08:00:00Z\"");
    CHECK_VAL("'2024-06-30 23:59:59.75-01:30'::TIMESTAMPTZ", "\"2024-07-01T01:29:59.75Z\"");
    CHECK_VAL("'infinity'::TIMESTAMPTZ", "\"infinity\"");
}

TEST(intervals_uuids_bits_bignums)
{
    CHECK_VAL("INTERVAL '0 seconds'", "\"PT0S\"");
    CHECK_VAL("INTERVAL '1 year 2 months 3 days 04:05:06.5'", "\"P1Y2M3DT4H5M6.5S\"");
    CHECK_VAL("INTERVAL '-1 year 2 days -3 seconds'", "\"P-1Y2DT-3S\"");
    CHECK_VAL("INTERVAL '14 months'", "\"P1Y2M\"");
    CHECK_VAL("INTERVAL '-14 months'", "\"P-1Y-2M\"");
    CHECK_VAL("INTERVAL '36 hours'", "\"PT36H\"");
    CHECK_VAL("INTERVAL '-90 minutes'", "\"PT-1H-30M\"");
    CHECK_VAL("INTERVAL '0.000001 seconds'", "\"PT0.000001S\"");
    CHECK_VAL("'550e8400-e29b-41d4-a716-446655440000'::UUID", "\"550e8400-e29b-41d4-a716-446655440000\"");
    CHECK_VAL("'00000000-0000-0000-0000-000000000000'::UUID", "\"00000000-0000-0000-0000-000000000000\"");
    CHECK_VAL("'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID", "\"ffffffff-ffff-ffff-ffff-ffffffffffff\"");
    CHECK_VAL("'7fffffff-0000-0000-8000-000000000001'::UUID", "\"7fffffff-0000-0000-8000-000000000001\"");
    CHECK_VAL("'101101'::BIT", "\"101101\"");
    CHECK_VAL("'1'::BIT", "\"1\"");
    CHECK_VAL("'10000000111'::BIT", "\"10000000111\"");
    CHECK_VAL("0::BIGNUM", "0");
    CHECK_VAL("(-5)::BIGNUM", "-5");
    CHECK_VAL("255::BIGNUM", "255");
    CHECK_VAL("(-256)::BIGNUM", "-256");
    CHECK_VAL("'123456789012345678901234567890123456789012345678901234567890'::BIGNUM",
              "123456789012345678901234567890123456789012345678901234567890");
    CHECK_VAL("'-1000000000000000000000000000000000000000'::BIGNUM",
              "-1000000000000000000000000000000000000000");
}

TEST(bit_and_bignum_match_duckdb_text)
{
    /* differential: our text equals DuckDB's own cast for many values (the
     * BIGNUM text goes through the JSON type, which passes verbatim) */
    const char *src = "FROM (SELECT i, bitstring(bin(i * 7919), 40 + (i % 37)::INT) AS b, "
                      "((CASE WHEN i % 2 = 0 THEN '-' ELSE '' END) || i::VARCHAR || "
                      "repeat((i % 10)::VARCHAR, i % 90))::BIGNUM AS n "
                      "FROM range(1, 1000) t(i)) ORDER BY i";
    char q1[1024], q2[1024];
    snprintf(q1, sizeof q1, "SELECT b, n %s", src);
    snprintf(q2, sizeof q2, "SELECT b::VARCHAR AS b, n::VARCHAR::JSON AS n %s", src);
    char *ours = encode_sql(q1), *theirs = encode_sql(q2);
    CHECK(ours && theirs);
    if (ours && theirs) {
        CHECK(same_text(ours, theirs));
        CHECK(valid_json_array(ours));
    }
    free(ours);
    free(theirs);
}

TEST(nested_types_with_nulls)
{
    CHECK_VAL("[1, NULL, 3]", "[1,null,3]");
    CHECK_VAL("[]::INTEGER[]", "[]");
    CHECK_VAL("NULL::INTEGER[]", "null");
    CHECK_VAL("[NULL]::INTEGER[]", "[null]");
    CHECK_VAL("[[1], [], NULL, [2, 3]]", "[[1],[],null,[2,3]]");
    CHECK_VAL("['a', NULL, 'b\"']", "[\"a\",null,\"b\\\"\"]");
    CHECK_VAL("{'a': 1, 'b': [1, 2], 'c': {'d': NULL}}", "{\"a\":1,\"b\":[1,2],\"c\":{\"d\":null}}");
    CHECK_VAL("{'we\"ird': 1}", "{\"we\\\"ird\":1}");
    CHECK_VAL("NULL::STRUCT(a INTEGER)", "null");
    CHECK_VAL("[{'x': 1}, NULL, {'x': NULL}]", "[{\"x\":1},null,{\"x\":null}]");
    CHECK_VAL("MAP(['k', 'z'], [1, 2])", "{\"k\":1,\"z\":2}");
    CHECK_VAL("MAP(['k'], [NULL::INTEGER])", "{\"k\":null}");
    CHECK_VAL("MAP([1, 2], ['a', NULL])", "[{\"key\":1,\"value\":\"a\"},{\"key\":2,\"value\":null}]");
    CHECK_VAL("MAP([]::VARCHAR[], []::INTEGER[])", "{}");
    CHECK_VAL("NULL::MAP(VARCHAR, INTEGER)", "null");
    CHECK_VAL("MAP(['a'], [[1, 2]])", "{\"a\":[1,2]}");
    CHECK_VAL("[1, 2, 3]::INTEGER[3]", "[1,2,3]");
    CHECK_VAL("[[1, NULL], NULL, [3, 4]]::INTEGER[2][3]", "[[1,null],null,[3,4]]");
    CHECK_VAL("NULL::INTEGER[2]", "null");
    CHECK_VAL("1::UNION(num INTEGER, str VARCHAR)", "{\"num\":1}");
    CHECK_VAL("'x'::UNION(num INTEGER, str VARCHAR)", "{\"str\":\"x\"}");
    CHECK_VAL("NULL::UNION(num INTEGER, str VARCHAR)", "null");
    CHECK_VAL("'{\"x\": [1, 2]}'::JSON", "{\"x\": [1, 2]}");
    CHECK_VAL("'\"s\"'::JSON", "\"s\"");
    CHECK_VAL("[{'d': '2024-01-02'::DATE, 'l': [1.5, NULL]}]", "[{\"d\":\"2024-01-02\",\"l\":[1.5,null]}]");
    CHECK_VAL("MAP(['a'::ENUM('a', 'b'), 'b'], [1, 2])", "{\"a\":1,\"b\":2}");
    CHECK_VAL("[MAP(['x'], [1]), NULL, MAP([]::VARCHAR[], []::INTEGER[])]", "[{\"x\":1},null,{}]");
    CHECK_VAL("MAP([1.5::DOUBLE], [{'a': [NULL]}])", "[{\"key\":1.5,\"value\":{\"a\":[null]}}]");
    CHECK_VAL("[{'a': 1}, {'a': 2}]::STRUCT(a INTEGER)[2]", "[{\"a\":1},{\"a\":2}]");
    CHECK_VAL("[[1::HUGEINT << 100, NULL]]", "[[1267650600228229401496703205376,null]]");
    CHECK_VAL("['\\x00\\x01'::BLOB, NULL]", "[\"AAE=\",null]");
    CHECK_VAL("{'u': [1::UNION(i INTEGER, l INTEGER[]), [2, 3]::UNION(i INTEGER, l INTEGER[])]}",
              "{\"u\":[{\"i\":1},{\"l\":[2,3]}]}");
    CHECK_VAL("{'t': '13:00:00-03:30'::TIMETZ, 'i': INTERVAL '-1 month -1 day -1 microsecond'}",
              "{\"t\":\"13:00:00-03:30\",\"i\":\"P-1M-1DT-0.000001S\"}");
    CHECK_VAL("ROW(1, 'a', NULL)", "[1,\"a\",null]"); /* unnamed fields: an array */
    CHECK_VAL("[ROW(1, [2]), NULL]", "[[1,[2]],null]");
    /* rows with lists of varying length, including nulls, across chunks */
    char *got = encode_sql("SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE range(i % 4) END AS l FROM range(5000) t(i)");
    CHECK(got != NULL);
    if (got) {
        CHECK(valid_json_array(got));
        CHECK(strncmp(got, "{\"l\":null},{\"l\":[0]},{\"l\":[0,1]},{\"l\":[0,1,2]},{\"l\":[]},{\"l\":null}", 64) == 0);
    }
    free(got);
    /* a constant list (every row shares one child range) */
    CHECK_ROWS("SELECT [7, 8] AS l FROM range(3)", "{\"l\":[7,8]},{\"l\":[7,8]},{\"l\":[7,8]}");
}

TEST(columns_keys_and_empty_results)
{
    CHECK_ROWS("SELECT 1 AS \"a\", 'x' AS \"b c\", 2 AS \"q\"\"uote\"",
               "{\"a\":1,\"b c\":\"x\",\"q\\\"uote\":2}");
    CHECK_ROWS("SELECT 1 AS a WHERE false", "");
}

/* Many rows: values, null masks and commas across chunk boundaries. */
TEST(many_rows_null_masks_and_chunks)
{
    char *got = encode_sql("SELECT CASE WHEN i % 7 = 3 THEN NULL ELSE i END AS a, "
                           "CASE WHEN i % 64 < 2 OR i BETWEEN 1000 AND 1200 THEN NULL ELSE 'v' || i END AS b "
                           "FROM range(5000) t(i)");
    CHECK(got != NULL);
    if (!got)
        return;
    struct strbuf want;
    sb_init(&want, 0);
    for (int i = 0; i < 5000; i++) {
        if (i)
            sb_addc(&want, ',');
        if (i % 7 == 3)
            sb_adds(&want, "{\"a\":null");
        else
            sb_addf(&want, "{\"a\":%d", i);
        if (i % 64 < 2 || (i >= 1000 && i <= 1200))
            sb_adds(&want, ",\"b\":null}");
        else
            sb_addf(&want, ",\"b\":\"v%d\"}", i);
    }
    CHECK(same_text(got, want.buf));
    CHECK(valid_json_array(got));
    sb_release(&want);
    free(got);
}

TEST(row_ranges_and_restart)
{
    open_db();
    duckdb_result res;
    CHECK(duckdb_query(con, "SELECT i AS n, i * 2 AS d FROM range(10) t(i)", &res) == DuckDBSuccess);
    char err[128];
    struct json_rows *enc = json_rows_create_for_result(&res, err, sizeof err);
    CHECK(enc != NULL);
    duckdb_data_chunk ch = duckdb_fetch_chunk(res);
    CHECK(ch != NULL);
    if (enc && ch) {
        struct strbuf sb;
        sb_init(&sb, 0);
        CHECK_EQ_INT(json_rows_encode_range(enc, ch, 3, 2, &sb), 0);
        CHECK_EQ_STR(sb.buf, "{\"n\":3,\"d\":6},{\"n\":4,\"d\":8}");
        CHECK_EQ_INT(json_rows_written(enc), 2);
        CHECK_EQ_INT(json_rows_encode_range(enc, ch, 9, 100, &sb), 0); /* clamped */
        CHECK_EQ_STR(sb.buf, "{\"n\":3,\"d\":6},{\"n\":4,\"d\":8},{\"n\":9,\"d\":18}");
        CHECK_EQ_INT(json_rows_encode_range(enc, ch, 10, 1, &sb), 0); /* past the end */
        CHECK_EQ_INT(json_rows_written(enc), 3);
        json_rows_restart(enc);
        sb_reset(&sb);
        CHECK_EQ_INT(json_rows_encode_range(enc, ch, 0, 1, &sb), 0);
        CHECK_EQ_STR(sb.buf, "{\"n\":0,\"d\":0}");
        /* a capped buffer refuses and reports */
        struct strbuf small;
        sb_init(&small, 20);
        CHECK_EQ_INT(json_rows_encode_chunk(enc, ch, &small), -1);
        CHECK(small.overflow);
        sb_release(&small);
        sb_release(&sb);
    }
    duckdb_destroy_data_chunk(&ch);
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
}

TEST(unsupported_types_are_refused)
{
    open_db();
    duckdb_result res;
    CHECK(duckdb_query(con, "SELECT 1::VARIANT AS v, [1::VARIANT] AS l, 2 AS ok", &res) == DuckDBSuccess);
    duckdb_logical_type t0 = duckdb_column_logical_type(&res, 0), t1 = duckdb_column_logical_type(&res, 1),
                        t2 = duckdb_column_logical_type(&res, 2);
    CHECK(!json_type_supported(t0));
    CHECK(!json_type_supported(t1));
    CHECK(json_type_supported(t2));
    char err[128] = "";
    struct json_rows *enc = json_rows_create_for_result(&res, err, sizeof err);
    CHECK(enc == NULL);
    CHECK_CONTAINS(err, "\"v\"");
    duckdb_destroy_logical_type(&t0);
    duckdb_destroy_logical_type(&t1);
    duckdb_destroy_logical_type(&t2);
    duckdb_destroy_result(&res);
    /* the documented fallback: to_json() passes through as JSON (DuckDB 1.4
     * writes VARIANT values as their text) */
    CHECK_VAL("to_json(1::VARIANT)", "\"1\"");
    CHECK_VAL("to_json([1::VARIANT, 'a'::VARIANT])", "[\"1\",\"a\"]");
}

TEST(json_validator)
{
    const char *good[] = {"0", "-0", "1.5e+3", "\"a\\u00e9\\n\"", "[]", "{}", " [1, {\"a\": [true, false, null]}] ",
                          "\"\xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80\"", "-12.0E-1"};
    const char *bad[] = {"", " ", "01", "1.", ".5", "[1,]", "{\"a\":}", "{\"a\" 1}", "{1:2}", "[1 2]",
                         "\"a", "\"\\x\"", "tru", "nul", "[", "]", "1 2", "\"\x01\"", "\"\xc0\xaf\"",
                         "\"\xed\xa0\x80\"", "{\"a\":1,}", "+1", "\"\\u12g4\""};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        CHECK(json_is_valid(good[i], strlen(good[i])));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (json_is_valid(bad[i], strlen(bad[i])))
            fprintf(stderr, "  accepted bad JSON: %s\n", bad[i]);
        CHECK(!json_is_valid(bad[i], strlen(bad[i])));
    }
    /* deeper than the validator's stack: refused, not crashed */
    char deep[700];
    memset(deep, '[', 350);
    memset(deep + 350, ']', 350);
    CHECK(!json_is_valid(deep, 700));
    CHECK(json_is_valid(deep + 100, 500));
}

/* xorshift64*: reproducible random bit patterns */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

/* Significant digits of a JSON number text (mantissa digits without leading
 * zeros, trailing zeros and the ".0" of integral values). */
static int sig_digits(const char *s)
{
    char m[64];
    size_t k = 0;
    for (const char *p = s; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            m[k++] = *p;
    m[k] = 0;
    size_t a = 0;
    while (a < k && m[a] == '0')
        a++;
    while (k > a && m[k - 1] == '0')
        k--;
    return k > a ? (int)(k - a) : 1;
}

TEST(random_doubles_round_trip_shortest)
{
    int bad = 0;
    for (int i = 0; i < 300000 && bad < 5; i++) {
        uint64_t bits = rnd();
        if (i % 4 == 1) /* also plenty of "ordinary" magnitudes */
            bits = (bits & 0x800fffffffffffffull) | ((uint64_t)(1023 - 60 + rnd() % 120) << 52);
        double v;
        memcpy(&v, &bits, 8);
        char buf[64 + JSON_FMT_SLACK];
        char *e = json_fmt_double(buf, v);
        *e = 0;
        if (!isfinite(v)) {
            if (strcmp(buf, "null") != 0)
                bad++;
            continue;
        }
        double back = strtod(buf, NULL);
        uint64_t bb;
        memcpy(&bb, &back, 8);
        int p = 1;
        char g[40];
        for (; p < 17; p++) {
            snprintf(g, sizeof g, "%.*g", p, v);
            if (strtod(g, NULL) == v)
                break;
        }
        if (bb != bits || sig_digits(buf) > p || !json_is_valid(buf, strlen(buf)) ||
            (size_t)(e - buf) > JSON_FMT_MAX_DOUBLE) {
            fprintf(stderr, "  double %016llx -> %s (shortest %%.%dg)\n", (unsigned long long)bits, buf, p);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(random_floats_round_trip_shortest)
{
    int bad = 0;
    for (int i = 0; i < 300000 && bad < 5; i++) {
        uint32_t bits = (uint32_t)rnd();
        float v;
        memcpy(&v, &bits, 4);
        char buf[64 + JSON_FMT_SLACK];
        char *e = json_fmt_float(buf, v);
        *e = 0;
        if (!isfinite(v)) {
            if (strcmp(buf, "null") != 0)
                bad++;
            continue;
        }
        float back = strtof(buf, NULL);
        uint32_t bb;
        memcpy(&bb, &back, 4);
        int p = 1;
        char g[40];
        for (; p < 9; p++) {
            snprintf(g, sizeof g, "%.*g", p, (double)v);
            if (strtof(g, NULL) == v)
                break;
        }
        if (bb != bits || sig_digits(buf) > p) {
            fprintf(stderr, "  float %08x -> %s (shortest %%.%dg)\n", bits, buf, p);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
}

/* Random strings (every length 0..80 around the 12-byte inline limit and the
 * 16-byte blocks; quotes, backslashes, control bytes, multi-byte UTF-8) equal
 * the plain byte-at-a-time escaper of util/strbuf. */
TEST(random_strings_match_reference_escaper)
{
    static const char *pieces[] = {"a", "Z", "0", " ", "\"", "\\", "\n", "\t", "\x01", "\x1f", "\x7f",
                                   "\xc3\xa9", "\xe2\x9c\x93", "\xf0\x9f\x98\x80", "/", "<"};
    exec("CREATE OR REPLACE TABLE rs(id INTEGER, s VARCHAR)");
    duckdb_appender app;
    CHECK(duckdb_appender_create(con, NULL, "rs", &app) == DuckDBSuccess);
    struct strbuf want;
    sb_init(&want, 0);
    for (int i = 0; i < 6000; i++) {
        char str[400];
        size_t n = 0, target = (size_t)(i % 81);
        while (n < target) {
            /* mostly plain text, so clean 16-byte blocks occur too */
            const char *p = rnd() % 4 ? "x" : pieces[rnd() % (sizeof pieces / sizeof *pieces)];
            size_t l = strlen(p);
            memcpy(str + n, p, l);
            n += l;
        }
        duckdb_appender_begin_row(app);
        duckdb_append_int32(app, i);
        duckdb_append_varchar_length(app, str, n);
        duckdb_appender_end_row(app);
        sb_adds(&want, i ? ",{\"s\":" : "{\"s\":");
        sb_add_json_string(&want, str, n);
        sb_addc(&want, '}');
    }
    duckdb_appender_destroy(&app);
    char *got = encode_sql("SELECT s FROM rs ORDER BY id");
    CHECK(got != NULL);
    if (got) {
        CHECK(same_text(got, want.buf));
        CHECK(valid_json_array(got));
    }
    free(got);
    sb_release(&want);
}

/* Random doubles through DuckDB vectors (appender), parsed back. */
TEST(random_doubles_through_duckdb)
{
    exec("CREATE OR REPLACE TABLE rd(id INTEGER, v DOUBLE, f FLOAT)");
    duckdb_appender app;
    CHECK(duckdb_appender_create(con, NULL, "rd", &app) == DuckDBSuccess);
    enum { N = 20000 };
    static double vals[N];
    static float fvals[N];
    for (int i = 0; i < N; i++) {
        uint64_t bits = rnd();
        memcpy(&vals[i], &bits, 8);
        uint32_t fb = (uint32_t)rnd();
        memcpy(&fvals[i], &fb, 4);
        duckdb_appender_begin_row(app);
        duckdb_append_int32(app, i);
        duckdb_append_double(app, vals[i]);
        duckdb_append_float(app, fvals[i]);
        duckdb_appender_end_row(app);
    }
    duckdb_appender_destroy(&app);
    char *got = encode_sql("SELECT v, f FROM rd ORDER BY id");
    CHECK(got != NULL);
    if (!got)
        return;
    CHECK(valid_json_array(got));
    int bad = 0;
    const char *p = got;
    for (int i = 0; i < N && bad < 5; i++) {
        p = strstr(p, "{\"v\":");
        if (!p) {
            bad++;
            break;
        }
        p += 5;
        char *end;
        if (strncmp(p, "null", 4) == 0) {
            if (isfinite(vals[i]))
                bad++;
            p += 4;
        } else {
            double back = strtod(p, &end);
            if (memcmp(&back, &vals[i], 8) != 0)
                bad++;
            p = end;
        }
        p = strstr(p, "\"f\":") + 4;
        if (strncmp(p, "null", 4) == 0) {
            if (isfinite(fvals[i]))
                bad++;
        } else {
            float back = strtof(p, &end);
            if (memcmp(&back, &fvals[i], 4) != 0)
                bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    free(got);
}

/* Our date/timestamp text, read back by DuckDB's cast, is the same value
 * (covers BC years, leap days, times before 1970, every unit). */
TEST(calendar_text_reads_back_in_duckdb)
{
    exec("SET TimeZone = 'UTC'");
    exec("CREATE OR REPLACE TABLE cal AS SELECT i AS id, "
         "make_date(1970, 1, 1) + ((hash(i) % 4000000)::BIGINT - 2000000)::INTEGER AS d, "
         "make_timestamp(((hash(i * 7) % 16000000000000000)::BIGINT - 8000000000000000)::BIGINT) AS ts, "
         "epoch_ns(make_timestamp(((hash(i * 3) % 8000000000000000)::BIGINT - 4000000000000000)::BIGINT))::BIGINT "
         "  + (hash(i) % 1000)::BIGINT AS nsv, "
         "make_timestamp(((hash(i * 11) % 1000000000000000)::BIGINT - 500000000000000)::BIGINT)::TIMESTAMPTZ AS tz, "
         "((hash(i * 5) % 86400000000)::BIGINT)::VARCHAR AS tmicros "
         "FROM range(20000) t(i)");
    char *got = encode_sql("SELECT id, d, ts, make_timestamp_ns(nsv) AS ns, ts::TIMESTAMP_MS AS ms, "
                           "ts::TIMESTAMP_S AS s, tz, (TIME '00:00:00' + INTERVAL (tmicros::BIGINT) MICROSECOND) AS tm "
                           "FROM cal ORDER BY id");
    CHECK(got != NULL);
    if (!got)
        return;
    CHECK(valid_json_array(got));
    /* load our text back as a table and compare inside DuckDB */
    exec("CREATE OR REPLACE TABLE back(id INTEGER, d VARCHAR, ts VARCHAR, ns VARCHAR, ms VARCHAR, s VARCHAR, "
         "tz VARCHAR, tm VARCHAR)");
    json_error_t je;
    size_t n = strlen(got);
    char *doc = malloc(n + 3);
    sprintf(doc, "[%s]", got);
    json_t *arr = json_loads(doc, 0, &je);
    CHECK(arr != NULL);
    duckdb_appender app;
    CHECK(duckdb_appender_create(con, NULL, "back", &app) == DuckDBSuccess);
    size_t i;
    json_t *row;
    json_array_foreach(arr, i, row)
    {
        duckdb_appender_begin_row(app);
        duckdb_append_int32(app, (int32_t)json_integer_value(json_object_get(row, "id")));
        const char *cols[] = {"d", "ts", "ns", "ms", "s", "tz", "tm"};
        for (int c = 0; c < 7; c++)
            duckdb_append_varchar(app, json_string_value(json_object_get(row, cols[c])));
        duckdb_appender_end_row(app);
    }
    duckdb_appender_destroy(&app);
    json_decref(arr);
    free(doc);
    free(got);
    char *cmp = encode_sql(
        "SELECT count(*) AS n, count(*) FILTER (WHERE b.d::DATE = c.d AND b.ts::TIMESTAMP = c.ts "
        "AND b.ns::TIMESTAMP_NS = make_timestamp_ns(c.nsv) AND b.ms::TIMESTAMP_MS = c.ts::TIMESTAMP_MS "
        "AND b.s::TIMESTAMP_S = c.ts::TIMESTAMP_S AND b.tz::TIMESTAMPTZ = c.tz "
        "AND b.tm::TIME = (TIME '00:00:00' + INTERVAL (c.tmicros::BIGINT) MICROSECOND)) AS same, "
        "count(*) FILTER (WHERE year(c.d) <= 0) AS bc, "
        "count(*) FILTER (WHERE c.ts < '1970-01-01') AS before_epoch "
        "FROM back b JOIN cal c USING (id)");
    CHECK(cmp != NULL);
    if (cmp) {
        /* every row equal; and the sample really covered BC and pre-1970 */
        long n_ = -1, same = -2, bc = 0, pre = 0;
        CHECK(sscanf(cmp, "{\"n\":%ld,\"same\":%ld,\"bc\":%ld,\"before_epoch\":%ld}", &n_, &same, &bc, &pre) == 4);
        CHECK_EQ_INT(n_, 20000);
        CHECK_EQ_INT(same, 20000);
        CHECK(bc > 0);
        CHECK(pre > 0);
    }
    free(cmp);
}

/* Every scalar type in one table with NULL in every column, for ASan/UBSan
 * and validity: wide rows, many chunks. */
TEST(mixed_table_is_valid_json)
{
    char *got = encode_sql(
        "SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 100)::TINYINT END AS t, i::SMALLINT AS s, "
        "CASE WHEN i % 13 = 0 THEN NULL ELSE i * 1000003 END AS b, i::HUGEINT * 1e20::HUGEINT AS h, "
        "CASE WHEN i % 3 = 0 THEN NULL ELSE i / 7.0 END AS d, (i / 3.0)::FLOAT AS f, "
        "(i / 100)::DECIMAL(9,2) AS dec, (i * 12345.678)::DECIMAL(38,3) AS dh, "
        "CASE WHEN i % 2 = 0 THEN 'str ' || i ELSE repeat('\"', i % 40) END AS v, "
        "DATE '2000-01-01' + i::INTEGER AS dt, TIMESTAMP '2000-01-01' + INTERVAL (i) SECOND AS ts, "
        "i % 2 = 0 AS bo, uuid() AS u, [i, NULL] AS l, {'k': i, 'n': NULL} AS st "
        "FROM range(10000) t(i)");
    CHECK(got != NULL);
    if (got)
        CHECK(valid_json_array(got));
    free(got);
}

/* Keys are written by a scalar column's own formatter (the first column's
 * with the row's ",{"), by the row loop for the others: every mix of the
 * two first, both body layouts (array rows, NDJSON), values of 0..90 bytes
 * (copies of up to 32, 33..64 and longer), across chunks, and the first-row
 * comma after a rewind. */
TEST(keys_from_formatters_and_row_loop)
{
    static const char *const firsts[] = {"i AS n", "[i] AS n", "('x' || i) AS n",
                                         "('{\"a\":' || i || '}')::JSON AS n", "i / 4 AS n"};
    for (size_t f = 0; f < sizeof firsts / sizeof *firsts; f++) {
        for (int lines = 0; lines < 2; lines++) {
            char sql[512];
            snprintf(sql, sizeof sql,
                     "SELECT %s, repeat('ab', (i %% 46)::INTEGER) AS \"a long key name, to pass 32\", "
                     "CASE WHEN i %% 9 = 0 THEN NULL ELSE i END AS m, [i, i] AS l FROM range(3000) t(i)",
                     firsts[f]);
            char *got = encode_lines(sql, lines);
            CHECK(got != NULL);
            if (!got)
                continue;
            struct strbuf want;
            sb_init(&want, 0);
            for (int i = 0; i < 3000; i++) {
                if (i && !lines)
                    sb_addc(&want, ',');
                switch (f) {
                case 0: sb_addf(&want, "{\"n\":%d", i); break;
                case 1: sb_addf(&want, "{\"n\":[%d]", i); break;
                case 2: sb_addf(&want, "{\"n\":\"x%d\"", i); break;
                case 3: sb_addf(&want, "{\"n\":{\"a\":%d}", i); break;
                default: sb_addf(&want, i % 4 ? "{\"n\":%.2f" : "{\"n\":%.1f", i / 4.0); break;
                }
                sb_adds(&want, ",\"a long key name, to pass 32\":\"");
                for (int r = 0; r < i % 46; r++)
                    sb_adds(&want, "ab");
                sb_addc(&want, '"');
                if (i % 9 == 0)
                    sb_adds(&want, ",\"m\":null");
                else
                    sb_addf(&want, ",\"m\":%d", i);
                sb_addf(&want, ",\"l\":[%d,%d]}", i, i);
                if (lines)
                    sb_addc(&want, '\n');
            }
            /* %.2f writes 0.25 as 0.25, 0.5 as 0.50: the writer's shortest form has no
             * trailing zero */
            if (f == 4) {
                char *w = want.buf, *o = want.buf;
                for (; *w; w++) {
                    *o++ = *w;
                    if (*w == '0' && o - want.buf >= 3 && o[-2] == '5' && o[-3] == '.')
                        o--;
                }
                *o = 0;
            }
            CHECK(same_text(got, want.buf));
            if (!lines)
                CHECK(valid_json_array(got));
            sb_release(&want);
            free(got);
        }
    }
    /* a rewind to 0 makes the next row a body's first again: no comma */
    open_db();
    duckdb_result res;
    CHECK(duckdb_query(con, "SELECT i AS n, 'v' || i AS s FROM range(3) t(i)", &res) == DuckDBSuccess);
    char err[128];
    struct json_rows *enc = json_rows_create_for_result(&res, err, sizeof err);
    duckdb_data_chunk ch = duckdb_fetch_chunk(res);
    CHECK(enc != NULL && ch != NULL);
    if (enc && ch) {
        struct strbuf sb;
        sb_init(&sb, 0);
        CHECK_EQ_INT(json_rows_encode_chunk(enc, ch, &sb), 0);
        CHECK_EQ_STR(sb.buf, "{\"n\":0,\"s\":\"v0\"},{\"n\":1,\"s\":\"v1\"},{\"n\":2,\"s\":\"v2\"}");
        json_rows_rewind(enc, 0);
        sb_reset(&sb);
        CHECK_EQ_INT(json_rows_encode_range(enc, ch, 1, 2, &sb), 0);
        CHECK_EQ_STR(sb.buf, "{\"n\":1,\"s\":\"v1\"},{\"n\":2,\"s\":\"v2\"}");
        json_rows_rewind(enc, 1);
        sb_reset(&sb);
        CHECK_EQ_INT(json_rows_encode_range(enc, ch, 2, 1, &sb), 0);
        CHECK_EQ_STR(sb.buf, ",{\"n\":2,\"s\":\"v2\"}");
        sb_release(&sb);
    }
    duckdb_destroy_data_chunk(&ch);
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
}

/* The day cache gives json_fmt_date's and json_fmt_timestamp's text for
 * every value: slots shared by days 2048 apart, years outside 0..9999
 * (never cached), infinities, every unit, values before 1970. */
TEST(day_cache_same_text)
{
    struct json_daycache *dc = json_daycache_new(JSON_DAYCACHE_N);
    CHECK(dc != NULL);
    uint64_t r = 0x9E3779B97F4A7C15ull;
    int bad = 0;
    for (int i = 0; i < 2000000; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        int32_t day;
        switch (i % 5) {
        case 0: day = (int32_t)(r % 4096) - 2048 + (int32_t)(i % 3) * 2048; break; /* collisions */
        case 1: day = (int32_t)(r % 3000000) - 1500000; break;                     /* any year */
        case 2: day = (int32_t)r; break;                                           /* any int32 */
        case 3: day = i % 2 ? INT32_MAX : -INT32_MAX; break;                       /* infinities */
        default: day = 19000 + (int32_t)(r % 400); break;                          /* hits */
        }
        char a[64], b[64];
        *json_fmt_date(a, day) = 0;
        *json_fmt_date_cached(b, day, dc) = 0;
        if (strcmp(a, b) != 0 && bad++ < 5)
            fprintf(stderr, "  day %d: cached %s, plain %s\n", day, b, a);
        int64_t v = (int64_t)(r >> 1) >> (r % 40);
        if (r & 1)
            v = -v;
        enum json_ts_unit u = (enum json_ts_unit)(i % 4);
        *json_fmt_timestamp(a, v, u, i % 3 == 0) = 0;
        *json_fmt_timestamp_cached(b, v, u, i % 3 == 0, dc) = 0;
        if (strcmp(a, b) != 0 && bad++ < 5)
            fprintf(stderr, "  ts %lld unit %d: cached %s, plain %s\n", (long long)v, (int)u, b, a);
    }
    CHECK_EQ_INT(bad, 0);
    free(dc);
}

/* A column with more distinct days than the first cache's slots moves to
 * the large cache mid-stream (json_rows.c day_cache): every row's text
 * before, during and after the move is DuckDB's own, for DATE and
 * TIMESTAMP, days in a scattered order, a day repeated in between. */
TEST(day_cache_grows_same_text)
{
    const char *from = "FROM (SELECT i, DATE '1900-01-01' + ((i * 7919) % 40000)::INTEGER AS d, "
                       "TIMESTAMP '1950-01-01' + INTERVAL ((i * 104729) % 30000) DAY "
                       "+ INTERVAL (i % 86400) SECOND AS ts FROM range(60000) t(i))";
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT d, ts %s ORDER BY i", from);
    char *got = encode_sql(sql);
    snprintf(sql, sizeof sql,
             "SELECT string_agg('{\"d\":\"' || d::VARCHAR || '\",\"ts\":\"' || "
             "strftime(ts, '%%Y-%%m-%%dT%%H:%%M:%%S') || '\"}', ',' ORDER BY i) AS v %s",
             from);
    open_db();
    duckdb_result res;
    CHECK(duckdb_query(con, sql, &res) == DuckDBSuccess);
    char *want = duckdb_value_varchar(&res, 0, 0);
    CHECK(got && want && same_text(got, want));
    CHECK(got && strlen(got) > 60000 * 40);
    duckdb_free(want);
    duckdb_destroy_result(&res);
    free(got);
}

/* The row writer's DECIMAL path for scales 1..4 (json_digits.h) against
 * json_fmt_decimal64, over random values of every magnitude and the
 * limits; and through DuckDB for each width. */
TEST(small_scale_decimals_same_text)
{
    uint64_t r = 0x2545F4914F6CDD1Dull;
    int bad = 0;
    for (int i = 0; i < 2000000; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        int64_t v = (int64_t)r >> (r % 64);
        if (i < 16)
            v = i % 2 ? INT64_MIN + i : INT64_MAX - i;
        unsigned sc = 1 + (unsigned)(i % 4);
        char a[64], b[64];
        *json_fmt_decimal64(a, v, sc) = 0;
        *digits_dec_small(b, v, sc) = 0;
        if (strcmp(a, b) != 0 && bad++ < 5)
            fprintf(stderr, "  %lld scale %u: %s, want %s\n", (long long)v, sc, b, a);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_VAL("(-0.5)::DECIMAL(4,1)", "-0.5");
    CHECK_VAL("(-0.05)::DECIMAL(4,2)", "-0.05");
    CHECK_VAL("9.999::DECIMAL(4,3)", "9.999");
    CHECK_VAL("(-0.0001)::DECIMAL(4,4)", "-0.0001");
    CHECK_VAL("(-21474.8364)::DECIMAL(9,4)", "-21474.8364");
    CHECK_VAL("1234567.0::DECIMAL(9,1)", "1234567.0");
    CHECK_VAL("(-92233720368547.7580)::DECIMAL(18,4)", "-92233720368547.7580");
    CHECK_VAL("0.001::DECIMAL(18,3)", "0.001");
    CHECK_VAL("99999999999999999.9::DECIMAL(18,1)", "99999999999999999.9");
}

TEST(zz_close_db)
{
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

RUN_TESTS(TEST_CASE(integers_all_widths), TEST_CASE(doubles_and_floats), TEST_CASE(decimals_every_width),
          TEST_CASE(strings_and_blobs), TEST_CASE(dates_times_timestamps),
          TEST_CASE(intervals_uuids_bits_bignums), TEST_CASE(bit_and_bignum_match_duckdb_text),
          TEST_CASE(nested_types_with_nulls), TEST_CASE(columns_keys_and_empty_results),
          TEST_CASE(many_rows_null_masks_and_chunks), TEST_CASE(row_ranges_and_restart),
          TEST_CASE(unsupported_types_are_refused), TEST_CASE(json_validator),
          TEST_CASE(random_doubles_round_trip_shortest), TEST_CASE(random_floats_round_trip_shortest),
          TEST_CASE(random_doubles_through_duckdb), TEST_CASE(random_strings_match_reference_escaper), TEST_CASE(calendar_text_reads_back_in_duckdb),
          TEST_CASE(mixed_table_is_valid_json), TEST_CASE(keys_from_formatters_and_row_loop),
          TEST_CASE(day_cache_same_text),
          TEST_CASE(day_cache_grows_same_text), TEST_CASE(small_scale_decimals_same_text), TEST_CASE(zz_close_db))
