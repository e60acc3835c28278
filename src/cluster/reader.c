/*
 * The reader's half of the cluster: it never opens a source. Its thread
 * polls the shared catalog and every dataset's CURRENT with If-None-Match
 * (an unchanged object costs a 304), registers and unregisters datasets as
 * the writer does, and imports each new generation through a catalog build
 * (cat_hooks.import), which swaps it in atomically as a reload does. A
 * failed import keeps the last good generation and is retried with backoff.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/cluster_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

static struct cl_ds *find_ds(struct cluster *c, const char *name)
{
    for (size_t i = 0; i < c->n_ds; i++)
        if (strcmp(c->ds[i].name, name) == 0)
            return &c->ds[i];
    return NULL;
}

static void ds_release(struct cl_ds *d)
{
    if (d->has_manifest)
        cluster_manifest_release(&d->manifest);
    d->has_manifest = false;
    cat_build_result_put(d->pending);
    d->pending = NULL;
}

static enum cat_saved saved_of(const char *s)
{
    if (s && strcmp(s, "temp") == 0)
        return CAT_SAVED_TEMP;
    if (s && strcmp(s, "query") == 0)
        return CAT_SAVED_QUERY;
    return CAT_SAVED_NONE;
}

/* The shared catalog changed: register what is new, drop what is gone. */
static void reconcile(struct cluster *c, json_t *root)
{
    const char *wurl = json_string_value(json_object_get(json_object_get(root, "writer"), "url"));
    json_t *list = json_object_get(root, "datasets");
    pthread_mutex_lock(&c->mu);
    if (wurl)
        snprintf(c->writer_seen, sizeof c->writer_seen, "%s", wurl);
    for (size_t i = 0; i < c->n_ds; i++)
        c->ds[i].seen = false;
    pthread_mutex_unlock(&c->mu);
    size_t idx;
    json_t *it;
    json_array_foreach(list, idx, it) {
        const char *name = json_string_value(json_object_get(it, "name"));
        const char *toml = json_string_value(json_object_get(it, "toml"));
        if (!name || !toml)
            continue;
        pthread_mutex_lock(&c->mu);
        struct cl_ds *d = find_ds(c, name);
        if (d)
            d->seen = true;
        pthread_mutex_unlock(&c->mu);
        if (d)
            continue;
        struct vt_dataset_config *cfgs = NULL;
        size_t n = 0;
        struct vt_error err = {0};
        if (config_load_datasets_text(toml, strlen(toml), "catalog.json", &cfgs, &n, &err) !=
                VT_ERR_OK ||
            n != 1 || strcmp(cfgs[0].name, name) != 0) {
            log_warn("cluster: dataset %s of the shared catalog does not read: %s", name,
                     err.code ? vt_error_message(&err) : "not one [[dataset]] block");
        } else if (cat_register_remote(c->cat, &cfgs[0],
                                       saved_of(json_string_value(json_object_get(it, "saved"))),
                                       &err) != VT_ERR_OK &&
                   err.code != VT_ERR_DATASET_EXISTS) {
            log_warn("cluster: cannot register %s: %s", name, vt_error_message(&err));
        } else {
            pthread_mutex_lock(&c->mu);
            if (c->n_ds == c->cap_ds) {
                size_t cap = c->cap_ds ? c->cap_ds * 2 : 16;
                struct cl_ds *p = realloc(c->ds, cap * sizeof *p);
                if (p) {
                    c->ds = p;
                    c->cap_ds = cap;
                }
            }
            if (c->n_ds < c->cap_ds) {
                struct cl_ds *nd = &c->ds[c->n_ds++];
                memset(nd, 0, sizeof *nd);
                snprintf(nd->name, sizeof nd->name, "%s", name);
                nd->seen = true;
            }
            pthread_mutex_unlock(&c->mu);
            log_info("cluster: dataset %s registered from the shared catalog", name);
        }
        for (size_t k = 0; k < n; k++)
            config_dataset_free(&cfgs[k]);
        free(cfgs);
    }
    /* Gone from the writer: gone here (requests in flight finish on the
     * generation they hold). */
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_ds;) {
        if (c->ds[i].seen) {
            i++;
            continue;
        }
        char name[VT_MAX_DATASET_NAME_BYTES + 1];
        snprintf(name, sizeof name, "%s", c->ds[i].name);
        ds_release(&c->ds[i]);
        c->ds[i] = c->ds[--c->n_ds];
        pthread_mutex_unlock(&c->mu);
        cat_unregister_name(c->cat, name);
        log_info("cluster: dataset %s removed (no longer in the shared catalog)", name);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
}

