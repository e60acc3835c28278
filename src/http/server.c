/*
 * The libmicrohttpd adapter (see server.h for the model).
 *
 * Connection life: our acceptor thread accepts (a fast 503 past
 * VT_MAX_CONNECTIONS), hands the socket to MHD (which enforces
 * VT_MAX_CONNECTIONS_PER_CLIENT), and the reaper thread closes connections
 * whose request head is not complete VT_REQUEST_HEAD_TIMEOUT_SECS after the
 * accept or the previous response.
 *
 * Request life:
 *   URI log callback         request line parsed: allocate struct http_request
 *                            with the raw request target (routing uses it)
 *   1st access-handler call  headers only: strict framing checks (400/501/
 *                            415/414/431, connection closed), 413 at once when
 *                            Content-Length is too big
 *   body calls               append to the bounded body buffer (a chunked body
 *                            that grows too big gets 413 as soon as MHD lets us)
 *   final call               route, authorize, run the handler; queue its
 *                            reply, or keep the connection suspended while a
 *                            job runs
 *   resumed call             queue the reply the job produced
 *   completion callback      access log line, release
 *
 * Traps measured on libmicrohttpd 0.9.75 and handled here: replying on the
 * first call makes MHD close the connection (only early errors do that);
 * MHD_stop_daemon with a suspended connection aborts the process, so stop
 * answers and resumes every suspended connection first; a suspended
 * connection does not notice a client disconnect, so the reaper polls the
 * sockets of suspended connections and cancels the jobs of clients that left;
 * a stream reply whose connection closes before MHD queued it is never
 * released by MHD, so the completion callback ends it.
 *
 * What MHD still answers itself (its own HTML bodies; 0.9.75 has no hook to
 * replace them): a request line or header block that does not fit in the
 * connection memory (414/431), an HTTP version other than 1.0/1.1 (505), a
 * header line without a colon, a Content-Length that is not plain digits,
 * malformed or oversized chunk framing. Each of those closes the connection
 * and never reads a second request from the leftover bytes. MHD's strict
 * client mode is not used: in 0.9.75 it only adds HTML answers for cases
 * that we otherwise answer in JSON (missing Host, spaces in the target).
 */
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "http/compress.h"
#include "http/cors.h"
#include "http/encoding.h"
#include "http/hosts.h"
#include "http/router.h"
#include "metrics/metrics.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

#define STREAM_CHUNK_BYTES (64 * 1024)   /* producer hands over chunks this big */
#define STREAM_BLOCK_BYTES (32 * 1024)   /* what MHD asks the reader for at once */
#define CONNECTION_MEMORY_BYTES (VT_MAX_HEADER_BYTES + 16 * 1024)
#define REQUEST_ARENA_MAX (8 * 1024 * 1024)
#define REAPER_INTERVAL_MS 100           /* head deadlines, clients gone while suspended */
#define STREAM_WAIT_SLICE_MS 100         /* a waiting producer re-checks its job this often */
/* MHD's own cap must never be reached; the acceptor's (VT_MAX_CONNECTIONS,
 * a fast 503) is the only one. libmicrohttpd 0.9.75 splits its cap evenly
 * among the pool's threads, hands a connection to a thread by the socket
 * number, and when a thread's share is full by the time it takes a queued
 * connection, it logs "Server reached connection limit" and returns WITHOUT
 * unlocking that thread's cleanup_connection_mutex (new_connection_process_
 * in daemon.c): the thread deadlocks the next time it locks it, every
 * connection it holds stalls and MHD_stop_daemon never returns (seen under a
 * 4,200-socket flood). So each thread's share is the whole cap twice over:
 * n_conns lags the hand-offs by the connections a thread has not taken from
 * its queue yet, never by thousands. */
#define MHD_LIMIT_PER_THREAD (2 * VT_MAX_CONNECTIONS)

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

/* One client connection (MHD's socket context). */
struct http_conn {
    struct MHD_Connection *conn;
    int fd;
    int64_t head_deadline_ms;   /* waiting for a request head until then; 0 = not */
    struct http_conn *prev, *next; /* srv->conns, under srv->conn_mu */
};

struct http_request {
    struct http_server *srv;
    struct MHD_Connection *conn;
    struct http_conn *hc;
    int fd;                     /* the connection's socket (polled while suspended) */
    atomic_int refs;
    bool started;               /* the first access-handler call happened */
    char *target;               /* raw request target; NULL when too long */
    struct http_path segs;      /* its path, split and decoded (check_head) */
    size_t target_len;
    pthread_mutex_t reply_mu;   /* installing a reply vs. shutdown taking over */
    bool detached;              /* shutdown answered for it: the job's reply goes nowhere */
    /* Shutdown cancelled its job: job_done answers 503 (the shutdown thread
     * never writes a request whose job may still be running on a worker). */
    atomic_bool shutdown_cancelled;
    atomic_bool client_gone;    /* noticed by the reaper or the completion callback */
    atomic_bool mhd_suspended;  /* we suspended the connection and MHD has not called
                                 * back since (MHD_stop_daemon must not see one) */
    char id[VT_MAX_REQUEST_ID_BYTES + 1]; /* the request id (http_req_id) */
    int64_t defer_us;           /* when the job was queued (http_defer) */
    int64_t queue_us;           /* how long it waited for a worker */
    int64_t start_ms;
    int64_t start_us;           /* for the duration metric */
    enum vt_err err_code;       /* the error replied, for the metrics (VT_ERR_OK: none) */
    int64_t deadline_ms;
    enum http_method method;
    char *method_str;
    char *path;
    const struct http_route *route;
    const char *params[HTTP_MAX_PARAMS];
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
    char *timeout_body;         /* http_set_timeout_body (arena), NULL: the 504 body */
    int timeout_status;
    /* active-request list (for shutdown) */
    struct http_request *prev, *next;
};

