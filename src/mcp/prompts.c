/*
 * MCP prompts and completions. Two prompts start the tasks agents are asked
 * most: explore_dataset (the schema, src/explore's column summary and
 * questions worth asking, derived from the columns' types and
 * cardinalities; optionally focused on one column, or on the rows where
 * that column holds one value, with the facet counts of those rows) and
 * answer_with_sql (the schema and the rules of the SQL gate, for one
 * read-only statement that answers a question).
 *
 * completion/complete fills their arguments and the resource templates'
 * {name}: dataset names and column names from the catalog (no DuckDB, at
 * most MCP_COMPLETE_MAX values, case-insensitive prefix), and the values of
 * a column from one facets scan on a query worker (the most frequent
 * EXPLORE_MAX_FACET_LIMIT values, filtered by the prefix; hasMore when the
 * column has more). A ref we do not offer completes to nothing.
 */
#include "mcp/mcp_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/limits.h"

#define MCP_COMPLETE_MAX 100 /* the protocol's cap on values per answer */
#define QUESTIONS_MAX 8
#define FOCUS_FACET_COLUMNS 8

enum prompt_id { PROMPT_EXPLORE, PROMPT_SQL };

static const struct prompt_arg {
    const char *name, *description;
    bool required;
} explore_args[] = {
    {"dataset", "The dataset to explore (completed from the dataset names).", true},
    {"column", "A column to focus on (completed from the dataset's columns).", false},
    {"value", "With column: focus on the rows where the column holds this value (completed from "
              "its most frequent values).",
     false},
}, sql_args[] = {
    {"dataset", "The dataset the question is about (others can be joined).", true},
    {"question", "The question to answer, in plain words.", true},
};

static const struct prompt {
    enum prompt_id id;
    const char *name, *title, *description;
    const struct prompt_arg *args;
    size_t n_args;
} prompts[] = {
    {PROMPT_EXPLORE, "explore_dataset", "Explore a dataset",
     "Start exploring a dataset: its schema, a summary of every column (ranges, distinct "
     "values, most frequent values, histograms) and questions worth asking, with the tools "
     "that answer them.",
     explore_args, sizeof explore_args / sizeof explore_args[0]},
    {PROMPT_SQL, "answer_with_sql", "Answer a question with SQL",
     "Answer a question about a dataset with one read-only SQL query: the dataset's schema, "
     "the other datasets it can join, and the rules the server's SQL gate enforces.",
     sql_args, sizeof sql_args / sizeof sql_args[0]},
};
#define N_PROMPTS (sizeof prompts / sizeof prompts[0])

static const struct prompt *find_prompt(const char *name)
{
    for (size_t i = 0; name && i < N_PROMPTS; i++)
        if (!strcmp(prompts[i].name, name))
            return &prompts[i];
    return NULL;
}

/* ---------------------------------------------------------- prompts/list */

static void write_prompt(struct strbuf *sb, const struct prompt *p)
{
    sb_addf(sb, "{\"name\":\"%s\",\"title\":\"%s\",\"description\":", p->name, p->title);
    sb_add_json_string(sb, p->description, strlen(p->description));
    sb_adds(sb, ",\"arguments\":[");
    for (size_t i = 0; i < p->n_args; i++) {
        sb_addf(sb, "%s{\"name\":\"%s\",\"description\":", i ? "," : "", p->args[i].name);
        sb_add_json_string(sb, p->args[i].description, strlen(p->args[i].description));
        sb_addf(sb, ",\"required\":%s}", p->args[i].required ? "true" : "false");
    }
    sb_adds(sb, "]}");
}

void mcp_prompts_list(struct mcp_call *c)
{
    char after[64];
    if (!mcp_list_cursor(c, after, sizeof after)) {
        mcp_call_error(c, RPC_INVALID_PARAMS, "Invalid cursor", NULL);
        return;
    }
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, true);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"prompts\":[");
    bool started = !after[0], first = true;
    for (size_t i = 0; i < N_PROMPTS; i++) {
        if (started) {
            if (!first)
                sb_addc(&sb, ',');
            write_prompt(&sb, &prompts[i]);
            first = false;
        }
        started = started || !strcmp(prompts[i].name, after);
    }
    sb_adds(&sb, "]");
    mcp_send_result(c, &sb);
}

