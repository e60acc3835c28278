/*
 * The MCP tools: the table (names, descriptions, input and output schemas,
 * annotations), tools/list (paged) and tools/call. Every data tool runs
 * through the same code as the HTTP API: list_datasets and describe_dataset
 * read the catalog; count_rows, query_dataset and sql go through the exec
 * driver with MCP's bounded JSON sink; summarize_dataset and facet_counts
 * run src/explore's summary and facets (GET /summary, POST /facets) on a
 * query worker. Results carry structuredContent matching the tool's
 * outputSchema, and say when they were cut and how to get the rest.
 */
#include "mcp/mcp_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/limits.h"
#include "util/timeutil.h"

/* summarize_dataset without `columns` summarizes this many at most; `next`
 * asks for the following ones. */
#define SUMMARY_MAX_COLUMNS 64

#define STR_(x) #x
#define XSTR(x) STR_(x)

/* ---------------------------------------------------------------- schemas */

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

#define CAPS_SCHEMA                                                                             \
    "\"caps\":{\"type\":\"object\",\"properties\":{\"max_rows\":{\"type\":\"integer\"},"        \
    "\"max_bytes\":{\"type\":\"integer\"}},\"required\":[\"max_rows\",\"max_bytes\"]}"

static const char QUERY_INPUT[] =
    "{\"type\":\"object\",\"properties\":{" NAME_PROPERTY ","
    "\"columns\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Columns to "
    "return; empty or absent means all. Ignored with group_by.\"},"
    "\"predicates\":{\"type\":\"array\",\"items\":" PRED_SCHEMA ",\"description\":\"Row filters, "
    "ANDed.\"},"
    "\"order_by\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"col\":{"
    "\"type\":\"string\",\"description\":\"A column, or with group_by a group name or an "
    "aggregation alias.\"},\"dir\":{\"type\":\"string\",\"enum\":[\"asc\",\"desc\"]}},"
    "\"required\":[\"col\"],\"additionalProperties\":false}},"
    "\"group_by\":{\"type\":\"array\",\"items\":{\"anyOf\":[{\"type\":\"string\",\"description\":"
    "\"A column.\"},{\"type\":\"object\",\"properties\":{\"col\":{\"type\":\"string\"},\"bucket\":{"
    "\"type\":\"string\",\"enum\":[\"minute\",\"hour\",\"day\",\"week\",\"month\",\"year\"],"
    "\"description\":\"Truncates a date, time or timestamp column.\"},\"width\":{\"type\":"
    "\"number\",\"exclusiveMinimum\":0,\"description\":\"Buckets a numeric column by its lower "
    "bound, floor(v / width) * width.\"},\"alias\":{\"type\":\"string\",\"description\":\"The "
    "output column's name (default: col).\"}},\"required\":[\"col\"],\"additionalProperties\":"
    "false}]},\"description\":\"Grouping: column names, or {col, bucket | width, alias} for "
    "time or numeric buckets.\"},"
    "\"aggregations\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"op\":{"
    "\"type\":\"string\",\"enum\":[\"count\",\"count_distinct\",\"sum\",\"avg\",\"min\",\"max\","
    "\"median\",\"quantile\",\"stddev\"]},\"col\":{\"type\":\"string\",\"description\":\"Omit for "
    "a count of rows.\"},\"q\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1,\"description\":"
    "\"quantile only (required there): 0.9 is the 90th percentile.\"},\"alias\":{\"type\":"
    "\"string\"}},\"required\":[\"op\"],\"additionalProperties\":false},\"description\":\"Needs "
    "group_by. Default alias: count, or op_col. sum, avg and stddev take numbers; median and "
    "quantile numbers, dates, times and timestamps (interpolated).\"},"
    "\"having\":{\"type\":\"array\",\"items\":" PRED_SCHEMA ",\"description\":\"Filters on "
    "group names or aggregation aliases.\"},"
    "\"distinct\":{\"type\":\"boolean\"},"
    "\"limit\":{\"type\":[\"integer\",\"null\"],\"minimum\":0,\"description\":\"Cap on rows "
    "across all pages.\"},"
    "\"page\":{\"type\":\"integer\",\"minimum\":1},"
    "\"page_size\":{\"type\":\"integer\",\"minimum\":1},"
    "\"include_total\":{\"type\":\"boolean\",\"description\":\"Also return `total`: the rows "
    "(or groups) the request selects across all pages.\"}},"
    "\"required\":[\"name\"],\"additionalProperties\":false}";

