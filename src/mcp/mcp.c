/*
 * The MCP endpoint (see mcp.h for the protocol decisions). One request is one
 * JSON-RPC message: it is parsed and checked on the HTTP thread; methods that
 * only read the catalog answer there; tools that read data go through the
 * execution layer, from the index fast path on the HTTP thread when it can
 * answer with a few rows, else as a job on the query pool, exactly like
 * POST /query. Replies are built as text: rows arrive already encoded as JSON
 * from the bounded sink and are pasted, never re-parsed.
 */
#include "mcp/mcp.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/catalog.h"
#include "exec/exec.h"
#include "util/jsonw.h"
#include "util/limits.h"
#include "util/log.h"

#define MODERN_VERSION "2026-07-28"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define RESOURCE_PREFIX "vitrine://datasets/"
#define INLINE_MAX_ROWS 64
#define RESOURCE_SAMPLE_ROWS 5
#define LIST_TTL_MS 5000

/* JSON-RPC and MCP error codes. */
#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL -32603
#define MCP_RESOURCE_NOT_FOUND_LEGACY -32002
#define MCP_HEADER_MISMATCH -32020
#define MCP_UNSUPPORTED_VERSION -32022

/* Versions we speak, newest first; the legacy ones use `initialize`. */
static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
#define N_LEGACY (sizeof legacy_versions / sizeof legacy_versions[0])

static const char SERVER_INFO[] = "{\"name\":\"vitrine\",\"title\":\"vitrine datasets\",\"version\":\"" VT_VERSION "\"}";

static const char INSTRUCTIONS[] =
    "vitrine publishes tabular datasets (Parquet files and Delta tables). Call list_datasets to "
    "see what exists, describe_dataset for a dataset's columns and types before querying it, "
    "count_rows to size a filter, and query_dataset to read rows (filtered, sorted, grouped, "
    "paged).";

/* ---------------------------------------------------------------- tools */

#define PRED_SCHEMA                                                                             \
    "{\"type\":\"object\",\"properties\":{"                                                    \
    "\"col\":{\"type\":\"string\",\"description\":\"Column name (exact, case-sensitive).\"},"   \
    "\"op\":{\"type\":\"string\",\"enum\":[\"eq\",\"neq\",\"gt\",\"gte\",\"lt\",\"lte\","      \
    "\"like\",\"ilike\",\"in\",\"between\",\"is_null\",\"is_not_null\"]},"                       \
    "\"val\":{\"description\":\"The value: a list for in, [low, high] (inclusive) for between, "  \
    "absent for is_null and is_not_null. Dates and timestamps as ISO-8601 strings.\"}},"         \
    "\"required\":[\"col\",\"op\"],\"additionalProperties\":false}"

#define NAME_PROPERTY                                                                           \
    "\"name\":{\"type\":\"string\",\"description\":\"Dataset name, as list_datasets gives it.\"}"

static const char QUERY_INPUT[] =
    "{\"type\":\"object\",\"properties\":{" NAME_PROPERTY ","
    "\"columns\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Columns to "
    "return; empty or absent means all. Ignored with group_by.\"},"
    "\"predicates\":{\"type\":\"array\",\"items\":" PRED_SCHEMA ",\"description\":\"Row filters, "
    "ANDed.\"},"
    "\"order_by\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"col\":{"
    "\"type\":\"string\"},\"dir\":{\"type\":\"string\",\"enum\":[\"asc\",\"desc\"]}},"
    "\"required\":[\"col\"],\"additionalProperties\":false}},"
    "\"group_by\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"aggregations\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"op\":{"
    "\"type\":\"string\",\"enum\":[\"count\",\"sum\",\"avg\",\"min\",\"max\"]},\"col\":{\"type\":"
    "\"string\"},\"alias\":{\"type\":\"string\"}},\"required\":[\"op\"],"
    "\"additionalProperties\":false},\"description\":\"Needs group_by. Default alias: count, or "
    "op_col.\"},"
    "\"having\":{\"type\":\"array\",\"items\":" PRED_SCHEMA ",\"description\":\"Filters on "
    "group_by columns or aggregation aliases.\"},"
    "\"distinct\":{\"type\":\"boolean\"},"
    "\"limit\":{\"type\":[\"integer\",\"null\"],\"minimum\":0,\"description\":\"Cap on rows "
    "across all pages.\"},"
    "\"page\":{\"type\":\"integer\",\"minimum\":1},"
    "\"page_size\":{\"type\":\"integer\",\"minimum\":1}},"
    "\"required\":[\"name\"],\"additionalProperties\":false}";

static const char COUNT_INPUT[] =
    "{\"type\":\"object\",\"properties\":{" NAME_PROPERTY ","
    "\"predicates\":{\"type\":\"array\",\"items\":" PRED_SCHEMA "}},"
    "\"required\":[\"name\"],\"additionalProperties\":false}";

static const char NAME_INPUT[] =
    "{\"type\":\"object\",\"properties\":{" NAME_PROPERTY "},"
    "\"required\":[\"name\"],\"additionalProperties\":false}";

static const char EMPTY_INPUT[] =
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";

static const char LIST_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"datasets\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"state\":{\"type\":\"string\","
    "\"enum\":[\"pending\",\"building\",\"published\",\"failed\"]},\"kind\":{\"type\":\"string\"},"
    "\"rows\":{\"type\":\"integer\"},\"columns\":{\"type\":\"integer\"}},\"required\":[\"name\","
    "\"state\",\"kind\",\"rows\",\"columns\"]}}},\"required\":[\"datasets\"]}";

