/*
 * Delta tables built by hand (Parquet written by DuckDB + commit JSON written
 * here) for what the real corpus lacks: a commit arriving between two
 * resolves, removes, checkpoints (single and multi-part) followed by commits,
 * stale/missing _last_checkpoint, schema evolution, typed and odd partition
 * values, column mapping with nested fields, glob characters in file names,
 * protocol features, empty tables and broken logs.
 */
#include <errno.h>
#include <jansson.h>

#include "delta_testutil.h"

static struct tduck T;

static void tb_new(char *dir)
{
    strcpy(dir, "/tmp/vt-delta-test-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char log[600];
    snprintf(log, sizeof log, "%s/_delta_log", dir);
    mkdir(log, 0700);
}

static void tb_rm(const char *dir)
{
    td_sh("rm -rf '%s'", dir);
}

static void tb_commit(const char *dir, int version, const char *text)
{
    char p[700];
    snprintf(p, sizeof p, "%s/_delta_log/%020d.json", dir, version);
    td_write_file(p, text);
}

/* Writes dir/rel as Parquet from a SELECT (subdirectories created). */
static void tb_parquet(const char *dir, const char *rel, const char *select)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    td_sh("mkdir -p '%s'", p);
    *slash = '/';
    struct strbuf q;
    sb_init(&q, 0);
    sb_addf(&q, "COPY (%s) TO ", select);
    sb_add_sql_string(&q, p);
    sb_adds(&q, " (FORMAT parquet)");
    CHECK(td_exec(&T, "%s", q.buf));
    sb_release(&q);
}

static const char *PROTO1 = "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n";

/* A metaData line with the given schema fields (JSON array text). */
static char *tb_meta(const char *fields, const char *partcols, const char *config)
{
    char schema[4096];
    snprintf(schema, sizeof schema, "{\"type\":\"struct\",\"fields\":%s}", fields);
    json_t *m = json_object();
    json_object_set_new(m, "id", json_string("test"));
    json_t *fmt = json_pack("{s:s,s:{}}", "provider", "parquet", "options");
    json_object_set_new(m, "format", fmt);
    json_object_set_new(m, "schemaString", json_string(schema));
    json_object_set_new(m, "partitionColumns", json_loads(partcols ? partcols : "[]", 0, NULL));
    json_object_set_new(m, "configuration", json_loads(config ? config : "{}", 0, NULL));
    json_t *root = json_object();
    json_object_set_new(root, "metaData", m);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    size_t n = strlen(s);
    s = realloc(s, n + 2);
    s[n] = '\n';
    s[n + 1] = '\0';
    return s;
}

static char *tb_add(const char *path, const char *pv_json, long long size)
{
    char *s = malloc(strlen(path) + (pv_json ? strlen(pv_json) : 2) + 128);
    sprintf(s, "{\"add\":{\"path\":\"%s\",\"partitionValues\":%s,\"size\":%lld,"
               "\"modificationTime\":0,\"dataChange\":true}}\n",
            path, pv_json ? pv_json : "{}", size);
    return s;
}

#define F(name, type) "{\"name\":\"" name "\",\"type\":" type ",\"nullable\":true,\"metadata\":{}}"

static enum vt_err resolve_dir(const char *dir, struct source_snapshot *snap, struct vt_error *err)
{
    struct vt_dataset_config ds = {0};
    ds.name = "built";
    ds.kind = CFG_SOURCE_DELTA;
    ds.location = (char *)dir;
    vt_error_clear(err);
    return source_delta_resolve(&ds, NULL, snap, NULL, err);
}

/* Loads the snapshot into table mine and returns one text scalar from `sql`. */
static char *load_and(const struct source_snapshot *snap, const char *sql)
{
    td_exec(&T, "DROP TABLE IF EXISTS mine");
    if (!td_exec(&T, "CREATE TABLE mine AS %s", snap->select_sql))
        return NULL;
    return td_text(&T, sql);
}

static void commit3(const char *dir, int v, const char *a, const char *b, const char *c)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, a ? a : "");
    sb_adds(&sb, b ? b : "");
    sb_adds(&sb, c ? c : "");
    tb_commit(dir, v, sb.buf);
    sb_release(&sb);
}

