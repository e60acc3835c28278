/* The shared storage's documents (src/cluster/store.c): manifests and CURRENT
 * round-trip, and what is not one is refused (a reader trusts neither). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "testlib.h"
#include "util/timeutil.h"

TEST(ulid_time)
{
    CHECK_EQ_INT(cluster_ulid_ms("00000000000000000000000000"), 0);
    CHECK_EQ_INT(cluster_ulid_ms("0000000001ZZZZZZZZZZZZZZZZ"), 1);
    CHECK_EQ_INT(cluster_ulid_ms("00000000100000000000000000"), 32);
    char id[27];
    ulid_new(id);
    int64_t ms = cluster_ulid_ms(id);
    CHECK(ms > 1700000000000LL && ms < 4102444800000LL);
    CHECK_EQ_INT(cluster_ulid_ms("short"), -1);
    CHECK_EQ_INT(cluster_ulid_ms("0000000000000000000000000U"), 0); /* only the time part read */
    CHECK_EQ_INT(cluster_ulid_ms("U0000000000000000000000000"), -1); /* U is not Crockford */
}

TEST(manifest_round_trip)
{
    struct cluster_manifest m = {.rows = 42, .lazy = true, .file = (char *)"data.parquet",
                                 .file_size = 1234, .published_at_us = 1700000000000000LL,
                                 .build_ms = 17, .refresh_source = CAT_REFRESH_CASCADE};
    snprintf(m.dataset, sizeof m.dataset, "trips");
    snprintf(m.generation_id, sizeof m.generation_id, "01M8D5XQBT7FQRW0AAVXRGR4R6");
    snprintf(m.writer, sizeof m.writer, "host-1-01M8");
    strvec_push(&m.col_names, "id");
    strvec_push(&m.col_types, "BIGINT");
    strvec_push(&m.col_names, "total");
    strvec_push(&m.col_types, "HUGEINT");
    strvec_push(&m.cast_names, "total");
    strvec_push(&m.cast_types, "HUGEINT");
    char *text = cluster_manifest_json(&m);
    CHECK(text != NULL);
    struct cluster_manifest back;
    struct vt_error err = {0};
    CHECK_EQ_INT(cluster_manifest_parse(text, strlen(text), &back, &err), VT_ERR_OK);
    CHECK_EQ_STR(back.dataset, "trips");
    CHECK_EQ_STR(back.generation_id, m.generation_id);
    CHECK_EQ_INT(back.rows, 42);
    CHECK(back.lazy);
    CHECK_EQ_STR(back.file, "data.parquet");
    CHECK_EQ_INT(back.file_size, 1234);
    CHECK_EQ_INT(back.published_at_us, 1700000000000000LL);
    CHECK_EQ_INT(back.refresh_source, CAT_REFRESH_CASCADE);
    CHECK_EQ_INT(back.col_names.len, 2);
    CHECK_EQ_STR(back.cast_types.items[0], "HUGEINT");
    CHECK(back.source_version == NULL);
    cluster_manifest_release(&back);
    free(text);
    strvec_free(&m.col_names);
    strvec_free(&m.col_types);
    strvec_free(&m.cast_names);
    strvec_free(&m.cast_types);
}

TEST(manifest_refusals)
{
    static const char *const bad[] = {
        "", "[]", "{}", "{\"format\":\"other\"}",
        /* a file name that leaves the folder */
        "{\"format\":\"vitrine-generation/1\",\"dataset\":\"t\",\"generation_id\":"
        "\"01M8D5XQBT7FQRW0AAVXRGR4R6\",\"files\":[{\"name\":\"../x\",\"size\":1}]}",
        /* a cast type that would be SQL */
        "{\"format\":\"vitrine-generation/1\",\"dataset\":\"t\",\"generation_id\":"
        "\"01M8D5XQBT7FQRW0AAVXRGR4R6\",\"files\":[{\"name\":\"d\",\"size\":1}],"
        "\"casts\":[{\"name\":\"c\",\"type\":\"INT); DROP TABLE x; --\"}]}",
        /* not a ULID */
        "{\"format\":\"vitrine-generation/1\",\"dataset\":\"t\",\"generation_id\":\"x\","
        "\"files\":[{\"name\":\"d\",\"size\":1}]}",
        /* duplicate keys */
        "{\"format\":\"vitrine-generation/1\",\"format\":\"vitrine-generation/1\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cluster_manifest m;
        struct vt_error err = {0};
        CHECK_EQ_INT(cluster_manifest_parse(bad[i], strlen(bad[i]), &m, &err),
                     VT_ERR_INVALID_CONFIG);
    }
}

