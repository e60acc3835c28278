/*
 * The MCP endpoint's transport (see mcp.h for the protocol decisions): one
 * request is one JSON-RPC message, parsed and checked on the HTTP thread
 * (era, versions, the 2026-07-28 headers and _meta), then dispatched to its
 * method family (tools.c, resources.c, prompts.c). Methods that only read
 * the catalog answer here; those that read data go through the execution
 * layer, on the query pool when they must, exactly like the HTTP API.
 *
 * Replies are built as text. A request of the 2026-07-28 revision that names
 * a log level in _meta (and accepts text/event-stream) gets its log
 * notifications and then its result as one SSE body; every other reply is
 * one JSON document.
 */
#include "mcp/mcp_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define LIST_TTL_MS 5000

/* Versions we speak, newest first; the legacy ones use `initialize`. */
static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
#define N_LEGACY (sizeof legacy_versions / sizeof legacy_versions[0])

static const char SERVER_INFO[] = "{\"name\":\"vitrine\",\"title\":\"vitrine datasets\",\"version\":\"" VT_VERSION "\"}";

/* What we offer. Stateless: no list-changed notifications and no resource
 * subscriptions (nothing outlives a request to deliver them on). */
static const char CAPABILITIES[] =
    "{\"tools\":{\"listChanged\":false},\"resources\":{\"subscribe\":false,"
    "\"listChanged\":false},\"prompts\":{\"listChanged\":false},\"completions\":{},"
    "\"logging\":{}}";

static const char INSTRUCTIONS[] =
    "vitrine publishes tabular datasets (Parquet files and Delta tables). Call list_datasets to "
    "see what exists, describe_dataset for a dataset's columns and types before querying it, "
    "summarize_dataset for each column's range, distinct values and distribution, facet_counts "
    "for the most frequent values of columns among filtered rows, count_rows to size a filter, "
    "and query_dataset to read rows (filtered, sorted, grouped with aggregations, paged). "
    "Results are capped; a capped result says truncated and gives `next`, the arguments that "
    "fetch the rest. The prompts explore_dataset and answer_with_sql start common tasks.";

static const char *const level_names[] = {"debug",    "info",  "notice", "warning",
                                          "error",    "critical", "alert", "emergency"};

int mcp_level_parse(const char *s)
{
    for (int i = 0; i < (int)(sizeof level_names / sizeof level_names[0]); i++)
        if (!strcmp(s, level_names[i]))
            return i;
    return -1;
}

/* ------------------------------------------------------------ the call */

static void call_release(struct mcp_call *c)
{
    exec_call_release(&c->call);
    exec_json_sink_release(&c->sink);
    sb_release(&c->rows);
    sb_release(&c->logs);
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

void mcp_send_error(struct http_request *req, int status, const json_t *id, int code,
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

void mcp_call_error(struct mcp_call *c, int code, const char *message, const char *data_json)
{
    int status = c->modern && code == RPC_METHOD_NOT_FOUND ? 404 : 200;
    mcp_send_error(c->req, status, c->id, code, message, data_json);
}

static void send_unsupported_version(struct http_request *req, const json_t *id,
                                     const char *requested)
{
    struct strbuf data;
    sb_init(&data, 0);
    sb_adds(&data, "{\"supported\":[\"" MCP_MODERN_VERSION "\"");
    for (size_t i = 0; i < N_LEGACY; i++)
        sb_addf(&data, ",\"%s\"", legacy_versions[i]);
    sb_adds(&data, "],\"requested\":");
    sb_add_json_string(&data, requested, strlen(requested));
    sb_adds(&data, "}");
    mcp_send_error(req, 400, id, MCP_UNSUPPORTED_VERSION, "Unsupported protocol version",
                   data.buf);
    sb_release(&data);
}

void mcp_result_open(struct strbuf *sb, const struct mcp_call *c, bool cacheable)
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

void mcp_result_sep(struct strbuf *sb)
{
    if (sb->len && sb->buf[sb->len - 1] != '{')
        sb_addc(sb, ',');
}

void mcp_send_result(struct mcp_call *c, struct strbuf *sb)
{
    sb_adds(sb, "}}");
    if (!c->logs.len || !c->sse_ok) {
        http_reply_json(c->req, 200, sb);
        return;
    }
    /* The notifications, then the response, as one event stream. */
    struct strbuf body;
    sb_init(&body, 0);
    sb_add(&body, c->logs.buf, c->logs.len);
    sb_adds(&body, "event: message\ndata: ");
    sb_add(&body, sb->buf ? sb->buf : "", sb->len);
    sb_adds(&body, "\n\n");
    sb_release(sb);
    http_add_header(c->req, "Cache-Control", "no-cache");
    http_reply_buffer(c->req, 200, "text/event-stream", &body, true);
}

void mcp_log(struct mcp_call *c, enum mcp_level level, const char *fmt, ...)
{
    if (c->log_level == MCP_LOG_OFF || level < c->log_level || !c->sse_ok)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    sb_addf(&c->logs, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
                      "\"notifications/message\",\"params\":{\"level\":\"%s\",\"logger\":"
                      "\"vitrine\",\"data\":",
            level_names[level]);
    sb_add_json_string(&c->logs, text, strlen(text));
    sb_adds(&c->logs, "}}\n\n");
}

void mcp_send_tool_result(struct mcp_call *c, const char *structured, size_t len)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, false);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"content\":[{\"type\":\"text\",\"text\":");
    sb_add_json_string(&sb, structured, len);
    sb_adds(&sb, "}],\"structuredContent\":");
    sb_add(&sb, structured, len);
    sb_adds(&sb, ",\"isError\":false");
    mcp_send_result(c, &sb);
}

