/*
 * The HTTP server: our own HTTP/1.1 engine (conn.c over the wire.c parser;
 * libmicrohttpd is gone, see server.c for why).
 *
 * Event-loop threads parse requests, read bodies (bounded by
 * server.max_body_bytes, 413 before any handler runs) and route them. A handler
 * runs on a loop thread, so it must not block: it either replies at once
 * (probes, status) or defers its work to an engine pool with http_defer(); the
 * connection waits, the job runs on a worker of that pool and replies from
 * there, which wakes the connection's loop.
 *
 * Replies are one of: a buffer (JSON, compressed by Accept-Encoding when
 * allowed), a file range (sent with sendfile), or a stream that a worker
 * produces while the client consumes it, through a bounded queue (flat memory,
 * back-pressure: the worker waits when the client reads slowly).
 *
 * Every error body is {"error": "...", "code": "..."} (docs/architecture.md, "Errors").
 */
#ifndef VT_HTTP_SERVER_H
#define VT_HTTP_SERVER_H

#include <duckdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth/auth.h"
#include "config/config.h"
#include "engine/engine.h"
#include "http/encoding.h"
#include "util/arena.h"
#include "util/errors.h"
#include "util/strbuf.h"

enum http_method {
    HTTP_GET = 1 << 0,
    HTTP_HEAD = 1 << 1,
    HTTP_POST = 1 << 2,
    HTTP_PUT = 1 << 3,
    HTTP_DELETE = 1 << 4,
    HTTP_PATCH = 1 << 5,
    HTTP_OPTIONS = 1 << 6,
    HTTP_OTHER = 1 << 7,
};

struct http_request;
struct http_server;
struct http_stream;

typedef void (*http_handler_fn)(struct http_request *req);
/* Runs on a worker thread of the pool it was deferred to. It gets no DuckDB
 * connection: what runs DuckDB below the front ends (src/exec, the catalog)
 * takes the worker's own (eng_worker_connection). */
typedef void (*http_job_fn)(struct http_request *req);

#define HTTP_MAX_PARAMS 2

/* Route flags. */
#define HTTP_ROUTE_ROOT 1u      /* mounted outside server.prefix (metrics) */

/* One row of the route table. Paths are matched segment by segment after
 * splitting at '/' and percent-decoding each segment (so %2F is part of a
 * segment, never a separator). A literal segment wins over {x}, and {x} over
 * {*}, whatever the order of the table. */
struct http_route {
    unsigned methods;           /* bit set of enum http_method; GET implies HEAD */
    const char *pattern;        /* "/api/v1/datasets/{name}/query": {x} matches one
                                 * segment; a last {*} matches the rest (static assets:
                                 * "" or "a/b.css"; no "." or ".." segments) */
    http_handler_fn handler;
    enum auth_perm perm;        /* checked by the authorize hook before the handler */
    const char *description;    /* one line, for docs and the OpenAPI document */
    unsigned flags;             /* HTTP_ROUTE_* */
};

/* The authorization hook: runs once per request before the route's handler.
 * Returns VT_ERR_OK to run it, or the error to answer with (*out_message may
 * give the text); VT_ERR_NOT_FOUND hides the route (answered exactly as if it
 * did not exist, also for the 405 check). */
typedef enum vt_err (*http_authorize_fn)(struct http_request *req, const struct http_route *route,
                                         const char **out_message);

struct http_server_options {
    const struct vt_config *cfg;
    /* The routes (copied at start, strings included, so the caller may build
     * them on the stack or from the config). */
    const struct http_route *routes;
    size_t n_routes;
    /* More routes outside server.prefix (as if flagged HTTP_ROUTE_ROOT); may be NULL. */
    const struct http_route *root_routes;
    size_t n_root_routes;
    http_authorize_fn authorize; /* NULL: every route is open */
    void *app;                  /* handed to handlers through http_app() */
};

struct http_server *http_server_start(const struct http_server_options *opts,
                                      struct vt_error *err);
/* The port actually bound (useful with port 0). */
int http_server_port(const struct http_server *srv);
/* Stops accepting, lets in-flight requests finish for up to grace_ms, then
 * cancels every job (interrupting its DuckDB query), answers every request
 * still waiting 503 (streams end truncated), resumes and closes every
 * connection, and stops. Returns within grace_ms plus a few seconds whatever
 * the jobs do; a job that has not returned by then keeps the server object
 * (it is not freed) and the caller should exit without waiting for it. */