/* ----------------------------------------------------------- prompts/get */

static const char *arg_str(const struct mcp_call *c, const char *name)
{
    json_t *v = json_object_get(c->args, name);
    return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

/* A user message with one text item, then the result. */
static void send_prompt(struct mcp_call *c, const char *description, const char *text,
                        size_t len)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, false);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"description\":");
    sb_add_json_string(&sb, description, strlen(description));
    sb_adds(&sb, ",\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":");
    sb_add_json_string(&sb, text, len);
    sb_adds(&sb, "}}]");
    mcp_send_result(c, &sb);
}

static ssize_t column_index(const struct cat_generation *gen, const char *name)
{
    for (size_t i = 0; i < gen->n_cols; i++)
        if (!strcmp(gen->cols[i].name, name))
            return (ssize_t)i;
    return -1;
}

static bool is_number(enum cat_logical l)
{
    return l == CAT_LOGICAL_INT || l == CAT_LOGICAL_FLOAT || l == CAT_LOGICAL_DECIMAL;
}

/* Questions worth asking, from the columns' types and (from the summary)
 * their distinct counts: categories to break down by, measures to
 * aggregate, time columns to bucket. Each names the tool and arguments. */
static void add_questions(struct strbuf *t, const char *ds, const json_t *summary)
{
    const char *cat = NULL, *measure = NULL, *when = NULL;
    size_t i;
    json_t *col;
    json_array_foreach(json_object_get(summary, "columns"), i, col) {
        const char *name = json_string_value(json_object_get(col, "name"));
        const char *logical = json_string_value(json_object_get(col, "logical"));
        json_int_t distinct = json_integer_value(json_object_get(col, "approx_distinct"));
        if (!name || !logical)
            continue;
        if (!cat && (!strcmp(logical, "string") || !strcmp(logical, "bool")) && distinct > 1 &&
            distinct <= EXPLORE_LOW_CARDINALITY)
            cat = name;
        else if (!measure && (!strcmp(logical, "float") || !strcmp(logical, "decimal") ||
                              (!strcmp(logical, "int") && distinct > EXPLORE_LOW_CARDINALITY)))
            measure = name;
        else if (!when && (!strcmp(logical, "date") || !strcmp(logical, "timestamp")))
            when = name;
    }
    int n = 0;
    sb_adds(t, "\n\nQuestions worth asking (and how):\n");
    if (cat) {
        sb_addf(t, "%d. How are the rows spread over \"%s\"? facet_counts {\"name\": \"%s\", "
                   "\"columns\": [\"%s\"]}\n", ++n, cat, ds, cat);
        if (measure)
            sb_addf(t, "%d. How does \"%s\" compare across \"%s\"? query_dataset with "
                       "\"group_by\": [\"%s\"], \"aggregations\": [{\"op\": \"avg\", \"col\": "
                       "\"%s\"}, {\"op\": \"median\", \"col\": \"%s\"}, {\"op\": \"count\"}]\n",
                    ++n, measure, cat, cat, measure, measure);
    }
    if (measure)
        sb_addf(t, "%d. Which rows have the largest \"%s\"? query_dataset with \"order_by\": "
                   "[{\"col\": \"%s\", \"dir\": \"desc\"}], \"page_size\": 10\n",
                ++n, measure, measure);
    if (when)
        sb_addf(t, "%d. How does the number of rows change over time? query_dataset with "
                   "\"group_by\": [{\"col\": \"%s\", \"bucket\": \"month\"}] (or day, week), "
                   "\"order_by\": [{\"col\": \"%s\"}]\n",
                ++n, when, when);
    if (when && measure)
        sb_addf(t, "%d. Is \"%s\" trending? The same group_by with {\"op\": \"sum\", \"col\": "
                   "\"%s\"}\n", ++n, measure, measure);
    sb_addf(t, "%d. Are there missing values? The summary's null_count per column; count_rows "
               "with {\"op\": \"is_null\"} on a column\n", ++n);
}

