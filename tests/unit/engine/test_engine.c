/* The engine pool's job classes (engine.h): without lanes, long jobs are
 * capped so a worker stays free for short ones and neither class starves the
 * other; with lanes, short jobs, long jobs and streams each have threads of
 * their own; a long job held
 * back still answers at its deadline. Jobs here block on a gate the test opens, so every check is about
 * which job a worker took, not about timing. */
#include <dirent.h>
#include <duckdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "engine/engine.h"
#include "testlib.h"
#include "testsched.h"
#include "util/timeutil.h"

struct tjob {
    struct eng_job job;         /* first: the pool hands this pointer back */
    atomic_int started;
    atomic_int finished;
    atomic_int saw_timeout;
    int order;                  /* how many jobs started before this one */
    bool gated;                 /* waits for the gate to open */
    long sleep_ms;              /* then takes this long */
};

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static atomic_int start_seq;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void tjob_run(struct eng_job *job, duckdb_connection con)
{
    (void)con;
    struct tjob *t = (struct tjob *)job;
    t->order = atomic_fetch_add(&start_seq, 1);
    atomic_store(&t->started, 1);
    atomic_store(&t->saw_timeout, atomic_load(&job->timed_out) ? 1 : 0);
    if (t->gated && !atomic_load(&job->timed_out)) {
        pthread_mutex_lock(&gate_mu);
        while (!gate_open)
            pthread_cond_wait(&gate_cv, &gate_mu);
        pthread_mutex_unlock(&gate_mu);
    }
    if (t->sleep_ms)
        sleep_ms(t->sleep_ms);
    atomic_store(&t->finished, 1);
}

static void tjob_init(struct tjob *t, enum eng_job_class cls, bool gated)
{
    memset(t, 0, sizeof *t);
    t->job.run = tjob_run;
    t->job.cls = cls;
    t->gated = gated;
}

static void gate_set(bool open)
{
    pthread_mutex_lock(&gate_mu);
    gate_open = open;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

/* Waits up to 5 s for *flag. */
static bool wait_for(atomic_int *flag)
{
    for (int i = 0; i < 1000 && !atomic_load(flag); i++)
        sleep_ms(5);
    return atomic_load(flag) != 0;
}

static duckdb_database db;

/* Tests that hold jobs behind the gate on purpose: a worker held past
 * eng_lanes.busy_ms (250 ms by default) with a job queued behind it starts
 * an overflow worker, which on a slow or loaded machine (ASan, a busy CI)
 * would take the held-back job and break the order under test. These pools
 * start none. The overflow tests use the default. */
enum { NO_OVERFLOW_MS = 600000 };

static struct eng_pool *pool_of(int threads, struct vt_error *err)
{
    struct eng_lanes lanes = {.threads = threads, .busy_ms = NO_OVERFLOW_MS};
    return eng_pool_create_lanes(db, &lanes, "t", err);
}

struct slice_probe {
    bool ok;
    int64_t got_us;
    uint64_t kernel_ns;
};

static void *slice_thread(void *arg)
{
    struct slice_probe *p = arg;
    p->ok = eng_thread_slice(300);
    p->got_us = eng_thread_slice_get();
    p->kernel_ns = tl_thread_slice_ns(0);
    return NULL;
}

/* A thread asks for a short scheduling slice (the HTTP loops do, so a
 * loop answering an inline lookup runs soon after it wakes beside CPU-bound
 * workers): on a kernel that keeps one, the kernel reports it. */
TEST(a_thread_gets_the_scheduling_slice_it_asks_for)
{
    struct slice_probe p = {0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, slice_thread, &p) == 0);
    pthread_join(t, NULL);
    if (tl_kernel_has_slices()) {
        CHECK(p.ok);
        CHECK_EQ_INT(p.got_us, 300);
        CHECK_EQ_INT((long long)p.kernel_ns, 300000);
    } else {
        CHECK(!p.ok);
        CHECK_EQ_INT(p.got_us, 0);
    }
    /* This thread asked for nothing. */
    CHECK_EQ_INT(eng_thread_slice_get(), 0);
}

/* The nice value of thread `tid` of this process, as the kernel reports it
 * (/proc/self/task/<tid>/stat, field 19); -100 when unreadable. */
static int task_nice(long tid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -100;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    if (!p)
        return -100;
    /* After ")": state is field 3; nice is field 19. */
    int field = 2;
    for (p++; *p && field < 19; p++)
        if (*p == ' ')
            field++;
    return field == 19 ? (int)strtol(p, NULL, 10) : -100;
}

static int self_nice(void)
{
    return task_nice((long)syscall(SYS_gettid));
}

struct nice_job {
    struct eng_job job;
    atomic_int nice;            /* the worker's nice while it ran the job */
    atomic_int finished;
};

static void nice_job_run(struct eng_job *job, duckdb_connection con)
{
    (void)con;
    struct nice_job *t = (struct nice_job *)job;
    atomic_store(&t->nice, self_nice());
    atomic_store(&t->finished, 1);
}

/* Runs one job of class `cls` on `pool` and returns the nice value of the
 * worker that ran it (-100 when it did not run). */
