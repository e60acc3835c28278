/* The metrics module: per-thread shards summed at scrape (counts from many
 * threads add up exactly, histogram counts equal request counts), bounded
 * labels (unknown routes and statuses share a slot), and the text writer's
 * escaping and number formatting. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "testlib.h"

static const char *const routes[] = {"/healthz", "/api/v1/datasets/{name}/query", "/metrics"};

static char *scrape(void)
{
    struct strbuf out;
    sb_init(&out, 0);
    metrics_write_core(&out);
    return sb_detach(&out, NULL);
}

/* The value of the line that starts with `prefix` (a full sample name with
 * labels), or -1. */
static double value_of(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, prefix, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

#define THREADS 4
#define PER_THREAD 25000

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++)
        metrics_http_observe(1, 1u << 2 /* POST */, i % 5 ? 200 : 400, 100, (uint64_t)(i % 300),
                             i % 5 ? VT_ERR_OK : VT_ERR_INVALID_QUERY);
    return NULL;
}

TEST(shards_from_many_threads_sum_exactly)
{
    metrics_http_routes(routes, 3);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, hammer, NULL);
    /* Scrapes while the threads write: never torn, never more than final. */
    for (int k = 0; k < 20; k++) {
        char *t = scrape();
        double v = value_of(t, "vitrine_http_requests_total{route=\"/api/v1/datasets/{name}/"
                               "query\",method=\"POST\",status=\"200\"}");
        CHECK(v <= THREADS * PER_THREAD * 4 / 5);
        free(t);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    char *t = scrape();
    CHECK_EQ_INT(value_of(t, "vitrine_http_requests_total{route=\"/api/v1/datasets/{name}/query\","
                             "method=\"POST\",status=\"200\"}"),
                 THREADS * PER_THREAD * 4 / 5);
    CHECK_EQ_INT(value_of(t, "vitrine_http_requests_total{route=\"/api/v1/datasets/{name}/query\","
                             "method=\"POST\",status=\"400\"}"),
                 THREADS * PER_THREAD / 5);
    CHECK_EQ_INT(value_of(t, "vitrine_http_request_duration_seconds_count{route=\"/api/v1/"
                             "datasets/{name}/query\",method=\"POST\"}"),
                 THREADS * PER_THREAD);
    CHECK_EQ_INT(value_of(t, "vitrine_http_request_duration_seconds_bucket{route=\"/api/v1/"
                             "datasets/{name}/query\",method=\"POST\",le=\"+Inf\"}"),
                 THREADS * PER_THREAD);
    /* i % 300 <= 100 µs: 101 of every 300 (the 0.0001 bucket is <=). */
    double b = value_of(t, "vitrine_http_request_duration_seconds_bucket{route=\"/api/v1/"
                           "datasets/{name}/query\",method=\"POST\",le=\"0.0001\"}");
    CHECK(b > 0 && b < THREADS * PER_THREAD);
    CHECK_EQ_INT(value_of(t, "vitrine_http_response_bytes_total{route=\"/api/v1/datasets/{name}/"
                             "query\",method=\"POST\"}"),
                 THREADS * PER_THREAD * 100);
    CHECK_EQ_INT(value_of(t, "vitrine_http_errors_total{route=\"/api/v1/datasets/{name}/query\","
                             "code=\"invalid_query\",status=\"400\"}"),
                 THREADS * PER_THREAD / 5);
    uint64_t req, hist;
    metrics_http_totals(1, &req, &hist);
    CHECK_EQ_INT(req, THREADS * PER_THREAD);
    CHECK_EQ_INT(hist, THREADS * PER_THREAD);
    free(t);
}

