/* Saved queries without DuckDB (src/saved): the POST /api/v1/queries body
 * (every field rule, each error code), and the files of the saved-queries
 * directory (atomic write, read back equal, removal, name rules, collisions
 * with the config and between files, files that must not load). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "saved/saved.h"
#include "util/strvec.h"
#include "testlib.h"
#include "util/file.h"
#include "util/limits.h"

static char dir[] = "/tmp/vt-test-saved-XXXXXX";

static enum vt_err parse(const char *json, struct saved_request *out, struct vt_error *err)
{
    memset(err, 0, sizeof *err);
    json_error_t jerr;
    json_t *body = json_loads(json, JSON_ALLOW_NUL, &jerr);
    if (!body) {
        fprintf(stderr, "  bad test JSON: %s\n", json);
        return VT_ERR_INTERNAL;
    }
    enum vt_err rc = saved_parse_request(body, out, err);
    json_decref(body);
    return rc;
}

TEST(parses_a_full_request)
{
    struct saved_request r;
    struct vt_error err;
    CHECK_EQ_INT(parse("{\"name\":\"top\",\"sql\":\"SELECT 1\",\"kind\":\"temp\",\"ttl\":\"15m\","
                       "\"refresh\":{\"interval\":\"1h\",\"on_upstream_reload\":true},"
                       "\"materialize\":{\"residency\":\"auto\",\"sort_by\":[\"a\",\"b\"]},"
                       "\"index\":{\"mode\":\"auto\"}}",
                       &r, &err),
                 VT_ERR_OK);
    CHECK_EQ_STR(r.ds.name, "top");
    CHECK_EQ_STR(r.ds.sql, "SELECT 1");
    CHECK(r.ds.kind == CFG_SOURCE_QUERY);
    CHECK(!r.persist);
    CHECK_EQ_INT(r.ttl_ms, 15 * 60 * 1000);
    CHECK_EQ_INT(r.ds.refresh.interval_ms, 3600 * 1000);
    CHECK(r.ds.refresh.on_upstream_reload);
    CHECK(r.ds.materialize.set && r.ds.materialize.residency == CFG_RESIDENCY_AUTO);
    CHECK_EQ_INT(r.ds.materialize.sort_by.len, 2);
    CHECK(r.ds.index_mode == CFG_INDEX_AUTO);
    CHECK_EQ_INT(r.ds.depends_on.len, 0);
    saved_request_release(&r);

    CHECK_EQ_INT(parse("{\"name\":\"p\",\"sql\":\"SELECT 1\",\"kind\":\"query\","
                       "\"materialize\":{\"residency\":\"lazy\",\"reuse_on_start\":true},"
                       "\"ttl\":null,\"index\":null}",
                       &r, &err),
                 VT_ERR_OK);
    CHECK(r.persist && r.ttl_ms == 0);
    CHECK(r.ds.materialize.residency == CFG_RESIDENCY_LAZY && r.ds.materialize.reuse_on_start);
    saved_request_release(&r);
    /* kind defaults to temp */
    CHECK_EQ_INT(parse("{\"name\":\"d\",\"sql\":\"SELECT 1\"}", &r, &err), VT_ERR_OK);
    CHECK(!r.persist);
    saved_request_release(&r);
}