bool http_server_stop(struct http_server *srv, int64_t grace_ms, struct eng_pool *pool_to_interrupt);
/* The routes the server serves (sorted in match order). */
size_t http_server_routes(const struct http_server *srv, const struct http_route **out_routes);
/* Requests received and not yet completed. */
int http_server_in_flight(struct http_server *srv);

/* ----------------------------------------------------------- requests */

void *http_app(const struct http_request *req);
struct http_server *http_req_server(const struct http_request *req);
enum http_method http_req_method(const struct http_request *req);
const char *http_req_path(const struct http_request *req);     /* without the prefix */
const char *http_req_route(const struct http_request *req);    /* matched pattern */
const char *http_req_param(const struct http_request *req, size_t i); /* {x} captures */
/* A request field's value; a field sent on several lines comes back as the
 * lines joined with ", " (RFC 9110 §5.3), in the request's arena. */
const char *http_req_header(const struct http_request *req, const char *name);
/* The same, with the value's length in *out_len (0 when absent): the parser
 * knows it, a bearer token need not be measured again. */
const char *http_req_header_n(const struct http_request *req, const char *name, size_t *out_len);
const char *http_req_query(const struct http_request *req, const char *key);
/* The same, with the decoded value's length (a %00 in it is a NUL byte). */
const char *http_req_query_n(const struct http_request *req, const char *key, size_t *out_len);
const char *http_req_body(const struct http_request *req, size_t *out_len);
struct arena *http_req_arena(struct http_request *req);
/* The request id: the client's X-Request-Id when it is a sane token (1 to
 * VT_MAX_REQUEST_ID_BYTES characters of [A-Za-z0-9._:@+=/-]), else one of
 * ours (<process tag>-<counter>, unique per process start). Echoed in the
 * X-Request-Id response header, the access line and every log line written
 * while the request's handler or job runs. */
const char *http_req_id(const struct http_request *req);
/* Microseconds the request's job waited in the pool queue (0 before it ran
 * or without a job): the "queue" entry of Server-Timing. */
int64_t http_req_queue_us(const struct http_request *req);
/* True when `id` is a request id we accept from a client. */
bool http_request_id_ok(const char *id);
/* Monotonic ms deadline from server.request_timeout_ms (0 = none). */
int64_t http_req_deadline(const struct http_request *req);
/* The Origin rule of http/hosts.h: true when the request has no Origin or
 * one the server allows (loopback, server.allowed_origins, `extra` (a
 * route's own list, may be NULL), or a listed host's own origin). Routes a
 * browser page could call with side effects (MCP) answer 403 otherwise. The
 * Host rule runs for every request before routing (421 host_not_allowed). */
bool http_req_origin_ok(const struct http_request *req, const struct strvec *extra);
/* True when the request carries Content-Type: application/json (parameters allowed). */
bool http_req_is_json(const struct http_request *req);

/* A handler's own per-request state (lives as long as the request). */
void http_req_set_user(struct http_request *req, void *user);
void *http_req_user(const struct http_request *req);
/* Runs with the user pointer when the request is freed (after its job, if
 * any): releases what a handler pinned for a job that may never run (a job
 * cancelled or timed out while queued is skipped). */
void http_req_on_release(struct http_request *req, void (*fn)(void *user));

/* Adds a response header to the eventual reply: the value is copied, the
 * name is not (a string that outlives the request: every caller passes a
 * literal, and copying it was ~80 instructions a header). */
void http_add_header(struct http_request *req, const char *name, const char *value);

/* ------------------------------------------------------------- replies
 * Exactly one reply per request, from the handler or from its job. */

/* Gives `body` (empty, not yet grown) this thread's spare reply buffer: the
 * body of a small buffered reply this thread released (1-4 KiB). False when
 * there is none (the caller grows it as before). A point lookup's page then
 * costs no malloc/free (~550 instructions; bench/callgrind.py). */
bool http_take_spare_body(struct strbuf *body);

/* Replies with a JSON body; takes the strbuf's memory. */
void http_reply_json(struct http_request *req, int status, struct strbuf *body);
/* Replies with any buffered body; takes the strbuf's memory. */
void http_reply_buffer(struct http_request *req, int status, const char *content_type,
                       struct strbuf *body, bool compressible);
