/*
 * The writer's half of the cluster: every generation the catalog builds is
 * written as Parquet, uploaded with its manifest (last), and made current
 * by a compare-and-swap of CURRENT before the writer itself serves it
 * (cat_hooks.publish). Its thread keeps the shared catalog object in step
 * with the registered datasets, retries failed publishes with backoff, and
 * collects generations that are neither current nor previous once their
 * grace period has passed. Only the writer deletes anything.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/cluster_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

/* --------------------------------------------------------------- retries */

static void retry_set(struct cluster *c, const char *name, bool failed)
{
    pthread_mutex_lock(&c->mu);
    size_t i = 0;
    while (i < c->n_retries && strcmp(c->retries[i].name, name) != 0)
        i++;
    if (!failed) {
        if (i < c->n_retries)
            c->retries[i] = c->retries[--c->n_retries];
        pthread_mutex_unlock(&c->mu);
        return;
    }
    if (i == c->n_retries) {
        if (c->n_retries == c->cap_retries) {
            size_t cap = c->cap_retries ? c->cap_retries * 2 : 8;
            struct cl_retry *p = realloc(c->retries, cap * sizeof *p);
            if (!p) {
                pthread_mutex_unlock(&c->mu);
                return;
            }
            c->retries = p;
            c->cap_retries = cap;
        }
        memset(&c->retries[i], 0, sizeof c->retries[i]);
        snprintf(c->retries[i].name, sizeof c->retries[i].name, "%s", name);
        c->n_retries++;
    }
    struct cl_retry *r = &c->retries[i];
    r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : VT_CLUSTER_RETRY_MIN_MS;
    if (r->backoff_ms > VT_CLUSTER_RETRY_MAX_MS)
        r->backoff_ms = VT_CLUSTER_RETRY_MAX_MS;
    r->at_ms = time_mono_ms() + r->backoff_ms;
    r->due = true;
    pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------------------------- publish */

static bool is_hugeint(duckdb_type t)
{
    return t == DUCKDB_TYPE_HUGEINT || t == DUCKDB_TYPE_UHUGEINT;
}

/* COPY of the generation to a local Parquet file: 128-bit integers as
 * DECIMAL(38,0) (Parquet has none; the manifest says to cast them back). */
static enum vt_err write_parquet(duckdb_connection con, const struct cat_generation *gen,
                                 const char *tmp, const struct eng_job *job,
                                 struct vt_error *err)
{
    void *holds = NULL;
    enum vt_err rc = cat_generation_read_all(gen, job ? atomic_load(&job->deadline_ms) : 0,
                                             &holds, err);
    if (rc != VT_ERR_OK)
        return rc;
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "COPY (SELECT *");
    bool any = false;
    for (size_t i = 0; i < gen->n_cols; i++) {
        if (!is_hugeint(gen->cols[i].type))
            continue;
        sb_adds(&sql, any ? ", " : " REPLACE (");
        sb_adds(&sql, "CAST(");
        sb_add_sql_ident(&sql, gen->cols[i].name);
        sb_adds(&sql, " AS DECIMAL(38,0)) AS ");
        sb_add_sql_ident(&sql, gen->cols[i].name);
        any = true;
    }
    if (any)
        sb_adds(&sql, ")");
    sb_addf(&sql, " FROM %s) TO ", gen->relation);
    sb_add_sql_string(&sql, tmp);
    sb_adds(&sql, " (FORMAT parquet, COMPRESSION zstd)");
    rc = sql.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL)
                      : eng_exec(con, sql.buf, VT_ERR_PUBLISH_FAILED, err);
    sb_release(&sql);
    cat_generation_read_release(holds);
    return rc;
}

/* Points CURRENT of `name` at `id` by compare-and-swap: created with
 * If-None-Match: *, replaced with If-Match: <the ETag read>; a lost race is
 * read again. CURRENT never moves back to an older generation. */
