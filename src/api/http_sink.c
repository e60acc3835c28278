/*
 * The HTTP sink of the execution driver (src/exec): a result becomes the
 * reply in the negotiated format (one encoder of the table in src/encode:
 * JSON, Arrow, CSV, NDJSON), or a count object. Every HTTP front end over
 * the driver (/query, /query/stream, /count, /sql) uses it, and the one
 * negotiation (api_negotiate: `format=`, else Accept) picks the format.
 *
 * The body is buffered while small and turns into a chunked stream once it
 * passes SPILL_BYTES, so a 100,000-row page is produced with flat memory and
 * small answers keep a Content-Length. An error before anything was sent is
 * the reply (the standard error body with the code's status); after streaming
 * started the client can only see a truncated body.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "encode/json_format.h"
#include "http/encoding.h"
#include "util/timeutil.h"

#define SPILL_BYTES (256 * 1024)
/* A streamed chunk of at least this many rows is encoded by two threads
 * (below); DuckDB's chunks hold 2048. */
#define HELPER_MIN_ROWS 512

static struct api_sink *sink_of(struct exec_sink *s)
{
    return (struct api_sink *)((char *)s - offsetof(struct api_sink, sink));
}

static const char *content_type(const struct api_sink *a)
{
    return a->fmt ? a->fmt->content_type : "application/json";
}

static bool compressible(const struct api_sink *a)
{
    return a->fmt ? a->fmt->compressible : true;
}

/* The buffer to append to: ours, or the stream's once streaming. */
static struct strbuf *body(struct api_sink *a)
{
    return a->stream ? http_stream_buffer(a->stream) : &a->buf;
}

/* "queue;dur=0.012, plan;dur=0.034, execute;dur=0.1, encode;dur=0.02" in
 * milliseconds (Server-Timing, RFC-less but what browsers' devtools show).
 * Hand-formatted: this runs on every data request. */
static char *put_timing_dur(char *p, int64_t us)
{
    if (us < 0)
        us = 0;
    memcpy(p, ";dur=", 5);
    p += 5;
    uint64_t whole = (uint64_t)us / 1000;
    if (whole < 10) { /* the usual: under 10 ms */
        *p++ = (char)('0' + whole);
    } else {
        char tmp[24];
        int k = 0;
        do {
            tmp[k++] = (char)('0' + whole % 10);
            whole /= 10;
        } while (whole);
        while (k)
            *p++ = tmp[--k];
    }
    unsigned frac = (unsigned)(us % 1000);
    *p++ = '.';
    *p++ = (char)('0' + frac / 100);
    *p++ = (char)('0' + frac / 10 % 10);
    *p++ = (char)('0' + frac % 10);
    return p;
}

/* (the name a literal: its length known, no strlen) */
#define add_timing_entry(p, name, us)                                                      \
    (memcpy((p), name, sizeof(name) - 1), put_timing_dur((p) + sizeof(name) - 1, (us)))

static void add_server_timing(struct api_sink *a)
{
    char v[256];
    char *p = v;
    p = add_timing_entry(p, "queue", http_req_queue_us(a->req));
    *p++ = ',';
    p = add_timing_entry(p, "plan", a->timing.plan_us);
    *p++ = ',';
    p = add_timing_entry(p, "execute", a->timing.execute_us);
    *p++ = ',';
    p = add_timing_entry(p, "encode", a->timing.encode_us);
    *p = '\0';
    /* A lazy dataset: what pruning left to read (files and row groups). */
    if (a->timing.lazy_files)
        snprintf(p, sizeof v - (size_t)(p - v),
                 ",lazy;desc=\"files %u/%u row_groups %u/%u\"", a->timing.lazy_files_read,
                 a->timing.lazy_files, a->timing.lazy_row_groups_read,
                 a->timing.lazy_row_groups);
    http_add_header(a->req, "Server-Timing", v);
}

/* Call after appending: spills to a stream past the threshold. Stops the run
 * (CLIENT_GONE) when the client is gone or stalled, or the job must stop. */
