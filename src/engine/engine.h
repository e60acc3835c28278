/*
 * The engine: one DuckDB database per process and the pools of threads that
 * run work against it.
 *
 * A pool has N worker threads, each owning one duckdb_connection. Jobs are
 * queued (bounded per class: eng_lanes.max_queued) and run in FIFO order
 * within their class (below); the pool keeps per class what waits and runs
 * and histograms of how long jobs waited and ran (eng_pool_stats). A job
 * may carry a deadline: a
 * watchdog interrupts the worker's connection (duckdb_interrupt) when it
 * passes, and a job still queued at its deadline runs with `timed_out` set so
 * it can answer 504 without touching DuckDB. This is how server.request_timeout_ms
 * cancels running queries.
 *
 * Two pools exist: the query pool (server.workers threads) and the builder
 * pool ([server.startup] max_concurrent threads) so reloads never starve
 * queries.
 *
 * Job classes, so short requests do not queue behind long ones (the mixed
 * load of `make bench`, scenario 12):
 *   SHORT   a point query, a page, a count: milliseconds.
 *   LONG    a full-table aggregate, sort or big page, a /sql statement.
 *   STREAM  a whole-result stream, paced by its client (seconds).
 * A pool made with lanes (eng_pool_create_lanes; the query pool) runs each
 * class on threads of its own: the `threads` general workers run SHORT jobs
 * only, the long lane LONG jobs, the stream lane STREAM jobs. So a page never
 * waits for a worker a group by or a slow stream reader holds, however many
 * of those queue, and neither of those ever starves.
 * CPU priority: every worker runs eng_lanes.worker_nice (server.worker_nice,
 * 5 by default) above the process's nice, the HTTP loops at it, so when the
 * cores are busy a loop that wakes for an index lookup or count gets one
 * first (Linux shares a busy core by weight; nice 5 weighs a third of nice
 * 0); alone, every thread has the cores it can use. eng_lanes.lane_nice
 * (server.lane_nice) adds to it for the long and stream lanes' threads.
 * DuckDB's own task threads, which run the parallel part of every lane's
 * statements, get server.worker_nice + server.task_nice at eng_open.
 * eng_lanes.idle (server.worker_idle, off by default) puts the workers and
 * DuckDB's task threads under SCHED_IDLE as well: a waking loop then always
 * takes their core, and under a closed loop they starve (README).
 * (README.md, "Fair latency under mixed load (12)", has what was
 * measured.) A LONG job still queued at its deadline is taken by any
 * idle short-lane worker (it only answers 504).
 * Overflow workers (LONG_WAIT_MS, BUSY_MS in engine.c) count the short
 * lane's workers for short jobs and the long lane as the LONG cap; one
 * starts for a waiting LONG job only while no SHORT job waits, and they
 * take SHORT jobs first (a queue of slow long jobs must not take the cores
 * from the short ones beside it).
 * Within a class, jobs are fairly queued by flow (eng_job.flow): a cheap
 * kind of request (a page) is not held behind as many turns of a dearer one
 * (a count over a range) as it has connections.
 * A pool without lanes (eng_pool_create: builders, admin) runs SHORT and
 * LONG jobs on the same workers, at most `long_cap` LONG ones at a time
 * (N - max(1, N/4), at least 1; eng_long_lane_threads), a free worker taking
 * a long job before a short one below the cap so neither class starves;
 * STREAM jobs run there as LONG ones.
 */
#ifndef VT_ENGINE_ENGINE_H
#define VT_ENGINE_ENGINE_H

#include <duckdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "util/errors.h"

struct eng_job;
typedef void (*eng_job_fn)(struct eng_job *job, duckdb_connection con);

enum eng_job_class { ENG_JOB_SHORT, ENG_JOB_LONG, ENG_JOB_STREAM, ENG_JOB_CLASSES };

/* run() does the work on a worker thread; done() (optional) is called after
 * the pool has forgotten the job, so done() may hand the job's memory back to
 * its owner (which may free it at once). */