static enum vt_err swap_current(struct cluster *c, struct s3_client *s3, const char *name,
                                const char *id, struct vt_error *err)
{
    char *key = cl_key(c, name, "CURRENT");
    if (!key)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    enum vt_err rc = VT_ERR_OK;
    for (int attempt = 0;; attempt++) {
        struct cluster_current cur;
        bool found = false;
        char *etag = NULL;
        rc = cl_read_current(c, s3, name, &cur, &found, &etag, err);
        if (rc != VT_ERR_OK)
            break;
        if (found && strcmp(cur.generation_id, id) == 0) {
            free(etag);
            break; /* already (a retried publish) */
        }
        if (found && strcmp(cur.generation_id, id) > 0) {
            free(etag);
            rc = vt_error_set(err, VT_ERR_PUBLISH_FAILED,
                              "CURRENT of %s names a newer generation %s (written by %s): is "
                              "another writer sharing this storage?",
                              name, cur.generation_id, cur.writer);
            break;
        }
        struct cluster_current next = {.published_at_us = time_wall_us()};
        snprintf(next.generation_id, sizeof next.generation_id, "%s", id);
        if (found)
            snprintf(next.previous, sizeof next.previous, "%s", cur.generation_id);
        snprintf(next.writer, sizeof next.writer, "%s", c->writer_id);
        char *body = cluster_current_json(&next);
        struct s3_outcome oc;
        rc = body ? s3_put(s3, c->bucket, key, body, strlen(body), NULL, "application/json",
                           found ? etag : NULL, found ? NULL : "*", NULL, &oc, err)
                  : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        free(body);
        free(etag);
        if (rc == VT_ERR_OK)
            break;
        if (!oc.changed || attempt + 1 >= VT_CLUSTER_CAS_ATTEMPTS)
            break;
        log_warn("cluster: CURRENT of %s changed while it was swapped; reading it again", name);
        vt_error_clear(err);
    }
    free(key);
    return rc;
}

