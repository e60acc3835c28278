/*
 * Query datasets and saved queries in the catalog (see catalog.h):
 *
 *  - depends_on inferred from the SQL by the gate (src/sql), with the rule
 *    that config datasets read config datasets only, and cycles refused;
 *  - a bind check of new SQL over the current generations of its upstreams
 *    (POST /queries answers a column that does not exist with a 400 rather
 *    than a failed build);
 *  - registration of saved queries (kind temp or query, ttl), their removal
 *    (refused while other datasets depend on them), the ttl expiry, and the
 *    listing of GET /api/v1/queries.
 *
 * Registration and removal take cat->lock for writing around both the check
 * (name free / no dependents, upstreams still there) and the change, so a
 * DELETE of an upstream and a POST of a query reading it cannot both win.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_internal.h"
#include "sql/sql.h"
#include "util/limits.h"
#include "util/log.h"

const char *cat_saved_name(enum cat_saved k)
{
    switch (k) {
    case CAT_SAVED_TEMP: return "temp";
    case CAT_SAVED_QUERY: return "query";
    case CAT_SAVED_NONE: break;
    }
    return NULL;
}

/* ------------------------------------------------------------ inference */

struct infer_ctx {
    struct cat_catalog *cat;
    bool config_only;
    const char *runtime_hit;    /* a runtime dataset a config dataset tried to read */
    char hit[VT_MAX_DATASET_NAME_BYTES + 1];
};

static bool infer_is_dataset(void *p, const char *name)
{
    struct infer_ctx *c = p;
    pthread_rwlock_rdlock(&c->cat->lock);
    struct cat_dataset *ds = cat_find_locked(c->cat, name);
    bool ok = ds && (!c->config_only || ds->from_config);
    if (ds && !ok && !c->runtime_hit) {
        snprintf(c->hit, sizeof c->hit, "%s", name);
        c->runtime_hit = c->hit;
    }
    pthread_rwlock_unlock(&c->cat->lock);
    return ok;
}

/* sql_has_cycle's view of the graph: the catalog's depends_on, except for
 * the dataset being checked, whose edges are the candidate's. */
struct cycle_ctx {
    struct cat_catalog *cat;    /* cat->lock held for reading */
    const char *name;
    const struct strvec *deps;  /* NULL: the catalog's */
};

static void cycle_deps(void *p, const char *name, const char *const **out_list, size_t *out_n)
{
    struct cycle_ctx *c = p;
    *out_list = NULL;
    *out_n = 0;
    if (c->deps && !strcmp(name, c->name)) {
        *out_list = (const char *const *)c->deps->items;
        *out_n = c->deps->len;
        return;
    }
    struct cat_dataset *ds = cat_find_locked(c->cat, name);
    if (ds && ds->cfg.kind == CFG_SOURCE_QUERY) {
        *out_list = (const char *const *)ds->cfg.depends_on.items;
        *out_n = ds->cfg.depends_on.len;
    }
}

static bool has_cycle(struct cat_catalog *cat, const char *name, const struct strvec *deps,
                      char *path, size_t cap)
{
    struct cycle_ctx c = {.cat = cat, .name = name, .deps = deps};
    pthread_rwlock_rdlock(&cat->lock);
    bool cycle = sql_has_cycle(name, cycle_deps, &c, path, cap);
    pthread_rwlock_unlock(&cat->lock);
    return cycle;
}

bool cat_query_cycle(struct cat_catalog *cat, const char *name, char *path, size_t cap)
{
    return has_cycle(cat, name, NULL, path, cap);
}

