/*
 * GET {metrics.path} (default /metrics, outside server.prefix, no
 * authentication): the Prometheus text exposition (format 0.0.4).
 *
 * It answers on the HTTP thread and never touches DuckDB: the request
 * counters come from the per-thread shards of src/metrics (summed here),
 * the datasets from one status snapshot of the catalog, the pools from the
 * engine, DuckDB's memory from the engine's sampler (its last sample), the
 * process from /proc/self. A scrape of 100 datasets costs well under a
 * millisecond (tests/e2e/test_metrics.py holds it to that).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api/api.h"
#include "metrics/metrics.h"
#include "sources/source.h"
#include "util/timeutil.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static void write_build(struct strbuf *out)
{
    const char *version, *git_sha;
    api_build_info(&version, &git_sha);
    metrics_w_family(out, "vitrine_build_info", METRICS_GAUGE,
                     "Always 1; the labels describe the running build.");
    const char *labels[] = {"version", version, "backend", "duckdb", "git_sha", git_sha, NULL};
    metrics_w_sample_u64(out, "vitrine_build_info", labels, 1);
}

/* One sample of a per-dataset family: name{dataset="..."<extra>} value, with
 * the dataset's label text escaped once per scrape (a scrape of many
 * datasets is mostly these lines). */
static void ds_name(struct strbuf *out, const char *name, const struct strbuf *label,
                    const char *extra)
{
    sb_adds(out, name);
    sb_add(out, label->buf, label->len);
    if (extra)
        sb_adds(out, extra);
    sb_addc(out, '}');
}