enum vt_err cl_publish(void *ctx, duckdb_connection con, const struct eng_job *job,
                       const struct vt_dataset_config *cfg, struct cat_generation *gen,
                       enum cat_refresh_source source, struct vt_error *err)
{
    struct cluster *c = ctx;
    int64_t t0 = time_mono_ms();
    struct vt_error e = {0};
    struct s3_client *s3 =
        cl_client(c, job ? atomic_load(&job->deadline_ms) : 0, job ? &job->cancelled : NULL, &e);
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s.parquet", c->dl_dir, gen->id);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char rest[96];
    snprintf(rest, sizeof rest, "%s/manifest.json", gen->id);
    char *mkey = cl_key(c, cfg->name, rest);
    snprintf(rest, sizeof rest, "%s/data.parquet", gen->id);
    char *dkey = cl_key(c, cfg->name, rest);
    enum vt_err rc = !s3 ? e.code
                         : (!mkey || !dkey) ? vt_error_set(&e, VT_ERR_OUT_OF_MEMORY, NULL)
                                            : VT_ERR_OK;
    bool wrote = false;
    struct stat st = {0};
    /* A generation published before (materialize.reuse_on_start served it
     * again) needs no upload. */
    struct s3_object head = {0};
    struct s3_outcome oc;
    bool exists = rc == VT_ERR_OK && s3_head(s3, c->bucket, mkey, &head, &oc, &e) == VT_ERR_OK;
    s3_object_release(&head);
    if (rc == VT_ERR_OK && !exists) {
        if (!oc.not_found)
            rc = e.code ? e.code : VT_ERR_PUBLISH_FAILED;
        else
            vt_error_clear(&e);
    }
    if (rc == VT_ERR_OK && !exists) {
        rc = write_parquet(con, gen, tmp, job, &e);
        if (rc == VT_ERR_OK && (rename(tmp, path) != 0 || stat(path, &st) != 0))
            rc = vt_error_set(&e, VT_ERR_PUBLISH_FAILED, "cannot write %s: %s", path,
                              strerror(errno));
        wrote = rc == VT_ERR_OK;
        if (rc == VT_ERR_OK)
            rc = s3_put(s3, c->bucket, dkey, NULL, 0, path, "application/vnd.apache.parquet",
                        NULL, NULL, NULL, NULL, &e);
        if (rc == VT_ERR_OK) {
            struct cluster_manifest m = {.rows = gen->rows, .lazy = gen->lazy,
                                         .file = (char *)"data.parquet",
                                         .file_size = st.st_size,
                                         .published_at_us = gen->published_at_us,
                                         .build_ms = cat_generation_build_ms(gen),
                                         .refresh_source = source};
            snprintf(m.dataset, sizeof m.dataset, "%s", cfg->name);
            snprintf(m.generation_id, sizeof m.generation_id, "%s", gen->id);
            snprintf(m.writer, sizeof m.writer, "%s", c->writer_id);
            m.source_version = (char *)cat_generation_source_version(gen);
            for (size_t i = 0; i < gen->n_cols; i++) {
                strvec_push(&m.col_names, gen->cols[i].name);
                strvec_push(&m.col_types, gen->cols[i].type_sql);
                if (is_hugeint(gen->cols[i].type)) {
                    strvec_push(&m.cast_names, gen->cols[i].name);
                    strvec_push(&m.cast_types, gen->cols[i].type_sql);
                }
            }
            char *text = cluster_manifest_json(&m);
            strvec_free(&m.col_names);
            strvec_free(&m.col_types);
            strvec_free(&m.cast_names);
            strvec_free(&m.cast_types);
            /* Written last, created once: a folder with a manifest is complete. */
            rc = text ? s3_put(s3, c->bucket, mkey, text, strlen(text), NULL, "application/json",
                               NULL, "*", NULL, NULL, &e)
                      : vt_error_set(&e, VT_ERR_OUT_OF_MEMORY, NULL);
            free(text);
        }
    }
    if (rc == VT_ERR_OK)
        rc = swap_current(c, s3, cfg->name, gen->id, &e);
    s3_client_destroy(s3);
    free(mkey);
    free(dkey);
    unlink(tmp);
    if (rc != VT_ERR_OK) {
        if (wrote)
            unlink(path);
        retry_set(c, cfg->name, true);
        log_error("cluster: publishing generation %s of %s failed: %s (retried with backoff)",
                  gen->id, cfg->name, vt_error_message(&e));
        return vt_error_set(err, VT_ERR_PUBLISH_FAILED, "publishing to %s failed: %s",
                            c->cfg->cluster.storage, vt_error_message(&e));
    }
    retry_set(c, cfg->name, false);
    /* The bytes every replica serves as this generation's export. */
    if (wrote)
        cat_generation_set_export(gen, path, (uint64_t)st.st_size);
    log_info("cluster: published generation %s of %s (%lld bytes) in %lld ms", gen->id,
             cfg->name, (long long)st.st_size, (long long)(time_mono_ms() - t0));
    return VT_ERR_OK;
}

/* ------------------------------------------------------ shared catalog */