static int nice_of_lane(struct eng_pool *pool, enum eng_job_class cls)
{
    struct nice_job t;
    memset(&t, 0, sizeof t);
    t.job.run = nice_job_run;
    t.job.cls = cls;
    atomic_store(&t.nice, -100);
    if (!eng_pool_submit(pool, &t.job) || !wait_for(&t.finished))
        return -100;
    return atomic_load(&t.nice);
}

/* server.lane_nice: the long and stream lanes run at a lower CPU priority
 * (a higher nice) than the short lane, which keeps the process's own; a
 * pool without it runs every lane at the process's. */
TEST(long_and_stream_lanes_run_at_their_lower_priority)
{
    int base = self_nice();
    CHECK(base >= -20 && base <= 19);
    for (int lane_nice = 5; lane_nice >= 0; lane_nice -= 5) {
        int want = base + lane_nice > 19 ? 19 : base + lane_nice;
        struct vt_error err = {0};
        struct eng_lanes lanes = {.threads = 1, .long_threads = 1, .stream_threads = 1,
                                  .busy_ms = NO_OVERFLOW_MS, .lane_nice = lane_nice};
        struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
        CHECK(pool != NULL);
        if (!pool)
            return;
        CHECK_EQ_INT(nice_of_lane(pool, ENG_JOB_SHORT), base);
        CHECK_EQ_INT(nice_of_lane(pool, ENG_JOB_LONG), want);
        CHECK_EQ_INT(nice_of_lane(pool, ENG_JOB_STREAM), want);
        eng_pool_destroy(pool);
    }
    /* The calling thread is left as it was. */
    CHECK_EQ_INT(self_nice(), base);
}

/* server.worker_nice: every lane runs below the HTTP loops (which keep the
 * process's nice), and lane_nice adds to it for the long and stream lanes. */
TEST(worker_nice_lowers_every_lane_and_lane_nice_adds_to_it)
{
    int base = self_nice();
    CHECK(base >= -20 && base <= 19);
    int want_short = base + 3 > 19 ? 19 : base + 3;
    int want_long = base + 5 > 19 ? 19 : base + 5;
    struct vt_error err = {0};
    struct eng_lanes lanes = {.threads = 1, .long_threads = 1, .stream_threads = 1,
                              .busy_ms = NO_OVERFLOW_MS, .worker_nice = 3, .lane_nice = 2};
    struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    CHECK_EQ_INT(nice_of_lane(pool, ENG_JOB_SHORT), want_short);
    CHECK_EQ_INT(nice_of_lane(pool, ENG_JOB_LONG), want_long);
    CHECK_EQ_INT(nice_of_lane(pool, ENG_JOB_STREAM), want_long);
    eng_pool_destroy(pool);
    CHECK_EQ_INT(self_nice(), base);
}

/* The ids of this process's threads whose nice is `nice` and that are not
 * in `skip` (n_skip ids); returns how many were found (at most `cap`). */
static int threads_at_nice(int nice, const long *skip, int n_skip, long *out, int cap)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        long tid = strtol(e->d_name, NULL, 10);
        if (tid <= 0)
            continue;
        bool old = false;
        for (int i = 0; i < n_skip; i++)
            old = old || skip[i] == tid;
        if (!old && task_nice(tid) == nice)
            out[n++] = tid;
    }
    closedir(d);
    return n;
}

/* DuckDB's `threads` setting on `con`'s database (0 when unreadable). */
static int64_t threads_setting(duckdb_connection con)
{
    duckdb_result res;
    int64_t threads = 0;
    if (duckdb_query(con, "SELECT current_setting('threads')::BIGINT", &res) != DuckDBSuccess)
        return 0;
    duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
    if (chunk) {
        duckdb_vector v = duckdb_data_chunk_get_vector(chunk, 0);
        if (duckdb_data_chunk_get_size(chunk) == 1)
            threads = ((const int64_t *)duckdb_vector_get_data(v))[0];
        duckdb_destroy_data_chunk(&chunk);
    }
    duckdb_destroy_result(&res);
    return threads;
}

/* server.worker_nice + server.task_nice: DuckDB's task threads (threads - 1
 * of them) start again at the lower priority when the database opens; the
 * thread that opened it keeps its own. */
TEST(duckdb_task_threads_run_at_task_nice)
{
    int base = self_nice();
    int want = base + 4 > 19 ? 19 : base + 4;
    long before[512];
    int n_before = threads_at_nice(want, NULL, 0, before, 512);
    struct vt_config cfg;
    config_init_defaults(&cfg);
    cfg.server.worker_nice = 1; /* worker_nice and task_nice add up */
    cfg.server.task_nice = 3;
    struct vt_error err = {0};
    duckdb_database tdb = NULL;
    CHECK(eng_open(&cfg, &tdb, &err) == VT_ERR_OK);
    if (!tdb) {
        config_free(&cfg);
        return;
    }
    duckdb_connection con;
    CHECK(duckdb_connect(tdb, &con) == DuckDBSuccess);
    int64_t threads = threads_setting(con);
    /* The setting is back as DuckDB chose it (as in a database opened
     * without vitrine's settings), not 1. */
    duckdb_connection plain;
    CHECK(duckdb_connect(db, &plain) == DuckDBSuccess);
    CHECK_EQ_INT(threads, threads_setting(plain));
    duckdb_disconnect(&plain);
    long found[512];
    int n = threads_at_nice(want, before, n_before, found, 512);
    /* Want may equal base (a process already at nice 19): then nothing to tell. */
    if (want != base)
        CHECK(n >= threads - 1);
    /* ... and by name (top -H, the bench's CPU per thread). */
    int named = 0;
    for (int i = 0; i < n; i++) {
        char path[64], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%ld/comm", found[i]);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(name, sizeof name, f))
                name[strcspn(name, "\n")] = '\0';
            fclose(f);
        }
        named += strcmp(name, "duckdb-task") == 0;
    }
    if (want != base)
        CHECK(named >= threads - 1);
    CHECK_EQ_INT(self_nice(), base);
    duckdb_disconnect(&con);
    eng_close(&tdb);
    config_free(&cfg);
}