static const char DESCRIBE_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"rows\":{\"type\":"
    "\"integer\"},\"columns\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},\"logical\":{\"type\":"
    "\"string\"},\"nullable\":{\"type\":\"boolean\"}},\"required\":[\"name\",\"type\","
    "\"logical\",\"nullable\"]}},\"indexed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"sample\":{\"type\":[\"object\",\"null\"]}},\"required\":[\"name\",\"rows\",\"columns\","
    "\"indexed\",\"sample\"]}";

static const char COUNT_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"dataset\":{\"type\":\"string\"},\"count\":{\"type\":"
    "\"integer\",\"minimum\":0}},\"required\":[\"dataset\",\"count\"]}";

static const char QUERY_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"dataset\":{\"type\":\"string\"},\"rows\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"object\"}},\"row_count\":{\"type\":\"integer\"},\"page\":{"
    "\"type\":\"integer\"},\"page_size\":{\"type\":\"integer\"},\"truncated\":{\"type\":"
    "\"boolean\"},\"caps\":{\"type\":\"object\",\"properties\":{\"max_rows\":{\"type\":"
    "\"integer\"},\"max_bytes\":{\"type\":\"integer\"}},\"required\":[\"max_rows\","
    "\"max_bytes\"]},\"next\":{\"type\":[\"object\",\"null\"],\"description\":\"The arguments "
    "that fetch the rows after these, or null when there are none.\"}},\"required\":["
    "\"dataset\",\"rows\",\"row_count\",\"page\",\"page_size\",\"truncated\",\"caps\","
    "\"next\"]}";

static const char SQL_INPUT[] =
    "{\"type\":\"object\",\"properties\":{\"sql\":{\"type\":\"string\",\"description\":\"One "
    "read-only SELECT (or WITH ... SELECT). Tables are dataset names, as list_datasets gives "
    "them; joins across datasets are allowed. No files, settings or DDL.\"}},\"required\":["
    "\"sql\"],\"additionalProperties\":false}";

static const char SQL_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"rows\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"object\"}},\"row_count\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\","
    "\"description\":\"True when the result had more rows or bytes than the caps; add LIMIT/"
    "OFFSET or aggregate to see the rest.\"},\"caps\":{\"type\":\"object\",\"properties\":{"
    "\"max_rows\":{\"type\":\"integer\"},\"max_bytes\":{\"type\":\"integer\"}},\"required\":["
    "\"max_rows\",\"max_bytes\"]}},\"required\":[\"rows\",\"row_count\",\"truncated\",\"caps\"]}";

enum tool_id { TOOL_LIST, TOOL_DESCRIBE, TOOL_COUNT, TOOL_QUERY, TOOL_SQL };

static const struct tool {
    enum tool_id id;
    const char *name, *title, *description, *input, *output;
} tools[] = {
    {TOOL_LIST, "list_datasets", "List datasets",
     "Lists every dataset with its state (only published datasets can be queried), kind, "
     "row and column counts. Start here.",
     EMPTY_INPUT, LIST_OUTPUT},
    {TOOL_DESCRIBE, "describe_dataset", "Describe a dataset",
     "Returns a dataset's columns (name, database type, logical type, nullable), the indexed "
     "columns (eq and in on them are instant) and one sample row. Call it before query_dataset "
     "or count_rows to learn the exact column names.",
     NAME_INPUT, DESCRIBE_OUTPUT},
    {TOOL_COUNT, "count_rows", "Count rows",
     "Counts the rows of a dataset that match all predicates (none: every row). Operators: eq, "
     "neq, gt, gte, lt, lte, like and ilike (% and _ wildcards), in (a list), between ([low, "
     "high], inclusive), is_null, is_not_null. Use describe_dataset for column names.",
     COUNT_INPUT, COUNT_OUTPUT},
    {TOOL_QUERY, "query_dataset", "Query a dataset",
     "Reads rows of a dataset: choose columns, filter with predicates (eq, neq, gt, gte, lt, lte, "
     "like, ilike, in, between [low, high], is_null, is_not_null; ANDed), sort with order_by, "
     "group with group_by and aggregations (count, sum, avg, min, max) and filter groups with "
     "having, or deduplicate with distinct. Results come in pages (page, page_size); a result "
     "holds at most the server's row and byte caps and says truncated when it was cut, with "
     "`next`: the exact arguments for the following rows. Use describe_dataset for column "
     "names.",
     QUERY_INPUT, QUERY_OUTPUT},
    {TOOL_SQL, "sql", "Run read-only SQL",
     "Runs one read-only SQL SELECT over the datasets (each dataset is a table named like it; "
     "joins, CTEs, window functions and aggregates work). Results hold at most the server's row "
     "and byte caps and say truncated when cut. Prefer query_dataset for single-dataset reads.",
     SQL_INPUT, SQL_OUTPUT},
};
#define N_TOOLS (sizeof tools / sizeof tools[0])

/* ------------------------------------------------------------ the call */

struct mcp_call {
    struct http_request *req;
    struct mcp_env env;
    json_t *msg;                /* owned */
    json_t *id;                 /* borrowed; NULL for notifications */
    const char *method;
    json_t *params;             /* may be NULL */
    bool modern;
    /* data tools and resources/read */
    const struct tool *tool;    /* NULL for resources/read */
    const char *dataset;
    json_t *args;
    struct exec_pin pin;        /* describe_dataset */
    struct exec_call call;      /* the other data tools, resources/read, sql */
    struct strbuf rows;
    struct exec_json_sink sink;
    int64_t requested_page_size;
    int64_t max_rows;           /* the sql tool's row cap */
};

