/*
 * DuckDB database setup and the worker pools (see engine.h).
 *
 * Each worker thread owns a connection for its whole life, so prepared state
 * and DuckDB's per-connection caches stay warm. The watchdog thread wakes every
 * few milliseconds, looks at what each worker runs and interrupts the
 * connection of a job whose deadline passed: duckdb_interrupt cancels a
 * running query within milliseconds.
 */
#include "engine/engine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "query/query.h"
#include "util/file.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

#define WATCHDOG_PERIOD_MS 5
/* A job still running this long after its deadline's interrupt is inside
 * something DuckDB does not interrupt: its worker is replaced (retire). */
#define ENG_OVERRUN_GRACE_MS 250
/* A job queued LONG_WAIT_MS while every worker has run its job for BUSY_MS
 * gets an overflow worker; one idle EXTRA_IDLE_MS ends. */
#define LONG_WAIT_MS 50
#define BUSY_MS 250
#define EXTRA_IDLE_MS 2000

/* Which jobs a worker takes (engine.h, "Job classes"). */
enum lane {
    LANE_ANY,                   /* a pool without lanes: SHORT and LONG (LONG capped) */
    LANE_SHORT,                 /* SHORT only (and LONG jobs past their deadline) */
    LANE_LONG,                  /* LONG only */
    LANE_STREAM,                /* STREAM only */
};

struct eng_worker {
    struct eng_pool *pool;
    pthread_t thread;
    duckdb_connection con;
    struct eng_job *current;    /* guarded by pool->mu */
    int index;
    enum lane lane;
    int64_t interrupted_ms;     /* when the watchdog interrupted `current` (0: not) */
    int64_t started_ms;         /* when it took `current` */
    bool retired;               /* left its slot to a new worker; ends after its job */
    bool quit;                  /* not needed (any more): ends without taking a job */
    bool extra;                 /* an overflow worker for LONG jobs (pool->extras) */
    bool overrun_told;          /* eng_job.overrun was called for `current` */
    bool current_long;          /* `current` counts in running_long */
    struct eng_worker *next;    /* pool->retired / pool->graveyard */
};

/* One flow of fair queuing (eng_job.flow): its last finish tag and what
 * its jobs cost, microseconds of a worker's time. */
struct eng_flow {
    uint64_t key;
    int64_t finish_us;
    int64_t cost_us;
    bool used;
};

/* Flows remembered per pool (a power of two), the slots a key may take, and
 * the cost a flow's first job is assumed to have. */
#define ENG_FLOWS 64
#define ENG_FLOW_PROBES 8
#define ENG_FLOW_COST0_US 1000

struct eng_pool {
    char name[32];
    duckdb_database db;         /* for replacement workers' connections */
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* LANE_ANY and LANE_SHORT workers wait here */
    pthread_cond_t cv_long;     /* long-lane workers wait here */
    pthread_cond_t cv_stream;   /* stream-lane workers wait here */
    pthread_cond_t cv_retired;  /* a retired worker ended (destroy waits) */
    struct eng_job *head[ENG_JOB_CLASSES], *tail[ENG_JOB_CLASSES]; /* arrival order */
    int64_t vtime[ENG_JOB_CLASSES]; /* fair queuing's virtual time, per class */
    struct eng_flow flows[ENG_FLOWS];
    int queued;
    int queued_cls[ENG_JOB_CLASSES];
    int max_queued;             /* eng_lanes.max_queued, per class: past it submit refuses */
    int busy_ms;                /* eng_lanes.busy_ms: BUSY_MS unless a test raised it */
    int lane_nice;              /* eng_lanes.lane_nice: added to the long and stream lanes' nice */
    int running;
    int running_cls[ENG_JOB_CLASSES]; /* by the running job's class (retired ones not) */
    struct eng_job_hist wait[ENG_JOB_CLASSES], run[ENG_JOB_CLASSES];
    int running_long;
    int long_cap;               /* LONG jobs running at once (not on extras), at most */
    int n_long, n_stream;       /* long- and stream-lane workers (the last ones) */
    bool stopping;
    int n;
    struct eng_worker **workers; /* n slots; a slot's worker may be replaced */
    struct eng_worker *retired; /* still running the job they overran */
    int n_retired;
    struct eng_worker *graveyard; /* ended: joined and disconnected by the watchdog */
    struct eng_worker *extras;  /* overflow workers for LONG jobs (at most n) */
    int n_extra;
    int64_t retirements;        /* since start, for the log and tests */
    pthread_t watchdog;
    bool watchdog_started;
    bool watchdog_stop;         /* set by eng_pool_destroy once the workers are gone */
    struct eng_pool *next_live; /* live_pools, under live_mu */
};

/* Every live pool, for eng_pools_stats. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static struct eng_pool *live_pools;

static void live_add(struct eng_pool *pool)
{
    pthread_mutex_lock(&live_mu);
    pool->next_live = live_pools;
    live_pools = pool;
    pthread_mutex_unlock(&live_mu);
}

static void live_remove(struct eng_pool *pool)
{
    pthread_mutex_lock(&live_mu);
    for (struct eng_pool **p = &live_pools; *p; p = &(*p)->next_live)
        if (*p == pool) {
            *p = pool->next_live;
            break;
        }
    pthread_mutex_unlock(&live_mu);
}

/* ------------------------------------------------------ job accounting */

/* 100 us .. 60 s: an inline-fast page is in the first buckets, a stream of a
 * large table in the last ones. */
const int64_t eng_job_bucket_us[ENG_JOB_BUCKETS] = {
    100,     250,     500,     1000,    2500,     5000,     10000,    25000,    50000,
    100000,  250000,  500000,  1000000, 2500000,  5000000,  10000000, 30000000, 60000000};

const char *eng_job_class_name(enum eng_job_class c)
{
    static const char *const names[ENG_JOB_CLASSES] = {"short", "long", "stream"};
    return (unsigned)c < ENG_JOB_CLASSES ? names[c] : "short";
}

static void hist_add(struct eng_job_hist *h, int64_t us)
{
    if (us < 0)
        us = 0;
    size_t b = 0;
    while (b < ENG_JOB_BUCKETS && us > eng_job_bucket_us[b])
        b++;
    h->bucket[b]++;
    h->count++;
    h->sum_us += us;
}

static void stats_fill(struct eng_pool *p, struct eng_pool_stats *out)
{
    pthread_mutex_lock(&p->mu);
    snprintf(out->name, sizeof out->name, "%s", p->name);
    out->threads = p->n;
    out->queued = p->queued;
    out->running = p->running;
    out->max_queued = p->max_queued;
    for (int c = 0; c < ENG_JOB_CLASSES; c++) {
        out->cls[c].queued = p->queued_cls[c];
        out->cls[c].running = p->running_cls[c];
        out->cls[c].wait = p->wait[c];
        out->cls[c].run = p->run[c];
    }
    pthread_mutex_unlock(&p->mu);
}

void eng_pool_stats_get(struct eng_pool *pool, struct eng_pool_stats *out)
{
    stats_fill(pool, out);
}

size_t eng_pools_stats(struct eng_pool_stats *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&live_mu);
    for (struct eng_pool *p = live_pools; p && n < cap; p = p->next_live)
        stats_fill(p, &out[n++]);
    pthread_mutex_unlock(&live_mu);
    return n;
}

