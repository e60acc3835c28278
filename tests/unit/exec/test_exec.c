/*
 * The execution layer's contract with sinks (src/exec/exec.h), on a real
 * DuckDB: the call order begin/chunk.../end or fail, exactly one of end/fail,
 * a sink op that refuses stops the run, job flags stop it with the right
 * code, and the bounded JSON sink caps bytes with whole rows.
 */
#include <duckdb.h>
#include <jansson.h>
#include <stdlib.h>

#include "engine/engine.h"
#include "exec/exec.h"
#include "testlib.h"

static duckdb_database db;
static duckdb_connection con;

static void open_db(void)
{
    if (db)
        return;
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
}

/* A sink that records what exec called. */
struct rec_sink {
    struct exec_sink sink;
    int begins, chunks, ends, fails;
    uint64_t rows;
    int stop_after_chunks; /* 0 = never refuse */
    enum vt_err fail_code;
    char order[64];
};

static struct rec_sink *rec_of(struct exec_sink *s)
{
    return (struct rec_sink *)s;
}

static void note(struct rec_sink *r, char c)
{
    size_t n = strlen(r->order);
    if (n + 1 < sizeof r->order) {
        r->order[n] = c;
        r->order[n + 1] = '\0';
    }
}

static enum vt_err rec_begin(struct exec_sink *s, duckdb_result *res, struct vt_error *err)
{
    (void)res;
    (void)err;
    rec_of(s)->begins++;
    note(rec_of(s), 'b');
    return VT_ERR_OK;
}

static enum vt_err rec_chunk(struct exec_sink *s, duckdb_data_chunk chunk, struct vt_error *err)
{
    struct rec_sink *r = rec_of(s);
    r->chunks++;
    r->rows += duckdb_data_chunk_get_size(chunk);
    if (r->chunks == 1)
        note(r, 'c');
    if (r->stop_after_chunks && r->chunks >= r->stop_after_chunks)
        return vt_error_set(err, VT_ERR_CLIENT_GONE, NULL);
    return VT_ERR_OK;
}

static void rec_end(struct exec_sink *s)
{
    rec_of(s)->ends++;
    note(rec_of(s), 'e');
}

static void rec_fail(struct exec_sink *s, const struct vt_error *err)
{
    rec_of(s)->fails++;
    rec_of(s)->fail_code = err->code;
    note(rec_of(s), 'f');
}

static const struct exec_sink_ops rec_ops = {
    .begin = rec_begin, .chunk = rec_chunk, .end = rec_end, .fail = rec_fail,
};

static void rec_init(struct rec_sink *r)
{
    memset(r, 0, sizeof *r);
    r->sink.ops = &rec_ops;
}

static struct exec_plan sql_plan(struct arena *a, const char *sql, const struct eng_job *job)
{
    return (struct exec_plan){.kind = EXEC_SQL, .sql = sql, .arena = a, .job = job};
}

TEST(sql_rows_reach_the_sink_in_order)
{
    open_db();
    struct arena a;
    arena_init(&a, 1 << 20);
    struct rec_sink r;
    rec_init(&r);
    struct exec_plan p = sql_plan(&a, "SELECT * FROM range(5000)", NULL);
    exec_run(&p, &r.sink, con);
    CHECK_EQ_STR(r.order, "bce");
    CHECK_EQ_INT(r.rows, 5000);
    CHECK_EQ_INT(r.ends + r.fails, 1);
    arena_release(&a);
}

TEST(a_refusing_sink_stops_the_run)
{
    open_db();
    struct arena a;
    arena_init(&a, 1 << 20);
    struct rec_sink r;
    rec_init(&r);
    r.stop_after_chunks = 1;
    struct exec_plan p = sql_plan(&a, "SELECT * FROM range(1000000)", NULL);
    exec_run(&p, &r.sink, con);
    CHECK_EQ_INT(r.chunks, 1);
    CHECK_EQ_INT(r.ends, 0);
    CHECK_EQ_INT(r.fails, 1);
    CHECK_EQ_INT(r.fail_code, VT_ERR_CLIENT_GONE);
    arena_release(&a);
}

TEST(bad_sql_fails_once_without_begin)
{
    open_db();
    struct arena a;
    arena_init(&a, 1 << 20);
    struct rec_sink r;
    rec_init(&r);
    struct exec_plan p = sql_plan(&a, "SELECT nope FROM nowhere", NULL);
    exec_run(&p, &r.sink, con);
    CHECK_EQ_STR(r.order, "f");
    CHECK_EQ_INT(r.fail_code, VT_ERR_QUERY_FAILED);
    arena_release(&a);
}

TEST(job_flags_stop_with_their_codes)
{
    open_db();
    struct arena a;
    arena_init(&a, 1 << 20);
    struct eng_job job;
    memset(&job, 0, sizeof job);
    atomic_store(&job.timed_out, true);
    struct rec_sink r;
    rec_init(&r);
    struct exec_plan p = sql_plan(&a, "SELECT 1", &job);
    exec_run(&p, &r.sink, con);
    CHECK_EQ_STR(r.order, "f");
    CHECK_EQ_INT(r.fail_code, VT_ERR_TIMEOUT);

    atomic_store(&job.timed_out, false);
    atomic_store(&job.cancelled, true);
    rec_init(&r);
    exec_run(&p, &r.sink, con);
    CHECK_EQ_INT(r.fail_code, VT_ERR_CLIENT_GONE);
    arena_release(&a);
}

