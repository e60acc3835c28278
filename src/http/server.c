/*
 * The HTTP server (see server.h for the model, http_internal.h for how its
 * files share the work): the request API handlers use, routing and
 * dispatch, jobs on the engine pools, start and stop. Connections, parsing
 * and writing are conn.c's (our own HTTP/1.1 engine over wire.c); replies
 * are reply.c's.
 *
 * Request life:
 *   head parsed        http_request_new + http_request_accept_head: the
 *                      target, path and Host rules, the client's request id;
 *                      a refusal is a JSON error and the connection closes
 *   body read          bounded (413 as soon as it cannot fit)
 *   dispatch           route, authorize, run the handler; it replies at once
 *                      or defers a job (the connection waits; a client that
 *                      leaves cancels the job)
 *   job done           its reply (or 504/500) is handed to the connection
 *   response written   http_request_complete: metrics, access line, release
 *
 * Why not libmicrohttpd any more (measured; README "Decisions worth
 * knowing"): 0.9.75 answers the requests it rejects itself with HTML bodies
 * and has no hook to replace them, and a Content-Length such as -1 got its
 * status line and headers twice (its error path re-enters the header
 * state); a pre-read in the acceptor cannot see the next request of a
 * keep-alive connection nor chunk framing. It also zeroed its 48 KB
 * connection pool after every request: 74,000 of the 92,957 instructions of
 * a /healthz.
 */
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/cors.h"
#include "http/http_internal.h"
#include "metrics/metrics.h"
#include "util/log.h"
#include "util/timeutil.h"

/* ------------------------------------------------------------ helpers */

static enum http_method parse_method(const char *m)
{
    if (!strcmp(m, "GET")) return HTTP_GET;
    if (!strcmp(m, "HEAD")) return HTTP_HEAD;
    if (!strcmp(m, "POST")) return HTTP_POST;
    if (!strcmp(m, "PUT")) return HTTP_PUT;
    if (!strcmp(m, "DELETE")) return HTTP_DELETE;
    if (!strcmp(m, "PATCH")) return HTTP_PATCH;
    if (!strcmp(m, "OPTIONS")) return HTTP_OPTIONS;
    return HTTP_OTHER;
}

/* ------------------------------------------------- request objects
 * Each thread keeps one released request, with its arena's first block, and
 * one released response, with its head's buffer, for the next ones it makes:
 * a loop thread starts every request of its connections and releases the
 * ones answered inline (a point lookup) with their responses, so the calloc
 * of both, the mallocs of the arena block and of the head and their frees
 * (~1,500 instructions of a lookup; bench/callgrind.py) are gone. The spares
 * are freed when their thread ends. Not under ASan: a use of a released
 * request or response must stay a use after free there. */
#if defined(__SANITIZE_ADDRESS__)
#define SPARES 0
#else
#define SPARES 1
#endif

struct spares {
    struct http_request *req;
    struct http_response *resp;
    char *body;                 /* a released reply body's buffer */
    size_t body_cap;
};

/* The reply bodies kept: a point lookup's page buffer (1 KiB, grown to 2 or
 * 4 for a wide row), not a big page's. */
#define SPARE_BODY_MIN 1024
#define SPARE_BODY_MAX 4096
/* A request body's buffer kept with the spare request up to this size (a
 * query's JSON; the first append allocates 64 and doubles). */
#define SPARE_REQ_BODY_MAX 4096

static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static bool spare_ok;
/* The key (for the free at thread exit) is set once; this thread's copy of
 * the pointer saves pthread_once and pthread_getspecific on each of the four
 * calls a request makes. The free (on this thread, at its exit) clears it. */
static _Thread_local struct spares *mine;

static void spares_free(void *p)
{
    struct spares *sp = p;
    if (sp == mine)
        mine = NULL;
    if (sp->req) {
        arena_release(&sp->req->arena);
        sb_release(&sp->req->body);
        free(sp->req);
    }
    if (sp->resp) {
        sb_release(&sp->resp->head);
        free(sp->resp);
    }
    free(sp->body);
    free(sp);
}

static void spare_init(void)
{
    spare_ok = pthread_key_create(&spare_key, spares_free) == 0;
}

/* This thread's spares (made on first use); NULL when off or out of memory. */
static struct spares *spares(void)
{
    if (!SPARES)
        return NULL;
    if (mine)
        return mine;
    pthread_once(&spare_once, spare_init);
    if (!spare_ok)
        return NULL;
    struct spares *sp = pthread_getspecific(spare_key);
    if (!sp && (sp = calloc(1, sizeof *sp)) && pthread_setspecific(spare_key, sp) != 0) {
        free(sp);
        sp = NULL;
    }
    mine = sp;
    return sp;
}

