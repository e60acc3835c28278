/* The gate's dialect hooks (sql.h: struct sql_dialect) on DuckDB's real
 * parser, with small test dialects: a rewrite reaches the statement that
 * runs, and the gate holds its rules against a hook that claims what it may
 * not (an "own" name without the "vt:" prefix, a dataset that is not one, an
 * expression answer for a table). pgwire's real dialect is tested in
 * tests/unit/pgwire/test_catalog.c. */
#include <duckdb.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql.h"
#include "testlib.h"

static duckdb_database db;
static duckdb_connection con;

static bool is_dataset(void *ctx, const char *name)
{
    (void)ctx;
    return !strcmp(name, "trips");
}

static void setup(void)
{
    if (db)
        return;
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
}

static enum vt_err check(const struct sql_dialect *d, const char *sql, struct sql_checked *out,
                         struct vt_error *err)
{
    struct sql_gate_options o = {.dialect = d};
    memset(err, 0, sizeof *err);
    return sql_gate_check_opts(con, sql, &o, is_dataset, NULL, out, err);
}

/* "mytab" is our own relation "vt:mytab"; the function myfn is "vt:myfn";
 * "alias_of_trips" names the dataset trips. */
static enum sql_hook good_table(struct sql_walk *w, json_t *ref)
{
    const char *n = json_string_value(json_object_get(ref, "table_name"));
    if (n && !strcmp(n, "mytab")) {
        json_object_set_new(ref, "table_name", json_string("vt:mytab"));
        sql_walk_changed(w, true);
        return SQL_HOOK_OWN;
    }
    if (n && !strcmp(n, "alias_of_trips")) {
        json_object_set_new(ref, "table_name", json_string("trips"));
        sql_walk_changed(w, false);
        return SQL_HOOK_DATASET;
    }
    if (n && !strcmp(n, "forbidden")) {
        vt_error_set(sql_walk_error(w), VT_ERR_SQL_UNKNOWN_TABLE, "no such thing here");
        return SQL_HOOK_REFUSED;
    }
    return SQL_HOOK_CHECK;
}

static enum sql_hook good_expr(struct sql_walk *w, json_t *e)
{
    const char *cls = json_string_value(json_object_get(e, "class"));
    const char *fn = json_string_value(json_object_get(e, "function_name"));
    if (cls && !strcmp(cls, "FUNCTION") && fn && !strcmp(fn, "myfn")) {
        json_object_set_new(e, "function_name", json_string("vt:myfn"));
        sql_walk_changed(w, true);
        return SQL_HOOK_OWN;
    }
    return SQL_HOOK_CHECK;
}

/* Claims everything as its own without renaming it. */
static enum sql_hook greedy_table(struct sql_walk *w, json_t *ref)
{
    (void)w;
    (void)ref;
    return SQL_HOOK_OWN;
}

static enum sql_hook greedy_expr(struct sql_walk *w, json_t *e)
{
    (void)w;
    const char *cls = json_string_value(json_object_get(e, "class"));
    return cls && !strcmp(cls, "FUNCTION") ? SQL_HOOK_OWN : SQL_HOOK_CHECK;
}

/* Names a table that is not a dataset. */
static enum sql_hook lying_table(struct sql_walk *w, json_t *ref)
{
    (void)w;
    json_object_set_new(ref, "table_name", json_string("secret"));
    return SQL_HOOK_DATASET;
}

static enum sql_hook expr_answer_for_table(struct sql_walk *w, json_t *ref)
{
    (void)w;
    (void)ref;
    return SQL_HOOK_AGAIN;
}

TEST(hooks_map_names_and_the_rewrite_runs)
{
    setup();
    static const struct sql_dialect d = {.expr = good_expr, .table = good_table};
    struct sql_checked chk;
    struct vt_error err;
    CHECK_EQ_INT(check(&d, "SELECT myfn(x) FROM mytab JOIN alias_of_trips ON true", &chk, &err),
                 VT_ERR_OK);
    CHECK(chk.reads_catalog);
    CHECK_EQ_INT((long)chk.n_depends_on, 1);
    CHECK_EQ_STR(chk.depends_on[0], "trips");
    CHECK_CONTAINS(chk.rewritten, "\"vt:mytab\"");
    CHECK_CONTAINS(chk.rewritten, "\"vt:myfn\"");
    sql_checked_release(&chk);
    /* nothing mapped: runs as written */
    CHECK_EQ_INT(check(&d, "SELECT abs(1) FROM trips", &chk, &err), VT_ERR_OK);
    CHECK(!chk.reads_catalog);
    CHECK(chk.rewritten == NULL);
    sql_checked_release(&chk);
    /* a hook's refusal is the answer */
    CHECK_EQ_INT(check(&d, "SELECT * FROM forbidden", &chk, &err), VT_ERR_SQL_UNKNOWN_TABLE);
    CHECK_CONTAINS(vt_error_message(&err), "no such thing here");
    /* the usual rules hold for what the hook leaves */
    CHECK_EQ_INT(check(&d, "SELECT * FROM read_csv('/etc/passwd')", &chk, &err),
                 VT_ERR_SQL_FORBIDDEN_FUNCTION);
    CHECK_EQ_INT(check(&d, "SELECT * FROM other", &chk, &err), VT_ERR_SQL_UNKNOWN_TABLE);
    /* EXPORT_STATE is refused before any hook sees the call */
    CHECK_EQ_INT(check(&d, "SELECT myfn(x) EXPORT_STATE FROM mytab", &chk, &err),
                 VT_ERR_SQL_FORBIDDEN_FUNCTION);
}

TEST(the_gate_holds_against_greedy_hooks)
{
    setup();
    struct sql_checked chk;
    struct vt_error err;
    static const struct sql_dialect greedy = {.expr = greedy_expr, .table = greedy_table};
    CHECK(check(&greedy, "SELECT * FROM read_parquet('/etc/passwd')", &chk, &err) != VT_ERR_OK);
    CHECK(check(&greedy, "SELECT * FROM duckdb_settings", &chk, &err) != VT_ERR_OK);
    CHECK(check(&greedy, "SELECT getenv('HOME')", &chk, &err) != VT_ERR_OK);
    CHECK(check(&greedy, "SELECT * FROM secrets.main.x", &chk, &err) != VT_ERR_OK);
    static const struct sql_dialect lying = {.table = lying_table};
    CHECK(check(&lying, "SELECT * FROM trips", &chk, &err) != VT_ERR_OK);
    static const struct sql_dialect confused = {.table = expr_answer_for_table};
    CHECK(check(&confused, "SELECT * FROM trips", &chk, &err) != VT_ERR_OK);
}

int main(void)
{
    static const struct tl_case cases[] = {TEST_CASE(hooks_map_names_and_the_rewrite_runs),
                                           TEST_CASE(the_gate_holds_against_greedy_hooks)};
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    sql_thread_release();
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
