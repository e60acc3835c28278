/*
 * The real Delta tables in ../shared/delta-tables (written by Spark and
 * delta-rs), read in place. Every table must either serve exactly the rows of
 * its current snapshot, fail alone with an error naming an unsupported reader
 * feature, or be reported empty. "Exactly the rows" is checked against an
 * independent reading written here in SQL: the log replayed by DuckDB
 * (read_ndjson over the commits, read_parquet over a checkpoint, last action
 * per URL-decoded path wins), then read_parquet over each active file with its
 * partition values added from the log's JSON.
 *
 * The corpus is found by td_find_corpus() ($VT_DELTA_CORPUS, else
 * shared/delta-tables above the repository); without it the tests fail.
 */
#include <dirent.h>

#include "delta_testutil.h"

static char corpus[1024];

static bool find_corpus(void)
{
    return td_find_corpus(corpus, sizeof corpus);
}

/* Independent replay: fills table `active(p, pv, card)` for the table in dir.
 * A logical file is (path, deletion vector id): the newest action on each
 * wins (the protocol's reconciliation), so a remove of a file's old vector
 * and the add of its new one meet in any order. card: rows its vector
 * deletes (0 without one). */
static bool indep_active(struct tduck *t, const char *dir)
{
    char p0[2048];
    snprintf(p0, sizeof p0, "%s/_delta_log/00000000000000000000.json", dir);
    const char *dvt = "STRUCT(storageType VARCHAR, pathOrInlineDv VARCHAR, \"offset\" BIGINT, "
                      "sizeInBytes BIGINT, cardinality BIGINT)";
    td_exec(t, "DROP TABLE IF EXISTS acts");
    td_exec(t, "DROP TABLE IF EXISTS active");
    long long cp = -1;
    bool later_json = false;
    if (access(p0, F_OK) != 0) {
        /* No commit 0: start from the newest single-file Parquet checkpoint. */
        char ld[2048];
        snprintf(ld, sizeof ld, "%s/_delta_log", dir);
        DIR *d = opendir(ld);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            long long v;
            char rest[64];
            if (sscanf(de->d_name, "%20lld.%63s", &v, rest) == 2 &&
                strcmp(rest, "checkpoint.parquet") == 0 && v > cp)
                cp = v;
        }
        if (d)
            rewinddir(d);
        while (d && (de = readdir(d))) {
            long long v;
            char rest[64];
            if (sscanf(de->d_name, "%20lld.%63s", &v, rest) == 2 && strcmp(rest, "json") == 0 &&
                v > cp)
                later_json = true;
        }
        if (d)
            closedir(d);
        if (cp < 0)
            return false;
        if (!td_exec(t,
                     "CREATE TABLE acts AS SELECT %lld::BIGINT AS v, url_decode(\"add\".path) AS p, "
                     "coalesce(json_extract_string(j, '$.deletionVector.storageType') || "
                     "json_extract_string(j, '$.deletionVector.pathOrInlineDv') || "
                     "coalesce('@' || json_extract_string(j, '$.deletionVector.offset'), ''), '') "
                     "AS dvid, true AS is_add, to_json(\"add\".partitionValues)::VARCHAR AS pv, "
                     "coalesce(CAST(json_extract_string(j, '$.deletionVector.cardinality') AS "
                     "BIGINT), 0) AS card FROM (SELECT *, to_json(\"add\") AS j FROM "
                     "read_parquet('%s/_delta_log/%020lld.checkpoint.parquet')) WHERE \"add\" IS "
                     "NOT NULL",
                     cp, dir, cp))
            return false;
    } else {
        later_json = true;
        if (!td_exec(t, "CREATE TABLE acts (v BIGINT, p VARCHAR, dvid VARCHAR, is_add BOOLEAN, "
                        "pv VARCHAR, card BIGINT)"))
            return false;
    }
    if (later_json &&
        !td_exec(t,
                 "INSERT INTO acts SELECT v, p, coalesce(dv.storageType || dv.pathOrInlineDv || "
                 "coalesce('@' || dv.\"offset\", ''), '') AS dvid, is_add, pv, "
                 "coalesce(dv.cardinality, 0) FROM (SELECT CAST(regexp_extract(filename, "
                 "'(\\d{20})\\.json$', 1) AS BIGINT) AS v, url_decode(coalesce(\"add\".path, "
                 "remove.path)) AS p, \"add\" IS NOT NULL AS is_add, "
                 "to_json(\"add\".partitionValues)::VARCHAR AS pv, "
                 "coalesce(\"add\".deletionVector, remove.deletionVector) AS dv FROM "
                 "read_ndjson('%s/_delta_log/*.json', filename = true, columns = {'add': "
                 "'STRUCT(path VARCHAR, partitionValues MAP(VARCHAR, VARCHAR), deletionVector %s)', "
                 "'remove': 'STRUCT(path VARCHAR, deletionVector %s)'}) WHERE "
                 "regexp_matches(filename, '/\\d{20}\\.json$') AND (\"add\" IS NOT NULL OR remove "
                 "IS NOT NULL)) WHERE v > %lld",
                 dir, dvt, dvt, cp))
        return false;
    return td_exec(t, "CREATE TABLE active AS SELECT p, pv, card FROM (SELECT *, row_number() "
                      "OVER (PARTITION BY p, dvid ORDER BY v DESC) AS rn FROM acts) WHERE rn = 1 "
                      "AND is_add ORDER BY p");
}

