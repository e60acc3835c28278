/*
 * The libmicrohttpd adapter (see server.h for the model).
 *
 * Request life:
 *   1st access-handler call  headers only: allocate struct http_request,
 *                            answer 413 at once when Content-Length is too big
 *   body calls               append to the bounded body buffer (a chunked body
 *                            that grows too big gets 413 as soon as MHD lets us)
 *   final call               route and run the handler; queue its reply, or
 *                            keep the connection suspended while a job runs
 *   resumed call             queue the reply the job produced
 *   completion callback      access log line, release
 *
 * Traps measured on libmicrohttpd 0.9.75 and handled here: replying on the
 * first call makes MHD close the connection (only the early 413 does that);
 * MHD_stop_daemon with a suspended connection aborts the process, so every
 * suspended connection is resumed before stopping; a suspended connection does
 * not notice a client disconnect, so streams check for it when they resume.
 */
#include "http/server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/compress.h"
#include "http/encoding.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

#define STREAM_CHUNK_BYTES (64 * 1024)   /* producer hands over chunks this big */
#define STREAM_BLOCK_BYTES (32 * 1024)   /* what MHD asks the reader for at once */
#define CONNECTION_MEMORY_BYTES (VT_MAX_HEADER_BYTES + 16 * 1024)
#define REQUEST_ARENA_MAX (8 * 1024 * 1024)

struct http_header {
    char *name;
    char *value;
    struct http_header *next;
};

struct stream_chunk {
    char *data;
    size_t len;
    size_t off;
};

struct http_stream {
    struct http_request *req;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct stream_chunk q[VT_STREAM_QUEUE_BATCHES];
    size_t qhead, qlen;
    struct strbuf pending;      /* producer side, handed over at STREAM_CHUNK_BYTES */
    bool done;                  /* producer finished */
    bool failed;                /* producer failed: truncate the response */
    bool gone;                  /* MHD released the response (client gone or finished) */
    bool mhd_waiting;           /* the connection is suspended waiting for data */
    atomic_int refs;            /* producer + MHD response + the request */
    struct compress *comp;
    uint64_t bytes;             /* bytes handed to MHD */
};

struct http_request {
    struct http_server *srv;
    struct MHD_Connection *conn;
    atomic_int refs;
    uint64_t id;
    int64_t start_ms;
    int64_t deadline_ms;
    enum http_method method;
    char *method_str;
    char *path;
    const struct http_route *route;
    char *params[HTTP_MAX_PARAMS];
    struct strbuf body;
    bool body_too_large;
    struct arena arena;
    struct http_header *headers;
    /* the reply */
    struct MHD_Response *response;
    int status;
    uint64_t bytes_out;
    const char *encoding;       /* Content-Encoding chosen, NULL = identity */
    bool suspended;
    bool job_outstanding;
    struct eng_job job;
    http_job_fn job_fn;
    struct eng_pool *job_pool;
    struct http_stream *stream;
    void *user;
    void (*on_release)(void *user); /* the handler's cleanup, at the very end */
    int fd;                     /* the connection's socket (the watcher polls it) */
    atomic_bool abandoned;      /* shutdown gave up on its job: no MHD calls and no
                                 * replies from the job any more */
    /* active-request list (for shutdown) */
    struct http_request *prev, *next;
};

/* One client connection (MHD's socket context), listed for the watcher:
 * since when it has been waiting for a complete request header block. */
struct http_conn {
    int fd;
    int64_t waiting_since_ms;   /* 0 while a request is being handled */
    bool closing;               /* the watcher shut it down */
    struct http_conn *prev, *next;
};

/* A route with what the router precomputes about its pattern. */
struct route_slot {
    const struct http_route *route;
    int segments;               /* path segments of the pattern */
    bool wild;                  /* ends in {*}: matches `segments` or more */
};

struct route_table {
    struct route_slot *slots;   /* by specificity: see sort_routes */
    size_t n;
};

struct http_server {
    struct http_server_options opts;
    struct route_table routes, root_routes;
    const struct vt_config *cfg;
    struct MHD_Daemon *daemon;
    int port;
    atomic_uint_fast64_t next_id;
    pthread_mutex_t mu;         /* active list */
    struct http_request *active;
    int in_flight;
    bool stopping;
    pthread_t watcher;          /* notices clients that left suspended requests */
    pthread_t stopper;          /* the thread in http_server_stop */
    struct http_conn *conns;    /* every open connection (guarded by mu) */
    int n_conns;
    bool watcher_started;
    atomic_bool watcher_stop;
};

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

static void stream_unref(struct http_stream *st);

static void request_unref(struct http_request *req)
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
    if (req->response)
        MHD_destroy_response(req->response);
    if (req->stream)
        stream_unref(req->stream);
    sb_release(&req->body);
    arena_release(&req->arena);
    free(req);
}

void *http_app(const struct http_request *req) { return req->srv->opts.app; }
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
uint64_t http_req_id(const struct http_request *req) { return req->id; }
int64_t http_req_deadline(const struct http_request *req) { return req->deadline_ms; }
void http_req_set_user(struct http_request *req, void *user) { req->user = user; }
void http_req_on_release(struct http_request *req, void (*fn)(void *user)) { req->on_release = fn; }
void *http_req_user(const struct http_request *req) { return req->user; }

