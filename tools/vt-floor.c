/*
 * vt-floor: the in-process DuckDB "floors" of `make bench` (bench/README.md).
 * Each floor is what DuckDB alone does for a scenario, in one process, with
 * the settings the service uses (allocator_background_threads, TimeZone UTC,
 * DuckDB's default thread count), so the bench can print service / floor.
 *
 *   vt-floor gen OUT.parquet ROWS
 *       Writes the bench dataset (mixed types, deterministic).
 *   vt-floor load FILE.parquet IDLE_MS
 *       ATTACH ':memory:' AS g (COMPRESS); CREATE TABLE g.t AS SELECT * FROM
 *       read_parquet(FILE); CHECKPOINT g. Prints "loaded ms=..." when done,
 *       then idles IDLE_MS and prints "rss_kb=... hwm_kb=... duckdb_bytes=..."
 *       (VmRSS/VmHWM of /proc/self/status; DuckDB's own memory accounting).
 *   vt-floor serve FILE.parquet|-
 *       Loads as above (nothing with "-": the SQL reads the files itself, as
 *       the lazy floors of bench/scale.py do), prints "ready", then runs
 *       commands read from stdin,
 *       one per line, fields separated by TABs:
 *           run MODE RUNS PARAMS SQL
 *       SQL is prepared once and executed RUNS times (streaming, chunks
 *       fetched as the service does). PARAMS: parameter sets separated by ';',
 *       values inside a set by ','; run i binds set i % nsets, every value as
 *       VARCHAR (the SQL casts, as the service's does); "-" = no parameters.
 *       MODE says what is produced from the rows:
 *           raw       nothing (execute + fetch every chunk)
 *           tojson    DuckDB's to_json: SELECT to_json(x) FROM (SQL) x, the
 *                     strings joined into {"data":[...],"page":1,...}
 *           jsonrows  vitrine's JSON writer (src/encode/json_rows.c), same body
 *           count     the first value as {"count":N}
 *           arrowc    duckdb_data_chunk_to_arrow per chunk, released
 *           arrow     the same plus vitrine's Arrow IPC writer (bytes counted
 *                     and dropped per chunk, as a socket would take them);
 *                     DuckDB exports every column (ARROW_DUCKDB_EXPORT_ONLY)
 *       Prints "result median_us=... min_us=... p90_us=... mean_us=...
 *       cpu_us=... bytes=... rows=... [body=...]": wall clock per execution,
 *       process CPU time per execution (all DuckDB threads), bytes and rows of
 *       the last execution and, when short, its body.
 *           cmp MODE RUNS PARAMS SQL BATCH PORT PATH BODIES
 *       The same, interleaved with the service: BATCH POSTs of PATH to
 *       127.0.0.1:PORT (one keep-alive connection, a minimal HTTP/1.1 client;
 *       BODIES separated by \x1e, used in turn), then BATCH executions here,
 *       until RUNS of each, so both sides see the same moments of a shared
 *       machine. Adds "svc_median_us=... svc_min_us=... svc_p90_us=...
 *       svc_mean_us=... svc_bytes=..." (request written -> body read).
 *       Other commands: "exec SQL" (runs a statement, e.g. a SET; prints "ok"
 *       or "error ..."), "rss" (prints rss_kb/hwm_kb/duckdb_bytes), "resethwm"
 *       (VmHWM back to VmRSS), "quit".
 *   vt-floor mix PORT WARMUP_MS SECONDS SPECFILE
 *       A closed-loop load generator for the mixed-load scenario (no DuckDB):
 *       each line of SPECFILE is "KIND\tCONNS\tPATH\tBODIES" (BODIES
 *       separated by \x1e, used in turn). CONNS threads per kind, each with
 *       its own keep-alive connection to 127.0.0.1:PORT, POST one request after
 *       the other for WARMUP_MS + SECONDS; latencies (request written -> body
 *       read) are kept after the warm-up. Prints per kind "mix kind=K
 *       requests=N errors=E mean_us=... p50_us=... p90_us=... p99_us=...
 *       p999_us=... max_us=... bytes=... client_run_delay_us=...
 *       client_slices=..." (a non-200
 *       answer or a broken connection is an error; the last two: the kind's
 *       threads' time waiting for a CPU and their timeslices, schedstat).
 *       Env VT_FLOOR_MIX_SLICE_US: a scheduling slice (us, Linux 6.12+)
 *       for its threads; unset or 0, the kernel's default.
 *       Env VT_FLOOR_MIX_DUMP=FILE: every measured request as a line
 *       "KIND CONN START_US LATENCY_US" (START from the end of the warm-up).
 *       An optional fifth field RATE (requests a second, > 0) makes that kind
 *       OPEN-LOOP: its requests arrive at that mean rate whatever the server
 *       answers (Poisson arrivals from a fixed seed per kind name, so the
 *       kind sees the same schedule alone and mixed). A free one of its CONNS
 *       connections sends each arrival at its time; a latency is measured
 *       from the arrival's scheduled time, so waiting for a free connection
 *       counts (no coordinated omission). Open-loop kinds also print
 *       "offered=R late=L lag_p50_us lag_p99_us lag_max_us svc_p50_us
 *       svc_p99_us svc_max_us" (L:
 *       arrivals sent more than 1 ms after their time, because every
 *       connection was busy or the client's thread waited for a CPU; lag:
 *       arrival -> request sent; svc: request sent -> answer read).
 */
