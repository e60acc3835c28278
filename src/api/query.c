/*
 * POST /api/v1/datasets/{name}/query, /query/stream and /count: the HTTP
 * front end of the execution layer (src/exec). A handler pins the dataset's
 * current generation for the request's whole life (so a reload never mixes
 * two versions into one response), validates the body, picks the sink
 * (JSON page, Arrow page, Arrow stream, count; http_sink.c) and hands the
 * plan to exec:
 *
 *  - on the HTTP thread, when the index fast path can answer with a few rows
 *    (point lookups, indexed counts): no worker, no DuckDB;
 *  - otherwise as a job on the query pool, with that worker's connection.
 *
 * GET .../query?q=<URL-encoded query JSON> is the same paged query as a URL
 * (shareable, cacheable): its weak ETag names the generation, the format and
 * q, so If-None-Match answers 304 without running anything. "include_total"
 * counts the request's rows first (explore_total) on the same worker.
 *
 * Errors before execution are replied here with the code's HTTP status;
 * errors during execution are the sink's to report.
 */
#include <stdio.h>
#include <strings.h>

#include "api/api.h"
#include "explore/explore.h"
#include "http/encoding.h"
#include "util/timeutil.h"

/* An index answer of at most this many rows is written on the HTTP thread. */
#define INLINE_MAX_ROWS 64

struct query_call {
    enum query_mode mode;
    bool get;                   /* GET ?q=: the body is the q parameter */
    bool not_modified;          /* GET answered 304 by call_prepare */
    enum api_format format;
    struct exec_pin pin;
    struct query_request qr;
    bool prepared;
    struct api_sink sink;
    struct exec_plan plan;
};

enum vt_err api_choose_format(struct http_request *req, enum api_format *out,
                              struct vt_error *err)
{
    const char *fmt = http_req_query(req, "format");
    if (fmt) {
        if (!strcasecmp(fmt, "arrow")) {
            *out = API_FORMAT_ARROW;
            return VT_ERR_OK;
        }
        if (!strcasecmp(fmt, "json")) {
            *out = API_FORMAT_JSON;
            return VT_ERR_OK;
        }
        return vt_error_set(err, VT_ERR_INVALID_QUERY,
                            "format: expected \"json\" or \"arrow\", got \"%s\"", fmt);
    }
    /* Arrow when the client names the Arrow type with q > 0 and does not
     * prefer JSON; wildcards and everything else keep the JSON default. */
    const char *accept = http_req_header(req, "Accept");
    int q_arrow = http_accept_media_q(accept, API_ARROW_CONTENT_TYPE);
    int q_json = http_accept_media_q(accept, "application/json");
    *out = q_arrow > 0 && q_arrow >= q_json ? API_FORMAT_ARROW : API_FORMAT_JSON;
    return VT_ERR_OK;
}

/* Everything before execution: dataset, generation, format, body, plan.
 * `deadline` = 0 means do not wait for a lazy build (the HTTP thread must not
 * block): *out_not_ready then asks the caller to retry on a worker. */