enum vt_err cat_query_infer(struct cat_catalog *cat, duckdb_connection con,
                            struct vt_dataset_config *cfg, bool config_only, struct vt_error *err)
{
    duckdb_connection own = NULL;
    if (!con)
        con = eng_worker_connection();
    if (!con) {
        if (duckdb_connect(cat->db, &own) != DuckDBSuccess)
            return vt_error_set(err, VT_ERR_INTERNAL, "cannot connect to DuckDB");
        con = own;
    }
    struct infer_ctx ctx = {.cat = cat, .config_only = config_only};
    struct sql_checked chk;
    struct vt_error gerr = {0};
    enum vt_err rc = sql_gate_check(con, cfg->sql, infer_is_dataset, &ctx, &chk, &gerr);
    if (own) {
        sql_gate_forget(own);
        duckdb_disconnect(&own);
    }
    if (rc == VT_ERR_SQL_UNKNOWN_TABLE && ctx.runtime_hit)
        return vt_error_set(err, rc,
                            "config datasets cannot depend on runtime datasets: \"%s\" was "
                            "created at runtime (POST /api/v1/queries or /datasets)",
                            ctx.runtime_hit);
    if (rc != VT_ERR_OK)
        return vt_error_set(err, rc, "%s", vt_error_message(&gerr));
    struct strvec deps = {0};
    for (size_t i = 0; i < chk.n_depends_on; i++)
        if (strvec_push(&deps, chk.depends_on[i]) != 0) {
            strvec_free(&deps);
            sql_checked_release(&chk);
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        }
    sql_checked_release(&chk);
    char path[512];
    if (has_cycle(cat, cfg->name, &deps, path, sizeof path)) {
        strvec_free(&deps);
        return vt_error_set(err, VT_ERR_DEPENDENCY_CYCLE, "dependency cycle: %s", path);
    }
    strvec_free(&cfg->depends_on);
    cfg->depends_on = deps;
    return VT_ERR_OK;
}

/* ------------------------------------------------------------- describe */

static bool has_column(duckdb_prepared_statement ps, idx_t n, const char *col)
{
    bool found = false;
    for (idx_t i = 0; i < n && !found; i++) {
        const char *name = duckdb_prepared_statement_column_name(ps, i);
        found = name && !strcmp(name, col);
        duckdb_free((void *)name); /* DuckDB 1.4 returns a copy */
    }
    return found;
}

enum vt_err cat_query_describe(struct cat_catalog *cat, duckdb_connection con,
                               const struct vt_dataset_config *cfg, int64_t deadline_ms,
                               struct vt_error *err)
{
    if (!con && !(con = eng_worker_connection()))
        return vt_error_set(err, VT_ERR_INTERNAL, "no connection to describe the query on");
    struct cat_upstreams ups = {0};
    enum vt_err rc = cat_bind_upstreams(cat, con, cfg, deadline_ms, &ups, err);
    if (rc)
        return rc;
    /* The statement as written first (DuckDB's message then points into the
     * client's text), then as the build runs it (wrapped, sorted). */
    duckdb_prepared_statement ps = NULL;
    if (duckdb_prepare(con, cfg->sql, &ps) != DuckDBSuccess)
        rc = vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", duckdb_prepare_error(ps));
    duckdb_destroy_prepare(&ps);
    struct strbuf sql;
    sb_init(&sql, 0);
    if (!rc)
        rc = cat_query_select_sql(cfg, false, &sql, err);
    char text[VT_ERROR_MSG_MAX];
    if (!rc && duckdb_prepare(con, sql.buf, &ps) != DuckDBSuccess)
        rc = vt_error_set(err, VT_ERR_QUERY_FAILED, "%s",
                          /* the client's text starts on line 2 of the wrapping */
                          eng_error_excerpt(duckdb_prepare_error(ps), cfg->sql, 2, text,
                                            sizeof text));
    if (!rc) {
        idx_t n = duckdb_prepared_statement_column_count(ps);
        const struct strvec *sort = &cfg->materialize.sort_by;
        for (size_t i = 0; !rc && i < sort->len; i++)
            if (!has_column(ps, n, sort->items[i]))
                rc = vt_error_set(err, VT_ERR_UNKNOWN_COLUMN,
                                  "materialize.sort_by: the query returns no column \"%s\"",
                                  sort->items[i]);
        const struct strvec *idx = &cfg->index_columns;
        for (size_t i = 0; !rc && cfg->index_mode == CFG_INDEX_LIST && i < idx->len; i++)
            if (!has_column(ps, n, idx->items[i]))
                rc = vt_error_set(err, VT_ERR_UNKNOWN_COLUMN,
                                  "index.columns: the query returns no column \"%s\"",
                                  idx->items[i]);
    }
    duckdb_destroy_prepare(&ps);
    sb_release(&sql);
    cat_unbind_upstreams(con, &ups);
    return rc;
}

/* --------------------------------------------------------- registration */