int eng_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static enum vt_err set_option(duckdb_config config, const char *name, const char *value,
                              struct vt_error *err)
{
    if (duckdb_set_config(config, name, value) != DuckDBSuccess)
        return vt_error_set(err, VT_ERR_INTERNAL, "DuckDB rejected setting %s=%s", name, value);
    return VT_ERR_OK;
}

/* Memory this process may use: physical memory, or the cgroup's limit when
 * that is lower (a container). */
uint64_t eng_available_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t total = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    static const char *const limits[] = {"/sys/fs/cgroup/memory.max",
                                         "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        char *text = NULL;
        size_t len;
        struct vt_error ignored = {0};
        if (util_read_file(limits[i], 64, VT_ERR_INTERNAL, &text, &len, &ignored) != VT_ERR_OK)
            continue;
        char *end;
        unsigned long long v = strtoull(text, &end, 10);
        if (end != text && v > 0 && (total == 0 || v < total))
            total = v; /* "max" (no limit) does not parse */
        free(text);
    }
    return total;
}

/* A size as DuckDB reads it ("8GB" = 8e9, "512 MiB", "1.5GB", "100000" bytes),
 * in bytes; 0 when it does not parse. */
static uint64_t size_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ')
        end++;
    static const struct {
        const char *unit;
        double mult;
    } units[] = {{"", 1},        {"b", 1},          {"byte", 1},     {"bytes", 1},
                 {"kb", 1e3},    {"mb", 1e6},       {"gb", 1e9},     {"tb", 1e12},
                 {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0},
                 {"tib", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(end, units[i].unit) == 0)
            return v > 0 ? (uint64_t)(v * units[i].mult) : 0;
    return 0;
}

/* A size setting as DuckDB takes it: a share ("50%") becomes MiB of `whole`
 * (0: unknown, then NULL: DuckDB's own default); a size is passed as
 * written. *out_bytes gets the value in bytes (0 when unknown). */
static const char *size_setting(const char *value, uint64_t whole, char *buf, size_t cap,
                                uint64_t *out_bytes)
{
    size_t n = strlen(value);
    *out_bytes = 0;
    if (!n || value[n - 1] != '%') {
        *out_bytes = size_bytes(value);
        return value;
    }
    double share = strtod(value, NULL) / 100.0;
    if (!whole)
        return NULL;
    uint64_t mib = (uint64_t)((double)whole * share) / (1024 * 1024);
    mib = mib ? mib : 1;
    snprintf(buf, cap, "%lluMiB", (unsigned long long)mib);
    *out_bytes = mib * 1024 * 1024;
    return buf;
}

/* Free bytes of the file system holding `path` (or its nearest existing
 * parent: the spill directory is made later); 0 when unknown. */
static uint64_t free_space(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (;;) {
        struct statvfs st;
        if (statvfs(dir, &st) == 0)
            return (uint64_t)st.f_bavail * (uint64_t)st.f_frsize;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return 0;
        *slash = '\0';
    }
}

/* The allocation budget for a buffer pool of `limit` bytes: the pool plus a
 * quarter for what DuckDB allocates beside it (vectors in flight, plans,
 * function results), at least 128 MiB. */
static int64_t budget_for(uint64_t limit)
{
    uint64_t extra = limit / 4 > 128u * 1024 * 1024 ? limit / 4 : 128u * 1024 * 1024;
    return (int64_t)(limit + extra);
}

/* DuckDB's task threads (server.task_nice): they run the parallel part of
 * every statement, whichever lane it came from, and a new thread starts
 * with its creator's nice and name. So a thread of ours, named and at the
 * lower priority, sets `threads` to 1 (DuckDB ends its task threads) and
 * back (DuckDB starts them again, from that thread). The statements' own
 * workers keep their lane's priority. */
struct relaunch {
    duckdb_connection con;
    int nice;
    int64_t threads;
    bool niced;
    enum vt_err rc;
    struct vt_error err;
};

static void *relaunch_main(void *arg)
{
    struct relaunch *r = arg;
    /* A new thread also starts with its creator's name: DuckDB's threads
     * show as "duckdb-task" (top -H, the bench's CPU per thread). */
    pthread_setname_np(pthread_self(), "duckdb-task");
    r->niced = eng_thread_nice(r->nice);
    char sql[64];
    r->rc = eng_exec(r->con, "SET GLOBAL threads = 1", VT_ERR_INTERNAL, &r->err);
    snprintf(sql, sizeof sql, "SET GLOBAL threads = %lld", (long long)r->threads);
    if (r->rc == VT_ERR_OK)
        r->rc = eng_exec(r->con, sql, VT_ERR_INTERNAL, &r->err);
    return NULL;
}

static enum vt_err relaunch_task_threads(duckdb_connection con, int nice, struct vt_error *err)
{
    duckdb_result res;
    int64_t threads = 0;
    if (duckdb_query(con, "SELECT current_setting('threads')::BIGINT", &res) == DuckDBSuccess) {
        duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
        if (chunk && duckdb_data_chunk_get_size(chunk) == 1) {
            duckdb_vector v = duckdb_data_chunk_get_vector(chunk, 0);
            threads = ((const int64_t *)duckdb_vector_get_data(v))[0];
        }
        if (chunk)
            duckdb_destroy_data_chunk(&chunk);
    }
    duckdb_destroy_result(&res);
    if (threads <= 1)
        return VT_ERR_OK; /* no task threads besides the callers' */
    struct relaunch r = {.con = con, .nice = nice, .threads = threads, .rc = VT_ERR_OK};
    pthread_t t;
    if (pthread_create(&t, NULL, relaunch_main, &r) != 0)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot start a thread");
    pthread_join(t, NULL);
    if (r.rc != VT_ERR_OK)
        return vt_error_set(err, r.rc, "%s", r.err.msg);
    if (!r.niced)
        log_warn("engine: cannot lower the CPU priority of DuckDB's task threads");
    return VT_ERR_OK;
}

/* The SQL functions' install on a thread of its own (eng_open_deferred):
 * one at a time per process (the service opens one database). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, done;
    duckdb_connection con;
    enum vt_err rc;
    struct vt_error err;
} fn_install = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *fn_install_main(void *arg)
{
    (void)arg;
    struct vt_error err = {0};
    enum vt_err rc = eng_functions_install(fn_install.con, &err);
    duckdb_disconnect(&fn_install.con);
    pthread_mutex_lock(&fn_install.mu);
    fn_install.rc = rc;
    fn_install.err = err;
    fn_install.done = true;
    pthread_cond_broadcast(&fn_install.cv);
    pthread_mutex_unlock(&fn_install.mu);
    return NULL;
}

enum vt_err eng_functions_wait(struct vt_error *err)
{
    pthread_mutex_lock(&fn_install.mu);
    while (fn_install.started && !fn_install.done)
        pthread_cond_wait(&fn_install.cv, &fn_install.mu);
    enum vt_err rc = fn_install.started ? fn_install.rc : VT_ERR_OK;
    if (rc != VT_ERR_OK && err)
        *err = fn_install.err;
    pthread_mutex_unlock(&fn_install.mu);
    return rc;
}

/* Waits for the install and forgets it (eng_close, before the database goes). */
static void fn_install_join(void)
{
    pthread_mutex_lock(&fn_install.mu);
    bool started = fn_install.started;
    pthread_mutex_unlock(&fn_install.mu);
    if (!started)
        return;
    pthread_join(fn_install.thread, NULL);
    pthread_mutex_lock(&fn_install.mu);
    fn_install.started = fn_install.done = false;
    pthread_mutex_unlock(&fn_install.mu);
}