TEST(bounded_json_sink_writes_one_array)
{
    open_db();
    struct arena a;
    arena_init(&a, 1 << 20);
    struct strbuf out;
    sb_init(&out, 0);
    struct exec_json_sink j;
    exec_json_sink_init(&j, &out);
    struct exec_plan p = sql_plan(&a, "SELECT range AS n, 'x' AS s FROM range(3)", NULL);
    exec_run(&p, &j.sink, con);
    CHECK(j.ended);
    CHECK_EQ_INT(j.rows, 3);
    CHECK_EQ_STR(out.buf, "[{\"n\":0,\"s\":\"x\"},{\"n\":1,\"s\":\"x\"},{\"n\":2,\"s\":\"x\"}]");
    exec_json_sink_release(&j);
    sb_release(&out);
    arena_release(&a);
}

TEST(bounded_json_sink_caps_bytes_with_whole_rows)
{
    open_db();
    struct arena a;
    arena_init(&a, 1 << 20);
    struct strbuf out;
    sb_init(&out, 0);
    struct exec_json_sink j;
    exec_json_sink_init(&j, &out);
    j.max_bytes = 100;
    struct exec_plan p = sql_plan(&a, "SELECT range AS n, repeat('y', 20) AS s FROM range(100)", NULL);
    exec_run(&p, &j.sink, con);
    CHECK(j.ended); /* cut on purpose: a complete, shorter answer */
    CHECK(out.len <= 102);
    json_error_t jerr;
    json_t *v = json_loads(out.buf, 0, &jerr);
    CHECK(v != NULL);
    CHECK_EQ_INT(json_array_size(v), j.rows);
    CHECK(j.rows >= 2);
    json_decref(v);
    exec_json_sink_release(&j);

    /* An error is reported, not turned into a short answer. */
    sb_reset(&out);
    exec_json_sink_init(&j, &out);
    struct exec_plan bad = sql_plan(&a, "SELECT error('boom') FROM range(3)", NULL);
    exec_run(&bad, &j.sink, con);
    CHECK(!j.ended);
    CHECK_EQ_INT(j.err.code, VT_ERR_QUERY_FAILED);
    CHECK_CONTAINS(j.err.msg, "boom");
    exec_json_sink_release(&j);
    sb_release(&out);
    arena_release(&a);
}

/* A bounded function past its limit fails the statement as limit_exceeded
 * (SQLSTATE 54000) naming the function and the limit; error() with text
 * shaped like the engine's marker stays query_failed (the gate refuses
 * error() to clients; the marker is random per process). */
TEST(bounded_functions_fail_as_limit_exceeded)
{
    open_db();
    struct vt_error ierr = {0};
    CHECK_EQ_INT(eng_functions_install(con, &ierr), VT_ERR_OK);
    struct arena a;
    arena_init(&a, 1 << 20);
    static const char *const over[] = {
        "SELECT repeat('ab', 40000000)",
        "SELECT len(range(1000001))",
        "SELECT hex(repeat('x', 9000000))",
        "SELECT i, lpad('x', CAST(1000000 + i AS INTEGER), 'y') FROM range(3) t(i)",
    };
    static const char *const fn[] = {"repeat", "range", "hex", "lpad"};
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        struct rec_sink r;
        rec_init(&r);
        struct exec_plan p = sql_plan(&a, over[i], NULL);
        exec_run(&p, &r.sink, con);
        CHECK_EQ_INT(r.fails, 1);
        CHECK_EQ_INT(r.fail_code, VT_ERR_LIMIT_EXCEEDED);
    }
    struct strbuf out;
    sb_init(&out, 0);
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        struct exec_json_sink j;
        sb_reset(&out);
        exec_json_sink_init(&j, &out);
        struct exec_plan p = sql_plan(&a, over[i], NULL);
        exec_run(&p, &j.sink, con);
        CHECK_EQ_INT(j.err.code, VT_ERR_LIMIT_EXCEEDED);
        CHECK(!strncmp(j.err.msg, fn[i], strlen(fn[i])));
        CHECK_CONTAINS(j.err.msg, "limit");
        CHECK(strstr(j.err.msg, "vtlimit") == NULL && strstr(j.err.msg, "Invalid Input") == NULL);
        exec_json_sink_release(&j);
    }
    sb_reset(&out);
    struct exec_json_sink j;
    exec_json_sink_init(&j, &out);
    struct exec_plan p =
        sql_plan(&a, "SELECT error('vtlimit-0000000000000000: repeat: over the limit')", NULL);
    exec_run(&p, &j.sink, con);
    CHECK_EQ_INT(j.err.code, VT_ERR_QUERY_FAILED);
    CHECK_CONTAINS(j.err.msg, "vtlimit-0000000000000000");
    exec_json_sink_release(&j);
    sb_release(&out);
    arena_release(&a);
}

int main(void)
{
    static const struct tl_case cases[] = {
        TEST_CASE(sql_rows_reach_the_sink_in_order),
        TEST_CASE(a_refusing_sink_stops_the_run),
        TEST_CASE(bad_sql_fails_once_without_begin),
        TEST_CASE(job_flags_stop_with_their_codes),
        TEST_CASE(bounded_json_sink_writes_one_array),
        TEST_CASE(bounded_json_sink_caps_bytes_with_whole_rows),
        TEST_CASE(bounded_functions_fail_as_limit_exceeded),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    exec_thread_release();
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
