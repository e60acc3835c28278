/*
 * Parquet sources, local or on S3 (one resolver over the storage interface):
 * lists the files a location names, reads hive partition values from their
 * paths, makes them readable by DuckDB (in place, pinned, downloaded or
 * cached, as the storage decides) and builds the SELECT over them.
 *
 * Location forms (the same for /local/paths and s3://bucket/keys):
 *   dir or dir/          every *.parquet / *.parq file below dir (any case, any
 *                        depth), skipping path segments that start with '_' or
 *                        '.' (_SUCCESS, _temporary/, .spark-staging/,
 *                        _delta_log/ ...); "dir" may also name one file
 *   dir/<glob>           "*" and "?" and [a-z] within a segment, "**" across
 *                        segments (s3_glob_match); nothing is skipped
 *
 * Partitioning (s3.partitioning, for local sources too): hive = key=value
 * directory segments of the path become columns (every file must have the
 * same keys in the same order); auto = the same when every file has them,
 * else none; none = no partition columns. Values are percent-decoded,
 * __HIVE_DEFAULT_PARTITION__ and NULL (what DuckDB writes) are NULL, and a
 * column is BIGINT when every value is an integer, DATE when every value is
 * YYYY-MM-DD, else VARCHAR. Partition
 * columns come after the file columns and win over a file column of the same
 * name.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sources/s3.h"
#include "sources/sources_internal.h"
#include "util/log.h"
#include "util/text.h"

#define HIVE_NULL "__HIVE_DEFAULT_PARTITION__"

/* ---- which files ------------------------------------------------------------ */

/* A location split into the storage root and the glob below it. */
struct where {
    char *root;                 /* the location, or its directory before the first wildcard */
    const char *pattern;        /* into the location; NULL when it has no wildcard */
    int max_depth;              /* directory levels the glob can match (-1: any, "**") */
    char *hive_base;            /* what precedes a name in the full path/key (hive parsing) */
};

static void where_release(struct where *w)
{
    free(w->root);
    free(w->hive_base);
}

