/*
 * Connections: the acceptor and the event loops (see http_internal.h).
 *
 * The acceptor accepts, answers a fast JSON 503 past VT_MAX_CONNECTIONS or
 * past VT_MAX_CONNECTIONS_PER_CLIENT from one address, and hands the socket
 * to one of the loops (round robin). A loop is one thread with its epoll set;
 * it alone reads, parses and writes its connections. Each connection goes
 *
 *   HEAD    reading a request head (wire.c finds its end incrementally and
 *           parses it); the whole head must arrive within
 *           VT_REQUEST_HEAD_TIMEOUT_SECS of the accept or of the previous
 *           response, else a JSON 408 (slow headers, idle keep-alive)
 *   BODY    reading a Content-Length or chunked body into the request
 *           (bounded: 413 as soon as it cannot fit, before a byte of a body
 *           announced too large); "100 Continue" when the client waits for it
 *   WAIT    the handler deferred to a job: nothing is read, only a hang-up
 *           is watched (the client left: its job is cancelled)
 *   WRITE   the response: head and buffer in one writev, a file with
 *           sendfile, a stream chunk by chunk as its producer queues them
 *           (back-pressure: chunks are taken only when the socket took the
 *           previous ones)
 *   LINGER  after an answer that closes while the client may still be
 *           sending (a refused head or body): the write side is shut and
 *           what arrives is read and dropped for VT_HTTP_LINGER_MS, so the
 *           answer is not destroyed by a reset
 *
 * and back to HEAD for the next request (pipelined bytes already read are
 * parsed at once). Every refusal is the JSON error body of the error table
 * with Connection: close: no HTML, one status line, whatever was sent.
 * Connections making no progress for VT_CONNECTION_TIMEOUT_SECS while
 * reading a body or writing are closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "http/http_internal.h"
#include "metrics/metrics.h"
#include "util/log.h"
#include "util/timeutil.h"

#define LOOP_TICK_MS 100          /* deadlines are checked this often */
#define RBUF_START 4096
#define RBUF_MAX (VT_MAX_URL_BYTES + 64 + VT_MAX_HEADER_BYTES + 4096)
#define SENDFILE_SLICE (1u << 20) /* bytes per sendfile call */
#define LINGER_DRAIN_MAX (1u << 20)
#define HTTP_LOOP_SLICE_US 100    /* the loops' scheduling slice (loop_main) */
#define CLIENT_TABLE_SIZE 16384   /* > 2 * VT_MAX_CONNECTIONS: open addressing stays sparse */

enum conn_state { C_HEAD, C_BODY, C_WAIT, C_WRITE, C_LINGER };

struct client_count {
    unsigned char key[17];      /* family byte + address */
    int n;
    bool used;
};

struct http_loop {
    struct http_server *srv;
    int epfd;
    int evfd;                   /* wakes the loop: new connections, wakes, stop */
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;         /* incoming, wakes */
    struct http_conn *incoming;
    struct http_conn *wakes;
    struct http_conn *conns;    /* the loop's own list (no lock) */
    atomic_bool stop;
    atomic_int kicking;         /* http_conn_wake calls between reply_mu and their kick */
    /* The monotonic clock (ms) read once after each epoll_wait: the
     * connections' deadlines (seconds long) count from it, not from a clock
     * read of their own (four to five reads a request before). It runs
     * behind by at most the loop's pass over its events. */
    int64_t now_ms;
};

/* Stream bytes taken from the producer and not yet sent, as slices: each
 * chunk's size line, the chunk itself (its buffer, owned here until sent:
 * the body is never copied on this side), its CRLF, and at the end the
 * last-chunk marker. One sendmsg sends what the socket takes of all of them;
 * sent slices are advanced in place. */
struct sout {
    struct iovec piece[3 * VT_STREAM_QUEUE_BATCHES + 1];
    size_t n, i;                /* slices; the first not fully sent */
    struct stream_chunk owned[VT_STREAM_QUEUE_BATCHES];
    size_t nowned;
    char frame[VT_STREAM_QUEUE_BATCHES][24];
};

struct http_conn {
    struct http_loop *loop;
    int fd;
    int refs;                   /* the loop's + one per queued wake (under loop->mu) */
    unsigned char key[17];
    enum conn_state state;
    bool closed;
    bool queued;                /* in loop->wakes */
    bool close_after;           /* the connection ends after the response */
    bool unread;                /* the client may still be sending (linger before close) */
    char *rbuf;
    size_t rlen, rcap;
    struct http_head_scan scan;
    struct http_request *req;
    uint64_t body_left;         /* Content-Length bytes still to come */
    bool chunked;
    struct http_chunked ch;
    struct http_response *resp; /* being written */
    size_t head_off;
    uint64_t body_off;
    struct sout sout;           /* stream chunks taken, framed, not yet sent */
    bool stream_waiting;        /* the producer has nothing queued yet */
    bool stream_ended;          /* the last chunk is in sout */
    uint32_t events;
    int64_t head_deadline_ms, io_deadline_ms, linger_until_ms;
    uint64_t drained;           /* bytes dropped while lingering */
    struct http_conn *prev, *next, *wake_next;
};

