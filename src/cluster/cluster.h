/*
 * The cluster: one writer and stateless readers sharing generations through
 * S3 (`[cluster]`, docs/operations.md "Scaling out"). No protocol of our own:
 * the processes meet only in the storage.
 *
 *   {storage}/catalog.json                    every dataset the writer has (its
 *                                             [[dataset]] block), written last
 *                                             by compare-and-swap
 *   {storage}/{dataset}/{generation}/data.parquet   the rows
 *   {storage}/{dataset}/{generation}/manifest.json  schema, rows, files, sizes,
 *                                             source version; written after
 *                                             the data, so a folder with a
 *                                             manifest is complete
 *   {storage}/{dataset}/CURRENT               {"generation_id", "previous"}:
 *                                             replaced only by compare-and-swap
 *                                             (If-None-Match: * / If-Match)
 *
 * Writer: every generation the catalog builds is published before it is
 * served (cat_hooks.publish): a failed upload fails the build (the previous
 * generation keeps serving everywhere) and is retried with backoff. The
 * writer alone collects generations that are neither current nor previous,
 * gc_grace_secs after they were replaced.
 *
 * Reader: never reads a source. A thread polls catalog.json and every
 * CURRENT with If-None-Match every poll_interval_ms (±10% jitter); a new
 * generation is imported by a catalog build (cat_hooks.import: resident data
 * is downloaded and loaded, lazy data served from the shared file with range
 * reads) and swapped in as a reload does. Admin and write routes answer 409
 * naming the writer, or are forwarded to cluster.writer_url.
 *
 * Everywhere: one generation id (the writer's ULID) in status, in
 * X-Dataset-Generation and in the export's ETag; the replaced generation is
 * kept pin_secs for reads pinned with ?generation=.
 */
#ifndef VT_CLUSTER_CLUSTER_H
#define VT_CLUSTER_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "config/config.h"
#include "util/errors.h"
#include "util/limits.h"
#include "util/strbuf.h"

struct cluster;

struct cluster_options {
    const struct vt_config *cfg;    /* [cluster] */
    struct cat_catalog *catalog;
    const char *runtime_dir;        /* downloads and the files handed to exports */
    int http_port;                  /* for the default advertise_url */
};

/* For role writer or reader: checks the storage settings and installs the
 * catalog hooks (call before cat_start). NULL with err set on a bad setting;
 * for standalone, NULL without an error (nothing to do). */
struct cluster *cluster_create(const struct cluster_options *o, struct vt_error *err);
/* Starts the background thread (the writer's catalog object, retries and
 * collection; the reader's polling). */
enum vt_err cluster_start(struct cluster *c, struct vt_error *err);
/* Stops and joins the thread (bounded: S3 requests are cancelled). */
void cluster_stop(struct cluster *c);
void cluster_destroy(struct cluster *c);

enum cfg_cluster_role cluster_role(const struct cluster *c);
/* A reader is ready once it has read the shared catalog and loaded a
 * generation of every dataset that has one (then it stays ready: later
 * swaps serve the old generation until the new one is in). *out_datasets =
 * registered datasets. */
bool cluster_reader_ready(struct cluster *c, int64_t *out_datasets);
/* Who the writer is, for a reader's 409: cluster.writer_url, else the URL
 * the writer advertised in the shared catalog, else "unknown". */
void cluster_writer_name(struct cluster *c, char *out, size_t cap);
/* The forward target (cluster.writer_url) or NULL. */
const char *cluster_writer_url(const struct cluster *c);

/* One request relayed to the writer (readers with writer_url). */
struct cluster_forward_req {
    const char *method;             /* "POST", "DELETE" */
    const char *path;               /* full path with the prefix and query string */
    const char *const *headers;     /* "Name: value" lines, NULL-terminated */
    const char *body;
    size_t body_len;
    int64_t deadline_ms;            /* monotonic; 0 = VT_CLUSTER_FORWARD_TIMEOUT_MS */
};
struct cluster_forward_resp {
    int status;
    char content_type[128];
    char retry_after[32];
    struct strbuf body;             /* at most VT_CLUSTER_FORWARD_MAX_BYTES */
};
/* Sends it and fills *out (release out->body). UNAVAILABLE (503) when the
 * writer cannot be reached. */
enum vt_err cluster_forward(struct cluster *c, const struct cluster_forward_req *r,
                            struct cluster_forward_resp *out, struct vt_error *err);

/* ------------------------------------------------- pure helpers (store.c) */

/* The millisecond timestamp of a ULID (its first 10 characters); -1 when it
 * is not one. */
int64_t cluster_ulid_ms(const char *id);

/* A generation's manifest as published. */
struct cluster_manifest {
    char dataset[VT_MAX_DATASET_NAME_BYTES + 1];
    char generation_id[27];
    int64_t rows;
    bool lazy;
    struct strvec col_names, col_types;
    struct strvec cast_names, cast_types; /* stored as another type, read back as these */
    char *file;                     /* the data file's name in the folder */
    int64_t file_size;
    char sha256[65];
    char *source_version;           /* may be NULL */
    int64_t published_at_us;
    int64_t build_ms;
    enum cat_refresh_source refresh_source;
    char writer[128];
};
/* JSON text of a manifest (malloc'd). */
char *cluster_manifest_json(const struct cluster_manifest *m);
/* Parses one; INVALID_CONFIG with a reason when it is not a manifest. */
enum vt_err cluster_manifest_parse(const char *text, size_t len, struct cluster_manifest *out,
                                   struct vt_error *err);
void cluster_manifest_release(struct cluster_manifest *m);

/* CURRENT: the current generation and the one it replaced. */
struct cluster_current {
    char generation_id[27];
    char previous[27];              /* "" = none */
    int64_t published_at_us;
    char writer[128];
};
char *cluster_current_json(const struct cluster_current *c);
enum vt_err cluster_current_parse(const char *text, size_t len, struct cluster_current *out,
                                  struct vt_error *err);

#endif