/* The id of this process's thread named `name` that is not in skip[0..n),
 * or 0. */
static long thread_named(const char *name, const long *skip, int n_skip)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    long hit = 0;
    struct dirent *e;
    while (!hit && (e = readdir(d))) {
        long tid = strtol(e->d_name, NULL, 10);
        bool old = tid <= 0;
        for (int i = 0; i < n_skip; i++)
            old = old || skip[i] == tid;
        if (old)
            continue;
        char path[64], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(comm, sizeof comm, f))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(f);
        }
        if (strcmp(comm, name) == 0)
            hit = tid;
    }
    closedir(d);
    return hit;
}

/* How many times thread `tid` went to sleep (voluntary context switches). */
static long sleeps_of(long tid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
    FILE *f = fopen(path, "r");
    long n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* Within 5 s, thread `tid` stays asleep for a whole 100 ms window. */
static bool stays_asleep(long tid)
{
    for (int i = 0; i < 50; i++) {
        long a = sleeps_of(tid);
        sleep_ms(100);
        if (a >= 0 && sleeps_of(tid) == a)
            return true;
    }
    return false;
}

/* An idle pool's watchdog sleeps until a job comes (it ticked every 5 ms
 * with nothing to watch: with five pools, a thousand wake-ups a second),
 * still interrupts a job at its deadline, and sleeps again once the pool is
 * idle. Polls for each state: a loaded machine only takes longer. */
TEST(an_idle_pools_watchdog_sleeps_until_a_job_comes)
{
    long others[64];
    int n_others = 0;
    for (long t; n_others < 64 && (t = thread_named("watchdog", others, n_others));)
        others[n_others++] = t;
    struct vt_error err = {0};
    struct eng_pool *pool = pool_of(1, &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    long dog = 0;
    for (int i = 0; i < 1000 && !(dog = thread_named("watchdog", others, n_others)); i++)
        sleep_ms(5);
    CHECK(dog > 0);
    CHECK(stays_asleep(dog));
    /* A job past its deadline: the watchdog wakes and marks it. */
    gate_set(false);
    struct tjob t;
    tjob_init(&t, ENG_JOB_SHORT, true);
    atomic_store(&t.job.deadline_ms, time_mono_ms() + 20);
    CHECK(eng_pool_submit(pool, &t.job));
    CHECK(wait_for(&t.started));
    for (int i = 0; i < 1000 && !atomic_load(&t.job.timed_out); i++)
        sleep_ms(5);
    CHECK(atomic_load(&t.job.timed_out));
    gate_set(true);
    CHECK(wait_for(&t.finished));
    CHECK(stays_asleep(dog));
    eng_pool_destroy(pool);
    gate_set(false);
}

TEST(long_jobs_leave_a_worker_for_short_ones)
{
    struct vt_error err = {0};
    struct eng_pool *pool = pool_of(2, &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    gate_set(false);
    /* Two workers: one long job at a time. */
    struct tjob l1, l2, s1;
    tjob_init(&l1, ENG_JOB_LONG, true);
    tjob_init(&l2, ENG_JOB_LONG, true);
    tjob_init(&s1, ENG_JOB_SHORT, true);
    CHECK(eng_pool_submit(pool, &l1.job));
    CHECK(wait_for(&l1.started));
    CHECK(eng_pool_submit(pool, &l2.job));
    CHECK(eng_pool_submit(pool, &s1.job));
    /* The short job, submitted after the second long one, runs on the free
     * worker; the second long job waits for the first. */
    CHECK(wait_for(&s1.started));
    sleep_ms(50);
    CHECK_EQ_INT(atomic_load(&l2.started), 0);
    gate_set(true);
    CHECK(wait_for(&l2.finished));
    CHECK(wait_for(&s1.finished));
    eng_pool_destroy(pool);
}

TEST(long_jobs_do_not_starve_under_short_ones)
{
    struct vt_error err = {0};
    struct eng_pool *pool = pool_of(2, &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    gate_set(false);
    /* Both workers busy with short jobs, more short jobs queued before a long
     * one: the next free worker takes the long job first (none runs). */
    enum { NS = 6 };
    struct tjob s[NS], l;
    for (int i = 0; i < NS; i++) {
        tjob_init(&s[i], ENG_JOB_SHORT, true);
        CHECK(eng_pool_submit(pool, &s[i].job));
    }
    CHECK(wait_for(&s[0].started));
    CHECK(wait_for(&s[1].started));
    tjob_init(&l, ENG_JOB_LONG, false);
    CHECK(eng_pool_submit(pool, &l.job));
    gate_set(true);
    CHECK(wait_for(&l.finished));
    for (int i = 0; i < NS; i++)
        CHECK(wait_for(&s[i].finished));
    /* Two workers were freed by the first two short jobs: the first of them
     * took the long job, ahead of the four queued short ones, which a strict
     * short-first order would have run first. */
    CHECK(l.order - s[0].order <= 3);
    int later = 0;
    for (int i = 2; i < NS; i++)
        later += s[i].order > l.order;
    CHECK(later >= NS - 3);
    for (int i = 0; i < NS; i++)
        CHECK(wait_for(&s[i].finished));
    eng_pool_destroy(pool);
}

TEST(streams_run_on_their_own_lane)
{
    struct vt_error err = {0};
    struct eng_lanes lanes = {.threads = 1, .stream_threads = 1, .busy_ms = NO_OVERFLOW_MS};
    struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    CHECK_EQ_INT(eng_pool_threads(pool), 2);
    gate_set(false);
    struct tjob s1, st;
    tjob_init(&s1, ENG_JOB_SHORT, true);
    tjob_init(&st, ENG_JOB_STREAM, true);
    CHECK(eng_pool_submit(pool, &s1.job));
    CHECK(wait_for(&s1.started));
    /* The only query worker is busy: the stream starts anyway. */
    CHECK(eng_pool_submit(pool, &st.job));
    CHECK(wait_for(&st.started));
    gate_set(true);
    CHECK(wait_for(&s1.finished));
    CHECK(wait_for(&st.finished));
    eng_pool_destroy(pool);

    /* Without a stream lane a stream is a long job of the query workers. */
    pool = pool_of(1, &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    tjob_init(&st, ENG_JOB_STREAM, false);
    CHECK(eng_pool_submit(pool, &st.job));
    CHECK(wait_for(&st.finished));
    eng_pool_destroy(pool);
}

/* With one long job running (holding the pool's only slot for long work),
 * a second long job queued with a near deadline is taken at that deadline by
 * an idle worker, which only reports the timeout. Destroys the pool. */
static void check_long_job_answers_at_its_deadline(struct eng_pool *pool)
{
    gate_set(false);
    struct tjob l1, l2;
    tjob_init(&l1, ENG_JOB_LONG, true);
    tjob_init(&l2, ENG_JOB_LONG, true);
    CHECK(eng_pool_submit(pool, &l1.job));
    CHECK(wait_for(&l1.started));
    atomic_store(&l2.job.deadline_ms, time_mono_ms() + 100);
    CHECK(eng_pool_submit(pool, &l2.job));
    CHECK(wait_for(&l2.finished));
    CHECK_EQ_INT(atomic_load(&l2.saw_timeout), 1);
    CHECK_EQ_INT(atomic_load(&l1.finished), 0);
    gate_set(true);
    CHECK(wait_for(&l1.finished));
    eng_pool_destroy(pool);
}

TEST(a_long_job_past_its_deadline_is_not_held_by_the_cap)
{
    struct vt_error err = {0};
    struct eng_pool *pool = pool_of(2, &err);
    CHECK(pool != NULL);
    if (pool)
        check_long_job_answers_at_its_deadline(pool);
}

/* The query pool's lanes: short jobs have workers of their own, however many
 * long jobs and streams hold theirs or queue. */
TEST(lanes_keep_short_jobs_apart)
{
    struct vt_error err = {0};
    struct eng_lanes lanes = {.threads = 2, .long_threads = 1, .stream_threads = 1,
                              .busy_ms = NO_OVERFLOW_MS};
    struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    CHECK_EQ_INT(eng_pool_threads(pool), 4);
    gate_set(false);
    enum { NL = 4 };
    struct tjob l[NL], st, s1, s2;
    for (int i = 0; i < NL; i++) {
        tjob_init(&l[i], ENG_JOB_LONG, true);
        CHECK(eng_pool_submit(pool, &l[i].job));
    }
    tjob_init(&st, ENG_JOB_STREAM, true);
    CHECK(eng_pool_submit(pool, &st.job));
    CHECK(wait_for(&l[0].started));
    CHECK(wait_for(&st.started));
    /* Both general workers take short jobs, though long ones were queued
     * first; only one long job runs (the long lane has one thread). */
    tjob_init(&s1, ENG_JOB_SHORT, true);
    tjob_init(&s2, ENG_JOB_SHORT, true);
    CHECK(eng_pool_submit(pool, &s1.job));
    CHECK(eng_pool_submit(pool, &s2.job));
    CHECK(wait_for(&s1.started));
    CHECK(wait_for(&s2.started));
    sleep_ms(50);
    for (int i = 1; i < NL; i++)
        CHECK_EQ_INT(atomic_load(&l[i].started), 0);
    gate_set(true);
    for (int i = 0; i < NL; i++)
        CHECK(wait_for(&l[i].finished));
    CHECK(wait_for(&st.finished));
    CHECK(wait_for(&s1.finished));
    CHECK(wait_for(&s2.finished));
    eng_pool_destroy(pool);
}

/* Overflow workers (engine.c: a job that waited while every worker it may
 * use is held by a job running 250 ms or more) serve short jobs first, and
 * none starts for a long job while short ones wait: before, the first
 * overflow worker took the queued long job, and on a loaded machine (every
 * group by past 250 ms) up to four of them ran group bys beside the long
 * lane while pages and counts queued. */
TEST(overflow_workers_serve_short_jobs_before_long_ones)
{
    struct vt_error err = {0};
    struct eng_lanes lanes = {.threads = 1, .long_threads = 1};
    struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    gate_set(false);
    enum { NS = 6 };
    struct tjob l0, l1, s0, s[NS];
    tjob_init(&l0, ENG_JOB_LONG, true);
    tjob_init(&s0, ENG_JOB_SHORT, true);
    CHECK(eng_pool_submit(pool, &l0.job));
    CHECK(eng_pool_submit(pool, &s0.job));
    CHECK(wait_for(&l0.started));
    CHECK(wait_for(&s0.started));
    /* Both lanes held; a long job queued first, then short ones. */
    tjob_init(&l1, ENG_JOB_LONG, true);
    CHECK(eng_pool_submit(pool, &l1.job));
    for (int i = 0; i < NS; i++) {
        tjob_init(&s[i], ENG_JOB_SHORT, true);
        CHECK(eng_pool_submit(pool, &s[i].job));
    }
    /* Four overflow workers (max(n, 4)) start, one after the other, and
     * each takes a short job, in their fair order. */
    for (int i = 0; i < 4; i++)
        CHECK(wait_for(&s[i].started));
    CHECK_EQ_INT(atomic_load(&l1.started), 0);
    gate_set(true);
    CHECK(wait_for(&l1.finished));
    for (int i = 0; i < NS; i++)
        CHECK(wait_for(&s[i].finished));
    CHECK(wait_for(&l0.finished));
    CHECK(wait_for(&s0.finished));
    eng_pool_destroy(pool);
}

/* With no short job waiting, a long job held behind a long lane busy for
 * 250 ms or more still gets an overflow worker (a /sql SELECT 1 is not held
 * by a statement DuckDB does not interrupt). */
TEST(a_long_job_gets_an_overflow_worker_when_no_short_job_waits)
{
    struct vt_error err = {0};
    struct eng_lanes lanes = {.threads = 1, .long_threads = 1};
    struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    gate_set(false);
    struct tjob l0, l1;
    tjob_init(&l0, ENG_JOB_LONG, true);
    CHECK(eng_pool_submit(pool, &l0.job));
    CHECK(wait_for(&l0.started));
    tjob_init(&l1, ENG_JOB_LONG, false);
    CHECK(eng_pool_submit(pool, &l1.job));
    CHECK(wait_for(&l1.finished)); /* while l0 still holds the long lane */
    CHECK_EQ_INT(atomic_load(&l0.finished), 0);
    gate_set(true);
    CHECK(wait_for(&l0.finished));
    eng_pool_destroy(pool);
}

/* A long job queued behind a busy long lane still answers at its deadline:
 * an idle general worker takes it (it only reports the timeout). */
TEST(lanes_answer_a_long_job_at_its_deadline)
{
    struct vt_error err = {0};
    struct eng_lanes lanes = {.threads = 1, .long_threads = 1};
    struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
    CHECK(pool != NULL);
    if (pool)
        check_long_job_answers_at_its_deadline(pool);
}

/* Fair queuing by flow: a flow of cheap jobs queued behind a flow of dear
 * ones gets its turns between theirs, not after all of them. */
TEST(flows_share_the_workers_time)
{
    struct vt_error err = {0};
    struct eng_pool *pool = pool_of(1, &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    enum { DEAR = 1, CHEAP = 2, N = 3 };
    /* The pool learns what each flow costs: 60 ms and nearly nothing. */
    struct tjob train[5];
    for (int i = 0; i < 5; i++) {
        tjob_init(&train[i], ENG_JOB_SHORT, false);
        train[i].job.flow = i == 0 ? DEAR : CHEAP;
        train[i].sleep_ms = i == 0 ? 60 : 0;
        CHECK(eng_pool_submit(pool, &train[i].job));
        CHECK(wait_for(&train[i].finished));
    }
    gate_set(false);
    struct tjob hold, dear[N], cheap[N];
    tjob_init(&hold, ENG_JOB_SHORT, true);
    CHECK(eng_pool_submit(pool, &hold.job));
    CHECK(wait_for(&hold.started));
    for (int i = 0; i < N; i++) {
        tjob_init(&dear[i], ENG_JOB_SHORT, false);
        dear[i].job.flow = DEAR;
        CHECK(eng_pool_submit(pool, &dear[i].job));
    }
    for (int i = 0; i < N; i++) {
        tjob_init(&cheap[i], ENG_JOB_SHORT, false);
        cheap[i].job.flow = CHEAP;
        CHECK(eng_pool_submit(pool, &cheap[i].job));
    }
    gate_set(true);
    for (int i = 0; i < N; i++) {
        CHECK(wait_for(&dear[i].finished));
        CHECK(wait_for(&cheap[i].finished));
    }
    /* Arrival order would run every dear job first. The first dear job
     * started its flow's share; every cheap one fits in that share, before
     * the second dear job. Within a flow, arrival order. */
    CHECK(cheap[N - 1].order < dear[1].order);
    for (int i = 1; i < N; i++) {
        CHECK(dear[i - 1].order < dear[i].order);
        CHECK(cheap[i - 1].order < cheap[i].order);
    }
    eng_pool_destroy(pool);
}

/* ---------------------------------------- queue limits and accounting */

/* server.max_queued_jobs bounds each class's queue: with one stream
 * running and one queued (the stream queue full), a page still queues
 * behind a busy short worker, and a group by behind a busy long lane.
 * Before, the limit counted every class together: the queued stream made
 * the page's submit fail (503) while the short lane had room. */
TEST(each_class_has_its_own_queue_limit)
{
    struct vt_error err = {0};
    struct eng_lanes lanes = {.threads = 1, .long_threads = 1, .stream_threads = 1,
                              .max_queued = 1, .busy_ms = NO_OVERFLOW_MS};
    struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    gate_set(false);
    struct tjob st[3], s[3], l[3];
    for (int i = 0; i < 3; i++) {
        tjob_init(&st[i], ENG_JOB_STREAM, true);
        tjob_init(&s[i], ENG_JOB_SHORT, true);
        tjob_init(&l[i], ENG_JOB_LONG, true);
    }
    CHECK(eng_pool_submit(pool, &st[0].job));
    CHECK(wait_for(&st[0].started));
    CHECK(eng_pool_submit(pool, &st[1].job));
    CHECK(!eng_pool_submit(pool, &st[2].job)); /* the stream queue is full */
    CHECK(eng_pool_submit(pool, &s[0].job));
    CHECK(wait_for(&s[0].started));
    CHECK(eng_pool_submit(pool, &s[1].job)); /* queues beside the queued stream */
    CHECK(!eng_pool_submit(pool, &s[2].job));
    CHECK(eng_pool_submit(pool, &l[0].job));
    CHECK(wait_for(&l[0].started));
    CHECK(eng_pool_submit(pool, &l[1].job));
    CHECK(!eng_pool_submit(pool, &l[2].job));
    struct eng_pool_stats stats;
    eng_pool_stats_get(pool, &stats);
    CHECK_EQ_INT(stats.max_queued, 1);
    CHECK_EQ_INT(stats.queued, 3);
    for (int c = 0; c < ENG_JOB_CLASSES; c++) {
        CHECK_EQ_INT(stats.cls[c].queued, 1);
        CHECK_EQ_INT(stats.cls[c].running, 1);
    }
    gate_set(true);
    for (int i = 0; i < 2; i++) {
        CHECK(wait_for(&st[i].finished));
        CHECK(wait_for(&s[i].finished));
        CHECK(wait_for(&l[i].finished));
    }
    eng_pool_destroy(pool);
}

/* The pool's numbers, once no job of it runs any more (a job's run() has
 * returned before the pool counts it as ended: polled, up to 5 s). */
static void stats_when_idle(struct eng_pool *pool, struct eng_pool_stats *out)
{
    for (int i = 0; i < 1000; i++) {
        eng_pool_stats_get(pool, out);
        if (out->running == 0 && out->queued == 0)
            return;
        sleep_ms(5);
    }
}

static uint64_t bucket_sum(const struct eng_job_hist *h)
{
    uint64_t n = 0;
    for (int b = 0; b <= ENG_JOB_BUCKETS; b++)
        n += h->bucket[b];
    return n;
}

/* Per class, the pool counts what waits and runs now, and how long each job
 * waited for a worker and ran (the metrics' vitrine_engine_job_*_seconds).
 * The gate stays shut at least 30 ms, so the job held behind it waited at
 * least that long and the one holding the worker ran at least that long:
 * lower bounds only, whatever the machine's speed. */
TEST(the_pool_accounts_wait_and_run_per_class)
{
    for (int b = 1; b < ENG_JOB_BUCKETS; b++)
        CHECK(eng_job_bucket_us[b - 1] < eng_job_bucket_us[b]);
    CHECK_EQ_STR(eng_job_class_name(ENG_JOB_SHORT), "short");
    CHECK_EQ_STR(eng_job_class_name(ENG_JOB_LONG), "long");
    CHECK_EQ_STR(eng_job_class_name(ENG_JOB_STREAM), "stream");
    struct vt_error err = {0};
    struct eng_lanes lanes = {.threads = 1, .long_threads = 1, .stream_threads = 1,
                              .busy_ms = NO_OVERFLOW_MS};
    struct eng_pool *pool = eng_pool_create_lanes(db, &lanes, "t", &err);
    CHECK(pool != NULL);
    if (!pool)
        return;
    struct eng_pool_stats st;
    eng_pool_stats_get(pool, &st);
    for (int c = 0; c < ENG_JOB_CLASSES; c++) {
        CHECK_EQ_INT(st.cls[c].queued + st.cls[c].running, 0);
        CHECK_EQ_INT(st.cls[c].wait.count + st.cls[c].run.count, 0);
    }
    gate_set(false);
    struct tjob s1, s2, l1;
    tjob_init(&s1, ENG_JOB_SHORT, true);
    tjob_init(&s2, ENG_JOB_SHORT, true);
    tjob_init(&l1, ENG_JOB_LONG, true);
    CHECK(eng_pool_submit(pool, &s1.job));
    CHECK(wait_for(&s1.started));
    CHECK(eng_pool_submit(pool, &s2.job));
    CHECK(eng_pool_submit(pool, &l1.job));
    CHECK(wait_for(&l1.started));
    /* From here: s1 and l1 hold their workers and s2 waits (it was queued
     * before l1 started), so each of the three lower bounds below holds
     * however late on a loaded machine l1 started. */
    int64_t t0 = time_mono_us();
    eng_pool_stats_get(pool, &st);
    CHECK_EQ_INT(st.cls[ENG_JOB_SHORT].running, 1);
    CHECK_EQ_INT(st.cls[ENG_JOB_SHORT].queued, 1);
    CHECK_EQ_INT(st.cls[ENG_JOB_LONG].running, 1);
    CHECK_EQ_INT(st.cls[ENG_JOB_LONG].queued, 0);
    CHECK_EQ_INT(st.cls[ENG_JOB_STREAM].running + st.cls[ENG_JOB_STREAM].queued, 0);
    CHECK_EQ_INT(st.cls[ENG_JOB_SHORT].wait.count, 1); /* s1 was taken; s2 waits */
    CHECK_EQ_INT(st.cls[ENG_JOB_SHORT].run.count, 0);
    while (time_mono_us() - t0 < 30000)
        sleep_ms(5);
    gate_set(true);
    CHECK(wait_for(&s2.finished));
    CHECK(wait_for(&l1.finished));
    stats_when_idle(pool, &st);
    const struct eng_class_stats *sh = &st.cls[ENG_JOB_SHORT], *lo = &st.cls[ENG_JOB_LONG],
                                 *sm = &st.cls[ENG_JOB_STREAM];
    CHECK_EQ_INT(sh->running + sh->queued + lo->running + lo->queued, 0);
    CHECK_EQ_INT(sh->wait.count, 2);
    CHECK_EQ_INT(sh->run.count, 2);
    CHECK_EQ_INT(lo->wait.count, 1);
    CHECK_EQ_INT(lo->run.count, 1);
    CHECK_EQ_INT(sm->wait.count + sm->run.count, 0);
    CHECK_EQ_INT(bucket_sum(&sh->wait), 2);
    CHECK_EQ_INT(bucket_sum(&sh->run), 2);
    CHECK_EQ_INT(bucket_sum(&lo->run), 1);
    /* s2 waited for s1, which the gate held 30 ms or more. */
    CHECK(sh->wait.sum_us >= 25000);
    CHECK(sh->run.sum_us >= 25000);
    CHECK(lo->run.sum_us >= 25000);
    /* None of them in a bucket below 25 ms: s2's wait, s1's run. */
    uint64_t short_runs_below = 0;
    for (int b = 0; b < ENG_JOB_BUCKETS && eng_job_bucket_us[b] < 25000; b++)
        short_runs_below += sh->run.bucket[b];
    CHECK(short_runs_below <= 1); /* s2 ran after the gate opened */
    eng_pool_destroy(pool);
}

/* ------------------------------------------- DuckDB's excerpt of the SQL */

/* DuckDB's own message for preparing `sql` (a failure), copied into out. */
static const char *prepare_error(const char *sql, char *out, size_t cap)
{
    duckdb_connection con;
    out[0] = '\0';
    if (duckdb_connect(db, &con) != DuckDBSuccess)
        return out;
    duckdb_prepared_statement ps = NULL;
    if (duckdb_prepare(con, sql, &ps) != DuckDBSuccess)
        snprintf(out, cap, "%s", duckdb_prepare_error(ps));
    duckdb_destroy_prepare(&ps);
    duckdb_disconnect(&con);
    return out;
}

/* The column of the caret under "LINE n: ..." equals the column of `at` in
 * that line. */
static bool caret_under(const char *msg, const char *at)
{
    const char *line = strstr(msg, "\nLINE ");
    if (!line)
        return false;
    line++;
    const char *nl = strchr(line, '\n');
    const char *hit = strstr(line, at);
    if (!nl || !hit || hit > nl)
        return false;
    const char *caret = strchr(nl + 1, '^');
    return caret && caret - (nl + 1) == hit - line;
}

static void excerpt_of_the_clients_own_line_is_kept(void)
{
    char msg[1024], out[1024];
    const char *own = "SELECT 1 AS a,\n  nope AS b";
    prepare_error("SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (\nSELECT 1 AS a,\n  nope AS b\n)", msg,
                  sizeof msg);
    CHECK_CONTAINS(msg, "LINE 3:");
    eng_error_excerpt(msg, own, 2, out, sizeof out);
    CHECK_CONTAINS(out, "Referenced column \"nope\"");
    CHECK_CONTAINS(out, "\nLINE 2:   nope AS b\n");
    CHECK(caret_under(out, "nope"));
    CHECK(!strstr(out, "COLUMNS"));
    /* as written: unchanged */
    prepare_error("SELECT 1 AS a,\n  nope AS b", msg, sizeof msg);
    CHECK_EQ_STR(eng_error_excerpt(msg, own, 1, out, sizeof out), msg);
}

static void excerpt_renumbered_keeps_its_caret(void)
{
    char msg[1024], out[1024];
    /* nine lines of ours, then the client's: LINE 10 becomes LINE 1, and the
     * caret moves one column left with the shorter number */
    prepare_error("-- 1\n-- 2\n-- 3\n-- 4\n-- 5\n-- 6\n-- 7\n-- 8\n-- 9\nSELECT 1, nope", msg,
                  sizeof msg);
    CHECK_CONTAINS(msg, "LINE 10: ");
    eng_error_excerpt(msg, "SELECT 1, nope", 10, out, sizeof out);
    CHECK_CONTAINS(out, "\nLINE 1: SELECT 1, nope\n");
    CHECK(caret_under(out, "nope"));
    /* a long line is cut by DuckDB ("...") and still recognised */
    char own[400];
    snprintf(own, sizeof own, "SELECT '%0200d' AS pad, nope, '%0100d' AS tail", 0, 0);
    prepare_error(own, msg, sizeof msg);
    CHECK_CONTAINS(msg, "...");
    eng_error_excerpt(msg, own, 1, out, sizeof out);
    CHECK_EQ_STR(out, msg);
}

static void generated_sql_is_never_quoted(void)
{
    char msg[1024], out[1024];
    /* the failing line is ours, not the client's */
    prepare_error("SELECT nope FROM (\nSELECT 1 AS a\n) AS \"q\"", msg, sizeof msg);
    CHECK_CONTAINS(msg, "LINE 1:");
    eng_error_excerpt(msg, "SELECT 1 AS a", 2, out, sizeof out);
    CHECK_CONTAINS(out, "Referenced column \"nope\"");
    CHECK(!strstr(out, "LINE") && !strstr(out, "FROM (") && !strchr(out, '^'));
    /* the line number is the client's, the text is not (a dialect's rewriting) */
    prepare_error("SELECT CAST(nope AS INTEGER) AS x", msg, sizeof msg);
    eng_error_excerpt(msg, "SELECT nope::int4 AS x", 1, out, sizeof out);
    CHECK(!strstr(out, "LINE") && !strstr(out, "CAST"));
    /* nothing is the client's */
    eng_error_excerpt(msg, NULL, 1, out, sizeof out);
    CHECK(!strstr(out, "LINE"));
    /* past the client's last line (a comment we appended) */
    prepare_error("SELECT 1 AS a\n-- g1\n, nope", msg, sizeof msg);
    eng_error_excerpt(msg, "SELECT 1 AS a", 1, out, sizeof out);
    CHECK(!strstr(out, "LINE") && !strstr(out, "g1"));
    /* lines end as DuckDB ends them: "\r\n" is one break, "\n\r" two */
    static const char *const breaks[] = {"SELECT 1 AS a,\r\n nope", "SELECT 1 AS a,\r nope",
                                         "SELECT 1 AS a,\n\r nope", "SELECT 1 AS a,\r\r\n nope"};
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        prepare_error(breaks[i], msg, sizeof msg);
        CHECK_CONTAINS(msg, "\nLINE ");
        eng_error_excerpt(msg, breaks[i], 1, out, sizeof out);
        CHECK_EQ_STR(out, msg);
    }
    /* no excerpt: as it is */
    CHECK_EQ_STR(eng_error_excerpt("Out of Range Error: overflow", "SELECT 1", 1, out,
                                   sizeof out), "Out of Range Error: overflow");
}

int main(void)
{
    if (duckdb_open(NULL, &db) != DuckDBSuccess) {
        fprintf(stderr, "cannot open DuckDB\n");
        return 1;
    }
    static const struct tl_case cases[] = {
        TEST_CASE(an_idle_pools_watchdog_sleeps_until_a_job_comes),
        TEST_CASE(long_jobs_leave_a_worker_for_short_ones),
        TEST_CASE(long_jobs_do_not_starve_under_short_ones),
        TEST_CASE(streams_run_on_their_own_lane),
        TEST_CASE(a_long_job_past_its_deadline_is_not_held_by_the_cap),
        TEST_CASE(lanes_keep_short_jobs_apart),
        TEST_CASE(lanes_answer_a_long_job_at_its_deadline),
        TEST_CASE(flows_share_the_workers_time),
        TEST_CASE(each_class_has_its_own_queue_limit),
        TEST_CASE(the_pool_accounts_wait_and_run_per_class),
        TEST_CASE(overflow_workers_serve_short_jobs_before_long_ones),
        TEST_CASE(a_long_job_gets_an_overflow_worker_when_no_short_job_waits),
        TEST_CASE(a_thread_gets_the_scheduling_slice_it_asks_for),
        TEST_CASE(long_and_stream_lanes_run_at_their_lower_priority),
        TEST_CASE(worker_nice_lowers_every_lane_and_lane_nice_adds_to_it),
        TEST_CASE(duckdb_task_threads_run_at_task_nice),
        TEST_CASE(excerpt_of_the_clients_own_line_is_kept),
        TEST_CASE(excerpt_renumbered_keeps_its_caret),
        TEST_CASE(generated_sql_is_never_quoted),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    duckdb_close(&db);
    return rc;
}