static void poll_catalog(struct cluster *c, struct s3_client *s3)
{
    char *key = cl_key(c, NULL, "catalog.json");
    if (!key)
        return;
    char *buf = NULL, *etag = NULL;
    size_t len = 0;
    struct s3_outcome oc;
    struct vt_error err = {0};
    enum vt_err rc = s3_get_if_changed(s3, c->bucket, key,
                                       c->catalog_etag[0] ? c->catalog_etag : NULL,
                                       VT_CLUSTER_MAX_CATALOG_BYTES, &buf, &len, &etag, &oc, &err);
    free(key);
    if (rc != VT_ERR_OK) {
        if (!oc.not_found)
            log_warn("cluster: cannot read the shared catalog: %s", vt_error_message(&err));
        free(etag);
        return;
    }
    if (oc.not_modified)
        return;
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    free(buf);
    if (!root || !json_is_array(json_object_get(root, "datasets"))) {
        log_warn("cluster: the shared catalog is not a catalog document");
        json_decref(root);
        free(etag);
        return;
    }
    reconcile(c, root);
    json_decref(root);
    pthread_mutex_lock(&c->mu);
    snprintf(c->catalog_etag, sizeof c->catalog_etag, "%s", etag ? etag : "");
    c->catalog_seen = true;
    pthread_mutex_unlock(&c->mu);
    cat_set_names_known(c->cat, true);
    free(etag);
}

/* One dataset: the end of a running import, then CURRENT, then a new
 * import when CURRENT names a generation this process does not serve. */
