/*
 * Source dispatch and the SELECT a build runs over a snapshot. Each source kind
 * resolves to local files; this file turns those files into one read_parquet
 * call (union_by_name, so files whose columns differ still load, with NULLs
 * where a file lacks a column) plus the dataset's `columns` projection.
 */
#include <stdlib.h>
#include <string.h>

#include "sources/delta.h"
#include "sources/source.h"

enum vt_err source_resolve(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           struct source_snapshot *out, bool *out_access_denied,
                           struct vt_error *err)
{
    if (out_access_denied)
        *out_access_denied = false;
    memset(out, 0, sizeof *out);
    const char *loc = ds->location ? ds->location : "";
    switch (ds->kind) {
    case CFG_SOURCE_PARQUET:
        if (strncmp(loc, "s3://", 5) == 0)
            return source_s3_parquet_resolve(ds, ctx, out, out_access_denied, err);
        return source_local_resolve(ds, out, err);
    case CFG_SOURCE_DELTA:
        return source_delta_resolve(ds, ctx, out, out_access_denied, err);
    case CFG_SOURCE_QUERY:
        break;
    }
    return vt_error_set(err, VT_ERR_INTERNAL, "dataset %s: kind query has no file source",
                        ds->name);
}

static int add_projection(struct strbuf *sql, const struct strvec *columns)
{
    if (!columns || columns->len == 0)
        return sb_adds(sql, "*");
    for (size_t i = 0; i < columns->len; i++) {
        if (i)
            sb_adds(sql, ", ");
        sb_add_sql_ident(sql, columns->items[i]);
    }
    return 0;
}

enum vt_err source_measure(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           int64_t *out_bytes, bool *out_access_denied, struct vt_error *err)
{
    *out_bytes = 0;
    if (out_access_denied)
        *out_access_denied = false;
    const char *loc = ds->location ? ds->location : "";
    if (ds->kind == CFG_SOURCE_DELTA)
        return source_delta_measure(ds, ctx, out_bytes, out_access_denied, err);
    if (ds->kind == CFG_SOURCE_PARQUET && strncmp(loc, "s3://", 5) == 0)
        return source_s3_parquet_measure(ds, ctx, out_bytes, out_access_denied, err);
    struct source_snapshot snap;
    enum vt_err rc = ds->kind == CFG_SOURCE_PARQUET ? source_local_resolve(ds, &snap, err)
                                                : vt_error_set(err, VT_ERR_INTERNAL, "no files");
    if (rc == VT_ERR_OK) {
        *out_bytes = snap.total_bytes;
        source_snapshot_release(&snap);
    }
    return rc;
}

enum vt_err source_select_sql(const struct source_snapshot *snap, const struct strvec *columns,
                              struct strbuf *sql, struct vt_error *err)
{
    if (snap->select_sql)
        return source_prebuilt_select_sql(snap, columns, sql, err);
    if (snap->n_files == 0)
        return vt_error_set(err, VT_ERR_SOURCE_EMPTY, "no files to read");
    sb_adds(sql, "SELECT ");
    add_projection(sql, columns);
    sb_adds(sql, " FROM read_parquet([");
    for (size_t i = 0; i < snap->n_files; i++) {
        if (i)
            sb_addc(sql, ',');
        /* Escaped so that [ * ? in a file name are not taken as a glob. */
        delta_sql_add_path_literal(sql, snap->files[i].path);
    }
    sb_addf(sql, "], union_by_name = true, hive_partitioning = %s)",
            snap->hive_from_paths ? "true" : "false");
    if (sql->overflow)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "source SQL too large");
    return VT_ERR_OK;
}

static void free_strings(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void source_snapshot_release(struct source_snapshot *snap)
{
    for (size_t i = 0; i < snap->n_files; i++) {
        free(snap->files[i].path);
        free_strings(snap->files[i].partition_values, snap->n_partitions);
    }
    free(snap->files);
    free_strings(snap->partition_columns, snap->n_partitions);
    free_strings(snap->partition_types, snap->n_partitions);
    free_strings(snap->schema_names, snap->n_schema);
    free_strings(snap->schema_types, snap->n_schema);
    free_strings(snap->temp_files, snap->n_temp_files);
    free(snap->version);
    free(snap->select_sql);
    memset(snap, 0, sizeof *snap);
}

const char *source_temp_dir(const struct source_context *ctx)
{
    if (ctx && ctx->temp_dir && *ctx->temp_dir)
        return ctx->temp_dir;
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}