struct eng_job {
    eng_job_fn run;
    void (*done)(struct eng_job *job);
    /* Optional: called (on the watchdog's thread, while run() is still
     * going) when the job is still running ~250 ms after its deadline's
     * interrupt. DuckDB interrupts between vectors, not inside one call of a
     * function, so this can happen; the pool has then already given the
     * job's slot to a new worker (the job finishes on the old thread, which
     * ends after done()). The owner may answer its client now (504), as
     * long as what run() and done() still touch stays valid. */
    void (*overrun)(struct eng_job *job);
    _Atomic int64_t deadline_ms; /* time_mono_ms() value; 0 = none */
    atomic_bool timed_out;      /* set by the watchdog (or at dequeue) */
    atomic_bool cancelled;      /* set by the owner: stop as soon as possible */
    enum eng_job_class cls;     /* set by the owner before submitting (0: SHORT) */
    /* The job's flow for fair queuing (set by the owner; 0: the flow of
     * every job that names none): jobs of the same kind, e.g. one query
     * shape. Within a class, every flow with jobs queued gets an equal share
     * of the workers' time, whatever its jobs cost and however many it
     * queues (start-time fair queuing on each flow's measured cost); jobs of
     * one flow run in arrival order. */
    uint64_t flow;
    int64_t vstart;             /* the pool's: start tag */
    struct eng_job *next;       /* queue link, owned by the pool */
    int64_t enqueued_ms;
    int64_t enqueued_us;        /* the pool's: for the wait histogram */
};

struct eng_pool;

/* The SQL functions vitrine defines for every connection of the database
 * (functions.c): bounded wrappers in the database's main schema in front of
 * the built-ins whose cost one call's arguments choose (edit distances,
 * padding, bitstring, list builders, printf/format widths, the recursive JSON
 * functions), each refusing a call past its limit (util/limits.h VT_SQL_*),
 * and PostgreSQL's to_char(timestamp, text), to_timestamp(text, text) and
 * overlay. eng_open installs them. */
enum vt_err eng_functions_install(duckdb_connection con, struct vt_error *err);

/* PostgreSQL's jsonb containment (jsonb.c): "vt:jsonb_contains"(a, b) is
 * a @> b over JSON text, NULL when either is; text that is not JSON fails
 * ("invalid input syntax for type json"). The pgwire dialect calls it for
 * @>, <@ and jsonb_contains/jsonb_contained. eng_functions_install installs
 * it. */
enum vt_err eng_jsonb_install(duckdb_connection con, struct vt_error *err);
/* The same on two texts (what the function calls; fuzz_jsonb too): 1 when
 * a contains b, 0 when not, -1 when either is not JSON, -2 past
 * VT_SQL_MAX_JSON_DEPTH levels or `max_steps` element comparisons; adds the
 * comparisons made to *steps. */
int eng_jsonb_contains(const char *a, size_t an, const char *b, size_t bn, int64_t max_steps,
                       int64_t *steps);

/* PostgreSQL's jsonb_set and jsonb_insert (jsonb.c), as "vt:jsonb_set"(target,
 * path VARCHAR[], new_value[, create_missing]) and "vt:jsonb_insert"(target,
 * path, new_value[, insert_after]) returning JSON; the pgwire dialect maps
 * PostgreSQL's names onto them. The text of what the path does not reach is
 * kept as written. */
struct strbuf;
enum eng_jsonb_op {
    ENG_JSONB_REPLACE,      /* jsonb_set(..., false) */
    ENG_JSONB_CREATE,       /* jsonb_set(...): replace, or add what is missing */
    ENG_JSONB_INSERT_BEFORE, /* jsonb_insert(...) */
    ENG_JSONB_INSERT_AFTER, /* jsonb_insert(..., true) */
};
struct eng_jsonb_step {
    const char *s; /* NULL: a NULL path element */
    size_t n;
};
/* The same on texts (what the functions call; fuzz_jsonb too): 0 and the
 * result in *out, or -1 and PostgreSQL's message in err (not JSON, a scalar
 * target, a NULL or non-integer path element where the walk needs it, an
 * existing key for jsonb_insert, past VT_SQL_MAX_JSON_DEPTH levels or
 * `max_bytes` walked). *walked gets the bytes walked added. */