const char *http_req_header(const struct http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *http_req_query(const struct http_request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_req_body(const struct http_request *req, size_t *out_len)
{
    if (out_len)
        *out_len = req->body.len;
    return req->body.buf ? req->body.buf : "";
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

void http_add_header(struct http_request *req, const char *name, const char *value)
{
    struct http_header *h = arena_alloc(&req->arena, sizeof *h);
    if (!h)
        return;
    h->name = arena_strdup(&req->arena, name);
    h->value = arena_strdup(&req->arena, value);
    if (!h->name || !h->value)
        return;
    h->next = req->headers;
    req->headers = h;
}

static void apply_headers(struct http_request *req, struct MHD_Response *resp)
{
    char id[24];
    snprintf(id, sizeof id, "%llx", (unsigned long long)req->id);
    MHD_add_response_header(resp, "X-Request-Id", id);
    for (struct http_header *h = req->headers; h; h = h->next)
        MHD_add_response_header(resp, h->name, h->value);
}

/* Installs `resp` as the reply (replacing an earlier one, for the 504 case). */
static void set_response(struct http_request *req, int status, struct MHD_Response *resp,
                         uint64_t bytes)
{
    if (atomic_load(&req->abandoned) && !pthread_equal(pthread_self(), req->srv->stopper)) {
        /* A job answering after shutdown gave up on it: the 503 stands. */
        MHD_destroy_response(resp);
        return;
    }
    if (req->response)
        MHD_destroy_response(req->response);
    req->response = resp;
    req->status = status;
    req->bytes_out = bytes;
}

static void free_buffer(void *p)
{
    free(p);
}

/* ------------------------------------------------------------- replies */

void http_reply_buffer(struct http_request *req, int status, const char *content_type,
                       struct strbuf *body, bool compressible)
{
    bool compress_on = req->srv->cfg->server.compress;
    enum http_encoding enc = HTTP_ENC_IDENTITY;
    if (compressible && req->method != HTTP_HEAD)
        enc = http_encoding_choose(http_req_header(req, "Accept-Encoding"), compress_on,
                                   content_type, body->len);
    const char *encoding = http_encoding_header_value(enc);
    if (encoding) {
        struct strbuf packed;
        sb_init(&packed, 0);
        struct compress *c = compress_create(enc);
        if (c && compress_write(c, body->buf, body->len, &packed) == 0 &&
            compress_finish(c, &packed) == 0) {
            sb_release(body);
            *body = packed;
        } else {
            sb_release(&packed);
            encoding = NULL;
        }
        compress_destroy(c);
    }
    size_t len;
    char *data = sb_detach(body, &len);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(len, data, free_buffer);
    if (!resp) {
        free(data);
        return;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (compressible && http_encoding_should_vary(compress_on, content_type))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    if (encoding)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, encoding);
    apply_headers(req, resp);
    set_response(req, status, resp, len);
}

void http_reply_json(struct http_request *req, int status, struct strbuf *body)
{
    http_reply_buffer(req, status, "application/json", body, true);
}

void http_reply_error(struct http_request *req, enum vt_err code, const char *message)
{
    struct strbuf body;
    sb_init(&body, 0);
    const char *msg = message ? message : vt_err_default_message(code);
    sb_adds(&body, "{\"error\":");
    sb_add_json_string(&body, msg, strlen(msg));
    sb_adds(&body, ",\"code\":");
    const char *c = vt_err_code(code);
    sb_add_json_string(&body, c, strlen(c));
    sb_adds(&body, "}");
    if (code == VT_ERR_DATASET_NOT_READY || code == VT_ERR_UNAVAILABLE ||
        code == VT_ERR_SHUTTING_DOWN)
        http_add_header(req, "Retry-After", "2");
    http_reply_json(req, vt_err_status(code), &body);
}

void http_reply_vterr(struct http_request *req, const struct vt_error *err)
{
    http_reply_error(req, err->code, vt_error_message(err));
}

void http_reply_file(struct http_request *req, int status, const char *content_type, int fd,
                     uint64_t offset, uint64_t length)
{
    struct MHD_Response *resp = MHD_create_response_from_fd_at_offset64(length, fd, offset);
    if (!resp) {
        close(fd);
        http_reply_error(req, VT_ERR_INTERNAL, "cannot create file response");
        return;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    apply_headers(req, resp);
    set_response(req, status, resp, length);
}

/* ------------------------------------------------------------- streams */

static void stream_unref(struct http_stream *st)
{
    if (atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    for (size_t i = 0; i < st->qlen; i++)
        free(st->q[(st->qhead + i) % VT_STREAM_QUEUE_BATCHES].data);
    sb_release(&st->pending);
    compress_destroy(st->comp);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st);
}

/* MHD's content reader: runs on the epoll thread, never blocks. With nothing
 * queued it suspends the connection; the producer resumes it. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct http_stream *st = cls;
    pthread_mutex_lock(&st->mu);
    size_t copied = 0;
    while (copied < max && st->qlen > 0) {
        struct stream_chunk *c = &st->q[st->qhead];
        size_t n = c->len - c->off;
        if (n > max - copied)
            n = max - copied;
        memcpy(buf + copied, c->data + c->off, n);
        c->off += n;
        copied += n;
        if (c->off == c->len) {
            free(c->data);
            c->data = NULL;
            st->qhead = (st->qhead + 1) % VT_STREAM_QUEUE_BATCHES;
            st->qlen--;
            pthread_cond_signal(&st->cv);
        }
    }
    if (copied > 0) {
        st->bytes += copied;
        pthread_mutex_unlock(&st->mu);
        return (ssize_t)copied;
    }
    if (st->done) {
        bool failed = st->failed;
        pthread_mutex_unlock(&st->mu);
        return failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    }
    st->mhd_waiting = true;
    MHD_suspend_connection(st->req->conn);
    pthread_mutex_unlock(&st->mu);
    return 0;
}

static void stream_released(void *cls)
{
    struct http_stream *st = cls;
    pthread_mutex_lock(&st->mu);
    st->gone = true;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    stream_unref(st);
}

/* Wakes the connection if the reader suspended it (call without st->mu). */
static void stream_wake(struct http_stream *st, bool waiting)
{
    if (waiting)
        MHD_resume_connection(st->req->conn);
}

/* Queues one chunk (takes `data`); blocks while the queue is full. */
static int stream_push(struct http_stream *st, char *data, size_t len)
{
    if (len == 0) {
        free(data);
        return 0;
    }
    pthread_mutex_lock(&st->mu);
    /* A client that reads nothing for VT_STREAM_STALL_MS is treated as gone:
     * the producer (a query worker) must not wait on it for ever. */
    int64_t stall_until = time_mono_ms() + VT_STREAM_STALL_MS;
    while (st->qlen == VT_STREAM_QUEUE_BATCHES && !st->gone) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&st->cv, &st->mu, &until);
        if (st->qlen == VT_STREAM_QUEUE_BATCHES && time_mono_ms() >= stall_until) {
            log_info("request %llx: the client read nothing for %d s; ending its stream",
                     (unsigned long long)st->req->id, VT_STREAM_STALL_MS / 1000);
            st->gone = true;
        }
    }
    if (st->gone) {
        pthread_mutex_unlock(&st->mu);
        free(data);
        return -1;
    }
    struct stream_chunk *c = &st->q[(st->qhead + st->qlen) % VT_STREAM_QUEUE_BATCHES];
    c->data = data;
    c->len = len;
    c->off = 0;
    st->qlen++;
    bool waiting = st->mhd_waiting;
    st->mhd_waiting = false;
    pthread_mutex_unlock(&st->mu);
    stream_wake(st, waiting);
    return 0;
}

/* Moves the pending buffer (compressed if needed) into the queue. */
static int stream_flush(struct http_stream *st, bool final)
{
    struct strbuf out;
    if (st->comp) {
        sb_init(&out, 0);
        /* One flush per handed-over chunk so the client can decode what it got. */
        if (compress_write(st->comp, st->pending.buf, st->pending.len, &out) != 0 ||
            (final ? compress_finish(st->comp, &out) : compress_flush(st->comp, &out)) != 0) {
            sb_release(&out);
            return -1;
        }
        sb_reset(&st->pending);
    } else {
        out = st->pending;
        sb_init(&st->pending, 0);
    }
    size_t len;
    char *data = sb_detach(&out, &len);
    return stream_push(st, data, len);
}

struct http_stream *http_reply_stream(struct http_request *req, int status,
                                      const char *content_type, bool compressible)
{
    if (atomic_load(&req->abandoned))
        return NULL;
    struct http_stream *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->req = req;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    sb_init(&st->pending, 0);
    /* The request's reference keeps req->stream valid for as long as the
     * request exists: the producer and MHD may both be done with the stream
     * while the request is still listed (its job not finished), and
     * on_completed and http_server_stop read req->stream. */
    atomic_init(&st->refs, 3);
    bool compress_on = req->srv->cfg->server.compress;
    enum http_encoding enc = HTTP_ENC_IDENTITY;
    if (compressible && req->method != HTTP_HEAD)
        enc = http_encoding_choose(http_req_header(req, "Accept-Encoding"), compress_on,
                                   content_type, HTTP_BODY_LEN_UNKNOWN);
    const char *encoding = http_encoding_header_value(enc);
    if (encoding) {
        st->comp = compress_create(enc);
        if (!st->comp)
            encoding = NULL;
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, STREAM_BLOCK_BYTES, stream_reader, st, stream_released);
    if (!resp) {
        atomic_store(&st->refs, 1);
        stream_unref(st);
        return NULL;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (compressible && http_encoding_should_vary(compress_on, content_type))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    if (encoding)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, encoding);
    apply_headers(req, resp);
    set_response(req, status, resp, 0);
    req->stream = st;
    /* A started stream is not cut by the request deadline: the client is
     * receiving rows; a stalled client is handled by the connection timeout. */
    atomic_store(&req->job.deadline_ms, 0);
    pthread_mutex_lock(&req->srv->mu);
    if (!atomic_load(&req->abandoned)) {
        req->suspended = false;
        MHD_resume_connection(req->conn);
    }
    pthread_mutex_unlock(&req->srv->mu);
    return st;
}

struct strbuf *http_stream_buffer(struct http_stream *st)
{
    return &st->pending;
}

int http_stream_commit(struct http_stream *st)
{
    if (st->pending.len >= STREAM_CHUNK_BYTES)
        return stream_flush(st, false);
    return 0;
}

int http_stream_write(struct http_stream *st, const void *data, size_t n)
{
    if (sb_add(&st->pending, data, n) != 0)
        return -1;
    return http_stream_commit(st);
}

void http_stream_end(struct http_stream *st, bool ok)
{
    if (ok && stream_flush(st, true) != 0)
        ok = false;
    pthread_mutex_lock(&st->mu);
    st->done = true;
    st->failed = !ok;
    bool waiting = st->mhd_waiting;
    st->mhd_waiting = false;
    pthread_mutex_unlock(&st->mu);
    stream_wake(st, waiting);
    stream_unref(st);
}

/* ---------------------------------------------------------------- jobs */

static void job_run(struct eng_job *job, duckdb_connection con)
{
    struct http_request *req = (struct http_request *)((char *)job - offsetof(struct http_request, job));
    if (atomic_load(&job->timed_out) || atomic_load(&job->cancelled))
        return;
    req->job_fn(req, con);
}

static void job_done(struct eng_job *job)
{
    struct http_request *req = (struct http_request *)((char *)job - offsetof(struct http_request, job));
    pthread_mutex_lock(&req->srv->mu);
    bool abandoned = atomic_load(&req->abandoned);
    pthread_mutex_unlock(&req->srv->mu);
    if (!req->stream && !abandoned) {
        if (atomic_load(&job->timed_out))
            http_reply_error(req, VT_ERR_TIMEOUT, "request timed out");
        else if (atomic_load(&job->cancelled) && !req->response)
            http_reply_error(req, VT_ERR_CLIENT_GONE, NULL); /* for the access log */
        else if (!req->response)
            http_reply_error(req, VT_ERR_INTERNAL, "the handler produced no reply");
        req->suspended = false;
        MHD_resume_connection(req->conn);
    }
    req->job_outstanding = false;
    request_unref(req);
}

void http_defer(struct http_request *req, struct eng_pool *pool, http_job_fn fn)
{
    memset(&req->job, 0, sizeof req->job);
    req->job.run = job_run;
    req->job.done = job_done;
    atomic_store(&req->job.deadline_ms, req->deadline_ms);
    req->job_fn = fn;
    req->job_pool = pool;
    req->suspended = true;
    req->job_outstanding = true;
    atomic_fetch_add(&req->refs, 1);
    MHD_suspend_connection(req->conn);
    if (!eng_pool_submit(pool, &req->job)) {
        /* The reply is queued by the access-handler call that follows the
         * resume (req->suspended stays set until then). */
        req->job_outstanding = false;
        atomic_fetch_sub(&req->refs, 1);
        http_reply_error(req, VT_ERR_UNAVAILABLE, "server is overloaded; retry later");
        MHD_resume_connection(req->conn);
    }
}

const struct eng_job *http_req_job(const struct http_request *req)
{
    return req->job.run ? &req->job : NULL;
}

bool http_job_should_stop(struct http_request *req)
{
    if (atomic_load(&req->job.timed_out) || atomic_load(&req->job.cancelled))
        return true;
    if (req->stream) {
        pthread_mutex_lock(&req->stream->mu);
        bool gone = req->stream->gone;
        pthread_mutex_unlock(&req->stream->mu);
        return gone;
    }
    return false;
}

/* ------------------------------------------------------------- watcher */

/* libmicrohttpd does not watch a suspended connection's socket, so a client
 * that leaves while its request waits in a pool queue or runs a long query
 * is not noticed until the reply is written. This thread looks at the
 * sockets of suspended requests with a job every WATCH_PERIOD_MS: a peer that
 * closed (or half-closed, as nginx also takes it) cancels the job and
 * interrupts its DuckDB query, so the worker is free again at once. The fd
 * stays valid while MHD keeps the connection suspended. It also enforces the
 * header deadline of every connection (struct http_conn). */
#define WATCH_PERIOD_MS 100

static void *watch_main(void *arg)
{
    struct http_server *srv = arg;
    pthread_setname_np(pthread_self(), "http-watch");
    while (!atomic_load(&srv->watcher_stop)) {
        struct timespec ts = {0, WATCH_PERIOD_MS * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&srv->mu);
        for (struct http_request *r = srv->active; r; r = r->next) {
            if (!r->suspended || !r->job_outstanding || r->fd < 0 ||
                atomic_load(&r->job.cancelled))
                continue;
            struct pollfd pfd = {.fd = r->fd, .events = POLLRDHUP};
            if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
                log_debug("request %llx: the client left; cancelling its job",
                          (unsigned long long)r->id);
                atomic_store(&r->job.cancelled, true);
                eng_pool_interrupt(r->job_pool, &r->job);
            }
        }
        /* A connection gets VT_HEADER_TIMEOUT_SECS for each complete header
         * block (the first request, and each next one on a keep-alive
         * connection): trickling one byte at a time no longer keeps it. */
        int64_t now = time_mono_ms();
        for (struct http_conn *hc = srv->conns; hc; hc = hc->next) {
            if (hc->closing || !hc->waiting_since_ms || hc->fd < 0 ||
                now - hc->waiting_since_ms < VT_HEADER_TIMEOUT_SECS * 1000)
                continue;
            hc->closing = true;
            shutdown(hc->fd, SHUT_RDWR); /* MHD sees the error and closes it */
        }
        pthread_mutex_unlock(&srv->mu);
    }
    return NULL;
}

/* ------------------------------------------------------------- routing */

/* Matches `path` against `pattern`, capturing {x} and {*} into params. */
static bool route_match(const char *pattern, const char *path, struct http_request *req,
                        bool capture)
{
    size_t np = 0;
    const char *p = pattern, *s = path;
    while (*p && *s) {
        if (*p != '/' || *s != '/')
            return false;
        p++;
        s++;
        const char *pe = strchr(p, '/');
        const char *se = strchr(s, '/');
        size_t plen = pe ? (size_t)(pe - p) : strlen(p);
        size_t slen = se ? (size_t)(se - s) : strlen(s);
        if (plen == 3 && memcmp(p, "{*}", 3) == 0 && !pe) {
            /* The rest of the path, slashes and all (may be empty). */
            if (np >= HTTP_MAX_PARAMS)
                return false;
            if (capture && !(req->params[np] = arena_strdup(&req->arena, s)))
                return false;
            np++;
            p += plen;
            s += strlen(s);
            break;
        }
        if (plen >= 2 && p[0] == '{' && p[plen - 1] == '}') {
            if (slen == 0 || np >= HTTP_MAX_PARAMS)
                return false;
            if (capture) {
                req->params[np] = arena_strndup(&req->arena, s, slen);
                if (!req->params[np])
                    return false;
            }
            np++;
        } else if (plen != slen || memcmp(p, s, plen) != 0) {
            return false;
        }
        p += plen;
        s += slen;
    }
    /* "/docs/{*}" also matches "/docs/" (handled above) but not "/docs". */
    return *p == '\0' && *s == '\0';
}

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
        if (allow->len && strstr(allow->buf, names[i].name))
            continue;
        if (allow->len)
            sb_adds(allow, ", ");
        sb_adds(allow, names[i].name);
    }
}

