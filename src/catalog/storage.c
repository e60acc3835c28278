/*
 * Storage generations (see catalog_internal.h): a query dataset's rows kept
 * as Parquet under server.storage_dir, one folder per generation named by its
 * ULID:
 *
 *   <storage_dir>/<dataset>/<ULID>.tmp/data.parquet   being written
 *   <storage_dir>/<dataset>/<ULID>/data.parquet       complete (served)
 *   <storage_dir>/<dataset>/<ULID>/manifest.json      what it holds: rows, bytes,
 *                                                     when, and a hash of the
 *                                                     definition it was built from
 *
 * The write is crash-safe: DuckDB's COPY writes into the .tmp folder, the
 * file is fsynced, the manifest written (itself atomically), the folder
 * fsynced and renamed, and the dataset's folder fsynced. Only folders without
 * ".tmp" are ever opened, so a crash mid-write (kill -9, power loss) leaves
 * nothing that is served; the next start removes the leftovers.
 *
 * A generation's folder goes with the generation (its last reader), except
 * at shutdown: then it stays, so materialize.reuse_on_start can serve it at
 * the next start without a rebuild when the definition is unchanged.
 * Everything here removes only names this file writes (ULIDs, ULID.tmp), so
 * a storage_dir pointed at the wrong place never loses foreign files.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "catalog/catalog_internal.h"
#include "util/file.h"
#include "util/log.h"
#include "util/timeutil.h"

#define DATA_FILE "data.parquet"
#define MANIFEST_FILE "manifest.json"
#define MANIFEST_MAX_BYTES (64 * 1024)
#define MANIFEST_FORMAT 1

/* ------------------------------------------------------------- helpers */

static char *path2(const char *a, const char *b)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_addf(&sb, "%s/%s", a, b);
    size_t n;
    char *p = sb.overflow ? NULL : sb_detach(&sb, &n);
    sb_release(&sb);
    return p;
}

/* A generation folder name: a ULID (26 Crockford base32 characters),
 * optionally followed by ".tmp". */
static bool is_generation_name(const char *n, bool *out_tmp)
{
    size_t len = strlen(n);
    bool tmp = len == 30 && !strcmp(n + 26, ".tmp");
    if (len != 26 && !tmp)
        return false;
    for (size_t i = 0; i < 26; i++)
        if (!strchr("0123456789ABCDEFGHJKMNPQRSTVWXYZ", n[i]))
            return false;
    if (out_tmp)
        *out_tmp = tmp;
    return true;
}

/* The definition a generation was built from: its rows change when these do. */
static void definition_hash(const struct vt_dataset_config *cfg, char out[17])
{
    XXH3_state_t *st = XXH3_createState();
    if (!st) {
        snprintf(out, 17, "%016llx", 0ULL);
        return;
    }
    XXH3_64bits_reset(st);
    const char *sql = cfg->sql ? cfg->sql : "";
    XXH3_64bits_update(st, "vitrine-storage-1", 18);
    XXH3_64bits_update(st, sql, strlen(sql) + 1);
    for (size_t i = 0; i < cfg->columns.len; i++)
        XXH3_64bits_update(st, cfg->columns.items[i], strlen(cfg->columns.items[i]) + 1);
    XXH3_64bits_update(st, "|", 1);
    for (size_t i = 0; i < cfg->materialize.sort_by.len; i++)
        XXH3_64bits_update(st, cfg->materialize.sort_by.items[i],
                           strlen(cfg->materialize.sort_by.items[i]) + 1);
    snprintf(out, 17, "%016llx", (unsigned long long)XXH3_64bits_digest(st));
    XXH3_freeState(st);
}

void cat_storage_release(struct cat_storage_write *w)
{
    free(w->tmp_dir);
    free(w->file);
    free(w->dir);
    strvec_free(&w->cast_names);
    strvec_free(&w->cast_types);
    memset(w, 0, sizeof *w);
}

void cat_storage_discard(struct cat_storage_write *w)
{
    if (w->tmp_dir)
        cat_storage_remove_dir(w->tmp_dir);
    if (w->dir)
        cat_storage_remove_dir(w->dir);
    cat_storage_release(w);
}

void cat_storage_remove_dir(const char *dir)
{
    util_remove_tree(dir);
    char *parent = strdup(dir);
    char *slash = parent ? strrchr(parent, '/') : NULL;
    if (slash && slash != parent) {
        *slash = '\0';
        rmdir(parent); /* only when empty: the dataset has no generation left */
    }
    free(parent);
}

