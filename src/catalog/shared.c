/*
 * The catalog's side of the cluster (src/cluster): the hooks a writer and a
 * reader plug in, importing a generation another process built (its Parquet
 * files loaded into a table, or served as a view), datasets registered from
 * the shared catalog without a build, and the previous generation kept for
 * reads pinned with ?generation=.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog_internal.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

void cat_set_hooks(struct cat_catalog *cat, const struct cat_hooks *hooks)
{
    cat->hooks = *hooks;
    /* A reader knows its datasets only once it has read the shared catalog. */
    atomic_store(&cat->names_unknown, hooks->no_builds);
}

bool cat_names_known(struct cat_catalog *cat)
{
    return !atomic_load(&cat->names_unknown);
}

void cat_set_names_known(struct cat_catalog *cat, bool known)
{
    atomic_store(&cat->names_unknown, !known);
}

enum vt_err cat_unknown_name(struct cat_catalog *cat, const char *name, struct vt_error *err)
{
    if (!cat_names_known(cat))
        return vt_error_set(err, VT_ERR_DATASET_NOT_READY,
                            "this replica has not read the shared catalog yet; retry");
    return vt_error_set(err, VT_ERR_DATASET_NOT_FOUND, "no dataset named \"%s\"",
                        name ? name : "");
}

void cat_import_release(struct cat_import *imp)
{
    strvec_free(&imp->files);
    strvec_free(&imp->cast_names);
    strvec_free(&imp->cast_types);
    if (imp->lazy_source) {
        config_dataset_free(imp->lazy_source);
        free(imp->lazy_source);
        imp->lazy_source = NULL;
    }
    if (imp->export_file) { /* not handed to a generation: nobody else removes it */
        unlink(imp->export_file);
        free(imp->export_file);
        imp->export_file = NULL;
    }
    free(imp->export_remote);
    imp->export_remote = NULL;
}

enum vt_err cat_import_files(struct cat_catalog *cat, duckdb_connection con,
                             struct cat_generation *gen, const struct cat_import *imp,
                             struct vt_error *err)
{
    if (imp->files.len == 0)
        return vt_error_set(err, VT_ERR_BUILD_FAILED, "generation %s has no files", imp->id);
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "SELECT *");
    if (imp->cast_names.len) {
        sb_adds(&sql, " REPLACE (");
        for (size_t i = 0; i < imp->cast_names.len && i < imp->cast_types.len; i++) {
            if (i)
                sb_adds(&sql, ", ");
            sb_adds(&sql, "CAST(");
            sb_add_sql_ident(&sql, imp->cast_names.items[i]);
            sb_addf(&sql, " AS %s) AS ", imp->cast_types.items[i]);
            sb_add_sql_ident(&sql, imp->cast_names.items[i]);
        }
        sb_adds(&sql, ")");
    }
    sb_adds(&sql, " FROM read_parquet([");
    for (size_t i = 0; i < imp->files.len; i++) {
        if (i)
            sb_adds(&sql, ", ");
        sb_add_sql_string(&sql, imp->files.items[i]);
    }
    sb_adds(&sql, "])");
    enum vt_err rc = sql.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL) : VT_ERR_OK;
    if (!rc)
        rc = cat_attach_generation(cat, con, gen, !imp->lazy, err);
    if (!rc)
        rc = cat_create_relation(con, gen, imp->lazy, sql.buf, err);
    if (!rc && !imp->lazy)
        rc = cat_checkpoint_generation(con, gen, err);
    if (!rc) {
        gen->lazy = imp->lazy;
        int64_t bytes = 0;
        for (size_t i = 0; i < imp->files.len; i++) {
            FILE *f = fopen(imp->files.items[i], "rb");
            if (f) {
                if (fseeko(f, 0, SEEK_END) == 0)
                    bytes += (int64_t)ftello(f);
                fclose(f);
            }
        }
        gen->priv->source_bytes = bytes;
    }
    sb_release(&sql);
    return rc;
}

/* Crockford base32, 26 characters: what a generation id looks like. */
static bool valid_generation_id(const char *id)
{
    if (strlen(id) != 26)
        return false;
    for (const char *p = id; *p; p++)
        if (!strchr("0123456789ABCDEFGHJKMNPQRSTVWXYZ", *p))
            return false;
    return true;
}

