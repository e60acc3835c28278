/*
 * Shared by the files of src/cluster/ only: the cluster's state, the S3
 * layout helpers, and the writer's and reader's halves.
 */
#ifndef VT_CLUSTER_INTERNAL_H
#define VT_CLUSTER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "cluster/cluster.h"
#include "sources/s3.h"

/* Reader: one dataset of the shared catalog. */
struct cl_ds {
    char name[VT_MAX_DATASET_NAME_BYTES + 1];
    char cur_etag[256];         /* of its CURRENT, for If-None-Match */
    char seen_id[27];           /* the generation CURRENT names ("" = none yet) */
    char loaded_id[27];         /* the one this process serves */
    char importing_id[27];      /* the one a build is importing */
    struct cluster_manifest manifest; /* of seen_id, once read */
    bool has_manifest;
    struct cat_build_result *pending; /* the import build, while it runs */
    int64_t next_try_ms, backoff_ms;
    bool seen;                  /* still in the shared catalog (reconcile) */
};

/* Writer: a dataset whose last publish failed (retried with backoff). */
struct cl_retry {
    char name[VT_MAX_DATASET_NAME_BYTES + 1];
    int64_t at_ms, backoff_ms;
    bool due;
};

/* Writer's collector: a dataset folder no longer in the catalog. */
struct cl_orphan {
    char name[VT_MAX_DATASET_NAME_BYTES + 1];
    int64_t first_seen_ms;
    bool seen;
};

/* Writer's collector: manifests read (immutable), by generation id. */
struct cl_pubtime {
    char id[27];
    int64_t published_at_us;
};

struct cluster {
    const struct vt_config *cfg;
    struct cat_catalog *cat;
    enum cfg_cluster_role role;
    char *bucket;
    char *prefix;               /* key prefix with its trailing '/', or "" */
    char *dl_dir;               /* <runtime>/cluster: downloads, files for exports */
    char writer_id[128];        /* host-pid-start */
    char advertise[512];        /* the writer's URL */
    pthread_t thread;
    bool started;
    atomic_bool stop;           /* also the cancel flag of the thread's S3 requests */
    pthread_mutex_t mu;         /* everything below */
    pthread_cond_t cv;
    /* reader */
    struct cl_ds *ds;
    size_t n_ds, cap_ds;
    char catalog_etag[256];
    bool catalog_seen;
    bool hydrated;
    char writer_seen[512];      /* the URL the writer advertised */
    /* writer */
    uint64_t epoch_written;
    bool catalog_written;
    struct cl_retry *retries;
    size_t n_retries, cap_retries;
    int64_t next_gc_ms;
    struct cl_orphan *orphans;
    size_t n_orphans, cap_orphans;
    struct cl_pubtime *pubtimes;
    size_t n_pubtimes, cap_pubtimes;
};

/* "<prefix><name>/<rest>" (malloc'd). */
char *cl_key(const struct cluster *c, const char *name, const char *rest);
/* A client for the cluster's storage bounded by deadline_ms and *cancel
 * (NULL with err set). One per thread at a time (s3.h). */
struct s3_client *cl_client(const struct cluster *c, int64_t deadline_ms,
                            const atomic_bool *cancel, struct vt_error *err);
/* Reads CURRENT of `name`: *out_found false when there is none; *out_etag
 * (malloc'd) its ETag. */
enum vt_err cl_read_current(struct cluster *c, struct s3_client *s3, const char *name,
                            struct cluster_current *out, bool *out_found, char **out_etag,
                            struct vt_error *err);
/* The manifest of generation `id` of `name`. */
enum vt_err cl_read_manifest(struct cluster *c, struct s3_client *s3, const char *name,
                             const char *id, struct cluster_manifest *out, struct vt_error *err);

/* writer.c */
enum vt_err cl_publish(void *ctx, duckdb_connection con, const struct eng_job *job,
                       const struct vt_dataset_config *cfg, struct cat_generation *gen,
                       enum cat_refresh_source source, struct vt_error *err);
void cl_writer_tick(struct cluster *c, struct s3_client *s3);
void cl_writer_release(struct cluster *c);

/* reader.c */
enum vt_err cl_import(void *ctx, const struct eng_job *job, const struct vt_dataset_config *cfg,
                      struct cat_import *imp, struct vt_error *err);
enum vt_err cl_fetch_export(void *ctx, const char *remote, const char *path,
                            struct vt_error *err);
void cl_reader_tick(struct cluster *c, struct s3_client *s3);
void cl_reader_release(struct cluster *c);

#endif