TEST(new_commit_is_seen_by_the_next_resolve)
{
    char dir[64];
    tb_new(dir);
    tb_parquet(dir, "f1.parquet", "SELECT * FROM (VALUES (1::BIGINT, 'a'), (2, 'b')) t(id, name)");
    tb_parquet(dir, "f2.parquet", "SELECT 3::BIGINT AS id, 'c' AS name");
    char *meta = tb_meta("[" F("id", "\"long\"") "," F("name", "\"string\"") "]", NULL, NULL);
    char *a1 = tb_add("f1.parquet", NULL, 100), *a2 = tb_add("f2.parquet", NULL, 50);
    commit3(dir, 0, PROTO1, meta, a1);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    char *v = load_and(&snap, "SELECT sum(id) || '/' || string_agg(name, '' ORDER BY id) FROM mine");
    CHECK_EQ_STR(v, "3/ab");
    CHECK_EQ_STR(snap.version, "0");
    CHECK_EQ_INT(snap.total_bytes, 100);
    free(v);
    td_release(&snap);
    commit3(dir, 1, a2, NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    v = load_and(&snap, "SELECT sum(id) || '/' || string_agg(name, '' ORDER BY id) FROM mine");
    CHECK_EQ_STR(v, "6/abc");
    CHECK_EQ_STR(snap.version, "1");
    CHECK_EQ_INT(snap.total_bytes, 150);
    free(v);
    td_release(&snap);
    int64_t bytes = 0;
    struct vt_dataset_config ds = {.name = "m", .kind = CFG_SOURCE_DELTA, .location = dir};
    CHECK_EQ_INT(source_delta_measure(&ds, NULL, &bytes, NULL, &err), VT_ERR_OK);
    CHECK_EQ_INT(bytes, 150);
    free(meta);
    free(a1);
    free(a2);
    tb_rm(dir);
}

TEST(removes_and_encoded_paths)
{
    char dir[64];
    tb_new(dir);
    tb_parquet(dir, "f1.parquet", "SELECT 1::BIGINT AS id");
    tb_parquet(dir, "dir with space/part 2%.parquet", "SELECT 2::BIGINT AS id");
    tb_parquet(dir, "f3.parquet", "SELECT 3::BIGINT AS id");
    char *meta = tb_meta("[" F("id", "\"long\"") "]", NULL, NULL);
    char *a1 = tb_add("f1.parquet", NULL, 1);
    char *a2 = tb_add("dir%20with%20space/part%202%25.parquet", NULL, 1);
    char *a3 = tb_add("f3.parquet", NULL, 1);
    commit3(dir, 0, PROTO1, meta, a1);
    commit3(dir, 1, a2, a3, NULL);
    /* The remove spells the path with different (equivalent) escaping. */
    commit3(dir, 2,
            "{\"remove\":{\"path\":\"f1.parquet\",\"deletionTimestamp\":1,\"dataChange\":true}}\n",
            "{\"remove\":{\"path\":\"f%33.parquet\",\"deletionTimestamp\":1,\"dataChange\":true}}\n",
            "{\"commitInfo\":{\"operation\":\"DELETE\"}}\n");
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    char *v = load_and(&snap, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM mine");
    CHECK_EQ_STR(v, "2");
    CHECK_EQ_INT(snap.n_files, 1);
    free(v);
    td_release(&snap);
    /* Re-adding a removed file brings it back. */
    commit3(dir, 3, a1, NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    v = load_and(&snap, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM mine");
    CHECK_EQ_STR(v, "1,2");
    free(v);
    td_release(&snap);
    free(meta);
    free(a1);
    free(a2);
    free(a3);
    tb_rm(dir);
}

static const char *CP_TABLE =
    "CREATE OR REPLACE TABLE cp (protocol STRUCT(minReaderVersion INTEGER, minWriterVersion "
    "INTEGER), metaData STRUCT(id VARCHAR, format STRUCT(provider VARCHAR, options MAP(VARCHAR, "
    "VARCHAR)), schemaString VARCHAR, partitionColumns VARCHAR[], configuration MAP(VARCHAR, "
    "VARCHAR)), \"add\" STRUCT(path VARCHAR, partitionValues MAP(VARCHAR, VARCHAR), size BIGINT, "
    "modificationTime BIGINT, dataChange BOOLEAN, stats VARCHAR), remove STRUCT(path VARCHAR, "
    "deletionTimestamp BIGINT, dataChange BOOLEAN), txn STRUCT(appId VARCHAR, version BIGINT))";

static void cp_insert_common(const char *schema_json, const char *partcols)
{
    td_exec(&T, "%s", CP_TABLE);
    td_exec(&T, "INSERT INTO cp (protocol) VALUES ({'minReaderVersion': 1, 'minWriterVersion': 2})");
    struct strbuf q;
    sb_init(&q, 0);
    sb_adds(&q, "INSERT INTO cp (metaData) VALUES ({'id': 't', 'format': {'provider': 'parquet', "
                "'options': MAP {}}, 'schemaString': ");
    sb_add_sql_string(&q, schema_json);
    sb_addf(&q, ", 'partitionColumns': %s::VARCHAR[], 'configuration': MAP {}})", partcols);
    td_exec(&T, "%s", q.buf);
    sb_release(&q);
    td_exec(&T, "INSERT INTO cp (txn) VALUES ({'appId': 'x', 'version': 1})");
}

static void cp_add(const char *path, const char *pv_map)
{
    td_exec(&T,
            "INSERT INTO cp (\"add\") VALUES ({'path': '%s', 'partitionValues': %s, 'size': 10, "
            "'modificationTime': 0, 'dataChange': false, 'stats': '{\"numRecords\":1}'})",
            path, pv_map);
}

static void cp_write(const char *dir, const char *name, const char *where)
{
    td_exec(&T, "COPY (SELECT * FROM cp %s) TO '%s/_delta_log/%s' (FORMAT parquet)", where, dir,
            name);
}

TEST(checkpoint_then_commits_with_vacuumed_history)
{
    char dir[64];
    tb_new(dir);
    const char *schema = "{\"type\":\"struct\",\"fields\":[" F("id", "\"long\"") ","
                         F("p", "\"integer\"") "]}";
    for (int i = 1; i <= 4; i++) {
        char rel[64], sel[128];
        snprintf(rel, sizeof rel, "p=%d/f%d.parquet", i % 2, i);
        snprintf(sel, sizeof sel, "SELECT %d::BIGINT AS id", i);
        tb_parquet(dir, rel, sel);
    }
    /* Checkpoint 2 holds f1, f2 and a tombstone (must not matter); commits 0
     * and 1 are gone (log cleanup), 3 and 4 follow the checkpoint. */
    cp_insert_common(schema, "['p']");
    cp_add("p=1/f1.parquet", "MAP {'p': '1'}");
    cp_add("p=0/f2.parquet", "MAP {'p': '0'}");
    td_exec(&T, "INSERT INTO cp (remove) VALUES ({'path': 'p=0/f0.parquet', 'deletionTimestamp': "
                "1, 'dataChange': true})");
    cp_write(dir, "00000000000000000002.checkpoint.parquet", "");
    char p[700];
    snprintf(p, sizeof p, "%s/_delta_log/_last_checkpoint", dir);
    td_write_file(p, "{\"version\":2,\"size\":5}");
    char *a3 = tb_add("p=1/f3.parquet", "{\"p\":\"1\"}", 10);
    char *a4 = tb_add("p=0/f4.parquet", "{\"p\":\"0\"}", 10);
    commit3(dir, 3, a3, NULL, NULL);
    commit3(dir, 4, a4,
            "{\"remove\":{\"path\":\"p=1/f1.parquet\",\"deletionTimestamp\":1,\"dataChange\":true}}"
            "\n",
            NULL);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    char *v = load_and(&snap, "SELECT string_agg(id || ':' || p, ',' ORDER BY id) FROM mine");
    CHECK_EQ_STR(v, "2:0,3:1,4:0");
    CHECK_EQ_STR(snap.version, "4");
    free(v);
    td_release(&snap);
    /* Without _last_checkpoint the listing finds the checkpoint itself. */
    unlink(p);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    v = load_and(&snap, "SELECT count(*) FROM mine");
    CHECK_EQ_STR(v, "3");
    free(v);
    td_release(&snap);
    free(a3);
    free(a4);
    tb_rm(dir);
}

/* The checkpoint is read through a scratch snapshot of its own. When DuckDB
 * may not open the table's directory (added after start), both the
 * checkpoint and the data files reach it through links in pin directories:
 * releasing the scratch one at the end of the resolve must leave the
 * generation's links (<temp>/lazy-<pin_name>) in place, for a resident build
 * (which reads them after the resolve) and a lazy one (which reads them until
 * it goes). */
TEST(checkpoint_scratch_links_leave_the_generations_links)
{
    char dir[64], tmp[64], conf[64];
    tb_new(dir);
    strcpy(tmp, "/tmp/vt-delta-pins-XXXXXX");
    CHECK(mkdtemp(tmp) != NULL);
    strcpy(conf, "/tmp/vt-delta-conf-XXXXXX");
    CHECK(mkdtemp(conf) != NULL);
    const char *schema = "{\"type\":\"struct\",\"fields\":[" F("id", "\"long\"") "]}";
    tb_parquet(dir, "f1.parquet", "SELECT 1::BIGINT AS id");
    tb_parquet(dir, "f2.parquet", "SELECT 2::BIGINT AS id");
    cp_insert_common(schema, "[]");
    cp_add("f1.parquet", "MAP {}");
    cp_write(dir, "00000000000000000001.checkpoint.parquet", "");
    char *a2 = tb_add("f2.parquet", NULL, 10);
    commit3(dir, 2, a2, NULL, NULL);
    free(a2);
    /* A policy whose roots grew by the table's directory after start: DuckDB
     * may not open it, so every file it reads there goes through a link. */
    struct vt_config cfg;
    config_init_defaults(&cfg);
    free(cfg.dir);
    cfg.dir = strdup(conf);
    struct source_policy *pol = source_policy_create(&cfg);
    CHECK(pol != NULL);
    struct vt_dataset_config ds = {.name = "built", .kind = CFG_SOURCE_DELTA, .location = dir};
    source_policy_add_dataset(pol, &ds);
    CHECK(!source_policy_engine_reads(pol, dir));
    for (int lazy = 0; lazy <= 1; lazy++) {
        struct source_context ctx = {.temp_dir = tmp, .policy = pol, .pin_name = "g9",
                                     .for_lazy = lazy != 0};
        struct source_snapshot snap;
        struct vt_error err = {0};
        CHECK_EQ_INT(source_delta_resolve(&ds, &ctx, &snap, NULL, &err), VT_ERR_OK);
        char want[128];
        snprintf(want, sizeof want, "%s/lazy-g9/", tmp);
        CHECK_EQ_INT(snap.n_files, 2);
        for (size_t i = 0; i < snap.n_files; i++) {
            struct stat sb;
            CHECK(strncmp(snap.files[i].path, want, strlen(want)) == 0);
            if (stat(snap.files[i].path, &sb) != 0)
                fprintf(stderr, "  %s link %s is gone (%s)\n", lazy ? "lazy" : "resident",
                        snap.files[i].path, strerror(errno));
            CHECK(stat(snap.files[i].path, &sb) == 0);
        }
        char *v = load_and(&snap, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM mine");
        CHECK_EQ_STR(v ? v : "(failed)", "1,2");
        free(v);
        td_release(&snap);
        struct stat sb;
        CHECK(stat(want, &sb) != 0 && errno == ENOENT); /* gone with the snapshot */
    }
    /* No scratch directory is left behind either. */
    if (rmdir(tmp) != 0)
        td_sh("ls -AR '%s' >&2; rm -rf '%s'", tmp, tmp);
    struct stat sb;
    CHECK(stat(tmp, &sb) != 0 && errno == ENOENT);
    source_policy_destroy(pol);
    config_free(&cfg);
    tb_rm(conf);
    tb_rm(dir);
}

TEST(multipart_checkpoint_and_stale_last_checkpoint)
{
    char dir[64];
    tb_new(dir);
    const char *schema = "{\"type\":\"struct\",\"fields\":[" F("id", "\"long\"") "]}";
    for (int i = 1; i <= 5; i++) {
        char rel[64], sel[128];
        snprintf(rel, sizeof rel, "f%d.parquet", i);
        snprintf(sel, sizeof sel, "SELECT %d::BIGINT AS id", i);
        tb_parquet(dir, rel, sel);
    }
    cp_insert_common(schema, "[]");
    cp_add("f1.parquet", "MAP {}");
    cp_add("f2.parquet", "MAP {}");
    cp_add("f3.parquet", "MAP {}");
    /* Checkpoint 3 in two parts: protocol+metaData+f1 / f2+f3. */
    cp_write(dir, "00000000000000000003.checkpoint.0000000001.0000000002.parquet",
             "WHERE \"add\" IS NULL OR \"add\".path = 'f1.parquet'");
    cp_write(dir, "00000000000000000003.checkpoint.0000000002.0000000002.parquet",
             "WHERE \"add\".path IN ('f2.parquet', 'f3.parquet')");
    /* An incomplete checkpoint 5 (part 2 never written) and a
     * _last_checkpoint that names it: both must be ignored. */
    cp_write(dir, "00000000000000000005.checkpoint.0000000001.0000000002.parquet", "");
    char p[700];
    snprintf(p, sizeof p, "%s/_delta_log/_last_checkpoint", dir);
    td_write_file(p, "{\"version\":5,\"size\":9,\"parts\":2}");
    char *a4 = tb_add("f4.parquet", NULL, 10), *a5 = tb_add("f5.parquet", NULL, 10);
    commit3(dir, 4, a4, NULL, NULL);
    commit3(dir, 5, a5,
            "{\"remove\":{\"path\":\"f2.parquet\",\"deletionTimestamp\":1,\"dataChange\":true}}\n",
            NULL);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    char *v = load_and(&snap, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM mine");
    CHECK_EQ_STR(v, "1,3,4,5");
    free(v);
    td_release(&snap);
    /* A _last_checkpoint that is not JSON is only a bad hint. */
    td_write_file(p, "garbage");
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    td_release(&snap);
    free(a4);
    free(a5);
    tb_rm(dir);
}

TEST(schema_evolution_fills_nulls_and_widens)
{
    char dir[64];
    tb_new(dir);
    /* f1 predates "extra" and struct field s.b, and stores id as INTEGER. */
    tb_parquet(dir, "f1.parquet", "SELECT 1::INTEGER AS id, {'a': 10} AS s");
    tb_parquet(dir, "f2.parquet", "SELECT 2::BIGINT AS id, 'x' AS extra, {'a': 20, 'b': 'bb'} AS s");
    char *m0 = tb_meta("[" F("id", "\"integer\"") "," F("s", "{\"type\":\"struct\",\"fields\":["
                       F("a", "\"integer\"") "]}") "]", NULL, NULL);
    char *m1 = tb_meta("[" F("id", "\"long\"") "," F("extra", "\"string\"") ","
                       F("s", "{\"type\":\"struct\",\"fields\":[" F("a", "\"integer\"") ","
                       F("b", "\"string\"") "]}") "," F("never", "\"date\"") "]",
                       NULL, NULL);
    char *a1 = tb_add("f1.parquet", NULL, 1), *a2 = tb_add("f2.parquet", NULL, 1);
    commit3(dir, 0, PROTO1, m0, a1);
    commit3(dir, 1, m1, a2, NULL);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_schema, 4);
    if (snap.n_schema == 4) {
        CHECK_EQ_STR(snap.schema_types[0], "BIGINT");
        CHECK_EQ_STR(snap.schema_names[3], "never");
    }
    char *v = load_and(&snap, "SELECT string_agg(id || '|' || coalesce(extra, 'NULL') || '|' || "
                              "s::VARCHAR || '|' || coalesce(never::VARCHAR, 'NULL'), ';' ORDER BY "
                              "id) FROM mine");
    CHECK_EQ_STR(v, "1|NULL|{'a': 10, 'b': NULL}|NULL;2|x|{'a': 20, 'b': bb}|NULL");
    free(v);
    v = td_text(&T, "SELECT typeof(id) || ',' || typeof(never) FROM mine LIMIT 1");
    CHECK_EQ_STR(v, "BIGINT,DATE");
    free(v);
    td_release(&snap);
    free(m0);
    free(m1);
    free(a1);
    free(a2);
    tb_rm(dir);
}

/* typeWidening: files written before each widening keep their narrower
 * types; every value is served in the current type, exactly. */
TEST(type_widening_serves_the_current_types)
{
    static const char *proto = "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,"
                               "\"readerFeatures\":[\"typeWidening\"],"
                               "\"writerFeatures\":[\"typeWidening\"]}}\n";
    char dir[64];
    tb_new(dir);
    tb_parquet(dir, "f1.parquet",
               "SELECT 1::TINYINT AS b, 300::SMALLINT AS s, 70000::INTEGER AS i, 1.5::FLOAT AS f, "
               "123.45::DECIMAL(5,2) AS d, DATE '2024-02-29' AS dt, 7::INTEGER AS i2");
    tb_parquet(dir, "f2.parquet",
               "SELECT 30000::SMALLINT AS b, 3000000000 AS s, 9000000000::BIGINT AS i, "
               "0.1::DOUBLE AS f, 12345678.91::DECIMAL(10,2) AS d, "
               "TIMESTAMP '2024-03-01 12:30:00' AS dt, 0.25::DOUBLE AS i2");
    char *m0 = tb_meta("[" F("b", "\"byte\"") "," F("s", "\"short\"") "," F("i", "\"integer\"") ","
                       F("f", "\"float\"") "," F("d", "\"decimal(5,2)\"") "," F("dt", "\"date\"") ","
                       F("i2", "\"integer\"") "]", NULL, NULL);
    char *m1 = tb_meta("[" F("b", "\"short\"") "," F("s", "\"long\"") "," F("i", "\"long\"") ","
                       F("f", "\"double\"") "," F("d", "\"decimal(10,2)\"") ","
                       F("dt", "\"timestamp_ntz\"") "," F("i2", "\"double\"") "]",
                       NULL, NULL);
    char *a1 = tb_add("f1.parquet", NULL, 1), *a2 = tb_add("f2.parquet", NULL, 1);
    commit3(dir, 0, proto, m0, a1);
    commit3(dir, 1, m1, a2, NULL);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_schema, 7);
    char *v = load_and(&snap, "SELECT string_agg(concat_ws('|', b, s, i, f, d, dt, i2), ';' "
                              "ORDER BY i) FROM mine");
    CHECK_EQ_STR(v, "1|300|70000|1.5|123.45|2024-02-29 00:00:00|7.0;"
                    "30000|3000000000|9000000000|0.1|12345678.91|2024-03-01 12:30:00|0.25");
    free(v);
    v = td_text(&T, "SELECT concat_ws(',', typeof(b), typeof(s), typeof(i), typeof(f), "
                    "typeof(d), typeof(dt), typeof(i2)) FROM mine LIMIT 1");
    CHECK_EQ_STR(v, "SMALLINT,BIGINT,BIGINT,DOUBLE,DECIMAL(10,2),TIMESTAMP,DOUBLE");
    free(v);
    td_release(&snap);
    free(m0);
    free(m1);
    free(a1);
    free(a2);
    tb_rm(dir);
}

TEST(partition_values_typed_null_and_special)
{
    char dir[64];
    tb_new(dir);
    tb_parquet(dir, "a/f1.parquet", "SELECT 1::BIGINT AS id");
    tb_parquet(dir, "b/f2.parquet", "SELECT 2::BIGINT AS id");
    tb_parquet(dir, "c/f3.parquet", "SELECT 3::BIGINT AS id");
    char *meta = tb_meta("[" F("id", "\"long\"") "," F("d", "\"date\"") "," F("i", "\"integer\"") ","
                         F("ts", "\"timestamp\"") "," F("ntz", "\"timestamp_ntz\"") ","
                         F("b", "\"boolean\"") "," F("dec", "\"decimal(10,2)\"") ","
                         F("s", "\"string\"") "," F("bin", "\"binary\"") "," F("dbl", "\"double\"") "]",
                         "[\"d\",\"i\",\"ts\",\"ntz\",\"b\",\"dec\",\"s\",\"bin\",\"dbl\"]", NULL);
    const char *proto = "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,"
                        "\"readerFeatures\":[\"timestampNtz\"],\"writerFeatures\":[\"timestampNtz\"]}}\n";
    char *a1 = tb_add("a/f1.parquet",
                      "{\"d\":\"2024-01-02\",\"i\":\"7\",\"ts\":\"2024-01-02 03:04:05.123456\","
                      "\"ntz\":\"2024-01-02 03:04:05\",\"b\":\"true\",\"dec\":\"12.34\","
                      "\"s\":\"a/b c=d%'\\\"\",\"bin\":\"ab\",\"dbl\":\"-1.5\"}",
                      1);
    /* Nulls: JSON null and the empty string (Spark writes both for null). */
    char *a2 = tb_add("b/f2.parquet",
                      "{\"d\":null,\"i\":\"\",\"ts\":null,\"ntz\":null,\"b\":null,\"dec\":null,"
                      "\"s\":null,\"bin\":null,\"dbl\":null}",
                      1);
    /* Keys missing entirely, and an ISO timestamp with zone. */
    char *a3 = tb_add("c/f3.parquet", "{\"ts\":\"2024-06-01T00:00:00.000Z\",\"i\":\"-3\"}", 1);
    commit3(dir, 0, proto, meta, a1);
    commit3(dir, 1, a2, a3, NULL);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    if (err.code)
        fprintf(stderr, "  %s\n", vt_error_message(&err));
    CHECK_EQ_INT(snap.n_partitions, 9);
    char *v = load_and(&snap, "SELECT count(*) FROM mine WHERE id = 1 AND d = DATE '2024-01-02' "
                              "AND i = 7 AND ts = TIMESTAMPTZ '2024-01-02 03:04:05.123456+00' AND "
                              "ntz = TIMESTAMP '2024-01-02 03:04:05' AND b AND dec = 12.34 AND s = "
                              "'a/b c=d%''\"' AND bin = 'ab'::BLOB AND dbl = -1.5");
    CHECK_EQ_STR(v, "1");
    free(v);
    v = td_text(&T, "SELECT count(*) FROM mine WHERE id = 2 AND d IS NULL AND i IS NULL AND ts IS "
                    "NULL AND ntz IS NULL AND b IS NULL AND dec IS NULL AND s IS NULL AND bin IS "
                    "NULL AND dbl IS NULL");
    CHECK_EQ_STR(v, "1");
    free(v);
    v = td_text(&T, "SELECT i || ' ' || ts FROM mine WHERE id = 3");
    CHECK_EQ_STR(v, "-3 2024-06-01 00:00:00+00");
    free(v);
    v = td_text(&T, "SELECT typeof(d) || ',' || typeof(ts) || ',' || typeof(ntz) || ',' || "
                    "typeof(dec) || ',' || typeof(bin) FROM mine LIMIT 1");
    CHECK_EQ_STR(v, "DATE,TIMESTAMP WITH TIME ZONE,TIMESTAMP,DECIMAL(10,2),BLOB");
    free(v);
    td_release(&snap);
    free(meta);
    free(a1);
    free(a2);
    free(a3);
    tb_rm(dir);
}

TEST(column_mapping_by_name_with_nested_fields)
{
    char dir[64];
    tb_new(dir);
    /* Files carry physical names; the schema maps them to logical ones. */
    tb_parquet(dir, "f1.parquet",
               "SELECT 1::BIGINT AS \"col-1\", {'col-3': 'inner', 'col-4': 5} AS \"col-2\", "
               "[{'col-6': 1}, {'col-6': 2}] AS \"col-5\"");
    tb_parquet(dir, "f2.parquet", "SELECT 2::BIGINT AS \"col-1\"");
    const char *fields =
        "[{\"name\":\"the id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{"
        "\"delta.columnMapping.id\":1,\"delta.columnMapping.physicalName\":\"col-1\"}},"
        "{\"name\":\"s\",\"type\":{\"type\":\"struct\",\"fields\":["
        "{\"name\":\"x\",\"type\":\"string\",\"nullable\":true,\"metadata\":{"
        "\"delta.columnMapping.physicalName\":\"col-3\"}},"
        "{\"name\":\"y\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{"
        "\"delta.columnMapping.physicalName\":\"col-4\"}}]},\"nullable\":true,\"metadata\":{"
        "\"delta.columnMapping.physicalName\":\"col-2\"}},"
        "{\"name\":\"l\",\"type\":{\"type\":\"array\",\"elementType\":{\"type\":\"struct\","
        "\"fields\":[{\"name\":\"z\",\"type\":\"long\",\"nullable\":true,\"metadata\":{"
        "\"delta.columnMapping.physicalName\":\"col-6\"}}]},\"containsNull\":true},"
        "\"nullable\":true,\"metadata\":{\"delta.columnMapping.physicalName\":\"col-5\"}},"
        "{\"name\":\"part\",\"type\":\"string\",\"nullable\":true,\"metadata\":{"
        "\"delta.columnMapping.physicalName\":\"col-7\"}}]";
    char *meta = tb_meta(fields, "[\"part\"]", "{\"delta.columnMapping.mode\":\"name\"}");
    const char *proto = "{\"protocol\":{\"minReaderVersion\":2,\"minWriterVersion\":5}}\n";
    char *a1 = tb_add("f1.parquet", "{\"col-7\":\"p1\"}", 1);
    char *a2 = tb_add("f2.parquet", "{\"col-7\":\"p2\"}", 1);
    commit3(dir, 0, proto, meta, a1);
    commit3(dir, 1, a2, NULL, NULL);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    if (err.code)
        fprintf(stderr, "  %s\n", vt_error_message(&err));
    char *v = load_and(&snap, "SELECT string_agg(\"the id\" || '|' || coalesce(s::VARCHAR, 'NULL') "
                              "|| '|' || coalesce(l::VARCHAR, 'NULL') || '|' || part, ';' ORDER BY "
                              "\"the id\") FROM mine");
    CHECK_EQ_STR(v, "1|{'x': inner, 'y': 5}|[{'z': 1}, {'z': 2}]|p1;2|NULL|NULL|p2");
    free(v);
    td_release(&snap);
    /* Mode "id" over files without field ids: the physical names. */
    char *meta_id = tb_meta(fields, "[\"part\"]", "{\"delta.columnMapping.mode\":\"id\"}");
    commit3(dir, 2, meta_id, NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    v = load_and(&snap, "SELECT string_agg(\"the id\" || '|' || coalesce(s::VARCHAR, 'NULL'), "
                        "';' ORDER BY \"the id\") FROM mine");
    CHECK_EQ_STR(v, "1|{'x': inner, 'y': 5};2|NULL");
    free(v);
    td_release(&snap);
    /* An unknown mode fails naming it. */
    char *meta_x = tb_meta(fields, "[\"part\"]", "{\"delta.columnMapping.mode\":\"idx\"}");
    commit3(dir, 3, meta_x, NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNSUPPORTED);
    CHECK_CONTAINS(vt_error_message(&err), "columnMapping mode \"idx\"");
    free(meta);
    free(meta_id);
    free(meta_x);
    free(a1);
    free(a2);
    tb_rm(dir);
}

/* columnMapping mode "id": columns found by Parquet field id, which writers
 * pair with the physical names; a file whose field id sits under another
 * name is refused naming it, never read wrong. */
TEST(column_mapping_by_id)
{
    char dir[64];
    tb_new(dir);
    td_exec(&T, "COPY (SELECT 1::BIGINT AS \"col-1\", {'col-3': 'a'} AS \"col-2\") TO "
                "'%s/f1.parquet' (FORMAT parquet, FIELD_IDS {\"col-1\": 1, \"col-2\": "
                "{__duckdb_field_id: 2, \"col-3\": 3}})", dir);
    td_exec(&T, "COPY (SELECT 2::BIGINT AS \"col-1\") TO '%s/f2.parquet' (FORMAT parquet, "
                "FIELD_IDS {\"col-1\": 1})", dir);
    const char *fields =
        "[{\"name\":\"the id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{"
        "\"delta.columnMapping.id\":1,\"delta.columnMapping.physicalName\":\"col-1\"}},"
        "{\"name\":\"s\",\"type\":{\"type\":\"struct\",\"fields\":["
        "{\"name\":\"x\",\"type\":\"string\",\"nullable\":true,\"metadata\":{"
        "\"delta.columnMapping.id\":3,\"delta.columnMapping.physicalName\":\"col-3\"}}]},"
        "\"nullable\":true,\"metadata\":{\"delta.columnMapping.id\":2,"
        "\"delta.columnMapping.physicalName\":\"col-2\"}}]";
    char *meta = tb_meta(fields, NULL, "{\"delta.columnMapping.mode\":\"id\"}");
    const char *proto = "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,"
                        "\"readerFeatures\":[\"columnMapping\"],"
                        "\"writerFeatures\":[\"columnMapping\"]}}\n";
    char *a1 = tb_add("f1.parquet", NULL, 1), *a2 = tb_add("f2.parquet", NULL, 1);
    commit3(dir, 0, proto, meta, a1);
    commit3(dir, 1, a2, NULL, NULL);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_schema, 2);
    if (snap.n_schema == 2) {
        CHECK_EQ_STR(snap.schema_names[0], "the id");
        CHECK_EQ_STR(snap.schema_names[1], "s");
    }
    char *v = load_and(&snap, "SELECT string_agg(\"the id\" || '|' || coalesce(s::VARCHAR, "
                              "'NULL'), ';' ORDER BY \"the id\") FROM mine");
    CHECK_EQ_STR(v, "1|{'x': a};2|NULL");
    free(v);
    td_release(&snap);
    /* Field id 1 under another name: refused, naming the file. */
    td_exec(&T, "COPY (SELECT 3::BIGINT AS other) TO '%s/f3.parquet' (FORMAT parquet, "
                "FIELD_IDS {other: 1})", dir);
    char *a3 = tb_add("f3.parquet", NULL, 1);
    commit3(dir, 2, a3, NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNSUPPORTED);
    CHECK_CONTAINS(vt_error_message(&err), "f3.parquet");
    CHECK_CONTAINS(vt_error_message(&err), "field id 1");
    free(meta);
    free(a1);
    free(a2);
    free(a3);
    tb_rm(dir);
}

TEST(glob_characters_in_file_names)
{
    char dir[64];
    tb_new(dir);
    tb_parquet(dir, "k=a[1]/f*1?.parquet", "SELECT 1::BIGINT AS id");
    tb_parquet(dir, "k=a1/fX1Y.parquet", "SELECT 99::BIGINT AS id"); /* a glob would match this */
    char *meta = tb_meta("[" F("id", "\"long\"") "," F("k", "\"string\"") "]", "[\"k\"]", NULL);
    char *a1 = tb_add("k=a%5B1%5D/f%2A1%3F.parquet", "{\"k\":\"a[1]\"}", 1);
    commit3(dir, 0, PROTO1, meta, a1);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    char *v = load_and(&snap, "SELECT string_agg(id || k, ',') FROM mine");
    CHECK_EQ_STR(v, "1a[1]");
    free(v);
    td_release(&snap);
    free(meta);
    free(a1);
    tb_rm(dir);
}

TEST(protocol_features)
{
    char dir[64];
    tb_new(dir);
    tb_parquet(dir, "f1.parquet", "SELECT 1::BIGINT AS id");
    char *meta = tb_meta("[" F("id", "\"long\"") "]", NULL, NULL);
    char *a1 = tb_add("f1.parquet", NULL, 1);
    struct {
        const char *proto;
        enum vt_err want;
        const char *named;
    } cases[] = {
        {"{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"blahabl\"]}}\n",
         VT_ERR_SOURCE_UNSUPPORTED, "blahabl"},
        {"{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"deletionVectors\",\"timestampNtz\",\"catalogManaged\"]}}\n",
         VT_ERR_SOURCE_UNSUPPORTED, "catalogManaged"},
        {"{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"deletionVectors\",\"timestampNtz\"]}}\n",
         VT_ERR_OK, NULL},
        {"{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"variantType\"]}}\n",
         VT_ERR_OK, NULL},
        {"{\"protocol\":{\"minReaderVersion\":4,\"minWriterVersion\":7}}\n",
         VT_ERR_SOURCE_UNSUPPORTED, "reader version 4"},
        {"{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"timestampNtz\",\"v2Checkpoint\",\"vacuumProtocolCheck\",\"columnMapping\",\"typeWidening\"]}}\n",
         VT_ERR_OK, NULL},
        {"{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7}}\n", VT_ERR_OK, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        commit3(dir, 0, cases[i].proto, meta, a1);
        struct source_snapshot snap;
        struct vt_error err = {0};
        enum vt_err rc = resolve_dir(dir, &snap, &err);
        CHECK_EQ_INT(rc, cases[i].want);
        if (cases[i].named)
            CHECK_CONTAINS(vt_error_message(&err), cases[i].named);
        if (rc == VT_ERR_OK)
            td_release(&snap);
    }
    /* A deletion vector is honoured even when the protocol does not list
     * the feature; a malformed one fails the build naming the file. */
    commit3(dir, 0, PROTO1, meta,
            "{\"add\":{\"path\":\"f1.parquet\",\"partitionValues\":{},\"size\":1,"
            "\"deletionVector\":{\"storageType\":\"i\",\"pathOrInlineDv\":\"abc\",\"sizeInBytes\":"
            "3,\"cardinality\":1}}}\n");
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "deletion vector");
    CHECK_CONTAINS(vt_error_message(&err), "f1.parquet");
    /* A variant column is served as JSON; stored in a shape other than the
     * unshredded (metadata, value) group, reading it fails naming the
     * feature. */
    char *mv = tb_meta("[" F("id", "\"long\"") "," F("v", "\"variant\"") "]", NULL, NULL);
    tb_parquet(dir, "f2.parquet", "SELECT 1::BIGINT AS id, 5 AS v");
    char *a2 = tb_add("f2.parquet", NULL, 1);
    commit3(dir, 0, PROTO1, mv, a2);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    CHECK_EQ_STR(snap.schema_types[1], "JSON");
    td_exec(&T, "DROP TABLE IF EXISTS mine");
    duckdb_result r;
    struct strbuf q;
    sb_init(&q, 0);
    sb_addf(&q, "CREATE TABLE mine AS %s", snap.select_sql);
    CHECK(duckdb_query(T.con, q.buf, &r) == DuckDBError);
    CHECK_CONTAINS(duckdb_result_error(&r), "variantShredding-preview");
    duckdb_destroy_result(&r);
    sb_release(&q);
    td_release(&snap);
    free(a2);
    free(mv);
    free(meta);
    free(a1);
    tb_rm(dir);
}

TEST(empty_missing_and_broken_logs)
{
    char dir[64];
    tb_new(dir);
    struct source_snapshot snap;
    struct vt_error err = {0};
    /* _delta_log exists but is empty; then no _delta_log at all. */
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_EMPTY);
    td_sh("rmdir '%s/_delta_log'", dir);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_EMPTY);
    CHECK_CONTAINS(vt_error_message(&err), "no Delta log");
    CHECK_EQ_INT(resolve_dir("/nonexistent/vt-table", &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    char log[600];
    snprintf(log, sizeof log, "%s/_delta_log", dir);
    mkdir(log, 0700);
    /* Every file removed: empty table. */
    tb_parquet(dir, "f1.parquet", "SELECT 1::BIGINT AS id");
    char *meta = tb_meta("[" F("id", "\"long\"") "]", NULL, NULL);
    char *a1 = tb_add("f1.parquet", NULL, 1);
    commit3(dir, 0, PROTO1, meta, a1);
    commit3(dir, 1, "{\"remove\":{\"path\":\"f1.parquet\",\"dataChange\":true}}\n", NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_EMPTY);
    /* A gap in the commits. */
    commit3(dir, 3, a1, NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "commit 2 is missing");
    char p[700];
    snprintf(p, sizeof p, "%s/_delta_log/%020d.json", dir, 3);
    unlink(p);
    /* Garbage in a commit names the commit. */
    commit3(dir, 1, "{\"add\": not json\n", NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "commit 1");
    /* A bad percent escape in a path. */
    commit3(dir, 1, "{\"add\":{\"path\":\"f%zz.parquet\",\"size\":1}}\n", NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    /* A path escaping the table directory. */
    commit3(dir, 1, "{\"add\":{\"path\":\"..%2F..%2Fetc%2Fpasswd\",\"size\":1}}\n", NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "escapes");
    /* No protocol at all. */
    commit3(dir, 0, meta, a1, NULL);
    commit3(dir, 1, "\n", NULL, NULL);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "protocol");
    /* A data file listed in the log but missing on disk. */
    commit3(dir, 0, PROTO1, meta, "{\"add\":{\"path\":\"gone.parquet\",\"size\":1}}\n");
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "gone.parquet");
    free(meta);
    free(a1);
    tb_rm(dir);
}

TEST(projection_over_the_prebuilt_select)
{
    char dir[64];
    tb_new(dir);
    tb_parquet(dir, "f1.parquet", "SELECT 1::BIGINT AS id, 'a' AS \"Name\", 2.5::DOUBLE AS v");
    char *meta = tb_meta("[" F("id", "\"long\"") "," F("Name", "\"string\"") ","
                         F("v", "\"double\"") "]", NULL, NULL);
    char *a1 = tb_add("f1.parquet", NULL, 1);
    commit3(dir, 0, PROTO1, meta, a1);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    struct strbuf sql;
    sb_init(&sql, 0);
    char *cols[] = {"v", "Name"};
    struct strvec cv = {cols, 2};
    CHECK_EQ_INT(source_select_sql(&snap, &cv, &sql, &err), VT_ERR_OK);
    td_exec(&T, "DROP TABLE IF EXISTS proj");
    CHECK(td_exec(&T, "CREATE TABLE proj AS %s", sql.buf));
    char *v = td_text(&T, "SELECT string_agg(column_name, ',') FROM (DESCRIBE proj)");
    CHECK_EQ_STR(v, "v,Name");
    free(v);
    char *bad[] = {"nope"};
    struct strvec bv = {bad, 1};
    sb_reset(&sql);
    vt_error_clear(&err);
    CHECK_EQ_INT(source_select_sql(&snap, &bv, &sql, &err), VT_ERR_INVALID_CONFIG);
    CHECK_CONTAINS(vt_error_message(&err), "nope");
    sb_release(&sql);
    td_release(&snap);
    free(meta);
    free(a1);
    tb_rm(dir);
}

TEST(naive_timestamps_are_utc_whatever_the_session_zone)
{
    char dir[64];
    tb_new(dir);
    /* A zone-less TIMESTAMP column (as INT96 files read) holding UTC wall time. */
    tb_parquet(dir, "f1.parquet", "SELECT TIMESTAMP '2024-03-01 12:00:00' AS ts");
    char *meta = tb_meta("[" F("ts", "\"timestamp\"") "]", NULL, NULL);
    char *a1 = tb_add("f1.parquet", NULL, 1);
    commit3(dir, 0, PROTO1, meta, a1);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    td_exec(&T, "SET TimeZone = 'America/New_York'");
    char *v = load_and(&snap, "SELECT count(*) FROM mine WHERE ts = TIMESTAMPTZ '2024-03-01 "
                              "12:00:00+00'");
    td_exec(&T, "SET TimeZone = 'UTC'");
    CHECK_EQ_STR(v, "1");
    free(v);
    td_release(&snap);
    free(meta);
    free(a1);
    tb_rm(dir);
}

/* The runner has no fixtures: the first and last "tests" open and close the
 * DuckDB connection every test uses. */
TEST(open_duckdb)
{
    td_open(&T);
}

TEST(close_duckdb)
{
    td_close(&T);
}

RUN_TESTS(TEST_CASE(open_duckdb), TEST_CASE(new_commit_is_seen_by_the_next_resolve),
          TEST_CASE(removes_and_encoded_paths),
          TEST_CASE(checkpoint_then_commits_with_vacuumed_history),
          TEST_CASE(checkpoint_scratch_links_leave_the_generations_links),
          TEST_CASE(multipart_checkpoint_and_stale_last_checkpoint),
          TEST_CASE(schema_evolution_fills_nulls_and_widens),
          TEST_CASE(type_widening_serves_the_current_types),
          TEST_CASE(partition_values_typed_null_and_special),
          TEST_CASE(column_mapping_by_name_with_nested_fields), TEST_CASE(column_mapping_by_id),
          TEST_CASE(glob_characters_in_file_names), TEST_CASE(protocol_features),
          TEST_CASE(empty_missing_and_broken_logs), TEST_CASE(projection_over_the_prebuilt_select),
          TEST_CASE(naive_timestamps_are_utc_whatever_the_session_zone),
          TEST_CASE(close_duckdb))
