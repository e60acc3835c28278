/*
 * POST /api/v1/datasets/{name}/query, /query/stream and /count: the HTTP
 * front end of the execution driver (src/exec). A handler negotiates the
 * format (api_negotiate: JSON, Arrow, CSV or NDJSON), reads the JSON body,
 * picks the sink (a page, a stream, a count; http_sink.c) and hands the request to the driver, which
 * pins the dataset's current generation for the request's whole life (so a
 * reload never mixes two versions into one response), validates the body,
 * answers from the index fast path on the HTTP thread when it can (point
 * lookups, indexed counts: no worker, no DuckDB) and otherwise queues a job
 * on the query pool (api_call_start: the HTTP side of every driver call).
 *
 * Errors of the protocol (format, body) are replied here; every other error
 * reaches the sink, which replies it with the code's HTTP status.
 *
 * GET .../query?q=<URL-encoded query JSON> is the same paged query as a URL
 * (shareable, cacheable): once the driver has pinned the generation, its weak
 * ETag (the generation, the format and q) is set, and If-None-Match answers
 * 304 before anything runs. "include_total" counts the request's rows first,
 * on the same worker, right before the page runs (explore_total).
 */
#include "api/api.h"
#include "explore/explore.h"
#include "http/conditional.h"
#include "util/timeutil.h"

/* ---------------------------------------------------- the driver's HTTP side */

static void call_on_release(void *user)
{
    struct api_call *c = user;
    exec_call_release(&c->call);
    api_sink_release(&c->sink);
}

struct api_call *api_call_new(struct http_request *req)
{
    struct api_call *c = arena_calloc(http_req_arena(req), sizeof *c);
    if (!c) {
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    c->req = req;
    http_req_set_user(req, c);
    http_req_on_release(req, call_on_release);
    return c;
}

static void call_job(struct http_request *req)
{
    struct api_call *c = http_req_user(req);
    exec_call_resume(&c->call, http_req_job(req));
}

/* The queue of every HTTP call: a job of its class on the query pool (the
 * connection is suspended meanwhile; a full pool is a 503, a job still
 * queued at the deadline a 504, both answered by the HTTP layer). */
static void call_queue(struct exec_call *call, enum eng_job_class cls)
{
    struct api_call *c = call->rq.user;
    http_defer_flow(c->req, api_app(c->req)->queries, call_job, cls, exec_call_flow(call));
}

void api_call_start(struct api_call *c, struct exec_request *rq)
{
    rq->catalog = api_app(c->req)->catalog;
    rq->sink = &c->sink.sink;
    rq->arena = http_req_arena(c->req);
    rq->timing = &c->sink.timing;
    rq->caps.deadline_ms = http_req_deadline(c->req);
    rq->queue = call_queue;
    rq->user = c;
    exec_call_start(&c->call, rq);
}

/* ------------------------------------------------- /query, /stream, /count */

/* GET: the ETag of this generation's answer to this URL; 304 when the
 * client has it. */
static enum vt_err get_checked(struct exec_call *call, struct vt_error *err)
{
    struct api_call *c = call->rq.user;
    size_t qlen;
    const char *q = http_req_query_n(c->req, "q", &qlen);
    struct strbuf key;
    sb_init(&key, 0);
    sb_addf(&key, "%s:", c->sink.fmt ? c->sink.fmt->name : "count");
    sb_add(&key, q ? q : "", qlen);
    char etag[HTTP_ETAG_MAX];
    api_weak_etag(call->gen->id, key.buf ? key.buf : "", key.len, etag);
    sb_release(&key);
    http_add_header(c->req, "Vary", "Accept");
    http_add_header(c->req, "ETag", etag);
    http_add_header(c->req, "Cache-Control", "no-cache");
    if (http_etag_list_match_weak(http_req_header(c->req, "If-None-Match"), etag))
        return vt_error_set(err, VT_ERR_NOT_MODIFIED, NULL);
    return VT_ERR_OK;
}

/* "include_total": the total first, on the worker that runs the page. */
static enum vt_err total_before_run(struct exec_call *call, const struct eng_job *job,
                                    struct vt_error *err)
{
    (void)job;
    struct api_call *c = call->rq.user;
    if (!call->query->include_total)
        return VT_ERR_OK;
    int64_t total;
    if (explore_total(&call->plan, &total, err) != VT_ERR_OK)
        return err->code;
    api_sink_set_total(&c->sink, total);
    return VT_ERR_OK;
}

static void start(struct http_request *req, enum query_mode mode, bool get)
{
    struct api_call *c = api_call_new(req);
    if (!c)
        return;
    struct vt_error err = {0};
    enum api_reply kind = mode == QUERY_COUNT    ? API_REPLY_COUNT
                          : mode == QUERY_STREAM ? API_REPLY_STREAM
                                                 : API_REPLY_PAGE;
    const struct enc_format *fmt = NULL;
    if (kind != API_REPLY_COUNT && api_negotiate(req, kind, &fmt, &err) != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    api_sink_init(&c->sink, req, kind, fmt);
    int64_t t0 = time_mono_us();
    /* A lookup-shaped body goes to the driver as text (no tree: query.h,
     * "the lookup shape without a JSON tree"). */
    struct query_small *small = get ? NULL : arena_alloc(http_req_arena(req), sizeof *small);
    if (small && !api_small_query(req, small))
        small = NULL;
    json_t *body = small ? NULL
                   : get ? api_json_query_param(req, "q", &err)
                         : api_json_body(req, true, &err);
    if (!body && !small) {
        http_reply_vterr(req, &err);
        return;
    }
    /* The plan phase starts with the body: JSON parsing, then validation. */
    c->sink.timing.plan_us = time_mono_us() - t0;
    struct exec_request rq = {
        .kind = mode == QUERY_COUNT ? EXEC_COUNT : EXEC_ROWS,
        .dataset = http_req_param(req, 0),
        .generation = http_req_query(req, "generation"),
        .body = body,
        .small = small,
        .opts = {.mode = mode, .max_page_size = api_app(req)->cfg->server.max_page_size},
        .caps = {.max_rows = EXEC_NO_CAP}, /* paging bounds a page, nothing a stream */
        .text_columns = fmt && fmt->text_columns,
        .checked = get ? get_checked : NULL,
        /* (only asked for on paged queries: a worker, never the inline path) */
        .before_run = mode == QUERY_PAGED && body &&
                              json_is_true(json_object_get(body, "include_total"))
                          ? total_before_run
                          : NULL,
    };
    api_call_start(c, &rq);
    json_decref(body); /* the call holds its own reference (NULL: none) */
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