static void write_datasets(struct strbuf *out, struct cat_catalog *cat)
{
    struct cat_status *list = NULL;
    size_t n = cat ? cat_status_list(cat, &list) : 0;
    int64_t now_us = time_wall_us();
    static const enum cat_state states[] = {CAT_PENDING, CAT_BUILDING, CAT_PUBLISHED, CAT_FAILED};
    static const char *const state_extra[] = {",state=\"pending\"", ",state=\"building\"",
                                              ",state=\"published\"", ",state=\"failed\""};
    struct strbuf *lab = calloc(n ? n : 1, sizeof *lab);
    if (!lab) {
        cat_status_list_free(list, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        sb_init(&lab[i], 0);
        sb_adds(&lab[i], "{dataset=\"");
        metrics_w_label_value(&lab[i], list[i].name);
        sb_addc(&lab[i], '"');
    }

    metrics_w_family(out, "vitrine_datasets", METRICS_GAUGE, "Registered datasets.");
    metrics_w_sample_u64(out, "vitrine_datasets", NULL, n);
    metrics_w_family(out, "vitrine_dataset_state", METRICS_GAUGE,
                     "1 for the state each dataset is in, 0 for the others.");
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof states / sizeof states[0]; k++) {
            ds_name(out, "vitrine_dataset_state", &lab[i], state_extra[k]);
            metrics_w_value_u64(out, list[i].state == states[k]);
        }
    metrics_w_family(out, "vitrine_dataset_rows", METRICS_GAUGE,
                     "Rows of the dataset's current generation (0 until published).");
    for (size_t i = 0; i < n; i++) {
        ds_name(out, "vitrine_dataset_rows", &lab[i], NULL);
        metrics_w_value_u64(out, list[i].rows > 0 ? (uint64_t)list[i].rows : 0);
    }
    metrics_w_family(out, "vitrine_dataset_source_bytes", METRICS_GAUGE,
                     "Bytes of the files behind the current generation (storage read per query "
                     "for a lazy dataset, loaded into memory for a resident one).");
    for (size_t i = 0; i < n; i++) {
        if (list[i].source_bytes < 0)
            continue;
        ds_name(out, "vitrine_dataset_source_bytes", &lab[i],
                list[i].lazy ? ",residency=\"lazy\"" : ",residency=\"memory\"");
        metrics_w_value_u64(out, (uint64_t)list[i].source_bytes);
    }
    metrics_w_family(out, "vitrine_dataset_lazy_metadata_bytes", METRICS_GAUGE,
                     "Memory of a lazy dataset's footers and statistics, read once per "
                     "generation (what plans its requests).");
    for (size_t i = 0; i < n; i++) {
        if (list[i].lazy_metadata_bytes < 0)
            continue;
        ds_name(out, "vitrine_dataset_lazy_metadata_bytes", &lab[i], NULL);
        metrics_w_value_u64(out, (uint64_t)list[i].lazy_metadata_bytes);
    }
    metrics_w_family(out, "vitrine_s3_range_cache_bytes", METRICS_GAUGE,
                     "Bytes of S3 objects the range cache of lazy datasets holds on disk "
                     "(bounded by server.s3_cache_mb).");
    metrics_w_sample_u64(out, "vitrine_s3_range_cache_bytes", NULL,
                         (uint64_t)source_range_cache_bytes());
    /* the index fast path's bytes, one gauge per field of cat_status */
    static const struct {
        const char *name, *help;
        size_t field; /* offsetof an int64_t of struct cat_status; negative: 0 */
    } index_gauges[] = {
        {"vitrine_dataset_index_bytes",
         "Memory held by the dataset's index fast path (its directories and distinct keys; "
         "capped by server.index_memory_limit).",
         offsetof(struct cat_status, index_bytes)},
        {"vitrine_dataset_index_disk_bytes",
         "Bytes of the files of the dataset's index fast path (row store, posting lists, key "
         "structures, pre-rendered pages; read through the page cache).",
         offsetof(struct cat_status, index_disk_bytes)},
        {"vitrine_dataset_row_store_bytes",
         "Bytes of the dataset's row store (typed cells, compressed) in that file.",
         offsetof(struct cat_status, row_store_bytes)},
        {"vitrine_dataset_json_pages_bytes",
         "Bytes of the dataset's pre-rendered pages (its first rows as page-body JSON, up to "
         "index.json_pages_mb; a file of their own, read through the page cache and sent with "
         "sendfile).",
         offsetof(struct cat_status, json_pages_bytes)},
    };
    for (size_t g = 0; g < sizeof index_gauges / sizeof index_gauges[0]; g++) {
        metrics_w_family(out, index_gauges[g].name, METRICS_GAUGE, index_gauges[g].help);
        for (size_t i = 0; i < n; i++) {
            int64_t v;
            memcpy(&v, (const char *)&list[i] + index_gauges[g].field, sizeof v);
            ds_name(out, index_gauges[g].name, &lab[i], NULL);
            metrics_w_value_u64(out, v > 0 ? (uint64_t)v : 0);
        }
    }
    metrics_w_family(out, "vitrine_index_memory_limit_bytes", METRICS_GAUGE,
                     "server.index_memory_limit in bytes, and what all fast paths hold now "
                     "(vitrine_index_memory_bytes).");
    metrics_w_sample_u64(out, "vitrine_index_memory_limit_bytes", NULL,
                         index_budget() == SIZE_MAX ? 0 : (uint64_t)index_budget());
    metrics_w_family(out, "vitrine_index_memory_bytes", METRICS_GAUGE,
                     "Memory held by the index fast paths of every generation together.");
    metrics_w_sample_u64(out, "vitrine_index_memory_bytes", NULL, (uint64_t)index_memory_used());
    metrics_w_family(out, "vitrine_dataset_generation_age_seconds", METRICS_GAUGE,
                     "Seconds since the current generation was published.");
    for (size_t i = 0; i < n; i++) {
        if (!list[i].last_refresh_at_us)
            continue;
        ds_name(out, "vitrine_dataset_generation_age_seconds", &lab[i], NULL);
        metrics_w_value_fixed(out, (now_us - list[i].last_refresh_at_us) / 1000, 3);
    }
    metrics_w_family(out, "vitrine_dataset_last_refresh_duration_seconds", METRICS_GAUGE,
                     "Build time of the current generation.");
    for (size_t i = 0; i < n; i++) {
        if (list[i].last_refresh_duration_ms < 0)
            continue;
        ds_name(out, "vitrine_dataset_last_refresh_duration_seconds", &lab[i], NULL);
        metrics_w_value_fixed(out, list[i].last_refresh_duration_ms, 3);
    }
    metrics_w_family(out, "vitrine_dataset_consecutive_failures", METRICS_GAUGE,
                     "Failed builds since the last successful one.");
    for (size_t i = 0; i < n; i++) {
        ds_name(out, "vitrine_dataset_consecutive_failures", &lab[i], NULL);
        metrics_w_value_u64(out, (uint64_t)list[i].consecutive_failures);
    }
    metrics_w_family(out, "vitrine_dataset_refresh_total", METRICS_COUNTER,
                     "Dataset builds ended, by trigger (startup, manual, schedule, cascade) and "
                     "outcome (success, failure).");
    for (size_t i = 0; i < n; i++)
        for (int tr = CAT_REFRESH_STARTUP; tr <= CAT_REFRESH_CASCADE; tr++)
            for (int o = 0; o < 2; o++) {
                if (!list[i].builds[tr][o])
                    continue;
                char extra[64];
                snprintf(extra, sizeof extra, ",trigger=\"%s\",outcome=\"%s\"",
                         cat_refresh_source_name((enum cat_refresh_source)tr),
                         o == 0 ? "success" : "failure");
                ds_name(out, "vitrine_dataset_refresh_total", &lab[i], extra);
                metrics_w_value_u64(out, list[i].builds[tr][o]);
            }
    for (size_t i = 0; i < n; i++)
        sb_release(&lab[i]);
    free(lab);
    cat_status_list_free(list, n);
}