/* A manifest text with one cast of type `type`. */
static char *manifest_with_cast(const char *type)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:[{s:s,s:i}],s:[{s:s,s:s}]}", "format",
                          "vitrine-generation/1", "dataset", "t", "generation_id",
                          "01M8D5XQBT7FQRW0AAVXRGR4R6", "files", "name", "d", "size", 1, "casts",
                          "name", "c", "type", type);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

TEST(manifest_cast_types)
{
    /* what the writer publishes for wide integers, also inside nested types */
    static const char *const ok[] = {"HUGEINT", "UHUGEINT[]", "DECIMAL(38,2)", "HUGEINT[3][]",
                                     "STRUCT(a HUGEINT, \"b) c\" UHUGEINT[])[2]",
                                     "MAP(VARCHAR, HUGEINT)", "STRUCT(\"x\"\"y(\" HUGEINT)"};
    /* types that close the reader's CAST( (or leave a quote or a bracket
     * open) and so add SQL of their own with only these characters */
    static const char *const bad[] = {"INTEGER) AS c), 42 AS x, (SELECT CAST(NULL AS INTEGER",
                                      "INTEGER) AS c, 42 AS x, CAST(NULL AS INTEGER",
                                      "INTEGER)", "STRUCT(a INTEGER]", "HUGEINT[", "(",
                                      "STRUCT(\"a) AS c, 1 AS \" INTEGER", "\"", "]["};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char *text = manifest_with_cast(ok[i]);
        struct cluster_manifest m;
        struct vt_error err = {0};
        CHECK_EQ_INT(cluster_manifest_parse(text, strlen(text), &m, &err), VT_ERR_OK);
        CHECK_EQ_STR(m.cast_types.items[0], ok[i]);
        cluster_manifest_release(&m);
        free(text);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = manifest_with_cast(bad[i]);
        struct cluster_manifest m;
        struct vt_error err = {0};
        CHECK_EQ_INT(cluster_manifest_parse(text, strlen(text), &m, &err), VT_ERR_INVALID_CONFIG);
        free(text);
    }
}

TEST(current_round_trip)
{
    struct cluster_current c = {.published_at_us = 5};
    snprintf(c.generation_id, sizeof c.generation_id, "01M8D5XQBT7FQRW0AAVXRGR4R6");
    snprintf(c.writer, sizeof c.writer, "w");
    char *text = cluster_current_json(&c);
    struct cluster_current back;
    struct vt_error err = {0};
    CHECK_EQ_INT(cluster_current_parse(text, strlen(text), &back, &err), VT_ERR_OK);
    CHECK_EQ_STR(back.generation_id, c.generation_id);
    CHECK_EQ_STR(back.previous, "");
    free(text);
    snprintf(c.previous, sizeof c.previous, "01M8D5XQ0000000000000000RR");
    text = cluster_current_json(&c);
    CHECK_EQ_INT(cluster_current_parse(text, strlen(text), &back, &err), VT_ERR_OK);
    CHECK_EQ_STR(back.previous, "01M8D5XQ0000000000000000RR");
    free(text);
    const char *bad = "{\"generation_id\":\"nope\"}";
    CHECK_EQ_INT(cluster_current_parse(bad, strlen(bad), &back, &err), VT_ERR_INVALID_CONFIG);
}

RUN_TESTS(TEST_CASE(ulid_time), TEST_CASE(manifest_round_trip), TEST_CASE(manifest_refusals),
          TEST_CASE(manifest_cast_types),
          TEST_CASE(current_round_trip))
