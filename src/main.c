/*
 * vitrine's entry point: the command line, then wiring of the modules.
 *
 *   vitrine [--config FILE]       serve (config found per docs/architecture.md)
 *   vitrine init [DIR]            write a commented datasets.toml template
 *   vitrine check-config FILE     validate a config file and exit
 *   vitrine --version | --help
 *
 * Serving: load config -> open DuckDB -> start the query pool and the catalog
 * -> bind the HTTP listener (at once: startup is non-blocking) -> build
 * datasets in the background -> wait for SIGTERM/SIGINT -> drain and exit 0.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "catalog/catalog.h"
#include "cluster/cluster.h"
#include "config/config.h"
#include "engine/engine.h"
#include "http/server.h"
#include "notify/notify.h"
#include "pgwire/pgwire.h"
#include "quack/quack.h"
#include "saved/saved.h"
#include "sources/source.h"
#include "sql/sql.h"
#include "util/file.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

#ifndef VT_VERSION
#define VT_VERSION "0.0.0"
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vitrine [--config FILE] [--port N] [--role R]  serve the datasets of a config file\n"
            "       vitrine init [DIR]          write a commented datasets.toml into DIR (default .)\n"
            "       vitrine check-config FILE   validate a config file and exit\n"
            "       vitrine --version           print the version\n"
            "       vitrine --help              this text\n"
            "\n"
            "--port overrides server.port (0 picks a free port; the log says which);\n"
            "--role overrides cluster.role (standalone, writer or reader).\n"
            "Config file resolution: --config, $VITRINE_CONFIG_FILE, ./datasets.toml,\n"
            "$HOME/datasets.toml. Environment: ADMIN_TOKEN (admin endpoints),\n"
            "VITRINE_LOG (error|warn|info|debug), VITRINE_LOG_FORMAT (text|json: one JSON\n"
            "object per line), AWS_* (S3 credentials).\n");
}

static int cmd_init(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/datasets.toml", dir ? dir : ".");
    if (dir && mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "vitrine init: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    struct vt_error err = {0};
    if (config_write_template(path, &err) != VT_ERR_OK) {
        fprintf(stderr, "vitrine init: %s\n", vt_error_message(&err));
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}

static int cmd_check_config(const char *path)
{
    struct vt_config cfg;
    struct vt_error err = {0};
    if (config_load_file(path, &cfg, &err) != VT_ERR_OK) {
        fprintf(stderr, "%s\n", vt_error_message(&err));
        return 1;
    }
    printf("%s: ok (%zu dataset%s)\n", path, cfg.n_datasets, cfg.n_datasets == 1 ? "" : "s");
    /* A location that is not there is valid (the server skips the dataset
     * and starts), but "ok" alone let a typo pass unnoticed until the
     * dataset was missing from the running server: say so, still ok. */
    for (size_t i = 0; i < cfg.n_datasets; i++) {
        const struct vt_dataset_config *ds = &cfg.datasets[i];
        if (ds->kind == CFG_SOURCE_QUERY || !ds->location || ds->location[0] != '/')
            continue; /* s3:// and the like: nothing to look at offline */
        bool glob = strpbrk(ds->location, "*?[{") != NULL;
        char *look = glob ? config_location_root(ds->location) : strdup(ds->location);
        struct stat st;
        if (look && stat(look, &st) != 0 && errno == ENOENT)
            fprintf(stderr, "%s: warning: dataset %s: %s does not exist (the server would skip "
                            "this dataset)\n", path, ds->name, look);
        free(look);
    }
    config_free(&cfg);
    return 0;
}


/* Each runtime directory holds RUNTIME_LOCK, locked (flock) by its process
 * for as long as it lives: the kernel drops the lock when the process dies,
 * however it dies, so a directory whose lock can be taken is an orphan.
 * Pids do not tell: in a container every process is pid 1, so a restarted
 * container's process has the dead one's pid, and processes of other pid
 * namespaces sharing a TMPDIR are not visible to kill(). */