struct http_response *http_spare_response(void)
{
    struct spares *sp = spares();
    struct http_response *r = sp ? sp->resp : NULL;
    if (r)
        sp->resp = NULL;
    return r;
}

bool http_keep_response(struct http_response *r)
{
    struct spares *sp = spares();
    if (!sp || sp->resp)
        return false;
    sp->resp = r;
    return true;
}

bool http_keep_body(char *buf, size_t cap)
{
    struct spares *sp = spares();
    if (!sp || sp->body || cap < SPARE_BODY_MIN || cap > SPARE_BODY_MAX)
        return false;
    sp->body = buf;
    sp->body_cap = cap;
    return true;
}

bool http_take_spare_body(struct strbuf *body)
{
    struct spares *sp = spares();
    if (!sp || !sp->body || body->buf)
        return false;
    body->buf = sp->body;
    body->cap = sp->body_cap;
    body->len = 0;
    body->buf[0] = '\0';
    sp->body = NULL;
    return true;
}

/* A zeroed request, its arena empty (with a block when it was a spare), its
 * body empty (with the spare's buffer). */
static struct http_request *request_alloc(void)
{
    struct spares *sp = spares();
    struct http_request *req = sp ? sp->req : NULL;
    if (req) {
        sp->req = NULL;
        struct arena keep = req->arena;
        struct strbuf body = req->body;
        memset(req, 0, sizeof *req);
        req->arena = keep;
        req->body = body;
        return req;
    }
    req = calloc(1, sizeof *req);
    if (req)
        arena_init(&req->arena, REQUEST_ARENA_MAX);
    return req;
}

static void request_free(struct http_request *req)
{
    struct spares *sp = spares();
    if (sp && !sp->req) {
        arena_reset(&req->arena);
        if (req->body.cap > SPARE_REQ_BODY_MAX)
            sb_release(&req->body);
        sp->req = req;
        return;
    }
    arena_release(&req->arena);
    sb_release(&req->body);
    free(req);
}

void http_request_unref(struct http_request *req)
{
    if (atomic_fetch_sub(&req->refs, 1) != 1)
        return;
    struct http_server *srv = req->srv;
    pthread_mutex_lock(&srv->mu);
    if (req->prev)
        req->prev->next = req->next;
    else if (srv->active == req)
        srv->active = req->next;
    if (req->next)
        req->next->prev = req->prev;
    pthread_mutex_unlock(&srv->mu);
    if (req->on_release)
        req->on_release(req->user);
    http_response_free(req->response);
    if (req->stream)
        http_stream_unref(req->stream);
    pthread_mutex_destroy(&req->reply_mu);
    request_free(req); /* (and its body) */
}

void *http_app(const struct http_request *req) { return req->srv->opts.app; }
struct http_server *http_req_server(const struct http_request *req) { return req->srv; }
enum http_method http_req_method(const struct http_request *req) { return req->method; }
const char *http_req_path(const struct http_request *req) { return req->path; }
const char *http_req_route(const struct http_request *req)
{
    return req->route ? req->route->pattern : "unmatched";
}
const char *http_req_param(const struct http_request *req, size_t i)
{
    return i < HTTP_MAX_PARAMS ? req->params[i] : NULL;
}
struct arena *http_req_arena(struct http_request *req) { return &req->arena; }
const char *http_req_id(const struct http_request *req) { return req->id; }
int64_t http_req_queue_us(const struct http_request *req) { return req->queue_us; }

bool http_request_id_ok(const char *id)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++, n++) {
        if (n >= VT_MAX_REQUEST_ID_BYTES)
            return false;
        unsigned char c = *p;
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c && strchr("._:@+=/-", c))))
            return false;
    }
    return n > 0;
}

/* Our request ids: "<12 hex digits, random per process>-<counter in hex>":
 * unique across restarts and replicas for any practical purpose, and cheap
 * (no formatting call on the hot path). */
static char process_tag[13];
static pthread_once_t process_tag_once = PTHREAD_ONCE_INIT;

static void make_process_tag(void)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char rnd[6] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        uint64_t t = (uint64_t)time_mono_us() ^ ((uint64_t)getpid() << 32);
        memcpy(rnd, &t, sizeof rnd);
    }
    for (int i = 0; i < 6; i++) {
        process_tag[2 * i] = hex[rnd[i] >> 4];
        process_tag[2 * i + 1] = hex[rnd[i] & 15];
    }
}

static void new_request_id(char out[VT_MAX_REQUEST_ID_BYTES + 1], uint64_t counter)
{
    pthread_once(&process_tag_once, make_process_tag);
    static const char hex[] = "0123456789abcdef";
    memcpy(out, process_tag, 12);
    out[12] = '-';
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = hex[counter & 15];
        counter >>= 4;
    } while (counter);
    for (int i = 0; i < n; i++)
        out[13 + i] = tmp[n - 1 - i];
    out[13 + n] = '\0';
}