static void poll_dataset(struct cluster *c, struct s3_client *s3, size_t i)
{
    pthread_mutex_lock(&c->mu);
    struct cl_ds *d = &c->ds[i];
    char name[VT_MAX_DATASET_NAME_BYTES + 1];
    snprintf(name, sizeof name, "%s", d->name);
    if (d->pending) {
        struct cat_build_result *r = d->pending;
        pthread_mutex_lock(&r->mu);
        bool finished = r->finished, ok = r->ok;
        struct vt_error rerr = r->err;
        pthread_mutex_unlock(&r->mu);
        if (finished) {
            d->pending = NULL;
            if (ok) {
                memcpy(d->loaded_id, d->importing_id, 27);
                d->backoff_ms = 0;
                d->next_try_ms = 0;
            } else {
                d->backoff_ms = d->backoff_ms ? d->backoff_ms * 2 : VT_CLUSTER_RETRY_MIN_MS;
                if (d->backoff_ms > VT_CLUSTER_RETRY_MAX_MS)
                    d->backoff_ms = VT_CLUSTER_RETRY_MAX_MS;
                d->next_try_ms = time_mono_ms() + d->backoff_ms;
                log_warn("cluster: import of generation %s of %s failed: %s (the last good "
                         "generation keeps serving; retry in %lld ms)",
                         d->importing_id, name, vt_error_message(&rerr),
                         (long long)d->backoff_ms);
            }
            cat_build_result_put(r);
        }
    }
    char etag_in[256];
    snprintf(etag_in, sizeof etag_in, "%s", d->cur_etag);
    pthread_mutex_unlock(&c->mu);

    char *key = cl_key(c, name, "CURRENT");
    char *buf = NULL, *etag = NULL;
    size_t len = 0;
    struct s3_outcome oc;
    struct vt_error err = {0};
    enum vt_err rc = key ? s3_get_if_changed(s3, c->bucket, key, etag_in[0] ? etag_in : NULL,
                                             VT_CLUSTER_MAX_MANIFEST_BYTES, &buf, &len, &etag,
                                             &oc, &err)
                         : VT_ERR_OUT_OF_MEMORY;
    free(key);
    struct cluster_current cur = {0};
    bool changed = false;
    if (rc == VT_ERR_OK && !oc.not_modified &&
        cluster_current_parse(buf, len, &cur, &err) == VT_ERR_OK)
        changed = true;
    else if (rc != VT_ERR_OK && !oc.not_found)
        log_warn("cluster: cannot read CURRENT of %s: %s", name, vt_error_message(&err));
    free(buf);

    pthread_mutex_lock(&c->mu);
    d = find_ds(c, name);
    if (d && changed) {
        snprintf(d->cur_etag, sizeof d->cur_etag, "%s", etag ? etag : "");
        memcpy(d->seen_id, cur.generation_id, 27);
    }
    bool want = d && d->seen_id[0] && strcmp(d->seen_id, d->loaded_id) != 0 && !d->pending &&
                time_mono_ms() >= d->next_try_ms;
    char id[27] = "";
    bool need_manifest = false;
    if (want) {
        memcpy(id, d->seen_id, 27);
        need_manifest = !d->has_manifest || strcmp(d->manifest.generation_id, id) != 0;
    }
    pthread_mutex_unlock(&c->mu);
    free(etag);
    if (!want)
        return;
    struct cluster_manifest m;
    if (need_manifest) {
        if (cl_read_manifest(c, s3, name, id, &m, &err) != VT_ERR_OK) {
            log_warn("cluster: cannot read the manifest of generation %s of %s: %s", id, name,
                     vt_error_message(&err));
            return;
        }
        pthread_mutex_lock(&c->mu);
        d = find_ds(c, name);
        if (d) {
            if (d->has_manifest)
                cluster_manifest_release(&d->manifest);
            d->manifest = m;
            d->has_manifest = true;
        } else {
            cluster_manifest_release(&m);
        }
        pthread_mutex_unlock(&c->mu);
    }
    struct cat_build_result *r = NULL;
    if (cat_reload(c->cat, name, CAT_REFRESH_MANUAL, &r, &err) != VT_ERR_OK)
        return; /* busy: the next poll tries again */
    pthread_mutex_lock(&c->mu);
    d = find_ds(c, name);
    if (d) {
        d->pending = r;
        memcpy(d->importing_id, id, 27);
        r = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    cat_build_result_put(r);
    log_info("cluster: importing generation %s of %s", id, name);
}

void cl_reader_tick(struct cluster *c, struct s3_client *s3)
{
    poll_catalog(c, s3);
    pthread_mutex_lock(&c->mu);
    size_t n = c->n_ds;
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < n && !atomic_load(&c->stop); i++) {
        pthread_mutex_lock(&c->mu);
        bool valid = i < c->n_ds;
        pthread_mutex_unlock(&c->mu);
        if (valid)
            poll_dataset(c, s3, i);
    }
    /* Hydrated once every dataset that has a generation serves one. */
    pthread_mutex_lock(&c->mu);
    if (!c->hydrated && c->catalog_seen) {
        bool all = true;
        for (size_t i = 0; i < c->n_ds && all; i++)
            all = !c->ds[i].seen_id[0] || c->ds[i].loaded_id[0];
        if (all) {
            c->hydrated = true;
            log_info("cluster: hydrated from the shared storage (%zu datasets)", c->n_ds);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void cl_reader_release(struct cluster *c)
{
    for (size_t i = 0; i < c->n_ds; i++)
        ds_release(&c->ds[i]);
    free(c->ds);
    c->ds = NULL;
    c->n_ds = 0;
}

/* ------------------------------------------------------------- import */

enum vt_err cl_import(void *ctx, const struct eng_job *job, const struct vt_dataset_config *cfg,
                      struct cat_import *imp, struct vt_error *err)
{
    struct cluster *c = ctx;
    memset(imp, 0, sizeof *imp);
    struct cluster_manifest m = {0};
    bool have = false;
    pthread_mutex_lock(&c->mu);
    struct cl_ds *d = find_ds(c, cfg->name);
    if (d && d->has_manifest) {
        /* A copy: the poller may replace its manifest meanwhile. */
        char *text = cluster_manifest_json(&d->manifest);
        have = text && cluster_manifest_parse(text, strlen(text), &m, err) == VT_ERR_OK;
        free(text);
    }
    pthread_mutex_unlock(&c->mu);
    if (!have)
        return vt_error_set(err, VT_ERR_DATASET_NOT_READY,
                            "dataset %s: the writer has not published a generation yet",
                            cfg->name);
    memcpy(imp->id, m.generation_id, 27);
    imp->lazy = m.lazy;
    imp->published_at_us = m.published_at_us;
    imp->build_ms = m.build_ms;
    imp->refresh_source = m.refresh_source ? m.refresh_source : CAT_REFRESH_STARTUP;
    for (size_t i = 0; i < m.cast_names.len; i++) {
        strvec_push(&imp->cast_names, m.cast_names.items[i]);
        strvec_push(&imp->cast_types, m.cast_types.items[i]);
    }
    char rest[128];
    snprintf(rest, sizeof rest, "%s/%s", m.generation_id, m.file);
    char *key = cl_key(c, cfg->name, rest);
    enum vt_err rc = key ? VT_ERR_OK : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    if (rc == VT_ERR_OK && m.lazy && m.cast_names.len == 0) {
        /* Served from the shared file with range reads, like any lazy S3
         * source; the export is fetched whole when first asked for. */
        struct vt_dataset_config *src = calloc(1, sizeof *src);
        if (!src)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        if (src) {
            config_dataset_defaults(src);
            src->name = strdup(cfg->name);
            src->kind = CFG_SOURCE_PARQUET;
            struct strbuf loc;
            sb_init(&loc, 0);
            sb_addf(&loc, "s3://%s/%s", c->bucket, key);
            src->location = sb_detach(&loc, NULL);
            src->lazy = true;
            src->index_mode = CFG_INDEX_NONE;
            const struct s3_config *s = &c->cfg->cluster.s3;
            src->s3.region = s->region ? strdup(s->region) : NULL;
            src->s3.endpoint = s->endpoint ? strdup(s->endpoint) : NULL;
            src->s3.addressing_style = s->addressing_style;
            src->s3.allow_http = s->allow_http;
            src->s3.partitioning = CFG_S3_PARTITIONING_NONE;
            src->s3.access_key_id_env = s->access_key_id_env ? strdup(s->access_key_id_env) : NULL;
            src->s3.secret_access_key_env =
                s->secret_access_key_env ? strdup(s->secret_access_key_env) : NULL;
            src->s3.session_token_env = s->session_token_env ? strdup(s->session_token_env) : NULL;
            imp->lazy_source = src;
            imp->export_remote = key;
            key = NULL;
        }
    } else if (rc == VT_ERR_OK) {
        /* Resident (or lazy with columns to cast back): the file, whole. */
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.parquet", c->dl_dir, m.generation_id);
        struct s3_client *s3 = cl_client(c, job ? atomic_load(&job->deadline_ms) : 0,
                                         job ? &job->cancelled : NULL, err);
        int64_t size = 0;
        rc = s3 ? s3_get_file(s3, c->bucket, key, NULL, path, &size, NULL, err) : err->code;
        s3_client_destroy(s3);
        if (rc == VT_ERR_OK && m.file_size > 0 && size != m.file_size)
            rc = vt_error_set(err, VT_ERR_SOURCE_CHANGED,
                              "generation %s of %s: %lld bytes downloaded, the manifest says %lld",
                              m.generation_id, cfg->name, (long long)size,
                              (long long)m.file_size);
        if (rc == VT_ERR_OK) {
            strvec_push(&imp->files, path);
            imp->export_file = strdup(path);
        } else {
            unlink(path);
        }
    }
    free(key);
    cluster_manifest_release(&m);
    if (rc != VT_ERR_OK)
        cat_import_release(imp);
    return rc;
}

enum vt_err cl_fetch_export(void *ctx, const char *remote, const char *path,
                            struct vt_error *err)
{
    struct cluster *c = ctx;
    struct s3_client *s3 = cl_client(c, 0, NULL, err);
    if (!s3)
        return err->code;
    enum vt_err rc = s3_get_file(s3, c->bucket, remote, NULL, path, NULL, NULL, err);
    s3_client_destroy(s3);
    return rc;
}