/* Replies with bytes that outlive the server (embedded UI assets): sent
 * without a copy and never compressed here (a caller sending a precompressed
 * form adds Content-Encoding itself). content_type NULL sends none (304). */
void http_reply_static(struct http_request *req, int status, const char *content_type,
                       const void *data, size_t len);
/* The standard error body; `message` NULL uses the code's default. */
void http_reply_error(struct http_request *req, enum vt_err code, const char *message);
void http_reply_vterr(struct http_request *req, const struct vt_error *err);
/* Sends `length` bytes of an open file from `offset` (the fd is closed after). */
void http_reply_file(struct http_request *req, int status, const char *content_type, int fd,
                     uint64_t offset, uint64_t length);
/* The content coding a buffered reply of this type and length would get per
 * the request's Accept-Encoding and server.compress (HTTP_ENC_IDENTITY: none),
 * and whether gzip is as welcome to the client as any coding it takes (q > 0,
 * by name or "*", none higher: "gzip, deflate, br, zstd" yes, "gzip;q=0.5,
 * zstd" no): a reply whose bytes are ready in gzip (a file) may then send
 * them instead of compressing per request. */
enum http_encoding http_reply_encoding(struct http_request *req, const char *content_type,
                                       bool compressible, uint64_t length);
bool http_req_takes_gzip(struct http_request *req);
/* The same as http_reply_file, framed: `head` bytes before the file's and
 * `tail` bytes after them (both copied), one body of their sum, sent as it
 * is with Content-Encoding `encoding` (NULL: none; the bytes are already in
 * it). `compressible` only decides the Vary field, as for a buffered reply
 * of the same type. */
void http_reply_file_framed(struct http_request *req, int status, const char *content_type,
                            bool compressible, const char *encoding, int fd, uint64_t offset,
                            uint64_t length, const char *head, size_t head_len,
                            const char *tail, size_t tail_len);

/* Starts a streamed reply (chunked). Only from a job. `compressible` lets the
 * stream be compressed per Accept-Encoding. The request deadline no longer
 * applies once a stream has started. */
struct http_stream *http_reply_stream(struct http_request *req, int status,
                                      const char *content_type, bool compressible);
/* Appends bytes; blocks while the queue is full. Returns -1 when the client is
 * gone, the job was cancelled, or the client has not read anything for
 * VT_STREAM_STALL_SECS (stop producing, then call http_stream_end). */
int http_stream_write(struct http_stream *st, const void *data, size_t n);
/* Ends the stream. ok=false makes the client see a truncated response. */
void http_stream_end(struct http_stream *st, bool ok);
/* The buffer a producer may append to directly before http_stream_commit(). */
struct strbuf *http_stream_buffer(struct http_stream *st);
/* Hands what is in the stream buffer to the queue when it is large enough. */
int http_stream_commit(struct http_stream *st);

/* Suspends the request and runs `fn` on `pool`. 503 when the pool is full.
 * http_defer queues a SHORT job; http_defer_as says which class it is (see
 * engine.h: long jobs must not hold up short ones). */
void http_defer(struct http_request *req, struct eng_pool *pool, http_job_fn fn);
void http_defer_as(struct http_request *req, struct eng_pool *pool, http_job_fn fn,
                   enum eng_job_class cls);
/* The same as one job of fair-queuing flow `flow` (eng_job.flow). */
void http_defer_flow(struct http_request *req, struct eng_pool *pool, http_job_fn fn,
                     enum eng_job_class cls, uint64_t flow);
/* Inside a job: the deadline passed, the job was cancelled, or the client went
 * away (also noticed while the connection is suspended). */
bool http_job_should_stop(struct http_request *req);
/* The engine job of a deferred request (its timed_out/cancelled flags tell
 * exec why to stop); NULL before http_defer. */
const struct eng_job *http_req_job(const struct http_request *req);
/* How this request answers when it passes its deadline before its handler
 * answered (the job never ran, or it was stuck in DuckDB: the answer then
 * comes from the pool's watchdog thread, made from this body alone): status
 * and JSON body in the handler's own form (MCP: a JSON-RPC result), copied.
 * Call before http_defer. Default: 504 with the standard body. */
void http_set_timeout_body(struct http_request *req, int status, const char *json);

#endif