static void explore_job(struct mcp_call *c, const struct eng_job *job)
{
    struct vt_error err = {0};
    if (mcp_pin(c, http_req_deadline(c->req), &err) != VT_ERR_OK) {
        mcp_send_vterr(c, &err);
        return;
    }
    const struct cat_generation *gen = c->pin.gen;
    const char *column = arg_str(c, "column"), *value = arg_str(c, "value");
    ssize_t ci = column ? column_index(gen, column) : -1;
    if ((column && ci < 0) || (value && !column)) {
        struct strbuf m;
        sb_init(&m, 0);
        if (value && !column) {
            sb_adds(&m, "value needs column");
        } else {
            sb_addf(&m, "unknown column \"%.64s\"; the columns are:", column);
            for (size_t i = 0; i < gen->n_cols && i < 200; i++)
                sb_addf(&m, "%s %s", i ? "," : "", gen->cols[i].name);
        }
        mcp_call_error(c, RPC_INVALID_PARAMS, m.buf, NULL);
        sb_release(&m);
        return;
    }
    /* The summary: of the focus column, else of the first 64 columns. */
    json_t *sel = json_array();
    for (size_t i = 0; i < gen->n_cols && json_array_size(sel) < 64; i++)
        if (ci < 0 || (size_t)ci == i)
            json_array_append_new(sel, json_string(gen->cols[i].name));
    char *sel_text = json_dumps(sel, JSON_COMPACT);
    json_decref(sel);
    struct strbuf summary;
    sb_init(&summary, 0);
    enum vt_err rc = mcp_summary(c, job, sel_text, &summary, &err);
    free(sel_text);
    if (rc != VT_ERR_OK) {
        sb_release(&summary);
        mcp_send_vterr(c, &err);
        return;
    }
    /* With a value: the facets of the other columns among its rows. */
    struct strbuf facets;
    sb_init(&facets, 0);
    if (value) {
        json_t *v = json_string(value);
        enum cat_logical lg = gen->cols[ci].logical;
        if (is_number(lg) || lg == CAT_LOGICAL_BOOL) {
            json_t *parsed = json_loads(value, JSON_DECODE_ANY, NULL);
            if (json_is_number(parsed) || json_is_boolean(parsed)) {
                json_decref(v);
                v = parsed;
            } else {
                json_decref(parsed);
            }
        }
        json_t *cols = json_array();
        for (size_t i = 0; i < gen->n_cols && json_array_size(cols) < FOCUS_FACET_COLUMNS; i++) {
            enum cat_logical l = gen->cols[i].logical;
            if ((ssize_t)i != ci && (l == CAT_LOGICAL_STRING || l == CAT_LOGICAL_BOOL))
                json_array_append_new(cols, json_string(gen->cols[i].name));
        }
        if (json_array_size(cols) == 0)
            json_array_append_new(cols, json_string(column));
        json_t *body = json_pack("{s:[{s:s,s:s,s:o}],s:o,s:i}", "predicates", "col", column, "op",
                                 "eq", "val", v, "columns", cols, "limit", 5);
        struct explore_ctx x = mcp_explore_ctx(c, job);
        rc = explore_facets(&x, body, &facets, &err);
        json_decref(body);
        if (rc != VT_ERR_OK) {
            sb_release(&facets);
            sb_release(&summary);
            mcp_send_vterr(c, &err);
            return;
        }
    }
    struct strbuf t;
    sb_init(&t, 0);
    sb_addf(&t, "Explore the dataset \"%s\" (%lld rows, %zu columns) published by vitrine. ",
            c->dataset, (long long)gen->rows, gen->n_cols);
    if (value)
        sb_addf(&t, "Focus on the rows where \"%s\" is %s. ", column, value);
    else if (column)
        sb_addf(&t, "Focus on the column \"%s\". ", column);
    sb_adds(&t, "Use the tools describe_dataset, summarize_dataset, facet_counts, count_rows and "
                "query_dataset to answer; cite the numbers they return, and say when a result "
                "was truncated.\n\nSchema:\n");
    mcp_write_schema(&t, c->dataset, gen);
    sb_adds(&t, column ? "\n\nSummary of the column:\n" : "\n\nSummary of the columns:\n");
    sb_add(&t, summary.buf ? summary.buf : "", summary.len);
    if (facets.len) {
        sb_addf(&t, "\n\nAmong the rows where \"%s\" is %s, the most frequent values of other "
                    "columns (facet_counts):\n", column, value);
        sb_add(&t, facets.buf, facets.len);
    }
    json_t *parsed = json_loadb(summary.buf ? summary.buf : "{}", summary.len, 0, NULL);
    add_questions(&t, c->dataset, parsed);
    json_decref(parsed);
    send_prompt(c, "Explore a dataset: schema, column summary and questions", t.buf, t.len);
    sb_release(&t);
    sb_release(&facets);
    sb_release(&summary);
}

