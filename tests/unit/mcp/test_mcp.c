/*
 * The MCP endpoint's own logic (src/mcp), below the HTTP transport: the
 * JSON-RPC envelope's classification, the Mcp-Name header values, the list
 * cursors (round trip, one spelling per key, refusals), the log levels, and
 * over a live catalog the sorted dataset list, the names a "not found"
 * message offers, the schema describe_dataset answers and when the sql tool
 * exists. The transport itself (eras, headers, SDK clients) is
 * tests/e2e/test_mcp*.py.
 */
#include <jansson.h>
#include <string.h>

#include "mcp/mcp.h"
#include "mcp/mcp_int.h"
#include "testcat.h"
#include "testlib.h"
#include "util/limits.h"

static struct testcat tc;

static enum mcp_kind kind_of(const char *body)
{
    struct mcp_envelope e;
    enum mcp_kind k = mcp_envelope_parse(body, strlen(body), &e);
    mcp_envelope_release(&e);
    return k;
}

TEST(the_envelope_classifies_messages)
{
    CHECK_EQ_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), MCP_REQUEST);
    CHECK_EQ_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\","
                         "\"params\":{}}"),
                 MCP_REQUEST);
    CHECK_EQ_INT(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"),
                 MCP_NOTIFICATION);
    CHECK_EQ_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"), MCP_RESPONSE);
    CHECK_EQ_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1}}"), MCP_RESPONSE);
    CHECK_EQ_INT(kind_of("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]"), MCP_BATCH);
    CHECK_EQ_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,"), MCP_PARSE_ERROR);
    CHECK_EQ_INT(kind_of(""), MCP_PARSE_ERROR);
    CHECK_EQ_INT(kind_of("\"just a string\""), MCP_PARSE_ERROR); /* not an object */
    CHECK_EQ_INT(kind_of("42"), MCP_PARSE_ERROR);
    /* a key twice is no JSON-RPC message we can trust */
    CHECK_EQ_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}"),
                 MCP_PARSE_ERROR);
    static const char *const invalid[] = {
        "{\"id\":1,\"method\":\"ping\"}",                         /* no jsonrpc */
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",     /* wrong version */
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",   /* id neither string nor int */
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",            /* method not a string */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}", /* params not an object */
        "{\"jsonrpc\":\"2.0\",\"id\":1}",                         /* neither method nor result */
        "{\"jsonrpc\":\"2.0\",\"result\":{}}",                    /* a response without id */
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        if (kind_of(invalid[i]) != MCP_INVALID)
            fprintf(stderr, "  not invalid: %s\n", invalid[i]);
        CHECK_EQ_INT(kind_of(invalid[i]), MCP_INVALID);
    }
    /* nesting past the limit is refused, not recursed into */
    struct strbuf deep;
    sb_init(&deep, 0);
    sb_adds(&deep, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":");
    for (int i = 0; i < VT_MAX_JSON_DEPTH + 5; i++)
        sb_adds(&deep, "[");
    for (int i = 0; i < VT_MAX_JSON_DEPTH + 5; i++)
        sb_adds(&deep, "]");
    sb_adds(&deep, "}}");
    CHECK_EQ_INT(kind_of(deep.buf), MCP_INVALID);
    sb_release(&deep);
}

TEST(the_envelope_hands_out_its_parts)
{
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"method\":\"tools/call\",\"params\":"
                       "{\"name\":\"count_rows\",\"_meta\":{\"" MCP_META_VERSION
                       "\":\"2026-07-28\"}}}";
    struct mcp_envelope e;
    CHECK_EQ_INT(mcp_envelope_parse(body, strlen(body), &e), MCP_REQUEST);
    CHECK_EQ_STR(e.method, "tools/call");
    CHECK_EQ_STR(json_string_value(e.id), "r-1");
    CHECK_EQ_STR(json_string_value(json_object_get(e.params, "name")), "count_rows");
    CHECK_EQ_STR(e.meta_version, "2026-07-28");
    mcp_envelope_release(&e);
    CHECK(e.msg == NULL);
    /* a version that is not a string is there but empty: the handler refuses it */
    body = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"_meta\":{\"" MCP_META_VERSION
           "\":5}}}";
    CHECK_EQ_INT(mcp_envelope_parse(body, strlen(body), &e), MCP_REQUEST);
    CHECK_EQ_STR(e.meta_version, "");
    mcp_envelope_release(&e);
    /* legacy: no _meta */
    body = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";
    CHECK_EQ_INT(mcp_envelope_parse(body, strlen(body), &e), MCP_REQUEST);
    CHECK(e.meta_version == NULL && e.params == NULL);
    mcp_envelope_release(&e);
    /* an invalid request keeps a valid id for the error reply */
    body = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\",\"params\":3}";
    CHECK_EQ_INT(mcp_envelope_parse(body, strlen(body), &e), MCP_INVALID);
    CHECK_EQ_INT(json_integer_value(e.id), 9);
    mcp_envelope_release(&e);
}