static enum vt_err open_db(const struct vt_config *cfg, duckdb_database *out_db, bool defer,
                           struct vt_error *err);

enum vt_err eng_open(const struct vt_config *cfg, duckdb_database *out_db, struct vt_error *err)
{
    return open_db(cfg, out_db, false, err);
}

enum vt_err eng_open_deferred(const struct vt_config *cfg, duckdb_database *out_db,
                              struct vt_error *err)
{
    return open_db(cfg, out_db, true, err);
}

static enum vt_err open_db(const struct vt_config *cfg, duckdb_database *out_db, bool defer,
                           struct vt_error *err)
{
    duckdb_config config;
    if (duckdb_create_config(&config) != DuckDBSuccess)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot create DuckDB config");
    enum vt_err rc = VT_ERR_OK;
    /* No network: extensions are either built in (parquet, json, icu) or absent. */
    rc = set_option(config, "autoinstall_known_extensions", "false", err);
    if (!rc)
        rc = set_option(config, "autoload_known_extensions", "false", err);
    /* Return freed memory to the OS from background threads (flat RSS). */
    if (!rc)
        rc = set_option(config, "allocator_background_threads", "true", err);
    char limit_buf[32], temp_buf[32];
    uint64_t limit_bytes = 0, temp_bytes = 0;
    const char *limit = cfg->server.memory_limit
                            ? size_setting(cfg->server.memory_limit, eng_available_memory(),
                                           limit_buf, sizeof limit_buf, &limit_bytes)
                            : NULL;
    if (!rc && limit)
        rc = set_option(config, "memory_limit", limit, err);
    if (!rc && cfg->server.temp_directory)
        rc = set_option(config, "temp_directory", cfg->server.temp_directory, err);
    /* Spilling is capped too: one anonymous ORDER BY could otherwise fill
     * the disk (DuckDB's default is 90% of the free space). */
    const char *temp_max = cfg->server.max_temp_directory_size && cfg->server.temp_directory
                               ? size_setting(cfg->server.max_temp_directory_size,
                                              free_space(cfg->server.temp_directory), temp_buf,
                                              sizeof temp_buf, &temp_bytes)
                               : NULL;
    if (!rc && temp_max)
        rc = set_option(config, "max_temp_directory_size", temp_max, err);
    if (rc) {
        duckdb_destroy_config(&config);
        return rc;
    }
    char *open_err = NULL;
    if (duckdb_open_ext(NULL, out_db, config, &open_err) != DuckDBSuccess) {
        vt_error_set(err, VT_ERR_INTERNAL, "cannot open DuckDB: %s",
                     open_err ? open_err : "unknown error");
        duckdb_free(open_err);
        duckdb_destroy_config(&config);
        return VT_ERR_INTERNAL;
    }
    duckdb_destroy_config(&config);
    eng_budget_set(limit_bytes ? budget_for(limit_bytes) : 0);
    /* The RSS beyond the counted memory the watcher lets be: 256 MiB, or a
     * quarter of a small budget (at least 64 MiB): with 256 MiB a 384 MiB
     * budget's RSS reached idle + budget + ~200 MiB when a statement that
     * overran its deadline still held memory beside the next (test:
     * test_hostile_sql_limits' memory test; budget.cc). */
    if (limit_bytes) {
        int64_t quarter = eng_budget_get() / 4, mib = 1024 * 1024;
        eng_budget_watch(quarter > 256 * mib ? 256 * mib : quarter < 64 * mib ? 64 * mib : quarter);
    }
    if (limit)
        log_info("DuckDB memory_limit %s (server.memory_limit = \"%s\"), allocation budget "
                 "%.0f MiB",
                 limit, cfg->server.memory_limit,
                 (double)eng_budget_get() / (1024.0 * 1024.0));
    if (temp_max)
        log_info("DuckDB max_temp_directory_size %s (server.max_temp_directory_size = \"%s\")",
                 temp_max, cfg->server.max_temp_directory_size);
    /* Our SQL functions, for every connection of the database. */
    duckdb_connection con;
    if (duckdb_connect(*out_db, &con) != DuckDBSuccess) {
        duckdb_close(out_db);
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot connect to DuckDB");
    }
    rc = query_like_register(con, err);
    if (rc == VT_ERR_OK && !defer)
        rc = eng_functions_install(con, err);
    /* Given at open, the cap is reported but not enforced when temp_directory
     * is set at open too (DuckDB 1.4.4 sizes its temp files' manager from the
     * free space then): measured 667 MiB spilled under a 64 MiB cap. Set
     * again, it holds. */
    if (rc == VT_ERR_OK && temp_max) {
        struct strbuf set;
        sb_init(&set, 0);
        sb_adds(&set, "SET GLOBAL max_temp_directory_size = ");
        sb_add_sql_string(&set, temp_max);
        rc = set.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL)
                          : eng_exec(con, set.buf, VT_ERR_INTERNAL, err);
        sb_release(&set);
    }
    /* Lazy generations read the same files query after query: DuckDB keeps
     * their footers (keyed by path and modification time) instead of reading
     * them again each time (measured: a count over 100 files 7 ms -> 2 ms). */
    if (rc == VT_ERR_OK)
        rc = eng_exec(con, "SET GLOBAL parquet_metadata_cache = true", VT_ERR_INTERNAL, err);
    /* DuckDB's external file cache keeps the bytes of every Parquet file it
     * read, keyed by path, in buffer-pool memory evicted only under
     * memory_limit pressure. Ours are all local files (S3 objects come
     * through our own client) that the page cache already holds, and builds
     * read temp downloads and imported generations under a new path each
     * time: the cache grew ~27 KiB of RSS per replaced generation, forever
     * (tests/soak/rss_per_generation.py). Off, a lazy page over 100 local
     * files took the same time (~11 ms). */
    if (rc == VT_ERR_OK)
        rc = eng_exec(con, "SET GLOBAL enable_external_file_cache = false", VT_ERR_INTERNAL, err);
    if (rc == VT_ERR_OK)
        rc = relaunch_task_threads(con, cfg->server.task_nice, err);
    duckdb_disconnect(&con);
    /* Deferred: ~30 DuckDB statements (19 CREATE MACROs, each bound in full
     * when created: ~13 ms) on a connection of their own, while the caller
     * goes on (confinement, pools, HTTP, the first builds' listing, probe and
     * ATTACH, which use none of them). */
    if (rc == VT_ERR_OK && defer) {
        pthread_mutex_lock(&fn_install.mu);
        bool busy = fn_install.started;
        pthread_mutex_unlock(&fn_install.mu);
        if (busy) {
            rc = vt_error_set(err, VT_ERR_INTERNAL, "a deferred database is open already");
        } else if (duckdb_connect(*out_db, &fn_install.con) != DuckDBSuccess) {
            rc = vt_error_set(err, VT_ERR_INTERNAL, "cannot connect to DuckDB");
        } else {
            pthread_mutex_lock(&fn_install.mu);
            fn_install.started = true;
            fn_install.done = false;
            fn_install.rc = VT_ERR_OK;
            pthread_mutex_unlock(&fn_install.mu);
            if (pthread_create(&fn_install.thread, NULL, fn_install_main, NULL) != 0) {
                pthread_mutex_lock(&fn_install.mu);
                fn_install.started = false;
                pthread_mutex_unlock(&fn_install.mu);
                rc = eng_functions_install(fn_install.con, err); /* no thread: now */
                duckdb_disconnect(&fn_install.con);
            }
        }
    }
    if (rc != VT_ERR_OK)
        duckdb_close(out_db);
    else if (!eng_budget_active() && eng_budget_get() > 0)
        log_warn("the allocation budget does not see DuckDB's allocations (a DuckDB library "
                 "other than 1.4.4's?): memory outside DuckDB's buffer pool is not bounded");
    return rc;
}

