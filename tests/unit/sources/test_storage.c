/*
 * The storage interface's local implementation (listing order, depth and
 * start_after, stat of files, directories and FIFOs, byte ranges, fetching
 * in place and pinned) and the Parquet resolver over it (directory, glob and
 * single-file locations, hidden files, hive partitions and their types). The
 * S3 implementation runs against moto in tests/e2e/test_sources_s3.py.
 */
#include <duckdb.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/sources_internal.h"
#include "util/strvec.h"
#include "testlib.h"

static char root[64];

static void sh(const char *fmt, const char *arg)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, arg, arg, arg);
    if (system(cmd) != 0)
        fprintf(stderr, "  command failed: %s\n", cmd);
}

static void write_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A Parquet file written by DuckDB. */
static void write_parquet(const char *rel, const char *select)
{
    char path[512], sql[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    write_file(rel, "");
    duckdb_database db;
    duckdb_connection con;
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
    snprintf(sql, sizeof sql, "COPY (%s) TO '%s' (FORMAT parquet)", select, path);
    duckdb_result r;
    if (duckdb_query(con, sql, &r) != DuckDBSuccess)
        fprintf(stderr, "  %s\n", duckdb_result_error(&r));
    duckdb_destroy_result(&r);
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

static struct storage *open_root(const char *sub)
{
    /* the storage borrows its location (for messages): it must outlive this
     * call, so the test keeps it in a small ring, not on this stack */
    static char paths[4][512];
    static unsigned next_path;
    char *path = paths[next_path++ % 4];
    snprintf(path, sizeof paths[0], "%s%s%s", root, *sub ? "/" : "", sub);
    struct vt_dataset_config ds = {.name = "t", .location = path};
    struct storage *st = NULL;
    struct vt_error err = {0};
    CHECK_EQ_INT(storage_open(&ds, path, NULL, &st, &err), VT_ERR_OK);
    return st;
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/vt-storage-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
}

static void teardown(void)
{
    sh("rm -rf '%s'", root);
}

TEST(local_listing_is_sorted_and_bounded_by_depth)
{
    setup();
    write_file("b.txt", "bb");
    write_file("a/z.txt", "z");
    write_file("a-b/y.txt", "yy");
    write_file("a/deep/x.txt", "xxx");
    struct storage *st = open_root("");
    struct storage_listing l;
    struct vt_error err = {0};
    CHECK_EQ_INT(st->ops->list(st, "", -1, NULL, &l, &err), VT_ERR_OK);
    CHECK_EQ_INT(l.n, 4);
    if (l.n == 4) {
        /* One order for every storage: by name, as S3 lists keys. */
        CHECK_EQ_STR(l.items[0].name, "a-b/y.txt");
        CHECK_EQ_STR(l.items[1].name, "a/deep/x.txt");
        CHECK_EQ_STR(l.items[2].name, "a/z.txt");
        CHECK_EQ_STR(l.items[3].name, "b.txt");
        CHECK_EQ_INT(l.items[1].size, 3);
        CHECK(l.items[0].etag == NULL);
    }
    storage_listing_release(&l);
    CHECK_EQ_INT(st->ops->list(st, "", 0, NULL, &l, &err), VT_ERR_OK);
    CHECK_EQ_INT(l.n, 1); /* b.txt only */
    storage_listing_release(&l);
    CHECK_EQ_INT(st->ops->list(st, "a", 0, "a/y", &l, &err), VT_ERR_OK);
    CHECK_EQ_INT(l.n, 1);
    if (l.n == 1)
        CHECK_EQ_STR(l.items[0].name, "a/z.txt");
    storage_listing_release(&l);
    CHECK_EQ_INT(st->ops->list(st, "nope", -1, NULL, &l, &err), VT_ERR_SOURCE_EMPTY);
    storage_close(st);
    teardown();
}

TEST(local_stat_and_read_only_regular_files)
{
    setup();
    write_file("f.bin", "0123456789");
    write_file("d/inner", "x");
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/p.parquet", root);
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    struct storage *st = open_root("");
    struct storage_object o;
    bool missing;
    struct vt_error err = {0};
    CHECK_EQ_INT(st->ops->stat(st, "f.bin", &o, &missing, &err), VT_ERR_OK);
    CHECK(!missing && o.size == 10);
    storage_object_release(&o);
    CHECK_EQ_INT(st->ops->stat(st, "d", &o, &missing, &err), VT_ERR_OK);
    CHECK(missing); /* a directory is no object */
    CHECK_EQ_INT(st->ops->stat(st, "none", &o, &missing, &err), VT_ERR_OK);
    CHECK(missing);
    CHECK_EQ_INT(st->ops->stat(st, "p.parquet", &o, &missing, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "not a regular file");
    char *buf;
    size_t len;
    CHECK_EQ_INT(st->ops->read(st, "f.bin", 3, 4, 100, &buf, &len, &missing, &err), VT_ERR_OK);
    CHECK(len == 4 && buf && memcmp(buf, "3456", 4) == 0 && buf[4] == '\0');
    free(buf);
    CHECK_EQ_INT(st->ops->read(st, "f.bin", 8, -1, 100, &buf, &len, &missing, &err), VT_ERR_OK);
    CHECK(len == 2 && buf && memcmp(buf, "89", 2) == 0);
    free(buf);
    CHECK_EQ_INT(st->ops->read(st, "f.bin", 0, -1, 5, &buf, &len, &missing, &err),
                 VT_ERR_LIMIT_EXCEEDED);
    CHECK_EQ_INT(st->ops->read(st, "gone", 0, -1, 5, &buf, &len, &missing, &err), VT_ERR_OK);
    CHECK(missing && buf == NULL);
    /* A FIFO is refused at once: opened non-blocking, then fstat says no. */
    CHECK_EQ_INT(st->ops->read(st, "p.parquet", 0, -1, 5, &buf, &len, &missing, &err),
                 VT_ERR_SOURCE_UNAVAILABLE);
    storage_close(st);
    teardown();
}

TEST(local_fetch_in_place_or_pinned)
{
    setup();
    write_file("x/one.parquet", "111");
    write_file("x/two.parquet", "22");
    struct storage *st = open_root("x");
    struct storage_fetch f[2] = {{.name = "one.parquet", .size = -1},
                                 {.name = "two.parquet", .size = -1}};
    struct source_snapshot snap = {0};
    struct vt_error err = {0};
    CHECK_EQ_INT(st->ops->fetch(st, f, 2, STORAGE_USE_BUILD, &snap, &err), VT_ERR_OK);
    char want[256];
    snprintf(want, sizeof want, "%s/x/one.parquet", root);
    CHECK_EQ_STR(f[0].path, want);
    CHECK_EQ_INT(f[0].size, 3);
    CHECK(snap.pin_dir == NULL && snap.n_temp_files == 0);
    free(f[0].path);
    free(f[1].path);
    /* Pinned: links in the snapshot's own directory, the same bytes after
     * the source is replaced, gone with the snapshot. */
    struct source_context ctx = {.temp_dir = root, .pin_name = "g1"};
    st->ctx = &ctx;
    CHECK_EQ_INT(st->ops->fetch(st, f, 2, STORAGE_USE_KEEP, &snap, &err), VT_ERR_OK);
    snprintf(want, sizeof want, "%s/lazy-g1/0.parquet", root);
    CHECK_EQ_STR(f[0].path, want);
    write_file("x/one.parquet.new", "999");
    char src[256], dst[256];
    snprintf(src, sizeof src, "%s/x/one.parquet.new", root);
    snprintf(dst, sizeof dst, "%s/x/one.parquet", root);
    CHECK_EQ_INT(rename(src, dst), 0);
    FILE *fp = fopen(f[0].path, "r");
    char got[8] = "";
    if (fp) {
        CHECK(fgets(got, sizeof got, fp) != NULL);
        fclose(fp);
    }
    CHECK_EQ_STR(got, "111");
    struct storage_fetch miss = {.name = "three.parquet", .size = -1};
    CHECK_EQ_INT(st->ops->fetch(st, &miss, 1, STORAGE_USE_BUILD, &snap, &err),
                 VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "is missing");
    free(miss.path);
    char pin_dir[256];
    snprintf(pin_dir, sizeof pin_dir, "%s", snap.pin_dir ? snap.pin_dir : "");
    source_snapshot_release(&snap);
    struct stat sb;
    CHECK(stat(pin_dir, &sb) != 0 && errno == ENOENT);
    CHECK(stat(dst, &sb) == 0); /* the source itself stays */
    free(f[0].path);
    free(f[1].path);
    storage_close(st);
    teardown();
}

TEST(local_fetch_for_a_build_pins_until_released_and_messages_name_the_sources)
{
    setup();
    write_file("x/one.parquet", "111");
    write_file("x/two.parquet", "22");
    struct storage *st = open_root("x");
    struct source_context ctx = {.temp_dir = root, .pin_name = "g2"};
    st->ctx = &ctx;
    struct storage_fetch f[2] = {{.name = "one.parquet", .size = -1},
                                 {.name = "two.parquet", .size = -1}};
    struct source_snapshot snap = {0};
    struct vt_error err = {0};
    CHECK_EQ_INT(st->ops->fetch(st, f, 2, STORAGE_USE_BUILD_PINNED, &snap, &err), VT_ERR_OK);
    char link0[256], link1[256], src0[256], src1[256];
    snprintf(link0, sizeof link0, "%s/lazy-g2/0.parquet", root);
    snprintf(link1, sizeof link1, "%s/lazy-g2/1.parquet", root);
    snprintf(src0, sizeof src0, "%s/x/one.parquet", root);
    snprintf(src1, sizeof src1, "%s/x/two.parquet", root);
    CHECK_EQ_STR(f[0].path, link0);
    CHECK_EQ_STR(f[1].path, link1);
    CHECK_EQ_INT(f[0].size, 3);
    /* A message naming the links names the source's files instead. */
    vt_error_set(&err, VT_ERR_BUILD_FAILED, "no magic bytes at end of '%s'; nor '%s' (%s/lazy-g2)",
                 link1, link0, root);
    source_snapshot_name_files(&snap, &err);
    char want[1024];
    snprintf(want, sizeof want, "no magic bytes at end of '%s'; nor '%s' (%s/lazy-g2)", src1,
             src0, root);
    CHECK_EQ_STR(vt_error_message(&err), want);
    char pin_dir[256];
    snprintf(pin_dir, sizeof pin_dir, "%s", snap.pin_dir ? snap.pin_dir : "");
    source_snapshot_release(&snap);
    struct stat sb;
    CHECK(stat(pin_dir, &sb) != 0 && errno == ENOENT);
    CHECK(stat(src0, &sb) == 0); /* the source itself stays */
    free(f[0].path);
    free(f[1].path);
    storage_close(st);
    teardown();
}

static enum vt_err resolve(const char *location, enum cfg_s3_partitioning part,
                           struct source_snapshot *snap, struct vt_error *err)
{
    struct vt_dataset_config ds = {.name = "t", .kind = CFG_SOURCE_PARQUET,
                                   .location = (char *)location};
    ds.s3.partitioning = part;
    vt_error_clear(err);
    return source_resolve(&ds, NULL, snap, NULL, err);
}

TEST(parquet_directory_glob_single_file_and_hidden)
{
    setup();
    write_parquet("d/a.parquet", "SELECT 1 AS id");
    write_parquet("d/sub/b.PARQUET", "SELECT 2 AS id, 'x' AS extra");
    write_parquet("d/_tmp/c.parquet", "SELECT 3 AS id");
    write_parquet("d/.hidden.parquet", "SELECT 4 AS id");
    write_file("d/notes.txt", "not parquet");
    char loc[256];
    struct source_snapshot snap;
    struct vt_error err = {0};
    snprintf(loc, sizeof loc, "%s/d", root);
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_AUTO, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_files, 2); /* a.parquet and sub/b.PARQUET; hidden ones skipped */
    CHECK_EQ_INT(snap.n_schema, 2);
    if (snap.n_schema == 2) {
        CHECK_EQ_STR(snap.schema_names[1], "extra");
        CHECK_EQ_STR(snap.schema_types[0], "INTEGER");
    }
    CHECK(snap.version && strlen(snap.version) == 16);
    source_snapshot_release(&snap);
    snprintf(loc, sizeof loc, "%s/d/*/*.parquet", root);
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_AUTO, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_files, 1); /* _tmp/c.parquet: a glob skips nothing; b is .PARQUET */
    source_snapshot_release(&snap);
    snprintf(loc, sizeof loc, "%s/d/a.parquet", root);
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_AUTO, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_files, 1);
    source_snapshot_release(&snap);
    snprintf(loc, sizeof loc, "%s/d/nothing-*.parquet", root);
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_AUTO, &snap, &err), VT_ERR_SOURCE_EMPTY);
    snprintf(loc, sizeof loc, "%s/missing", root);
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_AUTO, &snap, &err), VT_ERR_SOURCE_EMPTY);
    /* A FIFO named like a Parquet file is refused, never opened. */
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo.parquet", root);
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    CHECK_EQ_INT(resolve(fifo, CFG_S3_PARTITIONING_AUTO, &snap, &err),
                 VT_ERR_SOURCE_UNAVAILABLE);
    teardown();
}