TEST(refuses_bad_requests_with_stable_codes)
{
    static const struct {
        const char *json;
        enum vt_err code;
        const char *msg;
    } bad[] = {
        {"{\"sql\":\"SELECT 1\"}", VT_ERR_INVALID_FIELD, "name"},
        {"{\"name\":5,\"sql\":\"SELECT 1\"}", VT_ERR_INVALID_FIELD, "name"},
        {"{\"name\":\"reload-all\",\"sql\":\"SELECT 1\"}", VT_ERR_INVALID_NAME, "reserved"},
        {"{\"name\":\"a b\",\"sql\":\"SELECT 1\"}", VT_ERR_INVALID_NAME, "A-Z"},
        {"{\"name\":\"..\",\"sql\":\"SELECT 1\"}", VT_ERR_INVALID_NAME, NULL},
        {"{\"name\":\".hidden\",\"sql\":\"SELECT 1\"}", VT_ERR_INVALID_NAME, "start with"},
        {"{\"name\":\"q\",\"sql\":\"SELECT 1\",\"refresh\":{\"interval\":\"1ms\"}}",
         VT_ERR_INVALID_FIELD, "at least 1s"},
        {"{\"name\":\"\",\"sql\":\"SELECT 1\"}", VT_ERR_INVALID_NAME, "empty"},
        {"{\"name\":\"x\"}", VT_ERR_INVALID_FIELD, "sql"},
        {"{\"name\":\"x\",\"sql\":\"\"}", VT_ERR_INVALID_FIELD, "sql"},
        {"{\"name\":\"x\",\"sql\":[\"SELECT 1\"]}", VT_ERR_INVALID_FIELD, "sql"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\\u0000; DROP\"}", VT_ERR_INVALID_FIELD, "NUL"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"kind\":\"permanent\"}", VT_ERR_INVALID_FIELD,
         "kind"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"kind\":1}", VT_ERR_INVALID_FIELD, "kind"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"kind\":\"query\",\"ttl\":\"1h\"}",
         VT_ERR_INVALID_FIELD, "ttl"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"ttl\":\"whenever\"}", VT_ERR_INVALID_FIELD, "ttl"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"ttl\":\"0s\"}", VT_ERR_INVALID_FIELD, "ttl"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"ttl\":30}", VT_ERR_INVALID_FIELD, "ttl"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"refresh\":[]}", VT_ERR_INVALID_FIELD, "refresh"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"refresh\":{\"interval\":5}}", VT_ERR_INVALID_FIELD,
         "interval"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"refresh\":{\"often\":true}}", VT_ERR_UNKNOWN_FIELD,
         "often"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"materialize\":{\"residency\":\"disk\"}}",
         VT_ERR_INVALID_FIELD, "residency"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"materialize\":{\"residency\":\"lazy\"},"
         "\"index\":{\"mode\":\"none\"}}",
         VT_ERR_INVALID_FIELD, "index"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"index\":{\"mode\":\"list\"}}", VT_ERR_INVALID_FIELD,
         "columns"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"depends_on\":[\"t\"]}", VT_ERR_UNKNOWN_FIELD,
         "inferred"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"source\":{\"kind\":\"parquet\"}}",
         VT_ERR_UNKNOWN_FIELD, "source"},
        {"{\"name\":\"x\",\"sql\":\"SELECT 1\",\"lazy\":true}", VT_ERR_UNKNOWN_FIELD, "lazy"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct saved_request r;
        struct vt_error err;
        enum vt_err rc = parse(bad[i].json, &r, &err);
        if (rc != bad[i].code || (bad[i].msg && !strstr(err.msg, bad[i].msg)))
            fprintf(stderr, "  %s -> %s (%s)\n", bad[i].json, vt_err_code(rc), err.msg);
        CHECK_EQ_INT(rc, bad[i].code);
        if (rc == VT_ERR_OK)
            saved_request_release(&r);
    }
    /* The SQL length limit. */
    size_t n = VT_MAX_SQL_BYTES + 64;
    char *big = malloc(n + 64);
    snprintf(big, n + 64, "{\"name\":\"x\",\"sql\":\"SELECT 1 --");
    size_t at = strlen(big);
    memset(big + at, 'x', n - at);
    memcpy(big + n, "\"}", 3);
    struct saved_request r;
    struct vt_error err;
    CHECK_EQ_INT(parse(big, &r, &err), VT_ERR_LIMIT_EXCEEDED);
    free(big);
}

static struct vt_dataset_config make(const char *name, const char *sql)
{
    struct saved_request r;
    struct vt_error err;
    char json[512];
    snprintf(json, sizeof json,
             "{\"name\":\"%s\",\"sql\":\"%s\",\"kind\":\"query\","
             "\"refresh\":{\"interval\":\"10m\",\"on_upstream_reload\":true},"
             "\"materialize\":{\"residency\":\"lazy\",\"sort_by\":[\"k\"]}}",
             name, sql);
    CHECK_EQ_INT(parse(json, &r, &err), VT_ERR_OK);
    strvec_push(&r.ds.depends_on, "trips");
    return r.ds;
}

TEST(files_round_trip)
{
    char sub[256];
    snprintf(sub, sizeof sub, "%s/a/b/datasets.d", dir); /* parents created on first write */
    struct vt_dataset_config q = make("top.1", "SELECT k, \\\"quoted\\\" FROM trips -- note");
    struct vt_error err = {0};
    CHECK_EQ_INT(saved_write(sub, &q, &err), VT_ERR_OK);
    char *path = saved_file_path(sub, "top.1");
    CHECK_CONTAINS(path, "/a/b/datasets.d/top.1.toml");
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode));
    /* Written again (replaced atomically): no temp file is left beside it. */
    CHECK_EQ_INT(saved_write(sub, &q, &err), VT_ERR_OK);
    DIR *d = opendir(sub);
    int entries = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            entries++;
    if (d)
        closedir(d);
    CHECK_EQ_INT(entries, 1);

    struct vt_config cfg;
    config_init_defaults(&cfg);
    struct saved_file *files = NULL;
    size_t n = 0;
    CHECK_EQ_INT(saved_load(sub, &cfg, &files, &n, NULL, &err), VT_ERR_OK);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        CHECK(config_dataset_equal(&files[0].ds, &q));
        CHECK_EQ_STR(files[0].path, path);
    }
    saved_files_free(files, n);

    CHECK_EQ_INT(saved_remove(sub, "top.1", &err), VT_ERR_OK);
    CHECK(stat(path, &st) != 0);
    CHECK_EQ_INT(saved_remove(sub, "top.1", &err), VT_ERR_OK); /* absent is fine */
    CHECK_EQ_INT(saved_load(sub, &cfg, &files, &n, NULL, &err), VT_ERR_OK);
    CHECK_EQ_INT(n, 0);
    /* An absent directory holds no saved queries. */
    char none[300];
    snprintf(none, sizeof none, "%s/none", dir);
    CHECK_EQ_INT(saved_load(none, &cfg, &files, &n, NULL, &err), VT_ERR_OK);
    CHECK_EQ_INT(n, 0);
    free(path);
    config_free(&cfg);
    config_dataset_free(&q);
}

