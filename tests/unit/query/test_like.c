/* The linear LIKE matcher (query_like.c) against DuckDB's own LIKE on many
 * random short strings and patterns (where DuckDB's backtracking is still
 * fast), hand-picked edge cases, the complexity checker, and the registered
 * vt_like function on the patterns that make DuckDB's LIKE take minutes. */
#include <duckdb.h>
#include <stdlib.h>
#include <time.h>

#include "query/query.h"
#include "util/limits.h"
#include "testlib.h"

static bool like(const char *s, const char *p)
{
    struct query_like *l = query_like_compile(p, strlen(p));
    bool r = query_like_match(l, s, strlen(s));
    query_like_free(l);
    return r;
}

TEST(edge_cases)
{
    CHECK(like("", ""));
    CHECK(!like("a", ""));
    CHECK(like("", "%"));
    CHECK(like("abc", "%"));
    CHECK(like("abc", "%%"));
    CHECK(like("abc", "abc"));
    CHECK(!like("abc", "ab"));
    CHECK(like("abc", "a_c"));
    CHECK(like("abc", "___"));
    CHECK(!like("abc", "____"));
    CHECK(like("é", "_"));
    CHECK(!like("é", "__"));
    CHECK(like("aébc", "a_b%"));
    CHECK(like("abcabc", "%bc"));
    CHECK(like("abcabc", "a%c"));
    CHECK(!like("abcab", "a%c"));
    CHECK(like("aaa", "a%a"));
    CHECK(!like("a", "a%a"));
    CHECK(like("xyzabcxyz", "%abc%"));
    CHECK(like("ab", "a%%b"));
    CHECK(like("a_b", "a_b"));
    CHECK(like("mississippi", "%iss%ip%"));
    CHECK(like("mississippi", "m%s_i%i"));
    CHECK(!like("mississippi", "m%s_x%i"));
}

TEST(checker_bounds_segments_not_only_length)
{
    struct vt_error err = {0};
    CHECK_EQ_INT(query_like_check("%a%b%", 5, &err), VT_ERR_OK);
    char p[128] = "";
    for (int i = 0; i < VT_MAX_LIKE_SEGMENTS + 1; i++)
        strcat(p, "%a");
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(query_like_check(p, strlen(p), &err), VT_ERR_PATTERN_TOO_COMPLEX);
    CHECK_CONTAINS(err.msg, "parts between % signs");
    char w[200] = "%";
    for (int i = 0; i < VT_MAX_LIKE_WILD_SEGMENT_CHARS + 1; i++)
        strcat(w, "_");
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(query_like_check(w, strlen(w), &err), VT_ERR_PATTERN_TOO_COMPLEX);
}

static const char *alphabet[] = {"a", "b", "c", "é", "ß", "_", "%"};

static void random_text(char *out, int max, bool pattern)
{
    int n = rand() % (max + 1);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        int k = pattern ? rand() % 7 : rand() % 5;
        strcat(out, alphabet[k]);
    }
}