static enum vt_err commit(struct api_sink *a, struct vt_error *err)
{
    if (a->stream) {
        if (http_stream_commit(a->stream) != 0)
            return vt_error_set(err, VT_ERR_CLIENT_GONE, NULL);
    } else if (a->buf.overflow) {
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "response too large");
    } else if (a->buf.len >= SPILL_BYTES) {
        if (http_job_should_stop(a->req))
            return vt_error_set(err, VT_ERR_CLIENT_GONE, NULL);
        add_server_timing(a); /* what is known at the first byte */
        a->stream = http_reply_stream(a->req, 200, content_type(a), compressible(a));
        if (!a->stream)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot start the response stream");
        int rc = http_stream_write(a->stream, a->buf.buf, a->buf.len);
        sb_release(&a->buf);
        if (rc != 0)
            return vt_error_set(err, VT_ERR_CLIENT_GONE, NULL);
    }
    return VT_ERR_OK;
}

/* The validated query of the call (paged replies), or NULL. */
static const struct query_request *query_of(const struct api_sink *a)
{
    return a->sink.call ? a->sink.call->query : NULL;
}

void api_sink_set_total(struct api_sink *a, int64_t total)
{
    char n[24];
    a->has_total = true;
    a->total = total;
    snprintf(n, sizeof n, "%lld", (long long)total);
    http_add_header(a->req, "X-Total-Count", n);
}

/* Which publish of the dataset the answer reads (a query of one dataset). */
static void add_refreshed_at(struct api_sink *a)
{
    const struct cat_generation *gen = a->sink.call ? a->sink.call->gen : NULL;
    if (gen && gen->published_at_us > 0) {
        /* The same publish answers request after request: each thread keeps
         * the text of the last one (gmtime_r and the layout were ~1,000
         * instructions of a point lookup; bench/callgrind.py). */
        static _Thread_local struct {
            int64_t us;
            char ts[32];
        } last;
        if (last.us != gen->published_at_us) {
            time_format_rfc3339(gen->published_at_us, last.ts);
            last.us = gen->published_at_us;
        }
        http_add_header(a->req, "X-Dataset-Refreshed-At", last.ts);
    }
    /* Which generation answered: the same id on every replica of a cluster;
     * ?generation=<it> pins the next pages to it. */
    if (gen)
        http_add_header(a->req, "X-Dataset-Generation", gen->id);
}

static enum vt_err sink_begin(struct exec_sink *s, duckdb_result *res, struct vt_error *err)
{
    struct api_sink *a = sink_of(s);
    add_refreshed_at(a);
    const struct query_request *q = query_of(a);
    if (a->kind == API_REPLY_PAGE && !a->fmt->document && q) {
        /* The page is not in the body: say it in headers. */
        char n[32];
        snprintf(n, sizeof n, "%lld", (long long)q->page);
        http_add_header(a->req, "X-Page", n);
        snprintf(n, sizeof n, "%lld", (long long)q->page_size);
        http_add_header(a->req, "X-Page-Size", n);
    }
    a->res = res;
    if (!(a->enc = a->fmt->begin(res, body(a), err)))
        return err->code;
    return commit(a, err);
}

/* ---- two threads per chunk of a large result ----
 *
 * A 100,000-row JSON page is CPU-bound on its one worker thread: encoding
 * takes about twice DuckDB's scan (bench/PROFILES.md, line 6), and the scan's own
 * parallel part already runs on DuckDB's task thread. Once a reply streams
 * (past SPILL_BYTES, so small answers never pay for a thread), each chunk is
 * split: a helper thread encodes its second half with a second encoder
 * state (enc_format.fork) into a buffer of its own while the worker encodes
 * the first half into the stream; the worker then waits for the helper (the
 * chunk is only valid during the call) and hands the helper's buffer to the
 * stream as it is, no copy. The helper is started for the request and
 * joined when the reply ends; bounded CPU work, so every wait ends. */
struct sink_helper {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv_job, cv_done;
    bool job, quit;
    /* the job: rows [from, from + count) of chunk with state st into out */
    const struct enc_format *fmt;
    void *st;
    duckdb_data_chunk chunk;
    uint64_t from, count;
    struct strbuf out;
    enum vt_err rc;
    struct vt_error err;
};

static void *helper_main(void *arg)
{
    struct sink_helper *h = arg;
    pthread_setname_np(pthread_self(), "json-encode");
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->job && !h->quit)
            pthread_cond_wait(&h->cv_job, &h->mu);
        if (!h->job)
            break;
        pthread_mutex_unlock(&h->mu);
        enum vt_err rc = h->fmt->range(h->st, h->chunk, h->from, h->count, &h->out, &h->err);
        pthread_mutex_lock(&h->mu);
        h->rc = rc;
        h->job = false;
        pthread_cond_signal(&h->cv_done);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* A helper whose thread is gone (joined) or never started. */
