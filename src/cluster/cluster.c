/*
 * The cluster's life cycle (see cluster.h): settings, the catalog hooks of
 * each role, the background thread (writer: shared catalog, publish
 * retries, collection; reader: polling), readiness, and the small S3
 * helpers both halves use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cluster/cluster_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

char *cl_key(const struct cluster *c, const char *name, const char *rest)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, c->prefix);
    if (name)
        sb_addf(&sb, "%s/", name);
    sb_adds(&sb, rest ? rest : "");
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb, NULL);
}

struct s3_client *cl_client(const struct cluster *c, int64_t deadline_ms,
                            const atomic_bool *cancel, struct vt_error *err)
{
    struct s3_client *s3 = NULL;
    if (s3_client_create(&c->cfg->cluster.s3, &s3, err) != VT_ERR_OK)
        return NULL;
    s3_client_bound(s3, deadline_ms, cancel);
    return s3;
}

enum vt_err cl_read_current(struct cluster *c, struct s3_client *s3, const char *name,
                            struct cluster_current *out, bool *out_found, char **out_etag,
                            struct vt_error *err)
{
    *out_found = false;
    if (out_etag)
        *out_etag = NULL;
    char *key = cl_key(c, name, "CURRENT");
    if (!key)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    char *buf = NULL;
    size_t len = 0;
    struct s3_outcome oc;
    enum vt_err rc = s3_get_if_changed(s3, c->bucket, key, NULL, VT_CLUSTER_MAX_MANIFEST_BYTES,
                                       &buf, &len, out_etag, &oc, err);
    free(key);
    if (rc != VT_ERR_OK && oc.not_found) {
        vt_error_clear(err);
        return VT_ERR_OK;
    }
    if (rc == VT_ERR_OK) {
        rc = cluster_current_parse(buf, len, out, err);
        *out_found = rc == VT_ERR_OK;
    }
    free(buf);
    if (rc != VT_ERR_OK && out_etag) {
        free(*out_etag);
        *out_etag = NULL;
    }
    return rc;
}

enum vt_err cl_read_manifest(struct cluster *c, struct s3_client *s3, const char *name,
                             const char *id, struct cluster_manifest *out, struct vt_error *err)
{
    char rest[64];
    snprintf(rest, sizeof rest, "%s/manifest.json", id);
    char *key = cl_key(c, name, rest);
    if (!key)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    char *buf = NULL;
    size_t len = 0;
    enum vt_err rc = s3_get_mem(s3, c->bucket, key, 0, -1, VT_CLUSTER_MAX_MANIFEST_BYTES, &buf,
                                &len, NULL, err);
    free(key);
    if (rc == VT_ERR_OK)
        rc = cluster_manifest_parse(buf, len, out, err);
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------- life */