/* Set once lock_configuration is on: connections inherit the global UTC. */
static atomic_bool config_locked;

enum vt_err eng_confine(duckdb_database db, const struct strvec *dirs, bool lock,
                        struct vt_error *err)
{
    duckdb_connection con;
    if (duckdb_connect(db, &con) != DuckDBSuccess)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot connect to DuckDB");
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "SET allowed_directories = [");
    for (size_t i = 0; i < dirs->len; i++) {
        if (i)
            sb_adds(&sql, ", ");
        sb_add_sql_string(&sql, dirs->items[i]);
    }
    sb_adds(&sql, "]");
    enum vt_err rc = sql.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL)
                                  : eng_exec(con, sql.buf, VT_ERR_INTERNAL, err);
    sb_release(&sql);
    if (!rc)
        rc = eng_exec(con, "SET enable_external_access = false", VT_ERR_INTERNAL, err);
    if (!rc && lock) {
        rc = eng_exec(con, "SET GLOBAL TimeZone = 'UTC'", VT_ERR_INTERNAL, err);
        if (!rc)
            rc = eng_exec(con, "SET lock_configuration = true", VT_ERR_INTERNAL, err);
        if (!rc)
            atomic_store(&config_locked, true);
    }
    duckdb_disconnect(&con);
    return rc;
}

void eng_close(duckdb_database *db)
{
    fn_install_join();
    if (db && *db)
        duckdb_close(db);
}

enum vt_err eng_connect(duckdb_database db, duckdb_connection *out, struct vt_error *err)
{
    *out = NULL;
    if (duckdb_connect(db, out) != DuckDBSuccess) {
        *out = NULL;
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot connect to DuckDB");
    }
    /* Timestamps with time zone are rendered and exported in UTC, never in
     * the server's local zone (an ICU setting, so per connection; once the
     * configuration is locked, the global value set before is UTC). */
    if (atomic_load(&config_locked))
        return VT_ERR_OK;
    enum vt_err rc = eng_exec(*out, "SET TimeZone = 'UTC'", VT_ERR_INTERNAL, err);
    if (rc != VT_ERR_OK)
        duckdb_disconnect(out);
    return rc;
}

const char *eng_error_text(const char *duckdb_message, char *out, size_t cap)
{
    const char *m = duckdb_message ? duckdb_message : "query failed";
    const char *cut = strstr(m, "\nLINE ");
    size_t n = cut ? (size_t)(cut - m) : strlen(m);
    while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' '))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, m, n);
    out[n] = '\0';
    return out;
}

/* Line `n` (1-based) of `text`: its start and length (false past the end).
 * Lines are counted as DuckDB 1.4 counts them: "\r\n", '\n' and '\r' each
 * end one. */
static bool nth_line(const char *text, long n, const char **out, size_t *out_len)
{
    for (long i = 1; i < n; i++) {
        text += strcspn(text, "\r\n");
        if (!*text)
            return false;
        text += text[0] == '\r' && text[1] == '\n' ? 2 : 1;
    }
    *out = text;
    *out_len = strcspn(text, "\r\n");
    return true;
}

const char *eng_error_excerpt(const char *duckdb_message, const char *own, int own_line,
                              char *out, size_t cap)
{
    const char *m = duckdb_message ? duckdb_message : "query failed";
    const char *cut = strstr(m, "\nLINE ");
    if (!cut || !own)
        return eng_error_text(m, out, cap);
    /* "\nLINE <n>: [...]<text>[...]\n<spaces>^" (QueryErrorContext::Format) */
    char *end;
    long n = strtol(cut + 6, &end, 10);
    const char *shown = end + 2;
    const char *caret = strchr(cut + 1, '\n');
    if (end == cut + 6 || end[0] != ':' || end[1] != ' ' || !caret)
        return eng_error_text(m, out, cap);
    size_t shown_len = (size_t)(caret - shown);
    size_t pad = strspn(caret + 1, " ");
    if (caret[1 + pad] != '^' || caret[2 + pad] != '\0')
        return eng_error_text(m, out, cap);
    if (shown_len >= 3 && !memcmp(shown, "...", 3)) {
        shown += 3;
        shown_len -= 3;
    }
    if (shown_len >= 3 && !memcmp(shown + shown_len - 3, "...", 3))
        shown_len -= 3;
    const char *line;
    size_t line_len;
    long mine = n - own_line + 1;
    if (mine < 1 || !nth_line(own, mine, &line, &line_len) || shown_len > line_len ||
        !memmem(line, line_len, shown, shown_len))
        return eng_error_text(m, out, cap);
    /* The caret sits under the same character once "LINE <n>: " is written
     * with the client's number. */
    char head[32];
    int old_head = (int)(end + 2 - (cut + 1));
    int new_head = snprintf(head, sizeof head, "LINE %ld: ", mine);
    long spaces = (long)pad - old_head + new_head;
    if (spaces < 0)
        return eng_error_text(m, out, cap);
    snprintf(out, cap, "%.*s\n%s%.*s\n%*s^", (int)(cut - m), m, head,
             (int)(caret - (end + 2)), end + 2, (int)spaces, "");
    return out;
}

enum vt_err eng_exec(duckdb_connection con, const char *sql, enum vt_err code,
                     struct vt_error *err)
{
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        char text[VT_ERROR_MSG_MAX];
        vt_error_set(err, code, "%s", eng_error_text(duckdb_result_error(&res), text, sizeof text));
        duckdb_destroy_result(&res);
        return code;
    }
    duckdb_destroy_result(&res);
    return VT_ERR_OK;
}

static bool deadline_passed(const struct eng_job *job, int64_t now_ms)
{
    int64_t deadline = atomic_load(&job->deadline_ms);
    return deadline && now_ms >= deadline;
}

/* ------------------------------------------------- fair queuing per flow */

/* The flow table entry of `key` (open addressing over a few slots; when they
 * are all taken, the flow whose tag is oldest gives its slot up: a flow idle
 * that long has nothing queued that its tag could still order). NULL when
 * `create` is false and the flow is unknown. Under pool->mu. */
static struct eng_flow *flow_get(struct eng_pool *pool, uint64_t key, bool create)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    struct eng_flow *victim = NULL;
    for (int i = 0; i < ENG_FLOW_PROBES; i++) {
        struct eng_flow *f = &pool->flows[((h >> 58) + (uint64_t)i) & (ENG_FLOWS - 1)];
        if (f->used && f->key == key)
            return f;
        if (!victim || !f->used || (victim->used && f->finish_us < victim->finish_us))
            victim = f;
    }
    if (!create)
        return NULL;
    *victim = (struct eng_flow){.used = true, .key = key, .cost_us = ENG_FLOW_COST0_US};
    return victim;
}