void mcp_send_tool_error(struct mcp_call *c, const char *message, const char *code)
{
    struct strbuf text;
    sb_init(&text, 0);
    sb_adds(&text, message);
    if (code)
        sb_addf(&text, " (code: %s)", code);
    mcp_log(c, MCP_LOG_WARNING, "%s", text.buf ? text.buf : "");
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, false);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"content\":[{\"type\":\"text\",\"text\":");
    sb_add_json_string(&sb, text.buf ? text.buf : "", text.len);
    sb_adds(&sb, "}],\"isError\":true");
    sb_release(&text);
    mcp_send_result(c, &sb);
}

void mcp_add_dataset_names(struct strbuf *sb, struct cat_catalog *cat)
{
    struct cat_status *list;
    size_t n = mcp_sorted_status(cat, &list);
    sb_adds(sb, n ? " Datasets: " : " There are no datasets.");
    for (size_t i = 0; i < n && i < 50; i++)
        sb_addf(sb, "%s%s", i ? ", " : "", list[i].name);
    if (n > 50)
        sb_addf(sb, ", ... (%zu in all; list_datasets pages through them)", n);
    if (n)
        sb_adds(sb, ".");
    cat_status_list_free(list, n);
}

void mcp_send_vterr(struct mcp_call *c, const struct vt_error *err)
{
    if (vt_err_rpc(err->code) != 0 && err->code != VT_ERR_INVALID_JSON) {
        mcp_send_error(c->req, 200, c->id, RPC_INTERNAL, vt_error_message(err), NULL);
        return;
    }
    struct strbuf msg;
    sb_init(&msg, 0);
    sb_adds(&msg, vt_error_message(err));
    const struct cat_generation *gen = c->call.gen ? c->call.gen : c->pin.gen;
    if (err->code == VT_ERR_DATASET_NOT_FOUND) {
        sb_addc(&msg, '.'); /* the names are a sentence of their own */
        mcp_add_dataset_names(&msg, c->env.catalog);
    } else if (err->code == VT_ERR_UNKNOWN_COLUMN && gen) {
        sb_adds(&msg, "; the columns are:");
        for (size_t i = 0; i < gen->n_cols && i < 200; i++)
            sb_addf(&msg, "%s %s", i ? "," : "", gen->cols[i].name);
        sb_adds(&msg, ".");
    } else if (err->code == VT_ERR_DATASET_NOT_READY) {
        sb_adds(&msg, " Retry in a few seconds.");
    }
    if (c->tool) {
        mcp_send_tool_error(c, msg.buf ? msg.buf : "", vt_err_code(err->code));
    } else {
        /* prompts/get, resources/read, completion: a protocol error whose
         * data carries the stable code. */
        struct strbuf data;
        sb_init(&data, 0);
        sb_addf(&data, "{\"code\":\"%s\"}", vt_err_code(err->code));
        int code = err->code == VT_ERR_DATASET_NOT_FOUND && !c->modern &&
                           !strcmp(c->method, "resources/read")
                       ? MCP_RESOURCE_NOT_FOUND_LEGACY
                       : RPC_INVALID_PARAMS;
        mcp_call_error(c, code, msg.buf ? msg.buf : "", data.buf);
        sb_release(&data);
    }
    sb_release(&msg);
}