static const char COUNT_INPUT[] =
    "{\"type\":\"object\",\"properties\":{" NAME_PROPERTY ","
    "\"predicates\":{\"type\":\"array\",\"items\":" PRED_SCHEMA "}},"
    "\"required\":[\"name\"],\"additionalProperties\":false}";

static const char NAME_INPUT[] =
    "{\"type\":\"object\",\"properties\":{" NAME_PROPERTY "},"
    "\"required\":[\"name\"],\"additionalProperties\":false}";

static const char LIST_INPUT[] =
    "{\"type\":\"object\",\"properties\":{\"cursor\":{\"type\":\"string\",\"description\":\"The "
    "next_cursor of the previous page.\"}},\"additionalProperties\":false}";

static const char SUMMARY_INPUT[] =
    "{\"type\":\"object\",\"properties\":{" NAME_PROPERTY ",\"columns\":{\"type\":\"array\","
    "\"items\":{\"type\":\"string\"},\"minItems\":1,\"description\":\"The columns to summarize "
    "(default: all, " XSTR(SUMMARY_MAX_COLUMNS) " at a time).\"}},\"required\":[\"name\"],"
    "\"additionalProperties\":false}";

static const char FACETS_INPUT[] =
    "{\"type\":\"object\",\"properties\":{" NAME_PROPERTY ",\"columns\":{\"type\":\"array\","
    "\"items\":{\"type\":\"string\"},\"minItems\":1,\"maxItems\":" XSTR(EXPLORE_MAX_FACET_COLUMNS)
    ",\"description\":\"The columns whose values to count.\"},\"predicates\":{\"type\":\"array\","
    "\"items\":" PRED_SCHEMA ",\"description\":\"Count among the rows these select (ANDed).\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" XSTR(EXPLORE_MAX_FACET_LIMIT)
    ",\"description\":\"Values per column, most frequent first (default "
    XSTR(EXPLORE_DEFAULT_FACET_LIMIT) ").\"}},\"required\":[\"name\",\"columns\"],"
    "\"additionalProperties\":false}";

static const char LIST_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"datasets\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"state\":{\"type\":\"string\","
    "\"enum\":[\"pending\",\"building\",\"published\",\"failed\"]},\"kind\":{\"type\":\"string\"},"
    "\"rows\":{\"type\":\"integer\"},\"columns\":{\"type\":\"integer\"}},\"required\":[\"name\","
    "\"state\",\"kind\",\"rows\",\"columns\"]}},\"truncated\":{\"type\":\"boolean\"},"
    "\"next_cursor\":{\"type\":[\"string\",\"null\"],\"description\":\"Pass as cursor for the "
    "next page; null on the last.\"}},\"required\":[\"datasets\",\"truncated\",\"next_cursor\"]}";

static const char DESCRIBE_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"rows\":{\"type\":"
    "\"integer\"},\"columns\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},\"logical\":{\"type\":"
    "\"string\"},\"nullable\":{\"type\":\"boolean\"}},\"required\":[\"name\",\"type\","
    "\"logical\",\"nullable\"]}},\"indexed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"sample\":{\"type\":[\"object\",\"null\"]}},\"required\":[\"name\",\"rows\",\"columns\","
    "\"indexed\",\"sample\"]}";

#define VALUE_COUNT "{\"type\":\"object\",\"properties\":{\"value\":{},\"count\":{\"type\":\"integer\"}},\"required\":[\"value\",\"count\"]}"

static const char SUMMARY_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"rows\":{\"type\":"
    "\"integer\"},\"generation\":{\"type\":\"string\"},\"columns\":{\"type\":\"array\",\"items\":{"
    "\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"type\":{\"type\":"
    "\"string\"},\"logical\":{\"type\":\"string\"},\"count\":{\"type\":\"integer\"},"
    "\"null_count\":{\"type\":\"integer\"},\"approx_distinct\":{\"type\":[\"integer\",\"null\"]},"
    "\"min\":{},\"max\":{},\"mean\":{\"type\":[\"number\",\"null\"]},\"stddev\":{\"type\":["
    "\"number\",\"null\"]},\"top_values\":{\"type\":[\"array\",\"null\"],\"items\":" VALUE_COUNT
    "},\"histogram\":{\"type\":[\"object\",\"null\"],\"properties\":{\"buckets\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"lo\":{},\"hi\":{},\"count\":{"
    "\"type\":\"integer\"}},\"required\":[\"lo\",\"hi\",\"count\"]}}}}},\"required\":[\"name\","
    "\"type\",\"logical\",\"count\",\"null_count\"]}},\"truncated\":{\"type\":\"boolean\","
    "\"description\":\"True when more columns exist than were summarized.\"},\"next\":{\"type\":"
    "[\"object\",\"null\"],\"description\":\"The arguments that summarize the next columns, or "
    "null.\"}},\"required\":[\"name\",\"rows\",\"generation\",\"columns\",\"truncated\",\"next\"]}";

