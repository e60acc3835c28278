/*
 * The hot-path counters (per-thread shards) and the Prometheus text writer;
 * see metrics.h for the model.
 *
 * Why shards and not atomic adds: a `lock add` on a counter that every HTTP
 * thread touches bounces its cache line between cores on every request. A
 * shard is written by one thread only, so a relaxed load + store (two plain
 * moves) is enough and the line stays in that core's cache; the scrape, which
 * is rare, pays for the sum. Relaxed atomics make the concurrent read
 * well-defined (a scrape sees each counter's old or new value, never a torn
 * one: 64-bit aligned moves).
 */
#include "metrics/metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUTE_SLOTS (METRICS_MAX_ROUTES + 1)

/* The statuses vitrine sends, each with a slot; anything else is "other". */
static const int known_status[] = {0,   200, 201, 202, 204, 206, 301, 302, 304, 400, 401,
                                   403, 404, 405, 406, 408, 409, 410, 411, 412, 413, 414,
                                   415, 416, 417, 421, 422, 429, 431, 500, 501, 502, 503, 504, 505};
#define N_KNOWN_STATUS (sizeof known_status / sizeof known_status[0])
#define STATUS_SLOTS (N_KNOWN_STATUS + 1) /* + other */

static const char *const method_names[METRICS_METHODS] = {"GET",    "HEAD",  "POST",    "PUT",
                                                          "DELETE", "PATCH", "OPTIONS", "OTHER"};

/* Upper bounds in microseconds (the label text beside). */
static const uint64_t http_bounds_us[METRICS_HTTP_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000, 2500000,
    10000000};
