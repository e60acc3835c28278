/* pgwire's pure parts: message framing and bodies (proto.c), the SQL lexer
 * and session-statement reader (lexer.c), and the value encoders (types.c)
 * against PostgreSQL's own output for the same values (taken from a
 * PostgreSQL 15 server: float8/float4 text, numeric binary, interval, BC
 * dates, arrays), with DuckDB producing the input vectors. */
#include <duckdb.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgwire/pgwire.h"
#include "query/query.h"
#include "testlib.h"
#include "util/arena.h"
#include "util/limits.h"

/* ---------------------------------------------------------------- framing */

TEST(framing)
{
    struct pgw_frame f;
    const unsigned char q[] = {'Q', 0, 0, 0, 9, 'S', 'E', 'L', '\0', 'X'};
    CHECK_EQ_INT(pgw_frame_message(q, 4, 100, &f), PGW_FRAME_NEED);
    CHECK_EQ_INT(pgw_frame_message(q, 9, 100, &f), PGW_FRAME_NEED);
    CHECK_EQ_INT(pgw_frame_message(q, 10, 100, &f), PGW_FRAME_OK);
    CHECK_EQ_INT(f.type, 'Q');
    CHECK_EQ_INT(f.body_len, 5);
    CHECK_EQ_INT(f.total, 10);
    const unsigned char low[] = {'Q', 0, 0, 0, 3};
    CHECK_EQ_INT(pgw_frame_message(low, 5, 100, &f), PGW_FRAME_BAD);
    const unsigned char huge[] = {'Q', 0x7f, 0xff, 0xff, 0xff};
    CHECK_EQ_INT(pgw_frame_message(huge, 5, 100, &f), PGW_FRAME_TOO_BIG);
    const unsigned char neg[] = {'Q', 0xff, 0xff, 0xff, 0xff};
    CHECK_EQ_INT(pgw_frame_message(neg, 5, VT_PGWIRE_MAX_MESSAGE_BYTES, &f), PGW_FRAME_TOO_BIG);
    const unsigned char st[] = {0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f};
    CHECK_EQ_INT(pgw_frame_startup(st, 7, &f), PGW_FRAME_NEED);
    CHECK_EQ_INT(pgw_frame_startup(st, 8, &f), PGW_FRAME_OK);
    CHECK_EQ_INT(f.body_len, 4);
    const unsigned char st_low[] = {0, 0, 0, 7};
    CHECK_EQ_INT(pgw_frame_startup(st_low, 4, &f), PGW_FRAME_BAD);
    const unsigned char st_big[] = {0, 1, 0, 0};
    CHECK_EQ_INT(pgw_frame_startup(st_big, 4, &f), PGW_FRAME_TOO_BIG);
}

TEST(startup_packets)
{
    struct pgw_startup s;
    struct vt_error err = {0};
    const unsigned char v3[] = "\x00\x03\x00\x00user\0alice\0database\0db\0\0";
    CHECK_EQ_INT(pgw_parse_startup(v3, sizeof v3 - 1, &s, &err), VT_ERR_OK);
    CHECK_EQ_INT(s.code, PGW_PROTOCOL_3_0);
    CHECK_EQ_INT(s.nparams, 2);
    CHECK_EQ_STR(s.names[1], "database");
    CHECK_EQ_STR(s.values[0], "alice");
    const unsigned char no_end[] = "\x00\x03\x00\x00user\0alice\0";
    CHECK_EQ_INT(pgw_parse_startup(no_end, sizeof no_end - 1, &s, &err), VT_ERR_PG_PROTOCOL);
    const unsigned char odd[] = "\x00\x03\x00\x00user\0";
    CHECK_EQ_INT(pgw_parse_startup(odd, sizeof odd - 1, &s, &err), VT_ERR_PG_PROTOCOL);
    const unsigned char trailing[] = "\x00\x03\x00\x00user\0a\0\0junk";
    CHECK_EQ_INT(pgw_parse_startup(trailing, sizeof trailing - 1, &s, &err), VT_ERR_PG_PROTOCOL);
    const unsigned char cancel[] = {0x04, 0xd2, 0x16, 0x2e, 0, 0, 0, 7, 0, 0, 0, 9};
    CHECK_EQ_INT(pgw_parse_startup(cancel, 12, &s, &err), VT_ERR_OK);
    CHECK_EQ_INT(s.code, PGW_CANCEL_REQUEST_CODE);
    CHECK_EQ_INT(s.pid, 7);
    CHECK_EQ_INT(s.secret, 9);
    CHECK_EQ_INT(pgw_parse_startup(cancel, 8, &s, &err), VT_ERR_PG_PROTOCOL);
    /* too many parameters */
    unsigned char many[4 + 70 * 4 + 1];
    size_t n = 0;
    many[n++] = 0, many[n++] = 3, many[n++] = 0, many[n++] = 0;
    for (int i = 0; i < 70; i++) {
        many[n++] = 'a', many[n++] = 0, many[n++] = 'b', many[n++] = 0;
    }
    many[n++] = 0;
    CHECK_EQ_INT(pgw_parse_startup(many, n, &s, &err), VT_ERR_PG_PROTOCOL);
}