static const char FACETS_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"rows\":{\"type\":"
    "\"integer\",\"description\":\"Rows the predicates select.\"},\"facets\":{\"type\":\"array\","
    "\"items\":{\"type\":\"object\",\"properties\":{\"column\":{\"type\":\"string\"},\"values\":{"
    "\"type\":\"array\",\"items\":" VALUE_COUNT "},\"distinct\":{\"type\":\"integer\"},"
    "\"other_values\":{\"type\":\"integer\",\"description\":\"Distinct values not shown.\"},"
    "\"other_rows\":{\"type\":\"integer\",\"description\":\"Rows holding them.\"}},\"required\":"
    "[\"column\",\"values\",\"distinct\",\"other_values\",\"other_rows\"]}},\"truncated\":{"
    "\"type\":\"boolean\",\"description\":\"True when a column has values not shown: raise "
    "limit or narrow with predicates.\"}},\"required\":[\"name\",\"rows\",\"facets\","
    "\"truncated\"]}";

static const char COUNT_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"dataset\":{\"type\":\"string\"},\"count\":{\"type\":"
    "\"integer\",\"minimum\":0}},\"required\":[\"dataset\",\"count\"]}";

static const char QUERY_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"dataset\":{\"type\":\"string\"},\"rows\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"object\"}},\"row_count\":{\"type\":\"integer\"},\"page\":{"
    "\"type\":\"integer\"},\"page_size\":{\"type\":\"integer\"},\"truncated\":{\"type\":"
    "\"boolean\"}," CAPS_SCHEMA ",\"total\":{\"type\":\"integer\",\"description\":\"With "
    "include_total: the rows (or groups) of all pages.\"},\"next\":{\"type\":[\"object\","
    "\"null\"],\"description\":\"The arguments that fetch the rows after these, or null when "
    "there are none.\"}},\"required\":[\"dataset\",\"rows\",\"row_count\",\"page\","
    "\"page_size\",\"truncated\",\"caps\",\"next\"]}";

static const char SQL_INPUT[] =
    "{\"type\":\"object\",\"properties\":{\"sql\":{\"type\":\"string\",\"description\":\"One "
    "read-only SELECT (or WITH ... SELECT). Tables are dataset names, as list_datasets gives "
    "them; joins across datasets are allowed. No files, settings or DDL.\"}},\"required\":["
    "\"sql\"],\"additionalProperties\":false}";

static const char SQL_OUTPUT[] =
    "{\"type\":\"object\",\"properties\":{\"rows\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"object\"}},\"row_count\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\","
    "\"description\":\"True when the result had more rows or bytes than the caps; add LIMIT/"
    "OFFSET or aggregate to see the rest.\"}," CAPS_SCHEMA "},\"required\":[\"rows\","
    "\"row_count\",\"truncated\",\"caps\"]}";

enum tool_id {
    TOOL_LIST, TOOL_DESCRIBE, TOOL_SUMMARIZE, TOOL_FACETS, TOOL_COUNT, TOOL_QUERY, TOOL_SQL
};

struct mcp_tool {
    enum tool_id id;
    const char *name, *title, *description, *input, *output;
};

