/*
 * What the HTTP server's own files share (never included outside src/http):
 *
 *   server.c   the request API, routing and dispatch, jobs, start and stop
 *   conn.c     the acceptor, the event loops and each connection: reading
 *              and parsing requests (wire.c), writing responses, time-outs,
 *              clients that leave
 *   reply.c    building responses (buffers, files, streams) on any thread
 *
 * Threads and ownership. A connection belongs to one event loop thread,
 * which alone reads, parses and writes it. A request is refcounted: the
 * connection holds one reference while the request is its current one, a
 * job one while it runs. Replies are built on whichever thread answers (the
 * loop for handlers that answer at once, a worker for jobs) and handed over
 * under req->reply_mu; a worker then wakes the connection's loop
 * (conn_wake), which takes the response and writes it. When a connection
 * closes under a request (client gone, time-out, shutdown), req->conn
 * becomes NULL under reply_mu and a later reply goes nowhere.
 */
#ifndef VT_HTTP_INTERNAL_H
#define VT_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "http/hosts.h"
#include "http/router.h"
#include "http/server.h"
#include "http/wire.h"
#include "util/limits.h"

/* A producer hands over chunks of at least STREAM_CHUNK_BYTES, and at most
 * one every STREAM_COALESCE_US unless STREAM_CHUNK_MAX_BYTES are waiting:
 * each hand-off to a loop that has sent everything wakes it (an eventfd
 * write and read, an epoll_wait, a context switch), and a fast producer,
 * an Arrow stream's ~190 KB batch every ~0.25 ms, woke it for every batch
 * (bench/PROFILES.md, "Arrow stream (8a)"). A slow producer's chunks still go at once. */
#define STREAM_CHUNK_BYTES (64 * 1024)
#define STREAM_CHUNK_MAX_BYTES (1024 * 1024)
#define STREAM_COALESCE_US 1000
#define STREAM_PRESIZE_MAX (4 * 1024 * 1024) /* ... and the next is pre-sized up to this */
#define REQUEST_ARENA_MAX (8 * 1024 * 1024)

struct http_header {
    const char *name;           /* not owned (http_add_header) */
    char *value;
    size_t name_len, value_len; /* (the head is sized before it is written) */
    struct http_header *next;
};

struct stream_chunk {
    char *data;
    size_t len;
    size_t cap;                 /* bytes allocated at data (its reuse) */
};

struct http_stream {
    struct http_request *req;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct stream_chunk q[VT_STREAM_QUEUE_BATCHES];
    size_t qhead, qlen;
    struct strbuf pending;      /* producer side, handed over at STREAM_CHUNK_BYTES */
    int64_t handed_us;          /* when the producer last handed pending over (monotonic) */
    bool done;                  /* producer finished */
    bool failed;                /* producer failed: truncate the response */
    bool gone;                  /* the connection is done with it (client gone, finished) */
    bool reader_waiting;        /* the loop waits for data: wake it on the next chunk */
    /* Buffers of chunks the connection has sent, handed back for the
     * producer to fill again: a buffer a worker allocated and the loop
     * freed locked the worker's malloc arena, and the loop waited while
     * the worker held it (README.md, "Fair latency under mixed load"). */
    struct stream_chunk spare[VT_STREAM_QUEUE_BATCHES];
    size_t nspare;
    atomic_int refs;            /* producer + response + the request */
    struct compress *comp;
    uint64_t bytes;             /* bytes taken by the connection */
};

enum resp_kind { RESP_BUFFER, RESP_FILE, RESP_STREAM };

