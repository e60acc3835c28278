/*
 * Saved queries: SQL over the registered datasets, saved as a dataset of its
 * own (POST /api/v1/queries). This folder holds the two pieces that do not
 * need DuckDB or the catalog:
 *
 *  - the request: the body of POST /api/v1/queries parsed into a dataset
 *    block of kind "query" (saved_parse_request). The refresh, materialize
 *    and index objects are read by the config's own dataset parser, so a
 *    saved query and a [[dataset]] block follow one set of rules; the fields
 *    only a saved query has (kind temp|query, ttl) and its extra rules (ttl
 *    only for temp, no index with residency "lazy", no depends_on: it is
 *    inferred from the SQL) are checked here.
 *
 *  - the files: a saved query of kind "query" is kept as one file per
 *    dataset, <server.saved_queries_dir>/<name>.toml, holding one [[dataset]]
 *    block (the config file's format, so it can be read, diffed and moved
 *    into the config by hand). A file is replaced atomically (temp file,
 *    fsync, rename, fsync of the directory), so a crash leaves the old file
 *    or the new one. saved_load reads the directory at startup; a file that
 *    does not read, is not a saved query, or names a dataset the config (or
 *    an earlier file) has is skipped with an error naming it: one file never
 *    stops the start.
 *
 * The SQL gate (src/sql), registration, builds and deletion are the
 * catalog's business (src/catalog); the HTTP handlers are src/api/queries.c.
 */
#ifndef VT_SAVED_SAVED_H
#define VT_SAVED_SAVED_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "util/errors.h"
#include "util/strvec.h"

struct saved_request {
    struct vt_dataset_config ds; /* kind query: name, sql, refresh, materialize, index */
    bool persist;                /* kind "query" (kept across restarts); false: "temp" */
    int64_t ttl_ms;              /* temp only; 0 = no expiry */
};

/* Parses and checks a POST /api/v1/queries body (a JSON object). Errors:
 * UNKNOWN_FIELD (a key that is not a field), INVALID_FIELD (a missing or
 * mistyped field, ttl on kind "query", index with residency "lazy", a bad
 * refresh/materialize/index value), INVALID_NAME (the name rules, incl. the
 * reserved "reload-all"), LIMIT_EXCEEDED (sql longer than VT_MAX_SQL_BYTES).
 * On success release `out` with saved_request_release. */
enum vt_err saved_parse_request(const json_t *body, struct saved_request *out,
                                struct vt_error *err);
void saved_request_release(struct saved_request *r);

/* The file of dataset `name` in `dir` (malloc'd), e.g. /srv/datasets.d/top.toml. */
char *saved_file_path(const char *dir, const char *name);
/* Writes the dataset's file atomically, creating `dir` (and its parents) on
 * first use. INTERNAL with the path and reason on failure. */
enum vt_err saved_write(const char *dir, const struct vt_dataset_config *ds,
                        struct vt_error *err);
/* Removes the dataset's file (absent is fine) and syncs the directory. */
enum vt_err saved_remove(const char *dir, const char *name, struct vt_error *err);

struct saved_file {
    char *path;
    struct vt_dataset_config ds;
};

/* Reads every <name>.toml of `dir` (absent directory: none), in name order.
 * Each must hold exactly one [[dataset]] block of kind "query" whose name is
 * the file's, not also in `cfg` nor in an earlier file (ignoring case). A
 * file that does not (unreadable, not TOML, foreign, a second definition) is
 * skipped: one line naming the file and the reason goes into `skipped` (may
 * be NULL), and the others load. Fails only when the directory cannot be
 * read or memory runs out. */
enum vt_err saved_load(const char *dir, const struct vt_config *cfg, struct saved_file **out,
                       size_t *out_n, struct strvec *skipped, struct vt_error *err);
void saved_files_free(struct saved_file *files, size_t n);

#endif