static enum vt_err where_of(const char *loc, struct where *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    size_t wild = strcspn(loc, "*?[");
    size_t cut = wild;
    if (loc[wild]) {
        while (cut > 0 && loc[cut - 1] != '/')
            cut--;
        out->pattern = loc + cut;
        out->max_depth = strstr(out->pattern, "**") ? -1 : 0;
        for (const char *c = out->pattern; out->max_depth >= 0 && *c; c++)
            out->max_depth += *c == '/';
        out->root = cut ? strndup(loc, cut) : strdup(".");
    } else {
        out->root = strdup(loc);
        cut = strlen(loc);
    }
    /* Hive segments count from the start of the path (the key on S3), as in
     * any hive layout: a location inside year=2024/ still has a year. */
    struct strbuf hb;
    sb_init(&hb, 0);
    const char *path = storage_location_path(loc);
    size_t plen = path <= loc + cut ? (size_t)(loc + cut - path) : 0;
    sb_add(&hb, path, plen);
    if (!out->pattern && hb.len && hb.buf[hb.len - 1] != '/')
        sb_addc(&hb, '/');
    out->hive_base = sb_detach(&hb, NULL);
    if (!out->root || !out->hive_base) {
        where_release(out);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return VT_ERR_OK;
}

static bool has_suffix_ci(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcasecmp(s + n - m, suf) == 0;
}

/* Any path segment of rel (the file name too) starting with '_' or '.'. */
static bool has_hidden_segment(const char *rel)
{
    for (const char *seg = rel;;) {
        if (*seg == '_' || *seg == '.')
            return true;
        const char *slash = strchr(seg, '/');
        if (!slash)
            return false;
        seg = slash + 1;
    }
}

/* The files the location names, as storage objects (names relative to the
 * root; "" when the root is the one file). */
static enum vt_err select_files(struct storage *st, const struct where *w,
                                struct storage_listing *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    struct storage_listing l = {0};
    enum vt_err rc;
    if (!w->pattern) {
        struct storage_object one;
        bool missing;
        rc = st->ops->stat(st, "", &one, &missing, err);
        if (rc != VT_ERR_OK)
            return rc;
        if (!missing) {
            /* The location is one file. */
            int added = storage_listing_add(out, "", one.size, one.etag);
            storage_object_release(&one);
            return added < 0 ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory")
                             : VT_ERR_OK;
        }
    }
    rc = st->ops->list(st, "", w->pattern ? w->max_depth : -1, NULL, &l, err);
    if (rc != VT_ERR_OK)
        return rc;
    for (size_t i = 0; i < l.n; i++) {
        struct storage_object *o = &l.items[i];
        bool keep = w->pattern ? s3_glob_match(w->pattern, o->name)
                               : !has_hidden_segment(o->name) &&
                                     (has_suffix_ci(o->name, ".parquet") ||
                                      has_suffix_ci(o->name, ".parq"));
        if (!keep)
            continue;
        if (storage_listing_add(out, o->name, o->size, o->etag) < 0) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
    }
    storage_listing_release(&l);
    if (rc == VT_ERR_OK && out->n == 0)
        rc = vt_error_set(err, VT_ERR_SOURCE_EMPTY, "no Parquet files match %s", st->location);
    if (rc != VT_ERR_OK)
        storage_listing_release(out);
    return rc;
}

/* ---- hive partitions -------------------------------------------------------- */

struct hive_kv {
    char *key;
    char *value;                /* decoded; NULL = null */
};

static char *pct_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1), *w = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int h, l;
        if (s[i] == '%' && i + 2 < n + 1 && (h = text_hexval((unsigned char)s[i + 1])) >= 0 &&
            (l = text_hexval((unsigned char)s[i + 2])) >= 0 && (h | l)) {
            *w++ = (char)(h * 16 + l);
            i += 2;
        } else {
            *w++ = s[i];
        }
    }
    *w = '\0';
    return out;
}

/* key=value directory segments of one path, in order. */
static int parse_hive(const char *path, struct hive_kv **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    for (const char *seg = path;;) {
        const char *slash = strchr(seg, '/');
        if (!slash)
            break; /* the file name is never a partition */
        const char *eq = memchr(seg, '=', (size_t)(slash - seg));
        if (eq && eq > seg) {
            struct hive_kv *nv = realloc(*out, (*out_n + 1) * sizeof *nv);
            if (!nv)
                return -1;
            *out = nv;
            struct hive_kv *kv = &(*out)[(*out_n)++];
            kv->key = pct_decode(seg, (size_t)(eq - seg));
            size_t vl = (size_t)(slash - eq - 1);
            /* Spark and Hive write __HIVE_DEFAULT_PARTITION__ for NULL,
             * DuckDB writes NULL (and reads it back as NULL). */
            bool null = (vl == strlen(HIVE_NULL) && strncmp(eq + 1, HIVE_NULL, vl) == 0) ||
                        (vl == 4 && strncmp(eq + 1, "NULL", 4) == 0);
            kv->value = null ? NULL : pct_decode(eq + 1, vl);
            if (!kv->key || (!null && !kv->value))
                return -1;
        }
        seg = slash + 1;
    }
    return 0;
}