static const char SQL_RULES[] =
    "Rules the server's SQL gate enforces (a statement that breaks one is refused with a code "
    "saying which):\n"
    "- Exactly one read-only statement: SELECT, WITH ... SELECT, UNION, VALUES. No INSERT, "
    "UPDATE, DELETE, DDL, SET, PRAGMA, COPY, ATTACH or transactions (sql_not_read_only).\n"
    "- Tables are the datasets, named exactly as listed (double-quote names that are not plain "
    "identifiers), and the query's own CTEs. No file paths, globs, URLs or other catalogs "
    "(sql_unknown_table).\n"
    "- Functions: DuckDB's scalar, aggregate and window functions that compute from their "
    "arguments (string, date and time, math, list, struct, regexp, json_extract ...). Not "
    "allowed: functions that read files or the network (read_csv, read_parquet, ...), settings, "
    "secrets, the catalog or the environment, and schema-qualified or quoted function names "
    "(sql_forbidden_function). Table functions: range, generate_series, unnest, json_each, "
    "json_tree.\n"
    "- The dialect is DuckDB's: ILIKE, QUALIFY, GROUP BY ALL, date_trunc('month', ts), "
    "strftime, list and struct values, TRY_CAST, FILTER (WHERE ...) on aggregates.\n"
    "- Results are capped (rows and bytes); aggregate or add LIMIT rather than reading "
    "everything. Timestamps compare with ISO-8601 literals (TIMESTAMP '2024-01-02 00:00:00').";

static void sql_prompt(struct mcp_call *c)
{
    const struct cat_generation *gen = c->pin.gen;
    const char *question = arg_str(c, "question");
    struct strbuf t;
    sb_init(&t, 0);
    sb_adds(&t, "Answer this question with one read-only SQL query over vitrine's datasets:\n\n");
    sb_adds(&t, question);
    sb_addf(&t, "\n\nThe dataset \"%s\" (%lld rows):\n", c->dataset, (long long)gen->rows);
    mcp_write_schema(&t, c->dataset, gen);
    struct strbuf others;
    sb_init(&others, 0);
    mcp_add_dataset_names(&others, c->env.catalog);
    sb_addf(&t, "\n\nEvery dataset can be joined (describe_dataset gives a schema):%s\n\n",
            others.buf ? others.buf : "");
    sb_release(&others);
    sb_adds(&t, SQL_RULES);
    if (mcp_sql_tool_available(&c->env))
        sb_adds(&t, "\n\nRun the query with the sql tool, check the result (row_count, "
                    "truncated), then answer in plain words and show the SQL.");
    else
        sb_adds(&t, "\n\nThis server does not offer the sql tool to agents ([mcp] expose_sql): "
                    "write the query and show it; where query_dataset or count_rows can answer "
                    "the same question (filters, group_by, aggregations), use them to get the "
                    "numbers.");
    send_prompt(c, "Answer a question with read-only SQL", t.buf, t.len);
    sb_release(&t);
}