enum vt_err cat_register_saved(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                               const struct cat_saved_opts *opts,
                               struct cat_build_result **out_result, struct vt_error *err)
{
    *out_result = NULL;
    struct cat_dataset *ds = cat_dataset_new(cat, cfg, false);
    struct cat_build_result *r = ds ? cat_build_result_new() : NULL;
    if (!r) {
        cat_dataset_put(ds);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    }
    ds->saved = opts->kind;
    ds->ttl_ms = opts->ttl_ms;
    enum vt_err rc = VT_ERR_OK;
    pthread_rwlock_wrlock(&cat->lock);
    struct cat_dataset *taken = cat_find_ci_locked(cat, cfg->name);
    if (taken) {
        rc = strcmp(taken->cfg.name, cfg->name) != 0
                 ? vt_error_set(err, VT_ERR_NAME_TAKEN,
                                "a dataset named \"%s\" already exists (names are unique "
                                "ignoring case)",
                                taken->cfg.name)
                 : vt_error_set(err, VT_ERR_NAME_TAKEN, "a dataset named \"%s\" already exists",
                                cfg->name);
    }
    for (size_t i = 0; !rc && i < cfg->depends_on.len; i++) {
        struct cat_dataset *up = cat_find_locked(cat, cfg->depends_on.items[i]);
        if (!up)
            rc = vt_error_set(err, VT_ERR_SQL_UNKNOWN_TABLE,
                              "no dataset named \"%s\" (it was removed meanwhile)",
                              cfg->depends_on.items[i]);
        /* A "query" comes back after a restart; what it reads must too. */
        else if (opts->kind == CAT_SAVED_QUERY && !up->from_config &&
                 up->saved != CAT_SAVED_QUERY)
            rc = vt_error_set(err, VT_ERR_INVALID_FIELD,
                              "kind: a saved query of kind \"query\" is kept across restarts, "
                              "but \"%s\" is not (%s): save this one as \"temp\", or that one "
                              "as \"query\"",
                              up->cfg.name,
                              up->saved == CAT_SAVED_TEMP ? "a temp saved query"
                                                          : "registered at runtime");
    }
    if (!rc && cat->n == cat->cap) {
        size_t cap = cat->cap ? cat->cap * 2 : 16;
        struct cat_dataset **p = realloc(cat->items, cap * sizeof *p);
        if (p) {
            cat->items = p;
            cat->cap = cap;
        } else {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        }
    }
    if (!rc) {
        cat->items[cat->n++] = ds;
        atomic_fetch_add(&ds->refs, 1);
        ds->registered = true;
        atomic_fetch_add(&cat->names_epoch, 1);
    }
    pthread_rwlock_unlock(&cat->lock);
    if (rc) {
        cat_dataset_put(ds);
        cat_build_result_put(r);
        return rc;
    }
    struct cat_build_opts bo = {.source = CAT_REFRESH_MANUAL, .result = r,
                                .unregister_on_failure = opts->remove_on_failure,
                                .deadline_ms = opts->deadline_ms};
    if (!cat_build_start(cat, ds, &bo)) {
        cat_unregister(cat, ds);
        cat_dataset_put(ds);
        cat_build_result_put(r);
        return vt_error_set(err, VT_ERR_UNAVAILABLE, "cannot queue the build of %s", cfg->name);
    }
    if (opts->ttl_ms > 0)
        cat_scheduler_arm(cat->sched, cfg->name, CAT_TIMER_EXPIRE, opts->ttl_ms);
    log_info("saved query %s (%s) registered%s", cfg->name, cat_saved_name(opts->kind),
             opts->ttl_ms > 0 ? " with a ttl" : "");
    cat_dataset_put(ds);
    *out_result = r;
    return VT_ERR_OK;
}

/* ------------------------------------------------------------- removal */

/* Removes `name` (a saved query) unless others depend on it. With `expiry`,
 * a dataset with dependents is marked expired instead (removed when its last
 * dependent goes). */