/* Path segments: "/" is 1 (an empty one), "/a/b" 2, "/a/" 2. */
static int count_segments(const char *path)
{
    int n = 0;
    for (const char *p = path; *p; p++)
        n += *p == '/';
    return n;
}

/* Routes are sorted by specificity at start (sort_routes), so the first
 * route matching path and method is the most specific one. A route whose
 * segment count differs cannot match: that check alone skips most of them. */
static void dispatch_in(struct http_request *req, const struct route_table *table,
                        const char *path)
{
    unsigned allowed = 0;
    int segments = count_segments(path);
    for (size_t i = 0; i < table->n; i++) {
        const struct route_slot *slot = &table->slots[i];
        if (slot->segments != segments && !(slot->wild && segments >= slot->segments))
            continue;
        const struct http_route *r = slot->route;
        if (!route_match(r->pattern, path, req, false))
            continue;
        unsigned methods = r->methods;
        if (methods & HTTP_GET)
            methods |= HTTP_HEAD;
        if (!(methods & req->method)) {
            allowed |= methods;
            continue;
        }
        route_match(r->pattern, path, req, true);
        req->route = r;
        if (req->srv->opts.authorize && !req->srv->opts.authorize(req, r->perm))
            return;
        r->handler(req);
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

/* Literal segments of a pattern, and whether it ends in {*}. */
static void pattern_rank(const char *pattern, int *out_literals, bool *out_wild)
{
    int literals = 0;
    bool wild = false;
    for (const char *p = pattern; *p == '/';) {
        p++;
        if (*p == '{')
            wild = wild || p[1] == '*';
        else if (*p)
            literals++;
        p += strcspn(p, "/");
    }
    *out_literals = literals;
    *out_wild = wild;
}

/* The routes ordered by specificity: more literal segments first, then
 * without {*} before with, then table order. Among the routes matching a
 * path, the first in this order is the most specific, whatever order the
 * table was written in. */
static bool sort_routes(const struct http_route *routes, size_t n, struct route_table *out)
{
    out->slots = calloc(n ? n : 1, sizeof *out->slots);
    out->n = 0;
    if (!out->slots)
        return false;
    int max_literals = 0;
    for (size_t i = 0; i < n; i++) {
        int l;
        bool w;
        pattern_rank(routes[i].pattern, &l, &w);
        if (l > max_literals)
            max_literals = l;
    }
    for (int literals = max_literals; literals >= 0; literals--)
        for (int wild = 0; wild <= 1; wild++)
            for (size_t i = 0; i < n; i++) {
                int l;
                bool w;
                pattern_rank(routes[i].pattern, &l, &w);
                if (l != literals || (int)w != wild)
                    continue;
                struct route_slot *slot = &out->slots[out->n++];
                slot->route = &routes[i];
                slot->segments = count_segments(routes[i].pattern);
                slot->wild = w;
                if (w)
                    slot->segments--; /* {*} may match nothing after its slash */
            }
    return true;
}

static void dispatch(struct http_request *req, const char *url)
{
    struct http_server *srv = req->srv;
    const char *prefix = srv->cfg->server.prefix ? srv->cfg->server.prefix : "";
    size_t plen = strlen(prefix);
    /* Routes outside the prefix (metrics) first. */
    for (size_t i = 0; i < srv->root_routes.n; i++) {
        if (route_match(srv->root_routes.slots[i].route->pattern, url, req, false)) {
            req->path = arena_strdup(&req->arena, url);
            dispatch_in(req, &srv->root_routes, url);
            return;
        }
    }
    if (plen && (strncmp(url, prefix, plen) != 0 || (url[plen] != '/' && url[plen] != '\0'))) {
        http_reply_error(req, VT_ERR_NOT_FOUND, "no such route");
        return;
    }
    const char *path = url + plen;
    if (*path == '\0')
        path = "/";
    req->path = arena_strdup(&req->arena, path);
    dispatch_in(req, &srv->routes, path);
}

/* ------------------------------------------------------- MHD callbacks */

static enum MHD_Result queue_reply(struct http_request *req)
{
    struct MHD_Response *resp = req->response;
    req->response = NULL;
    enum MHD_Result r = MHD_queue_response(req->conn, (unsigned)req->status, resp);
    MHD_destroy_response(resp);
    return r;
}

static struct http_request *request_new(struct http_server *srv, struct MHD_Connection *conn,
                                        const char *method)
{
    struct http_request *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    req->srv = srv;
    req->conn = conn;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    req->fd = ci ? ci->connect_fd : -1;
    atomic_init(&req->refs, 1);
    req->id = atomic_fetch_add(&srv->next_id, 1) + 1;
    req->start_ms = time_mono_ms();
    int64_t timeout = srv->cfg->server.request_timeout_ms;
    req->deadline_ms = timeout > 0 ? req->start_ms + timeout : 0;
    req->method = parse_method(method);
    arena_init(&req->arena, REQUEST_ARENA_MAX);
    req->method_str = arena_strdup(&req->arena, method);
    sb_init(&req->body, (size_t)srv->cfg->server.max_body_bytes);
    pthread_mutex_lock(&srv->mu);
    req->next = srv->active;
    if (srv->active)
        srv->active->prev = req;
    srv->active = req;
    srv->in_flight++;
    pthread_mutex_unlock(&srv->mu);
    return req;
}

static bool content_length_too_big(struct http_request *req)
{
    const char *cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl)
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(cl, &end, 10);
    if (errno || end == cl)
        return false; /* MHD itself rejects a malformed Content-Length */
    return v > (unsigned long long)req->srv->cfg->server.max_body_bytes;
}

/* ---------------------------------------------------- strict framing */

struct framing {
    int host, content_length, transfer_encoding;
    bool bad_value;             /* NUL or CR/LF inside a field value */
    bool bad_name;              /* whitespace or an empty field name */
    const char *cl, *te;
};

static enum MHD_Result count_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct framing *f = cls;
    if (key_size == 0 || strcspn(key, " \t") != key_size)
        f->bad_name = true;
    if (value && (strlen(value) != value_size || strpbrk(value, "\r\n")))
        f->bad_value = true;
    if (!strcasecmp(key, "Host"))
        f->host++;
    else if (!strcasecmp(key, "Content-Length")) {
        f->content_length++;
        f->cl = value;
    } else if (!strcasecmp(key, "Transfer-Encoding")) {
        f->transfer_encoding++;
        f->te = value;
    }
    return MHD_YES;
}