static void put16(unsigned char **p, int v)
{
    (*p)[0] = (unsigned char)(v >> 8);
    (*p)[1] = (unsigned char)v;
    *p += 2;
}

static void put32(unsigned char **p, int v)
{
    (*p)[0] = (unsigned char)((unsigned)v >> 24);
    (*p)[1] = (unsigned char)(v >> 16);
    (*p)[2] = (unsigned char)(v >> 8);
    (*p)[3] = (unsigned char)v;
    *p += 4;
}

TEST(bind_messages)
{
    unsigned char buf[128], *p = buf;
    memcpy(p, "pt\0st\0", 6);
    p += 6;
    put16(&p, 2); /* formats */
    put16(&p, 0);
    put16(&p, 1);
    put16(&p, 2); /* params */
    put32(&p, 3);
    memcpy(p, "abc", 3);
    p += 3;
    put32(&p, -1);
    put16(&p, 1); /* result formats */
    put16(&p, 1);
    struct pgw_bind_msg m;
    struct vt_error err = {0};
    CHECK_EQ_INT(pgw_parse_bind(buf, (size_t)(p - buf), &m, &err), VT_ERR_OK);
    CHECK_EQ_STR(m.portal, "pt");
    CHECK_EQ_STR(m.statement, "st");
    struct pgw_value v[2];
    pgw_bind_values(&m, v);
    CHECK_EQ_INT(v[0].len, 3);
    CHECK(!memcmp(v[0].data, "abc", 3));
    CHECK_EQ_INT(v[0].format, 0);
    CHECK_EQ_INT(v[1].len, -1);
    CHECK_EQ_INT(v[1].format, 1);
    CHECK_EQ_INT(pgw_bind_result_format(&m, 0), 1);
    CHECK_EQ_INT(pgw_bind_result_format(&m, 5), 1);
    /* every truncation of it is refused */
    for (size_t n = 0; n < (size_t)(p - buf); n++) {
        vt_error_clear(&err);
        CHECK(pgw_parse_bind(buf, n, &m, &err) != VT_ERR_OK);
    }
    /* a value length past the end, a format of 2 */
    unsigned char bad[32], *q = bad;
    memcpy(q, "\0\0", 2);
    q += 2;
    put16(&q, 1);
    put16(&q, 2);
    put16(&q, 0);
    put16(&q, 0);
    CHECK_EQ_INT(pgw_parse_bind(bad, (size_t)(q - bad), &m, &err), VT_ERR_PG_PROTOCOL);
    q = bad;
    memcpy(q, "\0\0", 2);
    q += 2;
    put16(&q, 0);
    put16(&q, 1);
    put32(&q, 1000);
    put16(&q, 0);
    CHECK_EQ_INT(pgw_parse_bind(bad, (size_t)(q - bad), &m, &err), VT_ERR_PG_PROTOCOL);
}

TEST(other_messages)
{
    struct vt_error err = {0};
    struct pgw_parse_msg pm;
    const unsigned char parse[] = "s\0SELECT $1\0\x00\x01\x00\x00\x00\x17";
    CHECK_EQ_INT(pgw_parse_parse(parse, sizeof parse - 1, &pm, &err), VT_ERR_OK);
    CHECK_EQ_STR(pm.name, "s");
    CHECK_EQ_INT(pm.query_len, 9);
    CHECK_EQ_INT(pm.nparams, 1);
    CHECK_EQ_INT(pgw_parse_parse(parse, sizeof parse - 2, &pm, &err), VT_ERR_PG_PROTOCOL);
    struct pgw_target_msg t;
    CHECK_EQ_INT(pgw_parse_target((const unsigned char *)"Pport\0", 6, &t, &err), VT_ERR_OK);
    CHECK_EQ_INT(t.kind, 'P');
    CHECK_EQ_INT(pgw_parse_target((const unsigned char *)"Xport\0", 6, &t, &err),
                 VT_ERR_PG_PROTOCOL);
    struct pgw_execute_msg e;
    const unsigned char ex[] = "\0\x00\x00\x00\x0a";
    CHECK_EQ_INT(pgw_parse_execute(ex, 5, &e, &err), VT_ERR_OK);
    CHECK_EQ_INT(e.max_rows, 10);
    CHECK_EQ_INT(pgw_parse_execute(ex, 4, &e, &err), VT_ERR_PG_PROTOCOL);
    const char *sql;
    size_t n;
    CHECK_EQ_INT(pgw_parse_query((const unsigned char *)"SELECT 1\0", 9, &sql, &n, &err),
                 VT_ERR_OK);
    CHECK_EQ_INT(n, 8);
    CHECK_EQ_INT(pgw_parse_query((const unsigned char *)"SELECT 1\0x", 10, &sql, &n, &err),
                 VT_ERR_PG_PROTOCOL);
}