/* Column mapping: the table_with_column_mapping physical names, hand-copied
 * from its schema so the independent side does not reuse our mapping code. */
static const char *mapping_name(const char *logical)
{
    if (strcmp(logical, "Company Very Short") == 0)
        return "col-173b4db9-b5ad-427f-9e75-516aae37fbbb";
    if (strcmp(logical, "Super Name") == 0)
        return "col-3877fd94-0973-4941-ac6b-646849a1ff65";
    if (strcmp(logical, "newid") == 0) /* table_with_partitioning_mapping: renamed from id */
        return "id";
    return logical;
}

/* Builds table `indep` from `active`: each file's rows plus its partition values. */
static bool indep_rows(struct tduck *t, const char *dir, const struct source_snapshot *snap,
                       const char *(*phys)(const char *))
{
    duckdb_result r;
    if (duckdb_query(t->con, "SELECT p, pv FROM active ORDER BY p", &r) != DuckDBSuccess) {
        duckdb_destroy_result(&r);
        return false;
    }
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "CREATE TABLE indep AS ");
    idx_t n = duckdb_row_count(&r);
    for (idx_t i = 0; i < n; i++) {
        char *p = duckdb_value_varchar(&r, 0, i);
        char *pv = duckdb_value_is_null(&r, 1, i) ? NULL : duckdb_value_varchar(&r, 1, i);
        if (i)
            sb_adds(&sql, " UNION ALL BY NAME ");
        sb_adds(&sql, "SELECT *");
        for (size_t k = 0; k < snap->n_partitions; k++) {
            const char *name = snap->partition_columns[k];
            const char *key = phys ? phys(name) : name;
            struct strbuf path;
            sb_init(&path, 0);
            sb_adds(&path, "$.\"");
            sb_adds(&path, key);
            sb_adds(&path, "\"");
            sb_adds(&sql, ", ");
            bool blob = strcmp(snap->partition_types[k], "BLOB") == 0;
            sb_adds(&sql, blob ? "encode(" : "CAST(");
            sb_adds(&sql, "NULLIF(json_extract_string(");
            if (pv)
                sb_add_sql_string(&sql, pv);
            else
                sb_adds(&sql, "NULL");
            sb_adds(&sql, ", ");
            sb_add_sql_string(&sql, path.buf);
            sb_adds(&sql, "), '')");
            if (blob)
                sb_adds(&sql, ")");
            else
                sb_addf(&sql, " AS %s)", snap->partition_types[k]);
            sb_adds(&sql, " AS ");
            sb_add_sql_ident(&sql, phys ? phys(name) : name);
            sb_release(&path);
        }
        struct strbuf f;
        sb_init(&f, 0);
        sb_addf(&f, "%s/%s", dir, p);
        sb_adds(&sql, " FROM read_parquet(");
        sb_add_sql_string(&sql, f.buf);
        sb_adds(&sql, ", hive_partitioning = false)");
        sb_release(&f);
        duckdb_free(p);
        duckdb_free(pv);
    }
    duckdb_destroy_result(&r);
    td_exec(t, "DROP TABLE IF EXISTS indep");
    bool ok = n > 0 && td_exec(t, "%s", sql.buf);
    sb_release(&sql);
    return ok;
}