static void process(struct http_conn *c);

/* ------------------------------------------------------------ clients */

static void peer_key(const struct sockaddr_storage *ss, unsigned char key[17])
{
    memset(key, 0, 17);
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        key[0] = 6;
        memcpy(key + 1, &a->sin6_addr, 16);
    } else if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        key[0] = 4;
        memcpy(key + 1, &a->sin_addr, 4);
    }
}

static size_t key_hash(const unsigned char key[17])
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 17; i++)
        h = (h ^ key[i]) * 1099511628211ull;
    return (size_t)h;
}

/* Adds one connection for `key`; false (nothing added) past the cap. Slots
 * whose count fell to 0 stay used until the table is swept: a sweep moves
 * the live entries to a fresh table when no free slot is left in reach. */
static bool clients_add(struct http_server *srv, const unsigned char key[17])
{
    pthread_mutex_lock(&srv->clients_mu);
    bool ok = false;
    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
        size_t mask = srv->clients_cap - 1, h = key_hash(key) & mask;
        struct client_count *free_slot = NULL;
        size_t i;
        for (i = 0; i < 64; i++) {
            struct client_count *e = &srv->clients[(h + i) & mask];
            if (e->used && !memcmp(e->key, key, 17)) {
                if (e->n < VT_MAX_CONNECTIONS_PER_CLIENT) {
                    e->n++;
                    ok = true;
                }
                goto done;
            }
            if (!e->used || e->n == 0) {
                if (!free_slot)
                    free_slot = e;
                if (!e->used)
                    break;
            }
        }
        if (free_slot) {
            memcpy(free_slot->key, key, 17);
            free_slot->used = true;
            free_slot->n = 1;
            ok = true;
            goto done;
        }
        /* Sweep: keep the live entries only. */
        struct client_count *old = srv->clients;
        struct client_count *fresh = calloc(srv->clients_cap, sizeof *fresh);
        if (!fresh)
            break;
        for (size_t k = 0; k < srv->clients_cap; k++) {
            if (!old[k].used || old[k].n == 0)
                continue;
            size_t j = key_hash(old[k].key) & mask;
            while (fresh[j].used)
                j = (j + 1) & mask;
            fresh[j] = old[k];
        }
        srv->clients = fresh;
        free(old);
    }
done:
    pthread_mutex_unlock(&srv->clients_mu);
    return ok;
}

static void clients_remove(struct http_server *srv, const unsigned char key[17])
{
    pthread_mutex_lock(&srv->clients_mu);
    size_t mask = srv->clients_cap - 1, h = key_hash(key) & mask;
    for (size_t i = 0; i < srv->clients_cap; i++) {
        struct client_count *e = &srv->clients[(h + i) & mask];
        if (!e->used)
            break;
        if (!memcmp(e->key, key, 17)) {
            if (e->n > 0)
                e->n--;
            break;
        }
    }
    pthread_mutex_unlock(&srv->clients_mu);
}

/* ------------------------------------------------------------ canned replies */

/* A complete JSON error reply written straight to a socket that carries no
 * request of ours (the acceptor's refusals, the head deadline). */