void cat_storage_read_sql(const struct cat_storage_write *w, struct strbuf *out)
{
    sb_adds(out, "SELECT *");
    if (w->cast_names.len) {
        sb_adds(out, " REPLACE (");
        for (size_t i = 0; i < w->cast_names.len; i++) {
            if (i)
                sb_adds(out, ", ");
            sb_adds(out, "CAST(");
            sb_add_sql_ident(out, w->cast_names.items[i]);
            sb_addf(out, " AS %s) AS ", w->cast_types.items[i]);
            sb_add_sql_ident(out, w->cast_names.items[i]);
        }
        sb_adds(out, ")");
    }
    sb_adds(out, " FROM read_parquet(");
    sb_add_sql_string(out, w->file);
    sb_adds(out, ")");
}

/* -------------------------------------------------------------- write */

/* The columns of `select_sql` that Parquet cannot hold as they are. */
static enum vt_err wide_integer_columns(duckdb_connection con, const char *select_sql,
                                        struct strvec *names, struct strvec *types,
                                        struct vt_error *err)
{
    duckdb_prepared_statement ps;
    if (eng_prepare(con, select_sql, &ps, VT_ERR_BUILD_FAILED, err) != VT_ERR_OK)
        return VT_ERR_BUILD_FAILED;
    idx_t n = duckdb_prepared_statement_column_count(ps);
    for (idx_t i = 0; i < n; i++) {
        duckdb_type t = duckdb_prepared_statement_column_type(ps, i);
        if (t != DUCKDB_TYPE_HUGEINT && t != DUCKDB_TYPE_UHUGEINT)
            continue;
        const char *name = duckdb_prepared_statement_column_name(ps, i);
        int rc = strvec_push(names, name ? name : "");
        duckdb_free((void *)name); /* DuckDB 1.4 returns a copy (see read_schema) */
        if (rc || strvec_push(types, t == DUCKDB_TYPE_HUGEINT ? "HUGEINT" : "UHUGEINT")) {
            duckdb_destroy_prepare(&ps);
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        }
    }
    duckdb_destroy_prepare(&ps);
    return VT_ERR_OK;
}

enum vt_err cat_storage_write_tmp(struct cat_catalog *cat, duckdb_connection con,
                                  const struct vt_dataset_config *cfg, const char *gen_id,
                                  const char *select_sql, struct cat_storage_write *w,
                                  struct vt_error *err)
{
    memset(w, 0, sizeof *w);
    const char *root = cat->cfg->server.storage_dir;
    if (!root)
        return vt_error_set(err, VT_ERR_BUILD_FAILED, "no server.storage_dir");
    char *ds_dir = path2(root, cfg->name);
    char tmp_name[40];
    snprintf(tmp_name, sizeof tmp_name, "%s.tmp", gen_id);
    w->tmp_dir = ds_dir ? path2(ds_dir, tmp_name) : NULL;
    w->file = w->tmp_dir ? path2(w->tmp_dir, DATA_FILE) : NULL;
    free(ds_dir);
    if (!w->file)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    if (util_make_dirs(w->tmp_dir) != 0)
        return vt_error_set(err, VT_ERR_BUILD_FAILED, "cannot create %s: %s", w->tmp_dir,
                            strerror(errno));
    struct strvec cast_names = {0}, cast_types = {0};
    enum vt_err rc = wide_integer_columns(con, select_sql, &cast_names, &cast_types, err);
    w->cast_names = cast_names;
    w->cast_types = cast_types;
    struct strbuf sql;
    sb_init(&sql, 0);
    if (!rc) {
        sb_adds(&sql, "COPY (SELECT *");
        if (cast_names.len) {
            sb_adds(&sql, " REPLACE (");
            for (size_t i = 0; i < cast_names.len; i++) {
                if (i)
                    sb_adds(&sql, ", ");
                sb_adds(&sql, "CAST(");
                sb_add_sql_ident(&sql, cast_names.items[i]);
                sb_adds(&sql, " AS DECIMAL(38,0)) AS ");
                sb_add_sql_ident(&sql, cast_names.items[i]);
            }
            sb_adds(&sql, ")");
        }
        sb_addf(&sql, " FROM (%s) AS \"w\") TO ", select_sql);
        sb_add_sql_string(&sql, w->file);
        /* Row groups of DuckDB's default size keep min/max statistics per
         * group: with the rows sorted by sort_by, filters on those columns
         * skip whole groups. */
        sb_adds(&sql, " (FORMAT parquet, COMPRESSION zstd)");
        duckdb_result res;
        if (sql.overflow) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        } else if (duckdb_query(con, sql.buf, &res) != DuckDBSuccess) {
            /* A saved query's text starts on line 2 of the COPY (see
             * cat_query_select_sql): DuckDB may quote it, never the rest. */
            char text[VT_ERROR_MSG_MAX];
            rc = vt_error_set(err, VT_ERR_BUILD_FAILED, "%s",
                              eng_error_excerpt(duckdb_result_error(&res), cfg->sql, 2, text,
                                                sizeof text));
            duckdb_destroy_result(&res);
        } else {
            w->rows = duckdb_value_int64(&res, 0, 0);
            duckdb_destroy_result(&res);
        }
    }
    sb_release(&sql);
    struct stat st;
    if (!rc && stat(w->file, &st) != 0)
        rc = vt_error_set(err, VT_ERR_BUILD_FAILED, "%s: %s", w->file, strerror(errno));
    if (!rc)
        w->bytes = (int64_t)st.st_size;
    return rc;
}