struct http_server {
    struct http_server_options opts;
    const struct vt_config *cfg;
    struct http_router *router;
    struct http_hosts hosts;    /* Host/Origin rules (DNS rebinding) */
    const struct http_route *rows; /* the router's rows: a route's metrics slot is its index */
    size_t n_rows;
    struct MHD_Daemon *daemon;
    int port;
    int listen_fd;
    int wake_pipe[2];           /* wakes the acceptor and the reaper at stop */
    pthread_t acceptor, reaper;
    bool acceptor_started, reaper_started;
    atomic_bool threads_stop;
    atomic_int n_conns;         /* connections MHD holds (notify started - closed) */
    atomic_uint_fast64_t next_id;
    pthread_mutex_t mu;         /* active list */
    struct http_request *active;
    int in_flight;
    atomic_bool stopping;
    pthread_mutex_t conn_mu;    /* conns list and head deadlines */
    struct http_conn *conns;
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
    pthread_mutex_destroy(&req->reply_mu);
    free(req->target);
    free(req);
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
int64_t http_req_deadline(const struct http_request *req) { return req->deadline_ms; }
void http_req_set_user(struct http_request *req, void *user) { req->user = user; }
void *http_req_user(const struct http_request *req) { return req->user; }
void http_req_on_release(struct http_request *req, void (*fn)(void *user)) { req->on_release = fn; }

const char *http_req_header(const struct http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *http_req_query(const struct http_request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_req_query_n(const struct http_request *req, const char *key, size_t *out_len)
{
    const char *v = NULL;
    size_t n = 0;
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, key, strlen(key), &v,
                                      &n) != MHD_YES)
        v = NULL;
    *out_len = v ? n : 0;
    return v;
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
    MHD_add_response_header(resp, "X-Request-Id", req->id);
    for (struct http_header *h = req->headers; h; h = h->next)
        MHD_add_response_header(resp, h->name, h->value);
}

/* Installs `resp` as the reply (replacing an earlier one, for the 504 case).
 * False (and `resp` destroyed) when shutdown already answered the request. */
static bool set_response(struct http_request *req, int status, struct MHD_Response *resp,
                         uint64_t bytes)
{
    pthread_mutex_lock(&req->reply_mu);
    if (req->detached) {
        pthread_mutex_unlock(&req->reply_mu);
        MHD_destroy_response(resp);
        return false;
    }
    if (req->response)
        MHD_destroy_response(req->response);
    req->response = resp;
    req->status = status;
    req->bytes_out = bytes;
    pthread_mutex_unlock(&req->reply_mu);
    return true;
}

static void free_buffer(void *p)
{
    free(p);
}

/* The coding of a compressible body: the best the client accepts when
 * server.compress is on, identity for HEAD. */
static enum http_encoding choose_encoding(struct http_request *req, const char *content_type,
                                          bool compressible, uint64_t len)
{
    if (!compressible || req->method == HTTP_HEAD)
        return HTTP_ENC_IDENTITY;
    return http_encoding_choose(http_req_header(req, "Accept-Encoding"),
                                req->srv->cfg->server.compress, content_type, len);
}

/* Content-Type, Vary and Content-Encoding of a body, then the request's own
 * headers. */
static void add_body_headers(struct http_request *req, struct MHD_Response *resp,
                             const char *content_type, bool compressible, const char *encoding)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (compressible && http_encoding_should_vary(req->srv->cfg->server.compress, content_type))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    if (encoding)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, encoding);
    apply_headers(req, resp);
}

/* ------------------------------------------------------------- replies */

void http_reply_buffer(struct http_request *req, int status, const char *content_type,
                       struct strbuf *body, bool compressible)
{
    enum http_encoding enc = choose_encoding(req, content_type, compressible, body->len);
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
    add_body_headers(req, resp, content_type, compressible, encoding);
    set_response(req, status, resp, len);
}