/* ------------------------------------------------- helpers for methods */

/* A job on the query pool that answers in MCP's form when it passes its
 * deadline (a tool result with isError for tools/call, a JSON-RPC error for
 * other methods), never with the REST 504 body: the reply is made here,
 * before the job runs, since the server may have to send it while the job
 * is still inside DuckDB. */
static void defer(struct mcp_call *c, http_job_fn fn, enum eng_job_class cls)
{
#define TIMEOUT_MSG "request timed out (server.request_timeout_ms); narrow the query or ask " \
                    "for fewer rows"
    struct strbuf sb;
    sb_init(&sb, 0);
    if (c->tool) {
        mcp_result_open(&sb, c, false);
        mcp_result_sep(&sb);
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

static void job_trampoline(struct http_request *req)
{
    struct mcp_call *c = http_req_user(req);
    c->job(c, http_req_job(req));
}

void mcp_defer(struct mcp_call *c, mcp_job_fn fn)
{
    c->job = fn;
    defer(c, job_trampoline, ENG_JOB_LONG);
}

enum vt_err mcp_pin(struct mcp_call *c, int64_t deadline, struct vt_error *err)
{
    if (c->pin.gen)
        return VT_ERR_OK;
    return exec_pin(c->env.catalog, c->dataset, deadline, &c->pin, err);
}

struct explore_ctx mcp_explore_ctx(struct mcp_call *c, const struct eng_job *job)
{
    return (struct explore_ctx){
        .gen = c->pin.gen,
        .dataset = c->dataset,
        .job = job,
        .arena = http_req_arena(c->req),
    };
}

enum vt_err mcp_summary(struct mcp_call *c, const struct eng_job *job, const char *columns_json,
                        struct strbuf *out, struct vt_error *err)
{
    struct explore_ctx x = mcp_explore_ctx(c, job);
    enum vt_err rc = explore_summary(&x, columns_json, out, err);
    if (rc == VT_ERR_OK && out->len > (size_t)c->env.cfg->mcp.max_bytes)
        rc = vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                          "the summary is %zu bytes, over the server's cap of %lld: ask for "
                          "fewer columns (columns: [...])",
                          out->len, (long long)c->env.cfg->mcp.max_bytes);
    return rc;
}

static void sink_done(struct exec_json_sink *sink)
{
    struct mcp_call *c = sink->user;
    c->on_done(c);
}

static void call_job(struct http_request *req)
{
    struct mcp_call *c = http_req_user(req);
    exec_call_resume(&c->call, http_req_job(req));
}

/* The driver's queue: a job on the query pool, as for POST /query. */
static void call_queue(struct exec_call *call, enum eng_job_class cls)
{
    struct mcp_call *c = call->rq.user;
    defer(c, call_job, cls);
}

void mcp_start_exec(struct mcp_call *c, struct exec_request *rq)
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

bool mcp_sql_tool_available(const struct mcp_env *env)
{
    return env->cfg->mcp.expose_sql && env->cfg->sql.enabled;
}

static int status_cmp(const void *a, const void *b)
{
    return strcmp(((const struct cat_status *)a)->name, ((const struct cat_status *)b)->name);
}

size_t mcp_sorted_status(struct cat_catalog *cat, struct cat_status **out)
{
    size_t n = cat_status_list(cat, out);
    if (n > 1)
        qsort(*out, n, sizeof **out, status_cmp);
    return n;
}

bool mcp_list_cursor(struct mcp_call *c, char *after, size_t cap)
{
    after[0] = '\0';
    json_t *cur = c->params ? json_object_get(c->params, "cursor") : NULL;
    if (!cur || json_is_null(cur))
        return true;
    return json_is_string(cur) && mcp_cursor_decode(json_string_value(cur), after, cap) >= 0;
}

void mcp_add_next_cursor(struct strbuf *sb, const char *last_key)
{
    char cur[3 * VT_MAX_DATASET_NAME_BYTES + 16];
    if (mcp_cursor_encode(last_key, cur, sizeof cur))
        sb_addf(sb, ",\"nextCursor\":\"%s\"", cur);
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
    mcp_result_open(&sb, c, false);
    mcp_result_sep(&sb);
    sb_addf(&sb, "\"protocolVersion\":\"%s\",\"capabilities\":%s,\"serverInfo\":%s,"
                 "\"instructions\":",
            version, CAPABILITIES, SERVER_INFO);
    sb_add_json_string(&sb, INSTRUCTIONS, strlen(INSTRUCTIONS));
    /* A session id the client will send back, which no replica checks or
     * keeps (nothing is stored: any replica answers any request, and a
     * client's own id is accepted as well). It names the client's session
     * for the clients and tools that expect one (SEP-1699's concurrent
     * streams); DELETE to end it is 405, as the transport allows. */
    char sid[27];
    ulid_new(sid);
    http_add_header(c->req, "Mcp-Session-Id", sid);
    mcp_send_result(c, &sb);
}

static void do_discover(struct mcp_call *c)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, true);
    mcp_result_sep(&sb);
    sb_adds(&sb, "\"supportedVersions\":[\"" MCP_MODERN_VERSION "\"");
    for (size_t i = 0; i < N_LEGACY; i++)
        sb_addf(&sb, ",\"%s\"", legacy_versions[i]);
    sb_addf(&sb, "],\"capabilities\":%s,\"serverInfo\":%s,\"instructions\":", CAPABILITIES,
            SERVER_INFO);
    sb_add_json_string(&sb, INSTRUCTIONS, strlen(INSTRUCTIONS));
    mcp_send_result(c, &sb);
}