/* One histogram of a pool's job class (wait or run), in seconds. */
static void write_job_hist(struct strbuf *out, const char *name, const char *pool,
                           const char *cls, const struct eng_job_hist *h,
                           char le[ENG_JOB_BUCKETS + 1][16])
{
    char bucket[96];
    snprintf(bucket, sizeof bucket, "%s_bucket", name);
    uint64_t cum = 0;
    for (size_t b = 0; b <= ENG_JOB_BUCKETS; b++) {
        cum += h->bucket[b];
        const char *labels[] = {"pool", pool, "class", cls, "le", le[b], NULL};
        metrics_w_sample_u64(out, bucket, labels, cum);
    }
    const char *labels[] = {"pool", pool, "class", cls, NULL};
    char sum[96], count[96];
    snprintf(sum, sizeof sum, "%s_sum", name);
    snprintf(count, sizeof count, "%s_count", name);
    metrics_w_sample_fixed(out, sum, labels, h->sum_us, 6);
    metrics_w_sample_u64(out, count, labels, h->count);
}

/* Per pool and job class (engine.h, "Job classes"): what waits and runs now,
 * and how long jobs waited for a worker and ran, since start. Wait high
 * beside run: the class queues (too few workers for it, or CPU taken by
 * another class); run high in a mix and not alone: CPU contention. The
 * histograms (21 lines each) are written for every class of the query pool
 * (`query`: server.workers) and for another pool's class once it ran a job
 * (the builders' jobs are builds: vitrine_dataset_refresh_duration_seconds
 * has them by trigger), so the scrape stays small. */
static bool hist_wanted(const struct eng_pool_stats *p, int c, const char *query_pool)
{
    return (query_pool && !strcmp(p->name, query_pool)) || p->cls[c].wait.count > 0;
}

/* One job histogram family (`run`: run times, else waits) over the pools'
 * classes hist_wanted keeps. */
static void write_job_family(struct strbuf *out, const char *name, const char *help,
                             const struct eng_pool_stats *pools, size_t n,
                             const char *query_pool, bool run,
                             char le[ENG_JOB_BUCKETS + 1][16])
{
    metrics_w_family(out, name, METRICS_HISTOGRAM, help);
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < ENG_JOB_CLASSES; c++)
            if (hist_wanted(&pools[i], c, query_pool))
                write_job_hist(out, name, pools[i].name, eng_job_class_name((enum eng_job_class)c),
                               run ? &pools[i].cls[c].run : &pools[i].cls[c].wait, le);
}

