/*
 * vitrine's entry point: the command line, then wiring of the modules.
 *
 *   vitrine [--config FILE]       serve (config resolved per DESIGN.md)
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
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "engine/engine.h"
#include "http/server.h"
#include "util/limits.h"
#include "util/log.h"

#ifndef VT_VERSION
#define VT_VERSION "0.0.0"
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vitrine [--config FILE] [--port N]  serve the datasets of a config file\n"
            "       vitrine init [DIR]          write a commented datasets.toml into DIR (default .)\n"
            "       vitrine check-config FILE   validate a config file and exit\n"
            "       vitrine --version           print the version\n"
            "       vitrine --help              this text\n"
            "\n"
            "--port overrides server.port (0 picks a free port; the log says which).\n"
            "Config file resolution: --config, $VITRINE_CONFIG_FILE, ./datasets.toml,\n"
            "$HOME/datasets.toml. Environment: ADMIN_TOKEN (admin endpoints),\n"
            "VITRINE_LOG (error|warn|info|debug), AWS_* (S3 credentials).\n");
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
    config_free(&cfg);
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

/* Removes the runtime directory and everything in it (not following links). */
static void remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runtime directories of earlier vitrine processes of this user that died
 * without cleaning up (SIGKILL, OOM kill, power loss): they can hold large
 * Parquet exports and downloads, so the next start removes them. */
static void remove_stale_runtime_dirs(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int pid = 0;
        char rest[16];
        if (sscanf(de->d_name, "vitrine-%d-%15s", &pid, rest) != 2 || pid <= 0 ||
            pid == (int)getpid())
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue; /* still running (or not ours to judge) */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", base, de->d_name);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
            continue;
        log_info("removing the runtime directory of a dead vitrine process: %s", path);
        remove_tree(path);
    }
    closedir(d);
}

/* A private scratch directory for DuckDB spill files, downloads and exports. */
static char *make_runtime_dir(void)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    remove_stale_runtime_dirs(base);
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/vitrine-%d-XXXXXX", base, (int)getpid());
    char *dir = mkdtemp(tmpl);
    return dir ? strdup(dir) : NULL;
}

/* After the drain, cleanup (joining worker and builder threads, closing
 * DuckDB) must not keep the process alive: a builder blocked in a syscall or
 * a query that ignores its interrupt would hold it for ever. This thread,
 * started at SIGTERM, ends the process EXIT_GRACE_MS after the drain time,
 * exit status 0 (the drain itself went as configured), if the cleanup has
 * not finished by then. */
#define EXIT_GRACE_MS 4000

static void *exit_watchdog(void *arg)
{
    int64_t ms = *(int64_t *)arg + EXIT_GRACE_MS;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    log_warn("shutdown: cleanup still waiting on threads %d ms after the drain; exiting now",
             EXIT_GRACE_MS);
    log_stop_flusher();
    _exit(0);
    return NULL;
}

/* Every client connection and every file DuckDB reads is a descriptor; the
 * usual soft limit of 1024 would stop accepting long before
 * VT_MAX_CONNECTIONS. Raise it to the hard limit. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < (rlim_t)VT_MAX_CONNECTIONS + 256)
        log_warn("the open-files limit is %llu: fewer than %d client connections fit "
                 "(raise it with ulimit -n)",
                 (unsigned long long)rl.rlim_cur, VT_MAX_CONNECTIONS);
}

static int serve(const char *config_path, int port_override)
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
    if (cfg.server.backend == BACKEND_DATAFUSION)
        log_warn("server.backend = \"datafusion\"%s: this build has only the DuckDB engine; "
                 "running DuckDB",
                 cfg.server.backend_set ? "" : " (the default)");

    /* Signals go to the main thread only: block them before any thread starts. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();

    /* Everything below is undone at `out`, in reverse order, on success and
     * on failure alike. */
    int rc = 1;
    duckdb_database db = NULL;
    struct app app = {.cfg = &cfg};
    struct http_server *srv = NULL;
    char *runtime_dir = make_runtime_dir();
    if (!runtime_dir) {
        log_error("cannot create a runtime directory: %s", strerror(errno));
        goto out;
    }
    app.runtime_dir = runtime_dir;
    char spill_dir[4200];
    snprintf(spill_dir, sizeof spill_dir, "%s/spill", runtime_dir);
    if (!cfg.server.temp_directory)
        cfg.server.temp_directory = strdup(spill_dir);

    if (eng_open(&cfg, &db, &err) != VT_ERR_OK)
        goto fail;
    app.db = db;
    int workers = cfg.server.workers > 0 ? cfg.server.workers : eng_cpu_count();
    auth_init(&app.auth, &cfg.auth);
    if (!app.auth.admin.configured)
        log_info("ADMIN_TOKEN is not set: admin endpoints answer 403");
    app.queries = eng_pool_create(db, workers, "query", &err);
    app.admin_pool = app.queries ? eng_pool_create(db, 2, "admin", &err) : NULL;
    app.catalog = app.admin_pool ? cat_create(&cfg, db, &err) : NULL;
    if (!app.catalog)
        goto fail;
    char downloads[4200], cache_dir[4200], exports[4200];
    snprintf(downloads, sizeof downloads, "%s/downloads", runtime_dir);
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", runtime_dir);
    snprintf(exports, sizeof exports, "%s/exports", runtime_dir);
    mkdir(downloads, 0700);
    mkdir(cache_dir, 0700);
    mkdir(exports, 0700);
    cat_set_dirs(app.catalog, downloads, cache_dir, exports);

    struct http_server_options opts = {.cfg = &cfg, .app = &app, .authorize = api_authorize};
    api_routes(&opts.routes, &opts.n_routes);
    srv = http_server_start(&opts, &err);
    if (!srv)
        goto fail;
    log_info("vitrine %s listening on http://%s:%d%s (%d workers)", VT_VERSION, cfg.server.listen,
             http_server_port(srv), cfg.server.prefix ? cfg.server.prefix : "", workers);

    log_start_flusher();
    /* Datasets build in the background; requests meanwhile get 503. */
    cat_start(app.catalog);

    int sig = 0;
    sigwait(&sigs, &sig);
    log_info("received %s: draining (up to %lld s)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
             (long long)cfg.server.shutdown_timeout_secs);
    static int64_t drain_ms;
    drain_ms = cfg.server.shutdown_timeout_secs * 1000;
    pthread_t guard;
    if (pthread_create(&guard, NULL, exit_watchdog, &drain_ms) == 0)
        pthread_detach(guard);
    http_server_stop(srv, drain_ms, app.queries);
    eng_pool_interrupt_all(app.admin_pool);
    rc = 0;
    goto out;
fail:
    log_error("%s", vt_error_message(&err));
out:
    eng_pool_destroy(app.admin_pool);
    eng_pool_destroy(app.queries);
    cat_destroy(app.catalog);
    eng_close(&db);
    auth_release(&app.auth);
    if (runtime_dir)
        remove_tree(runtime_dir);
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
    int port = -1;
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
    int rc = serve(path, port);
    free(path);
    return rc;
}