struct cluster *cluster_create(const struct cluster_options *o, struct vt_error *err)
{
    const struct cluster_config *cc = &o->cfg->cluster;
    if (cc->role == CFG_ROLE_STANDALONE)
        return NULL;
    struct s3_url u = {0};
    if (s3_url_parse(cc->storage, &u, err) != VT_ERR_OK)
        return NULL;
    struct cluster *c = calloc(1, sizeof *c);
    if (!c) {
        s3_url_release(&u);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    c->cfg = o->cfg;
    c->cat = o->catalog;
    c->role = cc->role;
    c->bucket = u.bucket;
    size_t kl = u.key ? strlen(u.key) : 0;
    while (kl && u.key[kl - 1] == '/')
        kl--;
    c->prefix = malloc(kl + 2);
    if (c->prefix) {
        memcpy(c->prefix, u.key ? u.key : "", kl);
        c->prefix[kl] = kl ? '/' : '\0';
        c->prefix[kl + (kl ? 1 : 0)] = '\0';
    }
    free(u.key);
    size_t dl = strlen(o->runtime_dir) + 16;
    c->dl_dir = malloc(dl);
    if (c->dl_dir) {
        snprintf(c->dl_dir, dl, "%s/cluster", o->runtime_dir);
        mkdir(c->dl_dir, 0700);
    }
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    char start[27];
    ulid_new(start);
    snprintf(c->writer_id, sizeof c->writer_id, "%.64s-%d-%.10s", host, (int)getpid(), start);
    if (cc->advertise_url)
        snprintf(c->advertise, sizeof c->advertise, "%s", cc->advertise_url);
    else
        snprintf(c->advertise, sizeof c->advertise, "http://%.200s:%d", host, o->http_port);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (!c->prefix || !c->dl_dir) {
        cluster_destroy(c);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    /* A client now: bad credentials settings fail the start, not later. */
    struct s3_client *probe = cl_client(c, 0, NULL, err);
    if (!probe) {
        cluster_destroy(c);
        return NULL;
    }
    s3_client_destroy(probe);

    struct cat_hooks h = {.ctx = c,
                          .report_every_generation = true,
                          .keep_previous_ms = cc->pin_secs * 1000};
    if (c->role == CFG_ROLE_WRITER) {
        h.publish = cl_publish;
    } else {
        h.import = cl_import;
        h.fetch_export = cl_fetch_export;
        h.no_builds = true;
    }
    cat_set_hooks(c->cat, &h);
    log_info("cluster: %s of s3://%s/%s (poll %lld ms, previous kept %lld s, collection after "
             "%lld s)",
             config_cluster_role_name(c->role), c->bucket, c->prefix,
             (long long)cc->poll_interval_ms, (long long)cc->pin_secs,
             (long long)cc->gc_grace_secs);
    return c;
}

/* ±10% around the interval: readers that started together drift apart, so
 * they do not all fetch and swap a new generation at the same moment. */
static int64_t jittered(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t r = (uint64_t)ts.tv_nsec * 2654435761u;
    int64_t span = ms / 5;
    return ms - ms / 10 + (span > 0 ? (int64_t)(r % (uint64_t)span) : 0);
}

static void *cluster_main(void *arg)
{
    struct cluster *c = arg;
    pthread_setname_np(pthread_self(), c->role == CFG_ROLE_WRITER ? "cluster-w" : "cluster-r");
    struct vt_error err = {0};
    struct s3_client *s3 = NULL;
    while (!atomic_load(&c->stop)) {
        if (!s3) {
            s3 = cl_client(c, 0, &c->stop, &err);
            if (!s3)
                log_error("cluster: %s", vt_error_message(&err));
        }
        int64_t wait_ms;
        if (s3 && c->role == CFG_ROLE_WRITER) {
            cl_writer_tick(c, s3);
            wait_ms = 250;
        } else if (s3) {
            cl_reader_tick(c, s3);
            wait_ms = jittered(c->cfg->cluster.poll_interval_ms);
            /* While imports run, look again soon: readiness and the next
             * generation follow their end without waiting a whole poll. */
            pthread_mutex_lock(&c->mu);
            for (size_t i = 0; i < c->n_ds; i++)
                if (c->ds[i].pending && wait_ms > 100)
                    wait_ms = 100;
            pthread_mutex_unlock(&c->mu);
        } else {
            wait_ms = 1000;
        }
        cat_expire_previous(c->cat);
        pthread_mutex_lock(&c->mu);
        if (!atomic_load(&c->stop))
            time_cond_wait(&c->cv, &c->mu, time_mono_ms() + wait_ms);
        pthread_mutex_unlock(&c->mu);
    }
    s3_client_destroy(s3);
    return NULL;
}

enum vt_err cluster_start(struct cluster *c, struct vt_error *err)
{
    if (!c)
        return VT_ERR_OK;
    if (pthread_create(&c->thread, NULL, cluster_main, c) != 0)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot start the cluster thread");
    c->started = true;
    return VT_ERR_OK;
}

void cluster_stop(struct cluster *c)
{
    if (!c || !c->started)
        return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stop, true);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    c->started = false;
}

void cluster_destroy(struct cluster *c)
{
    if (!c)
        return;
    cluster_stop(c);
    cl_reader_release(c);
    cl_writer_release(c);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->bucket);
    free(c->prefix);
    free(c->dl_dir);
    free(c);
}

enum cfg_cluster_role cluster_role(const struct cluster *c)
{
    return c ? c->role : CFG_ROLE_STANDALONE;
}

const char *cluster_writer_url(const struct cluster *c)
{
    return c ? c->cfg->cluster.writer_url : NULL;
}

void cluster_writer_name(struct cluster *c, char *out, size_t cap)
{
    if (c && c->cfg->cluster.writer_url) {
        snprintf(out, cap, "%s", c->cfg->cluster.writer_url);
        return;
    }
    if (!c) {
        snprintf(out, cap, "unknown");
        return;
    }
    pthread_mutex_lock(&c->mu);
    snprintf(out, cap, "%s", c->writer_seen[0] ? c->writer_seen : "unknown");
    pthread_mutex_unlock(&c->mu);
}

bool cluster_reader_ready(struct cluster *c, int64_t *out_datasets)
{
    pthread_mutex_lock(&c->mu);
    bool ready = c->hydrated;
    *out_datasets = (int64_t)c->n_ds;
    pthread_mutex_unlock(&c->mu);
    return ready;
}