TEST(backend_messages_bytes)
{
    struct strbuf o;
    sb_init(&o, 0);
    pgw_write_ready(&o, 'I');
    pgw_write_command_complete(&o, "SELECT 1");
    pgw_write_error(&o, 'E', "ERROR", "42P01", "no", NULL, NULL);
    const char want[] = "Z\0\0\0\5I"
                        "C\0\0\0\15SELECT 1\0"
                        "E\0\0\0\36SERROR\0VERROR\0C42P01\0Mno\0\0";
    CHECK_EQ_INT(o.len, sizeof want - 1);
    CHECK(!memcmp(o.buf, want, sizeof want - 1));
    sb_release(&o);
}

/* ----------------------------------------------------------------- lexer */

static size_t split(const char *s, struct pgw_span *out)
{
    return pgw_split(s, strlen(s), out, 16);
}

TEST(lexer_splits_where_postgresql_does)
{
    struct pgw_span sp[16];
    const char *s = "SELECT 'a;b'; SELECT \"x;y\" FROM t -- c;d\n; /* e; /* nested; */ f; */ "
                    "SELECT $$ g; $$, $tag$ h;$ $tag$, E'i\\';j' ;;  ; ";
    CHECK_EQ_INT(split(s, sp), 3);
    CHECK(!strncmp(s + sp[0].pos, "SELECT 'a;b'", sp[0].len));
    CHECK(!strncmp(s + sp[1].pos, "SELECT \"x;y\" FROM t", sp[1].len));
    CHECK(!strncmp(s + sp[2].pos, "SELECT $$ g; $$, $tag$ h;$ $tag$, E'i\\';j'", sp[2].len));
    CHECK_EQ_INT(split("  -- only a comment\n", sp), 0);
    CHECK_EQ_INT(split(";;;", sp), 0);
    /* unterminated: the rest is one statement (the parser reports it) */
    CHECK_EQ_INT(split("SELECT 1; SELECT 'oops", sp), 2);
    CHECK_EQ_INT(split("SELECT 1; /* oops", sp), 2);
    CHECK_EQ_INT(split("SELECT $1, $2; SELECT 1e+5", sp), 2);
}

static enum pgw_stmt_kind kind_of(const char *s, struct pgw_stmt *st)
{
    struct vt_error err = {0};
    if (pgw_stmt_read(s, strlen(s), st, &err) != VT_ERR_OK)
        return (enum pgw_stmt_kind)-1;
    return st->kind;
}