void http_reply_static(struct http_request *req, int status, const char *content_type,
                       const void *data, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return;
    if (content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    apply_headers(req, resp);
    set_response(req, status, resp, len);
}

void http_reply_json(struct http_request *req, int status, struct strbuf *body)
{
    http_reply_buffer(req, status, "application/json", body, true);
}

/* A failure the operator should see (5xx other than the expected 503s) at
 * warn, any other error reply at debug: the line names the request. */
static void log_error_reply(struct http_request *req, int status, enum vt_err code,
                            const char *msg)
{
    enum log_level level = status >= 500 && code != VT_ERR_DATASET_NOT_READY &&
                                   code != VT_ERR_SHUTTING_DOWN && code != VT_ERR_UNAVAILABLE
                               ? LOG_WARN
                               : LOG_DEBUG;
    if (!log_enabled(level))
        return;
    const char *prev = log_request_id();
    log_set_request_id(req->id);
    log_msg(level, "%s %s: %d %s: %s", req->method_str ? req->method_str : "?",
            http_req_route(req), status, vt_err_code(code), msg);
    log_set_request_id(prev);
}

void http_reply_error(struct http_request *req, enum vt_err code, const char *message)
{
    pthread_mutex_lock(&req->reply_mu);
    bool detached = req->detached;
    pthread_mutex_unlock(&req->reply_mu);
    if (detached)
        return; /* answered already (a deadline overrun, shutdown): not logged twice */
    struct strbuf body;
    sb_init(&body, 0);
    const char *msg = message ? message : vt_err_default_message(code);
    req->err_code = code;
    sb_adds(&body, "{\"error\":");
    sb_add_json_string(&body, msg, strlen(msg));
    sb_adds(&body, ",\"code\":");
    const char *c = vt_err_code(code);
    sb_add_json_string(&body, c, strlen(c));
    sb_adds(&body, "}");
    if (code == VT_ERR_DATASET_NOT_READY || code == VT_ERR_UNAVAILABLE ||
        code == VT_ERR_SHUTTING_DOWN || code == VT_ERR_SOURCE_CHANGED)
        http_add_header(req, "Retry-After", "2");
    log_error_reply(req, vt_err_status(code), code, msg);
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
    atomic_store(&st->req->mhd_suspended, false);
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
    atomic_store(&st->req->mhd_suspended, true);
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
    /* Wait for room, but never without a limit: the job may be cancelled
     * (client gone, shutdown) and a client that reads nothing for
     * VT_STREAM_STALL_SECS is given up. */
    int64_t stall_until = time_mono_ms() + (int64_t)VT_STREAM_STALL_SECS * 1000;
    uint64_t seen = st->bytes;
    while (st->qlen == VT_STREAM_QUEUE_BATCHES && !st->gone) {
        if (atomic_load(&st->req->job.cancelled) || atomic_load(&st->req->client_gone)) {
            st->gone = true;
            break;
        }
        int64_t now = time_mono_ms();
        if (st->bytes != seen) {
            seen = st->bytes;
            stall_until = now + (int64_t)VT_STREAM_STALL_SECS * 1000;
        } else if (now >= stall_until) {
            log_warn("request %s: the client read nothing for %d s; cancelling its stream",
                     st->req->id, VT_STREAM_STALL_SECS);
            st->gone = true;
            break;
        }
        time_cond_wait(&st->cv, &st->mu, now + STREAM_WAIT_SLICE_MS);
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
    enum http_encoding enc =
        choose_encoding(req, content_type, compressible, HTTP_BODY_LEN_UNKNOWN);
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
    add_body_headers(req, resp, content_type, compressible, encoding);
    if (!set_response(req, status, resp, 0)) {
        /* Shutdown answered the request already: MHD never gets this
         * response, so drop the references MHD and the request would hold. */
        atomic_store(&st->refs, 1);
        st->gone = true;
        return st;
    }
    req->stream = st;
    /* A started stream is not cut by the request deadline: the client is
     * receiving rows; a stalled client is handled by the connection timeout. */
    atomic_store(&req->job.deadline_ms, 0);
    req->suspended = false;
    MHD_resume_connection(req->conn);
    return st;
}

struct strbuf *http_stream_buffer(struct http_stream *st)
{
    return &st->pending;
}

int http_stream_commit(struct http_stream *st)
{
    if (atomic_load(&st->req->job.cancelled) || atomic_load(&st->req->client_gone))
        return -1;
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
    (void)con; /* the job's code below takes it from the engine when it must */
    struct http_request *req = (struct http_request *)((char *)job - offsetof(struct http_request, job));
    req->queue_us = time_mono_us() - req->defer_us;
    if (atomic_load(&job->timed_out) || atomic_load(&job->cancelled))
        return;
    log_set_request_id(req->id);
    req->job_fn(req);
    log_set_request_id(NULL);
}

static void stream_abort(struct http_request *r, bool resume);

/* The answer to a request past its deadline: the handler's own body
 * (http_set_timeout_body: MCP's JSON-RPC result) or the 504 body. Built
 * from what the request holds for it alone, never from its header list or
 * arena: job_overrun calls it while the handler's job may still write
 * those. */
static void reply_timeout(struct http_request *req)
{
    static const char def[] = "{\"error\":\"request timed out\",\"code\":\"timeout\"}";
    const char *body = req->timeout_body ? req->timeout_body : def;
    int status = req->timeout_body ? req->timeout_status : vt_err_status(VT_ERR_TIMEOUT);
    size_t len = strlen(body);
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, body, len + 1);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(copy);
        return;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, "X-Request-Id", req->id);
    pthread_mutex_lock(&req->reply_mu);
    bool detached = req->detached;
    pthread_mutex_unlock(&req->reply_mu);
    if (detached) {
        MHD_destroy_response(resp);
        return;
    }
    log_error_reply(req, status, VT_ERR_TIMEOUT, "request timed out");
    if (set_response(req, status, resp, len))
        req->err_code = VT_ERR_TIMEOUT;
}

/* The job of `job` is stuck in DuckDB past its deadline (engine.h,
 * eng_job.overrun; its worker was replaced): answer now so the client gets
 * its timeout on time. Only reply_timeout's own response is built here
 * (never the request's headers or arena, which the job may be writing);
 * the job's own reply, when it comes, goes nowhere (detached). The job
 * holds its reference to req until done(). */