static void helper_free(struct sink_helper *h)
{
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv_job);
    pthread_cond_destroy(&h->cv_done);
    if (h->fmt->release)
        h->fmt->release(h->st);
    sb_release(&h->out);
    free(h);
}

static void helper_stop(struct api_sink *a)
{
    struct sink_helper *h = a->helper;
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->quit = true;
    pthread_cond_signal(&h->cv_job);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    helper_free(h);
    a->helper = NULL;
}

/* The helper, started at the first chunk that wants it; NULL (and never
 * again for this reply) when the format, the machine or resources say no. */
static struct sink_helper *helper_get(struct api_sink *a)
{
    if (a->helper || a->helper_failed)
        return a->helper;
    a->helper_failed = true;
    static int cpus; /* one core: a second thread only adds switches */
    if (!cpus)
        cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 2 || !a->fmt->fork || !a->fmt->range || !a->res)
        return NULL;
    struct sink_helper *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    struct vt_error ferr = {0};
    if (!(h->st = a->fmt->fork(a->enc, a->res, &ferr))) {
        free(h);
        return NULL;
    }
    h->fmt = a->fmt;
    sb_init(&h->out, 0);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv_job, NULL);
    pthread_cond_init(&h->cv_done, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024); /* the encoder's frames are small */
    int rc = pthread_create(&h->thread, &attr, helper_main, h);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        helper_free(h);
        return NULL;
    }
    a->helper = h;
    a->helper_failed = false;
    return h;
}

/* One chunk of n rows by the worker and the helper (see above). */
static enum vt_err chunk_two_threads(struct api_sink *a, struct sink_helper *h,
                                     duckdb_data_chunk chunk, uint64_t n, struct vt_error *err)
{
    uint64_t mine = n / 2;
    pthread_mutex_lock(&h->mu);
    h->chunk = chunk;
    h->from = mine;
    h->count = n - mine;
    h->rc = VT_ERR_OK;
    vt_error_clear(&h->err);
    h->job = true;
    pthread_cond_signal(&h->cv_job);
    pthread_mutex_unlock(&h->mu);

    enum vt_err rc = a->fmt->range(a->enc, chunk, 0, mine, body(a), err);

    pthread_mutex_lock(&h->mu);
    while (h->job)
        pthread_cond_wait(&h->cv_done, &h->mu);
    pthread_mutex_unlock(&h->mu);
    if (rc != VT_ERR_OK)
        return rc;
    if (h->rc != VT_ERR_OK) {
        *err = h->err;
        return h->rc;
    }
    if ((rc = commit(a, err)) != VT_ERR_OK)
        return rc;
    struct strbuf *out = body(a);
    if (out->len == 0) { /* just handed over: the helper's buffer is next */
        struct strbuf t = *out;
        *out = h->out;
        h->out = t;
    } else {
        if (sb_add(out, h->out.buf, h->out.len) != 0)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "response too large");
        sb_reset(&h->out);
    }
    return commit(a, err);
}

static enum vt_err sink_chunk(struct exec_sink *s, duckdb_data_chunk chunk, struct vt_error *err)
{
    struct api_sink *a = sink_of(s);
    uint64_t n = a->stream ? duckdb_data_chunk_get_size(chunk) : 0;
    struct sink_helper *h = n >= HELPER_MIN_ROWS ? helper_get(a) : NULL;
    if (h)
        return chunk_two_threads(a, h, chunk, n, err);
    if (a->fmt->chunk(a->enc, chunk, body(a), err) != VT_ERR_OK)
        return err->code;
    return commit(a, err);
}

static enum vt_err sink_json_row(struct exec_sink *s, const char *obj, size_t len,
                                 struct vt_error *err)
{
    struct api_sink *a = sink_of(s);
    if (a->fmt->row(a->enc, obj, len, body(a), err) != VT_ERR_OK)
        return err->code;
    /* Commit in batches: a check per row would cost more than the row. */
    if ((++a->rows & 63) == 0)
        return commit(a, err);
    return VT_ERR_OK;
}

/* A JSON page whose rows are a range of the pre-rendered pages: the
 * document's head and trailer around the file's bytes, sent with sendfile
 * (finish). A reply to be compressed is gzip made of the range's
 * pre-compressed blocks when gzip is as welcome as any coding the client
 * takes (browsers list gzip, br and zstd alike), or else the usual way. Not when the body
 * has begun. */