static void do_empty(struct mcp_call *c)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    mcp_result_open(&sb, c, false);
    mcp_send_result(c, &sb);
}

/* logging/setLevel (the initialize era): accepted and checked. A stateless
 * server keeps nothing between requests, so the level cannot apply to the
 * requests that follow; the 2026-07-28 revision names the level per request
 * (_meta logLevel), which is when vitrine sends log notifications. */
static void do_set_level(struct mcp_call *c)
{
    json_t *lv = c->params ? json_object_get(c->params, "level") : NULL;
    if (!json_is_string(lv) || mcp_level_parse(json_string_value(lv)) < 0) {
        mcp_call_error(c, RPC_INVALID_PARAMS,
                       "params.level must be one of debug, info, notice, warning, error, "
                       "critical, alert, emergency",
                       NULL);
        return;
    }
    do_empty(c);
}

/* ------------------------------------------------------- the transport */

/* A header value without the optional white space around it (RFC 9110
 * §5.5), in the request's arena; NULL when absent. */
static const char *header_trimmed(struct http_request *req, const char *name)
{
    const char *v = http_req_header(req, name);
    if (!v)
        return NULL;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    char *out = arena_alloc(http_req_arena(req), n + 1);
    if (!out)
        return "";
    memcpy(out, v, n);
    out[n] = '\0';
    return out;
}