static void job_overrun(struct eng_job *job)
{
    struct http_request *req = (struct http_request *)((char *)job - offsetof(struct http_request, job));
    if (req->stream) {
        stream_abort(req, true);
        return;
    }
    pthread_mutex_lock(&req->reply_mu);
    bool open = req->suspended && !req->detached;
    pthread_mutex_unlock(&req->reply_mu);
    if (!open)
        return;
    reply_timeout(req);
    pthread_mutex_lock(&req->reply_mu);
    bool resume = req->suspended && !req->detached;
    if (resume) {
        req->detached = true;
        req->suspended = false;
    }
    pthread_mutex_unlock(&req->reply_mu);
    if (resume)
        MHD_resume_connection(req->conn);
}

static void job_done(struct eng_job *job)
{
    struct http_request *req = (struct http_request *)((char *)job - offsetof(struct http_request, job));
    if (!req->stream) {
        /* Past the deadline: the handler's answer stands when it gave one
         * that is not an error (it finished) or its own timeout answer;
         * otherwise (it never ran, or DuckDB's interrupt surfaced as some
         * other failure) the timeout answer. */
        if (atomic_load(&req->shutdown_cancelled) && (!req->response || req->status >= 400)) {
            http_add_header(req, "Connection", "close");
            http_reply_error(req, VT_ERR_SHUTTING_DOWN, NULL);
        } else if (atomic_load(&job->timed_out) &&
                   (!req->response || (req->status >= 400 && req->err_code != VT_ERR_TIMEOUT)))
            reply_timeout(req);
        else if (!req->response)
            http_reply_error(req, VT_ERR_INTERNAL, "the handler produced no reply");
        /* Shutdown may have answered and resumed it already. */
        pthread_mutex_lock(&req->reply_mu);
        bool resume = !req->detached;
        if (resume)
            req->suspended = false;
        pthread_mutex_unlock(&req->reply_mu);
        if (resume)
            MHD_resume_connection(req->conn);
    }
    pthread_mutex_lock(&req->srv->mu);
    req->job_outstanding = false;
    pthread_mutex_unlock(&req->srv->mu);
    request_unref(req);
}

void http_defer(struct http_request *req, struct eng_pool *pool, http_job_fn fn)
{
    http_defer_as(req, pool, fn, ENG_JOB_SHORT);
}