static void sql_prompt_job(struct mcp_call *c, const struct eng_job *job)
{
    (void)job;
    struct vt_error err = {0};
    if (mcp_pin(c, http_req_deadline(c->req), &err) == VT_ERR_OK)
        sql_prompt(c);
    else
        mcp_send_vterr(c, &err);
}

void mcp_prompts_get(struct mcp_call *c)
{
    json_t *name = c->params ? json_object_get(c->params, "name") : NULL;
    const struct prompt *p = find_prompt(json_string_value(name));
    if (!p) {
        mcp_call_error(c, RPC_INVALID_PARAMS, "Unknown prompt (prompts/list names them)", NULL);
        return;
    }
    json_t *args = json_object_get(c->params, "arguments");
    if (args && !json_is_object(args) && !json_is_null(args)) {
        mcp_call_error(c, RPC_INVALID_PARAMS, "params.arguments must be an object", NULL);
        return;
    }
    c->args = json_is_object(args) ? args : NULL;
    c->what = p->name;
    const char *k;
    json_t *v;
    json_object_foreach(c->args, k, v) {
        bool known = false;
        for (size_t i = 0; i < p->n_args; i++)
            known = known || !strcmp(k, p->args[i].name);
        if (!known || !json_is_string(v)) {
            struct strbuf m;
            sb_init(&m, 0);
            sb_addf(&m, known ? "argument \"%.64s\" must be a string"
                              : "unknown argument \"%.64s\"", k);
            mcp_call_error(c, RPC_INVALID_PARAMS, m.buf, NULL);
            sb_release(&m);
            return;
        }
    }
    for (size_t i = 0; i < p->n_args; i++)
        if (p->args[i].required && !arg_str(c, p->args[i].name)) {
            struct strbuf m;
            sb_init(&m, 0);
            sb_addf(&m, "argument \"%s\" is required", p->args[i].name);
            mcp_call_error(c, RPC_INVALID_PARAMS, m.buf, NULL);
            sb_release(&m);
            return;
        }
    c->dataset = arg_str(c, "dataset");
    if (p->id == PROMPT_EXPLORE) {
        mcp_defer(c, explore_job);
        return;
    }
    struct vt_error err = {0};
    if (mcp_pin(c, 0, &err) == VT_ERR_OK)
        sql_prompt(c);
    else if (err.code == VT_ERR_DATASET_NOT_READY)
        mcp_defer(c, sql_prompt_job);
    else
        mcp_send_vterr(c, &err);
}

/* ---------------------------------------------------- completion/complete */

struct completion {
    const char *prefix;
    size_t prefix_len;
    json_t *values; /* strings */
    size_t total;
};

static void offer(struct completion *k, const char *v)
{
    if (strncasecmp(v, k->prefix, k->prefix_len) != 0)
        return;
    k->total++;
    if (json_array_size(k->values) < MCP_COMPLETE_MAX)
        json_array_append_new(k->values, json_string(v));
}

static void send_completion(struct mcp_call *c, struct completion *k, bool more)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, false);
    mcp_result_sep(&sb);
    char *vals = json_dumps(k->values, JSON_COMPACT);
    sb_addf(&sb, "\"completion\":{\"values\":%s,\"total\":%zu,\"hasMore\":%s}", vals ? vals : "[]",
            k->total, more || k->total > json_array_size(k->values) ? "true" : "false");
    free(vals);
    json_decref(k->values);
    k->values = NULL;
    mcp_send_result(c, &sb);
}

static void complete_datasets(struct mcp_call *c, struct completion *k)
{
    struct cat_status *list;
    size_t n = mcp_sorted_status(c->env.catalog, &list);
    for (size_t i = 0; i < n; i++)
        offer(k, list[i].name);
    cat_status_list_free(list, n);
    send_completion(c, k, false);
}

/* The completion being computed on a worker (values of a column). */
static struct completion *pending(struct mcp_call *c)
{
    return c->state;
}

