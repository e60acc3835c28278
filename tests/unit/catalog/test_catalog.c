/*
 * The catalog (src/catalog/catalog.h) on a live process database: the
 * registry (names, case-insensitive taking, unknown names), a published
 * generation's schema and status, a reload that swaps generations while a
 * reader keeps the old one (the old relation stays readable until it lets
 * go), a failed rebuild that leaves the previous generation serving, and
 * saved queries (dependencies inferred by the gate, registration, the rules
 * of removal).
 */
#include <duckdb.h>
#include <jansson.h>
#include <string.h>

#include "catalog/catalog.h"
#include "testcat.h"
#include "testlib.h"
#include "util/jsonw.h"

static struct testcat tc;

static int64_t count_of(const char *relation)
{
    duckdb_connection con;
    if (duckdb_connect(tc.db, &con) != DuckDBSuccess)
        return -1;
    char q[160];
    snprintf(q, sizeof q, "SELECT count(*) FROM %s", relation);
    duckdb_result r;
    int64_t n = -1;
    if (duckdb_query(con, q, &r) == DuckDBSuccess)
        n = duckdb_value_int64(&r, 0, 0);
    else
        fprintf(stderr, "  %s: %s\n", q, duckdb_result_error(&r));
    duckdb_destroy_result(&r);
    duckdb_disconnect(&con);
    return n;
}

static struct cat_generation *acquire(const char *name)
{
    struct cat_dataset *ds = cat_dataset_get(tc.cat, name);
    if (!ds)
        return NULL;
    struct vt_error err = {0};
    struct cat_generation *gen = cat_dataset_acquire(ds, time_mono_ms() + 10000, &err);
    cat_dataset_put(ds);
    return gen;
}

/* Rebuilds `name` and waits; returns whether the build succeeded. */
static bool reload(const char *name, struct vt_error *out_err)
{
    struct cat_build_result *r = NULL;
    struct vt_error err = {0};
    if (cat_reload(tc.cat, name, CAT_REFRESH_MANUAL, &r, &err) != VT_ERR_OK) {
        fprintf(stderr, "  reload %s: %s\n", name, vt_error_message(&err));
        return false;
    }
    bool finished = cat_build_result_wait(r, time_mono_ms() + 30000);
    bool ok = finished && r->ok;
    if (out_err && finished)
        *out_err = r->err;
    cat_build_result_put(r);
    return ok;
}

TEST(the_registry_knows_its_names)
{
    CHECK(cat_has_dataset(tc.cat, "trips"));
    CHECK(!cat_has_dataset(tc.cat, "nope"));
    CHECK(!cat_dataset_get(tc.cat, "nope"));
    char existing[64] = "";
    CHECK(cat_name_taken(tc.cat, "TRIPS", existing, sizeof existing));
    CHECK_EQ_STR(existing, "trips");
    CHECK(!cat_name_taken(tc.cat, "trips2", NULL, 0));
    struct strvec names = {0};
    cat_names(tc.cat, &names);
    CHECK_EQ_INT(names.len, 3); /* registration order */
    if (names.len == 3) {
        CHECK_EQ_STR(names.items[0], "trips");
        CHECK_EQ_STR(names.items[1], "events");
        CHECK_EQ_STR(names.items[2], "flaky");
    }
    strvec_free(&names);
    CHECK(cat_names_known(tc.cat));
    struct vt_error err = {0};
    CHECK_EQ_INT(cat_unknown_name(tc.cat, "nope", &err), VT_ERR_DATASET_NOT_FOUND);
    CHECK_CONTAINS(vt_error_message(&err), "nope");
    /* a reload of a name that is not there */
    struct cat_build_result *r = NULL;
    CHECK_EQ_INT(cat_reload(tc.cat, "nope", CAT_REFRESH_MANUAL, &r, &err),
                 VT_ERR_DATASET_NOT_FOUND);
    CHECK(!r);
}