TEST(parquet_hive_partitions_are_typed_and_consistent)
{
    setup();
    write_parquet("h/year=2023/day=2023-05-01/city=Paris/p.parquet", "SELECT 1 AS id");
    write_parquet("h/year=2024/day=2024-01-02/city=New%20York/p.parquet", "SELECT 2 AS id");
    write_parquet("h/year=2024/day=2024-01-03/city=__HIVE_DEFAULT_PARTITION__/p.parquet",
                  "SELECT 3 AS id, 'shadowed' AS city");
    char loc[256];
    snprintf(loc, sizeof loc, "%s/h/", root);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_AUTO, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_partitions, 3);
    CHECK_EQ_INT(snap.n_schema, 4); /* id, then year, day, city (the file's city loses) */
    if (snap.n_partitions == 3 && snap.n_files == 3) {
        CHECK_EQ_STR(snap.partition_types[0], "BIGINT");
        CHECK_EQ_STR(snap.partition_types[1], "DATE");
        CHECK_EQ_STR(snap.partition_types[2], "VARCHAR");
        CHECK_EQ_STR(snap.files[1].partition_values[2], "New York");
        CHECK(snap.files[2].partition_values[2] == NULL);
    }
    source_snapshot_release(&snap);
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_NONE, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_partitions, 0);
    source_snapshot_release(&snap);
    write_parquet("h/loose.parquet", "SELECT 4 AS id");
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_HIVE, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "key=value");
    CHECK_EQ_INT(resolve(loc, CFG_S3_PARTITIONING_AUTO, &snap, &err), VT_ERR_OK);
    CHECK_EQ_INT(snap.n_partitions, 0);
    source_snapshot_release(&snap);
    teardown();
}