/* One response: its head already serialized (reply.c), its body. */
struct http_response {
    int status;
    enum resp_kind kind;
    struct strbuf head;         /* status line, fields, empty line */
    const char *data;           /* RESP_BUFFER */
    size_t len;
    char *owned;                /* freed with the response (data points into it) */
    size_t owned_cap;           /* its allocation when from a strbuf (else 0) */
    int fd;                     /* RESP_FILE: closed with the response */
    uint64_t off, flen;         /* (RESP_FILE: data/len, if any, follow the file's bytes) */
    struct http_stream *stream; /* RESP_STREAM: one reference */
    bool chunked;               /* stream framing (HTTP/1.1) */
    bool close;                 /* the connection ends after it */
};

/* This thread's released response (server.c), its head's buffer kept, or
 * NULL; http_keep_response keeps r (its body, file and stream released,
 * its head emptied) as that spare: false when the thread has one. */
struct http_response *http_spare_response(void);
bool http_keep_response(struct http_response *r);
/* Keeps a released reply body (cap bytes) as this thread's spare buffer:
 * false (the caller frees it) when the thread has one or the size is not
 * the usual one. */
bool http_keep_body(char *buf, size_t cap);

struct http_conn;

struct http_request {
    struct http_server *srv;
    struct http_conn *conn;     /* NULL once the connection closed (under reply_mu) */
    int fd;                     /* the connection's socket (its peer), for logs */
    atomic_int refs;
    bool started;               /* the head parsed: method, target, fields known */
    char *target;               /* raw request target (arena); NULL when too long */
    size_t target_len;
    struct http_path segs;      /* its path, split and decoded */
    struct http_head head;      /* fields point into the arena's copy of the head */
    int minor;                  /* HTTP/1.<minor> */
    bool keep_alive;            /* the client allows another request on the connection */
    pthread_mutex_t reply_mu;   /* response, suspended, detached, conn */
    bool detached;              /* shutdown answered for it: the job's reply goes nowhere */
    atomic_bool client_gone;
    atomic_bool shutdown_cancelled; /* shutdown cancelled its job: the job's end answers 503 */
    char id[VT_MAX_REQUEST_ID_BYTES + 1];
    int64_t defer_us;
    int64_t queue_us;
    int64_t start_us;
    enum vt_err err_code;       /* the error replied, for the metrics (VT_ERR_OK: none) */
    int64_t deadline_ms;
    enum http_method method;
    char *method_str;
    char *path;
    const struct http_route *route;
    const char *params[HTTP_MAX_PARAMS];
    struct strbuf body;
    struct arena arena;
    struct http_header *headers;
    /* the reply */
    struct http_response *response; /* installed, not yet taken by the connection */
    int status;                 /* of the response taken (the access line) */
    uint64_t bytes_out;
    bool suspended;             /* a job will reply */
    bool job_outstanding;       /* under srv->mu */
    struct eng_job job;
    http_job_fn job_fn;
    struct eng_pool *job_pool;
    struct http_stream *stream;
    void *user;
    void (*on_release)(void *user);
    char *timeout_body;         /* http_set_timeout_body (arena), NULL: the 504 body */
    int timeout_status;
    /* CORS as dispatch decided it (server.c, cors()), for the answer written
     * off the job's thread (http_reply_timeout): the Origin it sent (points
     * into the head) when it is allowed, and whether Vary: Origin applies. */
    const char *cors_origin;
    bool cors_vary;
    struct http_request *prev, *next; /* srv->active, under srv->mu */
};

struct http_loop;

struct http_server {
    struct http_server_options opts;
    const struct vt_config *cfg;
    struct http_router *router;
    struct http_hosts hosts;
    const struct http_route *rows; /* the router's rows: a route's metrics slot is its index */
    size_t n_rows;
    int port;
    int listen_fd;
    int wake_pipe[2];           /* wakes the acceptor at stop */
    pthread_t acceptor;
    bool acceptor_started;
    atomic_bool acceptor_stop;
    struct http_loop *loops;
    size_t n_loops;
    atomic_uint next_loop;
    atomic_int n_conns;
    atomic_uint_fast64_t next_id;
    pthread_mutex_t mu;         /* active list, job_outstanding */
    struct http_request *active;
    /* Requests not yet completed. Atomic, not under mu: every request's
     * completion on a loop took mu for it, and a loop preempted while
     * holding mu stalls the other loops (README.md, "Fair latency"). */
    atomic_int in_flight;
    atomic_bool stopping;
    pthread_mutex_t clients_mu; /* connections per client address */
    struct client_count *clients;
    size_t clients_cap;
};