static enum vt_err remove_saved(struct cat_catalog *cat, const char *name, bool expiry,
                                struct strvec *out_dependents, enum cat_saved *out_kind,
                                struct vt_error *err)
{
    struct strvec dependents = {0};
    enum vt_err rc = VT_ERR_OK;
    pthread_rwlock_wrlock(&cat->lock);
    struct cat_dataset *ds = cat_find_locked(cat, name);
    if (!ds) {
        rc = vt_error_set(err, VT_ERR_DATASET_NOT_FOUND, "no dataset named \"%s\"", name);
    } else if (ds->saved == CAT_SAVED_NONE) {
        rc = vt_error_set(err, VT_ERR_NOT_DELETABLE,
                          ds->from_config
                              ? "dataset %s comes from the config file; only datasets created "
                                "through POST /api/v1/queries can be deleted"
                              : "dataset %s was registered through POST /api/v1/datasets; only "
                                "datasets created through POST /api/v1/queries can be deleted",
                          name);
    } else {
        for (size_t i = 0; i < cat->n; i++) {
            struct cat_dataset *d = cat->items[i];
            if (d != ds && strvec_find(&d->cfg.depends_on, name) >= 0)
                strvec_push(&dependents, d->cfg.name);
        }
        if (dependents.len) {
            if (expiry)
                ds->expired = true;
            rc = vt_error_set(err, VT_ERR_HAS_DEPENDENTS, "%zu dataset%s depend%s on %s",
                              dependents.len, dependents.len == 1 ? "" : "s",
                              dependents.len == 1 ? "s" : "", name);
        } else {
            if (out_kind)
                *out_kind = ds->saved;
            cat_unregister_locked(cat, ds);
        }
    }
    /* Upstreams whose ttl passed while this one depended on them may go now. */
    struct strvec freed = {0};
    if (rc == VT_ERR_OK)
        for (size_t i = 0; i < ds->cfg.depends_on.len; i++) {
            struct cat_dataset *up = cat_find_locked(cat, ds->cfg.depends_on.items[i]);
            if (up && up->expired)
                strvec_push(&freed, up->cfg.name);
        }
    pthread_rwlock_unlock(&cat->lock);
    if (rc == VT_ERR_OK) {
        cat_unregistered(cat, ds);
        for (size_t i = 0; i < freed.len; i++)
            cat_scheduler_arm(cat->sched, freed.items[i], CAT_TIMER_EXPIRE, 0);
    }
    strvec_free(&freed);
    if (out_dependents)
        *out_dependents = dependents;
    else
        strvec_free(&dependents);
    return rc;
}

enum vt_err cat_remove_saved(struct cat_catalog *cat, const char *name,
                             struct strvec *out_dependents, enum cat_saved *out_kind,
                             struct vt_error *err)
{
    if (out_dependents)
        memset(out_dependents, 0, sizeof *out_dependents);
    enum vt_err rc = remove_saved(cat, name, false, out_dependents, out_kind, err);
    if (rc == VT_ERR_OK)
        log_info("saved query %s deleted", name);
    return rc;
}

void cat_expire(void *ctx, struct cat_dataset *ds)
{
    struct cat_catalog *cat = ctx;
    const char *name = cat_dataset_name(ds);
    struct strvec deps = {0};
    struct vt_error err = {0};
    enum vt_err rc = remove_saved(cat, name, true, &deps, NULL, &err);
    if (rc == VT_ERR_OK) {
        log_info("saved query %s expired (ttl) and was removed", name);
    } else if (rc == VT_ERR_HAS_DEPENDENTS) {
        struct strbuf list;
        sb_init(&list, 1024);
        for (size_t i = 0; i < deps.len; i++)
            sb_addf(&list, "%s%s", i ? ", " : "", deps.items[i]);
        log_warn("saved query %s: ttl expired, but %s depend%s on it: kept until %s removed",
                 name, list.buf ? list.buf : "", deps.len == 1 ? "s" : "",
                 deps.len == 1 ? "it is" : "they are");
        sb_release(&list);
    }
    strvec_free(&deps);
}

/* ------------------------------------------------------------- listing */

static void fill_summary(struct cat_dataset *ds, struct cat_saved_summary *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ds->mu);
    out->name = strdup(ds->cfg.name);
    out->kind = ds->saved;
    out->state = ds->state;
    strvec_copy(&out->depends_on, &ds->cfg.depends_on);
    out->rows = ds->current ? ds->current->rows : 0;
    pthread_mutex_unlock(&ds->mu);
}

size_t cat_saved_list(struct cat_catalog *cat, struct cat_saved_summary **out)
{
    pthread_rwlock_rdlock(&cat->lock);
    struct cat_saved_summary *list = calloc(cat->n ? cat->n : 1, sizeof *list);
    size_t n = 0;
    for (size_t i = 0; list && i < cat->n; i++)
        if (cat->items[i]->saved != CAT_SAVED_NONE)
            fill_summary(cat->items[i], &list[n++]);
    pthread_rwlock_unlock(&cat->lock);
    *out = list;
    return n;
}

bool cat_saved_of(struct cat_catalog *cat, const char *name, struct cat_saved_summary *out)
{
    struct cat_dataset *ds = cat_dataset_get(cat, name);
    if (!ds)
        return false;
    fill_summary(ds, out);
    cat_dataset_put(ds);
    return true;
}

void cat_saved_list_free(struct cat_saved_summary *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i].name);
        strvec_free(&list[i].depends_on);
    }
    free(list);
}