static void send_canned(struct http_server *srv, int fd, enum vt_err code, const char *message)
{
    char body[256], head[512], id[VT_MAX_REQUEST_ID_BYTES + 1];
    http_server_new_request_id(srv, id);
    int bl = snprintf(body, sizeof body, "{\"error\":\"%s\",\"code\":\"%s\"}", message,
                      vt_err_code(code));
    int status = vt_err_status(code);
    char date[30];
    http_date(time(NULL), date);
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nDate: %s\r\nX-Request-Id: %s\r\n"
                      "Content-Type: application/json\r\nContent-Length: %d\r\n%s"
                      "Connection: close\r\n\r\n",
                      status, http_reason(status), date, id, bl,
                      status == 503 ? "Retry-After: 2\r\n" : "");
    struct iovec iov[2] = {{head, (size_t)hl}, {body, (size_t)bl}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
    if (sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        log_debug("canned %d reply not sent: %s", status, strerror(errno));
}

static void reject(struct http_server *srv, int fd, const char *why)
{
    metrics_connection_rejected();
    send_canned(srv, fd, VT_ERR_UNAVAILABLE, why);
    shutdown(fd, SHUT_WR);
    /* Read what the client already sent so close() ends with FIN, not RST
     * (an RST can destroy the 503 before the client reads it). */
    char buf[4096];
    for (int i = 0; i < 16 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; i++)
        ;
    close(fd);
}

/* ------------------------------------------------------------ loop plumbing */

static void loop_kick(struct http_loop *l)
{
    uint64_t one = 1;
    if (write(l->evfd, &one, sizeof one) < 0 && errno != EAGAIN)
        log_debug("http loop wake: %s", strerror(errno));
}

static void set_events(struct http_conn *c, uint32_t ev)
{
    if (c->events == ev || c->closed)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    if (epoll_ctl(c->loop->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
        c->events = ev;
}

/* Frees the chunks taken and forgets the slices. */
static void sout_clear(struct sout *o)
{
    for (size_t k = 0; k < o->nowned; k++)
        free(o->owned[k].data);
    o->nowned = o->n = o->i = 0;
}

static void sout_piece(struct sout *o, const void *p, size_t len)
{
    o->piece[o->n].iov_base = (void *)p;
    o->piece[o->n].iov_len = len;
    o->n++;
}

/* `sent` bytes went out: skip the slices they covered. */
static void sout_advance(struct sout *o, size_t sent)
{
    while (sent && o->i < o->n) {
        struct iovec *v = &o->piece[o->i];
        if (sent < v->iov_len) {
            v->iov_base = (char *)v->iov_base + sent;
            v->iov_len -= sent;
            return;
        }
        sent -= v->iov_len;
        o->i++;
    }
    while (o->i < o->n && o->piece[o->i].iov_len == 0)
        o->i++;
}

/* Takes what the producer has queued into the slices (chunk-framed when
 * `chunked`); http_stream_take's result. */
static int sout_take(struct sout *o, struct http_stream *st, bool chunked, bool *failed)
{
    /* The sent chunks' buffers go back to the stream with the same lock
     * (the producer refills them), not to free() on this thread. */
    struct stream_chunk back[VT_STREAM_QUEUE_BATCHES];
    size_t nback = o->nowned;
    memcpy(back, o->owned, nback * sizeof *back);
    o->nowned = o->n = o->i = 0;
    struct stream_chunk got[VT_STREAM_QUEUE_BATCHES];
    int k = http_stream_take(st, got, VT_STREAM_QUEUE_BATCHES, back, nback, failed);
    for (int j = 0; j < k; j++) {
        o->owned[o->nowned++] = got[j];
        if (got[j].len == 0)
            continue; /* a zero-size chunk would end the body */
        if (chunked) {
            int fl = snprintf(o->frame[j], sizeof o->frame[j], "%zx\r\n", got[j].len);
            sout_piece(o, o->frame[j], (size_t)fl);
        }
        sout_piece(o, got[j].data, got[j].len);
        if (chunked)
            sout_piece(o, "\r\n", 2);
    }
    return k;
}

static void conn_free(struct http_conn *c)
{
    free(c->rbuf);
    sout_clear(&c->sout);
    free(c);
}

/* Drops a reference (loop thread only). */
static void conn_unref(struct http_conn *c)
{
    pthread_mutex_lock(&c->loop->mu);
    bool last = --c->refs == 0;
    pthread_mutex_unlock(&c->loop->mu);
    if (last)
        conn_free(c);
}

/* Kicks the loop only after reply_mu is released: the loop woken by the
 * kick takes the response under reply_mu at once (take_handoffs), and a
 * waker still holding it then (often preempted by the loop it woke, whose
 * slice is the shortest) made the loop block until the waker ran again:
 * 289 such waits in 8 s of the open-loop mix, up to 5.3 ms, stalling every
 * connection of that loop. The connection is queued with a reference under
 * the loop's lock, so it outlives the kick; `kicking`, counted before
 * reply_mu is released, keeps a stopping loop (and the server freeing it)
 * until the kick is done (loop_main's end). */
void http_conn_wake(struct http_request *req)
{
    struct http_loop *kick = NULL;
    pthread_mutex_lock(&req->reply_mu);
    struct http_conn *c = req->conn;
    if (c) {
        struct http_loop *l = c->loop;
        pthread_mutex_lock(&l->mu);
        if (!c->queued) {
            c->queued = true;
            c->refs++;
            c->wake_next = l->wakes;
            l->wakes = c;
            kick = l;
            atomic_fetch_add(&l->kicking, 1);
        }
        pthread_mutex_unlock(&l->mu);
    }
    pthread_mutex_unlock(&req->reply_mu);
    if (kick) {
        loop_kick(kick);
        atomic_fetch_sub(&kick->kicking, 1);
    }
}

/* Closes the connection; its request (if any) is completed with `outcome`. */
static void conn_close(struct http_conn *c, const char *outcome)
{
    if (c->closed)
        return;
    c->closed = true;
    struct http_server *srv = c->loop->srv;
    if (c->req) {
        /* Whatever the reason, nobody reads its answer: its job stops. */
        http_request_client_gone(c->req);
        if (c->resp && c->resp->kind == RESP_STREAM)
            c->req->bytes_out = c->resp->stream->bytes;
        http_request_complete(c->req, outcome);
        c->req = NULL;
    }
    http_response_free(c->resp);
    c->resp = NULL;
    epoll_ctl(c->loop->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    clients_remove(srv, c->key);
    atomic_fetch_sub(&srv->n_conns, 1);
    if (c->prev)
        c->prev->next = c->next;
    else
        c->loop->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    conn_unref(c);
}

/* ------------------------------------------------------------ writing */

/* Reading a body or writing an answer: VT_CONNECTION_TIMEOUT_SECS more from
 * the loop's clock each time bytes move. */
static void extend_io_deadline(struct http_conn *c)
{
    c->io_deadline_ms = c->loop->now_ms + (int64_t)VT_CONNECTION_TIMEOUT_SECS * 1000;
}

static void start_write(struct http_conn *c, struct http_response *r)
{
    c->resp = r;
    c->head_off = 0;
    c->body_off = 0;
    sout_clear(&c->sout);
    c->stream_waiting = false;
    c->stream_ended = false;
    c->state = C_WRITE;
    extend_io_deadline(c);
    if (r->close)
        c->close_after = true;
    if (c->req->method == HTTP_HEAD && r->kind == RESP_STREAM)
        http_stream_abort(r->stream, false); /* no body: the producer stops */
}

/* Takes the request's response if there is one to write. */
static bool take_response(struct http_conn *c)
{
    struct http_response *r = http_request_take_response(c->req);
    if (!r)
        return false;
    start_write(c, r);
    return true;
}

/* Sends what it can. 1: the response is out; 0: wait (socket full, or a
 * stream waiting for its producer); -1: the connection must close. */
static int write_some(struct http_conn *c)
{
    struct http_response *r = c->resp;
    bool body = c->req->method != HTTP_HEAD && r->status >= 200 && r->status != 204 &&
                r->status != 304;
    for (;;) {
        ssize_t n;
        if (c->head_off < r->head.len) {
            struct iovec iov[2] = {{r->head.buf + c->head_off, r->head.len - c->head_off},
                                   {NULL, 0}};
            int cnt = 1;
            if (body && r->kind == RESP_BUFFER && c->body_off < r->len) {
                iov[1].iov_base = (void *)(r->data + c->body_off);
                iov[1].iov_len = r->len - (size_t)c->body_off;
                cnt = 2;
            }
            struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
            /* A file's head waits for its first bytes (MSG_MORE; the
             * sendfile below pushes them): head and body leave in one
             * segment, so a small range (a Parquet footer) is one packet. */
            int more = body && r->kind == RESP_FILE && r->flen > 0 ? MSG_MORE : 0;
            n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT | more);
            if (n < 0)
                goto fail;
            size_t hrest = r->head.len - c->head_off;
            if ((size_t)n <= hrest) {
                c->head_off += (size_t)n;
            } else {
                c->head_off = r->head.len;
                c->body_off += (size_t)n - hrest;
            }
            extend_io_deadline(c);
            continue;
        }
        if (!body)
            return 1;
        switch (r->kind) {
        case RESP_BUFFER:
            if (c->body_off >= r->len) {
                c->req->bytes_out = r->len;
                return 1;
            }
            n = send(c->fd, r->data + c->body_off, r->len - (size_t)c->body_off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0)
                goto fail;
            c->body_off += (uint64_t)n;
            break;
        case RESP_FILE: {
            if (c->body_off >= r->flen) { /* then the tail, if any */
                uint64_t t = c->body_off - r->flen;
                if (t >= r->len) {
                    c->req->bytes_out = r->flen + r->len;
                    return 1;
                }
                n = send(c->fd, r->data + t, r->len - (size_t)t, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0)
                    goto fail;
                c->body_off += (uint64_t)n;
                break;
            }
            uint64_t left = r->flen - c->body_off;
            off_t off = (off_t)(r->off + c->body_off);
            n = sendfile(c->fd, r->fd, &off, left < SENDFILE_SLICE ? (size_t)left : SENDFILE_SLICE);
            if (n < 0)
                goto fail;
            if (n == 0)
                return -1; /* the file is shorter than it was */
            c->body_off += (uint64_t)n;
            break;
        }
        case RESP_STREAM:
            if (c->sout.i < c->sout.n) {
                struct msghdr mh = {.msg_iov = c->sout.piece + c->sout.i,
                                    .msg_iovlen = c->sout.n - c->sout.i};
                n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0)
                    goto fail;
                sout_advance(&c->sout, (size_t)n);
                break;
            }
            if (c->stream_ended) {
                sout_clear(&c->sout);
                c->req->bytes_out = r->stream->bytes;
                return 1;
            }
            bool failed;
            int got = sout_take(&c->sout, r->stream, r->chunked, &failed);
            if (got == 0) {
                c->stream_waiting = true;
                return 0;
            }
            if (got < 0) {
                if (failed)
                    return -1; /* the client sees a truncated response */
                if (r->chunked)
                    sout_piece(&c->sout, "0\r\n\r\n", 5);
                else
                    c->close_after = true;
                c->stream_ended = true;
            }
            break;
        }
        extend_io_deadline(c);
        continue;
    fail:
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno == EINTR)
            continue;
        return -1;
    }
}

/* ------------------------------------------------------------ requests */

/* Answers the current request (made when the head did not even parse) with
 * an error and closes the connection after it. */
static void refuse(struct http_conn *c, enum vt_err code, const char *msg)
{
    if (!c->req) {
        c->req = http_request_new(c->loop->srv, c, c->fd);
        if (!c->req) {
            conn_close(c, "error");
            return;
        }
    }
    c->req->keep_alive = false;
    c->unread = true;
    c->close_after = true;
    http_request_label_route(c->req);
    http_add_header(c->req, "Connection", "close");
    http_reply_error(c->req, code, msg);
    if (!take_response(c))
        conn_close(c, "error");
}

/* The request is complete: run its handler. */
static void run(struct http_conn *c)
{
    c->state = C_WAIT;
    http_request_dispatch(c->req);
    if (!take_response(c))
        set_events(c, EPOLLRDHUP); /* a job will answer: watch for the client leaving */
}

static void send_continue(struct http_conn *c)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    ssize_t n = send(c->fd, cont, sizeof cont - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n != (ssize_t)(sizeof cont - 1))
        c->close_after = true; /* cannot happen on a fresh socket; never half a line */
}