/* Start-time fair queuing: a job's start tag is the later of its class's
 * virtual time and its flow's last finish tag; the flow's finish tag moves
 * on by the flow's measured cost. Workers take the smallest start tag, so
 * every flow with jobs queued gets an equal share of the workers' time,
 * whatever its jobs cost and however many it queues; one flow alone is
 * served in arrival order. */
static void tag(struct eng_pool *pool, struct eng_job *job)
{
    struct eng_flow *f = flow_get(pool, job->flow, true);
    int64_t v = pool->vtime[job->cls];
    job->vstart = f->finish_us > v ? f->finish_us : v;
    f->finish_us = job->vstart + f->cost_us;
}

/* Removes `job` (after `prev`, NULL for the head) from class c's queue. */
static struct eng_job *unlink_job(struct eng_pool *pool, enum eng_job_class c,
                                  struct eng_job *prev, struct eng_job *job)
{
    if (prev)
        prev->next = job->next;
    else
        pool->head[c] = job->next;
    if (pool->tail[c] == job)
        pool->tail[c] = prev;
    pool->queued--;
    pool->queued_cls[c]--;
    if (job->vstart > pool->vtime[c])
        pool->vtime[c] = job->vstart;
    return job;
}

/* The queued job of class c with the smallest start tag (the earliest to
 * arrive among equals). */
static struct eng_job *pop(struct eng_pool *pool, enum eng_job_class c)
{
    struct eng_job *best = pool->head[c], *best_prev = NULL;
    for (struct eng_job *prev = best, *j = best->next; j; prev = j, j = j->next)
        if (j->vstart < best->vstart) {
            best = j;
            best_prev = prev;
        }
    return unlink_job(pool, c, best_prev, best);
}

/* The job ran for `us` microseconds: its flow's cost is a moving average. */
static void flow_ran(struct eng_pool *pool, const struct eng_job *job, int64_t us)
{
    struct eng_flow *f = flow_get(pool, job->flow, false);
    if (f)
        f->cost_us = (3 * f->cost_us + (us > 1 ? us : 1)) / 4;
}

/* The next job worker `w` may run, or NULL (under pool->mu). */
static struct eng_job *take(struct eng_pool *pool, const struct eng_worker *w)
{
    struct eng_job *l = pool->head[ENG_JOB_LONG]; /* the oldest long job */
    if (w->extra) /* past the cap: anything that waits, short jobs first */
        return pool->head[ENG_JOB_SHORT] ? pop(pool, ENG_JOB_SHORT)
               : l                       ? pop(pool, ENG_JOB_LONG)
                                         : NULL;
    switch (w->lane) {
    case LANE_STREAM:
        return pool->head[ENG_JOB_STREAM] ? pop(pool, ENG_JOB_STREAM) : NULL;
    case LANE_LONG:
        return l ? pop(pool, ENG_JOB_LONG) : NULL;
    case LANE_SHORT:
        if (pool->head[ENG_JOB_SHORT])
            return pop(pool, ENG_JOB_SHORT);
        /* A long job still queued at its deadline only answers 504: any idle
         * worker may do that rather than keep the client waiting for the
         * long lane. */
        return l && deadline_passed(l, time_mono_ms()) ? unlink_job(pool, ENG_JOB_LONG, NULL, l)
                                                       : NULL;
    case LANE_ANY:
        break;
    }
    /* Long jobs first while fewer than long_cap run (else they would starve
     * under a steady flow of short ones), short jobs on the other workers. */
    if (l && (pool->stopping || pool->running_long < pool->long_cap))
        return pop(pool, ENG_JOB_LONG);
    if (l && deadline_passed(l, time_mono_ms()))
        return unlink_job(pool, ENG_JOB_LONG, NULL, l);
    if (pool->head[ENG_JOB_SHORT])
        return pop(pool, ENG_JOB_SHORT);
    return NULL;
}

/* The connection of the pool worker running on this thread (NULL elsewhere). */
static _Thread_local duckdb_connection worker_con;

duckdb_connection eng_worker_connection(void)
{
    return worker_con;
}

static void *worker_main(void *arg);

/* A worker for slot `index` with a connection of its own, started; NULL
 * with err set. */
static struct eng_worker *worker_start(struct eng_pool *pool, int index, enum lane lane,
                                       bool extra, struct vt_error *err)
{
    struct eng_worker *w = calloc(1, sizeof *w);
    if (!w) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    w->pool = pool;
    w->lane = lane;
    w->extra = extra;
    w->index = index;
    if (eng_connect(pool->db, &w->con, err) != VT_ERR_OK) {
        free(w);
        return NULL;
    }
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        duckdb_disconnect(&w->con);
        free(w);
        vt_error_set(err, VT_ERR_INTERNAL, "cannot start worker thread");
        return NULL;
    }
    return w;
}

/* A worker whose thread is ending: off its list (`*list`, counted by
 * `*count`: the retired or the extra workers), onto the graveyard, where the
 * watchdog joins the thread and closes its connection after the thread's
 * own data (exec's and the gate's prepared statements) is freed. Under
 * pool->mu. */
static void bury_from(struct eng_pool *pool, struct eng_worker *w, struct eng_worker **list,
                      int *count)
{
    for (struct eng_worker **p = list; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    (*count)--;
    w->next = pool->graveyard;
    pool->graveyard = w;
    pthread_cond_broadcast(&pool->cv_retired);
}

/* A retired (or unneeded) worker whose thread is ending. */
static void bury_later(struct eng_pool *pool, struct eng_worker *w)
{
    bury_from(pool, w, &pool->retired, &pool->n_retired);
}

/* sched_setattr(2)'s argument (its first published size, 48 bytes):
 * glibc 2.36 has no wrapper, so the syscall is called directly. */
struct slice_attr {
    uint32_t size;
    uint32_t policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime;           /* SCHED_OTHER: the requested slice, ns */
    uint64_t deadline;
    uint64_t period;
};

static _Thread_local int64_t thread_slice_us;

bool eng_thread_slice(int64_t us)
{
#ifdef SYS_sched_setattr
    /* The thread's policy and nice stay as they are (an operator may run the
     * service under chrt or nice); only SCHED_OTHER (0) and SCHED_BATCH (3)
     * threads have a slice to ask for. */
    struct slice_attr a = {0};
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) != 0 ||
        (a.policy != 0 && a.policy != 3))
        return false;
    a.size = sizeof a;
    a.flags = 0;
    a.runtime = (uint64_t)us * 1000u;
    if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
        return false;
    struct slice_attr got = {0};
    if (syscall(SYS_sched_getattr, 0, &got, (unsigned)sizeof got, 0) != 0 ||
        got.runtime != a.runtime)
        return false; /* a kernel before 6.12 reads no slice from it */
    thread_slice_us = us;
    return true;
#else
    (void)us;
    return false;
#endif
}

int64_t eng_thread_slice_get(void)
{
    return thread_slice_us;
}

bool eng_thread_nice(int more)
{
    if (more <= 0)
        return true;
    /* Linux keeps nice per thread: PRIO_PROCESS with the thread's id names
     * this thread alone (POSIX would say the process; glibc passes the id
     * through). Raising it never needs a privilege. */
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, tid);
    if (cur == -1 && errno)
        return false;
    int want = cur + more > 19 ? 19 : cur + more;
    return setpriority(PRIO_PROCESS, tid, want) == 0;
}