TEST(a_published_generation_has_its_schema_and_status)
{
    struct cat_generation *gen = acquire("trips");
    CHECK(gen);
    if (!gen)
        return;
    CHECK_EQ_INT(gen->rows, 100);
    CHECK(!gen->lazy);
    CHECK_EQ_INT(gen->n_cols, 4);
    if (gen->n_cols == 4) {
        CHECK_EQ_STR(gen->cols[0].name, "id");
        CHECK_EQ_INT(gen->cols[0].logical, CAT_LOGICAL_INT);
        CHECK_EQ_STR(gen->cols[2].name, "payment");
        CHECK_EQ_INT(gen->cols[2].logical, CAT_LOGICAL_STRING);
        CHECK_EQ_STR(gen->cols[3].type_sql, "DECIMAL(21,1)");
        CHECK_EQ_INT(gen->cols[3].logical, CAT_LOGICAL_DECIMAL);
    }
    CHECK_EQ_INT(strlen(gen->id), 26);
    CHECK_EQ_INT(count_of(gen->relation), 100);
    char id[27] = "";
    CHECK(cat_current_id(tc.cat, "trips", id));
    CHECK_EQ_STR(id, gen->id);
    /* the schema as GET /schema shows it */
    struct strbuf sb;
    sb_init(&sb, 0);
    struct jw w;
    jw_init(&w, &sb);
    cat_write_schema(&w, "trips", gen);
    json_t *doc = json_loads(sb.buf ? sb.buf : "", 0, NULL);
    CHECK(doc);
    if (doc) {
        CHECK_EQ_STR(json_string_value(json_object_get(doc, "name")), "trips");
        CHECK_EQ_INT(json_integer_value(json_object_get(doc, "rows")), 100);
        json_t *cols = json_object_get(doc, "columns");
        CHECK_EQ_INT(json_array_size(cols), 4);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(cols, 1), "name")),
                     "station");
        CHECK(json_is_object(json_object_get(doc, "sample")));
        json_decref(doc);
    }
    sb_release(&sb);
    cat_generation_release(gen);

    struct cat_status st;
    CHECK(cat_status_of(tc.cat, "trips", &st));
    CHECK_EQ_INT(st.state, CAT_PUBLISHED);
    CHECK_EQ_STR(cat_state_name(st.state), "published");
    CHECK_EQ_INT(st.rows, 100);
    CHECK_EQ_INT(st.columns, 4);
    CHECK_EQ_INT(st.kind, CFG_SOURCE_PARQUET);
    CHECK(st.last_error == NULL);
    CHECK_EQ_INT(st.consecutive_failures, 0);
    CHECK_EQ_INT(st.refresh_source, CAT_REFRESH_STARTUP);
    cat_status_free(&st);
    CHECK(!cat_status_of(tc.cat, "nope", &st));
}

TEST(a_reload_swaps_generations_and_readers_keep_theirs)
{
    struct cat_generation *old = acquire("events");
    CHECK(old);
    if (!old)
        return;
    CHECK_EQ_INT(old->rows, 10);
    static const char *const grown[] = {"events", "SELECT range AS id FROM range(25)", NULL};
    CHECK_EQ_INT(testcat_write(tc.dir, grown), 0);
    CHECK(reload("events", NULL));
    struct cat_generation *cur = acquire("events");
    CHECK(cur);
    if (cur) {
        CHECK(strcmp(cur->id, old->id) != 0);
        CHECK_EQ_INT(cur->rows, 25);
        CHECK_EQ_INT(count_of(cur->relation), 25);
        cat_generation_release(cur);
    }
    /* the reader that started before the reload still reads its copy */
    CHECK_EQ_INT(old->rows, 10);
    CHECK_EQ_INT(count_of(old->relation), 10);
    struct cat_status st;
    CHECK(cat_status_of(tc.cat, "events", &st));
    CHECK_EQ_INT(st.rows, 25);
    CHECK_EQ_INT(st.refresh_source, CAT_REFRESH_MANUAL);
    CHECK_EQ_INT(st.builds[CAT_REFRESH_MANUAL][0], 1);
    cat_status_free(&st);
    /* its last reader lets go: the old copy is dropped */
    uint64_t dropped = cat_generations_dropped();
    cat_generation_release(old);
    int64_t until = time_mono_ms() + 10000;
    while (cat_generations_dropped() == dropped && time_mono_ms() < until)
        usleep(5000);
    CHECK(cat_generations_dropped() > dropped);
}