static void call_release(struct mcp_call *c)
{
    exec_call_release(&c->call);
    exec_json_sink_release(&c->sink);
    sb_release(&c->rows);
    exec_unpin(&c->pin);
    json_decref(c->msg);
    c->msg = NULL;
}

static void call_on_release(void *user)
{
    call_release(user);
}

/* ------------------------------------------------------------- replies */

static void add_id(struct strbuf *sb, const json_t *id)
{
    char *text = id ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    sb_adds(sb, text ? text : "null");
    free(text);
}

static void send_error(struct http_request *req, int status, const json_t *id, int code,
                       const char *message, const char *data_json)
{
    struct strbuf body;
    sb_init(&body, 0);
    sb_adds(&body, "{\"jsonrpc\":\"2.0\",\"id\":");
    add_id(&body, id);
    sb_addf(&body, ",\"error\":{\"code\":%d,\"message\":", code);
    sb_add_json_string(&body, message, strlen(message));
    if (data_json)
        sb_addf(&body, ",\"data\":%s", data_json);
    sb_adds(&body, "}}");
    http_reply_json(req, status, &body);
}

static void send_unsupported_version(struct http_request *req, const json_t *id,
                                     const char *requested)
{
    struct strbuf data;
    sb_init(&data, 0);
    sb_adds(&data, "{\"supported\":[\"" MODERN_VERSION "\"");
    for (size_t i = 0; i < N_LEGACY; i++)
        sb_addf(&data, ",\"%s\"", legacy_versions[i]);
    sb_adds(&data, "],\"requested\":");
    sb_add_json_string(&data, requested, strlen(requested));
    sb_adds(&data, "}");
    send_error(req, 400, id, MCP_UNSUPPORTED_VERSION, "Unsupported protocol version", data.buf);
    sb_release(&data);
}

/* Opens a result object: modern results carry resultType and the server's
 * identity; cacheable ones (lists, reads) a freshness hint. The caller adds
 * its fields (each preceded by a comma) and closes with send_result. */
static void result_open(struct strbuf *sb, const struct mcp_call *c, bool cacheable)
{
    sb_adds(sb, "{\"jsonrpc\":\"2.0\",\"id\":");
    add_id(sb, c->id);
    sb_adds(sb, ",\"result\":{");
    if (c->modern) {
        sb_adds(sb, "\"resultType\":\"complete\",\"_meta\":{\"" META_SERVER_INFO "\":");
        sb_adds(sb, SERVER_INFO);
        sb_adds(sb, "}");
        if (cacheable)
            sb_addf(sb, ",\"ttlMs\":%d,\"cacheScope\":\"private\"", LIST_TTL_MS);
    }
}

/* Appends `,` unless the result object is still empty. */
static void result_sep(struct strbuf *sb)
{
    if (sb->len && sb->buf[sb->len - 1] != '{')
        sb_addc(sb, ',');
}

static void send_result(struct http_request *req, struct strbuf *sb)
{
    sb_adds(sb, "}}");
    http_reply_json(req, 200, sb);
}

/* A tool result: structuredContent and the same JSON as a text item. */
static void send_tool_result(struct mcp_call *c, const char *structured, size_t len)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    result_open(&sb, c, false);
    result_sep(&sb);
    sb_adds(&sb, "\"content\":[{\"type\":\"text\",\"text\":");
    sb_add_json_string(&sb, structured, len);
    sb_adds(&sb, "}],\"structuredContent\":");
    sb_add(&sb, structured, len);
    sb_adds(&sb, ",\"isError\":false");
    send_result(c->req, &sb);
}

/* A tool failure the model can act on: isError with the message and code. */
static void send_tool_error(struct mcp_call *c, const char *message, const char *code)
{
    struct strbuf text;
    sb_init(&text, 0);
    sb_adds(&text, message);
    if (code)
        sb_addf(&text, " (code: %s)", code);
    struct strbuf sb;
    sb_init(&sb, 0);
    result_open(&sb, c, false);
    result_sep(&sb);
    sb_adds(&sb, "\"content\":[{\"type\":\"text\",\"text\":");
    sb_add_json_string(&sb, text.buf ? text.buf : "", text.len);
    sb_adds(&sb, "}],\"isError\":true");
    sb_release(&text);
    send_result(c->req, &sb);
}

/* Names of the published datasets, for messages ("Datasets: a, b"). */
static void add_dataset_names(struct strbuf *sb, struct cat_catalog *cat)
{
    struct cat_status *list;
    size_t n = cat_status_list(cat, &list);
    sb_adds(sb, n ? " Datasets: " : " There are no datasets.");
    for (size_t i = 0; i < n && i < 50; i++)
        sb_addf(sb, "%s%s", i ? ", " : "", list[i].name);
    if (n > 50)
        sb_addf(sb, ", ... (%zu in all)", n);
    if (n)
        sb_adds(sb, ".");
    cat_status_list_free(list, n);
}

/* An error from exec or the query compiler as a tool error, with the hint a
 * model needs to fix its next call. */
static void send_vterr(struct mcp_call *c, const struct vt_error *err)
{
    if (vt_err_rpc(err->code) != 0 && err->code != VT_ERR_INVALID_JSON) {
        send_error(c->req, 200, c->id, RPC_INTERNAL, vt_error_message(err), NULL);
        return;
    }
    struct strbuf msg;
    sb_init(&msg, 0);
    sb_adds(&msg, vt_error_message(err));
    if (err->code == VT_ERR_DATASET_NOT_FOUND) {
        add_dataset_names(&msg, c->env.catalog);
    } else if (err->code == VT_ERR_UNKNOWN_COLUMN && c->call.gen) {
        const struct cat_generation *gen = c->call.gen; /* pinned until the sink returns */
        sb_adds(&msg, "; the columns are:");
        for (size_t i = 0; i < gen->n_cols && i < 200; i++)
            sb_addf(&msg, "%s %s", i ? "," : "", gen->cols[i].name);
        sb_adds(&msg, ".");
    } else if (err->code == VT_ERR_DATASET_NOT_READY) {
        sb_adds(&msg, " Retry in a few seconds.");
    }
    send_tool_error(c, msg.buf ? msg.buf : "", vt_err_code(err->code));
    sb_release(&msg);
}

