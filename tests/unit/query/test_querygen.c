/*
 * Differential test of the query compiler, in-process: tests/e2e/querygen.py
 * generates random query requests with hand-written reference SQL over its
 * table; each request goes through query_parse + query_build_sql and runs with
 * bound parameters in DuckDB, and its rows must equal the reference SQL's rows
 * (in order when the request's order is total, else as multisets), with the
 * expected output names. The same generator will drive the HTTP-level
 * differential test in tests/e2e/.
 *
 * QUERYGEN_SEED and QUERYGEN_COUNT override the seed (1) and count (400);
 * QUERYGEN_PARQUET=1 first round-trips the table through a Parquet file, as
 * the HTTP-level test will (ENUM becomes VARCHAR on the way).
 */
#include <duckdb.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "query/query.h"
#include "testlib.h"
#include "util/strbuf.h"

#define PYTHON "/usr/bin/python3"
#define GEN "tests/e2e/querygen.py"
#define MAX_PAGE_SIZE 500

static duckdb_database db;
static duckdb_connection con;

static bool exec_sql(const char *sql)
{
    duckdb_result res;
    bool ok = duckdb_query(con, sql, &res) == DuckDBSuccess;
    if (!ok)
        fprintf(stderr, "  setup failed: %.200s: %s\n", sql, duckdb_result_error(&res));
    duckdb_destroy_result(&res);
    return ok;
}

/* Rows of a result as strings (fields separated by \x1f, NULL as \x01). */
struct rows {
    char **v;
    size_t n;
    size_t ncol;
};

static void rows_free(struct rows *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i]);
    free(r->v);
    memset(r, 0, sizeof *r);
}