void http_server_new_request_id(struct http_server *srv, char out[VT_MAX_REQUEST_ID_BYTES + 1])
{
    new_request_id(out, atomic_fetch_add(&srv->next_id, 1) + 1);
}

int64_t http_req_deadline(const struct http_request *req) { return req->deadline_ms; }
void http_req_set_user(struct http_request *req, void *user) { req->user = user; }
void *http_req_user(const struct http_request *req) { return req->user; }
void http_req_on_release(struct http_request *req, void (*fn)(void *user)) { req->on_release = fn; }

const char *http_req_header(const struct http_request *req, const char *name)
{
    size_t len;
    return http_req_header_n(req, name, &len);
}

const char *http_req_header_n(const struct http_request *req, const char *name, size_t *out_len)
{
    *out_len = 0;
    if (!req->started)
        return NULL;
    /* A field sent on several lines means the lines joined with ", " (RFC 9110
     * §5.3): "Accept-Encoding: gzip" + "Accept-Encoding: br" is "gzip, br".
     * Almost every request has one line per field, so only a repeat costs a
     * copy (in the request's arena). For a field that allows one value
     * (Authorization, Origin, Content-Type) the joined text no longer parses,
     * which refuses the ambiguity instead of silently taking the first. */
    const struct http_head *h = &req->head;
    size_t first = h->n_fields, total = 0, count = 0;
    size_t name_len = strlen(name); /* (lengths compared first: most differ) */
    for (size_t i = 0; i < h->n_fields; i++) {
        if (h->fields[i].name_len != name_len || !http_name_eq(h->fields[i].name, name))
            continue;
        if (!count)
            first = i;
        total += h->fields[i].value_len + 2;
        count++;
    }
    if (count <= 1) {
        if (!count)
            return NULL;
        *out_len = h->fields[first].value_len;
        return h->fields[first].value;
    }
    char *out = arena_alloc((struct arena *)&req->arena, total);
    if (!out) {
        *out_len = h->fields[first].value_len;
        return h->fields[first].value;
    }
    size_t n = 0;
    for (size_t i = first; i < h->n_fields; i++) {
        if (h->fields[i].name_len != name_len || !http_name_eq(h->fields[i].name, name))
            continue;
        if (n) {
            out[n++] = ',';
            out[n++] = ' ';
        }
        memcpy(out + n, h->fields[i].value, h->fields[i].value_len);
        n += h->fields[i].value_len;
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

/* The decoded value of a query argument, in the request's arena. */
static const char *query_arg(const struct http_request *req, const char *key, size_t *out_len)
{
    if (!req->target)
        return NULL;
    size_t cap = req->target_len + 1;
    char *out = arena_alloc((struct arena *)&req->arena, cap);
    size_t n = 0;
    if (!out || !http_query_arg(req->target, key, out, cap, &n))
        return NULL;
    if (out_len)
        *out_len = n;
    return out;
}

const char *http_req_query(const struct http_request *req, const char *key)
{
    return query_arg(req, key, NULL);
}

const char *http_req_query_n(const struct http_request *req, const char *key, size_t *out_len)
{
    *out_len = 0;
    return query_arg(req, key, out_len);
}

const char *http_req_body(const struct http_request *req, size_t *out_len)
{
    if (out_len)
        *out_len = req->body.len;
    return req->body.buf ? req->body.buf : "";
}

bool http_req_origin_ok(const struct http_request *req, const struct strvec *extra)
{
    return http_hosts_origin_ok(&req->srv->hosts, http_req_header(req, "Origin"),
                                http_req_header(req, "Host"), extra);
}

bool http_req_is_json(const struct http_request *req)
{
    const char *ct = http_req_header(req, "Content-Type");
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    static const char want[] = "application/json";
    if (strncasecmp(ct, want, sizeof want - 1) != 0)
        return false;
    char next = ct[sizeof want - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* ---------------------------------------------------------------- jobs */

static void job_run(struct eng_job *job, duckdb_connection con)
{
    (void)con; /* the job's code below takes it from the engine when it must */
    struct http_request *req = (struct http_request *)((char *)job - offsetof(struct http_request, job));
    req->queue_us = time_mono_us() - req->defer_us;
    if (atomic_load(&job->timed_out) || atomic_load(&job->cancelled))
        return;
    log_set_request_id(req->id);
    req->job_fn(req);
    log_set_request_id(NULL);
}

/* The job of `job` is stuck in DuckDB past its deadline (engine.h,
 * eng_job.overrun; its worker was replaced): answer now so the client gets
 * its timeout on time. The answer is made from what the request holds for
 * it alone (http_reply_timeout, never its header list or arena, which the
 * job may be writing); the job's own reply, when it comes, goes nowhere
 * (detached). A stream already started is not answered twice. The job holds
 * its reference to req until done(). */
static void job_overrun(struct eng_job *job)
{
    struct http_request *req = (struct http_request *)((char *)job - offsetof(struct http_request, job));
    if (http_reply_timeout(req, false))
        http_conn_wake(req);
}

static void job_done(struct eng_job *job)
{
    struct http_request *req = (struct http_request *)((char *)job - offsetof(struct http_request, job));
    /* An overrun answered it already (job_overrun, maybe racing this end):
     * the job's reply goes nowhere. */
    pthread_mutex_lock(&req->reply_mu);
    bool answered = req->detached;
    int status = req->response ? req->response->status : 0;
    pthread_mutex_unlock(&req->reply_mu);
    if (!req->stream && !answered) {
        /* Past the deadline: the handler's answer stands when it gave one
         * that is not an error (it finished) or its own timeout answer;
         * otherwise (it never ran, or DuckDB's interrupt surfaced as some
         * other failure) the timeout answer. */
        if (atomic_load(&req->shutdown_cancelled) && (!status || status >= 400)) {
            http_add_header(req, "Connection", "close");
            http_reply_error(req, VT_ERR_SHUTTING_DOWN, NULL);
        } else if (atomic_load(&job->timed_out) &&
                   (!status || (status >= 400 && req->err_code != VT_ERR_TIMEOUT)))
            http_reply_timeout(req, true);
        else if (!status)
            http_reply_error(req, VT_ERR_INTERNAL, "the handler produced no reply");
        /* Shutdown may have answered and woken it already. */
        pthread_mutex_lock(&req->reply_mu);
        bool resume = !req->detached;
        if (resume)
            req->suspended = false;
        pthread_mutex_unlock(&req->reply_mu);
        if (resume)
            http_conn_wake(req);
    }
    pthread_mutex_lock(&req->srv->mu);
    req->job_outstanding = false;
    pthread_mutex_unlock(&req->srv->mu);
    http_request_unref(req);
}

void http_defer(struct http_request *req, struct eng_pool *pool, http_job_fn fn)
{
    http_defer_as(req, pool, fn, ENG_JOB_SHORT);
}

void http_defer_as(struct http_request *req, struct eng_pool *pool, http_job_fn fn,
                   enum eng_job_class cls)
{
    http_defer_flow(req, pool, fn, cls, 0);
}

void http_defer_flow(struct http_request *req, struct eng_pool *pool, http_job_fn fn,
                     enum eng_job_class cls, uint64_t flow)
{
    memset(&req->job, 0, sizeof req->job);
    req->job.cls = cls;
    req->job.flow = flow;
    req->job.run = job_run;
    req->job.done = job_done;
    req->job.overrun = job_overrun;
    atomic_store(&req->job.deadline_ms, req->deadline_ms);
    req->job_fn = fn;
    req->job_pool = pool;
    req->defer_us = time_mono_us();
    pthread_mutex_lock(&req->reply_mu);
    req->suspended = true;
    pthread_mutex_unlock(&req->reply_mu);
    pthread_mutex_lock(&req->srv->mu);
    req->job_outstanding = true;
    pthread_mutex_unlock(&req->srv->mu);
    atomic_fetch_add(&req->refs, 1);
    if (!eng_pool_submit(pool, &req->job)) {
        /* Answered here, on the connection's loop: it takes the reply when
         * the handler returns. */
        pthread_mutex_lock(&req->srv->mu);
        req->job_outstanding = false;
        pthread_mutex_unlock(&req->srv->mu);
        atomic_fetch_sub(&req->refs, 1);
        pthread_mutex_lock(&req->reply_mu);
        req->suspended = false;
        pthread_mutex_unlock(&req->reply_mu);
        http_reply_error(req, VT_ERR_UNAVAILABLE, "server is overloaded; retry later");
    }
}

void http_set_timeout_body(struct http_request *req, int status, const char *json)
{
    req->timeout_body = json ? arena_strdup(&req->arena, json) : NULL;
    req->timeout_status = status;
}

const struct eng_job *http_req_job(const struct http_request *req)
{
    return req->job.run ? &req->job : NULL;
}

bool http_job_should_stop(struct http_request *req)
{
    if (atomic_load(&req->job.timed_out) || atomic_load(&req->job.cancelled) ||
        atomic_load(&req->client_gone))
        return true;
    if (req->stream) {
        pthread_mutex_lock(&req->stream->mu);
        bool gone = req->stream->gone;
        pthread_mutex_unlock(&req->stream->mu);
        return gone;
    }
    return false;
}

/* ------------------------------------------------------------ request life */

static void dispatch(struct http_request *req);

struct http_request *http_request_new(struct http_server *srv, struct http_conn *c, int fd)
{
    struct http_request *req = request_alloc();
    if (!req)
        return NULL;
    req->srv = srv;
    req->conn = c;
    req->fd = fd;
    atomic_init(&req->refs, 1);
    pthread_mutex_init(&req->reply_mu, NULL);
    http_server_new_request_id(srv, req->id);
    req->start_us = time_mono_us();
    int64_t timeout = srv->cfg->server.request_timeout_ms;
    req->deadline_ms = timeout > 0 ? req->start_us / 1000 + timeout : 0;
    req->method = HTTP_OTHER;
    /* Empty, bounded; a spare request's buffer (request_alloc) is kept. */
    char *keep = req->body.buf;
    size_t keep_cap = req->body.cap;
    sb_init(&req->body, (size_t)srv->cfg->server.max_body_bytes);
    if (keep) {
        req->body.buf = keep;
        req->body.cap = keep_cap;
        keep[0] = '\0';
    }
    pthread_mutex_lock(&srv->mu);
    req->next = srv->active;
    if (srv->active)
        srv->active->prev = req;
    srv->active = req;
    pthread_mutex_unlock(&srv->mu);
    atomic_fetch_add(&srv->in_flight, 1);
    return req;
}

enum vt_err http_request_accept_head(struct http_request *req, const char **out_msg)
{
    struct http_head *h = &req->head;
    req->started = true;
    req->method = parse_method(h->method);
    req->method_str = (char *)h->method;
    req->minor = h->minor;
    req->keep_alive = h->keep_alive;
    const char *rid = http_head_field(h, "X-Request-Id");
    if (rid && http_request_id_ok(rid))
        memcpy(req->id, rid, strlen(rid) + 1);
    if (h->target_len > VT_MAX_URL_BYTES) {
        *out_msg = "request target longer than VT_MAX_URL_BYTES (8192)";
        return VT_ERR_URI_TOO_LONG;
    }
    if (h->target[0] != '/') {
        *out_msg = "the request target must be an absolute path";
        return VT_ERR_MALFORMED_REQUEST;
    }
    enum vt_err rc = http_path_parse(&req->arena, h->target, &req->segs, out_msg);
    if (rc != VT_ERR_OK)
        return rc;
    req->target = (char *)h->target;
    req->target_len = h->target_len;
    if (!http_hosts_host_ok(&req->srv->hosts, h->host)) {
        /* DNS rebinding: no route answers a name we are not known by. */
        *out_msg = NULL;
        return VT_ERR_HOST_NOT_ALLOWED;
    }
    if (h->has_length && h->content_length > (uint64_t)req->srv->cfg->server.max_body_bytes) {
        /* Refused before reading any of the body. */
        *out_msg = NULL;
        return VT_ERR_BODY_TOO_LARGE;
    }
    return VT_ERR_OK;
}

void http_request_dispatch(struct http_request *req)
{
    if (atomic_load(&req->srv->stopping)) {
        http_add_header(req, "Connection", "close");
        http_reply_error(req, VT_ERR_SHUTTING_DOWN, NULL);
        return;
    }
    dispatch(req);
}

struct http_response *http_request_take_response(struct http_request *req)
{
    pthread_mutex_lock(&req->reply_mu);
    struct http_response *r = req->suspended ? NULL : req->response;
    if (r) {
        req->response = NULL;
        req->status = r->status;
    }
    pthread_mutex_unlock(&req->reply_mu);
    return r;
}

void http_request_client_gone(struct http_request *req)
{
    atomic_store(&req->client_gone, true);
    pthread_mutex_lock(&req->srv->mu);
    if (req->job_outstanding) {
        atomic_store(&req->job.cancelled, true);
        if (req->job_pool)
            eng_pool_interrupt(req->job_pool, &req->job);
    }
    pthread_mutex_unlock(&req->srv->mu);
    if (req->stream)
        http_stream_abort(req->stream, false);
}

void http_request_complete(struct http_request *req, const char *outcome)
{
    struct http_server *srv = req->srv;
    /* Replies from now on go nowhere (a job still running, a stream). */
    pthread_mutex_lock(&req->reply_mu);
    req->conn = NULL;
    pthread_mutex_unlock(&req->reply_mu);
    if (outcome)
        http_request_client_gone(req);
    atomic_fetch_sub(&srv->in_flight, 1);
    int status = req->status;
    if (!status && outcome)
        status = 0; /* closed before an answer */
    int64_t now_us = time_mono_us();
    uint64_t dur_us = now_us > req->start_us ? (uint64_t)(now_us - req->start_us) : 0;
    metrics_http_observe(req->route ? (unsigned)(req->route - srv->rows) : METRICS_MAX_ROUTES,
                         req->started ? (unsigned)req->method : 0, status, req->bytes_out,
                         dur_us, status >= 400 ? req->err_code : VT_ERR_OK);
    struct log_access_rec rec = {req->method_str ? req->method_str : "?", http_req_route(req),
                                 status, req->bytes_out, (int64_t)dur_us, req->id, outcome};
    log_access(&rec);
    http_request_unref(req);
}

/* ------------------------------------------------------------- dispatch */

static void add_allow(struct strbuf *allow, unsigned methods)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{HTTP_GET, "GET"}, {HTTP_HEAD, "HEAD"}, {HTTP_POST, "POST"},
                 {HTTP_PUT, "PUT"}, {HTTP_DELETE, "DELETE"}, {HTTP_PATCH, "PATCH"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(methods & names[i].bit))
            continue;
        if (allow->len)
            sb_adds(allow, ", ");
        sb_adds(allow, names[i].name);
    }
}

/* CORS (cors.h): the headers of an allowed origin, and the answer to its
 * preflight. True when the request was answered here. */
static bool cors(struct http_request *req)
{
    const struct strvec *allowed = &req->srv->cfg->server.cors_origins;
    const char *origin = allowed->len ? http_req_header(req, "Origin") : NULL;
    if (!origin)
        return false;
    http_add_header(req, "Vary", "Origin");
    req->cors_vary = true;
    if (!http_cors_allowed(allowed, origin))
        return false;
    http_add_header(req, "Access-Control-Allow-Origin", origin);
    req->cors_origin = origin;
    if (req->method != HTTP_OPTIONS || !http_req_header(req, "Access-Control-Request-Method")) {
        http_add_header(req, "Access-Control-Expose-Headers", HTTP_CORS_EXPOSE_HEADERS);
        return false;
    }
    /* A preflight: the methods of the routes at this path (a route the
     * authorize hook hides, as it would without credentials, is not there). */
    unsigned methods = 0;
    size_t pos = 0;
    const char *params[HTTP_MAX_PARAMS];
    const struct http_route *r;
    while ((r = http_router_next(req->srv->router, &req->segs, &pos, &req->arena, params))) {
        if (r->perm != AUTH_PERM_PUBLIC && req->srv->opts.authorize) {
            const char *msg = NULL;
            req->route = r;
            memcpy(req->params, params, sizeof params);
            enum vt_err rc = req->srv->opts.authorize(req, r, &msg);
            req->route = NULL;
            memset(req->params, 0, sizeof req->params);
            if (rc == VT_ERR_NOT_FOUND)
                continue;
        }
        methods |= r->methods & HTTP_GET ? r->methods | HTTP_HEAD : r->methods;
    }
    if (!methods)
        return false; /* no such route: 404 as usual */
    struct strbuf allow;
    sb_init(&allow, 256);
    add_allow(&allow, methods);
    http_add_header(req, "Access-Control-Allow-Methods", allow.buf ? allow.buf : "");
    sb_release(&allow);
    http_add_header(req, "Access-Control-Allow-Headers", HTTP_CORS_ALLOW_HEADERS);
    http_add_header(req, "Access-Control-Max-Age", HTTP_CORS_MAX_AGE);
    struct strbuf empty;
    sb_init(&empty, 0);
    http_reply_buffer(req, 204, "text/plain", &empty, false);
    return true;
}

static void dispatch(struct http_request *req)
{
    struct http_server *srv = req->srv;
    const struct http_path path = req->segs;
    if (cors(req))
        return;
    const char *prefix = srv->cfg->server.prefix ? srv->cfg->server.prefix : "";
    size_t plen = strlen(prefix);
    size_t tlen = strcspn(req->target, "?");
    unsigned allowed = 0;
    size_t pos = 0;
    const char *params[HTTP_MAX_PARAMS];
    const struct http_route *r;
    while ((r = http_router_next(srv->router, &path, &pos, &req->arena, params)) != NULL) {
        unsigned methods = r->methods;
        if (methods & HTTP_GET)
            methods |= HTTP_HEAD;
        bool method_ok = (methods & req->method) != 0;
        enum vt_err arc = VT_ERR_OK;
        const char *amsg = NULL;
        if (r->perm != AUTH_PERM_PUBLIC && srv->opts.authorize) {
            req->route = r;
            memcpy(req->params, params, sizeof params);
            arc = srv->opts.authorize(req, r, &amsg);
            if (arc == VT_ERR_NOT_FOUND) {
                /* Hidden: as if the row did not exist. */
                req->route = NULL;
                memset(req->params, 0, sizeof req->params);
                continue;
            }
        }
        if (!method_ok) {
            allowed |= methods;
            req->route = NULL;
            memset(req->params, 0, sizeof req->params);
            continue;
        }
        req->route = r;
        memcpy(req->params, params, sizeof params);
        const char *p = req->target;
        size_t n = tlen;
        if (!(r->flags & HTTP_ROUTE_ROOT) && plen && n >= plen && !strncmp(p, prefix, plen)) {
            p += plen;
            n -= plen;
        }
        req->path = n ? arena_strndup(&req->arena, p, n) : "/";
        if (arc != VT_ERR_OK) {
            http_reply_error(req, arc, amsg);
            return;
        }
        log_set_request_id(req->id);
        r->handler(req);
        log_set_request_id(NULL);
        return;
    }
    if (allowed) {
        struct strbuf allow;
        sb_init(&allow, 256);
        add_allow(&allow, allowed);
        http_add_header(req, "Allow", allow.buf ? allow.buf : "");
        sb_release(&allow);
        http_reply_error(req, VT_ERR_METHOD_NOT_ALLOWED, "method not allowed for this route");
        return;
    }
    http_reply_error(req, VT_ERR_NOT_FOUND, "no such route");
}

/* A request answered before dispatch (413): the route it was for, for the
 * access line and the metrics only (no handler runs, no authorization: a
 * route the authorize hook would hide is still counted under its pattern,
 * which the OpenAPI document lists anyway). */
void http_request_label_route(struct http_request *req)
{
    if (req->route || !req->target || !req->started)
        return;
    size_t pos = 0;
    const char *params[HTTP_MAX_PARAMS];
    const struct http_route *r;
    while ((r = http_router_next(req->srv->router, &req->segs, &pos, &req->arena, params))) {
        unsigned methods = r->methods & HTTP_GET ? r->methods | HTTP_HEAD : r->methods;
        if (methods & req->method) {
            req->route = r;
            return;
        }
    }
}

/* ----------------------------------------------------------- lifecycle */

static int open_listener(const struct vt_config *cfg, int *out_port, bool *out_loopback,
                         struct vt_error *err)
{
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->server.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(cfg->server.listen, port, &hints, &ai);
    if (gai != 0 || !ai) {
        vt_error_set(err, VT_ERR_INVALID_CONFIG, "server.listen %s: %s", cfg->server.listen,
                     gai_strerror(gai));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    /* SO_REUSEADDR allows a quick restart on a port with connections in
     * TIME_WAIT. Never SO_REUSEPORT: it let a second vitrine bind the same
     * port and silently take a share of its connections. */
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        vt_error_set(err, VT_ERR_INTERNAL, "cannot listen on %s:%d (%s)", cfg->server.listen,
                     cfg->server.port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    *out_port = cfg->server.port;
    *out_loopback = false;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&ss;
            *out_port = ntohs(a6->sin6_port);
            *out_loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr) ||
                            (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr) &&
                             a6->sin6_addr.s6_addr[12] == 127);
        } else {
            const struct sockaddr_in *a4 = (const struct sockaddr_in *)&ss;
            *out_port = ntohs(a4->sin_port);
            *out_loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
        }
    }
    return fd;
}