static void hive_free(struct hive_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

static bool is_int(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    size_t n = strlen(s);
    if (n == 0 || n > 18)
        return false; /* 18 digits always fit in BIGINT */
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static bool is_date(const char *s)
{
    return strlen(s) == 10 && s[4] == '-' && s[7] == '-' && s[0] >= '0' && s[0] <= '9' &&
           s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9' && s[3] >= '0' &&
           s[3] <= '9' && s[5] >= '0' && s[5] <= '1' && s[6] >= '0' && s[6] <= '9' &&
           s[8] >= '0' && s[8] <= '3' && s[9] >= '0' && s[9] <= '9';
}

/* Partition columns of the selected files into the snapshot (names, types,
 * and each file's values). */
static enum vt_err partitions(const struct vt_dataset_config *ds, const struct where *w,
                              const struct storage_listing *files, struct source_snapshot *out,
                              struct vt_error *err)
{
    if (ds->s3.partitioning == CFG_S3_PARTITIONING_NONE)
        return VT_ERR_OK;
    size_t n = files->n;
    struct hive_kv **hv = calloc(n, sizeof *hv);
    size_t *hn = calloc(n, sizeof *hn);
    enum vt_err rc = hv && hn ? VT_ERR_OK
                              : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    bool consistent = true;
    struct strbuf full;
    sb_init(&full, 0);
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        sb_reset(&full);
        sb_addf(&full, "%s%s", w->hive_base, files->items[i].name);
        if (full.overflow || parse_hive(full.buf, &hv[i], &hn[i]) < 0) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        if (hn[i] != hn[0])
            consistent = false;
        for (size_t k = 0; consistent && k < hn[i]; k++)
            if (strcmp(hv[i][k].key, hv[0][k].key) != 0)
                consistent = false;
    }
    sb_release(&full);
    if (rc == VT_ERR_OK && !consistent && ds->s3.partitioning == CFG_S3_PARTITIONING_HIVE)
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "s3.partitioning = \"hive\" but the files under %s do not all have "
                          "the same key=value directories",
                          ds->location);
    size_t np = rc == VT_ERR_OK && consistent && n ? hn[0] : 0;
    for (size_t k = 0; k < np && rc == VT_ERR_OK; k++)
        for (size_t k2 = k + 1; k2 < np; k2++)
            if (strcasecmp(hv[0][k].key, hv[0][k2].key) == 0)
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                  "partition key \"%.100s\" appears twice in the paths of %s",
                                  hv[0][k].key, ds->location);
    if (rc == VT_ERR_OK && np) {
        out->partition_columns = calloc(np, sizeof(char *));
        out->partition_types = calloc(np, sizeof(char *));
        if (!out->partition_columns || !out->partition_types)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < n && rc == VT_ERR_OK; i++)
            if (!(out->files[i].partition_values = calloc(np, sizeof(char *))))
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        out->n_partitions = rc == VT_ERR_OK ? np : 0;
    }
    for (size_t k = 0; k < out->n_partitions && rc == VT_ERR_OK; k++) {
        bool all_int = true, all_date = true, any = false;
        for (size_t i = 0; i < n; i++) {
            const char *v = hv[i][k].value;
            if (!v)
                continue;
            any = true;
            all_int = all_int && is_int(v);
            all_date = all_date && is_date(v);
        }
        out->partition_columns[k] = strdup(hv[0][k].key);
        out->partition_types[k] = strdup(!any ? "VARCHAR" : all_int ? "BIGINT"
                                                : all_date          ? "DATE"
                                                                    : "VARCHAR");
        if (!out->partition_columns[k] || !out->partition_types[k])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
            out->files[i].partition_values[k] = hv[i][k].value;
            hv[i][k].value = NULL;
        }
    }
    for (size_t i = 0; hv && i < n; i++)
        hive_free(hv[i], hn[i]);
    free(hv);
    free(hn);
    return rc;
}

/* ---- the snapshot -------------------------------------------------------------- */

static char *listing_digest(const char *scheme, const struct storage_listing *l)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return NULL;
    }
    EVP_DigestUpdate(ctx, scheme, strlen(scheme) + 1);
    for (size_t i = 0; i < l->n; i++) {
        const struct storage_object *o = &l->items[i];
        char sz[32];
        snprintf(sz, sizeof sz, "%lld", (long long)o->size);
        EVP_DigestUpdate(ctx, o->name, strlen(o->name) + 1);
        EVP_DigestUpdate(ctx, o->etag ? o->etag : "", strlen(o->etag ? o->etag : "") + 1);
        EVP_DigestUpdate(ctx, sz, strlen(sz) + 1);
    }
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    static const char digits[] = "0123456789abcdef";
    char *hex = malloc(17);
    if (!hex)
        return NULL;
    for (unsigned int i = 0; i < 8; i++) {
        hex[2 * i] = digits[i < mdlen ? md[i] >> 4 : 0];
        hex[2 * i + 1] = digits[i < mdlen ? md[i] & 15 : 0];
    }
    hex[16] = '\0';
    return hex;
}