static const struct mcp_tool tools[] = {
    {TOOL_LIST, "list_datasets", "List datasets",
     "Lists the datasets with their state (only published datasets can be queried), kind, row "
     "and column counts, by name, a page at a time (next_cursor). Start here.",
     LIST_INPUT, LIST_OUTPUT},
    {TOOL_DESCRIBE, "describe_dataset", "Describe a dataset",
     "Returns a dataset's columns (name, database type, logical type, nullable), the indexed "
     "columns (eq and in on them are instant) and one sample row. Call it before query_dataset "
     "or count_rows to learn the exact column names.",
     NAME_INPUT, DESCRIBE_OUTPUT},
    {TOOL_SUMMARIZE, "summarize_dataset", "Summarize a dataset's columns",
     "Per column: non-null and null counts, approximate distinct values, min and max, mean and "
     "standard deviation (numbers), the most frequent values (low-cardinality columns) and an "
     "equal-width histogram (numbers, dates, times, timestamps). The first call for a dataset "
     "version scans it; later calls are cached. Use it to learn ranges and typical values "
     "before filtering.",
     SUMMARY_INPUT, SUMMARY_OUTPUT},
    {TOOL_FACETS, "facet_counts", "Count values of columns",
     "For each column given, the most frequent values and their row counts among the rows the "
     "predicates select (NULL counted as a value), with how many distinct values and rows are "
     "not shown (other_values, other_rows). One scan for all columns.",
     FACETS_INPUT, FACETS_OUTPUT},
    {TOOL_COUNT, "count_rows", "Count rows",
     "Counts the rows of a dataset that match all predicates (none: every row). Operators: eq, "
     "neq, gt, gte, lt, lte, like and ilike (% and _ wildcards), in (a list), between ([low, "
     "high], inclusive), is_null, is_not_null. Use describe_dataset for column names.",
     COUNT_INPUT, COUNT_OUTPUT},
    {TOOL_QUERY, "query_dataset", "Query a dataset",
     "Reads rows of a dataset: choose columns, filter with predicates (eq, neq, gt, gte, lt, lte, "
     "like, ilike, in, between [low, high], is_null, is_not_null; ANDed), sort with order_by, "
     "group with group_by (columns, or {col, bucket: hour|day|week|month|year} and {col, width} "
     "buckets) and aggregations (count, count_distinct, sum, avg, min, max, median, quantile "
     "with q, stddev), filter groups with having, or deduplicate with distinct. Results come in "
     "pages (page, page_size); include_total adds the total. A result holds at most the server's "
     "row and byte caps and says truncated when it was cut, with `next`: the exact arguments "
     "for the following rows. Use describe_dataset for column names.",
     QUERY_INPUT, QUERY_OUTPUT},
    {TOOL_SQL, "sql", "Run read-only SQL",
     "Runs one read-only SQL SELECT over the datasets (each dataset is a table named like it; "
     "joins, CTEs, window functions and aggregates work). Results hold at most the server's row "
     "and byte caps and say truncated when cut. Prefer query_dataset for single-dataset reads.",
     SQL_INPUT, SQL_OUTPUT},
};
#define N_TOOLS (sizeof tools / sizeof tools[0])

static bool tool_listed(const struct mcp_call *c, const struct mcp_tool *t)
{
    return t->id != TOOL_SQL || mcp_sql_tool_available(&c->env);
}

/* ------------------------------------------------------------ tools/list */

void mcp_tools_list(struct mcp_call *c)
{
    char after[64];
    if (!mcp_list_cursor(c, after, sizeof after)) {
        mcp_call_error(c, RPC_INVALID_PARAMS, "Invalid cursor", NULL);
        return;
    }
    size_t start = 0;
    if (after[0]) {
        start = N_TOOLS + 1;
        for (size_t i = 0; i < N_TOOLS; i++)
            if (!strcmp(tools[i].name, after))
                start = i + 1;
        if (start > N_TOOLS) {
            mcp_call_error(c, RPC_INVALID_PARAMS, "Invalid cursor", NULL);
            return;
        }
    }
    int64_t page = c->env.cfg->mcp.list_page_size;
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, true);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"tools\":[");
    int64_t k = 0;
    const char *last = NULL;
    size_t i = start;
    for (; i < N_TOOLS && k < page; i++) {
        const struct mcp_tool *t = &tools[i];
        if (!tool_listed(c, t))
            continue;
        sb_addf(&sb, "%s{\"name\":\"%s\",\"title\":\"%s\",\"description\":", k++ ? "," : "",
                t->name, t->title);
        sb_add_json_string(&sb, t->description, strlen(t->description));
        sb_addf(&sb, ",\"inputSchema\":%s,\"outputSchema\":%s,\"annotations\":{\"title\":\"%s\","
                     "\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":true,"
                     "\"openWorldHint\":false}}",
                t->input, t->output, t->title);
        last = t->name;
    }
    sb_adds(&sb, "]");
    bool more = false;
    for (; i < N_TOOLS; i++)
        more = more || tool_listed(c, &tools[i]);
    if (more && last)
        mcp_add_next_cursor(&sb, last);
    mcp_send_result(c, &sb);
}