static void rows_take(duckdb_result *res, struct rows *out)
{
    out->ncol = duckdb_column_count(res);
    out->n = duckdb_row_count(res);
    out->v = calloc(out->n ? out->n : 1, sizeof *out->v);
    struct strbuf sb;
    sb_init(&sb, 0);
    for (idx_t r = 0; r < out->n; r++) {
        sb_reset(&sb);
        for (idx_t c = 0; c < out->ncol; c++) {
            if (c)
                sb_addc(&sb, '\x1f');
            if (duckdb_value_is_null(res, c, r)) {
                sb_addc(&sb, '\x01');
            } else {
                char *v = duckdb_value_varchar(res, c, r);
                sb_adds(&sb, v);
                duckdb_free(v);
            }
        }
        out->v[r] = strdup(sb.buf ? sb.buf : "");
    }
    sb_release(&sb);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Renders every value as text inside SQL (the value API cannot print every
 * type); the statement under test runs unchanged as the inner query. */
static char *wrap(const char *sql)
{
    size_t n = strlen(sql) + 64;
    char *w = malloc(n);
    snprintf(w, n, "SELECT COLUMNS(*)::VARCHAR FROM (%s)", sql);
    return w;
}

static void print_rows(const char *label, const struct rows *r)
{
    fprintf(stderr, "    %s (%zu rows):", label, r->n);
    for (size_t i = 0; i < r->n && i < 6; i++) {
        fprintf(stderr, " [");
        for (const char *p = r->v[i]; *p; p++)
            fputc(*p == '\x1f' ? '|' : *p == '\x01' ? '~' : *p, stderr);
        fprintf(stderr, "]");
    }
    fprintf(stderr, "%s\n", r->n > 6 ? " ..." : "");
}

static int failures_shown;

/* One generated case; returns true when it passed. */
static bool run_case(const json_t *c, const struct query_schema *schema, size_t *out_rows)
{
    const char *mode_s = json_string_value(json_object_get(c, "mode"));
    const json_t *request = json_object_get(c, "request");
    const char *ref_sql = json_string_value(json_object_get(c, "sql"));
    bool ordered = json_is_true(json_object_get(c, "ordered"));
    const json_t *names = json_object_get(c, "names");
    long long seed = (long long)json_integer_value(json_object_get(c, "seed"));
    if (!mode_s || !request || !ref_sql || !names) {
        fprintf(stderr, "  malformed case line\n");
        return false;
    }
    enum query_mode mode = strcmp(mode_s, "count") == 0    ? QUERY_COUNT
                           : strcmp(mode_s, "stream") == 0 ? QUERY_STREAM
                                                           : QUERY_PAGED;
    struct arena a;
    arena_init(&a, 64u << 20);
    struct query_options opts = {.mode = mode, .max_page_size = MAX_PAGE_SIZE};
    struct query_request req;
    struct query_plan plan;
    struct vt_error err = {0};
    struct rows mine = {0}, ref = {0};
    bool ok = false;
    char *why = NULL;

    if (query_parse(request, schema, &opts, &a, &req, &err) != VT_ERR_OK ||
        query_build_sql(&req, "t", &a, &plan, &err) != VT_ERR_OK) {
        why = strdup(vt_error_message(&err));
        goto out;
    }
    char *w = wrap(plan.sql);
    duckdb_prepared_statement st;
    duckdb_result res;
    if (duckdb_prepare(con, w, &st) != DuckDBSuccess) {
        why = strdup(duckdb_prepare_error(st));
    } else if (query_plan_bind(&plan, st, &err) != VT_ERR_OK) {
        why = strdup(vt_error_message(&err));
    } else if (duckdb_execute_prepared(st, &res) != DuckDBSuccess) {
        why = strdup(duckdb_result_error(&res));
        duckdb_destroy_result(&res);
    } else {
        rows_take(&res, &mine);
        duckdb_destroy_result(&res);
    }
    duckdb_destroy_prepare(&st);
    free(w);
    if (why)
        goto out;

    w = wrap(ref_sql);
    if (duckdb_query(con, w, &res) != DuckDBSuccess) {
        char buf[512];
        snprintf(buf, sizeof buf, "reference SQL failed: %s", duckdb_result_error(&res));
        why = strdup(buf);
    } else {
        rows_take(&res, &ref);
    }
    duckdb_destroy_result(&res);
    free(w);
    if (why)
        goto out;

    if (plan.nout != json_array_size(names)) {
        why = strdup("output column count differs from the expected names");
        goto out;
    }
    for (size_t i = 0; i < plan.nout; i++)
        if (strcmp(plan.out_names[i], json_string_value(json_array_get(names, i))) != 0) {
            why = strdup("output column names differ");
            goto out;
        }
    if (mine.ncol != ref.ncol || mine.n != ref.n) {
        why = strdup("row or column count differs");
        goto out;
    }
    if (!ordered) {
        qsort(mine.v, mine.n, sizeof *mine.v, cmp_str);
        qsort(ref.v, ref.n, sizeof *ref.v, cmp_str);
    }
    for (size_t i = 0; i < mine.n; i++)
        if (strcmp(mine.v[i], ref.v[i]) != 0) {
            why = strdup(ordered ? "rows differ (ordered)" : "rows differ (as multisets)");
            goto out;
        }
    ok = true;
    *out_rows = mine.n;
out:
    if (!ok && failures_shown++ < 10) {
        char *rq = json_dumps(request, JSON_COMPACT);
        fprintf(stderr, "  case seed %lld (%s): %s\n    request: %s\n    reference: %s\n", seed,
                mode_s, why ? why : "?", rq, ref_sql);
        if (plan.sql && !ok && mine.v)
            fprintf(stderr, "    compiled: %s\n", plan.sql);
        if (mine.v)
            print_rows("mine", &mine);
        if (ref.v)
            print_rows("reference", &ref);
        free(rq);
    }
    free(why);
    rows_free(&mine);
    rows_free(&ref);
    arena_release(&a);
    return ok;
}

static FILE *run_gen(const char *args)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, PYTHON " " GEN " %s", args);
    FILE *f = popen(cmd, "r");
    if (!f)
        fprintf(stderr, "  cannot run %s\n", cmd);
    return f;
}