#define RUNTIME_LOCK ".lock"

/* 1: `path` (a runtime directory) belongs to no live process; 0: it may. */
static int runtime_dir_orphaned(const char *path, long pid)
{
    char lock[4200];
    snprintf(lock, sizeof lock, "%s/" RUNTIME_LOCK, path);
    int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        int free_ = flock(fd, LOCK_EX | LOCK_NB) == 0;
        close(fd);
        return free_;
    }
    /* No lock: a directory of a version before it, or one whose process
     * is between mkdtemp and taking its lock. A process of this pid
     * namespace that is gone, and a directory not touched for a minute. */
    struct stat st;
    if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
        return 0;
    return stat(path, &st) == 0 && time(NULL) - st.st_mtime > 60;
}

/* Runtime directories of earlier vitrine processes of this user that died
 * without cleaning up (SIGKILL, OOM kill, power loss, a container's
 * restart): they can hold large Parquet exports, downloads and index files,
 * so the next start removes them. */
static void remove_stale_runtime_dirs(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        /* vitrine-<pid>-<mkdtemp suffix> */
        if (strncmp(de->d_name, "vitrine-", 8) != 0)
            continue;
        char *end;
        long pid = strtol(de->d_name + 8, &end, 10);
        if (end == de->d_name + 8 || *end != '-' || !end[1] || pid <= 0 || pid > INT_MAX)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", base, de->d_name);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
            !runtime_dir_orphaned(path, pid))
            continue;
        log_info("removing the runtime directory of a dead vitrine process: %s", path);
        util_remove_tree(path);
    }
    closedir(d);
}

/* A private scratch directory for DuckDB spill files, downloads and exports,
 * with its lock taken (*lock_fd, held until exit). */
static char *make_runtime_dir(int *lock_fd)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    remove_stale_runtime_dirs(base);
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/vitrine-%d-XXXXXX", base, (int)getpid());
    char *dir = mkdtemp(tmpl);
    if (!dir)
        return NULL;
    char lock[4200];
    snprintf(lock, sizeof lock, "%s/" RUNTIME_LOCK, dir);
    *lock_fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (*lock_fd < 0 || flock(*lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (*lock_fd >= 0)
            close(*lock_fd);
        *lock_fd = -1;
        util_remove_tree(dir);
        errno = e;
        return NULL;
    }
    return strdup(dir);
}

/* The runtime directory holds the index files and pre-rendered pages, which
 * the design reads through the page cache (memory the kernel may drop), and
 * DuckDB's spill files, which exist to leave memory. On tmpfs all of them
 * are memory that cannot be dropped, and nothing else says so. */
static void warn_if_tmpfs(const char *dir)
{
    struct statfs fs;
    if (statfs(dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC)
        log_warn("the runtime directory %s is on tmpfs: the index files, pre-rendered pages, "
                 "exports and spill files written there are memory the kernel cannot drop "
                 "(about 2x the Parquet size per resident dataset plus index.json_pages_mb); "
                 "set TMPDIR to a directory on disk",
                 dir);
}

/* Every client connection is a file descriptor: raise the soft limit to the
 * hard one so VT_MAX_CONNECTIONS can be reached (a 1024 default would make
 * accept fail long before). */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        log_warn("cannot raise the open-file limit: %s", strerror(errno));
    if (rl.rlim_cur < (rlim_t)VT_MAX_CONNECTIONS + 256)
        log_warn("open-file limit %llu is below %d connections plus working files",
                 (unsigned long long)rl.rlim_cur, VT_MAX_CONNECTIONS);
}

/* The teardown of the pools and the catalog joins their threads; a build
 * blocked in a system call (a FIFO, a stalled mount) would hold it forever.
 * It runs on its own thread and the main thread waits VT_SHUTDOWN_JOIN_SECS:
 * past that the process exits without it (nothing it holds must outlive the
 * process: spill files live in the runtime directory, removed first). */