TEST(header_values_decode_plain_or_base64)
{
    char out[64];
    CHECK_EQ_INT(mcp_header_decode("query_dataset", out, sizeof out), 13);
    CHECK_EQ_STR(out, "query_dataset");
    /* "café" in the base64 sentinel */
    CHECK_EQ_INT(mcp_header_decode("=?base64?Y2Fmw6k=?=", out, sizeof out), 5);
    CHECK_EQ_STR(out, "caf\xc3\xa9");
    CHECK_EQ_INT(mcp_header_decode("=?base64?Y2Fmw6k?=", out, sizeof out), 5); /* unpadded */
    CHECK_EQ_INT(mcp_header_decode("=?base64?Y2F*w6k=?=", out, sizeof out), -1);
    CHECK_EQ_INT(mcp_header_decode("=?base64?YQ==YQ==?=", out, sizeof out), -1); /* after padding */
    CHECK_EQ_INT(mcp_header_decode("=?base64?AGE=?=", out, sizeof out), -1);     /* a NUL */
    CHECK_EQ_INT(mcp_header_decode("=?base64?YWJjZGVm?=", out, 4), -1);          /* no room */
    CHECK_EQ_INT(mcp_header_decode("abcdef", out, 4), -1);
    /* too short to be the sentinel: taken as is */
    CHECK_EQ_INT(mcp_header_decode("=?base64?=", out, sizeof out), 10);
    CHECK_EQ_STR(out, "=?base64?=");
    CHECK_EQ_INT(mcp_header_decode("=?base64?" "?=", out, sizeof out), 0); /* empty */
}

TEST(cursors_round_trip_and_refuse_strangers)
{
    static const char *const keys[] = {"", "a", "ab", "abc", "trips", "events_2026",
                                       "\xc3\xa9t\xc3\xa9", "zzzzzzzzzzzzzzzzzzzzzzzzz"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char cur[128], back[64];
        size_t n = mcp_cursor_encode(keys[i], cur, sizeof cur);
        CHECK(n > 0);
        CHECK(!strncmp(cur, "v1.", 3));
        CHECK(!strpbrk(cur + 3, "+/=")); /* base64url, no padding: safe in JSON and URLs */
        CHECK_EQ_INT(mcp_cursor_decode(cur, back, sizeof back), (ssize_t)strlen(keys[i]));
        CHECK_EQ_STR(back, keys[i]);
    }
    char cur[8], back[64];
    CHECK_EQ_INT(mcp_cursor_encode("trips", cur, sizeof cur), 0); /* no room */
    CHECK_EQ_INT(mcp_cursor_decode("dHJpcHM", back, sizeof back), -1);      /* no v1. */
    CHECK_EQ_INT(mcp_cursor_decode("v2.dHJpcHM", back, sizeof back), -1);
    CHECK_EQ_INT(mcp_cursor_decode("v1.dHJpcHM=", back, sizeof back), -1);  /* padding */
    CHECK_EQ_INT(mcp_cursor_decode("v1.dHJpc", back, sizeof back), -1);     /* 1 char left */
    CHECK_EQ_INT(mcp_cursor_decode("v1.dHJpcHN", back, sizeof back), -1);   /* stray bits */
    CHECK_EQ_INT(mcp_cursor_decode("v1.AA", back, sizeof back), -1);        /* a NUL */
    CHECK_EQ_INT(mcp_cursor_decode("v1.dHJpcHM", back, 3), -1);             /* no room */
    CHECK_EQ_INT(mcp_cursor_decode("v1.dHJpcHM", back, sizeof back), 5);
}

TEST(list_requests_read_their_cursor)
{
    struct mcp_call c;
    memset(&c, 0, sizeof c);
    char after[64];
    CHECK(mcp_list_cursor(&c, after, sizeof after)); /* no params */
    CHECK_EQ_STR(after, "");
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_add_next_cursor(&sb, "stations");
    /* sb holds ,"nextCursor":"v1...": the next request sends it back */
    struct strbuf obj;
    sb_init(&obj, 0);
    sb_addf(&obj, "{%s}", sb.buf + 1);
    json_t *page = json_loads(obj.buf, 0, NULL);
    const char *next = json_string_value(json_object_get(page, "nextCursor"));
    CHECK(next);
    c.params = json_pack("{s:s}", "cursor", next ? next : "");
    json_decref(page);
    CHECK(mcp_list_cursor(&c, after, sizeof after));
    CHECK_EQ_STR(after, "stations");
    json_decref(c.params);
    c.params = json_pack("{s:n}", "cursor");
    CHECK(mcp_list_cursor(&c, after, sizeof after));
    CHECK_EQ_STR(after, "");
    json_decref(c.params);
    c.params = json_pack("{s:i}", "cursor", 3);
    CHECK(!mcp_list_cursor(&c, after, sizeof after));
    json_decref(c.params);
    c.params = json_pack("{s:s}", "cursor", "page-2");
    CHECK(!mcp_list_cursor(&c, after, sizeof after));
    json_decref(c.params);
    sb_release(&sb);
    sb_release(&obj);
}