static char *catalog_json(struct cluster *c)
{
    json_t *list = json_array();
    struct strvec names;
    cat_names(c->cat, &names);
    for (size_t i = 0; i < names.len; i++) {
        struct cat_dataset *ds = cat_dataset_get(c->cat, names.items[i]);
        if (!ds)
            continue;
        struct vt_dataset_config cfg;
        if (cat_dataset_config(ds, &cfg) == 0) {
            char *toml = config_dataset_to_toml(&cfg);
            const char *saved = cat_saved_name(cat_dataset_saved(ds));
            if (toml)
                json_array_append_new(list, json_pack("{s:s,s:s,s:b,s:s}", "name", cfg.name,
                                                      "saved", saved ? saved : "none",
                                                      "from_config", cat_dataset_from_config(ds),
                                                      "toml", toml));
            free(toml);
            config_dataset_free(&cfg);
        }
        cat_dataset_put(ds);
    }
    strvec_free(&names);
    json_t *o = json_pack("{s:s,s:{s:s,s:s},s:I,s:o}", "format", "vitrine-catalog/1", "writer",
                          "id", c->writer_id, "url", c->advertise, "updated_at_us",
                          (json_int_t)time_wall_us(), "datasets", list);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* catalog.json replaced by compare-and-swap like CURRENT (a second writer
 * shows up in the log instead of silently overwriting). */
static enum vt_err write_catalog(struct cluster *c, struct s3_client *s3, struct vt_error *err)
{
    char *key = cl_key(c, NULL, "catalog.json");
    char *text = catalog_json(c);
    enum vt_err rc = key && text ? VT_ERR_OK : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    for (int attempt = 0; rc == VT_ERR_OK; attempt++) {
        struct s3_object head = {0};
        struct s3_outcome oc;
        rc = s3_head(s3, c->bucket, key, &head, &oc, err);
        bool found = rc == VT_ERR_OK;
        if (rc != VT_ERR_OK && oc.not_found) {
            vt_error_clear(err);
            rc = VT_ERR_OK;
        }
        if (rc == VT_ERR_OK)
            rc = s3_put(s3, c->bucket, key, text, strlen(text), NULL, "application/json",
                        found ? head.etag : NULL, found ? NULL : "*", NULL, &oc, err);
        s3_object_release(&head);
        if (rc == VT_ERR_OK || !oc.changed || attempt + 1 >= VT_CLUSTER_CAS_ATTEMPTS)
            break;
        log_warn("cluster: catalog.json changed while it was written (another writer?); "
                 "writing it again");
        vt_error_clear(err);
        rc = VT_ERR_OK;
    }
    free(key);
    free(text);
    return rc;
}

/* ----------------------------------------------------------- collection */

static int64_t published_at_of(struct cluster *c, struct s3_client *s3, const char *name,
                               const char *id)
{
    for (size_t i = 0; i < c->n_pubtimes; i++)
        if (strcmp(c->pubtimes[i].id, id) == 0)
            return c->pubtimes[i].published_at_us;
    struct cluster_manifest m;
    struct vt_error err = {0};
    if (cl_read_manifest(c, s3, name, id, &m, &err) != VT_ERR_OK)
        return -1;
    int64_t t = m.published_at_us;
    cluster_manifest_release(&m);
    if (c->n_pubtimes == c->cap_pubtimes) {
        size_t cap = c->cap_pubtimes ? c->cap_pubtimes * 2 : 64;
        struct cl_pubtime *p = realloc(c->pubtimes, cap * sizeof *p);
        if (!p)
            return t;
        c->pubtimes = p;
        c->cap_pubtimes = cap;
    }
    snprintf(c->pubtimes[c->n_pubtimes].id, 27, "%s", id);
    c->pubtimes[c->n_pubtimes++].published_at_us = t;
    return t;
}

static void delete_prefix_keys(struct cluster *c, struct s3_client *s3,
                               const struct s3_listing *l, const char *prefix, bool *out_fail)
{
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < l->n; i++) {
        if (strncmp(l->items[i].key, prefix, pl) != 0)
            continue;
        struct vt_error err = {0};
        if (s3_delete(s3, c->bucket, l->items[i].key, NULL, &err) != VT_ERR_OK) {
            log_warn("cluster: cannot delete s3://%s/%s: %s", c->bucket, l->items[i].key,
                     vt_error_message(&err));
            *out_fail = true;
        }
    }
}

struct gen_folder {
    char id[27];
    bool manifest;
};

static int cmp_folder(const void *a, const void *b)
{
    return strcmp(((const struct gen_folder *)a)->id, ((const struct gen_folder *)b)->id);
}

/* One dataset folder: every generation that is neither current nor
 * previous goes gc_grace_secs after it was replaced (the publish time of
 * the next newer complete generation); a folder without a manifest only
 * once it is older than any build may run. */