/* The head is in rbuf[0..end): a request. */
static void got_head(struct http_conn *c, size_t end)
{
    struct http_server *srv = c->loop->srv;
    c->head_deadline_ms = 0;
    struct http_request *req = http_request_new(srv, c, c->fd);
    if (!req) {
        conn_close(c, "error");
        return;
    }
    c->req = req;
    /* The head is parsed in a copy in the request's arena: the fields live as
     * long as the request, whatever happens to the read buffer. They are
     * parsed into room for the most a head may hold, on the stack, and only
     * the ones sent are kept (in the arena's first block with the head: the
     * whole array would take another block, malloc and free, per request). */
    char *copy = arena_alloc(&req->arena, end + 1);
    struct http_field fields[VT_MAX_HEADER_FIELDS];
    const char *msg = NULL;
    enum vt_err rc = copy ? VT_ERR_OK : VT_ERR_OUT_OF_MEMORY;
    if (rc == VT_ERR_OK) {
        memcpy(copy, c->rbuf, end);
        copy[end] = '\0';
        rc = http_head_parse(copy, end, &c->scan, fields, &req->head, &msg);
        /* (a refused head keeps the fields read before its error, as ever) */
        struct http_field *kept = arena_alloc(&req->arena, req->head.n_fields * sizeof *kept);
        if (kept)
            memcpy(kept, fields, req->head.n_fields * sizeof *kept);
        else if (rc == VT_ERR_OK)
            rc = VT_ERR_OUT_OF_MEMORY;
        req->head.fields = kept; /* never the stack's */
        if (!kept)
            req->head.n_fields = 0;
    }
    c->rlen -= end;
    memmove(c->rbuf, c->rbuf + end, c->rlen);
    if (rc == VT_ERR_OK)
        rc = http_request_accept_head(req, &msg);
    if (rc != VT_ERR_OK) {
        refuse(c, rc, msg);
        return;
    }
    c->chunked = req->head.chunked;
    c->body_left = req->head.has_length ? req->head.content_length : 0;
    memset(&c->ch, 0, sizeof c->ch);
    if (!c->chunked && c->body_left == 0) {
        run(c);
        return;
    }
    /* A client that waits for 100 Continue gets it unless the body is
     * already here. */
    if (req->head.expect_continue && c->rlen == 0)
        send_continue(c);
    c->state = C_BODY;
    extend_io_deadline(c);
}