struct cat_generation *cat_dataset_acquire_id(struct cat_dataset *ds, const char *id,
                                              int64_t deadline_ms, struct vt_error *err)
{
    if (!id)
        return cat_dataset_acquire(ds, deadline_ms, err);
    if (!valid_generation_id(id)) {
        vt_error_set(err, VT_ERR_INVALID_QUERY,
                     "generation: expected a generation id (26 characters, as in "
                     "X-Dataset-Generation)");
        return NULL;
    }
    struct cat_generation *gen = NULL;
    pthread_mutex_lock(&ds->mu);
    struct cat_generation *cur = ds->current, *prev = ds->previous;
    if (prev && time_mono_ms() >= ds->previous_until_ms)
        prev = NULL; /* past its time (dropped at the next sweep) */
    if (cur && strcmp(cur->id, id) == 0)
        gen = cur;
    else if (prev && strcmp(prev->id, id) == 0)
        gen = prev;
    if (gen) {
        atomic_fetch_add(&gen->priv->refs, 1);
    } else if (!cur || strcmp(id, cur->id) > 0) {
        /* ULIDs sort by time: a newer one is not here yet. */
        vt_error_set(err, VT_ERR_GENERATION_NOT_AVAILABLE,
                     "dataset %s: generation %s is not loaded on this replica yet (current: %s)",
                     ds->cfg.name, id, cur ? cur->id : "none");
    } else {
        vt_error_set(err, VT_ERR_GENERATION_GONE,
                     "dataset %s: generation %s was replaced and is no longer kept (current: "
                     "%s)",
                     ds->cfg.name, id, cur->id);
    }
    pthread_mutex_unlock(&ds->mu);
    return gen;
}

void cat_expire_previous(struct cat_catalog *cat)
{
    int64_t now = time_mono_ms();
    pthread_rwlock_rdlock(&cat->lock);
    for (size_t i = 0; i < cat->n; i++) {
        struct cat_dataset *ds = cat->items[i];
        struct cat_generation *drop = NULL;
        pthread_mutex_lock(&ds->mu);
        if (ds->previous && now >= ds->previous_until_ms) {
            drop = ds->previous;
            ds->previous = NULL;
        }
        pthread_mutex_unlock(&ds->mu);
        cat_generation_release(drop); /* queued to the janitor when it was the last */
    }
    pthread_rwlock_unlock(&cat->lock);
}

const char *cat_generation_source_version(const struct cat_generation *gen)
{
    return gen->priv->source_version;
}

int64_t cat_generation_build_ms(const struct cat_generation *gen)
{
    return gen->priv->build_ms;
}

void cat_generation_set_export(struct cat_generation *gen, const char *path, uint64_t size)
{
    char *copy = strdup(path);
    pthread_mutex_lock(&gen->priv->export_mu);
    if (copy && gen->priv->export_state == CAT_EXPORT_NONE && !gen->priv->export_path) {
        gen->priv->export_path = copy;
        gen->priv->export_size = size;
        gen->priv->export_state = CAT_EXPORT_READY;
        copy = NULL;
    }
    pthread_mutex_unlock(&gen->priv->export_mu);
    if (copy) { /* an export exists already: this file is not needed */
        unlink(copy);
        free(copy);
    }
}

enum vt_err cat_register_remote(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                                enum cat_saved saved, struct vt_error *err)
{
    struct cat_dataset *ds = cat_dataset_new(cat, cfg, saved == CAT_SAVED_NONE);
    if (!ds)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    ds->saved = saved;
    bool ok = cat_register(cat, ds);
    cat_dataset_put(ds);
    if (!ok)
        return vt_error_set(err, VT_ERR_DATASET_EXISTS, "a dataset named \"%s\" already exists",
                            cfg->name);
    return VT_ERR_OK;
}

bool cat_unregister_name(struct cat_catalog *cat, const char *name)
{
    struct cat_dataset *ds = cat_dataset_get(cat, name);
    if (!ds)
        return false;
    bool found = cat_unregister(cat, ds);
    cat_dataset_put(ds);
    return found;
}

bool cat_current_id(struct cat_catalog *cat, const char *name, char out[27])
{
    out[0] = '\0';
    struct cat_dataset *ds = cat_dataset_get(cat, name);
    if (!ds)
        return false;
    pthread_mutex_lock(&ds->mu);
    if (ds->current)
        memcpy(out, ds->current->id, 27);
    pthread_mutex_unlock(&ds->mu);
    cat_dataset_put(ds);
    return out[0] != '\0';
}

enum cat_saved cat_dataset_saved(struct cat_dataset *ds)
{
    return ds->saved;
}

bool cat_dataset_from_config(const struct cat_dataset *ds)
{
    return ds->from_config;
}

int cat_dataset_config(struct cat_dataset *ds, struct vt_dataset_config *out)
{
    pthread_mutex_lock(&ds->mu);
    int rc = config_dataset_copy(out, &ds->cfg);
    pthread_mutex_unlock(&ds->mu);
    return rc;
}

void cat_names(struct cat_catalog *cat, struct strvec *out)
{
    memset(out, 0, sizeof *out);
    pthread_rwlock_rdlock(&cat->lock);
    for (size_t i = 0; i < cat->n; i++)
        strvec_push(out, cat->items[i]->cfg.name);
    pthread_rwlock_unlock(&cat->lock);
}