/* RFC 9112 framing rules libmicrohttpd 0.9.75 lets through, checked once the
 * header block is in and before any body is read. A request that breaks one
 * gets a 400 (501 for an unknown transfer coding) and the connection is
 * closed: bytes after an ambiguous header block are never read as another
 * request (request smuggling). NULL when the framing is sound. */
static const char *framing_problem(struct http_request *req, const char *version,
                                   enum vt_err *out_code)
{
    struct framing f = {0};
    MHD_get_connection_values_n(req->conn, MHD_HEADER_KIND, count_field, &f);
    *out_code = VT_ERR_BAD_FRAMING;
    if (f.bad_name)
        return "malformed header field name";
    if (f.bad_value)
        return "control characters in a header field value";
    if (f.host > 1)
        return "more than one Host header";
    if (f.host == 0 && strcmp(version, "HTTP/1.0") != 0)
        return "missing Host header";
    if (f.content_length && f.transfer_encoding)
        return "both Content-Length and Transfer-Encoding";
    if (f.content_length > 1)
        return "more than one Content-Length";
    if (f.cl && (!*f.cl || strspn(f.cl, "0123456789") != strlen(f.cl) || strlen(f.cl) > 18))
        return "Content-Length is not a plain number";
    if (f.transfer_encoding > 1)
        return "more than one Transfer-Encoding";
    if (f.te && strcasecmp(f.te, "chunked") != 0) {
        *out_code = VT_ERR_NOT_IMPLEMENTED;
        return "only Transfer-Encoding: chunked is supported";
    }
    return NULL;
}