static void server_free(struct http_server *srv)
{
    http_conns_stop(srv);
    if (srv->wake_pipe[0] >= 0) {
        close(srv->wake_pipe[0]);
        close(srv->wake_pipe[1]);
    }
    http_router_destroy(srv->router);
    pthread_mutex_destroy(&srv->mu);
    pthread_mutex_destroy(&srv->clients_mu);
    free(srv);
}

struct http_server *http_server_start(const struct http_server_options *opts,
                                      struct vt_error *err)
{
    const struct vt_config *cfg = opts->cfg;
    struct http_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    srv->opts = *opts;
    srv->cfg = cfg;
    srv->listen_fd = -1;
    srv->wake_pipe[0] = srv->wake_pipe[1] = -1;
    pthread_mutex_init(&srv->mu, NULL);
    pthread_mutex_init(&srv->clients_mu, NULL);
    srv->router = http_router_create(opts->routes, opts->n_routes, opts->root_routes,
                                     opts->n_root_routes, cfg->server.prefix, err);
    if (srv->router) {
        srv->n_rows = http_router_rows(srv->router, &srv->rows);
        const char *patterns[METRICS_MAX_ROUTES];
        size_t n = srv->n_rows < METRICS_MAX_ROUTES ? srv->n_rows : METRICS_MAX_ROUTES;
        if (srv->n_rows > METRICS_MAX_ROUTES)
            log_warn("%zu routes: those past %d count as unmatched in the metrics", srv->n_rows,
                     METRICS_MAX_ROUTES);
        for (size_t i = 0; i < n; i++)
            patterns[i] = srv->rows[i].pattern;
        metrics_http_routes(patterns, n);
    }
    if (!srv->router || pipe2(srv->wake_pipe, O_CLOEXEC) != 0) {
        if (srv->router)
            vt_error_set(err, VT_ERR_INTERNAL, "pipe: %s", strerror(errno));
        server_free(srv);
        return NULL;
    }
    bool loopback = false;
    srv->listen_fd = open_listener(cfg, &srv->port, &loopback, err);
    srv->hosts = (struct http_hosts){.allowed_hosts = &cfg->server.allowed_hosts,
                                     .allowed_origins = &cfg->server.allowed_origins,
                                     .loopback_listener = loopback};
    if (srv->listen_fd < 0 || !http_conns_start(srv, err)) {
        server_free(srv);
        return NULL;
    }
    return srv;
}