TEST(differential_against_reference_sql)
{
    CHECK(duckdb_open(NULL, &db) == DuckDBSuccess);
    CHECK(duckdb_connect(db, &con) == DuckDBSuccess);
    struct vt_error lerr = {0};
    CHECK(query_like_register(con, &lerr) == VT_ERR_OK);
    /* A session zone off UTC by a fraction of an hour: the compiled SQL must
     * not depend on it. One thread keeps float sums bit-identical. */
    exec_sql("SET TimeZone = 'Asia/Kolkata'");
    exec_sql("SET threads = 1");

    char *line = NULL;
    size_t cap = 0;
    FILE *f = run_gen("--ddl");
    CHECK(f != NULL);
    int nddl = 0;
    while (f && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        CHECK(exec_sql(line));
        nddl++;
    }
    if (f)
        CHECK_EQ_INT(pclose(f), 0);
    CHECK(nddl >= 3);
    const char *pq = getenv("QUERYGEN_PARQUET");
    if (pq && pq[0] == '1') {
        char path[] = "/tmp/querygen-XXXXXX.parquet", sql[256];
        int fd = mkstemps(path, 8);
        CHECK(fd >= 0);
        if (fd >= 0) {
            close(fd);
            snprintf(sql, sizeof sql, "COPY t TO '%s' (FORMAT parquet)", path);
            CHECK(exec_sql(sql));
            CHECK(exec_sql("DROP TABLE t"));
            snprintf(sql, sizeof sql, "CREATE TABLE t AS SELECT * FROM '%s'", path);
            CHECK(exec_sql(sql));
            unlink(path);
        }
    }

    /* The schema, as the catalog will give it: names and types from DuckDB. */
    duckdb_result res;
    CHECK(duckdb_query(con, "SELECT * FROM t LIMIT 0", &res) == DuckDBSuccess);
    size_t ncol = duckdb_column_count(&res);
    struct query_column *cols = calloc(ncol ? ncol : 1, sizeof *cols);
    for (size_t i = 0; i < ncol; i++) {
        cols[i].name = strdup(duckdb_column_name(&res, i));
        cols[i].type = duckdb_column_type(&res, i);
    }
    duckdb_destroy_result(&res);
    struct query_schema schema = {cols, ncol};

    const char *seed = getenv("QUERYGEN_SEED");
    const char *count = getenv("QUERYGEN_COUNT");
    char args[128];
    snprintf(args, sizeof args, "--seed %d --count %d --max-page-size %d", seed ? atoi(seed) : 1,
             count ? atoi(count) : 400, MAX_PAGE_SIZE);
    f = run_gen(args);
    CHECK(f != NULL);
    int total = 0, passed = 0, nonempty = 0, with_rows = 0;
    while (f && getline(&line, &cap, f) > 0) {
        json_error_t jerr;
        json_t *c = json_loads(line, 0, &jerr);
        if (!c) {
            fprintf(stderr, "  bad generator line: %s\n", jerr.text);
            CHECK(false);
            continue;
        }
        total++;
        size_t nrows = 0;
        if (run_case(c, &schema, &nrows))
            passed++;
        if (nrows > 0)
            with_rows++;
        /* A cheap guard against a generator whose predicates match nothing. */
        if (strstr(line, "\"predicates\": [{"))
            nonempty++;
        json_decref(c);
    }
    if (f)
        CHECK_EQ_INT(pclose(f), 0);
    free(line);
    printf("querygen: %d of %d generated requests match the reference SQL (%d return rows)\n",
           passed, total, with_rows);
    CHECK(total >= 300);
    CHECK_EQ_INT(passed, total);
    CHECK(nonempty > total / 3);
    CHECK(with_rows > total / 2);

    for (size_t i = 0; i < ncol; i++)
        free((char *)cols[i].name);
    free(cols);
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

RUN_TESTS(TEST_CASE(differential_against_reference_sql))