TEST(agrees_with_duckdb_like)
{
    duckdb_database db;
    duckdb_connection con;
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
    duckdb_prepared_statement ps;
    CHECK(duckdb_prepare(con, "SELECT CAST(? AS VARCHAR) LIKE CAST(? AS VARCHAR)", &ps) ==
          DuckDBSuccess);
    srand(12345);
    int disagreements = 0;
    for (int i = 0; i < 20000; i++) {
        char s[64], p[64];
        random_text(s, 8, false);
        random_text(p, 6, true);
        duckdb_bind_varchar(ps, 1, s);
        duckdb_bind_varchar(ps, 2, p);
        duckdb_result res;
        if (duckdb_execute_prepared(ps, &res) != DuckDBSuccess)
            continue;
        bool want = duckdb_value_boolean(&res, 0, 0);
        duckdb_destroy_result(&res);
        if (want != like(s, p) && disagreements++ < 5)
            fprintf(stderr, "  '%s' LIKE '%s': duckdb %d, ours %d\n", s, p, want, !want);
    }
    CHECK_EQ_INT(disagreements, 0);
    duckdb_destroy_prepare(&ps);
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

/* CPU seconds of the whole process (every DuckDB thread) a query takes: the
 * work done, not the wall time, which a busy machine stretches by whatever
 * else runs (a 10 ms query measured over a second on a loaded CI core). */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double query_seconds(duckdb_connection con, const char *sql, bool *out_ok)
{
    double a = cpu_now();
    duckdb_result res;
    *out_ok = duckdb_query(con, sql, &res) == DuckDBSuccess;
    if (!*out_ok)
        fprintf(stderr, "  %s\n", duckdb_result_error(&res));
    duckdb_destroy_result(&res);
    return cpu_now() - a;
}

TEST(the_patterns_that_wedged_duckdb_are_fast)
{
    duckdb_database db;
    duckdb_connection con;
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
    struct vt_error err = {0};
    CHECK_EQ_INT(query_like_register(con, &err), VT_ERR_OK);
    bool ok;
    query_seconds(con, "CREATE TABLE big AS SELECT repeat('a', 1000000) AS s FROM range(3)", &ok);
    query_seconds(con, "CREATE TABLE mid AS SELECT repeat('ab', 100) || range AS s FROM range(20000)",
                  &ok);
    query_seconds(con, "CREATE TABLE p AS SELECT '%a%a%b' AS a, '%x%x%x%y' AS b, "
                       "'%' || repeat('_%', 60) || 'y' AS c, '%_%_%_y' AS d", &ok);
    /* Each case beside its floor: the same scan with a linear substring
     * search (contains) in place of the match, measured in the same run, so
     * the bound holds on a slow build (ASan) as on a fast one. A backtracking
     * matcher takes minutes on these (orders of magnitude past the bound);
     * ours takes about as long as the floor (~10 ms each here). */
    const char *cases[][2] = {
        {"SELECT count(*) FROM big, p WHERE vt_like(lower(s), lower(a))",
         "SELECT count(*) FROM big, p WHERE contains(lower(s), lower(a))"},
        {"SELECT count(*) FROM mid, p WHERE vt_like(lower(s), lower(b))",
         "SELECT count(*) FROM mid, p WHERE contains(lower(s), lower(b))"},
        {"SELECT count(*) FROM mid, p WHERE vt_like(s, c)",
         "SELECT count(*) FROM mid, p WHERE contains(s, c)"},
        {"SELECT count(*) FROM big, p WHERE vt_like(s, d)",
         "SELECT count(*) FROM big, p WHERE contains(s, d)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double floor = query_seconds(con, cases[i][1], &ok);
        CHECK(ok);
        double t = query_seconds(con, cases[i][0], &ok);
        CHECK(ok);
        double bound = 1.0 + 50 * floor;
        if (t >= bound)
            fprintf(stderr, "  %.3f s of CPU (bound %.3f s): %s\n", t, bound, cases[i][0]);
        CHECK(t < bound);
    }
    /* NULL in, NULL out (LIKE's rule). */
    duckdb_result res;
    duckdb_query(con, "SELECT vt_like(NULL, '%'), vt_like('a', NULL), vt_like('a', 'a')", &res);
    CHECK(duckdb_value_is_null(&res, 0, 0));
    CHECK(duckdb_value_is_null(&res, 1, 0));
    CHECK(duckdb_value_boolean(&res, 2, 0));
    duckdb_destroy_result(&res);
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

int main(void)
{
    static const struct tl_case cases[] = {TEST_CASE(edge_cases),
                                           TEST_CASE(checker_bounds_segments_not_only_length),
                                           TEST_CASE(agrees_with_duckdb_like),
                                           TEST_CASE(the_patterns_that_wedged_duckdb_are_fast)};
    return tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
}
