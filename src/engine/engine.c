/*
 * The worker pools (see engine.h; opening the database is open.c).
 *
 * Each worker thread owns a connection for its whole life, so prepared state
 * and DuckDB's per-connection caches stay warm. The watchdog thread wakes every
 * few milliseconds while the pool has work, looks at what each worker runs and
 * interrupts the connection of a job whose deadline passed: duckdb_interrupt
 * cancels a running query within milliseconds. An idle pool's watchdog sleeps
 * until a job is submitted.
 */
#include "engine/engine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/limits.h"
#include "util/log.h"
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
    int worker_nice;            /* eng_lanes.worker_nice: added to every worker's nice */
    int lane_nice;              /* eng_lanes.lane_nice: added to the long and stream lanes' nice */
    bool idle;                  /* eng_lanes.idle: every worker under SCHED_IDLE */
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
    bool watchdog_asleep;       /* waits on cv_watchdog: the pool has nothing to watch */
    pthread_cond_t cv_watchdog; /* a job was submitted, a worker ended, or stop */
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

/* Nothing queued, nothing running, no retired, overflow or ended worker: no
 * deadline can pass and nobody waits for the watchdog. Under pool->mu. */
static bool watchdog_idle(const struct eng_pool *pool)
{
    return pool->queued == 0 && pool->running == 0 && pool->n_retired == 0 &&
           pool->n_extra == 0 && !pool->graveyard && !pool->watchdog_stop;
}

/* Wakes the watchdog if it sleeps (eng_pool_submit, a worker ending, stop).
 * Under pool->mu. */
static void watchdog_wake(struct eng_pool *pool)
{
    if (pool->watchdog_asleep)
        pthread_cond_signal(&pool->cv_watchdog);
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
    watchdog_wake(pool); /* (it is awake while such workers exist; for clarity) */
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

bool eng_thread_idle(void)
{
    struct sched_param sp = {0};
    return pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0;
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
    /* Every worker yields the CPU to the HTTP loops (worker_nice), the long
     * and stream lanes also to the short lane (lane_nice; engine.h, "CPU
     * priority"); overflow workers take short jobs first, so they keep the
     * short lane's priority. */
    int more = pool->worker_nice;
    if (!w->extra && (w->lane == LANE_LONG || w->lane == LANE_STREAM))
        more += pool->lane_nice;
    if (more > 0 && !eng_thread_nice(more))
        log_warn("engine: cannot lower the %s worker's CPU priority", tname);
    if (pool->idle && !eng_thread_idle())
        log_warn("engine: cannot put the %s worker under SCHED_IDLE", tname);
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
        /* An idle pool's watchdog waits for work instead of ticking: five
         * pools ticking every WATCHDOG_PERIOD_MS were a thousand wake-ups a
         * second with nothing to do (bench/PROFILES.md, "Parquet download (9)"). A
         * job's deadline is still checked within a period of its submit. */
        pthread_mutex_lock(&pool->mu);
        while (watchdog_idle(pool)) {
            pool->watchdog_asleep = true;
            pthread_cond_wait(&pool->cv_watchdog, &pool->mu);
            pool->watchdog_asleep = false;
        }
        pthread_mutex_unlock(&pool->mu);
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
    pthread_cond_init(&pool->cv_watchdog, NULL);
    /* With a long lane, LONG jobs run on its threads (the cap the overflow
     * workers look at); without, on at most long_cap general workers. */
    pool->long_cap = n_long ? n_long : eng_long_lane_threads(threads);
    pool->busy_ms = lanes->busy_ms > 0 ? lanes->busy_ms : BUSY_MS;
    pool->worker_nice = lanes->worker_nice > 0 ? lanes->worker_nice : 0;
    pool->lane_nice = lanes->lane_nice > 0 ? lanes->lane_nice : 0;
    pool->idle = lanes->idle;
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
    watchdog_wake(pool);
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
    watchdog_wake(pool);
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
    pthread_cond_destroy(&pool->cv_watchdog);
    free(pool->workers);
    free(pool);
}

/* ------------------------------------------------------------- sampler */

struct eng_sampler {
    duckdb_connection con;
    duckdb_prepared_statement stmt; /* the sampler thread's own */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool have;
    int period_ms;
    int64_t memory_bytes, temp_bytes;
};

/* Prepared once: parsing, binding and planning the query each second was
 * most of an idle server's CPU. A failed run drops the statement, and the
 * next tick prepares it again. */
static void sample_once(struct eng_sampler *s)
{
    if (!s->stmt &&
        duckdb_prepare(s->con,
                       "SELECT sum(memory_usage_bytes)::BIGINT, "
                       "sum(temporary_storage_bytes)::BIGINT FROM duckdb_memory()",
                       &s->stmt) != DuckDBSuccess) {
        duckdb_destroy_prepare(&s->stmt);
        return;
    }
    duckdb_result res;
    if (duckdb_execute_prepared(s->stmt, &res) != DuckDBSuccess) {
        duckdb_destroy_result(&res);
        duckdb_destroy_prepare(&s->stmt);
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
        duckdb_destroy_prepare(&s->stmt);
        duckdb_disconnect(&s->con);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}