enum vt_err cat_storage_commit(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                               const char *gen_id, int64_t build_ms,
                               struct cat_storage_write *w, struct vt_error *err)
{
    (void)cat;
    if (util_fsync_path(w->file) != 0)
        return vt_error_set(err, VT_ERR_BUILD_FAILED, "cannot sync %s: %s", w->file,
                            strerror(errno));
    /* The casts to restore, so a reused generation reads back the same types. */
    json_t *casts = json_array();
    for (size_t i = 0; casts && i < w->cast_names.len; i++)
        json_array_append_new(casts, json_pack("{s:s, s:s}", "column", w->cast_names.items[i],
                                               "type", w->cast_types.items[i]));
    char def[17];
    definition_hash(cfg, def);
    char created[32];
    int64_t now = time_wall_us();
    w->created_us = now;
    time_format_rfc3339(now, created);
    json_t *m = casts ? json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:I, s:s, s:o}",
                                  "format", MANIFEST_FORMAT, "dataset", cfg->name,
                                  "generation_id", gen_id, "definition", def, "rows",
                                  (json_int_t)w->rows, "bytes", (json_int_t)w->bytes,
                                  "created_at", created, "created_at_us", (json_int_t)now,
                                  "build_ms", (json_int_t)build_ms, "file", DATA_FILE,
                                  "integer_casts", casts)
                      : NULL;
    char *text = m ? json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(m);
    if (!text)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    char *mpath = path2(w->tmp_dir, MANIFEST_FILE);
    enum vt_err rc = mpath ? util_write_file_atomic(mpath, text, strlen(text), 0644,
                                                    VT_ERR_BUILD_FAILED, err)
                           : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    free(mpath);
    free(text);
    if (rc)
        return rc;
    util_fsync_path(w->tmp_dir);
    /* The folder's final name makes it a generation. */
    char *final = strdup(w->tmp_dir);
    if (!final)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    final[strlen(final) - 4] = '\0'; /* drop ".tmp" */
    if (rename(w->tmp_dir, final) != 0) {
        rc = vt_error_set(err, VT_ERR_BUILD_FAILED, "cannot rename %s: %s", w->tmp_dir,
                          strerror(errno));
        free(final);
        return rc;
    }
    char *parent = strdup(final);
    char *slash = parent ? strrchr(parent, '/') : NULL;
    if (slash) {
        *slash = '\0';
        util_fsync_path(parent);
    }
    free(parent);
    free(w->tmp_dir);
    w->tmp_dir = NULL;
    w->dir = final;
    free(w->file);
    w->file = path2(final, DATA_FILE);
    if (!w->file)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    return VT_ERR_OK;
}

/* --------------------------------------------------------------- reuse */

/* Names of generation folders of <storage>/<name>, newest (largest ULID)
 * first. */