#include <arpa/inet.h>
#include <duckdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "encode/arrow_duckdb.h"
#include "engine/engine.h"
#include "encode/json_rows.h"
#include "util/errors.h"
#include "util/strbuf.h"

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "vt-floor: %s: %s\n", what, msg ? msg : "failed");
    exit(1);
}

static void must(duckdb_connection con, const char *sql)
{
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess)
        die(sql, duckdb_result_error(&res));
    duckdb_destroy_result(&res);
}

/* kB values of VmRSS and VmHWM from /proc/self/status. */
static void read_rss(long *rss_kb, long *hwm_kb)
{
    *rss_kb = *hwm_kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6))
            *rss_kb = atol(line + 6);
        else if (!strncmp(line, "VmHWM:", 6))
            *hwm_kb = atol(line + 6);
    }
    fclose(f);
}

/* The database with the service's settings that matter (engine.c). */
static void open_db(duckdb_database *db, duckdb_connection *con)
{
    duckdb_config cfg;
    if (duckdb_create_config(&cfg) != DuckDBSuccess)
        die("config", NULL);
    duckdb_set_config(cfg, "autoinstall_known_extensions", "false");
    duckdb_set_config(cfg, "autoload_known_extensions", "false");
    duckdb_set_config(cfg, "allocator_background_threads", "true");
    char *err = NULL;
    if (duckdb_open_ext(NULL, db, cfg, &err) != DuckDBSuccess)
        die("open", err);
    duckdb_destroy_config(&cfg);
    if (duckdb_connect(*db, con) != DuckDBSuccess)
        die("connect", NULL);
    must(*con, "SET TimeZone = 'UTC'");
}

static void sql_string(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    if (cap < 3)
        die("path", "too long");
    out[n++] = '\'';
    for (; *s && n + 3 < cap; s++) {
        if (*s == '\'')
            out[n++] = '\'';
        out[n++] = *s;
    }
    if (*s)
        die("path", "too long");
    out[n++] = '\'';
    out[n] = '\0';
}

/* The floor of scenario 2: exactly the brief's three statements. */
static double load(duckdb_connection con, const char *path)
{
    char lit[4200], sql[4400];
    sql_string(lit, sizeof lit, path);
    double t0 = now_us();
    must(con, "ATTACH ':memory:' AS g (COMPRESS)");
    snprintf(sql, sizeof sql, "CREATE TABLE g.t AS SELECT * FROM read_parquet(%s)", lit);
    must(con, sql);
    must(con, "CHECKPOINT g");
    return (now_us() - t0) / 1e3;
}

static long long duckdb_bytes(duckdb_connection con)
{
    duckdb_result res;
    long long v = -1;
    if (duckdb_query(con, "SELECT sum(memory_usage_bytes)::BIGINT FROM duckdb_memory()", &res) ==
        DuckDBSuccess)
        v = duckdb_value_int64(&res, 0, 0);
    duckdb_destroy_result(&res);
    return v;
}

static int cmd_gen(const char *out, long rows)
{
    duckdb_database db;
    duckdb_connection con;
    open_db(&db, &con);
    char lit[4200];
    sql_string(lit, sizeof lit, out);
    static char sql[8192];
    /* hash() is deterministic for a DuckDB version, so the file is too. */
    snprintf(sql, sizeof sql,
             "COPY (SELECT "
             "i::BIGINT AS id, "
             "(['books','music','games','garden','toys','food','tools','sports','beauty',"
             "'auto','health','baby'])[1 + (hash(i) %% 12)::INTEGER] AS category, "
             "(['north','south','east','west','center'])[1 + (hash(i * 7) %% 5)::INTEGER] AS region, "
             "(hash(i * 3) %% 10000000)::DOUBLE / 100.0 AS price, "
             "(hash(i * 5) %% 1000)::INTEGER AS qty, "
             "CASE WHEN i %% 10 = 0 THEN NULL ELSE sin(i::DOUBLE) * 1000 END AS score, "
             "DATE '2020-01-01' + (hash(i * 11) %% 1826)::INTEGER AS day, "
             "TIMESTAMP '2024-01-01' + INTERVAL ((hash(i * 13) %% 31536000000000)::BIGINT) MICROSECOND AS ts, "
             "hash(i * 17) %% 2 = 0 AS active, "
             "md5(i::VARCHAR) AS token "
             "FROM range(1, %ld) r(i)) TO %s (FORMAT parquet)",
             rows + 1, lit);
    double t0 = now_us();
    must(con, sql);
    printf("generated %s: %ld rows in %.0f ms\n", out, rows, (now_us() - t0) / 1e3);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return 0;
}