/* Our active set (decoded paths, sorted) equals the independent one. */
static void check_active_set(struct tduck *t, const char *dir)
{
    struct vt_dataset_config ds = {0};
    ds.name = "corpus";
    ds.kind = CFG_SOURCE_DELTA;
    ds.location = (char *)dir;
    struct delta_table *tbl = NULL;
    struct vt_error err = {0};
    enum vt_err rc = delta_table_open(&ds, NULL, &tbl, NULL, &err);
    CHECK_EQ_INT(rc, VT_ERR_OK);
    if (rc != VT_ERR_OK) {
        fprintf(stderr, "  %s: %s\n", dir, vt_error_message(&err));
        return;
    }
    td_exec(t, "DROP TABLE IF EXISTS ours");
    td_exec(t, "CREATE TABLE ours (p VARCHAR)");
    for (size_t i = 0; i < delta_table_file_count(tbl); i++) {
        const char *lp = delta_table_file_log_path(tbl, i);
        char dec[4096];
        CHECK(delta_path_decode(lp, dec, sizeof dec));
        struct strbuf q;
        sb_init(&q, 0);
        sb_adds(&q, "INSERT INTO ours VALUES (");
        sb_add_sql_string(&q, dec);
        sb_adds(&q, ")");
        td_exec(t, "%s", q.buf);
        sb_release(&q);
    }
    long long diff1 = td_int(t, "SELECT count(*) FROM (SELECT p FROM ours EXCEPT ALL SELECT p "
                                "FROM active)");
    long long diff2 = td_int(t, "SELECT count(*) FROM (SELECT p FROM active EXCEPT ALL SELECT p "
                                "FROM ours)");
    if (diff1 || diff2)
        fprintf(stderr, "  %s: active file sets differ (%lld / %lld)\n", dir, diff1, diff2);
    CHECK_EQ_INT(diff1, 0);
    CHECK_EQ_INT(diff2, 0);
    delta_table_close(tbl);
}

static enum vt_err resolve(const char *dir, struct source_snapshot *snap, struct vt_error *err)
{
    struct vt_dataset_config ds = {0};
    ds.name = "corpus";
    ds.kind = CFG_SOURCE_DELTA;
    ds.location = (char *)dir;
    return source_delta_resolve(&ds, NULL, snap, NULL, err);
}

/* Tables that must serve their current snapshot. */
static const char *serving[] = {
    "COVID-19_NYT", "cdc_ict_table", "cdf-table", "cdf-table-non-partitioned",
    "checkpoint-cdf-table", "checkpoint-v2-table", "delta-0.2.0", "delta-0.8.0",
    "delta-0.8.0-date", "delta-0.8.0-null-partition", "delta-0.8.0-numeric-partition",
    "delta-0.8.0-partitioned", "delta-0.8.0-special-partition", "delta-1.2.1-only-struct-stats",
    "delta-2.2.0-partitioned-types", "delta-checkpoint-stats-optional", "delta-stats-optional",
    "http_requests", "issue_1374", "partition-type-primitives", "python-0.25.5-checkpoint",
    "simple_table", "simple_table_with_cdc", "simple_table_with_checkpoint",
    "table-without-dv-small", "table_failed_last_checkpoint_update", "table_with_column_mapping",
    "table_with_edge_timestamps", "table_with_null_stats_in_notnull_struct",
    "golden/data-reader-array-primitives",
    /* deletion vectors */
    "cdf-table-with-cdc-and-dvs", "table-with-dv-small", "table_with_deletion_logs",
    "table_with_liquid_clustering", "table_with_partitioning_mapping",
};