/* Modern requests: the standard headers must be there and match the body. */
static bool headers_match(struct mcp_call *c, const char *version)
{
    struct http_request *req = c->req;
    const char *hv = header_trimmed(req, "MCP-Protocol-Version");
    const char *hm = header_trimmed(req, "Mcp-Method");
    const char *why = NULL;
    if (!hv || strcmp(hv, version) != 0)
        why = hv ? "MCP-Protocol-Version header does not match _meta"
                 : "MCP-Protocol-Version header is missing";
    else if (!hm || strcmp(hm, c->method) != 0)
        why = hm ? "Mcp-Method header does not match method" : "Mcp-Method header is missing";
    else if (!strcmp(c->method, "tools/call") || !strcmp(c->method, "resources/read") ||
             !strcmp(c->method, "prompts/get")) {
        const char *key = !strcmp(c->method, "resources/read") ? "uri" : "name";
        json_t *bv = c->params ? json_object_get(c->params, key) : NULL;
        const char *hn = header_trimmed(req, "Mcp-Name");
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
    mcp_send_error(req, 400, c->id, MCP_HEADER_MISMATCH, why, NULL);
    return false;
}

/* The era of the request, checked. false: answered (an error). */
static bool check_era(struct mcp_call *c, const struct mcp_envelope *env)
{
    struct http_request *req = c->req;
    const char *hv = header_trimmed(req, "MCP-Protocol-Version");
    if (env->meta_version) {
        /* The 2026-07-28 revision: the header must carry the _meta version
         * (a mismatch is the header's fault), which must be ours. */
        if (!hv || strcmp(hv, env->meta_version) != 0) {
            mcp_send_error(req, 400, c->id, MCP_HEADER_MISMATCH,
                           hv ? "MCP-Protocol-Version header does not match _meta"
                              : "MCP-Protocol-Version header is missing",
                           NULL);
            return false;
        }
        if (strcmp(env->meta_version, MCP_MODERN_VERSION) != 0) {
            send_unsupported_version(req, c->id, env->meta_version);
            return false;
        }
        c->modern = true;
        json_t *meta = json_object_get(c->params, "_meta");
        if (!json_is_object(json_object_get(meta, META_CLIENT_CAPS))) {
            mcp_send_error(req, 400, c->id, RPC_INVALID_PARAMS,
                           "params._meta must carry " META_CLIENT_CAPS " (an object)", NULL);
            return false;
        }
        json_t *lv = json_object_get(meta, META_LOG_LEVEL);
        if (lv) {
            int level = json_is_string(lv) ? mcp_level_parse(json_string_value(lv)) : -1;
            if (level < 0) {
                mcp_send_error(req, 400, c->id, RPC_INVALID_PARAMS,
                               "params._meta " META_LOG_LEVEL " is not a log level", NULL);
                return false;
            }
            c->log_level = (enum mcp_level)level;
        }
        return headers_match(c, env->meta_version);
    }
    if (hv && !strcmp(hv, MCP_MODERN_VERSION)) {
        /* A 2026-07-28 request without its _meta: malformed. */
        mcp_send_error(req, 400, c->id, RPC_INVALID_PARAMS,
                       "params._meta must carry io.modelcontextprotocol/protocolVersion and "
                       "" META_CLIENT_CAPS " in protocol version " MCP_MODERN_VERSION,
                       NULL);
        return false;
    }
    if (hv && strcmp(c->method, "initialize") != 0) {
        bool known = false;
        for (size_t i = 0; i < N_LEGACY; i++)
            known = known || !strcmp(hv, legacy_versions[i]);
        if (!known) {
            send_unsupported_version(req, c->id, hv);
            return false;
        }
    }
    return true;
}

void mcp_handle(struct http_request *req, const struct mcp_env *menv)
{
    /* DNS rebinding: a browser page may call us only from an origin the
     * server allows (http/hosts.h), mcp.allowed_origins added. */
    if (!http_req_origin_ok(req, &menv->cfg->mcp.allowed_origins)) {
        mcp_send_error(req, 403, NULL, RPC_INVALID_REQUEST, "Origin not allowed", NULL);
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
            mcp_send_error(req, 400, NULL, RPC_PARSE_ERROR, "Parse error", NULL);
            break;
        case MCP_BATCH:
            mcp_send_error(req, 400, NULL, RPC_INVALID_REQUEST, "Batches are not supported",
                           NULL);
            break;
        case MCP_INVALID:
            mcp_send_error(req, 400, env.id, RPC_INVALID_REQUEST, "Invalid Request", NULL);
            break;
        default: /* notifications and responses: nothing to answer */
            sb_init(&none, 0);
            http_reply_buffer(req, 202, "application/json", &none, false);
            break;
        }
        mcp_envelope_release(&env);
        return;
    }
    struct mcp_call *c = arena_calloc(http_req_arena(req), sizeof *c);
    if (!c) {
        mcp_send_error(req, 500, env.id, RPC_INTERNAL, "out of memory", NULL);
        mcp_envelope_release(&env);
        return;
    }
    c->req = req;
    c->env = *menv;
    c->msg = env.msg;
    c->id = env.id;
    c->method = env.method;
    c->params = env.params;
    c->log_level = MCP_LOG_OFF;
    c->t0_ms = time_mono_ms();
    const char *accept = http_req_header(req, "Accept");
    c->sse_ok = accept && strstr(accept, "text/event-stream");
    sb_init(&c->logs, 0);
    http_req_set_user(req, c);
    http_req_on_release(req, call_on_release);

    if (!check_era(c, &env)) {
        call_release(c);
        return;
    }

    /* Methods may go on to a job, which owns `c` until it ends; the
     * request's release hook frees it in every case. */
    static const struct {
        const char *name;
        void (*fn)(struct mcp_call *);
        signed char era; /* 0 both, 1 modern only, -1 the initialize era only */
    } methods[] = {
        {"tools/call", mcp_tools_call, 0},
        {"tools/list", mcp_tools_list, 0},
        {"resources/read", mcp_resources_read, 0},
        {"resources/list", mcp_resources_list, 0},
        {"resources/templates/list", mcp_resource_templates_list, 0},
        {"prompts/list", mcp_prompts_list, 0},
        {"prompts/get", mcp_prompts_get, 0},
        {"completion/complete", mcp_complete, 0},
        {"server/discover", do_discover, 1},
        {"initialize", do_initialize, -1},
        {"ping", do_empty, -1},
        {"logging/setLevel", do_set_level, -1},
    };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (strcmp(methods[i].name, c->method) != 0)
            continue;
        if (methods[i].era == 0 || (methods[i].era == 1) == c->modern) {
            methods[i].fn(c);
            return;
        }
        break;
    }
    mcp_call_error(c, RPC_METHOD_NOT_FOUND, "Method not found", NULL);
    call_release(c);
}