int eng_jsonb_set(const char *doc, size_t dn, const struct eng_jsonb_step *path, size_t npath,
                  const char *val, size_t vn, enum eng_jsonb_op op, int64_t max_bytes,
                  int64_t *walked, struct strbuf *out, char *err, size_t errcap);

/* The allocation budget (budget.cc): every allocation DuckDB makes through
 * its allocator (buffer pool, vectors, strings, lists, hash tables) and every
 * C++ operator new of the process is counted, and past the budget DuckDB's
 * allocations fail (an Out of Memory Error for the statement that asked;
 * operator new refuses only requests of 64 KiB or more). eng_open sets it
 * to server.memory_limit plus a quarter (at least 128 MiB more); 0 = none.
 * active: the count sees DuckDB's allocations at all (it takes the place of
 * DuckDB's allocator functions by symbol interposition). */
void eng_budget_set(int64_t bytes);
int64_t eng_budget_get(void);
int64_t eng_budget_used(void);
int64_t eng_budget_peak(bool reset); /* highest count since the last reset */
int64_t eng_budget_refused(void);    /* allocations refused since start */
bool eng_budget_active(void);
/* Starts (once) the thread that has DuckDB's allocator return freed pages
 * to the system whenever the process's RSS exceeds the counted memory by
 * more than `slack` bytes (freed memory otherwise stays resident ~1 s). */
void eng_budget_watch(int64_t slack);
/* After a job (engine.c's workers): has DuckDB's allocator return freed
 * pages to the system when the count fell by an eighth of the budget (at
 * least 32 MiB) since its highest point, i.e. after a statement that freed
 * that much; a no-op without a budget. The next statement may run on a
 * thread of another lane, whose allocations come from other jemalloc
 * arenas than those freed pages (budget.cc). */
void eng_budget_settle(void);

/* Opens the process database with the settings docs/architecture.md lists
 * ("DuckDB settings"). */
enum vt_err eng_open(const struct vt_config *cfg, duckdb_database *out_db, struct vt_error *err);
/* The same, but the SQL functions (eng_functions_install) are installed on a
 * thread of their own while the caller goes on: ~13 ms of DuckDB binding
 * off the service's start. Nothing may run user SQL before
 * eng_functions_wait returned VT_ERR_OK (the service has the SQL gate wait:
 * sql_gate_set_wait); statements vitrine writes itself that call none of
 * them (builds of Parquet and Delta sources) need not wait. One such
 * database per process at a time. */
enum vt_err eng_open_deferred(const struct vt_config *cfg, duckdb_database *out_db,
                              struct vt_error *err);
/* Blocks until a deferred install ended and returns its result (err filled
 * on failure); VT_ERR_OK at once when none was started. Any thread. */
enum vt_err eng_functions_wait(struct vt_error *err);
/* Joins a deferred install first. */
void eng_close(duckdb_database *db);
/* A connection to `db` with the session settings every connection of the
 * service runs with (TimeZone UTC). Pool workers get theirs from here; so does
 * anything else that reads with DuckDB (the source resolvers), so that one
 * memory_limit and temp_directory govern all of it. */
enum vt_err eng_connect(duckdb_database db, duckdb_connection *out, struct vt_error *err);
/* Confines the database to `dirs` for good: DuckDB's allowed_directories,
 * then enable_external_access = false. From then on no statement of any
 * connection (a build, an export, user SQL that slipped past the SQL gate)
 * can open a file, glob a directory or reach the network outside them, and
 * neither setting can be changed back while the process runs (DuckDB
 * refuses). Attached in-memory databases, temp views and spilling to a
 * temp_directory inside `dirs` keep working.
 * With `lock`, DuckDB's lock_configuration as well: no SET of
 * any setting, global or per connection, succeeds afterwards (TimeZone is set
 * to UTC globally first, so eng_connect's connections need no SET). Only
 * [server.quack], which configures its extension after startup, runs
 * unlocked. */
enum vt_err eng_confine(duckdb_database db, const struct strvec *dirs, bool lock,
                        struct vt_error *err);

struct eng_pool *eng_pool_create(duckdb_database db, int threads, const char *name,
                                 struct vt_error *err);