/* ---------------------------------------------------- simple methods */

static void do_initialize(struct mcp_call *c)
{
    json_t *v = c->params ? json_object_get(c->params, "protocolVersion") : NULL;
    const char *want = json_is_string(v) ? json_string_value(v) : "";
    const char *version = legacy_versions[0];
    for (size_t i = 0; i < N_LEGACY; i++)
        if (!strcmp(want, legacy_versions[i]))
            version = legacy_versions[i];
    struct strbuf sb;
    sb_init(&sb, 0);
    result_open(&sb, c, false);
    result_sep(&sb);
    sb_addf(&sb, "\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{},\"resources\":{}},"
                 "\"serverInfo\":%s,\"instructions\":",
            version, SERVER_INFO);
    sb_add_json_string(&sb, INSTRUCTIONS, strlen(INSTRUCTIONS));
    send_result(c->req, &sb);
}

static void do_discover(struct mcp_call *c)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    result_open(&sb, c, true);
    result_sep(&sb);
    sb_adds(&sb, "\"supportedVersions\":[\"" MODERN_VERSION "\"");
    for (size_t i = 0; i < N_LEGACY; i++)
        sb_addf(&sb, ",\"%s\"", legacy_versions[i]);
    sb_addf(&sb, "],\"capabilities\":{\"tools\":{},\"resources\":{}},\"serverInfo\":%s,"
                 "\"instructions\":",
            SERVER_INFO);
    sb_add_json_string(&sb, INSTRUCTIONS, strlen(INSTRUCTIONS));
    send_result(c->req, &sb);
}

static void do_empty(struct mcp_call *c)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    result_open(&sb, c, false);
    send_result(c->req, &sb);
}

/* Listed and callable only when the operator asked for it twice: [sql] on
 * for the server and [mcp] expose_sql for agents. */
static bool sql_tool_available(const struct mcp_env *env)
{
    return env->cfg->mcp.expose_sql && env->cfg->sql.enabled;
}

static void do_tools_list(struct mcp_call *c)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    result_open(&sb, c, true);
    result_sep(&sb);
    sb_adds(&sb, "\"tools\":[");
    for (size_t i = 0; i < N_TOOLS; i++) {
        const struct tool *t = &tools[i];
        if (t->id == TOOL_SQL && !sql_tool_available(&c->env))
            continue;
        sb_addf(&sb, "%s{\"name\":\"%s\",\"title\":\"%s\",\"description\":", i ? "," : "",
                t->name, t->title);
        sb_add_json_string(&sb, t->description, strlen(t->description));
        sb_addf(&sb, ",\"inputSchema\":%s,\"outputSchema\":%s,\"annotations\":{\"readOnlyHint\":"
                     "true,\"openWorldHint\":false}}",
                t->input, t->output);
    }
    sb_adds(&sb, "]");
    send_result(c->req, &sb);
}

static void do_resources_list(struct mcp_call *c)
{
    struct cat_status *list;
    size_t n = cat_status_list(c->env.catalog, &list);
    struct strbuf sb;
    sb_init(&sb, 0);
    result_open(&sb, c, true);
    result_sep(&sb);
    sb_adds(&sb, "\"resources\":[");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (list[i].state != CAT_PUBLISHED && !list[i].has_generation)
            continue;
        sb_addf(&sb, "%s{\"uri\":\"" RESOURCE_PREFIX "%s\",\"name\":\"%s\",\"title\":",
                k++ ? "," : "", list[i].name, list[i].name);
        struct strbuf title;
        sb_init(&title, 0);
        sb_addf(&title, "Dataset %s: schema and sample rows", list[i].name);
        sb_add_json_string(&sb, title.buf, title.len);
        sb_release(&title);
        sb_addf(&sb, ",\"description\":\"%lld rows, %lld columns (%s). The columns with their "
                     "types, the indexed columns and a few sample rows.\","
                     "\"mimeType\":\"application/json\"}",
                (long long)list[i].rows, (long long)list[i].columns,
                config_source_kind_name(list[i].kind));
    }
    sb_adds(&sb, "]");
    cat_status_list_free(list, n);
    send_result(c->req, &sb);
}

static void do_list_datasets(struct mcp_call *c)
{
    struct cat_status *list;
    size_t n = cat_status_list(c->env.catalog, &list);
    struct strbuf s;
    sb_init(&s, 0);
    struct jw w;
    jw_init(&w, &s);
    jw_obj_begin(&w);
    jw_key(&w, "datasets");
    jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++)
        cat_write_status(&w, &list[i]);
    jw_arr_end(&w);
    jw_obj_end(&w);
    cat_status_list_free(list, n);
    send_tool_result(c, s.buf, s.len);
    sb_release(&s);
}

/* --------------------------------------------------------- data tools */