/* ------------------------------------------------------- list_datasets */

static void do_list_datasets(struct mcp_call *c)
{
    json_t *cur = json_object_get(c->args, "cursor");
    char after[VT_MAX_DATASET_NAME_BYTES + 1] = "";
    if (cur && (!json_is_string(cur) ||
                mcp_cursor_decode(json_string_value(cur), after, sizeof after) < 0)) {
        mcp_send_tool_error(c, "cursor is not a next_cursor this tool gave", "invalid_query");
        return;
    }
    struct cat_status *list;
    size_t n = mcp_sorted_status(c->env.catalog, &list);
    int64_t page = c->env.cfg->mcp.list_page_size;
    struct strbuf s;
    sb_init(&s, 0);
    struct jw w;
    jw_init(&w, &s);
    jw_obj_begin(&w);
    jw_key(&w, "datasets");
    jw_arr_begin(&w);
    size_t i = 0, k = 0;
    while (i < n && after[0] && strcmp(list[i].name, after) <= 0)
        i++;
    const char *last = NULL;
    for (; i < n && (int64_t)k < page; i++, k++) {
        cat_write_status(&w, &list[i]);
        last = list[i].name;
    }
    jw_arr_end(&w);
    jw_kbool(&w, "truncated", i < n);
    jw_key(&w, "next_cursor");
    char next[3 * VT_MAX_DATASET_NAME_BYTES + 16];
    if (i < n && last && mcp_cursor_encode(last, next, sizeof next))
        jw_str(&w, next);
    else
        jw_null(&w);
    jw_obj_end(&w);
    if (i < n)
        mcp_log(c, MCP_LOG_INFO, "list_datasets: %zu of %zu datasets; next_cursor for more", k,
                n);
    cat_status_list_free(list, n);
    mcp_send_tool_result(c, s.buf, s.len);
    sb_release(&s);
}

/* ---------------------------------------------------- describe_dataset */

static void describe(struct mcp_call *c)
{
    struct strbuf s;
    sb_init(&s, 0);
    mcp_write_schema(&s, c->dataset, c->pin.gen);
    mcp_send_tool_result(c, s.buf, s.len);
    sb_release(&s);
}

/* On a worker: a lazy dataset's first build may be waited for. */
static void describe_job(struct mcp_call *c, const struct eng_job *job)
{
    (void)job;
    struct vt_error err = {0};
    if (mcp_pin(c, http_req_deadline(c->req), &err) == VT_ERR_OK)
        describe(c);
    else
        mcp_send_vterr(c, &err);
}

static void start_describe(struct mcp_call *c)
{
    struct vt_error err = {0};
    if (mcp_pin(c, 0, &err) == VT_ERR_OK)
        describe(c);
    else if (err.code == VT_ERR_DATASET_NOT_READY)
        mcp_defer(c, describe_job);
    else
        mcp_send_vterr(c, &err);
}

/* ------------------------------------------- summarize_dataset, facets */

/* explore's answer (an object's text) with more members before its `}`. */
static void close_with(struct strbuf *body, const char *extra)
{
    if (body->len && body->buf[body->len - 1] == '}')
        body->buf[--body->len] = '\0';
    sb_adds(body, extra);
    sb_adds(body, "}");
}