TEST(corpus_tables_serve_their_snapshot)
{
    if (!find_corpus()) {
        CHECK(false);
        return;
    }
    struct tduck t;
    td_open(&t);
    for (size_t i = 0; i < sizeof serving / sizeof serving[0]; i++) {
        char dir[2048];
        snprintf(dir, sizeof dir, "%s/%s", corpus, serving[i]);
        struct source_snapshot snap;
        struct vt_error err = {0};
        int before = tl_failed_checks;
        enum vt_err rc = resolve(dir, &snap, &err);
        CHECK_EQ_INT(rc, VT_ERR_OK);
        if (rc != VT_ERR_OK) {
            fprintf(stderr, "  %s: %s\n", serving[i], vt_error_message(&err));
            continue;
        }
        bool mapped = strcmp(serving[i], "table_with_column_mapping") == 0 ||
                      strcmp(serving[i], "table_with_partitioning_mapping") == 0;
        CHECK(indep_active(&t, dir));
        check_active_set(&t, dir);
        CHECK(indep_rows(&t, dir, &snap, mapped ? mapping_name : NULL));
        long long deleted = td_int(&t, "SELECT coalesce(sum(card), 0) FROM active");
        long long rows = td_compare_deleted(&t, &snap, mapped ? mapping_name : NULL, deleted);
        CHECK(rows > 0);
        if (tl_failed_checks != before)
            fprintf(stderr, "  ^ in table %s\n", serving[i]);
        td_release(&snap);
    }
    td_close(&t);
}