/* libmicrohttpd's unescaping, except %2F and %00: an encoded slash is part
 * of its segment, never a separator (".../x%2Freload" must not reach the
 * reload route), and an encoded NUL would cut the path short. Applied to
 * the path and to query arguments alike. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    char *w = s;
    for (const char *r = s; *r;) {
        if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2])) {
            char hex[3] = {r[1], r[2], 0};
            unsigned v = (unsigned)strtoul(hex, NULL, 16);
            if (v != '/' && v != 0) {
                *w++ = (char)v;
                r += 3;
                continue;
            }
        }
        *w++ = *r++;
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* Connection bookkeeping for the header deadline (see watch_main). */
static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        struct http_conn *hc = calloc(1, sizeof *hc);
        if (!hc)
            return;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        hc->fd = ci ? ci->connect_fd : -1;
        hc->waiting_since_ms = time_mono_ms();
        pthread_mutex_lock(&srv->mu);
        hc->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = hc;
        srv->conns = hc;
        srv->n_conns++;
        pthread_mutex_unlock(&srv->mu);
        *socket_context = hc;
        return;
    }
    struct http_conn *hc = *socket_context;
    if (!hc)
        return;
    pthread_mutex_lock(&srv->mu);
    if (hc->prev)
        hc->prev->next = hc->next;
    else
        srv->conns = hc->next;
    if (hc->next)
        hc->next->prev = hc->prev;
    srv->n_conns--;
    pthread_mutex_unlock(&srv->mu);
    free(hc);
    *socket_context = NULL;
}