static void summarize_job(struct mcp_call *c, const struct eng_job *job)
{
    struct vt_error err = {0};
    if (mcp_pin(c, http_req_deadline(c->req), &err) != VT_ERR_OK) {
        mcp_send_vterr(c, &err);
        return;
    }
    const struct cat_generation *gen = c->pin.gen;
    json_t *cols = json_object_get(c->args, "columns");
    /* Wide datasets go SUMMARY_MAX_COLUMNS columns at a time: without
     * columns, the first ones; `next` names the following slice, and a call
     * with exactly a slice of the schema gets the one after it. */
    size_t from = 0;
    bool slice = !cols;
    if (cols && json_array_size(cols) == SUMMARY_MAX_COLUMNS) {
        const char *first = json_string_value(json_array_get(cols, 0));
        while (from < gen->n_cols && strcmp(gen->cols[from].name, first) != 0)
            from++;
        slice = from + SUMMARY_MAX_COLUMNS <= gen->n_cols;
        for (size_t i = 0; slice && i < SUMMARY_MAX_COLUMNS; i++)
            slice = !strcmp(json_string_value(json_array_get(cols, i)), gen->cols[from + i].name);
    }
    json_t *next = NULL;
    char *sel = cols ? json_dumps(cols, JSON_COMPACT) : NULL;
    if (slice && gen->n_cols > from + SUMMARY_MAX_COLUMNS) {
        json_t *first = json_array(), *rest = json_array();
        for (size_t i = from; i < gen->n_cols && i < from + 2 * SUMMARY_MAX_COLUMNS; i++)
            json_array_append_new(i < from + SUMMARY_MAX_COLUMNS ? first : rest,
                                  json_string(gen->cols[i].name));
        if (!sel)
            sel = json_dumps(first, JSON_COMPACT);
        next = json_pack("{s:s, s:o}", "name", c->dataset, "columns", rest);
        json_decref(first);
    }
    struct strbuf body;
    sb_init(&body, 0);
    int64_t t0 = time_mono_ms();
    enum vt_err rc = mcp_summary(c, job, sel, &body, &err);
    free(sel);
    if (rc != VT_ERR_OK) {
        json_decref(next);
        sb_release(&body);
        mcp_send_vterr(c, &err);
        return;
    }
    mcp_log(c, MCP_LOG_INFO, "summarize_dataset %s: generation %s, %lld ms", c->dataset, gen->id,
            (long long)(time_mono_ms() - t0));
    char *nt = next ? json_dumps(next, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    struct strbuf extra;
    sb_init(&extra, 0);
    sb_addf(&extra, ",\"truncated\":%s,\"next\":%s", nt ? "true" : "false", nt ? nt : "null");
    close_with(&body, extra.buf);
    sb_release(&extra);
    free(nt);
    json_decref(next);
    mcp_send_tool_result(c, body.buf, body.len);
    sb_release(&body);
}

static void facets_job(struct mcp_call *c, const struct eng_job *job)
{
    struct vt_error err = {0};
    if (mcp_pin(c, http_req_deadline(c->req), &err) != VT_ERR_OK) {
        mcp_send_vterr(c, &err);
        return;
    }
    json_t *body = json_deep_copy(c->args);
    json_object_del(body, "name");
    struct explore_ctx x = mcp_explore_ctx(c, job);
    struct strbuf out;
    sb_init(&out, 0);
    enum vt_err rc = explore_facets(&x, body, &out, &err);
    json_decref(body);
    if (rc == VT_ERR_OK && out.len > (size_t)c->env.cfg->mcp.max_bytes)
        rc = vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED,
                          "the answer is %zu bytes, over the server's cap of %lld: ask for a "
                          "lower limit or fewer columns",
                          out.len, (long long)c->env.cfg->mcp.max_bytes);
    if (rc != VT_ERR_OK) {
        sb_release(&out);
        mcp_send_vterr(c, &err);
        return;
    }
    /* Whether any column has values not shown (read, not re-encoded). */
    bool cut = false;
    json_t *parsed = json_loadb(out.buf, out.len, JSON_DECODE_ANY, NULL);
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(parsed, "facets"), i, f)
        cut = cut || json_integer_value(json_object_get(f, "other_values")) > 0;
    json_decref(parsed);
    if (cut)
        mcp_log(c, MCP_LOG_INFO, "facet_counts %s: some values not shown (other_values)",
                c->dataset);
    close_with(&out, cut ? ",\"truncated\":true" : ",\"truncated\":false");
    mcp_send_tool_result(c, out.buf, out.len);
    sb_release(&out);
}

static bool check_fields(struct mcp_call *c, const char *const *allowed)
{
    const char *k;
    json_t *v;
    json_object_foreach(c->args, k, v) {
        bool ok = false;
        for (size_t i = 0; allowed[i]; i++)
            ok = ok || !strcmp(k, allowed[i]);
        if (!ok) {
            struct strbuf m;
            sb_init(&m, 0);
            sb_addf(&m, "unknown argument \"%.64s\" (%s takes:", k, c->tool->name);
            for (size_t i = 0; allowed[i]; i++)
                sb_addf(&m, "%s %s", i ? "," : "", allowed[i]);
            sb_adds(&m, ")");
            mcp_send_tool_error(c, m.buf, "unknown_field");
            sb_release(&m);
            return false;
        }
    }
    return true;
}