static void values_job(struct mcp_call *c, const struct eng_job *job)
{
    struct completion *k = pending(c);
    struct vt_error err = {0};
    struct strbuf out;
    sb_init(&out, 0);
    bool more = false;
    if (mcp_pin(c, http_req_deadline(c->req), &err) == VT_ERR_OK) {
        json_t *body = json_pack("{s:[s],s:i}", "columns", arg_str(c, "column"), "limit",
                                 EXPLORE_MAX_FACET_LIMIT);
        struct explore_ctx x = mcp_explore_ctx(c, job);
        if (explore_facets(&x, body, &out, &err) == VT_ERR_OK) {
            json_t *r = json_loadb(out.buf, out.len, 0, NULL);
            json_t *f = json_array_get(json_object_get(r, "facets"), 0);
            size_t i;
            json_t *v;
            json_array_foreach(json_object_get(f, "values"), i, v) {
                json_t *val = json_object_get(v, "value");
                if (json_is_string(val)) {
                    offer(k, json_string_value(val));
                } else if (json_is_number(val) || json_is_boolean(val)) {
                    char *text = json_dumps(val, JSON_ENCODE_ANY | JSON_COMPACT);
                    if (text)
                        offer(k, text);
                    free(text);
                }
            }
            more = json_integer_value(json_object_get(f, "other_values")) > 0;
            json_decref(r);
        }
        json_decref(body);
    }
    /* A column that cannot be faceted (or a dataset that went away)
     * completes to nothing: completion is a hint, never an error. */
    sb_release(&out);
    send_completion(c, k, more);
}

static void complete_columns(struct mcp_call *c, struct completion *k)
{
    struct vt_error err = {0};
    if (c->dataset && mcp_pin(c, 0, &err) == VT_ERR_OK) {
        const struct cat_generation *gen = c->pin.gen;
        for (size_t i = 0; i < gen->n_cols; i++)
            offer(k, gen->cols[i].name);
    }
    send_completion(c, k, false);
}

void mcp_complete(struct mcp_call *c)
{
    json_t *ref = c->params ? json_object_get(c->params, "ref") : NULL;
    json_t *arg = c->params ? json_object_get(c->params, "argument") : NULL;
    const char *type = json_string_value(json_object_get(ref, "type"));
    const char *aname = json_string_value(json_object_get(arg, "name"));
    json_t *aval = json_object_get(arg, "value");
    if (!type || !aname || !json_is_string(aval)) {
        mcp_call_error(c, RPC_INVALID_PARAMS,
                       "params.ref {type, name | uri} and params.argument {name, value} are "
                       "required",
                       NULL);
        return;
    }
    json_t *ctx = json_object_get(json_object_get(c->params, "context"), "arguments");
    c->args = json_is_object(ctx) ? ctx : NULL;
    struct completion *k = arena_calloc(http_req_arena(c->req), sizeof *k);
    if (!k) {
        mcp_call_error(c, RPC_INTERNAL, "out of memory", NULL);
        return;
    }
    k->prefix = json_string_value(aval);
    k->prefix_len = json_string_length(aval);
    k->values = json_array();
    if (!strcmp(type, "ref/resource")) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        if (uri && !strncmp(uri, MCP_RESOURCE_PREFIX "{name}", strlen(MCP_RESOURCE_PREFIX) + 6) &&
            !strcmp(aname, "name")) {
            complete_datasets(c, k);
            return;
        }
        send_completion(c, k, false);
        return;
    }
    const struct prompt *p = !strcmp(type, "ref/prompt")
                                 ? find_prompt(json_string_value(json_object_get(ref, "name")))
                                 : NULL;
    if (p && !strcmp(aname, "dataset")) {
        complete_datasets(c, k);
        return;
    }
    if (p && p->id == PROMPT_EXPLORE && !strcmp(aname, "column")) {
        c->dataset = arg_str(c, "dataset");
        complete_columns(c, k);
        return;
    }
    if (p && p->id == PROMPT_EXPLORE && !strcmp(aname, "value") && arg_str(c, "dataset") &&
        arg_str(c, "column") && cat_has_dataset(c->env.catalog, arg_str(c, "dataset"))) {
        c->dataset = arg_str(c, "dataset");
        c->state = k;
        mcp_defer(c, values_job);
        return;
    }
    send_completion(c, k, false);
}