static void collect_dataset(struct cluster *c, struct s3_client *s3, const char *name,
                            const struct s3_listing *l, int *out_deleted)
{
    char *base = cl_key(c, name, "");
    if (!base)
        return;
    size_t bl = strlen(base);
    struct gen_folder *f = NULL;
    size_t nf = 0;
    for (size_t i = 0; i < l->n; i++) {
        const char *k = l->items[i].key;
        if (strncmp(k, base, bl) != 0)
            continue;
        const char *slash = strchr(k + bl, '/');
        if (!slash || slash - (k + bl) != 26)
            continue;
        char id[27];
        memcpy(id, k + bl, 26);
        id[26] = '\0';
        if (cluster_ulid_ms(id) < 0)
            continue;
        size_t j = 0;
        while (j < nf && strcmp(f[j].id, id) != 0)
            j++;
        if (j == nf) {
            struct gen_folder *p = realloc(f, (nf + 1) * sizeof *p);
            if (!p)
                break;
            f = p;
            memset(&f[nf], 0, sizeof f[nf]);
            memcpy(f[nf].id, id, 27);
            nf++;
        }
        if (strcmp(slash + 1, "manifest.json") == 0)
            f[j].manifest = true;
    }
    qsort(f, nf, sizeof *f, cmp_folder);
    struct cluster_current cur;
    bool found = false;
    struct vt_error err = {0};
    if (cl_read_current(c, s3, name, &cur, &found, NULL, &err) != VT_ERR_OK) {
        free(f);
        free(base);
        return; /* never delete without knowing what is current */
    }
    int64_t now_us = time_wall_us();
    int64_t grace_us = c->cfg->cluster.gc_grace_secs * 1000000;
    int64_t build_limit_ms = VT_BUILD_DEFAULT_TIMEOUT_MS;
    for (size_t i = 0; i < nf; i++) {
        if (found && (strcmp(f[i].id, cur.generation_id) == 0 ||
                      strcmp(f[i].id, cur.previous) == 0))
            continue;
        bool go = false;
        if (!f[i].manifest) {
            go = (now_us / 1000) - cluster_ulid_ms(f[i].id) > build_limit_ms + grace_us / 1000;
        } else {
            /* Replaced when the next newer complete generation was published. */
            int64_t replaced = -1;
            for (size_t j = i + 1; j < nf && replaced < 0; j++)
                if (f[j].manifest)
                    replaced = published_at_of(c, s3, name, f[j].id);
            if (replaced < 0) /* newest, yet not current: a publish that lost its swap */
                replaced = cluster_ulid_ms(f[i].id) * 1000 + build_limit_ms * 1000;
            go = found && now_us - replaced > grace_us;
        }
        if (!go)
            continue;
        char rest[40];
        snprintf(rest, sizeof rest, "%s/", f[i].id);
        char *gp = cl_key(c, name, rest);
        bool fail = false;
        if (gp) {
            delete_prefix_keys(c, s3, l, gp, &fail);
            if (!fail) {
                log_info("cluster: collected generation %s of %s", f[i].id, name);
                (*out_deleted)++;
            }
        }
        free(gp);
    }
    free(f);
    free(base);
}