static void start_summarize(struct mcp_call *c)
{
    static const char *const allowed[] = {"name", "columns", NULL};
    if (!check_fields(c, allowed))
        return;
    json_t *cols = json_object_get(c->args, "columns");
    bool ok = !cols || (json_is_array(cols) && json_array_size(cols) > 0);
    size_t i;
    json_t *v;
    json_array_foreach(cols, i, v) ok = ok && json_is_string(v);
    if (!ok) {
        mcp_send_tool_error(c, "columns must be a non-empty list of column names",
                            "invalid_query");
        return;
    }
    mcp_defer(c, summarize_job);
}

static void start_facets(struct mcp_call *c)
{
    /* explore_facets validates the rest (as POST /facets does). */
    mcp_defer(c, facets_job);
}

/* ------------------------------------------- count_rows, query_dataset */

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
                "\"caps\":{\"max_rows\":%lld,\"max_bytes\":%lld}",
            (unsigned long long)got, (long long)qr->page, (long long)qr->page_size,
            byte_cut || row_cut ? "true" : "false", (long long)cfg->mcp.max_rows,
            (long long)cfg->mcp.max_bytes);
    if (qr->include_total)
        sb_addf(&s, ",\"total\":%lld", (long long)c->max_rows);
    sb_adds(&s, ",\"next\":");
    /* More rows may follow when this page is full (or was cut): `next` is
     * the arguments that start right after the last row returned. A page of
     * size P starting at offset + got needs P to divide it: the largest P up
     * to `got` that does is gcd(offset, got). */
    bool more = (int64_t)got == qr->page_size || byte_cut;
    if (qr->limit >= 0 && offset + (int64_t)got >= qr->limit)
        more = false; /* the request's limit is reached */
    if (qr->include_total && offset + (int64_t)got >= c->max_rows)
        more = false; /* the total says this was the last */
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
        json_object_del(next, "include_total"); /* known now; no second count */
        char *text = json_dumps(next, JSON_COMPACT | JSON_SORT_KEYS);
        sb_adds(&s, text ? text : "null");
        free(text);
        json_decref(next);
    } else {
        sb_adds(&s, "null");
    }
    sb_adds(&s, "}");
    const struct cat_generation *gen = c->call.gen;
    mcp_log(c, MCP_LOG_INFO, "query_dataset %s: %llu rows in %lld ms (generation %s)", c->dataset,
            (unsigned long long)got, (long long)(time_mono_ms() - c->t0_ms), gen ? gen->id : "?");
    if (byte_cut || row_cut)
        mcp_log(c, MCP_LOG_WARNING,
                "query_dataset %s: the result was cut at the server's caps (%lld rows, %lld "
                "bytes); call again with `next` for the rest",
                c->dataset, (long long)cfg->mcp.max_rows, (long long)cfg->mcp.max_bytes);
    mcp_send_tool_result(c, s.buf, s.len);
    sb_release(&s);
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
    if (c->call.truncated)
        mcp_log(c, MCP_LOG_WARNING,
                "sql: the result was cut at the server's caps; add LIMIT/OFFSET or aggregate");
    mcp_send_tool_result(c, s.buf, s.len);
    sb_release(&s);
}

/* The sink is done (end or fail; on the HTTP thread after the fast path, else
 * on the worker): the answer. */
static void data_done(struct mcp_call *c)
{
    if (!c->sink.ended)
        mcp_send_vterr(c, &c->sink.err);
    else if (c->tool->id == TOOL_SQL)
        write_sql_result(c);
    else if (c->tool->id == TOOL_COUNT) {
        struct strbuf s;
        sb_init(&s, 0);
        sb_adds(&s, "{\"dataset\":");
        sb_add_json_string(&s, c->dataset, strlen(c->dataset));
        sb_addf(&s, ",\"count\":%llu}", (unsigned long long)c->sink.count);
        mcp_send_tool_result(c, s.buf, s.len);
        sb_release(&s);
    } else {
        write_query_result(c);
    }
}

/* "include_total": the total first, on the worker that runs the page (as
 * POST /query does); kept in max_rows, which query_dataset does not use. */
static enum vt_err total_before_run(struct exec_call *call, const struct eng_job *job,
                                    struct vt_error *err)
{
    (void)job;
    struct mcp_call *c = call->rq.user;
    if (!call->query->include_total)
        return VT_ERR_OK;
    return explore_total(&call->plan, &c->max_rows, err);
}