static size_t list_generations(const char *ds_dir, char ***out)
{
    *out = NULL;
    DIR *d = opendir(ds_dir);
    if (!d)
        return 0;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_generation_name(de->d_name, NULL))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            char **p = realloc(names, ncap * sizeof *p);
            if (!p)
                break;
            names = p;
            cap = ncap;
        }
        if (!(names[n] = strdup(de->d_name)))
            break;
        n++;
    }
    closedir(d);
    /* Newest first: ULIDs sort by time. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) < 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    *out = names;
    return n;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

bool cat_storage_find(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                      struct cat_storage_write *w, char out_id[27], int64_t *out_created_us,
                      int64_t *out_build_ms)
{
    memset(w, 0, sizeof *w);
    const char *root = cat->cfg->server.storage_dir;
    char *ds_dir = root ? path2(root, cfg->name) : NULL;
    if (!ds_dir)
        return false;
    char def[17];
    definition_hash(cfg, def);
    char **names;
    size_t n = list_generations(ds_dir, &names);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++) {
        bool tmp;
        if (!is_generation_name(names[i], &tmp) || tmp)
            continue;
        char *dir = path2(ds_dir, names[i]);
        char *mpath = dir ? path2(dir, MANIFEST_FILE) : NULL;
        char *text = NULL;
        size_t len;
        struct vt_error e = {0};
        json_t *m = NULL;
        if (mpath && util_read_file(mpath, MANIFEST_MAX_BYTES, VT_ERR_INTERNAL, &text, &len,
                                    &e) == VT_ERR_OK)
            m = json_loadb(text, len, 0, NULL);
        free(text);
        free(mpath);
        const char *mdef = json_string_value(json_object_get(m, "definition"));
        const char *mid = json_string_value(json_object_get(m, "generation_id"));
        struct stat st;
        char *file = dir ? path2(dir, DATA_FILE) : NULL;
        if (m && mdef && !strcmp(mdef, def) && mid && !strcmp(mid, names[i]) && file &&
            stat(file, &st) == 0 && S_ISREG(st.st_mode)) {
            w->dir = dir;
            w->file = file;
            dir = file = NULL;
            w->rows = json_integer_value(json_object_get(m, "rows"));
            size_t k;
            const json_t *c;
            json_array_foreach(json_object_get(m, "integer_casts"), k, c) {
                const char *col = json_string_value(json_object_get(c, "column"));
                const char *type = json_string_value(json_object_get(c, "type"));
                if (col && type && (!strcmp(type, "HUGEINT") || !strcmp(type, "UHUGEINT"))) {
                    strvec_push(&w->cast_names, col);
                    strvec_push(&w->cast_types, type);
                }
            }
            w->bytes = (int64_t)st.st_size;
            *out_created_us = json_integer_value(json_object_get(m, "created_at_us"));
            *out_build_ms = json_integer_value(json_object_get(m, "build_ms"));
            snprintf(out_id, 27, "%s", names[i]);
            found = true;
        }
        free(dir);
        free(file);
        json_decref(m);
    }
    free_names(names, n);
    free(ds_dir);
    return found;
}

void cat_storage_prune(struct cat_catalog *cat, const char *name, const char *keep_id)
{
    const char *root = cat->cfg->server.storage_dir;
    char *ds_dir = root ? path2(root, name) : NULL;
    if (!ds_dir)
        return;
    char **names;
    size_t n = list_generations(ds_dir, &names);
    for (size_t i = 0; i < n; i++) {
        if (keep_id && !strcmp(names[i], keep_id))
            continue;
        char *dir = path2(ds_dir, names[i]);
        if (dir) {
            log_debug("storage: removing %s", dir);
            util_remove_tree(dir);
        }
        free(dir);
    }
    free_names(names, n);
    rmdir(ds_dir); /* when empty */
    free(ds_dir);
}

void cat_storage_sweep(struct cat_catalog *cat)
{
    const char *root = cat->cfg->server.storage_dir;
    DIR *d = root ? opendir(root) : NULL;
    if (!d)
        return;
    struct strvec names = {0};
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.' && strvec_push(&names, de->d_name) != 0)
            break;
    closedir(d);
    for (size_t i = 0; i < names.len; i++) {
        const char *name = names.items[i];
        pthread_rwlock_rdlock(&cat->lock);
        struct cat_dataset *ds = cat_find_locked(cat, name);
        bool reuse = ds && ds->cfg.kind == CFG_SOURCE_QUERY && ds->cfg.materialize.reuse_on_start;
        pthread_rwlock_unlock(&cat->lock);
        char *ds_dir = path2(root, name);
        char **gens = NULL;
        size_t n = ds_dir ? list_generations(ds_dir, &gens) : 0;
        for (size_t k = 0; k < n; k++) {
            bool tmp = false;
            is_generation_name(gens[k], &tmp);
            /* Unfinished writes always go; complete ones stay only for a
             * dataset that may reuse them (the build keeps the newest that
             * matches and prunes the rest). */
            if (!tmp && reuse)
                continue;
            char *dir = path2(ds_dir, gens[k]);
            if (dir) {
                log_info("storage: removing %s (%s)", dir,
                         tmp ? "an unfinished write" : ds ? "not reused" : "no such dataset");
                util_remove_tree(dir);
            }
            free(dir);
        }
        if (ds_dir)
            rmdir(ds_dir);
        free_names(gens, n);
        free(ds_dir);
    }
    strvec_free(&names);
}