/* ---- server.c ---- */
/* A new request on connection `c` (one reference, the connection's). */
/* A fresh request id of ours (server.h, http_req_id), for an answer written
 * without a request (conn.c's canned refusals): every answer carries one. */
void http_server_new_request_id(struct http_server *srv, char out[VT_MAX_REQUEST_ID_BYTES + 1]);
struct http_request *http_request_new(struct http_server *srv, struct http_conn *c, int fd);
void http_request_unref(struct http_request *req);
/* The parsed head (in the request's arena): checks what the wire parser
 * leaves to the server (target form, path, Host rule, body size), takes the
 * client's request id. VT_ERR_OK or the error to answer (closing). */
enum vt_err http_request_accept_head(struct http_request *req, const char **out_msg);
/* Routes and runs the handler (or answers 503 while stopping). */
void http_request_dispatch(struct http_request *req);
/* The route a request answered before dispatch was for (metrics, log). */
void http_request_label_route(struct http_request *req);
/* The connection is done with the request: metrics, access line, the
 * connection's reference. `outcome` NULL, "client-abort", "timeout" or
 * "shutdown". */
void http_request_complete(struct http_request *req, const char *outcome);
/* The client left: cancel the job (interrupting DuckDB), end the stream. */
void http_request_client_gone(struct http_request *req);
/* Whether the response installed can be taken now (not waiting for a job). */
struct http_response *http_request_take_response(struct http_request *req);

/* ---- reply.c ---- */
void http_response_free(struct http_response *r);
/* The answer to a request past its deadline: the handler's own body
 * (http_set_timeout_body: MCP's JSON-RPC result) or the 504 body. on_job:
 * on the job's thread (its end), as any reply. Otherwise on another thread
 * while the job may still run (eng_job.overrun): built from the timeout
 * body, the id and the status alone, never the request's header list or
 * arena, and the connection closes after it; the request is released
 * from its job there too (detached, no longer suspended: the job's reply
 * goes nowhere), the caller wakes the connection when this returns true.
 * False when nothing is to be sent (shutdown or the job answered already,
 * a stream started, out of memory). */
bool http_reply_timeout(struct http_request *req, bool on_job);
void http_stream_unref(struct http_stream *st);
/* Ends st for good: a producer waiting for room gets -1; with `finish`, the
 * connection sees it ended (failed). */
void http_stream_abort(struct http_stream *st, bool finish);
/* Loop side: moves up to `max` queued chunks into `out` (their buffers pass
 * to the caller, who hands them back here once sent: the connection sends
 * them as they are, no copy), after taking back the `nback` buffers in
 * `back` (sent; the producer reuses them). Returns how many (> 0); 0:
 * nothing now (the reader is marked waiting: the producer wakes the
 * connection); -1: the stream ended (*out_failed says how). */
int http_stream_take(struct http_stream *st, struct stream_chunk *out, size_t max,
                     const struct stream_chunk *back, size_t nback, bool *out_failed);

/* ---- conn.c ---- */
/* Starts the loops and the acceptor. */
bool http_conns_start(struct http_server *srv, struct vt_error *err);
/* Stops accepting (the listening socket closes). */
void http_conns_stop_accepting(struct http_server *srv);
/* Stops the loops: every connection closes, completing its request. */
void http_conns_stop(struct http_server *srv);
/* Asks the request's connection loop to look at it again (a reply was
 * installed, a stream has data or ended). Any thread. */
void http_conn_wake(struct http_request *req);

#endif