static void write_query_result(struct mcp_call *c)
{
    const struct vt_config *cfg = c->env.cfg;
    const struct query_request *qr = c->call.query;
    struct strbuf s;
    sb_init(&s, 0);
    sb_adds(&s, "{\"dataset\":");
    sb_add_json_string(&s, c->dataset, strlen(c->dataset));
    sb_adds(&s, ",\"rows\":");
    sb_add(&s, c->rows.buf ? c->rows.buf : "[]", c->rows.buf ? c->rows.len : 2);
    uint64_t got = c->sink.rows;
    int64_t offset = qr->offset < 0 ? 0 : qr->offset;
    bool byte_cut = c->call.truncated;
    bool row_cut = c->requested_page_size > qr->page_size && (int64_t)got == qr->page_size;
    sb_addf(&s, ",\"row_count\":%llu,\"page\":%lld,\"page_size\":%lld,\"truncated\":%s,"
                "\"caps\":{\"max_rows\":%lld,\"max_bytes\":%lld},\"next\":",
            (unsigned long long)got, (long long)qr->page, (long long)qr->page_size,
            byte_cut || row_cut ? "true" : "false", (long long)cfg->mcp.max_rows,
            (long long)cfg->mcp.max_bytes);
    /* More rows may follow when this page is full (or was cut): `next` is
     * the arguments that start right after the last row returned. A page of
     * size P starting at offset + got needs P to divide it: the largest P up
     * to `got` that does is gcd(offset, got). */
    bool more = (int64_t)got == qr->page_size || byte_cut;
    if (qr->limit >= 0 && offset + (int64_t)got >= qr->limit)
        more = false; /* the request's limit is reached */
    if (more && got > 0) {
        int64_t start = offset + (int64_t)got;
        int64_t p = byte_cut ? (int64_t)got : qr->page_size;
        if (start % p != 0) {
            int64_t a = offset, b = p;
            while (b) {
                int64_t t = a % b;
                a = b;
                b = t;
            }
            p = a;
        }
        json_t *next = json_deep_copy(c->args);
        json_object_set_new(next, "page", json_integer(start / p + 1));
        json_object_set_new(next, "page_size", json_integer(p));
        char *text = json_dumps(next, JSON_COMPACT | JSON_SORT_KEYS);
        sb_adds(&s, text ? text : "null");
        free(text);
        json_decref(next);
    } else {
        sb_adds(&s, "null");
    }
    sb_adds(&s, "}");
    send_tool_result(c, s.buf, s.len);
    sb_release(&s);
}

static void write_resource(struct mcp_call *c)
{
    const struct cat_generation *gen = c->call.gen;
    struct strbuf s;
    sb_init(&s, 0);
    struct jw w;
    jw_init(&w, &s);
    jw_obj_begin(&w);
    jw_kstr(&w, "name", c->dataset);
    jw_kint(&w, "rows", gen->rows);
    jw_key(&w, "columns");
    jw_arr_begin(&w);
    for (size_t i = 0; i < gen->n_cols; i++) {
        const struct cat_column *col = &gen->cols[i];
        jw_obj_begin(&w);
        jw_kstr(&w, "name", col->name);
        jw_kstr(&w, "type", col->type_sql);
        jw_kstr(&w, "logical", cat_logical_name(col->logical));
        jw_kbool(&w, "nullable", col->nullable);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "indexed");
    jw_arr_begin(&w);
    for (size_t i = 0; i < gen->n_cols; i++)
        if (cat_generation_is_indexed(gen, i))
            jw_str(&w, gen->cols[i].name);
    jw_arr_end(&w);
    jw_key(&w, "sample_rows");
    jw_raw(&w, c->rows.buf ? c->rows.buf : "[]");
    jw_obj_end(&w);
    struct strbuf sb;
    sb_init(&sb, 0);
    result_open(&sb, c, true);
    result_sep(&sb);
    sb_adds(&sb, "\"contents\":[{\"uri\":\"" RESOURCE_PREFIX);
    sb_adds(&sb, c->dataset);
    sb_adds(&sb, "\",\"mimeType\":\"application/json\",\"text\":");
    sb_add_json_string(&sb, s.buf, s.len);
    sb_adds(&sb, "}]");
    sb_release(&s);
    send_result(c->req, &sb);
}

static void write_sql_result(struct mcp_call *c)
{
    struct strbuf s;
    sb_init(&s, 0);
    sb_adds(&s, "{\"rows\":");
    sb_add(&s, c->rows.buf ? c->rows.buf : "[]", c->rows.buf ? c->rows.len : 2);
    sb_addf(&s, ",\"row_count\":%llu,\"truncated\":%s,\"caps\":{\"max_rows\":%lld,"
                "\"max_bytes\":%lld}}",
            (unsigned long long)c->sink.rows, c->call.truncated ? "true" : "false",
            (long long)c->max_rows, (long long)c->env.cfg->mcp.max_bytes);
    send_tool_result(c, s.buf, s.len);
    sb_release(&s);
}

/* The sink is done (end or fail; on the HTTP thread after the fast path, else
 * on the worker): the answer. */
static void sink_done(struct exec_json_sink *sink)
{
    struct mcp_call *c = sink->user;
    if (!c->sink.ended)
        send_vterr(c, &c->sink.err);
    else if (!c->tool)
        write_resource(c);
    else if (c->tool->id == TOOL_SQL)
        write_sql_result(c);
    else if (c->tool->id == TOOL_COUNT) {
        struct strbuf s;
        sb_init(&s, 0);
        sb_adds(&s, "{\"dataset\":");
        sb_add_json_string(&s, c->dataset, strlen(c->dataset));
        sb_addf(&s, ",\"count\":%llu}", (unsigned long long)c->sink.count);
        send_tool_result(c, s.buf, s.len);
        sb_release(&s);
    } else {
        write_query_result(c);
    }
}

