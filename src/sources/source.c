/*
 * Source dispatch by kind (a table of the file source kinds), the projection over a snapshot's SELECT, and the
 * snapshot's one release (memory, temporary downloads, pinned links).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sources/rangecache.h"
#include "sources/sources_internal.h"
#include "util/file.h"
#include "util/timeutil.h"

/* The file source kinds: one row each (a new kind is a row and a resolver;
 * kind query is built from SQL by the catalog, not from files). */
struct source_kind {
    enum cfg_source_kind kind;
    enum vt_err (*resolve)(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           struct source_snapshot *out, bool *out_access_denied,
                           struct vt_error *err);
    enum vt_err (*measure)(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           int64_t *out_bytes, bool *out_access_denied, struct vt_error *err);
};

static const struct source_kind KINDS[] = {
    {CFG_SOURCE_PARQUET, source_parquet_resolve, source_parquet_measure},
    {CFG_SOURCE_DELTA, source_delta_resolve, source_delta_measure},
};

static const struct source_kind *kind_of(const struct vt_dataset_config *ds)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (KINDS[i].kind == ds->kind)
            return &KINDS[i];
    return NULL;
}

enum vt_err source_resolve(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           struct source_snapshot *out, bool *out_access_denied,
                           struct vt_error *err)
{
    if (out_access_denied)
        *out_access_denied = false;
    memset(out, 0, sizeof *out);
    const struct source_kind *k = kind_of(ds);
    if (!k)
        return vt_error_set(err, VT_ERR_INTERNAL, "dataset %s: its kind has no file source",
                            ds->name);
    return k->resolve(ds, ctx, out, out_access_denied, err);
}

enum vt_err source_measure(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           int64_t *out_bytes, bool *out_access_denied, struct vt_error *err)
{
    *out_bytes = 0;
    if (out_access_denied)
        *out_access_denied = false;
    const struct source_kind *k = kind_of(ds);
    if (!k)
        return vt_error_set(err, VT_ERR_INTERNAL, "dataset %s: its kind has no file source",
                            ds->name);
    return k->measure(ds, ctx, out_bytes, out_access_denied, err);
}

enum vt_err source_select_sql(const struct source_snapshot *snap, const struct strvec *columns,
                              struct strbuf *out, struct vt_error *err)
{
    if (!snap->select_sql)
        return vt_error_set(err, VT_ERR_INTERNAL, "snapshot has no SELECT");
    if (!columns || columns->len == 0) {
        sb_adds(out, snap->select_sql);
        return out->overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory")
                             : VT_ERR_OK;
    }
    sb_adds(out, "SELECT ");
    for (size_t i = 0; i < columns->len; i++) {
        const char *want = columns->items[i];
        const char *found = NULL;
        for (size_t k = 0; k < snap->n_schema && !found; k++)
            if (strcmp(snap->schema_names[k], want) == 0)
                found = snap->schema_names[k];
        for (size_t k = 0; k < snap->n_schema && !found; k++)
            if (strcasecmp(snap->schema_names[k], want) == 0)
                found = snap->schema_names[k];
        if (!found)
            return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                                "columns: \"%s\" is not a column of the source", want);
        if (i)
            sb_adds(out, ", ");
        sb_add_sql_ident(out, found);
    }
    sb_adds(out, " FROM (");
    sb_adds(out, snap->select_sql);
    sb_adds(out, ") AS src");
    return out->overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory") : VT_ERR_OK;
}

const char *source_temp_dir(const struct source_context *ctx)
{
    if (ctx && ctx->temp_dir && *ctx->temp_dir)
        return ctx->temp_dir;
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

char *source_temp_name(const struct source_context *ctx, const char *tag, size_t n)
{
    static atomic_uint seq;
    char ulid[27];
    ulid_new(ulid);
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_addf(&sb, "%s/vt-%s-%s-%zu-%u.parquet", source_temp_dir(ctx), tag, ulid, n,
            atomic_fetch_add(&seq, 1));
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb, NULL);
}

