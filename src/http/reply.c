/*
 * Responses (see server.h for the API, http_internal.h for the threads): a
 * reply is built on the thread that answers, its head serialized at once
 * (status line, Date, the request's headers, framing), and installed on the
 * request under reply_mu; the connection's loop takes and writes it
 * (conn.c). Streams are the one reply that keeps changing after it is
 * installed: a producer (a job) queues chunks, the loop takes them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "http/compress.h"
#include "http/cors.h"
#include "http/encoding.h"
#include "http/http_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

#define STREAM_WAIT_SLICE_MS 100 /* a waiting producer re-checks its job this often */

void http_add_header(struct http_request *req, const char *name, const char *value)
{
    size_t vlen = strlen(value);
    struct http_header *h = arena_alloc(&req->arena, sizeof *h);
    char *copy = h ? arena_alloc(&req->arena, vlen + 1) : NULL;
    if (!copy)
        return;
    memcpy(copy, value, vlen + 1);
    h->name = name; /* a literal (server.h): not copied */
    h->name_len = strlen(name);
    h->value = copy;
    h->value_len = vlen;
    h->next = req->headers;
    req->headers = h;
}

/* Today's Date value, formatted once a second per thread. */
static const char *date_now(void)
{
    static _Thread_local time_t cached = -1;
    static _Thread_local char text[30];
    time_t now = time(NULL);
    if (now != cached) {
        http_date(now, text);
        cached = now;
    }
    return text;
}

static bool has_body(int status)
{
    return status >= 200 && status != 204 && status != 304;
}

/* n in decimal at o; returns the end (no printf: this runs on every
 * response). */