TEST(policy_confines_paths_whatever_lies_outside)
{
    setup();
    write_file("ok/in.parquet", "x");
    write_file("elsewhere/secret.parquet", "y");
    char path[512], target[512];
    snprintf(target, sizeof target, "%s/elsewhere/secret.parquet", root);
    snprintf(path, sizeof path, "%s/ok/escape.parquet", root);
    CHECK_EQ_INT(symlink(target, path), 0);
    snprintf(target, sizeof target, "%s/elsewhere/nothing-here.parquet", root);
    snprintf(path, sizeof path, "%s/ok/dangling.parquet", root);
    CHECK_EQ_INT(symlink(target, path), 0);
    snprintf(target, sizeof target, "%s/ok/in.parquet", root);
    snprintf(path, sizeof path, "%s/ok/inner.parquet", root);
    CHECK_EQ_INT(symlink(target, path), 0);
    struct vt_config cfg;
    config_init_defaults(&cfg);
    snprintf(path, sizeof path, "%s/ok", root);
    strvec_push(&cfg.server.allowed_roots, path);
    struct source_policy *p = source_policy_create(&cfg);
    CHECK(p != NULL);
    struct vt_error err = {0};
    char *real = NULL;
    bool missing = false;
    char msg_a[600] = "", msg_b[600] = "";
    /* Inside: real path; missing inside: said so. */
    snprintf(path, sizeof path, "%s/ok/inner.parquet", root);
    CHECK_EQ_INT(source_policy_confine(p, NULL, path, &real, &missing, &err), VT_ERR_OK);
    CHECK(real && strstr(real, "/ok/in.parquet") && !missing);
    free(real);
    snprintf(path, sizeof path, "%s/ok/none.parquet", root);
    CHECK_EQ_INT(source_policy_confine(p, NULL, path, &real, &missing, &err), VT_ERR_OK);
    CHECK(missing && !real);
    /* Outside, by text or through a link, there or not: one answer. */
    const char *outside[] = {"/etc/passwd", "/nonexistent-vt/x.parquet", NULL, NULL, NULL};
    char a[512], b[512], c[512];
    snprintf(a, sizeof a, "%s/ok/escape.parquet", root);
    snprintf(b, sizeof b, "%s/ok/dangling.parquet", root);
    snprintf(c, sizeof c, "%s/ok/../../..", root);
    outside[2] = a;
    outside[3] = b;
    outside[4] = c;
    for (size_t i = 0; i < 5; i++) {
        vt_error_clear(&err);
        CHECK_EQ_INT(source_policy_confine(p, NULL, outside[i], &real, &missing, &err),
                     VT_ERR_SOURCE_NOT_ALLOWED);
        CHECK(!real && !missing);
        const char *m = vt_error_message(&err);
        const char *rest = m + strlen(outside[i]);
        CHECK(strncmp(m, outside[i], strlen(outside[i])) == 0);
        snprintf(i == 0 ? msg_a : msg_b, sizeof msg_a, "%s", rest);
        if (i > 0)
            CHECK_EQ_STR(msg_b, msg_a);
    }
    /* A config file's own location is readable besides the roots. */
    snprintf(path, sizeof path, "%s/elsewhere/secret.parquet", root);
    char *extra = source_policy_extra_root(path);
    CHECK_EQ_INT(source_policy_confine(p, extra, path, &real, &missing, &err), VT_ERR_OK);
    free(real);
    free(extra);
    /* Requests: locations, endpoints and credential variables. */
    struct vt_dataset_config ds = {.name = "r", .kind = CFG_SOURCE_PARQUET};
    ds.location = "/etc/*.parquet";
    CHECK_EQ_INT(source_policy_check(p, &ds, &err), VT_ERR_SOURCE_NOT_ALLOWED);
    snprintf(path, sizeof path, "%s/ok/*.parquet", root);
    ds.location = path;
    CHECK_EQ_INT(source_policy_check(p, &ds, &err), VT_ERR_OK);
    ds.location = "s3://bucket/data/";
    CHECK_EQ_INT(source_policy_check(p, &ds, &err), VT_ERR_OK); /* the AWS endpoint */
    ds.s3.endpoint = "http://169.254.169.254";
    vt_error_clear(&err);
    CHECK_EQ_INT(source_policy_check(p, &ds, &err), VT_ERR_SOURCE_NOT_ALLOWED);
    CHECK_CONTAINS(vt_error_message(&err), "s3.endpoint");
    ds.s3.endpoint = NULL;
    ds.s3.access_key_id_env = "ADMIN_TOKEN";
    CHECK_EQ_INT(source_policy_check(p, &ds, &err), VT_ERR_SOURCE_NOT_ALLOWED);
    ds.s3.access_key_id_env = "AWS_ACCESS_KEY_ID";
    CHECK_EQ_INT(source_policy_check(p, &ds, &err), VT_ERR_OK);
    source_policy_destroy(p);
    config_free(&cfg);
    teardown();
}