/* Columns of the files, then the SELECT and the schema. */
static enum vt_err build_select(const struct vt_dataset_config *ds,
                                const struct source_context *ctx, struct storage *st,
                                const struct storage_fetch *fetched, struct source_snapshot *out,
                                struct vt_error *err)
{
    size_t n = out->n_files, np = out->n_partitions;
    const char **paths = calloc(n, sizeof *paths);
    const char **pvals = calloc(n * (np ? np : 1), sizeof *pvals);
    struct source_duck *duck = NULL;
    struct source_probe probe = {0};
    struct source_scan_column *cols = NULL;
    enum vt_err rc = paths && pvals ? VT_ERR_OK
                                    : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        paths[i] = out->files[i].path;
        for (size_t k = 0; k < np; k++)
            pvals[i * np + k] = out->files[i].partition_values[k];
    }
    if (rc == VT_ERR_OK)
        rc = source_duck_open(ctx, &duck, err);
    if (rc == VT_ERR_OK)
        rc = source_duck_probe(duck, paths, n, &probe, err);
    size_t cap = probe.n + np + 1, nc = 0;
    if (rc == VT_ERR_OK) {
        cols = calloc(cap, sizeof *cols);
        out->schema_names = calloc(cap, sizeof(char *));
        out->schema_types = calloc(cap, sizeof(char *));
        if (!cols || !out->schema_names || !out->schema_types)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t c = 0; c < probe.n + np && rc == VT_ERR_OK; c++) {
        const char *name, *type;
        if (c < probe.n) {
            name = probe.cols[c].name;
            bool shadowed = false;
            for (size_t k = 0; k < np; k++)
                shadowed = shadowed || strcasecmp(out->partition_columns[k], name) == 0;
            if (shadowed)
                continue;
            type = probe.cols[c].type.text;
            cols[nc] = (struct source_scan_column){.name = name, .partition = -1,
                                                   .file = &probe.cols[c]};
        } else {
            size_t k = c - probe.n;
            name = out->partition_columns[k];
            type = out->partition_types[k];
            cols[nc] = (struct source_scan_column){
                .name = name, .partition = (int)k,
                .type = strcmp(type, "VARCHAR") ? type : NULL};
        }
        out->schema_names[nc] = strdup(name);
        out->schema_types[nc] = strdup(type);
        out->n_schema = ++nc;
        if (!out->schema_names[nc - 1] || !out->schema_types[nc - 1])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (rc == VT_ERR_OK) {
        struct source_scan scan = {
            .paths = paths, .n_paths = n, .columns = cols, .n_columns = nc,
            .n_partitions = np, .partition_values = pvals,
        };
        rc = source_scan_sql(&scan, &out->select_sql, err);
        char *list = NULL;
        if (rc == VT_ERR_OK && ctx && ctx->for_lazy)
            rc = source_scan_select_list(&scan, &list, err);
        if (rc == VT_ERR_OK && list)
            rc = source_lazy_build(duck, out, ds, ctx, fetched, storage_take_reader(st), cols,
                                   nc, NULL, list, err);
        free(list);
    }
    free(cols);
    source_probe_release(&probe);
    source_duck_close(duck);
    free(paths);
    free(pvals);
    return rc;
}