static void collect(struct cluster *c, struct s3_client *s3)
{
    struct s3_listing l;
    struct vt_error err = {0};
    if (s3_list(s3, c->bucket, c->prefix, NULL, NULL, 0, &l, NULL, &err) != VT_ERR_OK) {
        log_warn("cluster: collection skipped: %s", vt_error_message(&err));
        return;
    }
    /* The dataset folders under the prefix. */
    struct strvec folders = {0};
    size_t pl = strlen(c->prefix);
    for (size_t i = 0; i < l.n; i++) {
        const char *rest = l.items[i].key + pl;
        const char *slash = strchr(rest, '/');
        if (!slash || slash == rest || (size_t)(slash - rest) > VT_MAX_DATASET_NAME_BYTES)
            continue;
        char name[VT_MAX_DATASET_NAME_BYTES + 1];
        memcpy(name, rest, (size_t)(slash - rest));
        name[slash - rest] = '\0';
        if (strvec_find(&folders, name) < 0)
            strvec_push(&folders, name);
    }
    int deleted = 0;
    int64_t now = time_mono_ms();
    for (size_t o = 0; o < c->n_orphans; o++)
        c->orphans[o].seen = false;
    for (size_t i = 0; i < folders.len; i++) {
        const char *name = folders.items[i];
        if (cat_has_dataset(c->cat, name)) {
            collect_dataset(c, s3, name, &l, &deleted);
            continue;
        }
        /* A dataset the writer no longer has (deleted, or gone from the
         * config): readers drop it when they see the catalog; its files go
         * after the grace period, counted from when this writer saw it gone. */
        size_t o = 0;
        while (o < c->n_orphans && strcmp(c->orphans[o].name, name) != 0)
            o++;
        if (o == c->n_orphans) {
            if (c->n_orphans == c->cap_orphans) {
                size_t cap = c->cap_orphans ? c->cap_orphans * 2 : 8;
                struct cl_orphan *p = realloc(c->orphans, cap * sizeof *p);
                if (!p)
                    continue;
                c->orphans = p;
                c->cap_orphans = cap;
            }
            snprintf(c->orphans[o].name, sizeof c->orphans[o].name, "%s", name);
            c->orphans[o].first_seen_ms = now;
            c->n_orphans++;
        }
        c->orphans[o].seen = true;
        if (now - c->orphans[o].first_seen_ms > c->cfg->cluster.gc_grace_secs * 1000) {
            char *p = cl_key(c, name, "");
            bool fail = false;
            if (p)
                delete_prefix_keys(c, s3, &l, p, &fail);
            free(p);
            if (!fail)
                log_info("cluster: collected every generation of removed dataset %s", name);
        }
    }
    /* Forget orphans that are gone (deleted, or registered again). */
    size_t kept = 0;
    for (size_t o = 0; o < c->n_orphans; o++)
        if (c->orphans[o].seen)
            c->orphans[kept++] = c->orphans[o];
    c->n_orphans = kept;
    strvec_free(&folders);
    s3_listing_release(&l);
    if (deleted)
        log_info("cluster: collection removed %d generations", deleted);
}

/* ---------------------------------------------------------------- tick */

void cl_writer_tick(struct cluster *c, struct s3_client *s3)
{
    uint64_t epoch = cat_names_epoch(c->cat);
    if (!c->catalog_written || epoch != c->epoch_written) {
        struct vt_error err = {0};
        if (write_catalog(c, s3, &err) == VT_ERR_OK) {
            c->catalog_written = true;
            c->epoch_written = epoch;
        } else {
            log_warn("cluster: cannot write the shared catalog: %s", vt_error_message(&err));
        }
    }
    /* Publishes that failed: rebuilt (and published) again when due. */
    int64_t now = time_mono_ms();
    char due[VT_MAX_DATASET_NAME_BYTES + 1] = "";
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_retries && !due[0]; i++) {
        if (c->retries[i].due && now >= c->retries[i].at_ms) {
            c->retries[i].due = false;
            snprintf(due, sizeof due, "%s", c->retries[i].name);
        }
    }
    pthread_mutex_unlock(&c->mu);
    if (due[0]) {
        struct cat_build_result *r = NULL;
        struct vt_error err = {0};
        if (cat_reload(c->cat, due, CAT_REFRESH_SCHEDULE, &r, &err) == VT_ERR_OK)
            log_info("cluster: publishing %s again", due);
        else if (err.code == VT_ERR_DATASET_NOT_FOUND)
            retry_set(c, due, false);
        cat_build_result_put(r);
    }
    if (now >= c->next_gc_ms) {
        c->next_gc_ms = now + c->cfg->cluster.gc_interval_secs * 1000;
        collect(c, s3);
    }
}

void cl_writer_release(struct cluster *c)
{
    free(c->retries);
    free(c->orphans);
    free(c->pubtimes);
    c->retries = NULL;
    c->orphans = NULL;
    c->pubtimes = NULL;
}