static void write_jobs(struct strbuf *out, const struct eng_pool_stats *pools, size_t n,
                       const char *query_pool)
{
    static const struct {
        const char *name, *help;
    } gauges[] = {
        {"vitrine_engine_jobs_queued",
         "Jobs waiting for a worker, by pool and job class (503 unavailable past "
         "server.max_queued_jobs of one class)."},
        {"vitrine_engine_jobs_running", "Jobs running on a worker, by pool and job class."},
    };
    for (size_t g = 0; g < 2; g++) {
        metrics_w_family(out, gauges[g].name, METRICS_GAUGE, gauges[g].help);
        for (size_t i = 0; i < n; i++)
            for (int c = 0; c < ENG_JOB_CLASSES; c++) {
                const char *labels[] = {"pool", pools[i].name, "class",
                                        eng_job_class_name((enum eng_job_class)c), NULL};
                metrics_w_sample(out, gauges[g].name, labels,
                                 g == 0 ? pools[i].cls[c].queued : pools[i].cls[c].running);
            }
    }
    char le[ENG_JOB_BUCKETS + 1][16]; /* the bounds as label values, once a scrape */
    for (size_t b = 0; b < ENG_JOB_BUCKETS; b++)
        snprintf(le[b], sizeof le[b], "%g", (double)eng_job_bucket_us[b] / 1e6);
    snprintf(le[ENG_JOB_BUCKETS], sizeof le[ENG_JOB_BUCKETS], "+Inf");
    write_job_family(out, "vitrine_engine_job_wait_seconds",
                     "Time jobs waited in the queue before a worker took them, by pool and job "
                     "class (short: pages, counts, point queries; long: group bys, sorts, "
                     "/sql; stream: /query/stream).",
                     pools, n, query_pool, false, le);
    write_job_family(out, "vitrine_engine_job_run_seconds",
                     "Time jobs ran on a worker, by pool and job class (a stream's includes "
                     "the time its client took to read).",
                     pools, n, query_pool, true, le);
}

static void write_engine(struct strbuf *out, struct api_app *app)
{
    enum { MAX_POOLS = 16 };
    /* ~1 KiB each with the histograms: off the HTTP thread's stack. */
    struct eng_pool_stats *pools = calloc(MAX_POOLS, sizeof *pools);
    size_t n = pools ? eng_pools_stats(pools, MAX_POOLS) : 0;
    metrics_w_family(out, "vitrine_pool_workers", METRICS_GAUGE,
                     "Worker threads of each pool (query: server.workers; build, admin, ...).");
    for (size_t i = 0; i < n; i++) {
        const char *labels[] = {"pool", pools[i].name, NULL};
        metrics_w_sample(out, "vitrine_pool_workers", labels, pools[i].threads);
    }
    metrics_w_family(out, "vitrine_pool_busy_workers", METRICS_GAUGE,
                     "Workers running a job.");
    for (size_t i = 0; i < n; i++) {
        const char *labels[] = {"pool", pools[i].name, NULL};
        metrics_w_sample(out, "vitrine_pool_busy_workers", labels, pools[i].running);
    }
    metrics_w_family(out, "vitrine_pool_queued_jobs", METRICS_GAUGE,
                     "Jobs waiting for a worker, every class together (vitrine_engine_jobs_queued "
                     "by class).");
    for (size_t i = 0; i < n; i++) {
        const char *labels[] = {"pool", pools[i].name, NULL};
        metrics_w_sample(out, "vitrine_pool_queued_jobs", labels, pools[i].queued);
    }
    struct eng_pool_stats query = {0};
    if (app->queries)
        eng_pool_stats_get(app->queries, &query);
    write_jobs(out, pools, n, app->queries ? query.name : NULL);
    free(pools);
    int64_t mem = 0, tmp = 0;
    if (eng_sampler_read(app->sampler, &mem, &tmp)) {
        metrics_w_family(out, "vitrine_duckdb_memory_bytes", METRICS_GAUGE,
                         "Memory DuckDB's buffer manager holds (resident tables, query state), "
                         "sampled every second.");
        metrics_w_sample(out, "vitrine_duckdb_memory_bytes", NULL, (double)mem);
        metrics_w_family(out, "vitrine_duckdb_temp_storage_bytes", METRICS_GAUGE,
                         "Bytes DuckDB spilled to temp_directory, sampled every second.");
        metrics_w_sample(out, "vitrine_duckdb_temp_storage_bytes", NULL, (double)tmp);
    }
    uint64_t hits, misses, evictions;
    exec_plan_cache_stats(&hits, &misses, &evictions);
    metrics_w_family(out, "vitrine_exec_plan_cache_hits_total", METRICS_COUNTER,
                     "Query shapes that reused a prepared statement of the worker's connection.");
    metrics_w_sample_u64(out, "vitrine_exec_plan_cache_hits_total", NULL, hits);
    metrics_w_family(out, "vitrine_exec_plan_cache_misses_total", METRICS_COUNTER,
                     "Query shapes prepared afresh.");
    metrics_w_sample_u64(out, "vitrine_exec_plan_cache_misses_total", NULL, misses);
    metrics_w_family(out, "vitrine_exec_plan_cache_evictions_total", METRICS_COUNTER,
                     "Prepared statements pushed out by the per-connection LRU bound.");
    metrics_w_sample_u64(out, "vitrine_exec_plan_cache_evictions_total", NULL, evictions);
}