void http_defer_as(struct http_request *req, struct eng_pool *pool, http_job_fn fn,
                   enum eng_job_class cls)
{
    memset(&req->job, 0, sizeof req->job);
    req->job.cls = cls;
    req->job.run = job_run;
    req->job.done = job_done;
    req->job.overrun = job_overrun;
    atomic_store(&req->job.deadline_ms, req->deadline_ms);
    req->job_fn = fn;
    req->job_pool = pool;
    req->defer_us = time_mono_us();
    pthread_mutex_lock(&req->srv->mu);
    req->suspended = true;
    req->job_outstanding = true;
    pthread_mutex_unlock(&req->srv->mu);
    atomic_fetch_add(&req->refs, 1);
    atomic_store(&req->mhd_suspended, true);
    MHD_suspend_connection(req->conn);
    if (!eng_pool_submit(pool, &req->job)) {
        /* The reply is queued by the access-handler call that follows the
         * resume (req->suspended stays set until then). */
        pthread_mutex_lock(&req->srv->mu);
        req->job_outstanding = false;
        pthread_mutex_unlock(&req->srv->mu);
        atomic_fetch_sub(&req->refs, 1);
        http_reply_error(req, VT_ERR_UNAVAILABLE, "server is overloaded; retry later");
        MHD_resume_connection(req->conn);
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

/* ------------------------------------------------------ client gone */

/* Ends r's stream for good: a producer waiting for room returns -1; with
 * `resume`, a connection suspended waiting for rows is resumed and its reply
 * ends truncated (MHD then also finds a closed socket, if it is one). */
static void stream_abort(struct http_request *r, bool resume)
{
    struct http_stream *st = r->stream;
    pthread_mutex_lock(&st->mu);
    bool waiting = st->mhd_waiting && resume;
    if (resume) {
        /* The reader must never suspend again waiting for a producer that
         * may not come back. */
        st->mhd_waiting = false;
        st->done = true;
        st->failed = true;
    }
    st->gone = true;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    if (waiting)
        MHD_resume_connection(r->conn);
}

/* The client of `r` left (noticed while its connection was suspended, or at
 * completion): cancel its job (interrupting DuckDB) and end its stream so a
 * producer waiting for room returns -1. Call with srv->mu held. */
static void mark_client_gone(struct http_request *r, bool resume_stream)
{
    atomic_store(&r->client_gone, true);
    if (r->job_outstanding) {
        atomic_store(&r->job.cancelled, true);
        if (r->job_pool)
            eng_pool_interrupt(r->job_pool, &r->job);
    }
    if (r->stream)
        stream_abort(r, resume_stream);
}

/* True when the peer closed (or reset) a socket we are not reading from. */
static bool socket_hung_up(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* ------------------------------------------------------- MHD callbacks */

static enum MHD_Result queue_reply(struct http_request *req)
{
    pthread_mutex_lock(&req->reply_mu);
    struct MHD_Response *resp = req->response;
    req->response = NULL;
    pthread_mutex_unlock(&req->reply_mu);
    if (!resp)
        return MHD_NO;
    enum MHD_Result r = MHD_queue_response(req->conn, (unsigned)req->status, resp);
    MHD_destroy_response(resp);
    return r;
}

static void set_head_deadline(struct http_server *srv, struct http_conn *hc, int64_t deadline)
{
    if (!hc)
        return;
    pthread_mutex_lock(&srv->conn_mu);
    hc->head_deadline_ms = deadline;
    pthread_mutex_unlock(&srv->conn_mu);
}

static struct http_request *request_new(struct http_server *srv, struct MHD_Connection *conn,
                                        const char *target)
{
    struct http_request *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    req->srv = srv;
    req->conn = conn;
    atomic_init(&req->refs, 1);
    pthread_mutex_init(&req->reply_mu, NULL);
    /* The process tag first: the id is built from it. */
    pthread_once(&process_tag_once, make_process_tag);
    new_request_id(req->id, atomic_fetch_add(&srv->next_id, 1) + 1);
    req->start_us = time_mono_us();
    req->start_ms = req->start_us / 1000;
    int64_t timeout = srv->cfg->server.request_timeout_ms;
    req->deadline_ms = timeout > 0 ? req->start_ms + timeout : 0;
    req->method = HTTP_OTHER;
    arena_init(&req->arena, REQUEST_ARENA_MAX);
    sb_init(&req->body, (size_t)srv->cfg->server.max_body_bytes);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    req->fd = ci ? ci->connect_fd : -1;
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    req->hc = ci ? ci->socket_context : NULL;
    req->target_len = target ? strlen(target) : 0;
    if (target && req->target_len <= VT_MAX_URL_BYTES)
        req->target = strdup(target);
    pthread_mutex_lock(&srv->mu);
    req->next = srv->active;
    if (srv->active)
        srv->active->prev = req;
    srv->active = req;
    srv->in_flight++;
    pthread_mutex_unlock(&srv->mu);
    return req;
}

/* MHD calls this once the request line is parsed, with the raw request
 * target (before any unescaping): the request starts here, so routing sees
 * the target as the client sent it. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    return request_new(cls, conn, uri);
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

/* ------------------------------------------------------ strict framing */

struct head_scan {
    int host, content_length, transfer_encoding, content_encoding;
    const char *te;
    const char *ce;
    const char *bad;            /* first problem found */
};

static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A control character other than HTAB: not allowed in a field value
 * (RFC 9110 §5.5). */
static bool is_ctl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* Whether v[0..n) holds such a character. Eight bytes at a time (header
 * values such as bearer tokens run to kilobytes): a word with no byte below
 * 0x20 and none equal to 0x7f is clean; a word that may hold one is checked
 * byte by byte. */
static bool has_ctl(const unsigned char *v, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, v + i, 8);
        uint64_t x = w ^ (ones * 0x7f);
        if (((w - ones * 0x20) & ~w & highs) | ((x - ones) & ~x & highs))
            for (size_t j = i; j < i + 8; j++)
                if (is_ctl(v[j]))
                    return true;
    }
    for (; i < n; i++)
        if (is_ctl(v[i]))
            return true;
    return false;
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)key_size;
    struct head_scan *h = cls;
    if (!*key) {
        h->bad = "empty header field name";
        return MHD_NO;
    }
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        if (!is_tchar(*p)) {
            h->bad = "invalid character (or whitespace before the colon) in a header field name";
            return MHD_NO;
        }
    if (value && has_ctl((const unsigned char *)value, value_size)) {
        h->bad = "control character (CR, NUL, ...) in a header field value";
        return MHD_NO;
    }
    if (!strcasecmp(key, "Host"))
        h->host++;
    else if (!strcasecmp(key, "Content-Length"))
        h->content_length++;
    else if (!strcasecmp(key, "Transfer-Encoding")) {
        h->transfer_encoding++;
        h->te = value;
    } else if (!strcasecmp(key, "Content-Encoding")) {
        h->content_encoding++;
        h->ce = value;
    }
    return MHD_YES;
}

/* Trims optional whitespace: true when `v` is exactly `word` (any case). */
static bool value_is(const char *v, const char *word)
{
    if (!v)
        return false;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(word);
    if (strncasecmp(v, word, n) != 0)
        return false;
    v += n;
    while (*v == ' ' || *v == '\t')
        v++;
    return *v == '\0';
}

/* RFC 9112 framing rules libmicrohttpd lets through, checked on the headers
 * before any body byte is read. VT_ERR_OK or the error to close with. */