static struct http_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void conn_set_waiting(struct http_server *srv, struct MHD_Connection *conn, bool waiting)
{
    struct http_conn *hc = conn_of(conn);
    if (!hc)
        return;
    pthread_mutex_lock(&srv->mu);
    hc->waiting_since_ms = waiting ? time_mono_ms() : 0;
    pthread_mutex_unlock(&srv->mu);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct http_server *srv = cls;
    struct http_request *req = *con_cls;
    if (!req) {
        req = request_new(srv, conn, method);
        if (!req)
            return MHD_NO;
        *con_cls = req;
        conn_set_waiting(srv, conn, false);
        enum vt_err fcode;
        const char *problem = framing_problem(req, version, &fcode);
        if (problem) {
            req->body_too_large = true; /* read nothing of the body */
            http_add_header(req, "Connection", "close");
            http_reply_error(req, fcode, problem);
            return queue_reply(req);
        }
        if (srv->n_conns > VT_MAX_CONNECTIONS - VT_CONNECTION_HEADROOM) {
            /* Near the hard cap: say so at once rather than let new clients
             * time out. */
            req->body_too_large = true;
            http_add_header(req, "Connection", "close");
            http_add_header(req, "Retry-After", "2");
            http_reply_error(req, VT_ERR_UNAVAILABLE, "too many connections; retry later");
            return queue_reply(req);
        }
        if (strlen(url) > VT_MAX_URL_BYTES) {
            http_reply_error(req, VT_ERR_URI_TOO_LONG, "request target longer than 8192 bytes");
            return queue_reply(req);
        }
        const char *ce = http_req_header(req, "Content-Encoding");
        if (ce && strcasecmp(ce, "identity") != 0) {
            /* We never decompress request bodies (a small body could expand
             * past every limit); refuse before reading any of it. */
            req->body_too_large = true; /* discard what arrives */
            http_reply_error(req, VT_ERR_UNSUPPORTED_CONTENT_ENCODING, NULL);
            return queue_reply(req);
        }
        if (content_length_too_big(req)) {
            /* Refuse before reading any of the body. */
            req->body_too_large = true;
            http_reply_error(req, VT_ERR_BODY_TOO_LARGE, NULL);
            return queue_reply(req);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!req->body_too_large && sb_add(&req->body, upload_data, *upload_data_size) != 0) {
            req->body_too_large = true;
            sb_release(&req->body);
            http_reply_error(req, VT_ERR_BODY_TOO_LARGE, NULL);
            /* MHD 0.9.75 accepts a reply while the body is still arriving and
             * closes the connection after it; if it refuses, the rest of the
             * body is discarded and the 413 goes out at the end. */
            if (queue_reply(req) == MHD_YES) {
                *upload_data_size = 0;
                return MHD_YES;
            }
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->response) {
        req->suspended = false;
        return queue_reply(req);
    }
    if (req->suspended)
        return MHD_YES;
    if (req->body_too_large) {
        http_reply_error(req, VT_ERR_BODY_TOO_LARGE, NULL);
        return queue_reply(req);
    }
    if (srv->stopping) {
        http_add_header(req, "Connection", "close");
        http_reply_error(req, VT_ERR_SHUTTING_DOWN, NULL);
        return queue_reply(req);
    }
    dispatch(req, url);
    if (req->response && !req->suspended)
        return queue_reply(req);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_server *srv = cls;
    struct http_request *req = *con_cls;
    if (!req)
        return;
    *con_cls = NULL;
    conn_set_waiting(srv, conn, true);
    uint64_t bytes = req->bytes_out;
    if (req->stream) {
        /* The connection is over: nobody will read the stream again. Its
         * response may never have been queued (the client left while the
         * request was suspended), so MHD will not release it and
         * stream_released will not run: a producer waiting for room in the
         * queue must hear it here. */
        pthread_mutex_lock(&req->stream->mu);
        bytes = req->stream->bytes;
        req->stream->gone = true;
        pthread_cond_broadcast(&req->stream->cv);
        pthread_mutex_unlock(&req->stream->mu);
    }
    if (req->job_outstanding) {
        /* A stream producer is still running: tell it to stop. */
        atomic_store(&req->job.cancelled, true);
        if (req->job_pool)
            eng_pool_interrupt(req->job_pool, &req->job);
    }
    double ms = (double)(time_mono_ms() - req->start_ms);
    static const char *why[] = {"", " error", " timeout", " shutdown", " read-error",
                                " client-abort"};
    log_access("%s %s %d %lluB %.0fms id=%llx%s", req->method_str ? req->method_str : "?",
             http_req_route(req), req->status, (unsigned long long)bytes, ms,
             (unsigned long long)req->id, (unsigned)toe < 6 ? why[toe] : "");
    pthread_mutex_lock(&srv->mu);
    srv->in_flight--;
    pthread_mutex_unlock(&srv->mu);
    request_unref(req);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    log_debug("libmicrohttpd: %s", line);
}

/* ----------------------------------------------------------- lifecycle */

static void server_free(struct http_server *srv)
{
    free(srv->routes.slots);
    free(srv->root_routes.slots);
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
    if (!sort_routes(opts->routes, opts->n_routes, &srv->routes) ||
        !sort_routes(opts->root_routes, opts->n_root_routes, &srv->root_routes)) {
        server_free(srv);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    srv->cfg = cfg;
    pthread_mutex_init(&srv->mu, NULL);

    char port[16];
    snprintf(port, sizeof port, "%d", cfg->server.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(cfg->server.listen, port, &hints, &ai);
    if (gai != 0 || !ai) {
        vt_error_set(err, VT_ERR_INVALID_CONFIG, "server.listen %s: %s", cfg->server.listen,
                     gai_strerror(gai));
        server_free(srv);
        return NULL;
    }
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned threads = (unsigned)eng_cpu_count();
    /* No MHD_OPTION_LISTENING_ADDRESS_REUSE: its 1 means SO_REUSEPORT on
     * Linux, which let a second vitrine bind the same port and silently take
     * a share of its connections. MHD's default (SO_REUSEADDR) still allows a
     * quick restart on a port with connections in TIME_WAIT. */
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->server.port, NULL, NULL, on_request, srv,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)VT_CONNECTION_TIMEOUT_SECS,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)VT_MAX_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)VT_MAX_CONNECTIONS_PER_IP,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_STRICT_FOR_CLIENT, (int)0, /* Host and friends: framing_problem() */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY_BYTES,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!srv->daemon) {
        vt_error_set(err, VT_ERR_INTERNAL, "cannot listen on %s:%d (address in use or not allowed)",
                     cfg->server.listen, cfg->server.port);
        pthread_mutex_destroy(&srv->mu);
        server_free(srv);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : cfg->server.port;
    srv->watcher_started = pthread_create(&srv->watcher, NULL, watch_main, srv) == 0;
    return srv;
}