/* The threads of each lane of a pool with lanes (above). `long_threads` 0
 * makes a pool without a long lane (LONG jobs share the general workers,
 * capped), `stream_threads` 0 one without a stream lane. */
struct eng_lanes {
    int threads;                /* general workers (SHORT; at least 1) */
    int long_threads;
    int stream_threads;
    int max_queued;             /* jobs waiting at most, per class (0: VT_MAX_PENDING_JOBS) */
    int busy_ms;                /* a job running this long holds its worker for the overflow
                                 * rule below (0: 250 ms); unit tests that hold jobs on
                                 * purpose raise it, so a slow machine starts no overflow
                                 * worker behind their back */
    int worker_nice;            /* added to the nice value of every worker, overflow ones
                                 * included (server.worker_nice; 0: the process's) */
    int lane_nice;              /* added to the nice value of the long and stream lanes'
                                 * threads (server.lane_nice; 0: the same as the rest) */
    bool idle;                  /* every worker under SCHED_IDLE (server.worker_idle) */
};
struct eng_pool *eng_pool_create_lanes(duckdb_database db, const struct eng_lanes *lanes,
                                       const char *name, struct vt_error *err);
/* Lowers the calling thread's CPU priority: `more` added to its nice value
 * (Linux keeps it per thread; capped at 19; no privilege needed). true when
 * done or `more` <= 0. New threads start with their creator's value. */
bool eng_thread_nice(int more);
/* Puts the calling thread under SCHED_IDLE (server.worker_idle): any thread
 * of another policy that wakes takes its core at once. No privilege needed;
 * new threads inherit it. true when done. */
bool eng_thread_idle(void);
/* The long lane the query pool gets for `threads` workers: as many LONG jobs
 * at a time as a pool without lanes would allow (N - max(1, N/4), >= 1). */
int eng_long_lane_threads(int threads);
/* Queues a job. Returns false when its class's queue is full (max_queued
 * jobs of that class waiting: a queue of streams never refuses a page) or
 * the pool is stopping (the caller answers 503). */
bool eng_pool_submit(struct eng_pool *pool, struct eng_job *job);
/* The DuckDB connection of the pool worker this thread is (every job's run()
 * gets it too), or NULL on any other thread. The execution layer (src/exec)
 * and the catalog take it from here, so the code above them (the HTTP job
 * callbacks, the front ends) never holds a connection. */
duckdb_connection eng_worker_connection(void);
/* Interrupts the running job (if `job` is running) — used on client disconnect. */
void eng_pool_interrupt(struct eng_pool *pool, struct eng_job *job);
/* Interrupts every running job (shutdown after the grace period). */
void eng_pool_interrupt_all(struct eng_pool *pool);
/* Stops accepting jobs, runs what is queued, joins the threads. */
void eng_pool_destroy(struct eng_pool *pool);
int eng_pool_threads(const struct eng_pool *pool); /* every lane */
/* Workers replaced because their job would not stop (see eng_job.overrun). */
int64_t eng_pool_retirements(struct eng_pool *pool);
/* Jobs queued + running (for metrics and drain). */
int eng_pool_load(struct eng_pool *pool);

/* Per job class, how long jobs waited in the queue (from submit to a worker
 * taking them) and how long they ran (run() on the worker): histograms over
 * ENG_JOB_BUCKETS upper bounds (eng_job_bucket_us, microseconds), kept by
 * the pool under its lock as it hands jobs out, so the numbers cost nothing
 * to whoever does not read them. A job is counted in its class as submitted
 * (a STREAM job of a pool without a stream lane is a LONG one), whichever
 * worker ran it (a short-lane worker answering a long job at its deadline,
 * an overflow worker). */
#define ENG_JOB_BUCKETS 18
extern const int64_t eng_job_bucket_us[ENG_JOB_BUCKETS];
struct eng_job_hist {
    uint64_t bucket[ENG_JOB_BUCKETS + 1]; /* per bucket, not cumulative; the last: +Inf */
    uint64_t count;
    int64_t sum_us;
};
/* The lower-case name of a class ("short", "long", "stream"). */
const char *eng_job_class_name(enum eng_job_class c);

/* The numbers of every live pool, for the metrics: up to `cap` entries,
 * returns how many were written. */