static void call_job(struct http_request *req)
{
    struct mcp_call *c = http_req_user(req);
    exec_call_resume(&c->call, http_req_job(req));
}

/* A job on the query pool that answers in MCP's form when it passes its
 * deadline (a tool result with isError for tools/call, a JSON-RPC error for
 * resources/read), never with the REST 504 body: the reply is made here,
 * before the job runs, since the server may have to send it while the job
 * is still inside DuckDB. */
static void defer(struct mcp_call *c, http_job_fn fn, enum eng_job_class cls)
{
#define TIMEOUT_MSG "request timed out (server.request_timeout_ms); narrow the query or ask " \
                    "for fewer rows"
    struct strbuf sb;
    sb_init(&sb, 0);
    if (c->tool) {
        result_open(&sb, c, false);
        result_sep(&sb);
        sb_adds(&sb, "\"content\":[{\"type\":\"text\",\"text\":");
        sb_add_json_string(&sb, TIMEOUT_MSG " (code: timeout)",
                           sizeof TIMEOUT_MSG " (code: timeout)" - 1);
        sb_adds(&sb, "}],\"isError\":true}}");
    } else {
        sb_adds(&sb, "{\"jsonrpc\":\"2.0\",\"id\":");
        add_id(&sb, c->id);
        sb_addf(&sb, ",\"error\":{\"code\":%d,\"message\":", RPC_INTERNAL);
        sb_add_json_string(&sb, TIMEOUT_MSG, sizeof TIMEOUT_MSG - 1);
        sb_adds(&sb, ",\"data\":{\"code\":\"timeout\"}}}");
    }
#undef TIMEOUT_MSG
    if (!sb.overflow && sb.buf)
        http_set_timeout_body(c->req, 200, sb.buf);
    sb_release(&sb);
    http_defer_as(c->req, c->env.queries, fn, cls);
}

/* The driver's queue: a job on the query pool, as for POST /query. */
static void call_queue(struct exec_call *call, enum eng_job_class cls)
{
    struct mcp_call *c = call->rq.user;
    defer(c, call_job, cls);
}

/* Hands a request to the driver; the sink answers (sink_done). The request
 * ends with the HTTP request (call_on_release). */
static void start_call(struct mcp_call *c, struct exec_request *rq)
{
    sb_init(&c->rows, 0);
    exec_json_sink_init(&c->sink, &c->rows);
    c->sink.done = sink_done;
    c->sink.user = c;
    rq->catalog = c->env.catalog;
    rq->sink = &c->sink.sink;
    rq->arena = http_req_arena(c->req);
    rq->caps.max_bytes = (size_t)c->env.cfg->mcp.max_bytes;
    rq->caps.deadline_ms = http_req_deadline(c->req);
    rq->queue = call_queue;
    rq->user = c;
    exec_call_start(&c->call, rq);
}

static void describe(struct mcp_call *c)
{
    struct strbuf s;
    sb_init(&s, 0);
    struct jw w;
    jw_init(&w, &s);
    cat_write_schema(&w, c->dataset, c->pin.gen);
    send_tool_result(c, s.buf, s.len);
    sb_release(&s);
}

/* describe_dataset reads the catalog only: pinned here, or on a worker that
 * may wait for a lazy first build. */
static bool pin_for_describe(struct mcp_call *c, int64_t deadline)
{
    struct vt_error err = {0};
    if (exec_pin(c->env.catalog, c->dataset, deadline, &c->pin, &err) == VT_ERR_OK)
        return true;
    if (deadline != 0 || err.code != VT_ERR_DATASET_NOT_READY)
        send_vterr(c, &err);
    return false;
}

static void describe_job(struct http_request *req)
{
    struct mcp_call *c = http_req_user(req);
    if (pin_for_describe(c, http_req_deadline(req)))
        describe(c);
}

/* tools/call of a data tool, or resources/read. */
static void start_data(struct mcp_call *c)
{
    const struct vt_config *cfg = c->env.cfg;
    if (c->tool && c->tool->id == TOOL_DESCRIBE) {
        struct vt_error err = {0};
        if (exec_pin(c->env.catalog, c->dataset, 0, &c->pin, &err) == VT_ERR_OK)
            describe(c);
        else if (err.code == VT_ERR_DATASET_NOT_READY)
            defer(c, describe_job, ENG_JOB_LONG);
        else
            send_vterr(c, &err);
        return;
    }
    json_t *body = json_deep_copy(c->args);
    enum query_mode mode = c->tool && c->tool->id == TOOL_COUNT ? QUERY_COUNT : QUERY_PAGED;
    if (!c->tool) { /* resources/read: a few sample rows */
        json_object_clear(body);
        json_object_set_new(body, "page_size", json_integer(RESOURCE_SAMPLE_ROWS));
    }
    /* The page size the agent asked for, before the cap; without one, pages
     * of 100 rows (an agent reads every byte it is given). */
    json_t *ps = json_object_get(body, "page_size");
    int64_t default_ps = cfg->mcp.max_rows < 100 ? cfg->mcp.max_rows : 100;
    c->requested_page_size = json_is_integer(ps) ? json_integer_value(ps) : default_ps;
    static const char *const extra[] = {"name", NULL};
    if (!json_is_integer(ps) && mode == QUERY_PAGED)
        json_object_set_new(body, "page_size", json_integer(default_ps));
    struct exec_request rq = {
        .kind = mode == QUERY_COUNT ? EXEC_COUNT : EXEC_ROWS,
        .dataset = c->dataset,
        .body = body,
        .opts = {.mode = mode,
                 .max_page_size = cfg->mcp.max_rows < cfg->server.max_page_size
                                      ? cfg->mcp.max_rows
                                      : cfg->server.max_page_size,
                 .extra_fields = extra},
        .caps = {.max_rows = cfg->mcp.max_rows},
    };
    start_call(c, &rq);
    json_decref(body); /* the call holds its own reference */
}