static void *worker_main(void *arg)
{
    struct eng_worker *w = arg;
    struct eng_pool *pool = w->pool;
    worker_con = w->con;
    char tname[16];
    static const char *const lane_tag[] = {"", "", "l", "s"};
    snprintf(tname, sizeof tname, "%.8s-%s%d", pool->name, w->extra ? "x" : lane_tag[w->lane],
             w->index);
    pthread_setname_np(pthread_self(), tname);
    /* The long and stream lanes yield the CPU to the short lane and the HTTP
     * loops (engine.h, "CPU priority"); overflow workers take short jobs
     * first, so they keep the short lane's priority. */
    if (!w->extra && (w->lane == LANE_LONG || w->lane == LANE_STREAM) && pool->lane_nice > 0 &&
        !eng_thread_nice(pool->lane_nice))
        log_warn("engine: cannot lower the %s lane's CPU priority", tname);
    pthread_cond_t *cv = w->lane == LANE_STREAM ? &pool->cv_stream
                         : w->lane == LANE_LONG ? &pool->cv_long
                                                : &pool->cv;
    for (;;) {
        pthread_mutex_lock(&pool->mu);
        struct eng_job *job = NULL;
        int64_t idle_until = time_mono_ms() + EXTRA_IDLE_MS;
        while (!w->quit && !(job = take(pool, w)) && !pool->stopping) {
            if (!w->extra) {
                pthread_cond_wait(cv, &pool->mu);
            } else if (time_cond_wait(cv, &pool->mu, idle_until) != 0 &&
                       time_mono_ms() >= idle_until) {
                w->quit = true; /* idle: the overflow is over */
            }
        }
        if (w->extra && (w->quit || !job)) {
            bury_from(pool, w, &pool->extras, &pool->n_extra);
            pthread_mutex_unlock(&pool->mu);
            return NULL;
        }
        if (w->quit) {
            bury_later(pool, w);
            pthread_mutex_unlock(&pool->mu);
            return NULL;
        }
        if (!job) {
            pthread_mutex_unlock(&pool->mu);
            break;
        }
        bool is_long = job->cls == ENG_JOB_LONG && !w->extra; /* extras are past the cap */
        hist_add(&pool->wait[job->cls], time_mono_us() - job->enqueued_us);
        pool->running++;
        pool->running_cls[job->cls]++;
        pool->running_long += is_long;
        w->current = job;
        w->current_long = is_long;
        w->interrupted_ms = 0;
        w->started_ms = time_mono_ms();
        w->overrun_told = false;
        pthread_mutex_unlock(&pool->mu);

        if (deadline_passed(job, time_mono_ms()))
            atomic_store(&job->timed_out, true);
        int64_t t0 = time_mono_us();
        job->run(job, w->con);
        int64_t ran = time_mono_us() - t0;
        eng_budget_settle();

        pthread_mutex_lock(&pool->mu);
        flow_ran(pool, job, ran);
        hist_add(&pool->run[job->cls], ran);
        w->current = NULL;
        if (w->retired) {
            /* Its slot has a new worker; the counts were given back when it
             * was retired. */
            bury_later(pool, w);
            pthread_mutex_unlock(&pool->mu);
            if (job->done)
                job->done(job);
            return NULL;
        }
        pool->running--;
        pool->running_cls[job->cls]--;
        pool->running_long -= is_long;
        if (w->extra && pool->stopping) {
            w->quit = true; /* ends at the top of the loop */
        }
        /* A long job may have waited for this slot on an idle worker. */
        if (w->lane == LANE_ANY && is_long && pool->head[ENG_JOB_LONG])
            pthread_cond_signal(&pool->cv);
        pthread_mutex_unlock(&pool->mu);
        if (job->done)
            job->done(job);
    }
    return NULL;
}

/* Joins the workers that ended after their retirement and closes their
 * connections. */
static void bury(struct eng_pool *pool)
{
    pthread_mutex_lock(&pool->mu);
    struct eng_worker *dead = pool->graveyard;
    pool->graveyard = NULL;
    pthread_mutex_unlock(&pool->mu);
    while (dead) {
        struct eng_worker *next = dead->next;
        pthread_join(dead->thread, NULL);
        duckdb_disconnect(&dead->con);
        free(dead);
        dead = next;
    }
}

/* Worker `w` (slot i) still runs a job ENG_OVERRUN_GRACE_MS after its
 * deadline's interrupt: DuckDB is inside something it does not interrupt.
 * Give its slot to a new worker so the pool keeps its size, let the job
 * finish on the old thread, and tell the job's owner it may answer now. */
static void retire(struct eng_pool *pool, int i, struct eng_worker *w, struct eng_job *job)
{
    struct vt_error err = {0};
    struct eng_worker *fresh = worker_start(pool, i, w->lane, false, &err);
    if (!fresh) {
        log_warn("pool %s: cannot replace a worker stuck past its deadline: %s", pool->name,
                 vt_error_message(&err));
        return;
    }
    pthread_mutex_lock(&pool->mu);
    bool still = w->current == job && !w->retired && pool->workers[i] == w && !pool->stopping;
    struct eng_worker *gone = still ? w : fresh;
    gone->next = pool->retired;
    pool->retired = gone;
    pool->n_retired++;
    if (still) {
        w->retired = true;
        pool->workers[i] = fresh;
        pool->retirements++;
        pool->running--;
        pool->running_cls[job->cls]--;
        pool->running_long -= w->current_long;
    } else {
        fresh->quit = true; /* it finished meanwhile: the new worker is not needed */
    }
    pthread_cond_broadcast(&pool->cv);
    pthread_cond_broadcast(&pool->cv_long);
    pthread_cond_broadcast(&pool->cv_stream);
    pthread_mutex_unlock(&pool->mu);
    if (!still)
        return;
    log_warn("pool %s: a job ran %d ms past its deadline without stopping; worker %d "
             "replaced (the old one ends when DuckDB returns)",
             pool->name, ENG_OVERRUN_GRACE_MS, i);
    if (job->overrun)
        job->overrun(job);
}

/* Starts an overflow worker (pool->n_extra already counts it). */
static void add_extra(struct eng_pool *pool)
{
    struct vt_error err = {0};
    struct eng_worker *x = worker_start(pool, 0, LANE_ANY, true, &err);
    pthread_mutex_lock(&pool->mu);
    if (!x) {
        pool->n_extra--;
    } else {
        x->next = pool->extras;
        pool->extras = x;
        pthread_cond_broadcast(&pool->cv);
    }
    pthread_mutex_unlock(&pool->mu);
    if (!x)
        log_warn("pool %s: cannot start an overflow worker: %s", pool->name,
                 vt_error_message(&err));
}