/* Body bytes in rbuf go to the request. */
static void feed_body(struct http_conn *c)
{
    struct http_request *req = c->req;
    size_t used = 0;
    if (c->chunked) {
        enum vt_err code;
        const char *msg;
        enum http_parse p =
            http_chunked_feed(&c->ch, c->rbuf, c->rlen, &used, &req->body, &code, &msg);
        c->rlen -= used;
        memmove(c->rbuf, c->rbuf + used, c->rlen);
        if (p == HTTP_PARSE_ERROR) {
            refuse(c, code, code == VT_ERR_BODY_TOO_LARGE ? NULL : msg);
            return;
        }
        if (p == HTTP_PARSE_DONE)
            run(c);
        return;
    }
    size_t take = c->rlen < c->body_left ? c->rlen : (size_t)c->body_left;
    if (sb_add(&req->body, c->rbuf, take) != 0) {
        refuse(c, VT_ERR_BODY_TOO_LARGE, NULL);
        return;
    }
    c->body_left -= take;
    c->rlen -= take;
    memmove(c->rbuf, c->rbuf + take, c->rlen);
    if (c->body_left == 0)
        run(c);
}

/* The response is out: the request is done; the connection reads the next
 * one, or closes. */
static void finished(struct http_conn *c)
{
    http_request_complete(c->req, NULL);
    c->req = NULL;
    http_response_free(c->resp);
    c->resp = NULL;
    if (c->close_after) {
        if (c->unread || c->rlen) {
            /* The client may still be sending: read and drop it for a while,
             * so our answer is not destroyed by a reset. */
            shutdown(c->fd, SHUT_WR);
            c->state = C_LINGER;
            c->linger_until_ms = c->loop->now_ms + VT_HTTP_LINGER_MS;
            set_events(c, EPOLLIN);
            return;
        }
        conn_close(c, NULL);
        return;
    }
    c->state = C_HEAD;
    memset(&c->scan, 0, sizeof c->scan);
    c->head_deadline_ms = c->loop->now_ms + (int64_t)VT_REQUEST_HEAD_TIMEOUT_SECS * 1000;
}