static const char *const http_bounds_text[METRICS_HTTP_BUCKETS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025",  "0.05",    "0.1",    "0.25",  "1",      "2.5",   "10"};
#define HTTP_BUCKET_SLOTS (METRICS_HTTP_BUCKETS + 1) /* + Inf */

typedef _Atomic uint64_t counter;

struct shard {
    counter req[ROUTE_SLOTS][METRICS_METHODS][STATUS_SLOTS];
    counter hist[ROUTE_SLOTS][METRICS_METHODS][HTTP_BUCKET_SLOTS]; /* not cumulative */
    counter sum_us[ROUTE_SLOTS][METRICS_METHODS];
    counter bytes[ROUTE_SLOTS][METRICS_METHODS];
    counter errors[ROUTE_SLOTS][VT_ERR__COUNT];
    _Atomic uint8_t used[ROUTE_SLOTS]; /* methods seen per route (bit set) */
    _Atomic uint8_t used_errors[ROUTE_SLOTS];
    struct shard *next;
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shard *_Atomic shards; /* pushed at the head, never removed */
static _Thread_local struct shard *my_shard;

static char *route_labels[ROUTE_SLOTS];
static size_t n_routes;

/* Status code -> slot, built once. */
static uint8_t status_slot[600];
static pthread_once_t status_once = PTHREAD_ONCE_INIT;

static void build_status_slots(void)
{
    memset(status_slot, N_KNOWN_STATUS, sizeof status_slot);
    for (size_t i = 0; i < N_KNOWN_STATUS; i++)
        status_slot[known_status[i]] = (uint8_t)i;
}

static inline void bump(counter *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

static struct shard *shard_new(void)
{
    struct shard *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_lock(&registry_mu);
    s->next = atomic_load(&shards);
    atomic_store(&shards, s);
    pthread_mutex_unlock(&registry_mu);
    return s;
}

void metrics_http_routes(const char *const *patterns, size_t n)
{
    pthread_once(&status_once, build_status_slots);
    pthread_mutex_lock(&registry_mu);
    for (size_t i = 0; i < ROUTE_SLOTS; i++) {
        free(route_labels[i]);
        route_labels[i] = NULL;
    }
    if (n > METRICS_MAX_ROUTES)
        n = METRICS_MAX_ROUTES;
    for (size_t i = 0; i < n; i++)
        route_labels[i] = strdup(patterns[i] ? patterns[i] : "");
    n_routes = n;
    pthread_mutex_unlock(&registry_mu);
}

void metrics_http_observe(unsigned route, unsigned method_bit, int status, uint64_t bytes,
                          uint64_t dur_us, enum vt_err err)
{
    struct shard *s = my_shard;
    if (__builtin_expect(!s, 0)) {
        pthread_once(&status_once, build_status_slots);
        s = my_shard = shard_new();
        if (!s)
            return;
    }
    /* n_routes is set before the server starts serving. */
    if (route >= n_routes)
        route = METRICS_MAX_ROUTES;
    unsigned m = method_bit ? (unsigned)__builtin_ctz(method_bit) : METRICS_METHODS - 1;
    if (m >= METRICS_METHODS)
        m = METRICS_METHODS - 1;
    unsigned st = status >= 0 && status < 600 ? status_slot[status] : N_KNOWN_STATUS;
    unsigned b = 0;
    while (b < METRICS_HTTP_BUCKETS && dur_us > http_bounds_us[b])
        b++;
    bump(&s->req[route][m][st], 1);
    bump(&s->hist[route][m][b], 1);
    bump(&s->sum_us[route][m], dur_us);
    bump(&s->bytes[route][m], bytes);
    uint8_t used = atomic_load_explicit(&s->used[route], memory_order_relaxed);
    if (!(used & (1u << m)))
        atomic_store_explicit(&s->used[route], (uint8_t)(used | (1u << m)), memory_order_relaxed);
    if (err != VT_ERR_OK && (unsigned)err < VT_ERR__COUNT) {
        bump(&s->errors[route][err], 1);
        atomic_store_explicit(&s->used_errors[route], 1, memory_order_relaxed);
    }
}

/* ------------------------------------------------------------ rare events */

#define REFRESH_BUCKETS 11
static const double refresh_bounds[REFRESH_BUCKETS] = {0.01, 0.1, 0.5, 1,   5,   10,
                                                       30,   60,  300, 900, 3600};

static pthread_mutex_t rare_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t hist[METRICS_TRIGGERS][REFRESH_BUCKETS + 1];
    double sum[METRICS_TRIGGERS];
    uint64_t count[METRICS_TRIGGERS];
    uint64_t export_ok, export_failed, export_bytes;
    double export_seconds;
} rare;
static atomic_uint_fast64_t connections_rejected;

void metrics_refresh_observe(int trigger, bool ok, int64_t dur_ms)
{
    (void)ok; /* outcomes are counted per dataset by the catalog */
    if (trigger < 0 || trigger >= METRICS_TRIGGERS)
        trigger = 0;
    double secs = (double)(dur_ms < 0 ? 0 : dur_ms) / 1000.0;
    size_t b = 0;
    while (b < REFRESH_BUCKETS && secs > refresh_bounds[b])
        b++;
    pthread_mutex_lock(&rare_mu);
    rare.hist[trigger][b]++;
    rare.sum[trigger] += secs;
    rare.count[trigger]++;
    pthread_mutex_unlock(&rare_mu);
}

void metrics_export_observe(bool ok, int64_t dur_ms, uint64_t bytes)
{
    pthread_mutex_lock(&rare_mu);
    if (ok) {
        rare.export_ok++;
        rare.export_bytes += bytes;
    } else {
        rare.export_failed++;
    }
    rare.export_seconds += (double)(dur_ms < 0 ? 0 : dur_ms) / 1000.0;
    pthread_mutex_unlock(&rare_mu);
}

void metrics_connection_rejected(void)
{
    atomic_fetch_add(&connections_rejected, 1);
}

/* ------------------------------------------------------------ the writer */

void metrics_w_label_value(struct strbuf *out, const char *v)
{
    const char *p = v ? v : "";
    for (;;) {
        size_t plain = strcspn(p, "\\\"\n");
        sb_add(out, p, plain);
        p += plain;
        if (!*p)
            return;
        sb_adds(out, *p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\");
        p++;
    }
}

/* Appends " <v>\n" (the hot part of a scrape: printf is slow for this). */
void metrics_w_value_u64(struct strbuf *out, uint64_t v)
{
    char tmp[24];
    char *e = tmp + sizeof tmp, *p = e;
    *--p = '\n';
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    *--p = ' ';
    sb_add(out, p, (size_t)(e - p));
}

void metrics_w_family(struct strbuf *out, const char *name, enum metrics_type type,
                      const char *help)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    sb_adds(out, "# HELP ");
    sb_adds(out, name);
    sb_addc(out, ' ');
    /* HELP text escapes only backslash and newline. */
    for (const char *p = help; *p; p++) {
        if (*p == '\\')
            sb_adds(out, "\\\\");
        else if (*p == '\n')
            sb_adds(out, "\\n");
        else
            sb_addc(out, *p);
    }
    sb_adds(out, "\n# TYPE ");
    sb_adds(out, name);
    sb_addc(out, ' ');
    sb_adds(out, types[type]);
    sb_addc(out, '\n');
}

static void write_labels(struct strbuf *out, const char *const *labels)
{
    if (!labels || !labels[0])
        return;
    sb_addc(out, '{');
    for (size_t i = 0; labels[i] && labels[i + 1]; i += 2) {
        if (i)
            sb_addc(out, ',');
        sb_adds(out, labels[i]);
        sb_add(out, "=\"", 2);
        metrics_w_label_value(out, labels[i + 1]);
        sb_addc(out, '"');
    }
    sb_addc(out, '}');
}

void metrics_w_sample_u64(struct strbuf *out, const char *name, const char *const *labels,
                          uint64_t value)
{
    sb_adds(out, name);
    write_labels(out, labels);
    metrics_w_value_u64(out, value);
}

void metrics_w_value_fixed(struct strbuf *out, int64_t value, int decimals)
{
    uint64_t scale = 1;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    uint64_t mag = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    uint64_t whole = mag / scale, frac = mag % scale;
    char tmp[48];
    char *e = tmp + sizeof tmp, *p = e;
    *--p = '\n';
    int d = decimals;
    while (d > 0 && frac % 10 == 0) { /* trailing zeros of the fraction go */
        frac /= 10;
        d--;
    }
    if (d > 0) {
        for (int i = 0; i < d; i++) {
            *--p = (char)('0' + frac % 10);
            frac /= 10;
        }
        *--p = '.';
    }
    do {
        *--p = (char)('0' + whole % 10);
        whole /= 10;
    } while (whole);
    if (value < 0)
        *--p = '-';
    *--p = ' ';
    sb_add(out, p, (size_t)(e - p));
}

void metrics_w_sample_fixed(struct strbuf *out, const char *name, const char *const *labels,
                            int64_t value, int decimals)
{
    sb_adds(out, name);
    write_labels(out, labels);
    metrics_w_value_fixed(out, value, decimals);
}

void metrics_w_sample(struct strbuf *out, const char *name, const char *const *labels,
                      double value)
{
    sb_adds(out, name);
    write_labels(out, labels);
    /* Integral values print as integers; others with the fewest digits
     * (15, else 17) that read back as the same double. */
    if (value >= 0 && value < 1e15 && value == (double)(uint64_t)value) {
        metrics_w_value_u64(out, (uint64_t)value);
        return;
    }
    char text[40];
    snprintf(text, sizeof text, "%.15g", value);
    if (strtod(text, NULL) != value)
        snprintf(text, sizeof text, "%.17g", value);
    sb_addf(out, " %s\n", text);
}

/* ------------------------------------------------------------ the scrape */

/* The sum of every shard, for the (route, method) rows some shard used. */
struct totals {
    uint64_t req[ROUTE_SLOTS][METRICS_METHODS][STATUS_SLOTS];
    uint64_t hist[ROUTE_SLOTS][METRICS_METHODS][HTTP_BUCKET_SLOTS];
    uint64_t sum_us[ROUTE_SLOTS][METRICS_METHODS];
    uint64_t bytes[ROUTE_SLOTS][METRICS_METHODS];
    uint64_t errors[ROUTE_SLOTS][VT_ERR__COUNT];
    uint8_t used[ROUTE_SLOTS];
    uint8_t used_errors[ROUTE_SLOTS];
};

static struct totals *sum_shards(void)
{
    struct totals *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    memset(t->used, 0, sizeof t->used);
    memset(t->used_errors, 0, sizeof t->used_errors);
    for (struct shard *s = atomic_load(&shards); s; s = s->next) {
        for (size_t r = 0; r < ROUTE_SLOTS; r++) {
            uint8_t used = atomic_load_explicit(&s->used[r], memory_order_relaxed);
            uint8_t fresh = (uint8_t)(used & ~t->used[r]);
            t->used[r] |= used;
            for (unsigned m = 0; m < METRICS_METHODS; m++) {
                if (!(used & (1u << m)))
                    continue;
                bool init = (fresh & (1u << m)) != 0;
                for (size_t k = 0; k < STATUS_SLOTS; k++) {
                    uint64_t v = atomic_load_explicit(&s->req[r][m][k], memory_order_relaxed);
                    t->req[r][m][k] = init ? v : t->req[r][m][k] + v;
                }
                for (size_t k = 0; k < HTTP_BUCKET_SLOTS; k++) {
                    uint64_t v = atomic_load_explicit(&s->hist[r][m][k], memory_order_relaxed);
                    t->hist[r][m][k] = init ? v : t->hist[r][m][k] + v;
                }
                uint64_t su = atomic_load_explicit(&s->sum_us[r][m], memory_order_relaxed);
                uint64_t by = atomic_load_explicit(&s->bytes[r][m], memory_order_relaxed);
                t->sum_us[r][m] = init ? su : t->sum_us[r][m] + su;
                t->bytes[r][m] = init ? by : t->bytes[r][m] + by;
            }
            if (atomic_load_explicit(&s->used_errors[r], memory_order_relaxed)) {
                if (!t->used_errors[r])
                    memset(t->errors[r], 0, sizeof t->errors[r]);
                t->used_errors[r] = 1;
                for (size_t e = 0; e < VT_ERR__COUNT; e++)
                    t->errors[r][e] += atomic_load_explicit(&s->errors[r][e], memory_order_relaxed);
            }
        }
    }
    return t;
}

static const char *route_label(size_t r)
{
    if (r < n_routes && route_labels[r])
        return route_labels[r];
    return METRICS_UNMATCHED_LABEL;
}

void metrics_http_totals(unsigned route, uint64_t *out_requests, uint64_t *out_hist_count)
{
    *out_requests = *out_hist_count = 0;
    if (route > METRICS_MAX_ROUTES)
        route = METRICS_MAX_ROUTES;
    for (struct shard *s = atomic_load(&shards); s; s = s->next)
        for (unsigned m = 0; m < METRICS_METHODS; m++) {
            for (size_t k = 0; k < STATUS_SLOTS; k++)
                *out_requests += atomic_load_explicit(&s->req[route][m][k], memory_order_relaxed);
            for (size_t k = 0; k < HTTP_BUCKET_SLOTS; k++)
                *out_hist_count += atomic_load_explicit(&s->hist[route][m][k], memory_order_relaxed);
        }
}

static void write_http(struct strbuf *out, const struct totals *t)
{
    char status[16];
    metrics_w_family(out, "vitrine_http_requests_total", METRICS_COUNTER,
                     "HTTP requests completed, by route pattern, method and status.");
    for (size_t r = 0; r < ROUTE_SLOTS; r++)
        for (unsigned m = 0; m < METRICS_METHODS; m++) {
            if (!(t->used[r] & (1u << m)))
                continue;
            for (size_t k = 0; k < STATUS_SLOTS; k++) {
                if (!t->req[r][m][k])
                    continue;
                if (k < N_KNOWN_STATUS)
                    snprintf(status, sizeof status, "%d", known_status[k]);
                else
                    snprintf(status, sizeof status, "other");
                const char *labels[] = {"route",  route_label(r), "method", method_names[m],
                                        "status", status,         NULL};
                metrics_w_sample_u64(out, "vitrine_http_requests_total", labels,
                                     t->req[r][m][k]);
            }
        }
    metrics_w_family(out, "vitrine_http_request_duration_seconds", METRICS_HISTOGRAM,
                     "Time from the request line to the end of the response, by route pattern "
                     "and method.");
    for (size_t r = 0; r < ROUTE_SLOTS; r++)
        for (unsigned m = 0; m < METRICS_METHODS; m++) {
            if (!(t->used[r] & (1u << m)))
                continue;
            uint64_t cum = 0;
            for (size_t k = 0; k < HTTP_BUCKET_SLOTS; k++) {
                cum += t->hist[r][m][k];
                const char *le = k < METRICS_HTTP_BUCKETS ? http_bounds_text[k] : "+Inf";
                const char *labels[] = {"route", route_label(r), "method", method_names[m],
                                        "le",    le,             NULL};
                metrics_w_sample_u64(out, "vitrine_http_request_duration_seconds_bucket", labels,
                                     cum);
            }
            const char *labels[] = {"route", route_label(r), "method", method_names[m], NULL};
            metrics_w_sample_fixed(out, "vitrine_http_request_duration_seconds_sum", labels,
                                   (int64_t)t->sum_us[r][m], 6);
            metrics_w_sample_u64(out, "vitrine_http_request_duration_seconds_count", labels, cum);
        }
    metrics_w_family(out, "vitrine_http_response_bytes_total", METRICS_COUNTER,
                     "Response body bytes sent (after compression), by route pattern and method.");
    for (size_t r = 0; r < ROUTE_SLOTS; r++)
        for (unsigned m = 0; m < METRICS_METHODS; m++) {
            if (!(t->used[r] & (1u << m)))
                continue;
            const char *labels[] = {"route", route_label(r), "method", method_names[m], NULL};
            metrics_w_sample_u64(out, "vitrine_http_response_bytes_total", labels,
                                 t->bytes[r][m]);
        }
    metrics_w_family(out, "vitrine_http_errors_total", METRICS_COUNTER,
                     "Error responses by route pattern and error code (413 body_too_large, "
                     "504 timeout, 503 unavailable/dataset_not_ready/shutting_down, ...).");
    for (size_t r = 0; r < ROUTE_SLOTS; r++) {
        if (!t->used_errors[r])
            continue;
        for (size_t e = 0; e < VT_ERR__COUNT; e++) {
            if (!t->errors[r][e])
                continue;
            char st[8];
            snprintf(st, sizeof st, "%d", vt_err_status((enum vt_err)e));
            const char *labels[] = {"route",  route_label(r), "code", vt_err_code((enum vt_err)e),
                                    "status", st,             NULL};
            metrics_w_sample_u64(out, "vitrine_http_errors_total", labels, t->errors[r][e]);
        }
    }
    metrics_w_family(out, "vitrine_http_connections_rejected_total", METRICS_COUNTER,
                     "Connections answered 503 and closed at the connection cap.");
    metrics_w_sample_u64(out, "vitrine_http_connections_rejected_total", NULL,
                         atomic_load(&connections_rejected));
}

static const char *const trigger_names[METRICS_TRIGGERS] = {"none", "startup", "manual",
                                                            "schedule", "cascade"};

static void write_rare(struct strbuf *out)
{
    pthread_mutex_lock(&rare_mu);
    __typeof__(rare) r = rare;
    pthread_mutex_unlock(&rare_mu);
    metrics_w_family(out, "vitrine_dataset_refresh_duration_seconds", METRICS_HISTOGRAM,
                     "Dataset build durations (successful or not), by trigger.");
    for (int tr = 1; tr < METRICS_TRIGGERS; tr++) {
        if (!r.count[tr])
            continue;
        uint64_t cum = 0;
        char le[32];
        for (size_t b = 0; b <= REFRESH_BUCKETS; b++) {
            cum += r.hist[tr][b];
            if (b < REFRESH_BUCKETS)
                snprintf(le, sizeof le, "%g", refresh_bounds[b]);
            else
                snprintf(le, sizeof le, "+Inf");
            const char *labels[] = {"trigger", trigger_names[tr], "le", le, NULL};
            metrics_w_sample_u64(out, "vitrine_dataset_refresh_duration_seconds_bucket", labels,
                                 cum);
        }
        const char *labels[] = {"trigger", trigger_names[tr], NULL};
        metrics_w_sample(out, "vitrine_dataset_refresh_duration_seconds_sum", labels,
                         r.sum[tr]);
        metrics_w_sample_u64(out, "vitrine_dataset_refresh_duration_seconds_count", labels,
                             r.count[tr]);
    }
    metrics_w_family(out, "vitrine_parquet_export_builds_total", METRICS_COUNTER,
                     "Parquet export builds (one per generation that was downloaded), by "
                     "outcome.");
    const char *ok[] = {"outcome", "success", NULL};
    const char *failed[] = {"outcome", "failure", NULL};
    metrics_w_sample_u64(out, "vitrine_parquet_export_builds_total", ok, r.export_ok);
    metrics_w_sample_u64(out, "vitrine_parquet_export_builds_total", failed, r.export_failed);
    metrics_w_family(out, "vitrine_parquet_export_build_seconds_total", METRICS_COUNTER,
                     "Time spent building Parquet exports.");
    metrics_w_sample(out, "vitrine_parquet_export_build_seconds_total", NULL, r.export_seconds);
    metrics_w_family(out, "vitrine_parquet_export_written_bytes_total", METRICS_COUNTER,
                     "Bytes of Parquet exports written.");
    metrics_w_sample_u64(out, "vitrine_parquet_export_written_bytes_total", NULL,
                         r.export_bytes);
}

void metrics_write_core(struct strbuf *out)
{
    pthread_once(&status_once, build_status_slots);
    struct totals *t = sum_shards();
    if (t) {
        pthread_mutex_lock(&registry_mu); /* route labels */
        write_http(out, t);
        pthread_mutex_unlock(&registry_mu);
        free(t);
    }
    write_rare(out);
}