int http_server_port(const struct http_server *srv)
{
    return srv->port;
}

size_t http_server_routes(const struct http_server *srv, const struct http_route **out_routes)
{
    return http_router_rows(srv->router, out_routes);
}

int http_server_in_flight(struct http_server *srv)
{
    return atomic_load(&srv->in_flight);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool wait_in_flight(struct http_server *srv, int64_t until)
{
    while (http_server_in_flight(srv) > 0) {
        if (time_mono_ms() >= until)
            return false;
        sleep_ms(10);
    }
    return true;
}

/* After the drain: cancel every job, answer every request still waiting
 * (503 for one whose job has not replied, a truncated end for a stream) and
 * wakes its connection. A request whose job is outstanding is answered by that job's completion (job_done,
 * on its worker, once the interrupted job returns): its handler may be
 * writing the request's headers and arena right now, so this thread must not
 * (doing so crashed the server under load). */
static void take_over_remaining(struct http_server *srv, struct eng_pool *pool)
{
    pthread_mutex_lock(&srv->mu);
    for (struct http_request *r = srv->active; r; r = r->next) {
        bool outstanding = r->job_outstanding;
        if (outstanding) {
            atomic_store(&r->shutdown_cancelled, true);
            atomic_store(&r->job.cancelled, true);
            if (r->job_pool)
                eng_pool_interrupt(r->job_pool, &r->job);
        }
        if (r->stream) {
            /* Its producer may still push: it gets -1 now; the connection
             * sees it ended (truncated) and closes. */
            http_stream_abort(r->stream, true);
            http_conn_wake(r);
            continue;
        }
        if (!r->suspended || outstanding)
            continue;
        http_add_header(r, "Connection", "close");
        http_reply_error(r, VT_ERR_SHUTTING_DOWN, NULL);
        pthread_mutex_lock(&r->reply_mu);
        bool resume = r->suspended && !r->detached;
        if (resume) {
            r->detached = true;
            r->suspended = false;
        }
        pthread_mutex_unlock(&r->reply_mu);
        if (resume)
            http_conn_wake(r);
    }
    pthread_mutex_unlock(&srv->mu);
    if (pool)
        eng_pool_interrupt_all(pool);
}

bool http_server_stop(struct http_server *srv, int64_t grace_ms, struct eng_pool *pool_to_interrupt)
{
    if (!srv)
        return true;
    atomic_store(&srv->stopping, true);
    /* Stop accepting: the listening socket closes, so new connections are
     * refused at once. The loops keep running through the drain (clients
     * that leave still cancel their jobs). */
    http_conns_stop_accepting(srv);
    if (!wait_in_flight(srv, time_mono_ms() + grace_ms)) {
        log_warn("shutdown: %d requests still running after %lld ms; cancelling them",
                 http_server_in_flight(srv), (long long)grace_ms);
        take_over_remaining(srv, pool_to_interrupt);
        /* The woken connections send their answer (or the end of their
         * stream) and close; stopping the loops closes those still writing. */
        wait_in_flight(srv, time_mono_ms() + 1000);
    }
    http_conns_stop(srv);
    /* Every connection is closed now, but a job can outlive its connection (a
     * stream producer still cleaning up after its client read the end or hung
     * up): its last reference locks srv->mu. Wait for those (they were told
     * to stop) before freeing the server; if one hangs, keep the server (it
     * is still referenced) rather than free it under the job. */
    int64_t jobs_until = time_mono_ms() + (int64_t)VT_SHUTDOWN_JOIN_SECS * 1000;
    for (;;) {
        pthread_mutex_lock(&srv->mu);
        bool idle = srv->active == NULL;
        pthread_mutex_unlock(&srv->mu);
        if (idle)
            break;
        if (time_mono_ms() >= jobs_until) {
            log_warn("shutdown: request jobs still running after the server stopped");
            return false;
        }
        sleep_ms(1);
    }
    server_free(srv);
    return true;
}