struct teardown {
    struct api_app *app;
    duckdb_database *db;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

static void *teardown_main(void *arg)
{
    struct teardown *t = arg;
    eng_sampler_stop(t->app->sampler);
    t->app->sampler = NULL;
    eng_pool_destroy(t->app->admin_pool);
    eng_pool_destroy(t->app->queries);
    cat_destroy(t->app->catalog);
    eng_close(t->db);
    pthread_mutex_lock(&t->mu);
    t->done = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* True when the teardown finished in time. */
static bool bounded_teardown(struct api_app *app, duckdb_database *db)
{
    static struct teardown t; /* outlives this frame if the thread is left behind */
    t.app = app;
    t.db = db;
    t.done = false;
    pthread_mutex_init(&t.mu, NULL);
    pthread_cond_init(&t.cv, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, teardown_main, &t) != 0) {
        teardown_main(&t);
        return true;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += VT_SHUTDOWN_JOIN_SECS;
    pthread_mutex_lock(&t.mu);
    while (!t.done && pthread_cond_timedwait(&t.cv, &t.mu, &until) == 0)
        ;
    bool done = t.done;
    pthread_mutex_unlock(&t.mu);
    if (done)
        pthread_join(th, NULL);
    else
        pthread_detach(th);
    return done;
}

static void notify_recheck_cb(void *notifier)
{
    notify_recheck(notifier);
}

/* /readyz's answer, for the systemd notifier. */
static bool app_ready(void *ctx, int64_t *out_datasets)
{
    struct api_app *app = ctx;
    if (cluster_role(app->cluster) == CFG_ROLE_READER)
        return cluster_reader_ready(app->cluster, out_datasets);
    return cat_ready(app->catalog, out_datasets);
}

static int serve(const char *config_path, int port_override, int role_override)
{
    struct vt_config cfg;
    struct vt_error err = {0};
    if (config_path) {
        if (config_load_file(config_path, &cfg, &err) != VT_ERR_OK) {
            log_error("%s", vt_error_message(&err));
            return 1;
        }
        log_info("config %s: %zu datasets", cfg.path ? cfg.path : config_path, cfg.n_datasets);
    } else {
        config_init_defaults(&cfg);
        log_warn("no config file found (--config, $VITRINE_CONFIG_FILE, ./datasets.toml, "
                 "$HOME/datasets.toml): serving no datasets");
    }
    if (port_override >= 0)
        cfg.server.port = port_override;
    if (role_override >= 0) {
        cfg.cluster.role = (enum cfg_cluster_role)role_override;
        if (cfg.cluster.role != CFG_ROLE_STANDALONE && !cfg.cluster.storage) {
            log_error("--role %s needs cluster.storage in the config file",
                      config_cluster_role_name(cfg.cluster.role));
            config_free(&cfg);
            return 1;
        }
    }
    bool reader = cfg.cluster.role == CFG_ROLE_READER;
    /* Saved queries of kind "query" (server.saved_queries_dir): a file that
     * does not read, or names a dataset the config has, is skipped with an
     * error naming it; only an unreadable directory stops the start. A
     * reader's datasets, saved queries included, are the writer's. */
    struct saved_file *saved = NULL;
    size_t n_saved = 0;
    struct strvec skipped = {0};
    enum vt_err saved_rc =
        reader ? VT_ERR_OK
               : saved_load(cfg.server.saved_queries_dir, &cfg, &saved, &n_saved, &skipped, &err);
    for (size_t i = 0; i < skipped.len; i++)
        log_error("%s", skipped.items[i]);
    strvec_free(&skipped);
    if (saved_rc != VT_ERR_OK) {
        log_error("%s", vt_error_message(&err));
        config_free(&cfg);
        return 1;
    }
    if (n_saved)
        log_info("%s: %zu saved quer%s", cfg.server.saved_queries_dir, n_saved,
                 n_saved == 1 ? "y" : "ies");
    /* The spec's default engine is a hint here: said once, at INFO, when the
     * key is not set (every default config would warn otherwise); a WARN only
     * when the operator asked for datafusion explicitly. */
    if (cfg.server.backend == CFG_BACKEND_DATAFUSION && cfg.server.backend_set)
        log_warn("server.backend = \"datafusion\": this build has only the DuckDB engine; "
                 "running DuckDB");
    else if (cfg.server.backend == CFG_BACKEND_DATAFUSION)
        log_info("engine: DuckDB (server.backend is not set; its default, \"datafusion\", is "
                 "a hint this build answers with DuckDB)");

    /* Signals go to the main thread only: block them before any thread starts. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();

    /* Everything below is undone at `out`, in reverse order, on success and
     * on failure alike. */
    int rc = 1;
    duckdb_database db = NULL;
    struct api_app app = {.cfg = &cfg, .started_at_us = time_wall_us()};
    struct http_server *srv = NULL;
    struct pgw_server *pg = NULL;
    struct notify *notifier = NULL;
    int runtime_lock = -1;
    char *runtime_dir = make_runtime_dir(&runtime_lock);
    if (!runtime_dir) {
        log_error("cannot create a runtime directory: %s", strerror(errno));
        goto out;
    }
    app.runtime_dir = runtime_dir;
    log_info("runtime directory %s (index files, pre-rendered pages, exports, downloads, "
             "spill files; removed at exit)",
             runtime_dir);
    warn_if_tmpfs(runtime_dir);
    char spill_dir[4200];
    snprintf(spill_dir, sizeof spill_dir, "%s/spill", runtime_dir);
    if (!cfg.server.temp_directory)
        cfg.server.temp_directory = strdup(spill_dir);

    /* The SQL functions install while the rest starts (and the first
     * builds list, probe and attach their sources); the gate holds every
     * user statement until they are there. */
    sql_gate_set_wait(eng_functions_wait);
    if (eng_open_deferred(&cfg, &db, &err) != VT_ERR_OK)
        goto fail;
    /* The SQL functions source statements call (deletion vectors). */
    if (source_functions_register(db, &err) != VT_ERR_OK)
        goto fail;
    /* DuckDB reads and writes files only where this configuration says
     * (defence in depth under the SQL gate): the config's directories and
     * sources, and this process's runtime directory. */
    struct strvec dirs = {0};
    if (config_file_dirs(&cfg, &dirs) != 0 || strvec_push(&dirs, runtime_dir) != 0) {
        strvec_free(&dirs);
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        goto fail;
    }
    /* lock_configuration too, unless Quack must configure its extension
     * later (quack.c). */
    enum vt_err confined = eng_confine(db, &dirs, !cfg.server.quack.enabled, &err);
    for (size_t i = 0; confined == VT_ERR_OK && i < dirs.len; i++)
        log_debug("DuckDB may read and write under %s", dirs.items[i]);
    strvec_free(&dirs);
    if (confined != VT_ERR_OK)
        goto fail;
    int workers = cfg.server.workers > 0 ? cfg.server.workers : eng_cpu_count();
    auth_admin_init(&app.auth.admin);
    auth_policy_from_config(&app.auth, &cfg.auth);
    if (!app.auth.admin.configured && !cfg.auth.enabled)
        log_info("ADMIN_TOKEN is not set: admin endpoints answer 403");
    if (cfg.auth.enabled) {
        if (!cfg.auth.audience)
            log_warn("auth: [auth] audience is not set: tokens for any audience are accepted");
        if (auth_bearer_create(&cfg.auth, &app.auth.bearer, &err) != VT_ERR_OK)
            goto fail;
    }
    /* Lanes (engine.h, job classes): the workers run short jobs only, a long
     * lane the group bys, sorts and SQL, a stream lane of one thread per
     * worker the streams paced by their clients; none holds another's. */
    struct eng_lanes lanes = {.threads = workers,
                              .long_threads = eng_long_lane_threads(workers),
                              .stream_threads = workers,
                              .max_queued = cfg.server.max_queued_jobs,
                              .worker_nice = cfg.server.worker_nice,
                              .lane_nice = cfg.server.lane_nice,
                              .idle = cfg.server.worker_idle};
    app.queries = eng_pool_create_lanes(db, &lanes, "query", &err);
    app.admin_pool = app.queries ? eng_pool_create(db, 2, "admin", &err) : NULL;
    app.catalog = app.admin_pool ? cat_create(&cfg, db, &err) : NULL;
    if (!app.catalog)
        goto fail;
    if (cfg.metrics.enabled)
        app.sampler = eng_sampler_start(db, 1000);
    char downloads[4200], cache_dir[4200], exports[4200];
    snprintf(downloads, sizeof downloads, "%s/downloads", runtime_dir);
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", runtime_dir);
    snprintf(exports, sizeof exports, "%s/exports", runtime_dir);
    mkdir(downloads, 0700);
    mkdir(cache_dir, 0700);
    mkdir(exports, 0700);
    cat_set_dirs(app.catalog, downloads, cache_dir, exports);
    char index_dir[4200];
    snprintf(index_dir, sizeof index_dir, "%s/index", runtime_dir);
    cat_set_index_dir(app.catalog, index_dir);
    uint64_t index_budget =
        config_parse_size_bytes(cfg.server.index_memory_limit, eng_available_memory());
    index_budget_set(index_budget > SIZE_MAX ? SIZE_MAX : (size_t)index_budget);
    log_info("index memory budget %.1f MiB (server.index_memory_limit = \"%s\")",
             index_budget == UINT64_MAX ? -1.0 : index_budget / 1048576.0,
             cfg.server.index_memory_limit);

    if (cfg.server.pgwire.enabled) {
        struct pgw_server_options po = {.cfg = &cfg, .catalog = app.catalog,
                                        .pool = app.queries, .auth = &app.auth};
        pg = pgw_server_start(&po, &err);
        if (!pg)
            goto fail;
        log_info("pgwire listening on %s:%d (PostgreSQL protocol 3.0%s, served by the DuckDB "
                 "engine)",
                 cfg.server.pgwire.listen, pgw_server_port(pg),
                 pgw_server_tls(pg) ? ", TLS" : "");
    }

    struct api_route_set routes;
    api_route_set_init(&routes);
    if (api_route_set_build(&routes, &cfg) != 0) {
        api_route_set_release(&routes);
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, "building the route table");
        goto fail;
    }
    struct http_server_options opts = {.cfg = &cfg, .app = &app, .routes = routes.rows,
                                       .n_routes = routes.n, .authorize = api_authorize};
    srv = http_server_start(&opts, &err); /* copies the routes */
    api_route_set_release(&routes);
    if (!srv)
        goto fail;
    log_info("vitrine %s listening on http://%s:%d%s (%d workers)", VT_VERSION, cfg.server.listen,
             http_server_port(srv), cfg.server.prefix ? cfg.server.prefix : "", workers);
    /* Where a person goes next: the server's root is no page (404), and the
     * README's /explore/ was written nowhere the person starting it looks. */
    if (cfg.explorer.enabled || cfg.swagger.enabled) {
        const char *pre = cfg.server.prefix ? cfg.server.prefix : "";
        char ex[512] = "", sw[512] = "";
        if (cfg.explorer.enabled)
            snprintf(ex, sizeof ex, "the Explorer at http://%s:%d%s%s/", cfg.server.listen,
                     http_server_port(srv), pre, cfg.explorer.path);
        if (cfg.swagger.enabled)
            snprintf(sw, sizeof sw, "%sSwagger UI at http://%s:%d%s%s/", ex[0] ? ", " : "",
                     cfg.server.listen, http_server_port(srv), pre, cfg.swagger.path);
        log_info("open %s%s in a browser", ex, sw);
    }

    log_start_flusher();
    /* [cluster]: the writer publishes what it builds, a reader imports what
     * the writer published (hooks installed before the catalog starts). */
    struct cluster_options co = {.cfg = &cfg, .catalog = app.catalog, .runtime_dir = runtime_dir,
                                 .http_port = http_server_port(srv)};
    app.cluster = cluster_create(&co, &err);
    if (!app.cluster && cfg.cluster.role != CFG_ROLE_STANDALONE)
        goto fail;
    /* Datasets build in the background; requests meanwhile get 503. */
    struct vt_dataset_config *restored = calloc(n_saved ? n_saved : 1, sizeof *restored);
    for (size_t i = 0; restored && i < n_saved; i++)
        restored[i] = saved[i].ds; /* shallow: cat_start copies what it keeps */
    cat_start(app.catalog, restored, restored ? n_saved : 0);
    free(restored);
    saved_files_free(saved, n_saved);
    saved = NULL;
    n_saved = 0;
    /* Quack (when enabled) loads its extension now and serves once the
     * datasets are registered and built; it says so when it cannot. */
    struct quack_server *quack = quack_start(&cfg, db, app.catalog);
    if (cluster_start(app.cluster, &err) != VT_ERR_OK)
        log_error("%s", vt_error_message(&err));
    notifier = notify_start(app_ready, &app, http_server_port(srv), cfg.server.prefix);
    /* READY=1 the moment the last startup build ends, not at the next tick. */
    if (notifier)
        cat_set_ready_listener(app.catalog, notify_recheck_cb, notifier);

    /* A failed install stops the start, as it did when it was not deferred. */
    if (eng_functions_wait(&err) != VT_ERR_OK)
        goto fail;
    int sig = 0;
    for (;;) {
        sigwait(&sigs, &sig);
        if (sig != SIGHUP)
            break;
        /* SIGHUP: the config file's new datasets, as POST /config/reload. */
        notify_reloading(notifier);
        if (reader)
            log_info("SIGHUP: a reader's datasets come from the writer; nothing to reload");
        else
            api_config_reload_signal(&app);
        notify_reloaded(notifier);
    }
    /* Not ready from now on (the balancer takes this process out), but
     * everything else is served for the drain delay; then the listeners
     * close and in-flight work gets shutdown_timeout_secs. */
    atomic_store(&app.draining, true);
    notify_stopping(notifier);
    log_info("received %s: not ready; serving %lld s more, then draining (up to %lld s)",
             sig == SIGTERM ? "SIGTERM" : "SIGINT", (long long)cfg.server.drain_delay_secs,
             (long long)cfg.server.shutdown_timeout_secs);
    if (cfg.server.drain_delay_secs > 0) {
        /* A second SIGTERM or SIGINT cuts the delay short. */
        struct timespec delay = {.tv_sec = (time_t)cfg.server.drain_delay_secs};
        sigset_t stop_sigs;
        sigemptyset(&stop_sigs);
        sigaddset(&stop_sigs, SIGTERM);
        sigaddset(&stop_sigs, SIGINT);
        int64_t until = time_mono_ms() + cfg.server.drain_delay_secs * 1000;
        while (time_mono_ms() < until) {
            int64_t left = until - time_mono_ms();
            delay.tv_sec = (time_t)(left / 1000);
            delay.tv_nsec = (long)(left % 1000) * 1000000L;
            if (sigtimedwait(&sigs, NULL, &delay) > 0) {
                log_info("second signal: ending the drain delay");
                break;
            }
        }
    }
    int64_t drain_until = time_mono_ms() + cfg.server.shutdown_timeout_secs * 1000;
    quack_stop(quack);
    pgw_server_shutdown(pg);
    bool clean = http_server_stop(srv, cfg.server.shutdown_timeout_secs * 1000, app.queries);
    clean = pgw_server_destroy(pg, drain_until) && clean;
    pg = NULL;
    cat_set_ready_listener(app.catalog, NULL, NULL); /* builds may still end */
    notify_stop(notifier);
    notifier = NULL;
    /* No more polling, publishing or collecting (its S3 requests are cut). */
    cluster_stop(app.cluster);
    /* Builds are cancelled with the catalog; queries were interrupted above. */
    if (app.admin_pool)
        eng_pool_interrupt_all(app.admin_pool);
    if (!clean || !bounded_teardown(&app, &db)) {
        /* A job or a build did not return in time (a system call that does
         * not end): exit now rather than hang; freeing what it uses would
         * crash it, so nothing else is torn down. */
        log_warn("shutdown: jobs or builds still running after the drain; exiting without "
                 "waiting for them");
        if (runtime_dir)
            util_remove_tree(runtime_dir);
        log_info("stopped");
        log_stop_flusher();
        log_flush();
        _exit(0);
    }
    app.admin_pool = app.queries = NULL;
    app.catalog = NULL;
    rc = 0;
    goto out;
fail:
    log_error("%s", vt_error_message(&err));
out:
    notify_stop(notifier);
    cluster_stop(app.cluster);
    pgw_server_destroy(pg, 0);
    saved_files_free(saved, n_saved);
    eng_sampler_stop(app.sampler);
    eng_pool_destroy(app.admin_pool);
    eng_pool_destroy(app.queries);
    cat_destroy(app.catalog);
    cluster_destroy(app.cluster);
    auth_bearer_destroy(app.auth.bearer);
    eng_close(&db);
    if (runtime_dir)
        util_remove_tree(runtime_dir);
    if (runtime_lock >= 0)
        close(runtime_lock); /* after the removal: no one takes it for an orphan */
    free(runtime_dir);
    config_free(&cfg);
    if (rc != 0)
        return rc;
    log_info("stopped");
    log_stop_flusher();
    return 0;
}

int main(int argc, char **argv)
{
    log_init_from_env();
    const char *config_arg = NULL;
    int port = -1, role = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
            printf("vitrine %s (DuckDB %s)\n", VT_VERSION, duckdb_library_version());
            return 0;
        }
        if (!strcmp(a, "init") && i == 1) {
            if (argc > 3) {
                usage(stderr);
                return 2;
            }
            return cmd_init(argc == 3 ? argv[2] : NULL);
        }
        if (!strcmp(a, "check-config") && i == 1) {
            if (argc != 3) {
                usage(stderr);
                return 2;
            }
            return cmd_check_config(argv[2]);
        }
        if (!strcmp(a, "--config") || !strcmp(a, "-c")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vitrine: --config needs a file\n");
                return 2;
            }
            config_arg = argv[++i];
            continue;
        }
        if (!strncmp(a, "--config=", 9)) {
            config_arg = a + 9;
            continue;
        }
        if (!strcmp(a, "--role") || !strncmp(a, "--role=", 7)) {
            const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            role = v ? config_cluster_role_parse(v) : -1;
            if (role < 0) {
                fprintf(stderr, "vitrine: --role needs standalone, writer or reader\n");
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--test-build-gate")) {
            /* Test only (cat_test_build_gate): not in usage(), so nobody
             * meets it outside the tests; the log says it is on. */
            if (i + 1 >= argc) {
                fprintf(stderr, "vitrine: --test-build-gate needs a directory\n");
                return 2;
            }
            cat_test_build_gate(argv[++i]);
            log_warn("--test-build-gate %s: builds wait while %s/<dataset> exists "
                     "(a test hook; never for real use)", argv[i], argv[i]);
            continue;
        }
        if (!strcmp(a, "--port") || !strncmp(a, "--port=", 7)) {
            const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            long p = v ? strtol(v, &end, 10) : -1;
            if (!v || !*v || *end || p < 0 || p > 65535) {
                fprintf(stderr, "vitrine: --port needs a number from 0 to 65535\n");
                return 2;
            }
            port = (int)p;
            continue;
        }
        fprintf(stderr, "vitrine: unknown argument %s\n", a);
        usage(stderr);
        return 2;
    }
    char *path = config_resolve_path(config_arg);
    if (config_arg && !path) {
        fprintf(stderr, "vitrine: cannot read config file %s\n", config_arg);
        return 1;
    }
    int rc = serve(path, port, role);
    free(path);
    return rc;
}
