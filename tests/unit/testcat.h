/*
 * A live catalog for unit tests: real Parquet files written by DuckDB into a
 * fresh directory, a configuration read from TOML text, the process database
 * (eng_open), a query pool and the catalog started and published, as main.c
 * wires them. Tests of the catalog, the execution driver, MCP and quack run
 * against it; testcat_on_worker runs code on a query-pool worker (the driver
 * and the SQL gate take that worker's connection).
 *
 *   static const char *const files[] = {"t", "SELECT range AS id FROM range(10)", NULL};
 *   struct testcat tc;
 *   if (testcat_open(&tc, files, "[[dataset]]\nname = \"t\"\nsource.kind = \"parquet\"\n"
 *                                "source.location = \"%s/t.parquet\"\n") != 0) ...
 *   ...
 *   testcat_close(&tc);
 *
 * The TOML text is a format with one %s per file location (the directory).
 */
#ifndef VT_TESTCAT_H
#define VT_TESTCAT_H

#include <duckdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "config/config.h"
#include "engine/engine.h"
#include "exec/exec.h"
#include "sql/sql.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

struct testcat {
    char dir[256];
    struct vt_config cfg;
    duckdb_database db;
    struct eng_pool *pool;
    struct cat_catalog *cat;
};

/* Writes `files` (name, SELECT, name, SELECT, ..., NULL) as <dir>/<name>.parquet. */
static int testcat_write(const char *dir, const char *const *files)
{
    duckdb_database db;
    duckdb_connection con;
    if (duckdb_open(NULL, &db) != DuckDBSuccess)
        return -1;
    duckdb_connect(db, &con);
    int rc = 0;
    for (size_t i = 0; files && files[i] && rc == 0; i += 2) {
        struct strbuf sql;
        sb_init(&sql, 0);
        sb_addf(&sql, "COPY (%s) TO '%s/%s.parquet' (FORMAT parquet)", files[i + 1], dir,
                files[i]);
        duckdb_result r;
        if (duckdb_query(con, sql.buf, &r) != DuckDBSuccess) {
            fprintf(stderr, "testcat: %s: %s\n", sql.buf, duckdb_result_error(&r));
            rc = -1;
        }
        duckdb_destroy_result(&r);
        sb_release(&sql);
    }
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}

/* Opens everything and waits (up to 60 s) until every dataset is built. */
static int testcat_open(struct testcat *t, const char *const *files, const char *toml_fmt)
{
    memset(t, 0, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "/tmp/vt-testcat-XXXXXX");
    if (!mkdtemp(t->dir) || testcat_write(t->dir, files) != 0)
        return -1;
    struct strbuf toml;
    sb_init(&toml, 0);
    /* one %s per location: as many copies of the directory as it takes */
    sb_addf(&toml, toml_fmt, t->dir, t->dir, t->dir, t->dir, t->dir, t->dir, t->dir, t->dir);
    char cfg_path[300];
    snprintf(cfg_path, sizeof cfg_path, "%s/datasets.toml", t->dir);
    FILE *f = fopen(cfg_path, "w");
    if (!f) {
        sb_release(&toml);
        return -1;
    }
    fputs(toml.buf ? toml.buf : "", f);
    fclose(f);
    sb_release(&toml);
    struct vt_error err = {0};
    if (config_load_file(cfg_path, &t->cfg, &err) != VT_ERR_OK ||
        eng_open(&t->cfg, &t->db, &err) != VT_ERR_OK ||
        !(t->pool = eng_pool_create(t->db, 2, "test", &err)) ||
        !(t->cat = cat_create(&t->cfg, t->db, &err))) {
        fprintf(stderr, "testcat: %s\n", vt_error_message(&err));
        return -1;
    }
    cat_set_dirs(t->cat, t->dir, t->dir, t->dir);
    cat_start(t->cat, NULL, 0);
    int64_t until = time_mono_ms() + 60000, n;
    while (!cat_ready(t->cat, &n)) {
        if (time_mono_ms() > until)
            return -1;
        usleep(10000);
    }
    return 0;
}

static void testcat_close(struct testcat *t)
{
    eng_pool_destroy(t->pool);
    cat_destroy(t->cat);
    exec_thread_release();
    exec_snapshot_thread_release();
    sql_thread_release();
    eng_close(&t->db);
    config_free(&t->cfg);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "testcat: cannot remove %s\n", t->dir);
}

/* Runs fn(arg) as a job on the pool's worker and waits for it. */
struct testcat_job {
    struct eng_job job; /* first: the pool hands this pointer back */
    void (*fn)(void *arg);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

static void testcat_job_run(struct eng_job *job, duckdb_connection con)
{
    (void)con;
    struct testcat_job *j = (struct testcat_job *)job;
    j->fn(j->arg);
}

static void testcat_job_done(struct eng_job *job)
{
    struct testcat_job *j = (struct testcat_job *)job;
    pthread_mutex_lock(&j->mu);
    j->done = true;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static inline void testcat_on_worker(struct testcat *t, void (*fn)(void *arg), void *arg)
{
    struct testcat_job j;
    memset(&j, 0, sizeof j);
    j.job.run = testcat_job_run;
    j.job.done = testcat_job_done;
    j.fn = fn;
    j.arg = arg;
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    if (eng_pool_submit(t->pool, &j.job)) {
        pthread_mutex_lock(&j.mu);
        while (!j.done)
            pthread_cond_wait(&j.cv, &j.mu);
        pthread_mutex_unlock(&j.mu);
    }
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.cv);
}

#endif