/* Moves the connection as far as it can go now. */
static void process(struct http_conn *c)
{
    while (!c->closed) {
        switch (c->state) {
        case C_HEAD: {
            if (c->rlen == 0) {
                set_events(c, EPOLLIN);
                return;
            }
            size_t end;
            enum vt_err code;
            const char *msg;
            enum http_parse p = http_head_find(&c->scan, c->rbuf, c->rlen, &end, &code, &msg);
            if (p == HTTP_PARSE_MORE) {
                set_events(c, EPOLLIN);
                return;
            }
            if (p == HTTP_PARSE_ERROR)
                refuse(c, code, msg);
            else
                got_head(c, end);
            break;
        }
        case C_BODY:
            if (c->rlen == 0) {
                set_events(c, EPOLLIN);
                return;
            }
            feed_body(c);
            break;
        case C_WAIT:
            return;
        case C_WRITE: {
            int w = write_some(c);
            if (w < 0) {
                conn_close(c, c->resp && c->resp->kind == RESP_STREAM ? "error" : "client-abort");
                return;
            }
            if (w == 0) {
                /* Waiting for the socket: a hang-up shows as an error on
                 * send. Waiting for a producer: only a hang-up is news. */
                set_events(c, c->stream_waiting ? EPOLLRDHUP : EPOLLOUT);
                return;
            }
            finished(c);
            break;
        }
        case C_LINGER:
            return;
        }
    }
}

/* Reads what the socket has. False when the connection closed. */
static bool read_input(struct http_conn *c)
{
    for (;;) {
        if (c->state == C_LINGER) {
            char drop[16384];
            ssize_t n = recv(c->fd, drop, sizeof drop, MSG_DONTWAIT);
            if (n > 0 && (c->drained += (uint64_t)n) < LINGER_DRAIN_MAX)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return true;
            conn_close(c, NULL);
            return false;
        }
        if (c->rlen == c->rcap) {
            if (c->rcap >= RBUF_MAX)
                return true; /* a full head is refused by the scan before this */
            size_t cap = c->rcap ? c->rcap * 2 : RBUF_START;
            if (cap > RBUF_MAX)
                cap = RBUF_MAX;
            char *nb = realloc(c->rbuf, cap);
            if (!nb) {
                conn_close(c, "error");
                return false;
            }
            c->rbuf = nb;
            c->rcap = cap;
        }
        size_t room = c->rcap - c->rlen;
        ssize_t n = recv(c->fd, c->rbuf + c->rlen, room, MSG_DONTWAIT);
        if (n > 0) {
            c->rlen += (size_t)n;
            if (c->state == C_BODY)
                extend_io_deadline(c);
            /* Parse before reading more: a body (or the next request) is
             * taken as it comes, the buffer stays one head large. */
            process(c);
            if (c->closed)
                return false;
            if (c->state != C_HEAD && c->state != C_BODY && c->state != C_LINGER)
                return true;
            /* A short read emptied the socket: what comes later, epoll
             * (level-triggered) reports. Reading again here would almost
             * always be a recv that fails with EAGAIN (a client that waits
             * for its answer before it sends more): one syscall a request
             * of three (bench line 3 under wrk: 1.94 recv a request). */
            if ((size_t)n < room)
                return true;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n < 0 && errno == EINTR)
            continue;
        /* End of input (or an error) before a complete request. */
        conn_close(c, c->req ? "client-abort" : NULL);
        return false;
    }
}

/* A wake from another thread: a reply was installed, a stream moved. */
static void woken(struct http_conn *c)
{
    if (c->closed)
        return;
    if (c->state == C_WAIT) {
        if (take_response(c))
            process(c);
        return;
    }
    if (c->state == C_WRITE && c->stream_waiting) {
        c->stream_waiting = false;
        process(c);
    }
}

static void handle_event(struct http_conn *c, uint32_t ev);

/* An epoll event. Closing the connection drops the loop's reference; this
 * one keeps `c` alive until the handling (which checks c->closed on the
 * way out) is done. */