int source_snapshot_add_temp(struct source_snapshot *snap, char *path)
{
    char **v = realloc(snap->temp_files, (snap->n_temp_files + 1) * sizeof *v);
    if (!v)
        return -1;
    v[snap->n_temp_files++] = path;
    snap->temp_files = v;
    return 0;
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
    if (!snap)
        return;
    for (size_t i = 0; snap->files && i < snap->n_files; i++) {
        free(snap->files[i].path);
        free_strings(snap->files[i].partition_values, snap->n_partitions);
        dvset_remove(snap->files[i].dv);
    }
    free(snap->files);
    free_strings(snap->partition_columns, snap->n_partitions);
    free_strings(snap->partition_types, snap->n_partitions);
    free_strings(snap->schema_names, snap->n_schema);
    free_strings(snap->schema_types, snap->n_schema);
    free(snap->version);
    free(snap->select_sql);
    for (size_t i = 0; snap->temp_files && i < snap->n_temp_files; i++)
        if (snap->temp_files[i])
            unlink(snap->temp_files[i]);
    free_strings(snap->temp_files, snap->n_temp_files);
    /* The pin directory holds links only (never data): removing it and
     * closing the kept files releases the pinned sources. */
    if (snap->pin_dir)
        util_remove_tree(snap->pin_dir);
    free(snap->pin_dir);
    for (size_t i = 0; i < snap->n_pin_fds; i++)
        close(snap->pin_fds[i]);
    free(snap->pin_fds);
    free_strings(snap->link_paths, snap->n_links);
    free_strings(snap->link_sources, snap->n_links);
    source_lazy_destroy(snap->lazy);
    range_cache_release(snap->holds);
    memset(snap, 0, sizeof *snap);
}

enum vt_err source_check_bounds(const struct source_context *ctx, const char *what,
                                struct vt_error *err)
{
    if (!ctx)
        return VT_ERR_OK;
    if (ctx->cancel && atomic_load(ctx->cancel))
        return vt_error_set(err, VT_ERR_TIMEOUT, "%s: cancelled", what);
    if (ctx->deadline_ms && time_mono_ms() >= ctx->deadline_ms)
        return vt_error_set(err, VT_ERR_TIMEOUT, "%s: the build's deadline passed", what);
    return VT_ERR_OK;
}

bool source_snapshot_add_link(struct source_snapshot *snap, const char *link, const char *source)
{
    size_t n = snap->n_links;
    /* Grown in powers of two (n is a power of two when the arrays are full). */
    if ((n & (n - 1)) == 0) {
        size_t cap = n ? 2 * n : 4;
        char **a = realloc(snap->link_paths, cap * sizeof *a);
        if (!a)
            return false;
        snap->link_paths = a;
        char **b = realloc(snap->link_sources, cap * sizeof *b);
        if (!b)
            return false;
        snap->link_sources = b;
    }
    char *l = strdup(link), *src = strdup(source);
    if (!l || !src) {
        free(l);
        free(src);
        return false;
    }
    snap->link_paths[n] = l;
    snap->link_sources[n] = src;
    snap->n_links = n + 1;
    return true;
}

void source_snapshot_name_files(const struct source_snapshot *snap, struct vt_error *err)
{
    if (!snap || !err || !snap->n_links || !snap->pin_dir || !strstr(err->msg, snap->pin_dir))
        return;
    struct strbuf out;
    sb_init(&out, 0);
    const char *p = err->msg;
    while (*p) {
        size_t i = 0;
        size_t len = 0;
        for (; i < snap->n_links; i++) {
            len = strlen(snap->link_paths[i]);
            if (!strncmp(p, snap->link_paths[i], len))
                break;
        }
        if (i < snap->n_links) {
            sb_adds(&out, snap->link_sources[i]);
            p += len;
        } else {
            sb_addc(&out, *p++);
        }
    }
    if (!out.overflow)
        snprintf(err->msg, sizeof err->msg, "%s", out.buf);
    sb_release(&out);
}

void source_snapshot_settle(struct source_snapshot *snap)
{
    range_cache_release(snap->holds);
    snap->holds = NULL;
}

int64_t source_range_cache_bytes(void)
{
    return range_cache_bytes();
}