TEST(labels_are_bounded)
{
    metrics_http_routes(routes, 3);
    for (int i = 0; i < 1000; i++)
        metrics_http_observe(99 + (unsigned)i, 1u << 0, 404, 10, 5, VT_ERR_NOT_FOUND);
    metrics_http_observe(0, 1u << 0, 299, 0, 5, VT_ERR_OK);   /* a status without a slot */
    metrics_http_observe(0, 0, 200, 0, 5, VT_ERR_OK);         /* no method (MHD answered) */
    metrics_http_observe(0, 1u << 0, 999, 0, 5, VT_ERR_OK);   /* out of range */
    char *t = scrape();
    CHECK_EQ_INT(value_of(t, "vitrine_http_requests_total{route=\"unmatched\",method=\"GET\","
                             "status=\"404\"}"),
                 1000);
    CHECK_EQ_INT(value_of(t, "vitrine_http_requests_total{route=\"/healthz\",method=\"GET\","
                             "status=\"other\"}"),
                 2);
    CHECK_EQ_INT(value_of(t, "vitrine_http_requests_total{route=\"/healthz\",method=\"OTHER\","
                             "status=\"200\"}"),
                 1);
    size_t unmatched_lines = 0;
    for (const char *p = strstr(t, "route=\"unmatched\""); p; p = strstr(p + 1, "route=\"unmatched\""))
        unmatched_lines++;
    /* requests_total + 15 buckets + sum + count + bytes + errors */
    CHECK_EQ_INT(unmatched_lines, 20);
    free(t);
}

TEST(writer_escapes_and_formats)
{
    struct strbuf out;
    sb_init(&out, 0);
    metrics_w_family(&out, "x_total", METRICS_COUNTER, "a \\ b\nc");
    const char *labels[] = {"dataset", "we\"ird\\na\nme", NULL};
    metrics_w_sample(&out, "x_total", labels, 3);
    metrics_w_sample(&out, "y", NULL, 0.1);
    metrics_w_sample(&out, "z", NULL, 1.0 / 3.0);
    metrics_w_sample_u64(&out, "w", NULL, 18446744073709551615ull);
    CHECK_EQ_STR(out.buf, "# HELP x_total a \\\\ b\\nc\n"
                          "# TYPE x_total counter\n"
                          "x_total{dataset=\"we\\\"ird\\\\na\\nme\"} 3\n"
                          "y 0.1\n"
                          "z 0.33333333333333331\n"
                          "w 18446744073709551615\n");
    sb_release(&out);
}

TEST(rare_events)
{
    metrics_refresh_observe(1, true, 1500);
    metrics_refresh_observe(1, false, 20);
    metrics_refresh_observe(3, true, 2);
    metrics_export_observe(true, 250, 4096);
    metrics_export_observe(false, 10, 0);
    metrics_connection_rejected();
    char *t = scrape();
    CHECK_EQ_INT(value_of(t, "vitrine_dataset_refresh_duration_seconds_count{trigger=\"startup\"}"), 2);
    CHECK_EQ_INT(value_of(t, "vitrine_dataset_refresh_duration_seconds_bucket{trigger=\"startup\","
                             "le=\"1\"}"),
                 1);
    CHECK_EQ_INT(value_of(t, "vitrine_dataset_refresh_duration_seconds_count{trigger=\"schedule\"}"), 1);
    CHECK(value_of(t, "vitrine_dataset_refresh_duration_seconds_count{trigger=\"manual\"}") < 0);
    CHECK_EQ_INT(value_of(t, "vitrine_parquet_export_builds_total{outcome=\"success\"}"), 1);
    CHECK_EQ_INT(value_of(t, "vitrine_parquet_export_builds_total{outcome=\"failure\"}"), 1);
    CHECK_EQ_INT(value_of(t, "vitrine_parquet_export_written_bytes_total"), 4096);
    CHECK_EQ_INT(value_of(t, "vitrine_http_connections_rejected_total"), 1);
    free(t);
}

RUN_TESTS(TEST_CASE(shards_from_many_threads_sum_exactly), TEST_CASE(labels_are_bounded),
          TEST_CASE(writer_escapes_and_formats), TEST_CASE(rare_events))