static void on_event(struct http_conn *c, uint32_t ev)
{
    pthread_mutex_lock(&c->loop->mu);
    c->refs++;
    pthread_mutex_unlock(&c->loop->mu);
    handle_event(c, ev);
    conn_unref(c);
}

static void handle_event(struct http_conn *c, uint32_t ev)
{
    if (ev & EPOLLERR) {
        conn_close(c, c->req ? "client-abort" : NULL);
        return;
    }
    bool reading = c->state == C_HEAD || c->state == C_BODY || c->state == C_LINGER;
    if (!reading && ((ev & EPOLLHUP) || ((ev & EPOLLRDHUP) &&
                                         (c->state == C_WAIT || c->stream_waiting)))) {
        /* Nothing is read now, so a hang-up means the client left: its job
         * is cancelled (DuckDB interrupted), its stream ends. */
        log_debug("request %s: the client left while its request was suspended",
                  c->req ? c->req->id : "-");
        conn_close(c, "client-abort");
        return;
    }
    if ((ev & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) && reading) {
        if (!read_input(c))
            return;
    }
    if ((ev & EPOLLOUT) && c->state == C_WRITE)
        process(c);
}

static void check_deadlines(struct http_loop *l, int64_t now)
{
    struct http_conn *next;
    for (struct http_conn *c = l->conns; c; c = next) {
        next = c->next;
        switch (c->state) {
        case C_HEAD:
            if (c->head_deadline_ms && now >= c->head_deadline_ms) {
                /* Slow headers, or an idle keep-alive connection. */
                c->head_deadline_ms = 0;
                send_canned(l->srv, c->fd, VT_ERR_REQUEST_HEAD_TIMEOUT,
                            "the request head did not arrive in time");
                shutdown(c->fd, SHUT_WR);
                c->state = C_LINGER;
                c->linger_until_ms = now + VT_HTTP_LINGER_MS;
                set_events(c, EPOLLIN);
            }
            break;
        case C_BODY:
            if (now >= c->io_deadline_ms)
                conn_close(c, "timeout");
            break;
        case C_WRITE:
            if (!c->stream_waiting && now >= c->io_deadline_ms)
                conn_close(c, "timeout");
            break;
        case C_LINGER:
            if (now >= c->linger_until_ms)
                conn_close(c, NULL);
            break;
        case C_WAIT:
            break;
        }
    }
}

static void adopt(struct http_loop *l, struct http_conn *c)
{
    c->next = l->conns;
    if (l->conns)
        l->conns->prev = c;
    l->conns = c;
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
    c->events = EPOLLIN;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, c->fd, &e) != 0) {
        log_debug("http loop: epoll add: %s", strerror(errno));
        conn_close(c, NULL);
    }
}

/* Takes what other threads handed this loop: new connections (adopted) and
 * connections to look at again (looked at when `run`, else only released,
 * as when stopping). */
static void take_handoffs(struct http_loop *l, bool run)
{
    pthread_mutex_lock(&l->mu);
    struct http_conn *in = l->incoming, *wakes = l->wakes;
    l->incoming = NULL;
    l->wakes = NULL;
    for (struct http_conn *w = wakes; w; w = w->wake_next)
        w->queued = false;
    pthread_mutex_unlock(&l->mu);
    while (in) {
        struct http_conn *c = in;
        in = c->next;
        c->next = NULL;
        adopt(l, c);
    }
    while (wakes) {
        struct http_conn *c = wakes;
        wakes = c->wake_next;
        if (run)
            woken(c);
        conn_unref(c);
    }
}

static void *loop_main(void *arg)
{
    struct http_loop *l = arg;
    pthread_setname_np(pthread_self(), "http-loop");
    /* A loop's work is microseconds per event (an inline index lookup, a
     * head, a write): the shortest slice the kernel gives, so that a loop
     * that wakes runs before the workers' and DuckDB's CPU-bound threads
     * finish their slices (README.md, "Fair latency under mixed load").
     * Its share of the CPU does not change. */
    if (!eng_thread_slice(HTTP_LOOP_SLICE_US))
        log_debug("http loop: the kernel keeps no scheduling slice of its own for it");
    struct epoll_event evs[128];
    int64_t now = time_mono_ms();
    int64_t next_tick = now + LOOP_TICK_MS;
    l->now_ms = now;
    while (!atomic_load(&l->stop)) {
        /* `now` was read after the last pass's work */
        int timeout = next_tick > now ? (int)(next_tick - now) : 0;
        int n = epoll_wait(l->epfd, evs, 128, timeout);
        if (n < 0 && errno != EINTR) {
            log_error("http loop: epoll_wait: %s", strerror(errno));
            break;
        }
        l->now_ms = time_mono_ms();
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t v;
                if (read(l->evfd, &v, sizeof v) < 0 && errno != EAGAIN)
                    log_debug("http loop: eventfd: %s", strerror(errno));
                continue;
            }
            on_event(evs[i].data.ptr, evs[i].events);
        }
        take_handoffs(l, true);
        now = time_mono_ms();
        if (now >= next_tick) {
            check_deadlines(l, now);
            next_tick = now + LOOP_TICK_MS;
        }
    }
    /* Stopping: every connection closes (requests complete as shutdown). */
    take_handoffs(l, false);
    while (l->conns)
        conn_close(l->conns, "shutdown");
    /* Every request has let go of its connection (conn_close takes each
     * one's reply_mu), so no new kick can start; one already counted is
     * a few instructions from done. */
    while (atomic_load(&l->kicking) > 0)
        sched_yield();
    return NULL;
}

