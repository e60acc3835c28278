/*
 * Opening the process database (engine.h): DuckDB's settings from the
 * configuration (threads, memory and temp limits sized to the machine), the
 * allocation budget, DuckDB's task threads started from a thread of ours
 * (server.worker_nice + task_nice), the SQL functions installed now or on a
 * thread of their own (eng_open_deferred), confinement to the allowed
 * directories, connections, and DuckDB's error text made fit for a client.
 *
 * The worker pools that run statements on these connections are engine.c.
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
#include <sys/statvfs.h>
#include <unistd.h>

#include "query/query.h"
#include "util/file.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

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

/* DuckDB's task threads (server.worker_nice + task_nice): they run the
 * parallel part of every statement, whichever lane it came from (below the
 * HTTP loops, like the workers), and a new thread starts
 * with its creator's nice and name. So a thread of ours, named and at the
 * lower priority, sets `threads` to 1 (DuckDB ends its task threads) and
 * back (DuckDB starts them again, from that thread). The statements' own
 * workers keep their lane's priority. */
struct relaunch {
    duckdb_connection con;
    int nice;
    bool idle;                  /* server.worker_idle */
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
    r->niced = eng_thread_nice(r->nice) && (!r->idle || eng_thread_idle());
    char sql[64];
    r->rc = eng_exec(r->con, "SET GLOBAL threads = 1", VT_ERR_INTERNAL, &r->err);
    snprintf(sql, sizeof sql, "SET GLOBAL threads = %lld", (long long)r->threads);
    if (r->rc == VT_ERR_OK)
        r->rc = eng_exec(r->con, sql, VT_ERR_INTERNAL, &r->err);
    return NULL;
}

static enum vt_err relaunch_task_threads(duckdb_connection con, int nice, bool idle,
                                         struct vt_error *err)
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
    struct relaunch r = {.con = con, .nice = nice, .idle = idle, .threads = threads,
                         .rc = VT_ERR_OK};
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
        rc = relaunch_task_threads(con, cfg->server.worker_nice + cfg->server.task_nice,
                                   cfg->server.worker_idle, err);
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

enum vt_err eng_prepare(duckdb_connection con, const char *sql, duckdb_prepared_statement *out,
                        enum vt_err code, struct vt_error *err)
{
    if (duckdb_prepare(con, sql, out) == DuckDBSuccess)
        return VT_ERR_OK;
    char text[VT_ERROR_MSG_MAX];
    vt_error_set(err, code, "%s", eng_error_text(duckdb_prepare_error(*out), text, sizeof text));
    duckdb_destroy_prepare(out);
    return code;
}