TEST(a_failed_rebuild_leaves_the_previous_generation_serving)
{
    struct cat_generation *before = acquire("flaky");
    CHECK(before);
    if (!before)
        return;
    char id[27];
    memcpy(id, before->id, sizeof id);
    cat_generation_release(before);
    /* the file is no longer Parquet */
    char path[300];
    snprintf(path, sizeof path, "%s/flaky.parquet", tc.dir);
    FILE *f = fopen(path, "w");
    CHECK(f);
    if (!f)
        return;
    fputs("not parquet at all\n", f);
    fclose(f);
    struct vt_error err = {0};
    CHECK(!reload("flaky", &err));
    CHECK(err.code != VT_ERR_OK);
    struct cat_status st;
    CHECK(cat_status_of(tc.cat, "flaky", &st));
    CHECK_EQ_INT(st.state, CAT_PUBLISHED);
    CHECK_EQ_INT(st.rows, 5);
    CHECK_EQ_INT(st.consecutive_failures, 1);
    CHECK(st.last_error != NULL);
    CHECK_EQ_INT(st.builds[CAT_REFRESH_MANUAL][1], 1);
    cat_status_free(&st);
    struct cat_generation *after = acquire("flaky");
    CHECK(after);
    if (after) {
        CHECK_EQ_STR(after->id, id);
        CHECK_EQ_INT(count_of(after->relation), 5);
        cat_generation_release(after);
    }
}

/* A saved query's configuration as POST /api/v1/queries makes it. */
static bool saved_config(const char *name, const char *sql, struct vt_dataset_config *out)
{
    json_t *o = json_pack("{s:s,s:s}", "name", name, "sql", sql);
    struct vt_error err = {0};
    config_dataset_defaults(out);
    enum vt_err rc = config_dataset_from_json(o, out, &err);
    json_decref(o);
    if (rc != VT_ERR_OK)
        fprintf(stderr, "  %s: %s\n", name, vt_error_message(&err));
    return rc == VT_ERR_OK;
}

static enum vt_err register_saved(const char *name, const char *sql, struct vt_error *err)
{
    struct vt_dataset_config ds;
    if (!saved_config(name, sql, &ds))
        return VT_ERR_INVALID_CONFIG;
    enum vt_err rc = cat_query_infer(tc.cat, NULL, &ds, false, err);
    struct cat_build_result *r = NULL;
    struct cat_saved_opts opts = {.kind = CAT_SAVED_TEMP, .remove_on_failure = true};
    if (rc == VT_ERR_OK)
        rc = cat_register_saved(tc.cat, &ds, &opts, &r, err);
    if (rc == VT_ERR_OK) {
        if (!cat_build_result_wait(r, time_mono_ms() + 30000) || !r->ok) {
            rc = r->finished ? r->err.code : VT_ERR_TIMEOUT;
            *err = r->err;
        }
        cat_build_result_put(r);
    }
    config_dataset_free(&ds);
    return rc;
}