/* Issue 21 item 3: the default roots hold the config datasets' directories
 * and grow with a config reload; a location named through a link is read
 * under both names; a file DuckDB may not open is handed to it through a
 * link in the runtime directory. */
TEST(policy_roots_follow_the_config_and_links)
{
    setup();
    write_file("conf/datasets.toml", "");
    write_file("wh/a.parquet", "a");
    write_file("wh/b.parquet", "b");
    write_file("realdir/t.parquet", "t");
    write_file("new/c.parquet", "c");
    write_file("tmp/.keep", "");
    char path[512], target[600], conf[512];
    snprintf(target, sizeof target, "%s/realdir", root);
    snprintf(path, sizeof path, "%s/linked", root);
    CHECK_EQ_INT(symlink(target, path), 0);
    snprintf(conf, sizeof conf, "%s/conf", root);
    char *root_of = config_location_root("/x.parquet");
    CHECK(root_of == NULL);
    root_of = config_location_root("s3://b/x/");
    CHECK(root_of == NULL);
    snprintf(path, sizeof path, "%s/wh/*.parquet", root);
    root_of = config_location_root(path);
    snprintf(target, sizeof target, "%s/wh", root);
    CHECK_EQ_STR(root_of ? root_of : "", target);
    free(root_of);
    root_of = config_location_root(target); /* a directory is its own root */
    CHECK_EQ_STR(root_of ? root_of : "", target);
    free(root_of);

    struct vt_config cfg;
    config_init_defaults(&cfg);
    free(cfg.dir);
    cfg.dir = strdup(conf);
    cfg.datasets = calloc(2, sizeof *cfg.datasets);
    cfg.n_datasets = 2;
    char loc_a[512], loc_t[512];
    snprintf(loc_a, sizeof loc_a, "%s/wh/a.parquet", root);
    snprintf(loc_t, sizeof loc_t, "%s/conf/../linked/t.parquet", root);
    cfg.datasets[0] = (struct vt_dataset_config){.name = strdup("a"), .kind = CFG_SOURCE_PARQUET,
                                                 .location = strdup(loc_a)};
    cfg.datasets[1] = (struct vt_dataset_config){.name = strdup("t"), .kind = CFG_SOURCE_PARQUET,
                                                 .location = strdup(loc_t)};
    struct source_policy *p = source_policy_create(&cfg);
    CHECK(p != NULL);
    struct vt_error err = {0};
    struct vt_dataset_config req = {.name = "r", .kind = CFG_SOURCE_PARQUET};
    snprintf(path, sizeof path, "%s/wh/b.parquet", root);
    req.location = path;
    CHECK_EQ_INT(source_policy_check(p, &req, &err), VT_ERR_OK);
    snprintf(path, sizeof path, "%s/new/c.parquet", root);
    CHECK_EQ_INT(source_policy_check(p, &req, &err), VT_ERR_SOURCE_NOT_ALLOWED);
    CHECK(source_policy_engine_reads(p, loc_a));
    CHECK(!source_policy_engine_reads(p, path));

    /* Through the link, as written: both names work. */
    char *extra = source_policy_extra_root(loc_t);
    char *real = NULL;
    bool missing = false;
    vt_error_clear(&err);
    CHECK_EQ_INT(source_policy_confine(p, extra, loc_t, &real, &missing, &err), VT_ERR_OK);
    CHECK(real && strstr(real, "/realdir/t.parquet"));
    free(real);
    snprintf(path, sizeof path, "%s/realdir/t.parquet", root);
    CHECK_EQ_INT(source_policy_confine(p, extra, path, &real, &missing, &err), VT_ERR_OK);
    free(real);
    free(extra);

    /* A config reload adds a dataset in a new directory. */
    char loc_c[512];
    snprintf(loc_c, sizeof loc_c, "%s/new/c.parquet", root);
    struct vt_dataset_config added = {.name = "c", .kind = CFG_SOURCE_PARQUET,
                                      .location = loc_c};
    source_policy_add_dataset(p, &added);
    req.location = loc_c;
    vt_error_clear(&err);
    CHECK_EQ_INT(source_policy_check(p, &req, &err), VT_ERR_OK);
    CHECK(!source_policy_engine_reads(p, loc_c)); /* DuckDB's directories stay frozen */

    /* Fetching it hands DuckDB a link in the runtime directory. */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/tmp", root);
    struct source_context ctx = {.temp_dir = tmp, .policy = p, .pin_name = "g7"};
    struct vt_dataset_config ds = {.name = "c", .location = loc_c};
    snprintf(path, sizeof path, "%s/new", root);
    struct storage *st = NULL;
    CHECK_EQ_INT(storage_open(&ds, path, &ctx, &st, &err), VT_ERR_OK);
    struct storage_fetch f = {.name = "c.parquet", .size = -1};
    struct source_snapshot snap = {0};
    CHECK_EQ_INT(st->ops->fetch(st, &f, 1, STORAGE_USE_BUILD, &snap, &err), VT_ERR_OK);
    snprintf(target, sizeof target, "%s/lazy-g7/r-", tmp);
    CHECK(f.path && strncmp(f.path, target, strlen(target)) == 0);
    char buf[8] = "";
    FILE *fp = f.path ? fopen(f.path, "r") : NULL;
    if (fp) {
        CHECK(fgets(buf, sizeof buf, fp) != NULL);
        fclose(fp);
    }
    CHECK_EQ_STR(buf, "c");
    free(f.path);
    /* A file DuckDB may open is read in place. */
    snprintf(path, sizeof path, "%s/wh", root);
    storage_close(st);
    CHECK_EQ_INT(storage_open(&ds, path, &ctx, &st, &err), VT_ERR_OK);
    struct storage_fetch g = {.name = "a.parquet", .size = -1};
    CHECK_EQ_INT(st->ops->fetch(st, &g, 1, STORAGE_USE_BUILD, &snap, &err), VT_ERR_OK);
    CHECK(g.path && strstr(g.path, "/wh/a.parquet") && !strstr(g.path, "/tmp/lazy"));
    free(g.path);
    storage_close(st);
    char pins[512];
    snprintf(pins, sizeof pins, "%s", snap.pin_dir ? snap.pin_dir : "");
    source_snapshot_release(&snap);
    struct stat sb;
    CHECK(stat(pins, &sb) != 0 && errno == ENOENT);
    CHECK(stat(loc_c, &sb) == 0);
    source_policy_destroy(p);
    config_free(&cfg);
    teardown();
}

RUN_TESTS(TEST_CASE(policy_confines_paths_whatever_lies_outside),
          TEST_CASE(policy_roots_follow_the_config_and_links),
          TEST_CASE(local_listing_is_sorted_and_bounded_by_depth),
          TEST_CASE(local_stat_and_read_only_regular_files),
          TEST_CASE(local_fetch_in_place_or_pinned),
          TEST_CASE(local_fetch_for_a_build_pins_until_released_and_messages_name_the_sources),
          TEST_CASE(parquet_directory_glob_single_file_and_hidden),
          TEST_CASE(parquet_hive_partitions_are_typed_and_consistent))