static void write_text(const char *d, const char *file, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", d, file);
    struct vt_error err = {0};
    util_write_file_atomic(p, text, strlen(text), 0644, VT_ERR_INTERNAL, &err);
}

/* One bad file never stops the start (issue 22 item 3): it is skipped with
 * a line naming it and the reason, and the good files load. */
TEST(collisions_and_bad_files_are_skipped_naming_the_file)
{
    char sub[256];
    snprintf(sub, sizeof sub, "%s/coll", dir);
    mkdir(sub, 0755);
    struct vt_config cfg;
    struct vt_error err = {0};
    const char *text = "[[dataset]]\nname = \"trips\"\nsource.location = \"t.parquet\"\n";
    CHECK_EQ_INT(config_load_text(text, strlen(text), "/etc/v/datasets.toml", "/etc/v", &cfg,
                                  &err),
                 VT_ERR_OK);
    cfg.path = strdup("/etc/v/datasets.toml");
    struct saved_file *files = NULL;
    size_t n = 0;
    struct strvec skipped = {0};
    write_text(sub, "good.toml", "[[dataset]]\nname = \"good\"\nsql = \"SELECT 1\"\n");

    write_text(sub, "Trips.toml", "[[dataset]]\nname = \"Trips\"\nsql = \"SELECT 1\"\n");
    CHECK_EQ_INT(saved_load(sub, &cfg, &files, &n, &skipped, &err), VT_ERR_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(skipped.len, 1);
    if (skipped.len) {
        CHECK_CONTAINS(skipped.items[0], "/etc/v/datasets.toml");
        CHECK_CONTAINS(skipped.items[0], "/coll/Trips.toml");
    }
    if (n)
        CHECK_EQ_STR(files[0].ds.name, "good");
    saved_files_free(files, n);
    strvec_free(&skipped);
    char p[512];
    snprintf(p, sizeof p, "%s/Trips.toml", sub);
    unlink(p);

    write_text(sub, "a.toml", "[[dataset]]\nname = \"a\"\nsql = \"SELECT 1\"\n");
    write_text(sub, "A.toml", "[[dataset]]\nname = \"A\"\nsql = \"SELECT 1\"\n");
    CHECK_EQ_INT(saved_load(sub, &cfg, &files, &n, &skipped, &err), VT_ERR_OK);
    CHECK_EQ_INT(n, 2); /* A.toml sorts first; a.toml is the second definition */
    CHECK_EQ_INT(skipped.len, 1);
    if (skipped.len)
        CHECK_CONTAINS(skipped.items[0], "a.toml: dataset \"a\" is also defined in");
    saved_files_free(files, n);
    strvec_free(&skipped);
    snprintf(p, sizeof p, "%s/A.toml", sub);
    unlink(p);

    static const struct {
        const char *text;
        const char *msg;
    } bad[] = {
        {"[[dataset]]\nname = \"b\"\nsql = \"SELECT 1\"\n", "named after it"},
        {"[[dataset]]\nname = \"a\"\nsource.location = \"x.parquet\"\n", "kind \"query\""},
        {"[[dataset]]\nname = \"a\"\nsql = \"SELECT 1\"\n[[dataset]]\nname = \"z\"\nsql = \"S\"\n",
         "exactly one"},
        {"[server]\nport = 1\n", "unknown key"},
        {"[[dataset]]\nname = \"a\"\nsql = \"SELECT 1\"\nrefresh = { interval = \"x\" }\n",
         "interval"},
        {"[[dataset]]\nname = \"a\"\nsql = \"SELECT 1\"\nrefresh = { interval = \"1ms\" }\n",
         "at least 1s"},
        {"name = ", "a.toml"},
        {"\x01\x02\xff\xfe binary", "a.toml"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(sub, "a.toml", bad[i].text);
        CHECK_EQ_INT(saved_load(sub, &cfg, &files, &n, &skipped, &err), VT_ERR_OK);
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(skipped.len, 1);
        if (skipped.len) {
            CHECK_CONTAINS(skipped.items[0], bad[i].msg);
            CHECK_CONTAINS(skipped.items[0], "/coll/a.toml");
        }
        saved_files_free(files, n);
        strvec_free(&skipped);
    }
    /* Hidden and temp files are not saved queries. */
    write_text(sub, "a.toml", "[[dataset]]\nname = \"a\"\nsql = \"SELECT 1\"\n");
    write_text(sub, ".hidden.toml", "garbage");
    write_text(sub, "a.toml.tmp-123", "garbage");
    write_text(sub, "notes.txt", "garbage");
    CHECK_EQ_INT(saved_load(sub, &cfg, &files, &n, &skipped, &err), VT_ERR_OK);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(skipped.len, 0);
    saved_files_free(files, n);
    config_free(&cfg);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    struct tl_case cases[] = {TEST_CASE(parses_a_full_request),
                              TEST_CASE(refuses_bad_requests_with_stable_codes),
                              TEST_CASE(files_round_trip),
                              TEST_CASE(collisions_and_bad_files_are_skipped_naming_the_file)};
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    util_remove_tree(dir);
    return rc;
}