/* Reads a small /proc file into buf (NUL-terminated); its length or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

static void write_process(struct strbuf *out, struct api_app *app)
{
    char buf[1024];
    long page = sysconf(_SC_PAGESIZE);
    long long vm_pages = -1, rss_pages = -1, threads = -1;
    if (read_proc("/proc/self/statm", buf, sizeof buf) > 0) {
        char *end;
        vm_pages = strtoll(buf, &end, 10);
        rss_pages = strtoll(end, NULL, 10);
    }
    /* /proc/self/stat: "pid (comm) state ..." - num_threads is the 20th
     * field, the 18th after the closing parenthesis (comm may hold spaces). */
    if (read_proc("/proc/self/stat", buf, sizeof buf) > 0) {
        char *p = strrchr(buf, ')');
        for (int field = 2; p && field < 20; field++)
            p = strchr(p + 1, ' ');
        if (p)
            threads = strtoll(p + 1, NULL, 10);
    }
    long long fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
            fds += de->d_name[0] != '.';
        fds--; /* the directory stream's own descriptor */
        closedir(d);
    }
    struct rlimit rl;
    struct rusage ru;
    metrics_w_family(out, "process_cpu_seconds_total", METRICS_COUNTER,
                     "User and system CPU time of the process.");
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        metrics_w_sample_fixed(out, "process_cpu_seconds_total", NULL,
                               (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
                                   ru.ru_utime.tv_usec + ru.ru_stime.tv_usec,
                               6);
    if (rss_pages >= 0) {
        metrics_w_family(out, "process_resident_memory_bytes", METRICS_GAUGE,
                         "Resident set size.");
        metrics_w_sample_u64(out, "process_resident_memory_bytes", NULL,
                             (uint64_t)rss_pages * (uint64_t)page);
    }
    if (vm_pages >= 0) {
        metrics_w_family(out, "process_virtual_memory_bytes", METRICS_GAUGE,
                         "Virtual memory size.");
        metrics_w_sample_u64(out, "process_virtual_memory_bytes", NULL,
                             (uint64_t)vm_pages * (uint64_t)page);
    }
    metrics_w_family(out, "process_open_fds", METRICS_GAUGE, "Open file descriptors.");
    metrics_w_sample_u64(out, "process_open_fds", NULL, fds > 0 ? (uint64_t)fds : 0);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        metrics_w_family(out, "process_max_fds", METRICS_GAUGE,
                         "The open-file limit (soft).");
        metrics_w_sample_u64(out, "process_max_fds", NULL, (uint64_t)rl.rlim_cur);
    }
    if (threads >= 0) {
        metrics_w_family(out, "vitrine_process_threads", METRICS_GAUGE, "Threads of the process.");
        metrics_w_sample_u64(out, "vitrine_process_threads", NULL, (uint64_t)threads);
    }
    metrics_w_family(out, "process_start_time_seconds", METRICS_GAUGE,
                     "Start time of the process since the Unix epoch.");
    metrics_w_sample_fixed(out, "process_start_time_seconds", NULL, app->started_at_us, 6);
}

void api_metrics(struct http_request *req)
{
    struct api_app *app = api_app(req);
    struct strbuf body;
    sb_init(&body, 0);
    sb_grow(&body, 64 * 1024); /* a few reallocations less */
    write_build(&body);
    metrics_w_family(&body, "vitrine_http_requests_in_flight", METRICS_GAUGE,
                     "Requests received and not yet completed (this scrape included).");
    metrics_w_sample(&body, "vitrine_http_requests_in_flight", NULL,
                     http_server_in_flight(http_req_server(req)));
    metrics_write_core(&body);
    write_datasets(&body, app->catalog);
    write_engine(&body, app);
    write_process(&body, app);
    if (body.overflow) {
        sb_release(&body);
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, "metrics text too large");
        return;
    }
    http_reply_buffer(req, 200, PROM_CONTENT_TYPE, &body, true);
}
