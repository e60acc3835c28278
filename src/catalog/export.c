/*
 * The whole-dataset Parquet export, built once per generation.
 *
 * The first request for a generation's export queues a COPY ... TO on the
 * builder pool (no request deadline applies to it, so a big export finishes
 * even if the first client gave up); concurrent requests wait for the same
 * build. DuckDB writes into a temp name that is renamed into place, so a
 * reader never sees a half-written file (COPY leaves a broken file when
 * interrupted). The file belongs to the generation and is deleted with it,
 * i.e. when it is no longer current and its last reader let go; a reader that
 * still has the file open keeps reading its bytes after the unlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/catalog_internal.h"
#include "metrics/metrics.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

struct export_job {
    struct eng_job job;
    struct cat_generation *gen; /* one reference */
};

static void export_run(struct eng_job *job, duckdb_connection con)
{
    struct export_job *ej = (struct export_job *)job;
    struct cat_generation *gen = ej->gen;
    struct cat_catalog *cat = gen->priv->catalog;
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s.parquet", cat->export_dir, gen->id);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    void *reads = NULL;
    struct vt_error err = {0};
    enum vt_err rc = VT_ERR_OK;
    int64_t t0 = time_mono_ms();
    if (gen->priv->export_remote && cat->hooks.fetch_export) {
        /* Imported from a cluster's writer: its own bytes, so that every
         * replica serves the same file under the same ETag. */
        rc = cat->hooks.fetch_export(cat->hooks.ctx, gen->priv->export_remote, tmp, &err);
    } else {
        /* A lazy S3 generation's objects, whole, for the copy. */
        rc = cat_generation_read_all(gen, 0, &reads, &err);
        struct strbuf sql;
        sb_init(&sql, 0);
        sb_addf(&sql, "COPY (SELECT * FROM %s) TO ", gen->relation);
        sb_add_sql_string(&sql, tmp);
        sb_adds(&sql, " (FORMAT parquet)");
        if (rc == VT_ERR_OK)
            rc = eng_exec(con, sql.buf, VT_ERR_INTERNAL, &err);
        sb_release(&sql);
    }
    struct stat st;
    if (rc == VT_ERR_OK && rename(tmp, path) != 0)
        rc = vt_error_set(&err, VT_ERR_INTERNAL, "cannot rename export: %s", strerror(errno));
    if (rc == VT_ERR_OK && stat(path, &st) != 0)
        rc = vt_error_set(&err, VT_ERR_INTERNAL, "export vanished: %s", strerror(errno));
    if (rc != VT_ERR_OK)
        unlink(tmp);
    pthread_mutex_lock(&gen->priv->export_mu);
    if (rc == VT_ERR_OK) {
        gen->priv->export_path = strdup(path);
        gen->priv->export_size = (uint64_t)st.st_size;
        gen->priv->export_state = gen->priv->export_path ? CAT_EXPORT_READY : CAT_EXPORT_NONE;
        log_info("export of generation %s: %llu bytes in %lld ms", gen->id,
                 (unsigned long long)st.st_size, (long long)(time_mono_ms() - t0));
    } else {
        /* Not sticky: the next request tries again. */
        gen->priv->export_state = CAT_EXPORT_NONE;
        gen->priv->export_error = err;
        log_error("export of generation %s failed: %s", gen->id, vt_error_message(&err));
    }
    gen->priv->export_attempts++;
    metrics_export_observe(rc == VT_ERR_OK, time_mono_ms() - t0,
                           rc == VT_ERR_OK ? (uint64_t)st.st_size : 0);
    pthread_cond_broadcast(&gen->priv->export_cv);
    pthread_mutex_unlock(&gen->priv->export_mu);
    cat_generation_read_release(reads);
}

static void export_done(struct eng_job *job)
{
    struct export_job *ej = (struct export_job *)job;
    cat_generation_release(ej->gen);
    free(ej);
}

enum vt_err cat_export_open(struct cat_generation *gen, int64_t deadline_ms, int *out_fd,
                            uint64_t *out_size, struct vt_error *err)
{
    *out_fd = -1;
    pthread_mutex_lock(&gen->priv->export_mu);
    int attempts_seen = gen->priv->export_attempts;
    while (gen->priv->export_state != CAT_EXPORT_READY) {
        if (gen->priv->export_state == CAT_EXPORT_NONE) {
            if (gen->priv->export_attempts > attempts_seen) {
                /* The build we waited for failed. */
                struct vt_error e = gen->priv->export_error;
                pthread_mutex_unlock(&gen->priv->export_mu);
                return vt_error_set(err, VT_ERR_INTERNAL, "Parquet export failed: %s",
                                    vt_error_message(&e));
            }
            struct export_job *ej = calloc(1, sizeof *ej);
            if (!ej) {
                pthread_mutex_unlock(&gen->priv->export_mu);
                return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
            }
            ej->job.run = export_run;
            ej->job.done = export_done;
            ej->gen = gen;
            atomic_fetch_add(&gen->priv->refs, 1);
            gen->priv->export_state = CAT_EXPORT_BUILDING;
            if (!eng_pool_submit(gen->priv->catalog->builders, &ej->job)) {
                gen->priv->export_state = CAT_EXPORT_NONE;
                pthread_mutex_unlock(&gen->priv->export_mu);
                cat_generation_release(gen);
                free(ej);
                return vt_error_set(err, VT_ERR_UNAVAILABLE, "export queue is full");
            }
        }
        if (!time_cond_wait(&gen->priv->export_cv, &gen->priv->export_mu, deadline_ms)) {
            pthread_mutex_unlock(&gen->priv->export_mu);
            return vt_error_set(err, VT_ERR_TIMEOUT, "request timed out");
        }
    }
    int fd = open(gen->priv->export_path, O_RDONLY | O_CLOEXEC);
    uint64_t size = gen->priv->export_size;
    pthread_mutex_unlock(&gen->priv->export_mu);
    if (fd < 0)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot open export: %s", strerror(errno));
    *out_fd = fd;
    *out_size = size;
    return VT_ERR_OK;
}

bool cat_export_try_open(struct cat_generation *gen, int *out_fd, uint64_t *out_size)
{
    *out_fd = -1;
    pthread_mutex_lock(&gen->priv->export_mu);
    int fd = gen->priv->export_state == CAT_EXPORT_READY
                 ? open(gen->priv->export_path, O_RDONLY | O_CLOEXEC)
                 : -1;
    uint64_t size = gen->priv->export_size;
    pthread_mutex_unlock(&gen->priv->export_mu);
    if (fd < 0)
        return false; /* (an open that failed gets its error from cat_export_open) */
    *out_fd = fd;
    *out_size = size;
    return true;
}

void cat_export_discard(struct cat_generation *gen)
{
    if (gen->priv->export_path) {
        unlink(gen->priv->export_path);
        free(gen->priv->export_path);
        gen->priv->export_path = NULL;
    }
}