static void *watchdog_main(void *arg)
{
    struct eng_pool *pool = arg;
    pthread_setname_np(pthread_self(), "watchdog");
    struct timespec period = {0, WATCHDOG_PERIOD_MS * 1000000L};
    for (;;) {
        nanosleep(&period, NULL);
        int64_t now = time_mono_ms();
        pthread_mutex_lock(&pool->mu);
        bool stop = pool->watchdog_stop;
        /* A LONG job held back by the cap whose deadline passed is taken by
         * an idle worker now (it only answers 504). */
        if (pool->head[ENG_JOB_LONG] && deadline_passed(pool->head[ENG_JOB_LONG], now))
            pthread_cond_broadcast(&pool->cv);
        int stuck = -1;
        for (int i = 0; i < pool->n; i++) {
            struct eng_worker *w = pool->workers[i];
            struct eng_job *job = w->current;
            int64_t deadline = job ? atomic_load(&job->deadline_ms) : 0;
            if (deadline && now >= deadline && !atomic_load(&job->timed_out)) {
                atomic_store(&job->timed_out, true);
                duckdb_interrupt(w->con);
                w->interrupted_ms = now;
            } else if (deadline && now >= deadline && !w->interrupted_ms) {
                w->interrupted_ms = now; /* timed out at dequeue, or by an owner */
            } else if (deadline && w->interrupted_ms &&
                       now - w->interrupted_ms >= ENG_OVERRUN_GRACE_MS && stuck < 0 &&
                       !pool->stopping && pool->n_retired < pool->n) {
                stuck = i;
            }
        }
        /* Overflow workers: interrupted at the deadline like the others; one
         * stuck past it has no slot to give back, its owner is told. */
        struct eng_job *tell[8];
        size_t ntell = 0;
        for (struct eng_worker *x = pool->extras; x; x = x->next) {
            struct eng_job *job = x->current;
            int64_t deadline = job ? atomic_load(&job->deadline_ms) : 0;
            if (!deadline || now < deadline)
                continue;
            if (!atomic_load(&job->timed_out)) {
                atomic_store(&job->timed_out, true);
                duckdb_interrupt(x->con);
                x->interrupted_ms = now;
            } else if (!x->interrupted_ms) {
                x->interrupted_ms = now;
            } else if (now - x->interrupted_ms >= ENG_OVERRUN_GRACE_MS && !x->overrun_told &&
                       ntell < sizeof tell / sizeof tell[0] && job->overrun) {
                x->overrun_told = true;
                tell[ntell++] = job;
            }
        }
        /* A job that waited LONG_WAIT_MS while every worker is held by a
         * job running for BUSY_MS or more (not merely busy with many short
         * ones) gets an overflow worker, up to max(n, 4) of them: a short
         * statement never waits for long ones to end. A long job gets one
         * only while no short job waits, and overflow workers take short
         * jobs first: on a loaded machine every group by runs past BUSY_MS,
         * and overflow workers running the queue of long jobs took the
         * cores from the pages and counts queued beside them (scenario 12:
         * 4.7 s of 12.7 s of server CPU on overflow workers, group bys at
         * 90% of their throughput alone, pages at 9%). */
        bool all_held = true, long_held = pool->running_long >= pool->long_cap;
        for (int i = 0; i < pool->n; i++) {
            const struct eng_worker *x = pool->workers[i];
            if (x->lane == LANE_STREAM)
                continue;
            bool old = x->current && now - x->started_ms >= pool->busy_ms;
            if (x->lane != LANE_LONG) /* the workers short jobs wait for */
                all_held = all_held && old;
            if (x->current && x->current_long && !old)
                long_held = false;
        }
        const struct eng_job *lh = pool->head[ENG_JOB_LONG], *sh = pool->head[ENG_JOB_SHORT];
        bool waited =
            (lh && !sh && (long_held || all_held) && now - lh->enqueued_ms >= LONG_WAIT_MS) ||
            (sh && all_held && now - sh->enqueued_ms >= LONG_WAIT_MS);
        bool overflow = waited && !pool->stopping && pool->n_extra < (pool->n < 4 ? 4 : pool->n);
        if (overflow)
            pool->n_extra++; /* reserved; the worker joins the list below */
        struct eng_worker *w = stuck >= 0 ? pool->workers[stuck] : NULL;
        struct eng_job *stuck_job = w ? w->current : NULL;
        bool dead = pool->graveyard != NULL;
        pthread_mutex_unlock(&pool->mu);
        /* Called while the job runs: pool->mu is not held (the owner's
         * answer takes its own locks). The job cannot end meanwhile: it
         * ends only after its worker takes pool->mu, and done() comes last;
         * an owner must cope with a call racing the end of run(). */
        for (size_t k = 0; k < ntell; k++)
            tell[k]->overrun(tell[k]);
        if (overflow)
            add_extra(pool);
        if (w)
            retire(pool, stuck, w, stuck_job);
        if (dead)
            bury(pool);
        if (stop)
            break;
    }
    return NULL;
}

struct eng_pool *eng_pool_create(duckdb_database db, int threads, const char *name,
                                 struct vt_error *err)
{
    struct eng_lanes lanes = {.threads = threads};
    return eng_pool_create_lanes(db, &lanes, name, err);
}

int eng_long_lane_threads(int threads)
{
    int reserve = threads / 4 > 1 ? threads / 4 : 1;
    return threads > reserve ? threads - reserve : 1;
}

struct eng_pool *eng_pool_create_lanes(duckdb_database db, const struct eng_lanes *lanes,
                                       const char *name, struct vt_error *err)
{
    int threads = lanes->threads < 1 ? 1 : lanes->threads;
    int n_long = lanes->long_threads > 0 ? lanes->long_threads : 0;
    int n_stream = lanes->stream_threads > 0 ? lanes->stream_threads : 0;
    struct eng_pool *pool = calloc(1, sizeof *pool);
    if (!pool) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    snprintf(pool->name, sizeof pool->name, "%s", name);
    pool->db = db;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->cv, NULL);
    pthread_cond_init(&pool->cv_long, NULL);
    pthread_cond_init(&pool->cv_stream, NULL);
    pthread_cond_init(&pool->cv_retired, NULL);
    /* With a long lane, LONG jobs run on its threads (the cap the overflow
     * workers look at); without, on at most long_cap general workers. */
    pool->long_cap = n_long ? n_long : eng_long_lane_threads(threads);
    pool->busy_ms = lanes->busy_ms > 0 ? lanes->busy_ms : BUSY_MS;
    pool->lane_nice = lanes->lane_nice > 0 ? lanes->lane_nice : 0;
    pool->max_queued = lanes->max_queued > 0 && lanes->max_queued < VT_MAX_PENDING_JOBS
                           ? lanes->max_queued
                           : VT_MAX_PENDING_JOBS;
    pool->n_long = n_long;
    pool->n_stream = n_stream;
    int total = threads + n_long + n_stream;
    pool->workers = calloc((size_t)total, sizeof *pool->workers);
    if (!pool->workers) {
        free(pool);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    for (int i = 0; i < total; i++) {
        enum lane lane = i < threads            ? (n_long ? LANE_SHORT : LANE_ANY)
                         : i < threads + n_long ? LANE_LONG
                                                : LANE_STREAM;
        int index = i < threads ? i : i < threads + n_long ? i - threads : i - threads - n_long;
        struct eng_worker *w = worker_start(pool, index, lane, false, err);
        if (!w) {
            eng_pool_destroy(pool);
            return NULL;
        }
        pool->workers[i] = w;
        pool->n++;
    }
    if (pthread_create(&pool->watchdog, NULL, watchdog_main, pool) == 0)
        pool->watchdog_started = true;
    live_add(pool);
    return pool;
}