static enum vt_err check_head(struct http_request *req, const char *version, const char **out_msg)
{
    *out_msg = NULL;
    if (!req->target) {
        *out_msg = "request target longer than VT_MAX_URL_BYTES (8192)";
        return VT_ERR_URI_TOO_LONG;
    }
    if (req->target[0] != '/') {
        *out_msg = "the request target must be an absolute path";
        return VT_ERR_MALFORMED_REQUEST;
    }
    if (strpbrk(req->target, " \t")) {
        *out_msg = "whitespace in the request target";
        return VT_ERR_MALFORMED_REQUEST;
    }
    enum vt_err rc = http_path_parse(&req->arena, req->target, &req->segs, out_msg);
    if (rc != VT_ERR_OK)
        return rc;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (ci && ci->header_size > VT_MAX_HEADER_BYTES + VT_MAX_URL_BYTES) {
        *out_msg = "request header fields larger than VT_MAX_HEADER_BYTES";
        return VT_ERR_HEADERS_TOO_LARGE;
    }
    struct head_scan h = {0};
    MHD_get_connection_values_n(req->conn, MHD_HEADER_KIND, scan_header, &h);
    if (h.bad) {
        *out_msg = h.bad;
        return VT_ERR_MALFORMED_REQUEST;
    }
    bool http11 = version && !strcmp(version, MHD_HTTP_VERSION_1_1);
    if (http11 ? h.host != 1 : h.host > 1) {
        *out_msg = h.host ? "more than one Host header" : "an HTTP/1.1 request needs a Host header";
        return VT_ERR_MALFORMED_REQUEST;
    }
    if (h.content_length > 1) {
        *out_msg = "more than one Content-Length header";
        return VT_ERR_MALFORMED_REQUEST;
    }
    if (h.transfer_encoding) {
        if (h.content_length) {
            *out_msg = "both Content-Length and Transfer-Encoding";
            return VT_ERR_MALFORMED_REQUEST;
        }
        if (!http11) {
            *out_msg = "Transfer-Encoding in an HTTP/1.0 request";
            return VT_ERR_MALFORMED_REQUEST;
        }
        if (h.transfer_encoding > 1 || !value_is(h.te, "chunked")) {
            *out_msg = "unsupported transfer coding (only chunked is accepted)";
            return VT_ERR_NOT_IMPLEMENTED;
        }
    }
    if (h.content_encoding && !value_is(h.ce, "identity")) {
        *out_msg = "request bodies must not be sent with a Content-Encoding";
        return VT_ERR_UNSUPPORTED_CONTENT_ENCODING;
    }
    return VT_ERR_OK;
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
    if (!http_cors_allowed(allowed, origin))
        return false;
    http_add_header(req, "Access-Control-Allow-Origin", origin);
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
static void label_route(struct http_request *req)
{
    if (req->route || !req->target)
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

static enum MHD_Result reply_and_close(struct http_request *req, enum vt_err code, const char *msg)
{
    http_add_header(req, "Connection", "close");
    http_reply_error(req, code, msg);
    return queue_reply(req);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct http_server *srv = cls;
    struct http_request *req = *con_cls;
    if (!req) {
        /* Every request passes the URI log callback first; be safe anyway. */
        req = request_new(srv, conn, url);
        if (!req)
            return MHD_NO;
        *con_cls = req;
    }
    atomic_store(&req->mhd_suspended, false);
    if (!req->started) {
        /* Headers only: the whole request head arrived. */
        req->started = true;
        req->method = parse_method(method);
        req->method_str = arena_strdup(&req->arena, method);
        const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
        if (rid && http_request_id_ok(rid))
            memcpy(req->id, rid, strlen(rid) + 1);
        set_head_deadline(srv, req->hc, 0);
        const char *msg;
        enum vt_err rc = check_head(req, version, &msg);
        if (rc != VT_ERR_OK)
            return reply_and_close(req, rc, msg);
        if (!http_hosts_host_ok(&srv->hosts, http_req_header(req, "Host"))) {
            /* DNS rebinding: no route answers a name we are not known by. */
            label_route(req);
            return reply_and_close(req, VT_ERR_HOST_NOT_ALLOWED, NULL);
        }
        if (content_length_too_big(req)) {
            /* Refuse before reading any of the body. */
            req->body_too_large = true;
            label_route(req);
            http_reply_error(req, VT_ERR_BODY_TOO_LARGE, NULL);
            return queue_reply(req);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!req->body_too_large && sb_add(&req->body, upload_data, *upload_data_size) != 0) {
            req->body_too_large = true;
            sb_release(&req->body);
            label_route(req);
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
        pthread_mutex_lock(&srv->mu);
        req->suspended = false;
        pthread_mutex_unlock(&srv->mu);
        return queue_reply(req);
    }
    if (req->suspended)
        return MHD_YES;
    if (req->body_too_large) {
        label_route(req);
        http_reply_error(req, VT_ERR_BODY_TOO_LARGE, NULL);
        return queue_reply(req);
    }
    if (atomic_load(&srv->stopping)) {
        http_add_header(req, "Connection", "close");
        http_reply_error(req, VT_ERR_SHUTTING_DOWN, NULL);
        return queue_reply(req);
    }
    dispatch(req);
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
    atomic_store(&req->mhd_suspended, false);
    uint64_t bytes = req->bytes_out;
    if (req->stream) {
        pthread_mutex_lock(&req->stream->mu);
        bytes = req->stream->bytes;
        pthread_mutex_unlock(&req->stream->mu);
    }
    int status = req->status;
    if (!req->started) {
        /* libmicrohttpd answered (or dropped) it before our handler saw it. */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
        status = ci ? (int)ci->http_status : 0;
    }
    pthread_mutex_lock(&srv->mu);
    /* The connection is done with this request: a job still running (a
     * stream producer, or a job whose reply MHD never queued) must stop, and
     * a stream MHD never took must not wait for a reader. */
    mark_client_gone(req, false);
    srv->in_flight--;
    pthread_mutex_unlock(&srv->mu);
    set_head_deadline(srv, req->hc, time_mono_ms() + (int64_t)VT_REQUEST_HEAD_TIMEOUT_SECS * 1000);
    int64_t now_us = time_mono_us();
    uint64_t dur_us = now_us > req->start_us ? (uint64_t)(now_us - req->start_us) : 0;
    metrics_http_observe(req->route ? (unsigned)(req->route - srv->rows) : METRICS_MAX_ROUTES,
                         req->started ? (unsigned)req->method : 0, status, bytes, dur_us,
                         status >= 400 ? req->err_code : VT_ERR_OK);
    static const char *why[] = {NULL, "error", "timeout", "shutdown", "read-error",
                                "client-abort"};
    struct log_access_rec rec = {req->method_str ? req->method_str : "?", http_req_route(req),
                                 status, bytes, (int64_t)dur_us, req->id,
                                 (unsigned)toe < 6 ? why[toe] : "unknown"};
    log_access(&rec);
    request_unref(req);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http_server *srv = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&srv->n_conns, 1);
        struct http_conn *hc = calloc(1, sizeof *hc);
        if (!hc)
            return;
        hc->conn = conn;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        hc->fd = ci ? ci->connect_fd : -1;
        hc->head_deadline_ms = time_mono_ms() + (int64_t)VT_REQUEST_HEAD_TIMEOUT_SECS * 1000;
        pthread_mutex_lock(&srv->conn_mu);
        hc->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = hc;
        srv->conns = hc;
        pthread_mutex_unlock(&srv->conn_mu);
        *socket_context = hc;
        return;
    }
    atomic_fetch_sub(&srv->n_conns, 1);
    struct http_conn *hc = *socket_context;
    if (!hc)
        return;
    /* MHD closes the socket after this callback: under conn_mu the reaper
     * never touches a socket number that was reused. */
    pthread_mutex_lock(&srv->conn_mu);
    if (hc->prev)
        hc->prev->next = hc->next;
    else
        srv->conns = hc->next;
    if (hc->next)
        hc->next->prev = hc->prev;
    pthread_mutex_unlock(&srv->conn_mu);
    free(hc);
    *socket_context = NULL;
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

/* ------------------------------------------------ acceptor and reaper */

/* A complete JSON error reply written straight to a socket MHD never owns
 * (or no longer reads), then the connection closed. */
static void send_canned(int fd, enum vt_err code, const char *message)
{
    char body[256], head[512];
    int bl = snprintf(body, sizeof body, "{\"error\":\"%s\",\"code\":\"%s\"}", message,
                      vt_err_code(code));
    int status = vt_err_status(code);
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %d\r\n%sConnection: close\r\n\r\n",
                      status, status == 503 ? "Service Unavailable" : "Request Timeout", bl,
                      status == 503 ? "Retry-After: 2\r\n" : "");
    struct iovec iov[2] = {{head, (size_t)hl}, {body, (size_t)bl}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
    if (sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        log_debug("canned %d reply not sent: %s", status, strerror(errno));
}

static void reject_busy(int fd)
{
    metrics_connection_rejected();
    send_canned(fd, VT_ERR_UNAVAILABLE, "too many connections; retry later");
    shutdown(fd, SHUT_WR);
    /* Read what the client already sent so close() ends with FIN, not RST
     * (an RST can destroy the 503 before the client reads it). */
    char buf[4096];
    for (int i = 0; i < 16 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; i++)
        ;
    close(fd);
}

static void *acceptor_main(void *arg)
{
    struct http_server *srv = arg;
    pthread_setname_np(pthread_self(), "http-accept");
    struct pollfd pfd[2] = {{.fd = srv->listen_fd, .events = POLLIN},
                            {.fd = srv->wake_pipe[0], .events = POLLIN}};
    int64_t last_warn = 0;
    while (!atomic_load(&srv->threads_stop)) {
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_error("http acceptor: poll: %s", strerror(errno));
            break;
        }
        if (pfd[1].revents)
            break;
        for (int k = 0; k < 256; k++) {
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            int fd = accept4(srv->listen_fd, (struct sockaddr *)&ss, &sl,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                    int64_t now = time_mono_ms();
                    if (now - last_warn > 10000) {
                        log_warn("http acceptor: %s; connections wait in the backlog",
                                 strerror(errno));
                        last_warn = now;
                    }
                    struct timespec ts = {0, 10 * 1000000L};
                    nanosleep(&ts, NULL);
                }
                break;
            }
            if (atomic_load(&srv->n_conns) >= VT_MAX_CONNECTIONS) {
                reject_busy(fd);
                continue;
            }
            /* MHD refuses (and closes) past VT_MAX_CONNECTIONS_PER_CLIENT. */
            MHD_add_connection(srv->daemon, fd, (struct sockaddr *)&ss, sl);
        }
    }
    return NULL;
}

static void *reaper_main(void *arg)
{
    struct http_server *srv = arg;
    pthread_setname_np(pthread_self(), "http-reaper");
    while (!atomic_load(&srv->threads_stop)) {
        struct timespec ts = {0, REAPER_INTERVAL_MS * 1000000L};
        nanosleep(&ts, NULL);
        int64_t now = time_mono_ms();
        /* Request heads that did not arrive in time (slow headers, idle
         * keep-alive): answer 408 and close; MHD sees the socket end. */
        pthread_mutex_lock(&srv->conn_mu);
        for (struct http_conn *hc = srv->conns; hc; hc = hc->next) {
            if (!hc->head_deadline_ms || now < hc->head_deadline_ms || hc->fd < 0)
                continue;
            hc->head_deadline_ms = 0;
            send_canned(hc->fd, VT_ERR_REQUEST_HEAD_TIMEOUT,
                        "the request head did not arrive in time");
            shutdown(hc->fd, SHUT_RDWR);
        }
        pthread_mutex_unlock(&srv->conn_mu);
        /* Suspended connections (a job runs, or a stream waits for rows) do
         * not notice a client that left: look at their sockets. */
        pthread_mutex_lock(&srv->mu);
        for (struct http_request *r = srv->active; r; r = r->next) {
            if (r->fd < 0 || atomic_load(&r->client_gone))
                continue;
            bool suspended = r->suspended && r->job_outstanding;
            if (!suspended && r->stream) {
                pthread_mutex_lock(&r->stream->mu);
                suspended = r->stream->mhd_waiting;
                pthread_mutex_unlock(&r->stream->mu);
            }
            if (suspended && socket_hung_up(r->fd)) {
                log_debug("request %s: the client left while its request was suspended", r->id);
                mark_client_gone(r, true);
            }
        }
        pthread_mutex_unlock(&srv->mu);
    }
    return NULL;
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
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    if (srv->wake_pipe[0] >= 0) {
        close(srv->wake_pipe[0]);
        close(srv->wake_pipe[1]);
    }
    http_router_destroy(srv->router);
    pthread_mutex_destroy(&srv->mu);
    pthread_mutex_destroy(&srv->conn_mu);
    free(srv);
}

static void stop_threads(struct http_server *srv)
{
    atomic_store(&srv->threads_stop, true);
    if (srv->wake_pipe[1] >= 0 && write(srv->wake_pipe[1], "x", 1) < 0)
        log_debug("wake pipe: %s", strerror(errno));
    if (srv->acceptor_started)
        pthread_join(srv->acceptor, NULL);
    if (srv->reaper_started)
        pthread_join(srv->reaper, NULL);
    srv->acceptor_started = srv->reaper_started = false;
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
    pthread_mutex_init(&srv->conn_mu, NULL);
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
    if (srv->listen_fd < 0) {
        server_free(srv);
        return NULL;
    }
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    unsigned threads = (unsigned)eng_cpu_count();
    srv->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, srv,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)VT_CONNECTION_TIMEOUT_SECS,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(MHD_LIMIT_PER_THREAD * threads),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)VT_MAX_CONNECTIONS_PER_CLIENT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY_BYTES,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
        MHD_OPTION_END);
    if (!srv->daemon) {
        vt_error_set(err, VT_ERR_INTERNAL, "cannot start the HTTP server on %s:%d",
                     cfg->server.listen, cfg->server.port);
        server_free(srv);
        return NULL;
    }
    srv->reaper_started = pthread_create(&srv->reaper, NULL, reaper_main, srv) == 0;
    srv->acceptor_started = pthread_create(&srv->acceptor, NULL, acceptor_main, srv) == 0;
    if (!srv->acceptor_started || !srv->reaper_started) {
        vt_error_set(err, VT_ERR_INTERNAL, "cannot start the HTTP threads");
        stop_threads(srv);
        MHD_stop_daemon(srv->daemon);
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
    pthread_mutex_lock(&srv->mu);
    int n = srv->in_flight;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* True once no connection is suspended by us (they were all resumed and MHD
 * called back), before `until`. */
static bool wait_none_suspended(struct http_server *srv, int64_t until)
{
    for (;;) {
        bool any = false;
        pthread_mutex_lock(&srv->mu);
        for (struct http_request *r = srv->active; r && !any; r = r->next)
            any = atomic_load(&r->mhd_suspended);
        pthread_mutex_unlock(&srv->mu);
        if (!any)
            return true;
        if (time_mono_ms() >= until)
            return false;
        sleep_ms(10);
    }
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
 * resume its connection, so that none is suspended when MHD stops. A request
 * whose job is outstanding is answered by that job's completion (job_done,
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
            /* Its producer may still push: it gets -1 now. A stream MHD is
             * writing is closed by MHD_stop_daemon. */
            stream_abort(r, true);
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
            MHD_resume_connection(r->conn);
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
    /* Stop accepting: the acceptor ends and the listening socket closes, so
     * new connections are refused at once. The reaper keeps running through
     * the drain (clients that leave still cancel their jobs). */
    if (write(srv->wake_pipe[1], "x", 1) < 0)
        log_debug("wake pipe: %s", strerror(errno));
    if (srv->acceptor_started) {
        atomic_store(&srv->threads_stop, true); /* the acceptor only; reaper restarted below */
        pthread_join(srv->acceptor, NULL);
        srv->acceptor_started = false;
        atomic_store(&srv->threads_stop, false);
    }
    close(srv->listen_fd);
    srv->listen_fd = -1;
    if (!wait_in_flight(srv, time_mono_ms() + grace_ms)) {
        log_warn("shutdown: %d requests still running after %lld ms; cancelling them",
                 http_server_in_flight(srv), (long long)grace_ms);
        take_over_remaining(srv, pool_to_interrupt);
        /* The resumed connections send their answer (or the end of their
         * stream) and close; MHD_stop_daemon closes those still writing. */
        int64_t until = time_mono_ms() + (int64_t)VT_SHUTDOWN_JOIN_SECS * 1000;
        wait_in_flight(srv, time_mono_ms() + 1000);
        if (!wait_none_suspended(srv, until)) {
            stop_threads(srv);
            log_warn("shutdown: %d requests did not finish; exiting without stopping the "
                     "HTTP server (stopping it with suspended connections would abort)",
                     http_server_in_flight(srv));
            return false;
        }
    }
    stop_threads(srv);
    MHD_stop_daemon(srv->daemon);
    /* Every connection is closed now, but a job can outlive its connection (a
     * stream producer still cleaning up after its client read the end or hung
     * up): its last request_unref locks srv->mu. Wait for those (they were
     * told to stop) before freeing the server; if one hangs, keep the server
     * (it is still referenced) rather than free it under the job. */
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