static int cmd_load(const char *path, long idle_ms)
{
    duckdb_database db;
    duckdb_connection con;
    open_db(&db, &con);
    double ms = load(con, path);
    printf("loaded ms=%.1f\n", ms);
    fflush(stdout);
    struct timespec ts = {idle_ms / 1000, (idle_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    long rss, hwm;
    read_rss(&rss, &hwm);
    printf("rss_kb=%ld hwm_kb=%ld duckdb_bytes=%lld\n", rss, hwm, duckdb_bytes(con));
    fflush(stdout);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return 0;
}

/* ------------------------------------------------------------------ serve */

enum mode { M_RAW, M_TOJSON, M_JSONROWS, M_COUNT, M_ARROWC, M_ARROW };

struct params {
    char **vals;    /* nsets * per_set */
    size_t nsets, per_set;
};

static void params_parse(char *s, struct params *p)
{
    memset(p, 0, sizeof *p);
    if (!strcmp(s, "-") || !*s)
        return;
    size_t n = 0, cap = 16;
    p->vals = malloc(cap * sizeof *p->vals);
    char *save_set;
    for (char *set = strtok_r(s, ";", &save_set); set; set = strtok_r(NULL, ";", &save_set)) {
        size_t k = 0;
        char *save;
        for (char *v = strtok_r(set, ",", &save); v; v = strtok_r(NULL, ",", &save), k++) {
            if (n == cap) {
                cap *= 2;
                p->vals = realloc(p->vals, cap * sizeof *p->vals);
            }
            p->vals[n++] = v;
        }
        if (p->nsets == 0)
            p->per_set = k;
        else if (k != p->per_set)
            die("params", "every set needs the same number of values");
        p->nsets++;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One execution; returns body bytes, *rows gets the row count. */
static size_t run_once(duckdb_prepared_statement ps, enum mode mode, struct strbuf *body,
                       uint64_t *rows)
{
    duckdb_result res;
    if (duckdb_execute_prepared_streaming(ps, &res) != DuckDBSuccess)
        die("execute", duckdb_result_error(&res));
    sb_reset(body);
    *rows = 0;
    size_t bytes = 0;
    duckdb_data_chunk ch;
    struct json_rows *enc = NULL;
    struct arrow_duckdb_stream ast;
    duckdb_arrow_options aopts = NULL;
    struct vt_error err = {0};
    bool first = true;
    char ebuf[256];
    switch (mode) {
    case M_TOJSON:
        sb_adds(body, "{\"data\":[");
        break;
    case M_JSONROWS:
        enc = json_rows_create_for_result(&res, ebuf, sizeof ebuf);
        if (!enc)
            die("json_rows", ebuf);
        sb_adds(body, "{\"data\":[");
        break;
    case M_ARROW:
        /* DuckDB's own Arrow export of every column (the service converts
         * plain columns itself: arrow_duckdb.h) */
        if (arrow_duckdb_begin_mode(&ast, &res, ARROW_DUCKDB_EXPORT_ONLY, body, &err) != VT_ERR_OK)
            die("arrow", vt_error_message(&err));
        break;
    case M_ARROWC:
        aopts = duckdb_result_get_arrow_options(&res);
        break;
    default:
        break;
    }
    while ((ch = duckdb_fetch_chunk(res))) {
        idx_t n = duckdb_data_chunk_get_size(ch);
        *rows += n;
        switch (mode) {
        case M_RAW:
            break;
        case M_TOJSON: {
            duckdb_vector v = duckdb_data_chunk_get_vector(ch, 0);
            duckdb_string_t *d = duckdb_vector_get_data(v);
            uint64_t *m = duckdb_vector_get_validity(v);
            for (idx_t i = 0; i < n; i++) {
                if (!first)
                    sb_addc(body, ',');
                first = false;
                if (m && !duckdb_validity_row_is_valid(m, i))
                    sb_add(body, "null", 4);
                else
                    sb_add(body, duckdb_string_t_data(&d[i]), duckdb_string_t_length(d[i]));
            }
            break;
        }
        case M_JSONROWS:
            if (json_rows_encode_chunk(enc, ch, body) != 0)
                die("json_rows", "encode failed");
            break;
        case M_COUNT:
            if (n > 0) {
                int64_t c = ((int64_t *)duckdb_vector_get_data(duckdb_data_chunk_get_vector(ch, 0)))[0];
                sb_addf(body, "{\"count\":%lld}", (long long)c);
            }
            break;
        case M_ARROWC: {
            struct ArrowArray arr;
            memset(&arr, 0, sizeof arr);
            duckdb_error_data e = duckdb_data_chunk_to_arrow(aopts, ch, &arr);
            if (e) {
                if (duckdb_error_data_has_error(e))
                    die("to_arrow", duckdb_error_data_message(e));
                duckdb_destroy_error_data(&e);
            }
            bytes += (size_t)n; /* no bytes exist; count rows */
            if (arr.release)
                arr.release(&arr);
            break;
        }
        case M_ARROW:
            if (arrow_duckdb_write_chunk(&ast, ch, body, &err) != VT_ERR_OK)
                die("arrow", vt_error_message(&err));
            bytes += body->len;
            sb_reset(body);
            break;
        }
        duckdb_destroy_data_chunk(&ch);
    }
    if (duckdb_result_error(&res))
        die("fetch", duckdb_result_error(&res));
    switch (mode) {
    case M_TOJSON:
    case M_JSONROWS:
        sb_adds(body, "],\"page\":1,\"page_size\":1000}");
        bytes = body->len;
        break;
    case M_COUNT:
        bytes = body->len;
        break;
    case M_ARROW:
        arrow_duckdb_end(&ast, body);
        bytes += body->len;
        arrow_duckdb_release(&ast);
        break;
    case M_ARROWC:
        bytes = 0;
        break;
    default:
        break;
    }
    if (aopts)
        duckdb_destroy_arrow_options(&aopts);
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
    return bytes;
}

/* ------------------------------------------------ a minimal HTTP client */

/* One keep-alive HTTP/1.1 connection to 127.0.0.1, enough for the service's
 * answers (Content-Length or chunked bodies, read and dropped). */
struct hconn {
    int fd;
    char *buf;
    size_t pos, len, cap;
};

static int h_connect(struct hconn *c, int port)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->cap = 1 << 20;
    c->buf = malloc(c->cap);
    return connect(c->fd, (struct sockaddr *)&a, sizeof a);
}

static void h_close(struct hconn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    c->fd = -1;
    c->buf = NULL;
}

/* Makes at least n unread bytes available (n <= cap); -1 on EOF/error. */
static int h_need(struct hconn *c, size_t n)
{
    if (c->len - c->pos >= n)
        return 0;
    if (c->pos > 0) {
        memmove(c->buf, c->buf + c->pos, c->len - c->pos);
        c->len -= c->pos;
        c->pos = 0;
    }
    while (c->len < n) {
        ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
    }
    return 0;
}

/* Drops n body bytes. */
static int h_skip(struct hconn *c, size_t n)
{
    while (n > 0) {
        if (c->pos == c->len) {
            c->pos = c->len = 0;
            if (h_need(c, 1) != 0)
                return -1;
        }
        size_t k = c->len - c->pos < n ? c->len - c->pos : n;
        c->pos += k;
        n -= k;
    }
    return 0;
}

/* The line at pos (without CRLF) as a NUL-terminated string in place. */
static char *h_line(struct hconn *c)
{
    for (;;) {
        char *nl = memchr(c->buf + c->pos, '\n', c->len - c->pos);
        if (nl) {
            char *line = c->buf + c->pos;
            *nl = '\0';
            if (nl > line && nl[-1] == '\r')
                nl[-1] = '\0';
            c->pos = (size_t)(nl + 1 - c->buf);
            return line;
        }
        if (h_need(c, c->len - c->pos + 1) != 0)
            return NULL;
    }
}

/* POSTs body to path; returns the status, *out_bytes = body bytes. */
static int h_post(struct hconn *c, const char *path, const char *body, size_t *out_bytes)
{
    char head[1024];
    size_t blen = strlen(body);
    int n = snprintf(head, sizeof head,
                     "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     path, blen);
    struct iovec iov[2] = {{head, (size_t)n}, {(void *)body, blen}};
    if (writev(c->fd, iov, 2) != (ssize_t)((size_t)n + blen))
        return -1;
    char *line = h_line(c);
    if (!line || strncmp(line, "HTTP/1.1 ", 9) != 0)
        return -1;
    int status = atoi(line + 9);
    long long clen = -1;
    bool chunked = false;
    while ((line = h_line(c)) && *line) {
        if (!strncasecmp(line, "Content-Length:", 15))
            clen = atoll(line + 15);
        else if (!strncasecmp(line, "Transfer-Encoding:", 18) && strstr(line + 18, "chunked"))
            chunked = true;
    }
    if (!line)
        return -1;
    size_t total = 0;
    if (chunked) {
        for (;;) {
            char *sz = h_line(c);
            if (!sz)
                return -1;
            size_t k = (size_t)strtoull(sz, NULL, 16);
            if (k == 0) {
                while ((line = h_line(c)) && *line) /* trailers */
                    ;
                break;
            }
            if (h_skip(c, k) != 0 || !h_line(c))
                return -1;
            total += k;
        }
    } else if (clen >= 0) {
        if (h_skip(c, (size_t)clen) != 0)
            return -1;
        total = (size_t)clen;
    }
    *out_bytes = total;
    return status;
}

/* ------------------------------------------------------------- commands */

struct stats {
    double median, min, p90, mean;
};

static struct stats stats_of(double *t, int n)
{
    struct stats s = {0};
    if (n <= 0)
        return s;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    s.median = t[n / 2];
    s.min = t[0];
    s.p90 = t[(n * 9) / 10];
    s.mean = sum / n;
    return s;
}

/*   run MODE RUNS PARAMS SQL
 *   cmp MODE RUNS PARAMS SQL BATCH PORT PATH BODIES
 * cmp interleaves: BATCH requests to the service (POST PATH on 127.0.0.1:PORT
 * over one keep-alive connection, bodies separated by \x1e used in turn),
 * then BATCH executions here, until RUNS of each; the i-th request and the
 * i-th execution use the same rotation index, so both see the same mix. */
static void cmd_run(duckdb_connection con, char *line, bool cmp)
{
    char *save;
    char *f_mode = strtok_r(line, "\t", &save);
    char *f_runs = strtok_r(NULL, "\t", &save);
    char *f_params = strtok_r(NULL, "\t", &save);
    char *f_sql = strtok_r(NULL, "\t", &save);
    char *f_batch = cmp ? strtok_r(NULL, "\t", &save) : NULL;
    char *f_port = cmp ? strtok_r(NULL, "\t", &save) : NULL;
    char *f_path = cmp ? strtok_r(NULL, "\t", &save) : NULL;
    char *f_bodies = cmp ? strtok_r(NULL, "\t", &save) : NULL;
    if (!f_mode || !f_runs || !f_params || !f_sql || (cmp && (!f_batch || !f_port || !f_path ||
                                                              !f_bodies))) {
        printf("error bad command\n");
        return;
    }
    enum mode mode;
    if (!strcmp(f_mode, "raw")) mode = M_RAW;
    else if (!strcmp(f_mode, "tojson")) mode = M_TOJSON;
    else if (!strcmp(f_mode, "jsonrows")) mode = M_JSONROWS;
    else if (!strcmp(f_mode, "count")) mode = M_COUNT;
    else if (!strcmp(f_mode, "arrowc")) mode = M_ARROWC;
    else if (!strcmp(f_mode, "arrow")) mode = M_ARROW;
    else {
        printf("error bad mode %s\n", f_mode);
        return;
    }
    int runs = atoi(f_runs);
    if (runs < 1)
        runs = 1;
    int batch = cmp ? atoi(f_batch) : runs;
    if (batch < 1)
        batch = 1;
    char *bodies[256];
    int nbodies = 0;
    if (cmp) {
        char *bsave;
        for (char *b = strtok_r(f_bodies, "\x1e", &bsave); b && nbodies < 256;
             b = strtok_r(NULL, "\x1e", &bsave))
            bodies[nbodies++] = b;
    }
    struct hconn hc = {.fd = -1};
    if (cmp && h_connect(&hc, atoi(f_port)) != 0) {
        printf("error cannot connect to port %s\n", f_port);
        h_close(&hc);
        return;
    }
    struct params p;
    params_parse(f_params, &p);
    struct strbuf sql;
    sb_init(&sql, 0);
    if (mode == M_TOJSON)
        sb_addf(&sql, "SELECT to_json(x) FROM (%s) x", f_sql);
    else
        sb_adds(&sql, f_sql);
    duckdb_prepared_statement ps;
    if (duckdb_prepare(con, sql.buf, &ps) != DuckDBSuccess)
        die("prepare", duckdb_prepare_error(ps));
    double *t = malloc((size_t)runs * sizeof *t);
    double *h = malloc((size_t)runs * sizeof *h);
    struct strbuf body;
    sb_init(&body, 0);
    size_t bytes = 0, hbytes = 0;
    uint64_t rows = 0;
    int hstatus = 0;
    double cpu = 0;
    for (int done = 0; done < runs;) {
        int n = runs - done < batch ? runs - done : batch;
        for (int i = 0; cmp && i < n; i++) {
            double t0 = now_us();
            hstatus = h_post(&hc, f_path, bodies[(done + i) % nbodies], &hbytes);
            h[done + i] = now_us() - t0;
            if (hstatus != 200) {
                printf("error service answered %d\n", hstatus);
                goto out;
            }
        }
        double c0 = cpu_us();
        for (int i = 0; i < n; i++) {
            int r = done + i;
            double t0 = now_us();
            if (p.nsets) {
                char **set = &p.vals[(size_t)r % p.nsets * p.per_set];
                for (size_t k = 0; k < p.per_set; k++)
                    if (duckdb_bind_varchar(ps, k + 1, set[k]) != DuckDBSuccess)
                        die("bind", set[k]);
            }
            bytes = run_once(ps, mode, &body, &rows);
            t[r] = now_us() - t0;
        }
        cpu += cpu_us() - c0;
        done += n;
    }
    cpu /= runs;
    struct stats fs = stats_of(t, runs);
    printf("result median_us=%.1f min_us=%.1f p90_us=%.1f mean_us=%.1f cpu_us=%.1f bytes=%zu "
           "rows=%llu",
           fs.median, fs.min, fs.p90, fs.mean, cpu, bytes, (unsigned long long)rows);
    if (cmp) {
        struct stats hs = stats_of(h, runs);
        printf(" svc_median_us=%.1f svc_min_us=%.1f svc_p90_us=%.1f svc_mean_us=%.1f svc_bytes=%zu",
               hs.median, hs.min, hs.p90, hs.mean, hbytes);
    }
    /* Small bodies (a count, a short page) are shown so the bench can check
     * them against the service's answer. */
    if ((mode == M_TOJSON || mode == M_JSONROWS || mode == M_COUNT) && body.len > 0 &&
        body.len <= 256 && !memchr(body.buf, '\n', body.len) &&
        !memchr(body.buf, ' ', body.len))
        printf(" body=%.*s", (int)body.len, body.buf);
    putchar('\n');
out:
    h_close(&hc);
    free(t);
    free(h);
    free(p.vals);
    sb_release(&body);
    sb_release(&sql);
    duckdb_destroy_prepare(&ps);
}

static int cmd_serve(const char *path)
{
    duckdb_database db;
    duckdb_connection con;
    open_db(&db, &con);
    /* "-": nothing loaded; the statements read files themselves (the lazy
     * floors of BENCH_SCALE, bench/scale.py). */
    double ms = 0;
    if (strcmp(path, "-") != 0) {
        ms = load(con, path);
        must(con, "USE g");
    }
    printf("ready load_ms=%.1f\n", ms);
    fflush(stdout);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "run\t", 4)) {
            cmd_run(con, line + 4, false);
        } else if (!strncmp(line, "cmp\t", 4)) {
            cmd_run(con, line + 4, true);
        } else if (!strcmp(line, "rss")) {
            long rss, hwm;
            read_rss(&rss, &hwm);
            printf("rss_kb=%ld hwm_kb=%ld duckdb_bytes=%lld\n", rss, hwm, duckdb_bytes(con));
        } else if (!strncmp(line, "exec\t", 5)) {
            duckdb_result res;
            if (duckdb_query(con, line + 5, &res) != DuckDBSuccess)
                printf("error %s\n", duckdb_result_error(&res));
            else
                printf("ok\n");
            duckdb_destroy_result(&res);
        } else if (!strcmp(line, "resethwm")) {
            /* VmHWM := VmRSS (Linux >= 4.0), to measure one step's peak. */
            FILE *f = fopen("/proc/self/clear_refs", "w");
            bool ok = f && fputs("5", f) >= 0;
            if (f && fclose(f) != 0)
                ok = false;
            printf(ok ? "ok\n" : "error cannot reset VmHWM\n");
        } else if (!strcmp(line, "quit")) {
            break;
        } else {
            printf("error unknown command\n");
        }
        fflush(stdout);
    }
    free(line);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return 0;
}

/* ------------------------------------------------------------------- mix */

struct mix_kind {
    char name[32];
    int conns;
    char *path;
    char *bodies[256];
    int nbodies;
    /* open loop (rate > 0): the arrival schedule, offsets in us from the
     * start, and the next arrival a connection takes */
    double rate;
    double *arrivals;
    size_t narrivals;
    _Atomic size_t next;
    _Atomic long late;
};

struct mix_conn {
    pthread_t thread;
    struct mix_kind *kind;
    int port, index;
    double t_start, t_measure, t_end; /* now_us() values */
    double *lat;                /* measured latencies (us) */
    double *lag;                /* open loop: due -> request sent (us), per latency */
    double *at;                 /* when each measured request started (us from t_measure) */
    size_t nlat, caplat;
    int64_t run_delay_ns, slices; /* this thread's schedstat at its end */
    long errors;
    size_t bytes;
};

/* Records one answer's latency (us) when it counts. */
static void mix_record(struct mix_conn *m, int st, double t0, double lat, double lag,
                       size_t bytes)
{
    if (st != 200) {
        m->errors++;
        return;
    }
    if (m->nlat == m->caplat) {
        m->caplat = m->caplat ? m->caplat * 2 : 1024;
        m->lat = realloc(m->lat, m->caplat * sizeof *m->lat);
        m->lag = realloc(m->lag, m->caplat * sizeof *m->lag);
        m->at = realloc(m->at, m->caplat * sizeof *m->at);
        if (!m->lat || !m->lag || !m->at)
            die("mix", "out of memory");
    }
    m->at[m->nlat] = t0 - m->t_measure;
    m->lag[m->nlat] = lag;
    m->lat[m->nlat++] = lat;
    m->bytes += bytes;
}

static void sleep_until_us(double t)
{
    for (;;) {
        double d = t - now_us();
        if (d <= 0)
            return;
        struct timespec ts = {(time_t)(d / 1e6), (long)fmod(d, 1e6) * 1000L};
        nanosleep(&ts, NULL);
    }
}

/* An open-loop connection: takes the kind's next arrival, sends it at its
 * time (or as soon as this connection is free, if later). */
static void mix_open(struct mix_conn *m, double t_start)
{
    struct mix_kind *k = m->kind;
    struct hconn hc = {.fd = -1};
    bool up = false;
    for (;;) {
        size_t i = atomic_fetch_add(&k->next, 1);
        if (i >= k->narrivals)
            break;
        double due = t_start + k->arrivals[i];
        sleep_until_us(due);
        if (!up) {
            h_close(&hc);
            up = h_connect(&hc, m->port) == 0;
        }
        /* How late this client sends it: its connection was busy, or its
         * thread waited for a CPU after the sleep (the load generator's
         * share of a latency, not the server's). */
        double sent = now_us();
        if (sent > due + 1000)
            atomic_fetch_add(&k->late, 1);
        size_t bytes = 0;
        int st = up ? h_post(&hc, k->path, k->bodies[i % (size_t)k->nbodies], &bytes) : -1;
        double t1 = now_us();
        if (st < 0)
            up = false;
        if (due >= m->t_measure)
            mix_record(m, st, due, t1 - due, sent - due, bytes);
    }
    h_close(&hc);
}

static void *mix_main(void *arg)
{
    struct mix_conn *m = arg;
    if (m->kind->rate > 0) {
        mix_open(m, m->t_start);
        return NULL;
    }
    struct hconn hc = {.fd = -1};
    bool up = false;
    for (unsigned i = (unsigned)m->index * 7919u;; i++) {
        double t0 = now_us();
        if (t0 >= m->t_end)
            break;
        if (!up) {
            h_close(&hc);
            up = h_connect(&hc, m->port) == 0;
            if (!up) {
                m->errors++;
                struct timespec ts = {0, 10000000L};
                nanosleep(&ts, NULL);
                continue;
            }
        }
        size_t bytes = 0;
        int st = h_post(&hc, m->kind->path, m->kind->bodies[i % (unsigned)m->kind->nbodies], &bytes);
        double t1 = now_us();
        if (st < 0)
            up = false;
        if (t0 < m->t_measure)
            continue;
        mix_record(m, st, t0, t1 - t0, 0, bytes);
    }
    h_close(&hc);
    return NULL;
}

/* The calling thread's time waiting for a CPU (ns) and its timeslices so
 * far (/proc/thread-self/schedstat); zeros where the kernel keeps none. */
static void thread_schedstat(int64_t *run_delay_ns, int64_t *slices)
{
    *run_delay_ns = *slices = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        return;
    long long run, delay, n;
    if (fscanf(f, "%lld %lld %lld", &run, &delay, &n) == 3) {
        *run_delay_ns = delay;
        *slices = n;
    }
    fclose(f);
}

/* VT_FLOOR_MIX_SLICE_US (default 0: the kernel's slice): the scheduling
 * slice the load generator's threads ask for, e.g. 100 for the one the
 * server's HTTP loops have. Measured both ways in six alternated pairs
 * (README.md "Fair latency under mixed load"): no difference the shared
 * machine's noise lets through, so the default stays the kernel's. */
static int64_t mix_slice_us = 0;

static void *mix_thread(void *arg)
{
    struct mix_conn *m = arg;
    if (mix_slice_us > 0)
        eng_thread_slice(mix_slice_us);
    mix_main(m);
    thread_schedstat(&m->run_delay_ns, &m->slices);
    return NULL;
}

/* The kind's Poisson arrivals over `span_us`, from a seed that is its name:
 * the same schedule whenever the kind runs. */
static void mix_schedule(struct mix_kind *k, double span_us)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (const char *p = k->name; *p; p++)
        x = (x ^ (unsigned char)*p) * 0x100000001b3ull;
    size_t cap = (size_t)(k->rate * span_us / 1e6 * 1.5) + 16;
    k->arrivals = malloc(cap * sizeof *k->arrivals);
    if (!k->arrivals)
        die("mix", "out of memory");
    double t = 0;
    for (;;) {
        x ^= x << 13; /* xorshift64 */
        x ^= x >> 7;
        x ^= x << 17;
        double u = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
        t += -log(u) / k->rate * 1e6;
        if (t >= span_us)
            break;
        if (k->narrivals == cap) {
            cap *= 2;
            k->arrivals = realloc(k->arrivals, cap * sizeof *k->arrivals);
            if (!k->arrivals)
                die("mix", "out of memory");
        }
        k->arrivals[k->narrivals++] = t;
    }
}