/* ------------------------------------------------------- the sql tool */

/* tools/call sql: the statement is gated and run on a query worker. */
static void start_sql(struct mcp_call *c)
{
    const struct vt_config *cfg = c->env.cfg;
    json_t *sql = json_object_get(c->args, "sql");
    if (!json_is_string(sql) || json_string_length(sql) == 0) {
        send_tool_error(c, "sql (a non-empty string) is required", "invalid_query");
        return;
    }
    if (json_object_size(c->args) != 1) {
        send_tool_error(c, "sql takes only sql", "unknown_field");
        return;
    }
    if (json_string_length(sql) > VT_MAX_SQL_BYTES) {
        send_tool_error(c, "the statement is too long", "limit_exceeded");
        return;
    }
    c->max_rows = cfg->mcp.max_rows < cfg->sql.max_rows ? cfg->mcp.max_rows : cfg->sql.max_rows;
    struct exec_request rq = {
        .kind = EXEC_SQL,
        .sql = json_string_value(sql), /* in msg, which lives as long as the request */
        .caps = {.max_rows = c->max_rows},
    };
    start_call(c, &rq);
}

static void do_tools_call(struct mcp_call *c)
{
    json_t *name = c->params ? json_object_get(c->params, "name") : NULL;
    if (!json_is_string(name)) {
        send_error(c->req, 200, c->id, RPC_INVALID_PARAMS, "params.name (the tool) is required",
                   NULL);
        return;
    }
    const char *tn = json_string_value(name);
    for (size_t i = 0; i < N_TOOLS; i++)
        if (!strcmp(tools[i].name, tn) && (tools[i].id != TOOL_SQL || sql_tool_available(&c->env)))
            c->tool = &tools[i];
    if (!c->tool) {
        struct strbuf m;
        sb_init(&m, 0);
        sb_addf(&m, "Unknown tool: %.100s", tn);
        send_error(c->req, 200, c->id, RPC_INVALID_PARAMS, m.buf, NULL);
        sb_release(&m);
        return;
    }
    json_t *args = json_object_get(c->params, "arguments");
    if (args && !json_is_object(args) && !json_is_null(args)) {
        send_tool_error(c, "arguments must be an object", "invalid_query");
        return;
    }
    c->args = json_is_object(args) ? args : json_object();
    if (!json_is_object(args))
        json_object_set_new(c->params, "arguments", c->args); /* owned by msg now */
    if (c->tool->id == TOOL_LIST) {
        if (json_object_size(c->args) != 0) {
            send_tool_error(c, "list_datasets takes no arguments", "unknown_field");
            return;
        }
        do_list_datasets(c);
        return;
    }
    if (c->tool->id == TOOL_SQL) {
        start_sql(c);
        return;
    }
    json_t *ds = json_object_get(c->args, "name");
    if (!json_is_string(ds)) {
        send_tool_error(c, "name (the dataset) is required; call list_datasets for the names",
                        "invalid_query");
        return;
    }
    c->dataset = json_string_value(ds);
    if (c->tool->id == TOOL_DESCRIBE && json_object_size(c->args) != 1) {
        send_tool_error(c, "describe_dataset takes only name", "unknown_field");
        return;
    }
    start_data(c);
}

static void do_resources_read(struct mcp_call *c)
{
    json_t *uri = c->params ? json_object_get(c->params, "uri") : NULL;
    const char *u = json_is_string(uri) ? json_string_value(uri) : NULL;
    size_t pl = strlen(RESOURCE_PREFIX);
    if (!u || strncmp(u, RESOURCE_PREFIX, pl) != 0 || !u[pl] ||
        !cat_has_dataset(c->env.catalog, u + pl)) {
        send_error(c->req, 200, c->id,
                   c->modern ? RPC_INVALID_PARAMS : MCP_RESOURCE_NOT_FOUND_LEGACY,
                   "Resource not found", NULL);
        return;
    }
    c->dataset = u + pl;
    c->args = json_object();
    json_object_set_new(c->params, "_vitrine_args", c->args);
    start_data(c);
}

/* ------------------------------------------------------- the transport */

/* Modern requests: the standard headers must be there and match the body. */
static bool headers_match(struct mcp_call *c, const char *version)
{
    struct http_request *req = c->req;
    const char *hv = http_req_header(req, "MCP-Protocol-Version");
    const char *hm = http_req_header(req, "Mcp-Method");
    const char *why = NULL;
    if (!hv || strcmp(hv, version) != 0)
        why = hv ? "MCP-Protocol-Version header does not match _meta" : "MCP-Protocol-Version header is missing";
    else if (!hm || strcmp(hm, c->method) != 0)
        why = hm ? "Mcp-Method header does not match method" : "Mcp-Method header is missing";
    else if (!strcmp(c->method, "tools/call") || !strcmp(c->method, "resources/read")) {
        const char *key = !strcmp(c->method, "tools/call") ? "name" : "uri";
        json_t *bv = c->params ? json_object_get(c->params, key) : NULL;
        const char *hn = http_req_header(req, "Mcp-Name");
        size_t cap = hn ? strlen(hn) + 1 : 1;
        char *dn = arena_alloc(http_req_arena(req), cap);
        if (!hn)
            why = "Mcp-Name header is missing";
        else if (!dn || mcp_header_decode(hn, dn, cap) < 0 || !json_is_string(bv) ||
                 strcmp(dn, json_string_value(bv)) != 0)
            why = "Mcp-Name header does not match the request body";
    }
    if (!why)
        return true;
    send_error(req, 400, c->id, MCP_HEADER_MISMATCH, why, NULL);
    return false;
}