TEST(saved_queries_depend_on_what_their_sql_reads)
{
    /* the gate infers depends_on, whatever a client might claim */
    struct vt_dataset_config ds;
    CHECK(saved_config("cheap", "SELECT id, fare FROM trips WHERE fare < 15", &ds));
    struct vt_error err = {0};
    CHECK_EQ_INT(cat_query_infer(tc.cat, NULL, &ds, false, &err), VT_ERR_OK);
    CHECK_EQ_INT(ds.depends_on.len, 1);
    if (ds.depends_on.len == 1)
        CHECK_EQ_STR(ds.depends_on.items[0], "trips");
    config_dataset_free(&ds);
    /* SQL the gate refuses never registers */
    CHECK(saved_config("bad", "SELECT * FROM read_csv('/etc/passwd')", &ds));
    CHECK(cat_query_infer(tc.cat, NULL, &ds, false, &err) != VT_ERR_OK);
    config_dataset_free(&ds);
    CHECK(saved_config("ghost", "SELECT * FROM nowhere", &ds));
    CHECK_EQ_INT(cat_query_infer(tc.cat, NULL, &ds, false, &err), VT_ERR_SQL_UNKNOWN_TABLE);
    config_dataset_free(&ds);

    CHECK_EQ_INT(register_saved("cheap", "SELECT id, fare FROM trips WHERE fare < 15", &err),
                 VT_ERR_OK);
    CHECK_EQ_INT(register_saved("cheaper", "SELECT id FROM cheap WHERE fare < 3", &err),
                 VT_ERR_OK);
    /* the name is taken, ignoring case */
    CHECK_EQ_INT(register_saved("CHEAP", "SELECT 1 AS x", &err), VT_ERR_NAME_TAKEN);
    struct cat_generation *gen = acquire("cheap");
    CHECK(gen);
    if (gen) {
        CHECK_EQ_INT(gen->rows, 10); /* fare = 1.5 * id < 15 */
        cat_generation_release(gen);
    }
    struct cat_saved_summary s;
    CHECK(cat_saved_of(tc.cat, "cheaper", &s));
    CHECK_EQ_INT(s.kind, CAT_SAVED_TEMP);
    CHECK_EQ_INT(s.rows, 2);
    CHECK_EQ_INT(s.depends_on.len, 1);
    if (s.depends_on.len == 1)
        CHECK_EQ_STR(s.depends_on.items[0], "cheap");
    struct cat_saved_summary *list = NULL;
    size_t n = cat_saved_list(tc.cat, &list);
    CHECK_EQ_INT(n, 2);
    cat_saved_list_free(list, n);
    free(s.name);
    strvec_free(&s.depends_on);
    /* a config dataset is no saved query */
    CHECK(cat_saved_of(tc.cat, "trips", &s));
    CHECK_EQ_INT(s.kind, CAT_SAVED_NONE);
    free(s.name);
    strvec_free(&s.depends_on);
    CHECK(!cat_saved_of(tc.cat, "nope", &s));

    /* removal: not a config dataset, not while others depend on it */
    struct strvec deps = {0};
    enum cat_saved kind = CAT_SAVED_NONE;
    CHECK_EQ_INT(cat_remove_saved(tc.cat, "trips", NULL, NULL, &err), VT_ERR_NOT_DELETABLE);
    CHECK_EQ_INT(cat_remove_saved(tc.cat, "cheap", &deps, NULL, &err), VT_ERR_HAS_DEPENDENTS);
    CHECK_EQ_INT(deps.len, 1);
    if (deps.len == 1)
        CHECK_EQ_STR(deps.items[0], "cheaper");
    strvec_free(&deps);
    CHECK_EQ_INT(cat_remove_saved(tc.cat, "cheaper", NULL, &kind, &err), VT_ERR_OK);
    CHECK_EQ_INT(kind, CAT_SAVED_TEMP);
    CHECK_EQ_INT(cat_remove_saved(tc.cat, "cheap", NULL, NULL, &err), VT_ERR_OK);
    CHECK(!cat_has_dataset(tc.cat, "cheap"));
    CHECK_EQ_INT(cat_remove_saved(tc.cat, "cheap", NULL, NULL, &err), VT_ERR_DATASET_NOT_FOUND);
}

int main(void)
{
    static const char *const files[] = {
        "trips", "SELECT range AS id, range % 7 AS station, 'card' AS payment, "
                 "range * 1.5 AS fare FROM range(100)",
        "events", "SELECT range AS id FROM range(10)",
        "flaky", "SELECT range AS id FROM range(5)",
        NULL,
    };
    if (testcat_open(&tc, files,
                     "[[dataset]]\nname = \"trips\"\nsource.kind = \"parquet\"\n"
                     "source.location = \"%s/trips.parquet\"\n"
                     "[[dataset]]\nname = \"events\"\nsource.kind = \"parquet\"\n"
                     "source.location = \"%s/events.parquet\"\n"
                     "[[dataset]]\nname = \"flaky\"\nsource.kind = \"parquet\"\n"
                     "source.location = \"%s/flaky.parquet\"\n") != 0) {
        fprintf(stderr, "cannot open the test catalog\n");
        return 1;
    }
    static const struct tl_case cases[] = {
        TEST_CASE(the_registry_knows_its_names),
        TEST_CASE(a_published_generation_has_its_schema_and_status),
        TEST_CASE(a_reload_swaps_generations_and_readers_keep_theirs),
        TEST_CASE(a_failed_rebuild_leaves_the_previous_generation_serving),
        TEST_CASE(saved_queries_depend_on_what_their_sql_reads),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    testcat_close(&tc);
    return rc;
}