TEST(log_levels_are_rfc_5424_names)
{
    CHECK_EQ_INT(mcp_level_parse("debug"), MCP_LOG_DEBUG);
    CHECK_EQ_INT(mcp_level_parse("warning"), MCP_LOG_WARNING);
    CHECK_EQ_INT(mcp_level_parse("emergency"), MCP_LOG_EMERGENCY);
    CHECK_EQ_INT(mcp_level_parse("warn"), -1);
    CHECK_EQ_INT(mcp_level_parse("DEBUG"), -1);
    CHECK_EQ_INT(mcp_level_parse(""), -1);
}

TEST(datasets_are_listed_sorted_and_named_in_messages)
{
    struct cat_status *list = NULL;
    size_t n = mcp_sorted_status(tc.cat, &list);
    CHECK_EQ_INT(n, 3);
    if (n == 3) { /* registered as zebra, apples, mango */
        CHECK_EQ_STR(list[0].name, "apples");
        CHECK_EQ_STR(list[1].name, "mango");
        CHECK_EQ_STR(list[2].name, "zebra");
    }
    cat_status_list_free(list, n);
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_add_dataset_names(&sb, tc.cat);
    CHECK_EQ_STR(sb.buf, " Datasets: apples, mango, zebra.");
    sb_release(&sb);
}

TEST(describe_dataset_is_the_catalog_schema)
{
    struct cat_dataset *ds = cat_dataset_get(tc.cat, "apples");
    CHECK(ds);
    if (!ds)
        return;
    struct vt_error err = {0};
    struct cat_generation *gen = cat_dataset_acquire(ds, time_mono_ms() + 10000, &err);
    cat_dataset_put(ds);
    CHECK(gen);
    if (!gen)
        return;
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_write_schema(&sb, "apples", gen);
    json_t *doc = json_loads(sb.buf, 0, NULL);
    CHECK(doc);
    if (doc) {
        CHECK_EQ_STR(json_string_value(json_object_get(doc, "name")), "apples");
        CHECK_EQ_INT(json_integer_value(json_object_get(doc, "rows")), 12);
        json_t *cols = json_object_get(doc, "columns");
        CHECK_EQ_INT(json_array_size(cols), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(cols, 1), "name")),
                     "variety");
        json_decref(doc);
    }
    sb_release(&sb);
    cat_generation_release(gen);
}

TEST(the_sql_tool_needs_both_switches)
{
    struct vt_config cfg = tc.cfg;
    struct mcp_env env = {&cfg, tc.cat, tc.pool};
    cfg.mcp.expose_sql = true;
    cfg.sql.enabled = true;
    CHECK(mcp_sql_tool_available(&env));
    cfg.sql.enabled = false;
    CHECK(!mcp_sql_tool_available(&env));
    cfg.sql.enabled = true;
    cfg.mcp.expose_sql = false;
    CHECK(!mcp_sql_tool_available(&env));
}

int main(void)
{
    static const char *const files[] = {
        "zebra", "SELECT range AS id FROM range(3)",
        "apples", "SELECT range AS id, 'v' || range AS variety FROM range(12)",
        "mango", "SELECT 1 AS id",
        NULL,
    };
    if (testcat_open(&tc, files,
                     "[[dataset]]\nname = \"zebra\"\nsource.kind = \"parquet\"\n"
                     "source.location = \"%s/zebra.parquet\"\n"
                     "[[dataset]]\nname = \"apples\"\nsource.kind = \"parquet\"\n"
                     "source.location = \"%s/apples.parquet\"\n"
                     "[[dataset]]\nname = \"mango\"\nsource.kind = \"parquet\"\n"
                     "source.location = \"%s/mango.parquet\"\n") != 0) {
        fprintf(stderr, "cannot open the test catalog\n");
        return 1;
    }
    static const struct tl_case cases[] = {
        TEST_CASE(the_envelope_classifies_messages),
        TEST_CASE(the_envelope_hands_out_its_parts),
        TEST_CASE(header_values_decode_plain_or_base64),
        TEST_CASE(cursors_round_trip_and_refuse_strangers),
        TEST_CASE(list_requests_read_their_cursor),
        TEST_CASE(log_levels_are_rfc_5424_names),
        TEST_CASE(datasets_are_listed_sorted_and_named_in_messages),
        TEST_CASE(describe_dataset_is_the_catalog_schema),
        TEST_CASE(the_sql_tool_needs_both_switches),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    testcat_close(&tc);
    return rc;
}