void mcp_handle(struct http_request *req, const struct mcp_env *menv)
{
    /* DNS rebinding: a browser page may call us only from an origin the
     * server allows (http/hosts.h), mcp.allowed_origins added. */
    if (!http_req_origin_ok(req, &menv->cfg->mcp.allowed_origins)) {
        send_error(req, 403, NULL, RPC_INVALID_REQUEST, "Origin not allowed", NULL);
        return;
    }
    size_t len;
    const char *body = http_req_body(req, &len);
    struct mcp_envelope env;
    enum mcp_kind kind = mcp_envelope_parse(body, len, &env);
    if (kind != MCP_REQUEST) {
        struct strbuf none;
        switch (kind) {
        case MCP_PARSE_ERROR:
            send_error(req, 400, NULL, RPC_PARSE_ERROR, "Parse error", NULL);
            break;
        case MCP_BATCH:
            send_error(req, 400, NULL, RPC_INVALID_REQUEST, "Batches are not supported", NULL);
            break;
        case MCP_INVALID:
            send_error(req, 400, env.id, RPC_INVALID_REQUEST, "Invalid Request", NULL);
            break;
        default: /* notifications and responses: nothing to answer */
            sb_init(&none, 0);
            http_reply_buffer(req, 202, "application/json", &none, false);
            break;
        }
        mcp_envelope_release(&env);
        return;
    }
    json_t *msg = env.msg, *id = env.id, *params = env.params;
    struct mcp_call *c = arena_calloc(http_req_arena(req), sizeof *c);
    if (!c) {
        send_error(req, 500, id, RPC_INTERNAL, "out of memory", NULL);
        mcp_envelope_release(&env);
        return;
    }
    c->req = req;
    c->env = *menv;
    c->msg = msg;
    c->id = id;
    c->method = env.method;
    c->params = params;
    http_req_set_user(req, c);
    http_req_on_release(req, call_on_release);

    /* The era: a modern request names its version in params._meta. */
    const char *hv = http_req_header(req, "MCP-Protocol-Version");
    if (env.meta_version) {
        const char *v = env.meta_version;
        if (strcmp(v, MODERN_VERSION) != 0) {
            send_unsupported_version(req, id, v);
            call_release(c);
            return;
        }
        c->modern = true;
        if (!headers_match(c, v)) {
            call_release(c);
            return;
        }
    } else if (hv && strcmp(c->method, "initialize") != 0) {
        bool known = false;
        for (size_t i = 0; i < N_LEGACY; i++)
            known = known || !strcmp(hv, legacy_versions[i]);
        if (!known) {
            send_unsupported_version(req, id, hv);
            call_release(c);
            return;
        }
    }

    /* Data methods may go on to a job, which owns `c` until it ends; the
     * request's release hook frees it in every case. */
    const char *m = c->method;
    if (!strcmp(m, "tools/call")) {
        do_tools_call(c);
        return;
    }
    if (!strcmp(m, "resources/read")) {
        do_resources_read(c);
        return;
    }
    if (!strcmp(m, "tools/list"))
        do_tools_list(c);
    else if (!strcmp(m, "resources/list"))
        do_resources_list(c);
    else if (!strcmp(m, "server/discover"))
        do_discover(c);
    else if (!strcmp(m, "initialize") && !c->modern)
        do_initialize(c);
    else if (!strcmp(m, "ping") && !c->modern)
        do_empty(c);
    else if (!strcmp(m, "resources/templates/list") || !strcmp(m, "prompts/list")) {
        struct strbuf sb;
        sb_init(&sb, 0);
        result_open(&sb, c, true);
        result_sep(&sb);
        sb_adds(&sb, !strcmp(m, "prompts/list") ? "\"prompts\":[]" : "\"resourceTemplates\":[]");
        send_result(req, &sb);
    } else {
        send_error(req, c->modern ? 404 : 200, id, RPC_METHOD_NOT_FOUND, "Method not found",
                   NULL);
    }
    call_release(c);
}

void mcp_protected_resource(struct http_request *req, const struct vt_config *cfg)
{
    const char *host = http_req_header(req, "Host");
    struct strbuf s;
    sb_init(&s, 0);
    struct jw w;
    jw_init(&w, &s);
    jw_obj_begin(&w);
    struct strbuf res;
    sb_init(&res, 0);
    sb_addf(&res, "http://%s%s%s", host ? host : "localhost",
            cfg->server.prefix ? cfg->server.prefix : "", cfg->mcp.path);
    jw_kstr(&w, "resource", res.buf);
    sb_release(&res);
    jw_key(&w, "authorization_servers");
    jw_arr_begin(&w);
    if (cfg->auth.issuer)
        jw_str(&w, cfg->auth.issuer);
    jw_arr_end(&w);
    jw_key(&w, "scopes_supported");
    jw_arr_begin(&w);
    for (size_t i = 0; i < cfg->auth.read_scopes.len; i++)
        jw_str(&w, cfg->auth.read_scopes.items[i]);
    jw_arr_end(&w);
    jw_key(&w, "bearer_methods_supported");
    jw_arr_begin(&w);
    jw_str(&w, "header");
    jw_arr_end(&w);
    jw_kstr(&w, "resource_name", "vitrine MCP endpoint");
    jw_obj_end(&w);
    http_reply_json(req, 200, &s);
}