static char *put_uint(char *o, uint64_t n)
{
    char tmp[20];
    size_t k = sizeof tmp;
    do {
        tmp[--k] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    memcpy(o, tmp + k, sizeof tmp - k);
    return o + (sizeof tmp - k);
}

/* Copies the constant string s to o and moves o past it. */
#define PUT_LIT(o, s) (memcpy((o), (s), sizeof(s) - 1), (o) += sizeof(s) - 1)

static char *put(char *o, const char *s, size_t n)
{
    memcpy(o, s, n);
    return o + n;
}

/* The response's head: status line, Date, the request's own headers,
 * Content-Type/Vary/Content-Encoding of the body, then the framing (a
 * Content-Length, or chunked for a stream) and whether the connection stays.
 * `length` < 0: a stream. The head's size is added up first and the bytes
 * written with no bound check each (one reservation instead of ~25 checked
 * appends). */
static void build_head(struct http_request *req, struct http_response *r,
                       const char *content_type, bool vary, const char *encoding, int64_t length)
{
    struct strbuf *h = &r->head;
    bool close = !req->keep_alive || atomic_load(&req->srv->stopping);
    const char *reason = http_reason(r->status);
    const char *date = date_now();
    size_t reason_len = strlen(reason), id_len = strlen(req->id);
    size_t ct_len = content_type ? strlen(content_type) : 0;
    size_t enc_len = encoding ? strlen(encoding) : 0;
    /* "HTTP/1.1 " status SP reason, Date, X-Request-Id; then every optional
     * line at its longest, and the final CRLF. */
    size_t need = 9 + 20 + 1 + reason_len + 8 + strlen(date) + 16 + id_len + 2;
    for (struct http_header *f = req->headers; f; f = f->next)
        need += f->name_len + 2 + f->value_len + 2;
    need += 14 + ct_len + 2 + 23 + 18 + enc_len + 2 + 16 + 20 + 2 + 28 + 24 + 2;
    if (sb_grow(h, need) < 0)
        return; /* (overflow set: set_response refuses the head) */
    char *o = h->buf + h->len;
    PUT_LIT(o, "HTTP/1.1 ");
    o = put_uint(o, (uint64_t)(r->status > 0 ? r->status : 0));
    *o++ = ' ';
    o = put(o, reason, reason_len);
    PUT_LIT(o, "\r\nDate: ");
    o = put(o, date, strlen(date));
    PUT_LIT(o, "\r\nX-Request-Id: ");
    o = put(o, req->id, id_len);
    PUT_LIT(o, "\r\n");
    for (struct http_header *f = req->headers; f; f = f->next) {
        if (f->name_len == 10 && http_name_eq(f->name, "Connection")) {
            if (!strcasecmp(f->value, "close"))
                close = true;
            continue;
        }
        o = put(o, f->name, f->name_len);
        PUT_LIT(o, ": ");
        o = put(o, f->value, f->value_len);
        PUT_LIT(o, "\r\n");
    }
    if (content_type) {
        PUT_LIT(o, "Content-Type: ");
        o = put(o, content_type, ct_len);
        PUT_LIT(o, "\r\n");
    }
    if (vary)
        PUT_LIT(o, "Vary: Accept-Encoding\r\n");
    if (encoding) {
        PUT_LIT(o, "Content-Encoding: ");
        o = put(o, encoding, enc_len);
        PUT_LIT(o, "\r\n");
    }
    if (length >= 0) {
        if (has_body(r->status)) {
            PUT_LIT(o, "Content-Length: ");
            o = put_uint(o, (uint64_t)length);
            PUT_LIT(o, "\r\n");
        }
    } else if (req->minor == 1) {
        PUT_LIT(o, "Transfer-Encoding: chunked\r\n");
        r->chunked = true;
    } else {
        close = true; /* HTTP/1.0: the end of the body is the end of the connection */
    }
    if (close)
        PUT_LIT(o, "Connection: close\r\n");
    else if (req->minor == 0)
        PUT_LIT(o, "Connection: keep-alive\r\n");
    PUT_LIT(o, "\r\n");
    h->len = (size_t)(o - h->buf);
    h->buf[h->len] = '\0';
    r->close = close;
}

static struct http_response *response_new(int status, enum resp_kind kind)
{
    struct http_response *r = http_spare_response();
    if (r) {
        struct strbuf head = r->head; /* emptied, its buffer kept */
        memset(r, 0, sizeof *r);
        r->head = head;
    } else {
        r = calloc(1, sizeof *r);
        if (!r)
            return NULL;
        sb_init(&r->head, 0);
    }
    r->status = status;
    r->kind = kind;
    r->fd = -1;
    return r;
}

void http_response_free(struct http_response *r)
{
    if (!r)
        return;
    if (!r->owned_cap || !http_keep_body(r->owned, r->owned_cap))
        free(r->owned);
    if (r->fd >= 0)
        close(r->fd);
    if (r->stream)
        http_stream_unref(r->stream);
    /* a usual head's buffer is kept with a spare (a big one is not) */
    if (r->head.cap <= 1024 && !r->head.overflow) {
        sb_reset(&r->head);
        if (http_keep_response(r))
            return;
    }
    sb_release(&r->head);
    free(r);
}

/* Installs `r` as the reply (replacing an earlier one, for the 504 case).
 * False (and `r` freed) when shutdown already answered the request. */
static bool set_response(struct http_request *req, struct http_response *r)
{
    if (r->head.overflow) {
        http_response_free(r);
        return false;
    }
    pthread_mutex_lock(&req->reply_mu);
    if (req->detached) {
        pthread_mutex_unlock(&req->reply_mu);
        http_response_free(r);
        return false;
    }
    http_response_free(req->response);
    req->response = r;
    pthread_mutex_unlock(&req->reply_mu);
    return true;
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

static bool vary(struct http_request *req, const char *content_type, bool compressible)
{
    return compressible &&
           http_encoding_should_vary(req->srv->cfg->server.compress, content_type);
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
    struct http_response *r = response_new(status, RESP_BUFFER);
    if (!r) {
        sb_release(body);
        return;
    }
    size_t cap = body->cap;
    r->owned = sb_detach(body, &r->len);
    r->owned_cap = cap; /* (0 when sb_detach made its one byte) */
    r->data = r->owned ? r->owned : "";
    build_head(req, r, content_type, vary(req, content_type, compressible), encoding,
               (int64_t)r->len);
    set_response(req, r);
}

void http_reply_static(struct http_request *req, int status, const char *content_type,
                       const void *data, size_t len)
{
    struct http_response *r = response_new(status, RESP_BUFFER);
    if (!r)
        return;
    r->data = data;
    r->len = len;
    build_head(req, r, content_type, false, NULL, (int64_t)len);
    set_response(req, r);
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

bool http_reply_timeout(struct http_request *req, bool on_job)
{
    static const char def[] = "{\"error\":\"request timed out\",\"code\":\"timeout\"}";
    int status = req->timeout_body ? req->timeout_status : vt_err_status(VT_ERR_TIMEOUT);
    if (on_job) {
        if (!req->timeout_body) {
            http_reply_error(req, VT_ERR_TIMEOUT, "request timed out");
            return true;
        }
        struct strbuf body;
        sb_init(&body, 0);
        sb_adds(&body, req->timeout_body);
        req->err_code = VT_ERR_TIMEOUT;
        log_error_reply(req, status, VT_ERR_TIMEOUT, "request timed out");
        http_reply_json(req, status, &body);
        return true;
    }
    /* Not the job's thread: nothing of the request that the job may be
     * writing (its header list, arena) is read, so the head is written here
     * from what does not change after dispatch. */
    const char *body = req->timeout_body ? req->timeout_body : def;
    size_t len = strlen(body);
    struct http_response *r = response_new(status, RESP_BUFFER);
    if (!r || !(r->owned = malloc(len + 1))) {
        http_response_free(r);
        return false;
    }
    memcpy(r->owned, body, len + 1);
    r->data = r->owned;
    r->len = len;
    sb_addf(&r->head, "HTTP/1.1 %d %s\r\nDate: %s\r\nX-Request-Id: %s\r\n", status,
            http_reason(status), date_now(), req->id);
    /* The CORS headers dispatch gave the request (from its head, which does
     * not change): a page on an allowed origin can read its timeout too. */
    if (req->cors_vary)
        sb_adds(&r->head, "Vary: Origin\r\n");
    if (req->cors_origin)
        sb_addf(&r->head,
                "Access-Control-Allow-Origin: %s\r\nAccess-Control-Expose-Headers: %s\r\n",
                req->cors_origin, HTTP_CORS_EXPOSE_HEADERS);
    sb_addf(&r->head,
            "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
            len);
    r->close = true;
    /* One critical section decides, installs and releases the connection,
     * so neither the job's own reply (set_response) nor shutdown can come
     * between the check and the install: nothing is answered twice, and a
     * stream the job started (the connection owns it from then on) is
     * never replaced. A buffer the job installed already is its answer
     * and goes out instead of the timeout. */
    pthread_mutex_lock(&req->reply_mu);
    bool open = req->suspended && !req->detached &&
                !(req->response && req->response->kind == RESP_STREAM);
    bool installed = open && !req->response;
    if (installed) {
        req->response = r;
        req->err_code = VT_ERR_TIMEOUT;
    }
    if (open) {
        req->detached = true;
        req->suspended = false;
    }
    pthread_mutex_unlock(&req->reply_mu);
    if (!installed)
        http_response_free(r);
    else
        log_error_reply(req, status, VT_ERR_TIMEOUT, "request timed out");
    return open;
}

void http_reply_vterr(struct http_request *req, const struct vt_error *err)
{
    http_reply_error(req, err->code, vt_error_message(err));
}

void http_reply_file(struct http_request *req, int status, const char *content_type, int fd,
                     uint64_t offset, uint64_t length)
{
    struct http_response *r = response_new(status, RESP_FILE);
    if (!r) {
        close(fd);
        http_reply_error(req, VT_ERR_INTERNAL, "cannot create file response");
        return;
    }
    r->fd = fd;
    r->off = offset;
    r->flen = length;
    build_head(req, r, content_type, false, NULL, (int64_t)length);
    set_response(req, r);
}

enum http_encoding http_reply_encoding(struct http_request *req, const char *content_type,
                                       bool compressible, uint64_t length)
{
    return choose_encoding(req, content_type, compressible, length);
}

bool http_req_takes_gzip(struct http_request *req)
{
    struct http_accept_encoding ae;
    http_accept_encoding_parse(http_req_header(req, "Accept-Encoding"), &ae);
    int q[HTTP_ENC__COUNT];
    for (int e = 0; e < HTTP_ENC__COUNT; e++)
        q[e] = ae.q[e] != HTTP_Q_UNLISTED ? ae.q[e] : ae.star_q;
    return q[HTTP_ENC_GZIP] > 0 && q[HTTP_ENC_GZIP] >= q[HTTP_ENC_BR] &&
           q[HTTP_ENC_GZIP] >= q[HTTP_ENC_ZSTD];
}

void http_reply_file_framed(struct http_request *req, int status, const char *content_type,
                            bool compressible, const char *encoding, int fd, uint64_t offset,
                            uint64_t length, const char *head, size_t head_len,
                            const char *tail, size_t tail_len)
{
    struct http_response *r = response_new(status, RESP_FILE);
    char *t = malloc(tail_len ? tail_len : 1);
    if (!r || !t) {
        free(t);
        http_response_free(r);
        close(fd);
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, "cannot create file response");
        return;
    }
    memcpy(t, tail, tail_len);
    r->fd = fd;
    r->off = offset;
    r->flen = length;
    r->owned = t;
    r->data = t;
    r->len = tail_len;
    build_head(req, r, content_type, vary(req, content_type, compressible), encoding,
               (int64_t)(head_len + length + tail_len));
    /* the body's first bytes ride with the head (sent before the file) */
    if (req->method != HTTP_HEAD)
        sb_add(&r->head, head, head_len);
    set_response(req, r);
}

/* ------------------------------------------------------------- streams */

void http_stream_unref(struct http_stream *st)
{
    if (atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    for (size_t i = 0; i < st->qlen; i++)
        free(st->q[(st->qhead + i) % VT_STREAM_QUEUE_BATCHES].data);
    for (size_t i = 0; i < st->nspare; i++)
        free(st->spare[i].data);
    sb_release(&st->pending);
    compress_destroy(st->comp);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st);
}

void http_stream_abort(struct http_stream *st, bool finish)
{
    pthread_mutex_lock(&st->mu);
    if (finish) {
        st->done = true;
        st->failed = true;
    }
    st->gone = true;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

int http_stream_take(struct http_stream *st, struct stream_chunk *out, size_t max,
                     const struct stream_chunk *back, size_t nback, bool *out_failed)
{
    *out_failed = false;
    char *drop[VT_STREAM_QUEUE_BATCHES];
    size_t ndrop = 0;
    pthread_mutex_lock(&st->mu);
    for (size_t i = 0; i < nback; i++) {
        if (st->nspare < VT_STREAM_QUEUE_BATCHES && back[i].cap > 0)
            st->spare[st->nspare++] = back[i];
        else if (ndrop < VT_STREAM_QUEUE_BATCHES)
            drop[ndrop++] = back[i].data;
        else
            free(back[i].data); /* (nback is at most the queue's size) */
    }
    int moved = 0;
    while (st->qlen > 0 && (size_t)moved < max) {
        struct stream_chunk *c = &st->q[st->qhead];
        out[moved++] = *c;
        st->bytes += c->len;
        c->data = NULL;
        st->qhead = (st->qhead + 1) % VT_STREAM_QUEUE_BATCHES;
        st->qlen--;
    }
    if (moved) {
        pthread_cond_signal(&st->cv);
    } else if (st->done) {
        *out_failed = st->failed;
        moved = -1;
    } else {
        st->reader_waiting = true;
    }
    pthread_mutex_unlock(&st->mu);
    for (size_t i = 0; i < ndrop; i++)
        free(drop[i]);
    return moved;
}

/* Queues one chunk (takes `data`, `cap` bytes allocated); blocks while the
 * queue is full. *spare: a sent chunk's buffer handed back by the
 * connection (the caller's now), or NULL. */
static int stream_push(struct http_stream *st, char *data, size_t len, size_t cap,
                       struct stream_chunk *spare)
{
    spare->data = NULL;
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
    c->cap = cap;
    st->qlen++;
    if (st->nspare)
        *spare = st->spare[--st->nspare];
    bool waiting = st->reader_waiting;
    st->reader_waiting = false;
    pthread_mutex_unlock(&st->mu);
    if (waiting)
        http_conn_wake(st->req);
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
    size_t hint = out.len, cap = out.cap, len;
    char *data = sb_detach(&out, &len);
    struct stream_chunk spare;
    int rc = stream_push(st, data, len, cap, &spare);
    if (spare.data && !final && rc == 0 && !st->comp) {
        /* The next chunk goes into a buffer the connection has sent (the
         * producer allocated it: freeing or reusing it stays on this
         * thread's arena). */
        st->pending.buf = spare.data;
        st->pending.cap = spare.cap;
        st->pending.buf[0] = '\0';
    } else {
        free(spare.data);
        /* The next chunk is about as big as this one (a chunk of rows
         * each time): the fresh buffer starts at that size instead of
         * doubling up to it, copying and faulting in pages on the way. */
        if (!final && rc == 0 && !st->comp && hint <= STREAM_PRESIZE_MAX)
            sb_grow(&st->pending, hint + hint / 8);
    }
    return rc;
}

struct http_stream *http_reply_stream(struct http_request *req, int status,
                                      const char *content_type, bool compressible)
{
    struct http_stream *st = calloc(1, sizeof *st);
    struct http_response *r = response_new(status, RESP_STREAM);
    if (!st || !r) {
        free(st);
        free(r);
        return NULL;
    }
    st->req = req;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    sb_init(&st->pending, 0);
    /* The request's reference keeps req->stream valid for as long as the
     * request exists: the producer and the connection may both be done with
     * the stream while the request is still listed (its job not finished). */
    atomic_init(&st->refs, 3);
    enum http_encoding enc =
        choose_encoding(req, content_type, compressible, HTTP_BODY_LEN_UNKNOWN);
    const char *encoding = http_encoding_header_value(enc);
    if (encoding) {
        st->comp = compress_create(enc);
        if (!st->comp)
            encoding = NULL;
    }
    r->stream = st;
    build_head(req, r, content_type, vary(req, content_type, compressible), encoding, -1);
    if (!set_response(req, r)) {
        /* Shutdown answered the request already (the response, freed, took
         * its reference): the producer's writes go nowhere. */
        atomic_store(&st->refs, 1);
        st->gone = true;
        return st;
    }
    req->stream = st;
    /* A started stream is not cut by the request deadline: the client is
     * receiving rows; a stalled client is handled by the stall limit. */
    atomic_store(&req->job.deadline_ms, 0);
    pthread_mutex_lock(&req->reply_mu);
    req->suspended = false;
    pthread_mutex_unlock(&req->reply_mu);
    http_conn_wake(req);
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
    if (st->pending.len < STREAM_CHUNK_BYTES)
        return 0;
    int64_t now = time_mono_us();
    if (st->pending.len < STREAM_CHUNK_MAX_BYTES && now - st->handed_us < STREAM_COALESCE_US)
        return 0;
    st->handed_us = now;
    return stream_flush(st, false);
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
    bool waiting = st->reader_waiting;
    st->reader_waiting = false;
    pthread_mutex_unlock(&st->mu);
    if (waiting)
        http_conn_wake(st->req);
    http_stream_unref(st);
}