int http_server_port(const struct http_server *srv)
{
    return srv->port;
}

int http_server_in_flight(struct http_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    int n = srv->in_flight;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

void http_server_stop(struct http_server *srv, int64_t grace_ms, struct eng_pool *pool_to_interrupt)
{
    if (!srv)
        return;
    pthread_mutex_lock(&srv->mu);
    srv->stopping = true;
    srv->stopper = pthread_self();
    pthread_mutex_unlock(&srv->mu);
    /* Stop accepting: quiesce hands the listening socket back; close it so
     * new connections are refused at once. */
    MHD_socket fd = MHD_quiesce_daemon(srv->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    int64_t until = time_mono_ms() + grace_ms;
    while (http_server_in_flight(srv) > 0 && time_mono_ms() < until) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    int left = http_server_in_flight(srv);
    if (left > 0) {
        log_warn("shutdown: %d requests still running after %lld ms; interrupting them", left,
                 (long long)grace_ms);
        if (pool_to_interrupt)
            eng_pool_interrupt_all(pool_to_interrupt);
        /* Give interrupted jobs a moment to reply and resume. */
        int64_t more = time_mono_ms() + 2000;
        while (time_mono_ms() < more) {
            bool any_suspended = false;
            pthread_mutex_lock(&srv->mu);
            for (struct http_request *r = srv->active; r; r = r->next)
                if (r->suspended || r->job_outstanding)
                    any_suspended = true;
            pthread_mutex_unlock(&srv->mu);
            if (!any_suspended)
                break;
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    /* Requests still suspended on a job that did not stop (blocked in a
     * build, a syscall, an uninterruptible query): answer 503 for them and
     * resume their connections, since MHD_stop_daemon aborts the process
     * with a connection still suspended. The job keeps its reference to the
     * request and ends whenever it ends, without touching MHD again. */
    pthread_mutex_lock(&srv->mu);
    int abandoned = 0;
    for (struct http_request *r = srv->active; r; r = r->next) {
        if (r->suspended && r->job_outstanding && !r->stream) {
            atomic_store(&r->abandoned, true);
            atomic_store(&r->job.cancelled, true);
            abandoned++;
        }
    }
    pthread_mutex_unlock(&srv->mu);
    if (abandoned) {
        log_warn("shutdown: %d requests wait on jobs that did not stop; answering 503 for them",
                 abandoned);
        /* A reply the job was writing as we marked it finishes first. */
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&srv->mu);
        for (struct http_request *r = srv->active; r; r = r->next) {
            if (!atomic_load(&r->abandoned) || !r->suspended)
                continue;
            r->suspended = false;
            http_add_header(r, "Connection", "close");
            http_reply_error(r, VT_ERR_SHUTTING_DOWN, "server is shutting down");
            MHD_resume_connection(r->conn);
        }
        pthread_mutex_unlock(&srv->mu);
    }
    /* Streams waiting for data: end them so their connections resume. */
    pthread_mutex_lock(&srv->mu);
    for (struct http_request *r = srv->active; r; r = r->next) {
        struct http_stream *st = r->stream;
        if (!st)
            continue;
        pthread_mutex_lock(&st->mu);
        bool waiting = st->mhd_waiting;
        st->mhd_waiting = false;
        st->done = true;
        st->failed = true;
        st->gone = true;
        pthread_cond_broadcast(&st->cv);
        pthread_mutex_unlock(&st->mu);
        if (waiting)
            MHD_resume_connection(r->conn);
    }
    pthread_mutex_unlock(&srv->mu);
    atomic_store(&srv->watcher_stop, true);
    if (srv->watcher_started)
        pthread_join(srv->watcher, NULL);
    srv->watcher_started = false;
    MHD_stop_daemon(srv->daemon);
    /* Every connection is closed now, but a job can outlive its connection (a
     * stream producer still cleaning up after its client read the end or hung
     * up): its last request_unref locks srv->mu. Wait for those (they were
     * told to stop and finish quickly) before freeing the server; if one
     * hangs, keep the server (it is still referenced) rather than free it
     * under the job. */
    int64_t jobs_until = time_mono_ms() + 10000;
    for (;;) {
        pthread_mutex_lock(&srv->mu);
        bool idle = srv->active == NULL;
        pthread_mutex_unlock(&srv->mu);
        if (idle)
            break;
        if (time_mono_ms() >= jobs_until) {
            log_warn("shutdown: request jobs still running after the server stopped");
            return;
        }
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_destroy(&srv->mu);
    server_free(srv);
}
