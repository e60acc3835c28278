/*
 * MCP resources: each dataset as vitrine://datasets/<name> (its schema and a
 * few sample rows), and two views of it through resource templates,
 * vitrine://datasets/<name>/schema (describe_dataset's answer) and
 * vitrine://datasets/<name>/summary (summarize_dataset's, src/explore's
 * summary of every column). resources/list pages through the datasets by
 * name with cursors. Reads go through exec (the sample rows), the catalog
 * (the schema) or src/explore on a query worker (the summary).
 *
 * No subscriptions: a stateless server has no connection to notify on, so
 * the capabilities say subscribe false and resources/subscribe is not a
 * method here.
 */
#include "mcp/mcp_int.h"

#include <string.h>

#include "util/limits.h"

#define SAMPLE_ROWS 5

enum view { VIEW_DATASET, VIEW_SCHEMA, VIEW_SUMMARY };

static const struct {
    const char *suffix, *uri_template, *name, *title, *description;
} templates[] = {
    {"", MCP_RESOURCE_PREFIX "{name}", "dataset", "A dataset: schema and sample rows",
     "The columns with their types, the indexed columns and a few sample rows."},
    {"/schema", MCP_RESOURCE_PREFIX "{name}/schema", "dataset-schema", "A dataset's schema",
     "The columns (name, database type, logical type, nullable), the indexed columns and one "
     "sample row, as describe_dataset gives them."},
    {"/summary", MCP_RESOURCE_PREFIX "{name}/summary", "dataset-summary",
     "A dataset's column summary",
     "Per column: counts, distinct values, min and max, mean and standard deviation, the most "
     "frequent values and a histogram, as summarize_dataset gives them (up to 64 columns)."},
};

void mcp_write_schema(struct strbuf *s, const char *dataset, const struct cat_generation *gen)
{
    struct jw w;
    jw_init(&w, s);
    cat_write_schema(&w, dataset, gen);
}

/* --------------------------------------------------------- the lists */

void mcp_resources_list(struct mcp_call *c)
{
    char after[VT_MAX_DATASET_NAME_BYTES + 1];
    if (!mcp_list_cursor(c, after, sizeof after)) {
        mcp_call_error(c, RPC_INVALID_PARAMS, "Invalid cursor", NULL);
        return;
    }
    struct cat_status *list;
    size_t n = mcp_sorted_status(c->env.catalog, &list);
    int64_t page = c->env.cfg->mcp.list_page_size;
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, true);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"resources\":[");
    int64_t k = 0;
    size_t i = 0;
    const char *last = NULL;
    while (i < n && after[0] && strcmp(list[i].name, after) <= 0)
        i++;
    for (; i < n; i++) {
        if (list[i].state != CAT_PUBLISHED && !list[i].has_generation)
            continue;
        if (k == page)
            break;
        sb_addf(&sb, "%s{\"uri\":\"" MCP_RESOURCE_PREFIX "%s\",\"name\":\"%s\",\"title\":",
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
        last = list[i].name;
    }
    sb_adds(&sb, "]");
    if (i < n && last)
        mcp_add_next_cursor(&sb, last);
    cat_status_list_free(list, n);
    mcp_send_result(c, &sb);
}

void mcp_resource_templates_list(struct mcp_call *c)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, true);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"resourceTemplates\":[");
    for (size_t i = 0; i < sizeof templates / sizeof templates[0]; i++) {
        sb_addf(&sb, "%s{\"uriTemplate\":\"%s\",\"name\":\"%s\",\"title\":\"%s\","
                     "\"description\":",
                i ? "," : "", templates[i].uri_template, templates[i].name, templates[i].title);
        sb_add_json_string(&sb, templates[i].description, strlen(templates[i].description));
        sb_adds(&sb, ",\"mimeType\":\"application/json\"}");
    }
    sb_adds(&sb, "]");
    mcp_send_result(c, &sb);
}

/* -------------------------------------------------------------- reads */

static void send_contents(struct mcp_call *c, const char *text, size_t len)
{
    json_t *uri = json_object_get(c->params, "uri");
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, true);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"contents\":[{\"uri\":");
    sb_add_json_string(&sb, json_string_value(uri), json_string_length(uri));
    sb_adds(&sb, ",\"mimeType\":\"application/json\",\"text\":");
    sb_add_json_string(&sb, text, len);
    sb_adds(&sb, "}]");
    mcp_send_result(c, &sb);
}