static void start_rows(struct mcp_call *c)
{
    const struct vt_config *cfg = c->env.cfg;
    json_t *body = json_deep_copy(c->args);
    enum query_mode mode = c->tool->id == TOOL_COUNT ? QUERY_COUNT : QUERY_PAGED;
    /* The page size the agent asked for, before the cap; without one, pages
     * of 100 rows (an agent reads every byte it is given). */
    json_t *ps = json_object_get(body, "page_size");
    int64_t default_ps = cfg->mcp.max_rows < 100 ? cfg->mcp.max_rows : 100;
    c->requested_page_size = json_is_integer(ps) ? json_integer_value(ps) : default_ps;
    static const char *const extra[] = {"name", NULL};
    if (!json_is_integer(ps) && mode == QUERY_PAGED)
        json_object_set_new(body, "page_size", json_integer(default_ps));
    c->on_done = data_done;
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
        .before_run = mode == QUERY_PAGED &&
                              json_is_true(json_object_get(body, "include_total"))
                          ? total_before_run
                          : NULL,
    };
    mcp_start_exec(c, &rq);
    json_decref(body); /* the call holds its own reference */
}

/* ------------------------------------------------------- the sql tool */

static void start_sql(struct mcp_call *c)
{
    const struct vt_config *cfg = c->env.cfg;
    json_t *sql = json_object_get(c->args, "sql");
    if (!json_is_string(sql) || json_string_length(sql) == 0) {
        mcp_send_tool_error(c, "sql (a non-empty string) is required", "invalid_query");
        return;
    }
    if (json_object_size(c->args) != 1) {
        mcp_send_tool_error(c, "sql takes only sql", "unknown_field");
        return;
    }
    if (json_string_length(sql) > VT_MAX_SQL_BYTES) {
        mcp_send_tool_error(c, "the statement is too long", "limit_exceeded");
        return;
    }
    c->max_rows = cfg->mcp.max_rows < cfg->sql.max_rows ? cfg->mcp.max_rows : cfg->sql.max_rows;
    c->on_done = data_done;
    struct exec_request rq = {
        .kind = EXEC_SQL,
        .sql = json_string_value(sql), /* in msg, which lives as long as the request */
        .caps = {.max_rows = c->max_rows},
    };
    mcp_start_exec(c, &rq);
}

/* ------------------------------------------------------------ tools/call */

void mcp_tools_call(struct mcp_call *c)
{
    json_t *name = c->params ? json_object_get(c->params, "name") : NULL;
    if (!json_is_string(name)) {
        mcp_call_error(c, RPC_INVALID_PARAMS, "params.name (the tool) is required", NULL);
        return;
    }
    const char *tn = json_string_value(name);
    for (size_t i = 0; i < N_TOOLS; i++)
        if (!strcmp(tools[i].name, tn) && tool_listed(c, &tools[i]))
            c->tool = &tools[i];
    if (!c->tool) {
        struct strbuf m;
        sb_init(&m, 0);
        sb_addf(&m, "Unknown tool: %.100s", tn);
        mcp_call_error(c, RPC_INVALID_PARAMS, m.buf, NULL);
        sb_release(&m);
        return;
    }
    json_t *args = json_object_get(c->params, "arguments");
    if (args && !json_is_object(args) && !json_is_null(args)) {
        mcp_send_tool_error(c, "arguments must be an object", "invalid_query");
        return;
    }
    c->args = json_is_object(args) ? args : json_object();
    if (!json_is_object(args))
        json_object_set_new(c->params, "arguments", c->args); /* owned by msg now */
    if (c->tool->id == TOOL_LIST) {
        static const char *const allowed[] = {"cursor", NULL};
        if (check_fields(c, allowed))
            do_list_datasets(c);
        return;
    }
    if (c->tool->id == TOOL_SQL) {
        start_sql(c);
        return;
    }
    json_t *ds = json_object_get(c->args, "name");
    if (!json_is_string(ds)) {
        mcp_send_tool_error(c, "name (the dataset) is required; call list_datasets for the names",
                            "invalid_query");
        return;
    }
    c->dataset = json_string_value(ds);
    switch (c->tool->id) {
    case TOOL_DESCRIBE: {
        static const char *const allowed[] = {"name", NULL};
        if (check_fields(c, allowed))
            start_describe(c);
        return;
    }
    case TOOL_SUMMARIZE:
        start_summarize(c);
        return;
    case TOOL_FACETS:
        start_facets(c);
        return;
    default:
        start_rows(c);
        return;
    }
}