static bool sink_json_file(struct exec_sink *s, const struct index_pages_range *range)
{
    struct api_sink *a = sink_of(s);
    if (a->kind != API_REPLY_PAGE || a->fmt != &enc_json || a->stream || a->buf.len ||
        a->enc || a->file_open)
        return false;
    bool gzip = http_reply_encoding(a->req, content_type(a), compressible(a), range->length) !=
                HTTP_ENC_IDENTITY;
    /* (on an HTTP loop a gzip reply declines: a worker frames it, so the
     * loop's other connections do not wait for its edges' compression) */
    if (gzip && (range->gz_fd < 0 || range->nowait || !http_req_takes_gzip(a->req)))
        return false;
    int fd = fcntl(gzip ? range->gz_fd : range->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct vt_error err = {0};
    if (!(a->enc = a->fmt->begin(NULL, &a->buf, &err))) {
        close(fd);
        return false;
    }
    add_refreshed_at(a);
    a->file_open = true;
    a->file_gzip = gzip;
    a->file_fd = fd;
    a->file_range = *range;
    a->file_head = a->buf.len;
    return true;
}

static enum vt_err sink_count(struct exec_sink *s, uint64_t n, struct vt_error *err)
{
    (void)err;
    add_refreshed_at(sink_of(s));
    sb_addf(body(sink_of(s)), "{\"count\":%llu}", (unsigned long long)n);
    return VT_ERR_OK;
}

/* The reply of a page from the pre-rendered pages: the text between the
 * document's head and trailer, or the gzip blocks between the compressed
 * edges (index_pages_gzip_frame). */
static void reply_file(struct api_sink *a)
{
    const struct index_pages_range *r = &a->file_range;
    const char *head = a->buf.buf, *tail = a->buf.buf + a->file_head;
    size_t head_len = a->file_head, tail_len = a->buf.len - a->file_head;
    a->file_open = false; /* the reply closes the fd */
    if (!a->file_gzip) {
        http_reply_file_framed(a->req, 200, content_type(a), compressible(a), NULL, a->file_fd,
                               r->offset, r->length, head, head_len, tail, tail_len);
        return;
    }
    struct strbuf zh, zt;
    sb_init(&zh, 0);
    sb_init(&zt, 0);
    if (index_pages_gzip_frame(r, head, head_len, tail, tail_len, &zh, &zt) == 0)
        http_reply_file_framed(a->req, 200, content_type(a), compressible(a), "gzip",
                               a->file_fd, r->gz_offset, r->gz_length, zh.buf, zh.len, zt.buf,
                               zt.len);
    else {
        close(a->file_fd);
        http_reply_error(a->req, VT_ERR_INTERNAL, "cannot read the pre-rendered pages");
    }
    sb_release(&zh);
    sb_release(&zt);
}

/* Ends the reply: the buffered body, or the end of the stream. */
static void finish(struct api_sink *a, const struct vt_error *err)
{
    helper_stop(a);
    bool ok = err == NULL || err->code == VT_ERR_OK;
    /* A request refused before it ran has nothing to time. */
    if (!a->stream && a->sink.call && a->sink.call->planned)
        add_server_timing(a);
    if (a->stream) {
        http_stream_end(a->stream, ok);
        a->stream = NULL;
    } else if (a->file_open && ok) {
        reply_file(a);
    } else if (err && err->code == VT_ERR_NOT_MODIFIED) {
        /* GET .../query?q=: the ETag matched (query.c); no body */
        sb_release(&a->buf);
        http_reply_buffer(a->req, 304, content_type(a), &a->buf, false);
    } else if (!ok) {
        http_reply_vterr(a->req, err);
    } else {
        http_reply_buffer(a->req, 200, content_type(a), &a->buf, compressible(a));
    }
    sb_release(&a->buf);
}

/* The document's fields after the rows (JSON): the page, or /sql's cap. */
static const char *trailer(struct api_sink *a, char *buf, size_t cap)
{
    const struct exec_call *c = a->sink.call;
    const struct query_request *q = query_of(a);
    if (a->kind == API_REPLY_PAGE) {
        /* hand-formatted (every page pays it): 3 x 20 digits fit in cap */
        (void)cap;
        char *p = buf;
        memcpy(p, "\"page\":", 7);
        p = json_fmt_i64(p + 7, q ? (int64_t)q->page : 1);
        memcpy(p, ",\"page_size\":", 13);
        p = json_fmt_i64(p + 13, q ? (int64_t)q->page_size : 0);
        if (a->has_total) {
            memcpy(p, ",\"total\":", 9);
            p = json_fmt_i64(p + 9, (int64_t)a->total);
        }
        *p = '\0';
    }
    else if (a->kind == API_REPLY_SQL && c)
        snprintf(buf, cap, "\"max_rows\":%lld,\"truncated\":%s",
                 (long long)c->rq.caps.max_rows, c->truncated ? "true" : "false");
    else
        return NULL;
    return buf;
}

static void sink_end(struct exec_sink *s)
{
    struct api_sink *a = sink_of(s);
    struct vt_error err = {0};
    if (a->kind != API_REPLY_COUNT && a->fmt->end) {
        char t[128];
        a->fmt->end(a->enc, trailer(a, t, sizeof t), body(a), &err);
    }
    if (err.code == VT_ERR_OK && body(a)->overflow)
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, "response too large");
    finish(a, &err);
}