/* ------------------------------------------------ authorization discovery */

/* scheme://host[:port] as the client addressed us: the Host header (only
 * host[:port] characters; else "localhost") and http, or https when a proxy
 * in front says so (X-Forwarded-Proto: https). */
static void request_origin(struct http_request *req, struct strbuf *out)
{
    const char *host = http_req_header(req, "Host");
    bool ok = host && *host && strlen(host) < 256;
    for (const char *p = host; ok && *p; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
             *p == '.' || *p == '-' || *p == ':' || *p == '[' || *p == ']';
    const char *proto = http_req_header(req, "X-Forwarded-Proto");
    bool https = proto && !strcasecmp(proto, "https");
    sb_addf(out, "%s://%s", https ? "https" : "http", ok ? host : "localhost");
}

/* {prefix}{mcp.path} without a trailing slash ("" for the root). */
static void endpoint_path(const struct vt_config *cfg, struct strbuf *out)
{
    sb_adds(out, cfg->server.prefix ? cfg->server.prefix : "");
    sb_adds(out, cfg->mcp.path ? cfg->mcp.path : "");
    while (out->len && out->buf[out->len - 1] == '/')
        out->buf[--out->len] = '\0';
}

void mcp_resource_url(struct http_request *req, const struct vt_config *cfg, struct strbuf *out)
{
    request_origin(req, out);
    endpoint_path(cfg, out);
}

void mcp_resource_metadata_path(const struct vt_config *cfg, struct strbuf *out)
{
    sb_adds(out, MCP_PRM_WELL_KNOWN);
    endpoint_path(cfg, out);
}

void mcp_resource_metadata_url(struct http_request *req, const struct vt_config *cfg,
                               struct strbuf *out)
{
    request_origin(req, out);
    mcp_resource_metadata_path(cfg, out);
}

/* RFC 9728: the metadata of the protected resource this endpoint is. */
void mcp_protected_resource(struct http_request *req, const struct vt_config *cfg)
{
    struct strbuf resource;
    sb_init(&resource, 0);
    mcp_resource_url(req, cfg, &resource);
    struct strbuf s;
    sb_init(&s, 0);
    struct jw w;
    jw_init(&w, &s);
    jw_obj_begin(&w);
    jw_kstr(&w, "resource", resource.buf ? resource.buf : "");
    sb_release(&resource);
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
