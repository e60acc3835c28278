/*
 * Dataset lifecycle operations behind the admin endpoints: reload one
 * dataset, reload-all (in topological order of depends_on), and registration
 * of a new dataset at runtime.
 */
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_internal.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

bool cat_has_dataset(struct cat_catalog *cat, const char *name)
{
    struct cat_dataset *ds = cat_dataset_get(cat, name);
    cat_dataset_put(ds);
    return ds != NULL;
}

enum vt_err cat_reload(struct cat_catalog *cat, const char *name, enum cat_refresh_source source,
                       struct cat_build_result **out_result, struct vt_error *err)
{
    *out_result = NULL;
    struct cat_dataset *ds = cat_dataset_get(cat, name);
    if (!ds)
        return vt_error_set(err, VT_ERR_DATASET_NOT_FOUND, "no dataset named \"%s\"", name);
    struct cat_build_result *r = cat_build_result_new();
    if (!r) {
        cat_dataset_put(ds);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    }
    bool queued = cat_build_async(cat, ds, source, r, false);
    cat_dataset_put(ds);
    if (!queued) {
        cat_build_result_put(r);
        return vt_error_set(err, VT_ERR_BUSY, "dataset %s is already building", name);
    }
    *out_result = r;
    return VT_ERR_OK;
}

enum vt_err cat_register_dataset(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                                 bool from_config, struct cat_build_result **out_result,
                                 struct vt_error *err)
{
    *out_result = NULL;
    struct vt_dataset_config inferred;
    if (cfg->kind == CFG_SOURCE_QUERY) {
        /* depends_on comes from the SQL (the gate), never from the body:
         * config datasets may read config datasets only. */
        if (config_dataset_copy(&inferred, cfg) != 0)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        if (cat_query_infer(cat, NULL, &inferred, from_config, err) != VT_ERR_OK) {
            config_dataset_free(&inferred);
            return err->code;
        }
        cfg = &inferred;
    }
    struct cat_dataset *ds = cat_dataset_new(cat, cfg, from_config);
    if (cfg == &inferred)
        config_dataset_free(&inferred);
    if (!ds)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    cfg = &ds->cfg; /* the copy (with the inferred depends_on) from here on */
    if (!cat_register(cat, ds)) {
        char taken[VT_MAX_DATASET_NAME_BYTES + 1] = "";
        cat_name_taken(cat, cfg->name, taken, sizeof taken);
        if (taken[0] && strcmp(taken, cfg->name) != 0)
            vt_error_set(err, VT_ERR_DATASET_EXISTS,
                         "a dataset named \"%s\" already exists (dataset names are "
                         "unique ignoring case)",
                         taken);
        else
            vt_error_set(err, VT_ERR_DATASET_EXISTS, "a dataset named \"%s\" already exists",
                         cfg->name);
        cat_dataset_put(ds);
        return VT_ERR_DATASET_EXISTS;
    }
    /* A dataset of the config file (a config reload) widens the roots with
     * its directory; what a request brings may reach only what the config
     * allows. */
    if (from_config)
        source_policy_add_dataset(cat->policy, cfg);
    if (!from_config && source_policy_check(cat->policy, cfg, err) != VT_ERR_OK) {
        cat_unregister(cat, ds);
        cat_dataset_put(ds);
        return err->code;
    }
    struct cat_build_result *r = cat_build_result_new();
    if (!r || !cat_build_async(cat, ds, CAT_REFRESH_MANUAL, r, true)) {
        vt_error_set(err, VT_ERR_UNAVAILABLE, "cannot queue the build of %s", cfg->name);
        cat_unregister(cat, ds);
        cat_dataset_put(ds);
        cat_build_result_put(r);
        return VT_ERR_UNAVAILABLE;
    }
    cat_dataset_put(ds);
    *out_result = r;
    return VT_ERR_OK;
}

enum vt_err cat_check_source(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                             struct vt_error *err)
{
    if (cfg->kind == CFG_SOURCE_QUERY)
        return VT_ERR_OK;
    if (source_policy_check(cat->policy, cfg, err) != VT_ERR_OK)
        return err->code;
    /* The listing step of a build (source_measure reads listings and logs,
     * downloads nothing); a source that fails it would fail registration. */
    struct source_context ctx = {.cache_dir = cat->cache_dir, .temp_dir = cat->temp_dir,
                                 .db = cat->db, .policy = cat->policy,
                                 .deadline_ms = time_mono_ms() + VT_SOURCE_CHECK_TIMEOUT_MS};
    int64_t bytes = 0;
    bool denied = false;
    enum vt_err rc = source_measure(cfg, &ctx, &bytes, &denied, err);
    if ((rc == VT_ERR_BUILD_FAILED || rc == VT_ERR_INTERNAL) && err)
        err->code = rc = VT_ERR_SOURCE_UNAVAILABLE;
    return rc;
}

/* ------------------------------------------------------------ reload-all */

struct wave {
    struct eng_job job;
    struct cat_catalog *cat;
    enum cat_refresh_source source;
    struct cat_dataset **items; /* referenced; build_queued reserved for the wave */
    int *level;
    size_t n;
};

/* Level of a dataset: 0 without dependencies, else 1 + the deepest dependency
 * that is part of this wave. Cycles are cut by the depth bound. */
static int level_of(struct wave *w, size_t i, int depth)
{
    if (w->level[i] >= 0)
        return w->level[i];
    int lvl = 0;
    const struct strvec *deps = &w->items[i]->cfg.depends_on;
    if (depth < 64) {
        for (size_t d = 0; d < deps->len; d++)
            for (size_t j = 0; j < w->n; j++)
                if (j != i && strcmp(w->items[j]->cfg.name, deps->items[d]) == 0) {
                    int l = level_of(w, j, depth + 1) + 1;
                    if (l > lvl)
                        lvl = l;
                }
    }
    w->level[i] = lvl;
    return lvl;
}