TEST(session_statements)
{
    struct pgw_stmt st;
    static const struct {
        const char *sql;
        enum pgw_stmt_kind kind;
    } cases[] = {
        {"BEGIN", PGW_STMT_BEGIN},
        {"begin transaction isolation level repeatable read, read only", PGW_STMT_BEGIN},
        {"START TRANSACTION", PGW_STMT_BEGIN},
        {"COMMIT", PGW_STMT_COMMIT},
        {"end work", PGW_STMT_COMMIT},
        {"ROLLBACK", PGW_STMT_ROLLBACK},
        {"abort", PGW_STMT_ROLLBACK},
        {"ROLLBACK TO SAVEPOINT a", PGW_STMT_ROLLBACK_TO},
        {"rollback to b", PGW_STMT_ROLLBACK_TO},
        {"SAVEPOINT a", PGW_STMT_SAVEPOINT},
        {"RELEASE SAVEPOINT a", PGW_STMT_RELEASE},
        {"DISCARD ALL", PGW_STMT_DISCARD_ALL},
        {"DEALLOCATE ALL", PGW_STMT_DEALLOCATE},
        {"DEALLOCATE PREPARE s1", PGW_STMT_DEALLOCATE},
        {"RESET ALL", PGW_STMT_RESET},
        {"RESET search_path", PGW_STMT_RESET},
        {"UNLISTEN *", PGW_STMT_UNLISTEN},
        {"SHOW ALL", PGW_STMT_SHOW},
        {"SHOW TIME ZONE", PGW_STMT_SHOW},
        {"SET TRANSACTION READ ONLY", PGW_STMT_SET_TRANSACTION},
        {"SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", PGW_STMT_SET_TRANSACTION},
        {"SET extra_float_digits = 3", PGW_STMT_SET},
        {"SET search_path TO \"$user\", public", PGW_STMT_SET},
        {"SET TIME ZONE 'UTC'", PGW_STMT_SET},
        {"SET NAMES 'UTF8'", PGW_STMT_SET},
        {"set local statement_timeout = -1", PGW_STMT_SET},
        /* for the gate */
        {"SELECT 1", PGW_STMT_SQL},
        {"SET a.b = 1", PGW_STMT_SQL},
        {"SET ROLE admin", PGW_STMT_SQL},
        {"BEGIN; DROP TABLE x", PGW_STMT_SQL},
        {"DISCARD PLANS", PGW_STMT_SQL},
        {"COPY t FROM STDIN", PGW_STMT_SQL},
        {"COPY t TO '/tmp/x'", PGW_STMT_SQL},
        {"COPY (SELECT 1) TO PROGRAM 'x'", PGW_STMT_SQL},
        {"", PGW_STMT_EMPTY},
        {"/* nothing */", PGW_STMT_EMPTY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum pgw_stmt_kind k = kind_of(cases[i].sql, &st);
        if (k != cases[i].kind)
            fprintf(stderr, "  %s: %d, want %d\n", cases[i].sql, k, cases[i].kind);
        CHECK_EQ_INT(k, cases[i].kind);
        pgw_stmt_release(&st);
    }
    kind_of("SET search_path TO \"$user\", public", &st);
    CHECK_EQ_STR(st.name, "search_path");
    CHECK_EQ_STR(st.value, "$user, public");
    kind_of("set Application_Name = 'it''s'", &st);
    CHECK_EQ_STR(st.name, "application_name");
    CHECK_EQ_STR(st.value, "it's");
    kind_of("SET statement_timeout TO DEFAULT", &st);
    CHECK(st.is_default);
    kind_of("SET extra_float_digits = -2", &st);
    CHECK_EQ_STR(st.value, "-2");
    /* cursors, EXPLAIN, LISTEN */
    CHECK_EQ_INT(kind_of("DECLARE \"C1\" BINARY NO SCROLL CURSOR WITH HOLD FOR SELECT 1; ", &st),
                 PGW_STMT_DECLARE);
    CHECK_EQ_STR(st.name, "C1");
    CHECK_EQ_STR(st.query, "SELECT 1;");
    CHECK(st.binary && st.hold);
    pgw_stmt_release(&st);
    CHECK_EQ_INT(kind_of("declare c cursor for with x as (select 1) select * from x", &st),
                 PGW_STMT_DECLARE);
    CHECK(!st.binary && !st.hold);
    CHECK_EQ_STR(st.query, "with x as (select 1) select * from x");
    pgw_stmt_release(&st);
    CHECK_EQ_INT(kind_of("FETCH FORWARD 2000 FROM \"c\"", &st), PGW_STMT_FETCH);
    CHECK_EQ_INT(st.count, 2000);
    CHECK_EQ_STR(st.name, "c");
    CHECK_EQ_INT(kind_of("fetch c", &st), PGW_STMT_FETCH);
    CHECK_EQ_INT(st.count, 1);
    CHECK_EQ_INT(kind_of("FETCH ALL IN c", &st), PGW_STMT_FETCH);
    CHECK(st.count == PGW_FETCH_ALL);
    CHECK_EQ_INT(kind_of("MOVE 5 c", &st), PGW_STMT_MOVE);
    CHECK_EQ_INT(st.count, 5);
    CHECK_EQ_INT(kind_of("CLOSE c", &st), PGW_STMT_CLOSE);
    CHECK_EQ_INT(kind_of("CLOSE ALL", &st), PGW_STMT_CLOSE);
    CHECK(st.all);
    CHECK_EQ_INT(kind_of("LISTEN events", &st), PGW_STMT_LISTEN);
    CHECK_EQ_INT(kind_of("EXPLAIN ANALYZE SELECT 1", &st), PGW_STMT_EXPLAIN);
    CHECK(st.analyze);
    CHECK_EQ_STR(st.query, "SELECT 1");
    pgw_stmt_release(&st);
    CHECK_EQ_INT(kind_of("EXPLAIN (ANALYZE false, FORMAT text) SELECT 2", &st), PGW_STMT_EXPLAIN);
    CHECK(!st.analyze);
    CHECK_EQ_STR(st.query, "SELECT 2");
    pgw_stmt_release(&st);
    struct vt_error err = {0};
    CHECK_EQ_INT(pgw_stmt_read("DECLARE c SCROLL CURSOR FOR SELECT 1", 36, &st, &err),
                 VT_ERR_NOT_IMPLEMENTED);
    vt_error_clear(&err);
    CHECK_EQ_INT(pgw_stmt_read("FETCH BACKWARD 1 FROM c", 23, &st, &err),
                 VT_ERR_NOT_IMPLEMENTED);
    vt_error_clear(&err);
    CHECK_EQ_INT(pgw_stmt_read("FETCH -1 FROM c", 15, &st, &err), VT_ERR_NOT_IMPLEMENTED);
}

TEST(copy_statements)
{
    struct pgw_stmt st;
    CHECK_EQ_INT(kind_of("COPY (SELECT a, 'x;)' FROM t WHERE (a > 1)) TO STDOUT", &st),
                 PGW_STMT_COPY_OUT);
    CHECK_EQ_STR(st.query, "SELECT a, 'x;)' FROM t WHERE (a > 1)");
    CHECK_EQ_INT(st.copy_format, PGW_COPY_TEXT);
    CHECK_EQ_INT(st.copy_delimiter, '\t');
    pgw_stmt_release(&st);
    CHECK_EQ_INT(kind_of("copy public.trips (id, \"Name\") to stdout with csv header", &st),
                 PGW_STMT_COPY_OUT);
    CHECK_EQ_STR(st.query, "SELECT id, \"Name\" FROM public.trips");
    CHECK_EQ_INT(st.copy_format, PGW_COPY_CSV);
    CHECK(st.copy_header);
    CHECK_EQ_INT(st.copy_delimiter, ',');
    pgw_stmt_release(&st);
    CHECK_EQ_INT(kind_of("COPY t TO STDOUT (FORMAT csv, DELIMITER ';', NULL 'NA', HEADER false)",
                         &st),
                 PGW_STMT_COPY_OUT);
    CHECK_EQ_INT(st.copy_delimiter, ';');
    CHECK_EQ_STR(st.copy_null, "NA");
    CHECK(!st.copy_header);
    pgw_stmt_release(&st);
    CHECK_EQ_INT(kind_of("COPY t TO STDOUT (FORMAT binary)", &st), PGW_STMT_COPY_OUT);
    CHECK_EQ_INT(st.copy_format, PGW_COPY_BINARY);
    pgw_stmt_release(&st);
    CHECK_EQ_INT(kind_of("COPY (SELECT 1) TO STDOUT WITH BINARY", &st), PGW_STMT_COPY_OUT);
    CHECK_EQ_INT(st.copy_format, PGW_COPY_BINARY);
    pgw_stmt_release(&st);
    struct vt_error err = {0};
    CHECK_EQ_INT(pgw_stmt_read("COPY t TO STDOUT (FORMAT binary, HEADER)", 40, &st, &err),
                 VT_ERR_SQL_SYNTAX);
    vt_error_clear(&err);
    CHECK_EQ_INT(pgw_stmt_read("COPY t TO STDOUT (FREEZE)", 25, &st, &err),
                 VT_ERR_NOT_IMPLEMENTED);
}

TEST(normalize)
{
    const char *in = "WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE "
                     "pg_catalog.default AND pg_catalog.f(x)::pg_catalog.int2[]";
    char *n = pgw_normalize(in, strlen(in));
    CHECK_EQ_STR(n, "WHERE c.relname  ~  '^(t)$'   AND f(x)::int2[]");
    free(n);
    /* inside strings and quoted names nothing changes */
    const char *same = "SELECT 'pg_catalog.x', \"pg_catalog\".y";
    CHECK(pgw_normalize(same, strlen(same)) == NULL);
}

/* ----------------------------------------------------------------- types */

TEST(float_text_like_postgresql)
{
    static const struct {
        double v;
        const char *f8, *f4;
    } cases[] = {
        {1e15, "1e+15", "1e+15"},          {123456789012345.0, "123456789012345", "1.2345679e+14"},
        {1e14, "100000000000000", "1e+14"}, {0.0001, "0.0001", "0.0001"},
        {0.00001, "1e-05", "1e-05"},        {1.5e-5, "1.5e-05", "1.5e-05"},
        {3.14, "3.14", "3.14"},             {-0.0, "-0", "-0"},
        {0.1, "0.1", "0.1"},                {1e16, "1e+16", "1e+16"},
        {12345678901234567.0, "1.2345678901234568e+16", "1.2345678e+16"},
        {100000, "100000", "100000"},       {1e6, "1000000", "1e+06"},
    };
    char b[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        b[pgw_fmt_double(b, cases[i].v, 1)] = 0;
        CHECK_EQ_STR(b, cases[i].f8);
        b[pgw_fmt_float(b, (float)cases[i].v, 1)] = 0;
        CHECK_EQ_STR(b, cases[i].f4);
    }
    b[pgw_fmt_double(b, NAN, 1)] = 0;
    CHECK_EQ_STR(b, "NaN");
    b[pgw_fmt_double(b, -INFINITY, 1)] = 0;
    CHECK_EQ_STR(b, "-Infinity");
    b[pgw_fmt_double(b, 0.1, 0)] = 0; /* extra_float_digits = 0: %.15g */
    CHECK_EQ_STR(b, "0.1");
    b[pgw_fmt_double(b, 1.0 / 3, -3)] = 0;
    CHECK_EQ_STR(b, "0.333333333333");
}

TEST(numeric_binary_like_postgresql)
{
    /* PostgreSQL's numeric_send for the same values */
    static const struct {
        const char *text;
        const unsigned char bin[24];
        size_t len;
    } cases[] = {
        {"2.50", {0, 2, 0, 0, 0, 0, 0, 2, 0, 2, 0x13, 0x88}, 12},
        {"12345.6789", {0, 3, 0, 1, 0, 0, 0, 4, 0, 1, 0x09, 0x29, 0x1a, 0x85}, 14},
        {"-0.05", {0, 1, 0xff, 0xff, 0x40, 0, 0, 2, 0x01, 0xf4}, 10},
        {"0", {0, 0, 0, 0, 0, 0, 0, 0}, 8},
        {"0.000", {0, 0, 0, 0, 0, 0, 0, 3}, 8},
        {"10000", {0, 1, 0, 1, 0, 0, 0, 0, 0, 1}, 10},
        {"NaN", {0, 0, 0, 0, 0xc0, 0, 0, 0}, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct strbuf o;
        sb_init(&o, 0);
        CHECK_EQ_INT(pgw_numeric_binary(&o, cases[i].text, strlen(cases[i].text)), 0);
        if (o.len != cases[i].len || memcmp(o.buf, cases[i].bin, o.len) != 0)
            fprintf(stderr, "  numeric %s: wrong bytes (%zu)\n", cases[i].text, o.len);
        CHECK_EQ_INT(o.len, cases[i].len);
        CHECK(o.len == cases[i].len && !memcmp(o.buf, cases[i].bin, o.len));
        sb_release(&o);
    }
    struct strbuf o;
    sb_init(&o, 0);
    CHECK_EQ_INT(pgw_numeric_binary(&o, "1.2.3", 5), -1);
    CHECK_EQ_INT(pgw_numeric_binary(&o, "", 0), -1);
    sb_release(&o);
}

/* Encodes the one-row result of `sql` as text DataRow values. */
static char *text_of(duckdb_connection con, const char *sql, int16_t fmt)
{
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        fprintf(stderr, "  %s: %s\n", sql, duckdb_result_error(&res));
        duckdb_destroy_result(&res);
        return NULL;
    }
    size_t n = duckdb_column_count(&res);
    duckdb_logical_type types[16];
    for (size_t i = 0; i < n; i++)
        types[i] = duckdb_column_logical_type(&res, i);
    struct pgw_format f = {.extra_float_digits = 1};
    struct vt_error err = {0};
    struct pgw_rows *r = pgw_rows_create(n, types, &fmt, 1, &f, NULL, &err);
    struct strbuf o;
    sb_init(&o, 0);
    duckdb_data_chunk ch = duckdb_fetch_chunk(res);
    if (r && ch)
        pgw_rows_data(r, ch, 0, 1, &o);
    duckdb_destroy_data_chunk(&ch);
    pgw_rows_destroy(r);
    for (size_t i = 0; i < n; i++)
        duckdb_destroy_logical_type(&types[i]);
    duckdb_destroy_result(&res);
    /* values joined by | (NULL as <null>) */
    struct strbuf out;
    sb_init(&out, 0);
    if (o.len >= 7) {
        const unsigned char *p = (const unsigned char *)o.buf + 7;
        for (size_t i = 0; i < n; i++) {
            int32_t len = (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                                    (uint32_t)p[2] << 8 | p[3]);
            p += 4;
            if (i)
                sb_addc(&out, '|');
            if (len < 0) {
                sb_adds(&out, "<null>");
                continue;
            }
            if (fmt == 1) {
                for (int32_t k = 0; k < len; k++)
                    sb_addf(&out, "%02x", p[k]);
            } else {
                sb_add(&out, p, (size_t)len);
            }
            p += len;
        }
    }
    sb_release(&o);
    return sb_detach(&out, NULL);
}

TEST(text_output_like_postgresql)
{
    duckdb_database db;
    duckdb_connection con;
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
    duckdb_result r;
    duckdb_query(con, "SET TimeZone = 'UTC'", &r);
    duckdb_destroy_result(&r);
    static const struct {
        const char *sql, *want;
    } cases[] = {
        {"SELECT true, false, NULL::INTEGER, 42::TINYINT, -7::BIGINT, 255::UTINYINT",
         "t|f|<null>|42|-7|255"},
        {"SELECT 1.50::DECIMAL(10,2), -0.05::DECIMAL(4,2), 12345678901234567890::HUGEINT, "
         "18446744073709551615::UBIGINT",
         "1.50|-0.05|12345678901234567890|18446744073709551615"},
        {"SELECT 'x'::VARCHAR, '\\x00\\xff'::BLOB, uuid '6ba7b810-9dad-11d1-80b4-00c04fd430c8'",
         "x|\\x00ff|6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
        {"SELECT DATE '2024-02-29', DATE '0044-03-15 (BC)', 'infinity'::DATE, "
         "DATE '12345-01-01'",
         "2024-02-29|0044-03-15 BC|infinity|12345-01-01"},
        {"SELECT TIMESTAMP '2024-01-02 03:04:05.12', TIMESTAMPTZ '2024-01-02 03:04:05+00', "
         "'-0043-03-15 10:00:00.5'::TIMESTAMP, '-infinity'::TIMESTAMP",
         "2024-01-02 03:04:05.12|2024-01-02 03:04:05+00|0044-03-15 10:00:00.5 BC|-infinity"},
        {"SELECT TIME '23:59:59.999999', TIMETZ '10:00:00+05:30', TIMESTAMP_NS "
         "'2024-01-01 00:00:00.123456789', TIMESTAMP_S '2024-01-01 00:00:07'",
         "23:59:59.999999|10:00:00+05:30|2024-01-01 00:00:00.123456|2024-01-01 00:00:07"},
        {"SELECT INTERVAL '1 year 2 months 3 days 04:05:06.789', INTERVAL '-1 month 3 days', "
         "INTERVAL '0 seconds', INTERVAL '-1 day -1 second', INTERVAL '1 day -1 second', "
         "INTERVAL '-2 years', INTERVAL '25 hours', INTERVAL '-0.5 seconds'",
         "1 year 2 mons 3 days 04:05:06.789|-1 mons +3 days|00:00:00|-1 days -00:00:01|"
         "1 day -00:00:01|-2 years|25:00:00|-00:00:00.5"},
        {"SELECT ['a b', '', NULL, 'NULL', 'x\"y', 'c,d', '{'], [1, 2, NULL], "
         "[1.5::DOUBLE, 'nan'::DOUBLE], []::INTEGER[], [true, false], "
         "[TIMESTAMP '2024-01-01 10:00:00']",
         "{\"a b\",\"\",NULL,\"NULL\",\"x\\\"y\",\"c,d\",\"{\"}|{1,2,NULL}|{1.5,NaN}|{}|"
         "{t,f}|{\"2024-01-01 10:00:00\"}"},
        {"SELECT {'a': 1, 'b': [1, 2]}, MAP {'k': 'v'}, [[1, 2], [3]], 'ok'::ENUM('ok', 'no'), "
         "'{\"j\": 1}'::JSON",
         "{\"a\":1,\"b\":[1,2]}|{\"k\":\"v\"}|[[1,2],[3]]|ok|{\"j\": 1}"},
        {"SELECT 0.1::DOUBLE, 1e100::DOUBLE, 3.14::FLOAT, '101'::BIT", "0.1|1e+100|3.14|101"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = text_of(con, cases[i].sql, 0);
        CHECK_EQ_STR(got, cases[i].want);
        free(got);
    }
    /* binary: PostgreSQL's send formats */
    static const struct {
        const char *sql, *want;
    } bin[] = {
        {"SELECT true, 7::SMALLINT, -2::INTEGER, 1::BIGINT", "01|0007|fffffffe|0000000000000001"},
        {"SELECT 1.5::DOUBLE, 1.5::FLOAT", "3ff8000000000000|3fc00000"},
        {"SELECT DATE '2000-01-02', TIMESTAMP '2000-01-01 00:00:01'",
         "00000001|00000000000f4240"},
        {"SELECT INTERVAL '1 month 2 days 3 microseconds'", "00000000000000030000000200000001"},
        {"SELECT uuid '6ba7b810-9dad-11d1-80b4-00c04fd430c8'", "6ba7b8109dad11d180b400c04fd430c8"},
        {"SELECT [1, NULL]::INTEGER[]",
         "000000010000000100000017000000020000000100000004" "00000001ffffffff"},
        {"SELECT 2.50::DECIMAL(4,2)", "00020000000000020002" "1388"},
    };
    for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++) {
        char *got = text_of(con, bin[i].sql, 1);
        CHECK_EQ_STR(got, bin[i].want);
        free(got);
    }
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

TEST(parameters)
{
    struct arena a;
    arena_init(&a, 0);
    struct vt_error err = {0};
    struct query_value v;
    struct pgw_value in = {(const unsigned char *)" 42 ", 4, 0};
    CHECK_EQ_INT(pgw_param_decode(&in, PGW_OID_INT4, &a, &v, &err), VT_ERR_OK);
    CHECK_EQ_INT(v.kind, QUERY_VALUE_INT64);
    CHECK_EQ_INT(v.u.i, 42);
    in = (struct pgw_value){(const unsigned char *)"4x", 2, 0};
    CHECK_EQ_INT(pgw_param_decode(&in, PGW_OID_INT8, &a, &v, &err), VT_ERR_PG_INVALID_TEXT);
    vt_error_clear(&err);
    in = (struct pgw_value){(const unsigned char *)"yes", 3, 0};
    CHECK_EQ_INT(pgw_param_decode(&in, PGW_OID_BOOL, &a, &v, &err), VT_ERR_OK);
    CHECK(v.kind == QUERY_VALUE_BOOL && v.u.b);
    in = (struct pgw_value){(const unsigned char *)"\\x00ff", 6, 0};
    CHECK_EQ_INT(pgw_param_decode(&in, PGW_OID_BYTEA, &a, &v, &err), VT_ERR_OK);
    CHECK(v.kind == QUERY_VALUE_BLOB && v.u.s.len == 2 && (unsigned char)v.u.s.ptr[1] == 0xff);
    in = (struct pgw_value){NULL, -1, 0};
    CHECK_EQ_INT(pgw_param_decode(&in, 0, &a, &v, &err), VT_ERR_OK);
    CHECK_EQ_INT(v.kind, QUERY_VALUE_NULL);
    in = (struct pgw_value){(const unsigned char *)"\xc3\x28", 2, 0};
    CHECK_EQ_INT(pgw_param_decode(&in, 0, &a, &v, &err), VT_ERR_PG_INVALID_TEXT);
    vt_error_clear(&err);
    const unsigned char i8[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
    in = (struct pgw_value){i8, 8, 1};
    CHECK_EQ_INT(pgw_param_decode(&in, PGW_OID_INT8, &a, &v, &err), VT_ERR_OK);
    CHECK_EQ_INT(v.u.i, -2);
    in = (struct pgw_value){i8, 4, 1};
    CHECK_EQ_INT(pgw_param_decode(&in, PGW_OID_INT8, &a, &v, &err), VT_ERR_PG_PROTOCOL);
    vt_error_clear(&err);
    const unsigned char num[] = {0, 2, 0, 0, 0x40, 0, 0, 2, 0, 2, 0x13, 0x88}; /* -2.50 */
    in = (struct pgw_value){num, sizeof num, 1};
    CHECK_EQ_INT(pgw_param_decode(&in, PGW_OID_NUMERIC, &a, &v, &err), VT_ERR_OK);
    CHECK_EQ_STR(v.u.s.ptr, "-2.50");
    const unsigned char date[] = {0, 0, 0, 1};
    in = (struct pgw_value){date, 4, 1};
    CHECK_EQ_INT(pgw_param_decode(&in, PGW_OID_DATE, &a, &v, &err), VT_ERR_OK);
    CHECK_EQ_STR(v.u.s.ptr, "2000-01-02");
    arena_release(&a);
}

int main(void)
{
    static const struct tl_case cases[] = {
        TEST_CASE(framing),
        TEST_CASE(startup_packets),
        TEST_CASE(bind_messages),
        TEST_CASE(other_messages),
        TEST_CASE(backend_messages_bytes),
        TEST_CASE(lexer_splits_where_postgresql_does),
        TEST_CASE(session_statements),
        TEST_CASE(copy_statements),
        TEST_CASE(normalize),
        TEST_CASE(float_text_like_postgresql),
        TEST_CASE(numeric_binary_like_postgresql),
        TEST_CASE(text_output_like_postgresql),
        TEST_CASE(parameters),
    };
    return tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
}