/* ------------------------------------------------------------ acceptor */

static void hand_over(struct http_server *srv, int fd, const struct sockaddr_storage *ss)
{
    unsigned char key[17];
    peer_key(ss, key);
    if (!clients_add(srv, key)) {
        reject(srv, fd, "too many connections from this address; retry later");
        return;
    }
    struct http_conn *c = calloc(1, sizeof *c);
    if (!c) {
        clients_remove(srv, key);
        close(fd);
        return;
    }
    int one = 1;
    if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct http_loop *l = &srv->loops[atomic_fetch_add(&srv->next_loop, 1) % srv->n_loops];
    c->loop = l;
    c->fd = fd;
    c->refs = 1;
    memcpy(c->key, key, 17);
    c->state = C_HEAD;
    c->head_deadline_ms = time_mono_ms() + (int64_t)VT_REQUEST_HEAD_TIMEOUT_SECS * 1000;
    atomic_fetch_add(&srv->n_conns, 1);
    pthread_mutex_lock(&l->mu);
    c->next = l->incoming;
    l->incoming = c;
    pthread_mutex_unlock(&l->mu);
    loop_kick(l);
}

static void *acceptor_main(void *arg)
{
    struct http_server *srv = arg;
    pthread_setname_np(pthread_self(), "http-accept");
    struct pollfd pfd[2] = {{.fd = srv->listen_fd, .events = POLLIN},
                            {.fd = srv->wake_pipe[0], .events = POLLIN}};
    int64_t last_warn = 0;
    while (!atomic_load(&srv->acceptor_stop)) {
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
                reject(srv, fd, "too many connections; retry later");
                continue;
            }
            hand_over(srv, fd, &ss);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ start, stop */

bool http_conns_start(struct http_server *srv, struct vt_error *err)
{
    srv->clients_cap = CLIENT_TABLE_SIZE;
    srv->clients = calloc(srv->clients_cap, sizeof *srv->clients);
    srv->n_loops = (size_t)eng_cpu_count();
    if (srv->n_loops < 1)
        srv->n_loops = 1;
    srv->loops = calloc(srv->n_loops, sizeof *srv->loops);
    if (!srv->clients || !srv->loops) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return false;
    }
    for (size_t i = 0; i < srv->n_loops; i++) {
        struct http_loop *l = &srv->loops[i];
        l->srv = srv;
        pthread_mutex_init(&l->mu, NULL);
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        l->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
        if (l->epfd < 0 || l->evfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &e) != 0 ||
            pthread_create(&l->thread, NULL, loop_main, l) != 0) {
            vt_error_set(err, VT_ERR_INTERNAL, "cannot start the HTTP loops: %s",
                         strerror(errno));
            return false;
        }
        l->started = true;
    }
    srv->acceptor_started = pthread_create(&srv->acceptor, NULL, acceptor_main, srv) == 0;
    if (!srv->acceptor_started) {
        vt_error_set(err, VT_ERR_INTERNAL, "cannot start the HTTP acceptor");
        return false;
    }
    return true;
}

void http_conns_stop_accepting(struct http_server *srv)
{
    atomic_store(&srv->acceptor_stop, true);
    if (srv->wake_pipe[1] >= 0 && write(srv->wake_pipe[1], "x", 1) < 0)
        log_debug("wake pipe: %s", strerror(errno));
    if (srv->acceptor_started) {
        pthread_join(srv->acceptor, NULL);
        srv->acceptor_started = false;
    }
    if (srv->listen_fd >= 0) {
        close(srv->listen_fd);
        srv->listen_fd = -1;
    }
}

void http_conns_stop(struct http_server *srv)
{
    http_conns_stop_accepting(srv);
    for (size_t i = 0; srv->loops && i < srv->n_loops; i++) {
        struct http_loop *l = &srv->loops[i];
        if (!l->started)
            continue;
        atomic_store(&l->stop, true);
        loop_kick(l);
        pthread_join(l->thread, NULL);
        l->started = false;
    }
    for (size_t i = 0; srv->loops && i < srv->n_loops; i++) {
        struct http_loop *l = &srv->loops[i];
        if (l->epfd > 0)
            close(l->epfd);
        if (l->evfd > 0)
            close(l->evfd);
        pthread_mutex_destroy(&l->mu);
    }
    free(srv->loops);
    srv->loops = NULL;
    free(srv->clients);
    srv->clients = NULL;
}