bool eng_pool_submit(struct eng_pool *pool, struct eng_job *job)
{
    job->next = NULL;
    job->enqueued_us = time_mono_us();
    job->enqueued_ms = job->enqueued_us / 1000;
    if ((unsigned)job->cls >= ENG_JOB_CLASSES)
        job->cls = ENG_JOB_SHORT;
    pthread_mutex_lock(&pool->mu);
    if (job->cls == ENG_JOB_STREAM && pool->n_stream == 0)
        job->cls = ENG_JOB_LONG;
    enum eng_job_class c = job->cls;
    if (pool->stopping || pool->queued_cls[c] >= pool->max_queued) {
        pthread_mutex_unlock(&pool->mu);
        return false;
    }
    tag(pool, job);
    if (pool->tail[c])
        pool->tail[c]->next = job;
    else
        pool->head[c] = job;
    pool->tail[c] = job;
    pool->queued++;
    pool->queued_cls[c]++;
    pthread_cond_signal(c == ENG_JOB_STREAM                 ? &pool->cv_stream
                        : c == ENG_JOB_LONG && pool->n_long ? &pool->cv_long
                                                            : &pool->cv);
    pthread_mutex_unlock(&pool->mu);
    return true;
}

void eng_pool_interrupt(struct eng_pool *pool, struct eng_job *job)
{
    pthread_mutex_lock(&pool->mu);
    for (int i = 0; i < pool->n; i++)
        if (pool->workers[i]->current == job)
            duckdb_interrupt(pool->workers[i]->con);
    for (int list = 0; list < 2; list++)
        for (struct eng_worker *w = list ? pool->extras : pool->retired; w; w = w->next)
            if (w->current == job)
                duckdb_interrupt(w->con);
    pthread_mutex_unlock(&pool->mu);
}

void eng_pool_interrupt_all(struct eng_pool *pool)
{
    pthread_mutex_lock(&pool->mu);
    for (int i = 0; i < pool->n; i++)
        if (pool->workers[i]->current) {
            atomic_store(&pool->workers[i]->current->cancelled, true);
            duckdb_interrupt(pool->workers[i]->con);
        }
    for (int list = 0; list < 2; list++)
        for (struct eng_worker *w = list ? pool->extras : pool->retired; w; w = w->next)
            if (w->current) {
                atomic_store(&w->current->cancelled, true);
                duckdb_interrupt(w->con);
            }
    pthread_mutex_unlock(&pool->mu);
}

int eng_pool_threads(const struct eng_pool *pool)
{
    return pool->n;
}

int eng_pool_load(struct eng_pool *pool)
{
    pthread_mutex_lock(&pool->mu);
    int n = pool->queued + pool->running;
    pthread_mutex_unlock(&pool->mu);
    return n;
}

int64_t eng_pool_retirements(struct eng_pool *pool)
{
    pthread_mutex_lock(&pool->mu);
    int64_t n = pool->retirements;
    pthread_mutex_unlock(&pool->mu);
    return n;
}

void eng_pool_destroy(struct eng_pool *pool)
{
    if (!pool)
        return;
    live_remove(pool);
    pthread_mutex_lock(&pool->mu);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->cv);
    pthread_cond_broadcast(&pool->cv_long);
    pthread_cond_broadcast(&pool->cv_stream);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n; i++)
        pthread_join(pool->workers[i]->thread, NULL);
    /* Workers retired while stuck in DuckDB, and overflow workers: the
     * watchdog still interrupts them at their deadlines; wait a bounded
     * time. One still running after it keeps the pool alive (the process is
     * ending). */
    pthread_mutex_lock(&pool->mu);
    int64_t until = time_mono_ms() + (int64_t)VT_SHUTDOWN_JOIN_SECS * 1000;
    pthread_cond_broadcast(&pool->cv); /* idle overflow workers end */
    while ((pool->n_retired > 0 || pool->n_extra > 0) && time_mono_ms() < until)
        time_cond_wait(&pool->cv_retired, &pool->mu, until);
    bool left = pool->n_retired > 0 || pool->n_extra > 0;
    pool->watchdog_stop = true;
    pthread_mutex_unlock(&pool->mu);
    /* The watchdog reads the workers: it goes before they do. */
    if (pool->watchdog_started)
        pthread_join(pool->watchdog, NULL);
    bury(pool);
    for (int i = 0; i < pool->n; i++) {
        duckdb_disconnect(&pool->workers[i]->con);
        free(pool->workers[i]);
    }
    if (left) {
        log_warn("pool %s: %d worker(s) still inside DuckDB at shutdown", pool->name,
                 pool->n_retired + pool->n_extra);
        return;
    }
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->cv);
    pthread_cond_destroy(&pool->cv_long);
    pthread_cond_destroy(&pool->cv_stream);
    pthread_cond_destroy(&pool->cv_retired);
    free(pool->workers);
    free(pool);
}

/* ------------------------------------------------------------- sampler */

struct eng_sampler {
    duckdb_connection con;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool have;
    int period_ms;
    int64_t memory_bytes, temp_bytes;
};

static void sample_once(struct eng_sampler *s)
{
    duckdb_result res;
    if (duckdb_query(s->con,
                     "SELECT sum(memory_usage_bytes)::BIGINT, sum(temporary_storage_bytes)::BIGINT "
                     "FROM duckdb_memory()",
                     &res) != DuckDBSuccess) {
        duckdb_destroy_result(&res);
        return;
    }
    int64_t mem = duckdb_value_int64(&res, 0, 0), tmp = duckdb_value_int64(&res, 1, 0);
    duckdb_destroy_result(&res);
    pthread_mutex_lock(&s->mu);
    s->memory_bytes = mem;
    s->temp_bytes = tmp;
    s->have = true;
    pthread_mutex_unlock(&s->mu);
}

static void *sampler_main(void *arg)
{
    struct eng_sampler *s = arg;
    pthread_setname_np(pthread_self(), "duckdb-sampler");
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        pthread_mutex_unlock(&s->mu);
        sample_once(s);
        pthread_mutex_lock(&s->mu);
        if (!s->stop)
            time_cond_wait(&s->cv, &s->mu, time_mono_ms() + s->period_ms);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

struct eng_sampler *eng_sampler_start(duckdb_database db, int period_ms)
{
    struct eng_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->period_ms = period_ms > 0 ? period_ms : 1000;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (duckdb_connect(db, &s->con) != DuckDBSuccess) {
        eng_sampler_stop(s);
        return NULL;
    }
    if (pthread_create(&s->thread, NULL, sampler_main, s) != 0) {
        duckdb_disconnect(&s->con);
        s->con = NULL;
        eng_sampler_stop(s);
        return NULL;
    }
    return s;
}

bool eng_sampler_read(struct eng_sampler *s, int64_t *out_memory_bytes, int64_t *out_temp_bytes)
{
    if (!s)
        return false;
    pthread_mutex_lock(&s->mu);
    bool have = s->have;
    *out_memory_bytes = s->memory_bytes;
    *out_temp_bytes = s->temp_bytes;
    pthread_mutex_unlock(&s->mu);
    return have;
}

void eng_sampler_stop(struct eng_sampler *s)
{
    if (!s)
        return;
    if (s->con) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        duckdb_interrupt(s->con);
        pthread_join(s->thread, NULL);
        duckdb_disconnect(&s->con);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}