static enum vt_err call_prepare(struct http_request *req, struct query_call *c, int64_t deadline,
                                bool *out_not_ready, struct vt_error *err)
{
    *out_not_ready = false;
    struct api_app *app = api_app(req);
    if (exec_pin(app->catalog, http_req_param(req, 0), deadline, &c->pin, err) != VT_ERR_OK) {
        *out_not_ready = deadline == 0 && err->code == VT_ERR_DATASET_NOT_READY;
        return err->code;
    }
    c->format = API_FORMAT_ARROW;
    if (c->mode == QUERY_COUNT)
        c->format = API_FORMAT_JSON;
    else if (c->mode == QUERY_PAGED && api_choose_format(req, &c->format, err) != VT_ERR_OK)
        return err->code;
    if (c->get) {
        /* One URL, one answer per generation: the ETag names both. */
        size_t qlen;
        const char *q = http_req_query_n(req, "q", &qlen);
        struct strbuf key;
        sb_init(&key, 0);
        sb_addf(&key, "%d:", (int)c->format);
        sb_add(&key, q ? q : "", qlen);
        char etag[HTTP_ETAG_MAX];
        api_weak_etag(c->pin.gen->id, key.buf ? key.buf : "", key.len, etag);
        sb_release(&key);
        http_add_header(req, "Vary", "Accept");
        if (api_not_modified(req, etag)) {
            c->not_modified = true;
            return VT_ERR_OK;
        }
    }
    int64_t start_us = time_mono_us();
    json_t *body = c->get ? api_json_query_param(req, "q", err) : api_json_body(req, true, err);
    if (!body)
        return err->code;
    struct query_options opts = {.mode = c->mode, .max_page_size = app->cfg->server.max_page_size};
    enum vt_err rc = exec_parse_query(body, c->pin.gen, &opts, http_req_arena(req), &c->qr, err);
    json_decref(body);
    int64_t parsed_us = time_mono_us();
    if (rc != VT_ERR_OK)
        return rc;
    if (c->pin.gen->published_at_us > 0) {
        char ts[32];
        time_format_rfc3339(c->pin.gen->published_at_us, ts);
        http_add_header(req, "X-Dataset-Refreshed-At", ts);
    }
    api_sink_init(&c->sink, req, c->mode, c->format, c->qr.page, c->qr.page_size);
    /* The plan phase starts with the body: JSON parsing and validation. */
    c->sink.timing.plan_us = parsed_us - start_us;
    c->plan = (struct exec_plan){
        .kind = c->mode == QUERY_COUNT ? EXEC_COUNT : EXEC_ROWS,
        .query = &c->qr,
        .gen = c->pin.gen,
        .arena = http_req_arena(req),
        .timing = &c->sink.timing,
    };
    c->prepared = true;
    return VT_ERR_OK;
}

static void call_release(struct query_call *c)
{
    if (c->prepared)
        api_sink_release(&c->sink);
    c->prepared = false;
    exec_unpin(&c->pin);
}

/* The request is gone: release what it pinned even if its job never ran. */
static void call_on_release(void *user)
{
    call_release(user);
}

static void query_job(struct http_request *req, duckdb_connection con)
{
    struct query_call *c = http_req_user(req);
    if (!c->prepared) {
        struct vt_error err = {0};
        bool not_ready;
        exec_unpin(&c->pin);
        if (call_prepare(req, c, http_req_deadline(req), &not_ready, &err) != VT_ERR_OK) {
            http_reply_vterr(req, &err);
            call_release(c);
            return;
        }
    }
    if (c->not_modified) {
        call_release(c);
        return;
    }
    c->plan.job = http_req_job(req);
    if (c->qr.include_total) {
        struct vt_error err = {0};
        int64_t total;
        if (explore_total(&c->plan, con, &total, &err) != VT_ERR_OK) {
            http_reply_vterr(req, &err);
            call_release(c);
            return;
        }
        api_sink_set_total(&c->sink, total);
    }
    exec_run(&c->plan, &c->sink.sink, con);
    call_release(c);
}

static void start(struct http_request *req, enum query_mode mode, bool get)
{
    struct query_call *c = arena_calloc(http_req_arena(req), sizeof *c);
    if (!c) {
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return;
    }
    c->mode = mode;
    c->get = get;
    http_req_set_user(req, c);
    http_req_on_release(req, call_on_release);
    struct vt_error err = {0};
    bool not_ready = false;
    if (call_prepare(req, c, 0, &not_ready, &err) != VT_ERR_OK) {
        if (not_ready) {
            /* A worker may wait for the first build of a lazy dataset. */
            http_defer_as(req, api_app(req)->queries, query_job,
                          mode == QUERY_STREAM ? ENG_JOB_STREAM : ENG_JOB_LONG);
            return;
        }
        http_reply_vterr(req, &err);
        call_release(c);
        return;
    }
    if (c->not_modified) {
        call_release(c);
        return;
    }
    /* The fast path on the HTTP thread: a published generation whose index
     * answers with a few rows needs no worker at all (a total is counted on
     * a worker). */
    if (!c->qr.include_total &&
        exec_try_fast(&c->plan, &c->sink.sink, INLINE_MAX_ROWS) == EXEC_FAST_DONE) {
        call_release(c);
        return;
    }
    http_defer_as(req, api_app(req)->queries, query_job, exec_job_class(&c->plan));
}

void api_dataset_query(struct http_request *req)
{
    start(req, QUERY_PAGED, false);
}

void api_dataset_query_get(struct http_request *req)
{
    start(req, QUERY_PAGED, true);
}

void api_dataset_query_stream(struct http_request *req)
{
    start(req, QUERY_STREAM, false);
}

void api_dataset_count(struct http_request *req)
{
    start(req, QUERY_COUNT, false);
}