static void sink_fail(struct exec_sink *s, const struct vt_error *err)
{
    finish(sink_of(s), err);
}

static const struct exec_sink_ops rows_ops = {
    .begin = sink_begin,
    .chunk = sink_chunk,
    .json_row = sink_json_row,
    .json_file = sink_json_file,
    .count = sink_count,
    .end = sink_end,
    .fail = sink_fail,
};

/* Formats that take DuckDB chunks only: the index fast path answers counts
 * for them, never rows. */
static const struct exec_sink_ops chunk_ops = {
    .begin = sink_begin,
    .chunk = sink_chunk,
    .count = sink_count,
    .end = sink_end,
    .fail = sink_fail,
};

void api_sink_init(struct api_sink *a, struct http_request *req, enum api_reply kind,
                   const struct enc_format *fmt)
{
    memset(a, 0, sizeof *a);
    a->req = req;
    a->kind = kind;
    a->fmt = kind == API_REPLY_COUNT ? NULL : fmt;
    a->sink.ops = a->fmt && !a->fmt->row ? &chunk_ops : &rows_ops;
    sb_init(&a->buf, 0);
    /* A page's body is usually small (a point lookup's ~300 bytes): one
     * allocation up front instead of doubling from 64 (three reallocs),
     * or none, the buffer of this thread's last such reply. */
    if (kind == API_REPLY_PAGE && !http_take_spare_body(&a->buf))
        sb_grow(&a->buf, 1024);
}

void api_sink_release(struct api_sink *a)
{
    helper_stop(a);
    if (a->file_open)
        close(a->file_fd);
    a->file_open = false;
    if (a->fmt && a->fmt->release)
        a->fmt->release(a->enc);
    a->enc = NULL;
    sb_release(&a->buf);
}

/* ------------------------------------------------------------ negotiation */

/* What a route answers in when the client says nothing: JSON pages and SQL
 * results, Arrow streams. */
static const struct enc_format *default_format(enum api_reply kind)
{
    return kind == API_REPLY_STREAM ? &enc_arrow : &enc_json;
}

enum vt_err api_negotiate(struct http_request *req, enum api_reply kind,
                          const struct enc_format **out, struct vt_error *err)
{
    const struct enc_format *const *all;
    size_t n = enc_formats(&all);
    const char *name = http_req_query(req, "format");
    if (name) {
        if ((*out = enc_format_named(name)) != NULL)
            return VT_ERR_OK;
        char list[128] = "";
        size_t len = 0;
        for (size_t i = 0; i < n && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s\"%s\"", i ? ", " : "",
                                    all[i]->name);
        return vt_error_set(err, VT_ERR_INVALID_QUERY, "format: expected one of %s, got \"%.64s\"",
                            list, name);
    }
    /* Accept: the format the client names with the highest q > 0; wildcards
     * name none (they keep the route's default), and on a tie the table
     * order decides, the route's default last. */
    const char *accept = http_req_header(req, "Accept");
    const struct enc_format *dflt = default_format(kind);
    const struct enc_format *best = dflt;
    int best_q = 0;
    for (size_t pass = 0; accept && pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            if ((all[i] == dflt) != (pass == 1))
                continue;
            int q = http_accept_media_q(accept, all[i]->media_type);
            if (q > best_q) {
                best = all[i];
                best_q = q;
            }
        }
    }
    *out = best;
    return VT_ERR_OK;
}