/* Runs the levels one after the other: every build of a level is queued on
 * the builder pool at once, and the next level starts when they all ended. */
static void wave_run(struct eng_job *job, duckdb_connection con)
{
    (void)con;
    struct wave *w = (struct wave *)job;
    int max_level = 0;
    for (size_t i = 0; i < w->n; i++)
        if (w->level[i] > max_level)
            max_level = w->level[i];
    for (int lvl = 0; lvl <= max_level; lvl++) {
        struct cat_build_result **results = calloc(w->n, sizeof *results);
        if (!results)
            break;
        for (size_t i = 0; i < w->n; i++) {
            if (w->level[i] != lvl)
                continue;
            results[i] = cat_build_result_new();
            /* build_queued was reserved when the wave was planned. */
            if (!results[i]) {
                pthread_mutex_lock(&w->items[i]->mu);
                cat_unmark_building(w->items[i]);
                pthread_mutex_unlock(&w->items[i]->mu);
            }
            if (!results[i] ||
                !cat_build_reserved(w->cat, w->items[i], w->source, results[i], false)) {
                cat_build_result_put(results[i]);
                results[i] = NULL;
                cat_startup_done(w->cat, w->items[i]);
            }
        }
        for (size_t i = 0; i < w->n; i++) {
            if (!results[i])
                continue;
            cat_build_result_wait(results[i], 0);
            cat_build_result_put(results[i]);
        }
        free(results);
    }
}

static void wave_done(struct eng_job *job)
{
    struct wave *w = (struct wave *)job;
    for (size_t i = 0; i < w->n; i++)
        cat_dataset_put(w->items[i]);
    free(w->items);
    free(w->level);
    free(w);
}

/* Queues a wave over `items` (referenced, with build_queued reserved); takes
 * ownership of the array. On failure the reservations are undone. */
static void submit_wave(struct cat_catalog *cat, struct wave *w)
{
    for (size_t i = 0; i < w->n; i++)
        level_of(w, i, 0);
    w->job.run = wave_run;
    w->job.done = wave_done;
    if (w->n == 0 || !eng_pool_submit(cat->coordinator, &w->job)) {
        for (size_t i = 0; i < w->n; i++) {
            pthread_mutex_lock(&w->items[i]->mu);
            cat_unmark_building(w->items[i]);
            pthread_mutex_unlock(&w->items[i]->mu);
            cat_startup_done(cat, w->items[i]);
        }
        if (w->n)
            log_error("cannot queue a build wave");
        wave_done(&w->job);
    }
}

void cat_start_builds(struct cat_catalog *cat, struct cat_dataset **items, size_t n,
                      enum cat_refresh_source source)
{
    struct wave *w = calloc(1, sizeof *w);
    int *level = calloc(n ? n : 1, sizeof *level);
    if (!w || !level) {
        free(w);
        free(level);
        for (size_t i = 0; i < n; i++) {
            pthread_mutex_lock(&items[i]->mu);
            cat_unmark_building(items[i]);
            pthread_mutex_unlock(&items[i]->mu);
            cat_dataset_put(items[i]);
        }
        free(items);
        return;
    }
    for (size_t i = 0; i < n; i++)
        level[i] = -1;
    w->cat = cat;
    w->source = source;
    w->items = items;
    w->level = level;
    w->n = n;
    submit_wave(cat, w);
}

void cat_reload_all(struct cat_catalog *cat, struct strvec *out_enqueued,
                    struct strvec *out_skipped)
{
    memset(out_enqueued, 0, sizeof *out_enqueued);
    memset(out_skipped, 0, sizeof *out_skipped);
    struct wave *w = calloc(1, sizeof *w);
    if (!w)
        return;
    w->cat = cat;
    w->source = CAT_REFRESH_MANUAL;
    pthread_rwlock_rdlock(&cat->lock);
    w->items = calloc(cat->n ? cat->n : 1, sizeof *w->items);
    w->level = calloc(cat->n ? cat->n : 1, sizeof *w->level);
    for (size_t i = 0; w->items && w->level && i < cat->n; i++) {
        struct cat_dataset *ds = cat->items[i];
        pthread_mutex_lock(&ds->mu);
        bool excluded = ds->state == CAT_PENDING && !ds->build_queued &&
                        (ds->cfg.on_start == CFG_ON_START_LAZY ||
                         ds->cfg.on_start == CFG_ON_START_SKIP);
        bool busy = ds->build_queued || ds->building || ds->state == CAT_BUILDING;
        if (!excluded && !busy)
            cat_mark_building(ds); /* reserved for this wave */
        pthread_mutex_unlock(&ds->mu);
        if (excluded)
            continue;
        if (busy) {
            strvec_push(out_skipped, ds->cfg.name);
            continue;
        }
        atomic_fetch_add(&ds->refs, 1);
        w->items[w->n] = ds;
        w->level[w->n] = -1;
        w->n++;
    }
    pthread_rwlock_unlock(&cat->lock);
    for (size_t i = 0; i < w->n; i++)
        level_of(w, i, 0);
    /* Report in build order. */
    for (int lvl = 0; (size_t)lvl <= w->n; lvl++)
        for (size_t i = 0; i < w->n; i++)
            if (w->level[i] == lvl)
                strvec_push(out_enqueued, w->items[i]->cfg.name);
    submit_wave(cat, w);
}
