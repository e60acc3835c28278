/*
 * Metrics: the counters the hot path updates, and the Prometheus text
 * exposition (format 0.0.4) the scrape writes.
 *
 * Hot path (every HTTP request): each thread that records gets its own shard
 * of counters the first time it records; only that thread writes its shard,
 * with relaxed atomic loads and stores (plain moves on x86, no lock prefix,
 * no shared cache line), and a scrape sums every shard. Shards live as long
 * as the process (a thread's counts outlive the thread: counters never go
 * down).
 *
 * Labels are bounded by construction: `route` is an index into the route
 * table the server registered (metrics_http_routes; the pattern is the
 * label, never the raw path, and requests no route matched share one
 * "unmatched" slot), the method is one of eight, the status one of a fixed
 * list (others count as "other"), the error code one of the error table's.
 *
 * Rare events (dataset refreshes, Parquet export builds) go through a mutex.
 *
 * The exposition writer (metrics_w_*) is pure text formatting: HELP/TYPE
 * lines once per family, label values escaped as the format requires.
 */
#ifndef VT_METRICS_METRICS_H
#define VT_METRICS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/errors.h"
#include "util/strbuf.h"

/* Route slots: the server's routes, then "unmatched". */
#define METRICS_MAX_ROUTES 96
#define METRICS_UNMATCHED_LABEL "unmatched"

/* Method slots (the order of enum http_method's bits). */
#define METRICS_METHODS 8

/* Buckets of vitrine_http_request_duration_seconds (upper bounds, seconds). */
#define METRICS_HTTP_BUCKETS 14

/* Refresh triggers: the catalog's refresh sources (startup, manual,
 * schedule, cascade), by their enum cat_refresh_source value 1..4. */
#define METRICS_TRIGGERS 5

/* Registers the route labels: slot i is patterns[i] (the server's routes in
 * its own order), slot n is "unmatched". Patterns are copied. Requests
 * recorded with a slot >= n count as unmatched. */
void metrics_http_routes(const char *const *patterns, size_t n);

/* One finished HTTP request. route: slot from metrics_http_routes (or any
 * larger value: unmatched); method_bit: an enum http_method bit; status: the
 * status sent (0: none); err: the error code of an error reply, VT_ERR_OK
 * otherwise; dur_us: from the request line to completion. Lock-free. */
void metrics_http_observe(unsigned route, unsigned method_bit, int status, uint64_t bytes,
                          uint64_t dur_us, enum vt_err err);

/* A build of a dataset ended (trigger = enum cat_refresh_source value). */
void metrics_refresh_observe(int trigger, bool ok, int64_t dur_ms);
/* A Parquet export build ended. */
void metrics_export_observe(bool ok, int64_t dur_ms, uint64_t bytes);

/* A connection refused at the connection cap (the acceptor's 503). */
void metrics_connection_rejected(void);

/* ------------------------------------------------------------ exposition */

/* Writes every family this module owns (HTTP requests, durations, response
 * bytes, errors, refresh duration histogram, export builds, connections
 * refused) into `out`. */
void metrics_write_core(struct strbuf *out);

/* The Prometheus text writer. A family is announced once with its HELP and
 * TYPE lines; samples follow. Label values are escaped (\\, \", \n). */
enum metrics_type { METRICS_COUNTER, METRICS_GAUGE, METRICS_HISTOGRAM };

void metrics_w_family(struct strbuf *out, const char *name, enum metrics_type type,
                      const char *help);
/* name{k1="v1",...} value. `labels` is NULL or a NULL-terminated array of
 * alternating keys and values. */
void metrics_w_sample(struct strbuf *out, const char *name, const char *const *labels,
                      double value);
void metrics_w_sample_u64(struct strbuf *out, const char *name, const char *const *labels,
                          uint64_t value);
/* value / 10^decimals, exactly (durations in µs or ms as seconds). */
void metrics_w_sample_fixed(struct strbuf *out, const char *name, const char *const *labels,
                            int64_t value, int decimals);
/* The value part of a sample line, " <v>\n", for callers that write the
 * name and labels themselves (many samples sharing one label set). */
void metrics_w_value_u64(struct strbuf *out, uint64_t v);
void metrics_w_value_fixed(struct strbuf *out, int64_t value, int decimals);
/* Appends a label value with the format's escapes. */
void metrics_w_label_value(struct strbuf *out, const char *v);

/* For tests: the summed counts of one route slot (all methods and statuses)
 * and its histogram count. */
void metrics_http_totals(unsigned route, uint64_t *out_requests, uint64_t *out_hist_count);

#endif