struct eng_class_stats {
    int queued;                 /* jobs of the class waiting for a worker */
    int running;                /* jobs of the class running */
    struct eng_job_hist wait, run; /* since the pool started */
};
struct eng_pool_stats {
    char name[32];
    int threads;
    int queued;                 /* jobs waiting for a worker */
    int running;                /* busy workers */
    int max_queued;             /* per class */
    struct eng_class_stats cls[ENG_JOB_CLASSES];
};
/* One pool's numbers (the same as eng_pools_stats gives). */
void eng_pool_stats_get(struct eng_pool *pool, struct eng_pool_stats *out);
size_t eng_pools_stats(struct eng_pool_stats *out, size_t cap);

/* DuckDB's memory, sampled by a thread of its own every period_ms (the
 * sample is a query, which must not run on an HTTP thread): the buffer
 * manager's memory in use and its spill-file bytes, as of the last sample. */
struct eng_sampler;
struct eng_sampler *eng_sampler_start(duckdb_database db, int period_ms);
/* False until a first sample was taken. */
bool eng_sampler_read(struct eng_sampler *s, int64_t *out_memory_bytes,
                      int64_t *out_temp_bytes);
void eng_sampler_stop(struct eng_sampler *s);

/* DuckDB's error text without the excerpt of the statement it quotes
 * ("LINE 1: SELECT ..." and the caret line): messages name what failed, never
 * the SQL we wrote. Writes into out (cap bytes) and returns it. */
const char *eng_error_text(const char *duckdb_message, char *out, size_t cap);

/* DuckDB's error text for a statement that holds the client's own text:
 * `own` (NULL when nothing DuckDB ran is the client's) begins on line
 * `own_line` (1-based) of what ran. The excerpt DuckDB quotes ("LINE n: ..."
 * and the caret under it) stays only when its line is one of `own`'s and
 * what it shows is that line's text; it is renumbered to count from `own`'s
 * first line. Otherwise it goes, as in eng_error_text: a client sees its own
 * SQL, never the SQL we wrapped around it or wrote for it. Writes into out
 * (cap bytes) and returns it. */
const char *eng_error_excerpt(const char *duckdb_message, const char *own, int own_line,
                              char *out, size_t cap);

/* The text DESCRIBE gives for type `lt` (types.c): written into out (cap
 * bytes) with true for the types whose text is fixed and DECIMAL(w,s);
 * false for nested, ENUM, aliased and other types, whose text the caller
 * asks DuckDB for (DESCRIBE). Takes nothing from `lt`. */
bool eng_type_text(duckdb_logical_type lt, char *out, size_t cap);

/* Runs one statement on `con`; on failure sets err with DuckDB's message
 * (eng_error_text). */
enum vt_err eng_exec(duckdb_connection con, const char *sql, enum vt_err code,
                     struct vt_error *err);

/* Prepares `sql` on `con` into *out; on failure sets err to `code` with
 * DuckDB's message (eng_error_text), destroys the statement and returns
 * `code`. */
enum vt_err eng_prepare(duckdb_connection con, const char *sql, duckdb_prepared_statement *out,
                        enum vt_err code, struct vt_error *err);

/* Asks the kernel for a scheduling slice of `us` microseconds for the
 * calling thread (sched_setattr's sched_runtime for a SCHED_OTHER or
 * SCHED_BATCH thread; Linux 6.12+ EEVDF uses it, between 100 us and 100 ms:
 * a thread with a shorter slice gets an earlier deadline, so it runs sooner
 * after it wakes and may preempt a thread running a longer slice, without a
 * larger share of the CPU). Policy and nice stay as they are. False when
 * the kernel refuses it or does not keep it (before 6.12; a real-time or
 * idle policy): the thread keeps the default then.
 * eng_thread_slice_get: the slice this thread got from eng_thread_slice
 * (us), 0 when none. */
bool eng_thread_slice(int64_t us);
int64_t eng_thread_slice_get(void);

/* The number of CPUs available to this process. */
int eng_cpu_count(void);
/* Memory this process may use: physical memory, or the cgroup's limit when
 * lower; 0 when unknown. */
uint64_t eng_available_memory(void);

#endif