static int cmd_mix(int port, long warmup_ms, double seconds, const char *specfile)
{
    FILE *f = fopen(specfile, "r");
    if (!f)
        die(specfile, "cannot open");
    struct mix_kind kinds[16];
    int nk = 0, total = 0;
    char *line = NULL;
    size_t cap = 0;
    while (nk < 16 && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *save;
        char *name = strtok_r(line, "\t", &save), *conns = strtok_r(NULL, "\t", &save);
        char *path = strtok_r(NULL, "\t", &save), *bodies = strtok_r(NULL, "\t", &save);
        char *rate = strtok_r(NULL, "\t", &save);
        if (!name || !conns || !path || !bodies)
            continue;
        struct mix_kind *k = &kinds[nk++];
        memset(k, 0, sizeof *k);
        snprintf(k->name, sizeof k->name, "%s", name);
        k->conns = atoi(conns);
        k->path = strdup(path);
        char *bsave;
        for (char *b = strtok_r(bodies, "\x1e", &bsave); b && k->nbodies < 256;
             b = strtok_r(NULL, "\x1e", &bsave))
            k->bodies[k->nbodies++] = strdup(b);
        if (k->conns < 1 || k->nbodies < 1)
            die("mix", "a kind needs connections and bodies");
        if (rate && (k->rate = atof(rate)) > 0)
            mix_schedule(k, (double)warmup_ms * 1e3 + seconds * 1e6);
        total += k->conns;
    }
    free(line);
    fclose(f);
    struct mix_conn *mc = calloc((size_t)total, sizeof *mc);
    const char *sl = getenv("VT_FLOOR_MIX_SLICE_US");
    if (sl && *sl)
        mix_slice_us = atoll(sl);
    double t0 = now_us();
    int n = 0;
    for (int k = 0; k < nk; k++)
        for (int c = 0; c < kinds[k].conns; c++, n++) {
            mc[n].kind = &kinds[k];
            mc[n].port = port;
            mc[n].index = n;
            mc[n].t_start = t0;
            mc[n].t_measure = t0 + (double)warmup_ms * 1e3;
            mc[n].t_end = mc[n].t_measure + seconds * 1e6;
            if (pthread_create(&mc[n].thread, NULL, mix_thread, &mc[n]) != 0)
                die("mix", "cannot start a thread");
        }
    for (int i = 0; i < n; i++)
        pthread_join(mc[i].thread, NULL);
    /* VT_FLOOR_MIX_DUMP=FILE: every measured request as "kind conn start_us
     * latency_us" (start from the end of the warm-up), to see whether a
     * kind's slowest answers come together in time (the machine) or one by
     * one (a queue). */
    const char *dump = getenv("VT_FLOOR_MIX_DUMP");
    if (dump && *dump) {
        FILE *df = fopen(dump, "w");
        if (!df)
            die(dump, "cannot write");
        for (int i = 0; i < n; i++)
            for (size_t j = 0; j < mc[i].nlat; j++)
                fprintf(df, "%s %d %.0f %.0f\n", mc[i].kind->name, i, mc[i].at[j], mc[i].lat[j]);
        fclose(df);
    }
    for (int k = 0; k < nk; k++) {
        size_t cnt = 0, bytes = 0;
        long errors = 0;
        int64_t delay_ns = 0, slices = 0;
        for (int i = 0; i < n; i++)
            if (mc[i].kind == &kinds[k])
                cnt += mc[i].nlat;
        double *all = malloc((cnt ? cnt : 1) * sizeof *all);
        double *lags = malloc((cnt ? cnt : 1) * sizeof *lags);
        double *svc = malloc((cnt ? cnt : 1) * sizeof *svc);
        if (!all || !lags || !svc)
            die("mix", "out of memory");
        size_t at = 0;
        for (int i = 0; i < n; i++)
            if (mc[i].kind == &kinds[k]) {
                memcpy(all + at, mc[i].lat, mc[i].nlat * sizeof *all);
                memcpy(lags + at, mc[i].lag, mc[i].nlat * sizeof *lags);
                delay_ns += mc[i].run_delay_ns;
                slices += mc[i].slices;
                at += mc[i].nlat;
                errors += mc[i].errors;
                bytes += mc[i].bytes;
            }
        double sum = 0;
        for (size_t i = 0; i < cnt; i++) {
            svc[i] = all[i] - lags[i]; /* sent -> answer read */
            sum += all[i];
        }
        qsort(all, cnt, sizeof *all, cmp_double);
        double p50 = cnt ? all[cnt / 2] : 0, p90 = cnt ? all[cnt * 9 / 10] : 0;
        double p99 = cnt ? all[cnt * 99 / 100] : 0, mx = cnt ? all[cnt - 1] : 0;
        double p999 = cnt ? all[cnt * 999 / 1000] : 0;
        /* The mean beside the p99: by Little's law a closed loop's mean
         * latency is its connections over its throughput, so the mean ratio
         * alone/mixed is fixed by the CPU shares; the p99 ratio differs
         * from it by how much each run's tail stands out from its mean. */
        printf("mix kind=%s requests=%zu errors=%ld mean_us=%.0f p50_us=%.0f p90_us=%.0f "
               "p99_us=%.0f p999_us=%.0f max_us=%.0f bytes=%zu",
               kinds[k].name, cnt, errors, cnt ? sum / (double)cnt : 0, p50, p90, p99, p999, mx,
               bytes);
        if (kinds[k].rate > 0) {
            qsort(lags, cnt, sizeof *lags, cmp_double);
            qsort(svc, cnt, sizeof *svc, cmp_double);
            printf(" offered=%g late=%ld lag_p50_us=%.0f lag_p99_us=%.0f lag_max_us=%.0f "
                   "svc_p50_us=%.0f svc_p99_us=%.0f svc_max_us=%.0f",
                   kinds[k].rate, atomic_load(&kinds[k].late), cnt ? lags[cnt / 2] : 0,
                   cnt ? lags[cnt * 99 / 100] : 0, cnt ? lags[cnt - 1] : 0,
                   cnt ? svc[cnt / 2] : 0, cnt ? svc[cnt * 99 / 100] : 0,
                   cnt ? svc[cnt - 1] : 0);
        }
        printf(" client_run_delay_us=%.0f client_slices=%lld\n", (double)delay_ns / 1e3,
               (long long)slices);
        free(all);
        free(lags);
        free(svc);
        free(kinds[k].arrivals);
    }
    for (int i = 0; i < n; i++) {
        free(mc[i].lat);
        free(mc[i].lag);
        free(mc[i].at);
    }
    free(mc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "mix"))
        return cmd_mix(atoi(argv[2]), atol(argv[3]), atof(argv[4]), argv[5]);
    if (argc == 4 && !strcmp(argv[1], "gen"))
        return cmd_gen(argv[2], atol(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "load"))
        return cmd_load(argv[2], atol(argv[3]));
    if (argc == 3 && !strcmp(argv[1], "serve"))
        return cmd_serve(argv[2]);
    fprintf(stderr, "usage: vt-floor gen OUT.parquet ROWS | load FILE IDLE_MS | serve FILE | "
                    "mix PORT WARMUP_MS SECONDS SPECFILE\n");
    return 2;
}