/* vitrine://datasets/<name>: the schema and sample rows (from exec). */
static void dataset_done(struct mcp_call *c)
{
    if (!c->sink.ended) {
        mcp_send_vterr(c, &c->sink.err);
        return;
    }
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
    send_contents(c, s.buf, s.len);
    sb_release(&s);
}

static void schema_job(struct mcp_call *c, const struct eng_job *job)
{
    (void)job;
    struct vt_error err = {0};
    if (mcp_pin(c, http_req_deadline(c->req), &err) != VT_ERR_OK) {
        mcp_send_vterr(c, &err);
        return;
    }
    struct strbuf s;
    sb_init(&s, 0);
    mcp_write_schema(&s, c->dataset, c->pin.gen);
    send_contents(c, s.buf, s.len);
    sb_release(&s);
}

static void summary_job(struct mcp_call *c, const struct eng_job *job)
{
    struct vt_error err = {0};
    if (mcp_pin(c, http_req_deadline(c->req), &err) != VT_ERR_OK) {
        mcp_send_vterr(c, &err);
        return;
    }
    /* The first 64 columns, as summarize_dataset without columns. */
    const struct cat_generation *gen = c->pin.gen;
    char *sel = NULL;
    if (gen->n_cols > 64) {
        json_t *a = json_array();
        for (size_t i = 0; i < 64; i++)
            json_array_append_new(a, json_string(gen->cols[i].name));
        sel = json_dumps(a, JSON_COMPACT);
        json_decref(a);
    }
    struct strbuf s;
    sb_init(&s, 0);
    enum vt_err rc = mcp_summary(c, job, sel, &s, &err);
    free(sel);
    if (rc == VT_ERR_OK)
        send_contents(c, s.buf, s.len);
    else
        mcp_send_vterr(c, &err);
    sb_release(&s);
}

static void not_found(struct mcp_call *c, const char *uri)
{
    struct strbuf data;
    sb_init(&data, 0);
    sb_adds(&data, "{\"uri\":");
    sb_add_json_string(&data, uri ? uri : "", uri ? strlen(uri) : 0);
    sb_adds(&data, "}");
    mcp_call_error(c, c->modern ? RPC_INVALID_PARAMS : MCP_RESOURCE_NOT_FOUND_LEGACY,
                   "Resource not found", data.buf);
    sb_release(&data);
}

void mcp_resources_read(struct mcp_call *c)
{
    json_t *uri = c->params ? json_object_get(c->params, "uri") : NULL;
    const char *u = json_is_string(uri) ? json_string_value(uri) : NULL;
    size_t pl = strlen(MCP_RESOURCE_PREFIX);
    if (!u || strncmp(u, MCP_RESOURCE_PREFIX, pl) != 0) {
        not_found(c, u);
        return;
    }
    /* <name>, <name>/schema or <name>/summary (names hold no '/'). */
    const char *name = u + pl, *slash = strchr(name, '/');
    size_t nl = slash ? (size_t)(slash - name) : strlen(name);
    enum view view = VIEW_DATASET;
    if (slash && !strcmp(slash, "/schema"))
        view = VIEW_SCHEMA;
    else if (slash && !strcmp(slash, "/summary"))
        view = VIEW_SUMMARY;
    else if (slash)
        nl = 0;
    char *ds = nl && nl <= VT_MAX_DATASET_NAME_BYTES ? arena_alloc(http_req_arena(c->req), nl + 1)
                                                     : NULL;
    if (ds) {
        memcpy(ds, name, nl);
        ds[nl] = '\0';
    }
    if (!ds || !cat_has_dataset(c->env.catalog, ds)) {
        not_found(c, u);
        return;
    }
    c->dataset = ds;
    if (view == VIEW_SCHEMA) {
        struct vt_error err = {0};
        if (mcp_pin(c, 0, &err) == VT_ERR_OK)
            schema_job(c, NULL);
        else if (err.code == VT_ERR_DATASET_NOT_READY)
            mcp_defer(c, schema_job);
        else
            mcp_send_vterr(c, &err);
        return;
    }
    if (view == VIEW_SUMMARY) {
        mcp_defer(c, summary_job);
        return;
    }
    json_t *body = json_pack("{s:i}", "page_size", SAMPLE_ROWS);
    c->on_done = dataset_done;
    static const char *const extra[] = {NULL};
    struct exec_request rq = {
        .kind = EXEC_ROWS,
        .dataset = c->dataset,
        .body = body,
        .opts = {.mode = QUERY_PAGED, .max_page_size = SAMPLE_ROWS, .extra_fields = extra},
        .caps = {.max_rows = SAMPLE_ROWS},
    };
    mcp_start_exec(c, &rq);
    json_decref(body);
}