TEST(corpus_unsupported_features_fail_alone)
{
    if (!find_corpus()) {
        CHECK(false);
        return;
    }
    static const struct {
        const char *table;
        const char *features[3];
    } cases[] = {
        {"simple_table_features", {"blahabl"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[2048];
        snprintf(dir, sizeof dir, "%s/%s", corpus, cases[i].table);
        struct source_snapshot snap;
        struct vt_error err = {0};
        enum vt_err rc = resolve(dir, &snap, &err);
        CHECK_EQ_INT(rc, VT_ERR_SOURCE_UNSUPPORTED);
        for (size_t k = 0; k < 3 && cases[i].features[k]; k++)
            CHECK_CONTAINS(vt_error_message(&err), cases[i].features[k]);
        if (rc == VT_ERR_OK)
            td_release(&snap);
    }
}

TEST(corpus_empty_tables_are_source_empty)
{
    if (!find_corpus()) {
        CHECK(false);
        return;
    }
    const char *empty[] = {"delta-0.8-empty", "concurrent_workers", "delta-live-table",
                           "issue-2152", "simple_commit"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        char dir[2048];
        snprintf(dir, sizeof dir, "%s/%s", corpus, empty[i]);
        struct source_snapshot snap;
        struct vt_error err = {0};
        enum vt_err rc = resolve(dir, &snap, &err);
        CHECK_EQ_INT(rc, VT_ERR_SOURCE_EMPTY);
        if (rc == VT_ERR_OK)
            td_release(&snap);
    }
}

/* These logs name data files the corpus does not contain (it holds their
 * logs only). The replay must still find the right active set, and the
 * resolve must fail with a message naming a missing file. */
TEST(corpus_tables_without_data_files)
{
    if (!find_corpus()) {
        CHECK(false);
        return;
    }
    const char *tables[] = {"checkpoint_with_partitions", "checkpoints", "checkpoints_vacuumed",
                            "latest_not_checkpointed", "with_checkpoint_no_last_checkpoint",
                            "table-with-domain-metadata",
                            "spark-variant-stable-feature-checkpoint"};
    struct tduck t;
    td_open(&t);
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char dir[2048];
        snprintf(dir, sizeof dir, "%s/%s", corpus, tables[i]);
        CHECK(indep_active(&t, dir));
        check_active_set(&t, dir);
        struct source_snapshot snap;
        struct vt_error err = {0};
        enum vt_err rc = resolve(dir, &snap, &err);
        CHECK_EQ_INT(rc, VT_ERR_SOURCE_UNAVAILABLE);
        CHECK_CONTAINS(vt_error_message(&err), "is missing");
        if (rc == VT_ERR_OK)
            td_release(&snap);
    }
    td_close(&t);
}

/* Variant columns are served as JSON: every row of the files, each variant
 * decoded (the values are {"key": id} objects, nested in arrays, structs and
 * maps). The e2e test (test_delta_corpus.py) compares every value with a
 * decoder written in Python. */
TEST(corpus_variant_tables_serve_json)
{
    if (!find_corpus()) {
        CHECK(false);
        return;
    }
    const char *tables[] = {"spark-variant-checkpoint", "spark-shredded-variant-preview-delta"};
    struct tduck t;
    td_open(&t);
    for (size_t i = 0; i < 2; i++) {
        char dir[2048];
        snprintf(dir, sizeof dir, "%s/%s", corpus, tables[i]);
        struct source_snapshot snap;
        struct vt_error err = {0};
        enum vt_err rc = resolve(dir, &snap, &err);
        CHECK_EQ_INT(rc, VT_ERR_OK);
        if (rc != VT_ERR_OK) {
            fprintf(stderr, "  %s: %s\n", tables[i], vt_error_message(&err));
            continue;
        }
        CHECK_EQ_STR(snap.schema_types[1], "JSON");
        CHECK(indep_active(&t, dir));
        CHECK(indep_rows(&t, dir, &snap, NULL));
        td_exec(&t, "DROP TABLE IF EXISTS mine");
        CHECK(td_exec(&t, "CREATE TABLE mine AS %s", snap.select_sql));
        CHECK_EQ_INT(td_int(&t, "SELECT count(*) FROM mine"),
                     td_int(&t, "SELECT count(*) FROM indep"));
        /* Each row's variant is {"key": id}, wherever it is nested. */
        CHECK_EQ_INT(td_int(&t, "SELECT count(*) FROM mine WHERE v::VARCHAR <> "
                                "'{\"key\":' || id || '}' OR "
                                "struct_of_variants.v::VARCHAR <> v::VARCHAR"),
                     0);
        CHECK(td_int(&t, "SELECT count(*) FROM mine WHERE array_of_variants[1]::VARCHAR = "
                         "v::VARCHAR") > 0);
        td_release(&snap);
    }
    td_close(&t);
}

/* Every table directory of the corpus is covered by one of the lists above. */
TEST(corpus_every_table_is_classified)
{
    if (!find_corpus()) {
        CHECK(false);
        return;
    }
    const char *known[] = {
        "cdf-table-with-cdc-and-dvs", "simple_table_features",
        "spark-shredded-variant-preview-delta", "spark-variant-checkpoint",
        "spark-variant-stable-feature-checkpoint", "table-with-domain-metadata",
        "table-with-dv-small", "table_with_deletion_logs", "table_with_liquid_clustering",
        "table_with_partitioning_mapping", "delta-0.8-empty", "concurrent_workers",
        "delta-live-table", "issue-2152", "simple_commit", "checkpoint_with_partitions",
        "checkpoints", "checkpoints_vacuumed", "latest_not_checkpointed",
        "with_checkpoint_no_last_checkpoint", "golden", "table-with-domain-metadata"};
    DIR *d = opendir(corpus);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", corpus, de->d_name);
        struct stat st;
        if (de->d_name[0] == '.' || stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        bool found = false;
        for (size_t i = 0; i < sizeof serving / sizeof serving[0] && !found; i++)
            found = strcmp(serving[i], de->d_name) == 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0] && !found; i++)
            found = strcmp(known[i], de->d_name) == 0;
        if (!found)
            fprintf(stderr, "  unclassified corpus table: %s\n", de->d_name);
        CHECK(found);
    }
    if (d)
        closedir(d);
}

RUN_TESTS(TEST_CASE(corpus_tables_serve_their_snapshot),
          TEST_CASE(corpus_unsupported_features_fail_alone),
          TEST_CASE(corpus_empty_tables_are_source_empty),
          TEST_CASE(corpus_tables_without_data_files), TEST_CASE(corpus_variant_tables_serve_json),
          TEST_CASE(corpus_every_table_is_classified))