static enum vt_err open_and_select(const struct vt_dataset_config *ds,
                                   const struct source_context *ctx, struct where *w,
                                   struct storage **st, struct storage_listing *files,
                                   bool *out_access_denied, struct vt_error *err)
{
    *st = NULL;
    enum vt_err rc = where_of(ds->location ? ds->location : "", w, err);
    if (rc == VT_ERR_OK)
        rc = storage_open(ds, w->root, ctx, st, err);
    /* A listing may come from the listing cache (S3 storages say where). */
    char *key = rc == VT_ERR_OK && ctx && ctx->list_cache ? storage_listing_key(*st) : NULL;
    if (rc == VT_ERR_OK && key && list_cache_get(key, ctx->list_cache_ttl_secs, files)) {
        log_debug("parquet %s: listing from the listing cache", ds->location);
    } else if (rc == VT_ERR_OK) {
        rc = select_files(*st, w, files, err);
        if (rc == VT_ERR_OK && key)
            list_cache_put(key, files, ctx->list_cache_max_bytes);
    }
    free(key);
    if (*st && (*st)->access_denied && out_access_denied)
        *out_access_denied = true;
    return rc;
}

enum vt_err source_parquet_measure(const struct vt_dataset_config *ds,
                                   const struct source_context *ctx, int64_t *out_bytes,
                                   bool *out_access_denied, struct vt_error *err)
{
    *out_bytes = 0;
    struct where w;
    struct storage *st;
    struct storage_listing files = {0};
    enum vt_err rc = open_and_select(ds, ctx, &w, &st, &files, out_access_denied, err);
    for (size_t i = 0; rc == VT_ERR_OK && i < files.n; i++)
        *out_bytes += files.items[i].size;
    storage_listing_release(&files);
    storage_close(st);
    where_release(&w);
    return rc;
}

enum vt_err source_parquet_resolve(const struct vt_dataset_config *ds,
                                   const struct source_context *ctx,
                                   struct source_snapshot *out, bool *out_access_denied,
                                   struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->kind = CFG_SOURCE_PARQUET;
    struct where w;
    struct storage *st;
    struct storage_listing files = {0};
    struct storage_fetch *fetch = NULL;
    enum vt_err rc = open_and_select(ds, ctx, &w, &st, &files, out_access_denied, err);
    size_t n = files.n;
    if (rc == VT_ERR_OK) {
        out->files = calloc(n, sizeof *out->files);
        fetch = calloc(n, sizeof *fetch);
        out->version = listing_digest(st->ops->scheme, &files);
        if (!out->files || !fetch || !out->version)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        else
            out->n_files = n;
    }
    if (rc == VT_ERR_OK)
        rc = partitions(ds, &w, &files, out, err);
    if (rc == VT_ERR_OK) {
        for (size_t i = 0; i < n; i++) {
            fetch[i] = (struct storage_fetch){.name = files.items[i].name,
                                              .size = files.items[i].size,
                                              .etag = files.items[i].etag};
            out->files[i].size = files.items[i].size;
            out->total_bytes += files.items[i].size;
        }
        rc = st->ops->fetch(st, fetch, n,
                            ctx && ctx->for_lazy ? STORAGE_USE_KEEP : STORAGE_USE_BUILD_PINNED,
                            out, err);
        if (st->access_denied && out_access_denied)
            *out_access_denied = true;
        out->total_bytes = 0;
        for (size_t i = 0; i < n; i++) {
            out->files[i].path = fetch[i].path;
            fetch[i].path = NULL;
            /* The pinned file's size (storage_local.c pin_all). */
            out->files[i].size = fetch[i].size;
            out->total_bytes += fetch[i].size;
        }
    }
    if (rc == VT_ERR_OK)
        rc = build_select(ds, ctx, st, fetch, out, err);
    if (rc == VT_ERR_OK)
        log_debug("parquet %s: %zu files, %lld bytes, %zu partition columns", ds->location, n,
                  (long long)out->total_bytes, out->n_partitions);
    free(fetch);
    storage_listing_release(&files);
    storage_close(st);
    where_release(&w);
    if (rc != VT_ERR_OK) {
        source_snapshot_name_files(out, err);
        source_snapshot_release(out);
    }
    return rc;
}
