/*
 * Parquet sources on S3: lists the objects a location names, reads hive
 * partition values from their keys, brings the objects to local disk (temp
 * files for resident builds, the bounded object cache for lazy views) and
 * prebuilds the SELECT over them.
 *
 * Location forms:
 *   s3://bucket/dir/ or s3://bucket/dir   every *.parquet / *.parq object below
 *                                         dir (any depth), skipping hidden
 *                                         segments (_temporary/, .spark-staging/,
 *                                         _delta_log/ ...); "dir" may also name
 *                                         a single object
 *   s3://bucket/dir/<glob>                glob over keys with "*" and "?" and
 *                                         [a-z] within a segment, "**" across
 *                                         segments (s3_glob_match); nothing is
 *                                         skipped
 *
 * s3.partitioning: hive = key=value directory segments become columns (all
 * objects must have the same keys in the same order); auto = the same when
 * every object has them, else none; none = no partition columns. Values are
 * percent-decoded, __HIVE_DEFAULT_PARTITION__ is NULL, and a column is BIGINT
 * when every value is an integer, DATE when every value is YYYY-MM-DD, else
 * VARCHAR. Partition columns come after the file columns and win over a file
 * column of the same name.
 */
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sources/delta.h"
#include "util/text.h"
#include "sources/objcache.h"
#include "sources/s3.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

#define HIVE_NULL "__HIVE_DEFAULT_PARTITION__"

static bool has_suffix_ci(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcasecmp(s + n - m, suf) == 0;
}

/* Any path segment of rel (before the file name too) starting with '_' or '.'. */
static bool has_hidden_segment(const char *rel)
{
    const char *seg = rel;
    for (;;) {
        if (*seg == '_' || *seg == '.')
            return true;
        const char *slash = strchr(seg, '/');
        if (!slash)
            return false;
        seg = slash + 1;
    }
}

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

/* key=value directory segments of one key, in order. */
static int parse_hive(const char *key, struct hive_kv **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    const char *seg = key;
    for (;;) {
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
            kv->value = (vl == strlen(HIVE_NULL) && strncmp(eq + 1, HIVE_NULL, vl) == 0)
                            ? NULL
                            : pct_decode(eq + 1, vl);
            if (!kv->key)
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

static struct delta_type t_bigint = {.kind = DELTA_T_PRIMITIVE, .name = "long", .duck = "BIGINT"};
static struct delta_type t_date = {.kind = DELTA_T_PRIMITIVE, .name = "date", .duck = "DATE"};

static char *listing_digest(const struct s3_listing *l, const size_t *sel, size_t n)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const struct s3_object *o = &l->items[sel[i]];
        char sz[32];
        snprintf(sz, sizeof sz, "%lld", (long long)o->size);
        EVP_DigestUpdate(ctx, o->key, strlen(o->key) + 1);
        EVP_DigestUpdate(ctx, o->etag ? o->etag : "", strlen(o->etag ? o->etag : "") + 1);
        EVP_DigestUpdate(ctx, sz, strlen(sz) + 1);
    }
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    char *hex = malloc(2 * 8 + 1);
    if (!hex)
        return NULL;
    static const char digits[] = "0123456789abcdef";
    for (unsigned int i = 0; i < 8; i++) {
        hex[2 * i] = digits[i < mdlen ? md[i] >> 4 : 0];
        hex[2 * i + 1] = digits[i < mdlen ? md[i] & 15 : 0];
    }
    hex[16] = '\0';
    return hex;
}

/* Listing page size: the server's default unless VITRINE_S3_LIST_PAGE_SIZE
 * (a test hook to exercise continuation tokens with few objects) says less. */
static int list_page_size(void)
{
    const char *v = getenv("VITRINE_S3_LIST_PAGE_SIZE");
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 && n <= 1000 ? (int)n : 0;
}

/* Lists what the location names: *out_sel indexes the chosen objects of *l. */
static enum vt_err select_objects(const struct vt_dataset_config *ds, struct s3_client *c,
                                  const struct s3_url *u, struct s3_listing *l, size_t **out_sel,
                                  size_t *out_n, struct s3_outcome *oc, struct vt_error *err)
{
    *out_sel = NULL;
    *out_n = 0;
    size_t lit = s3_glob_literal_prefix_len(u->key);
    bool glob = lit < strlen(u->key);
    bool single = false;
    char *prefix;
    if (glob) {
        /* List from the directory holding the first wildcard. */
        size_t cut = lit;
        while (cut > 0 && u->key[cut - 1] != '/')
            cut--;
        prefix = strndup(u->key, cut);
    } else {
        prefix = strdup(u->key);
    }
    if (!prefix)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    enum vt_err rc = s3_list(c, u->bucket, prefix, NULL, NULL, list_page_size(), l, oc, err);
    if (rc != VT_ERR_OK) {
        free(prefix);
        return rc;
    }
    size_t *sel = calloc(l->n ? l->n : 1, sizeof *sel), n = 0;
    if (!sel) {
        free(prefix);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!glob && *u->key && u->key[strlen(u->key) - 1] != '/') {
        for (size_t i = 0; i < l->n; i++)
            if (strcmp(l->items[i].key, u->key) == 0) {
                sel[n++] = i;
                single = true;
            }
    }
    if (!single) {
        size_t pl = strlen(prefix);
        bool dir_prefix = pl == 0 || prefix[pl - 1] == '/';
        for (size_t i = 0; i < l->n; i++) {
            const char *k = l->items[i].key;
            if (glob) {
                if (s3_glob_match(u->key, k))
                    sel[n++] = i;
                continue;
            }
            /* Directory mode: "dir" means "dir/...", never "dir2/...". */
            const char *rel = k + pl;
            if (!dir_prefix) {
                if (*rel != '/')
                    continue;
                rel++;
            }
            if (has_hidden_segment(rel))
                continue;
            if (has_suffix_ci(k, ".parquet") || has_suffix_ci(k, ".parq"))
                sel[n++] = i;
        }
    }
    free(prefix);
    if (n == 0) {
        free(sel);
        return vt_error_set(err, VT_ERR_SOURCE_EMPTY, "no Parquet objects match %s",
                            ds->location);
    }
    *out_sel = sel;
    *out_n = n;
    return VT_ERR_OK;
}

enum vt_err source_s3_parquet_measure(const struct vt_dataset_config *ds,
                                      const struct source_context *ctx, int64_t *out_bytes,
                                      bool *out_access_denied, struct vt_error *err)
{
    (void)ctx;
    *out_bytes = 0;
    if (out_access_denied)
        *out_access_denied = false;
    struct s3_url u;
    enum vt_err rc = s3_url_parse(ds->location, &u, err);
    if (rc != VT_ERR_OK)
        return rc;
    struct s3_client *c = NULL;
    struct s3_listing l = {0};
    size_t *sel = NULL, n = 0;
    struct s3_outcome oc = {0};
    rc = s3_client_create(&ds->s3, &c, err);
    if (rc == VT_ERR_OK)
        rc = select_objects(ds, c, &u, &l, &sel, &n, &oc, err);
    if (oc.access_denied && out_access_denied)
        *out_access_denied = true;
    for (size_t i = 0; rc == VT_ERR_OK && i < n; i++)
        *out_bytes += l.items[sel[i]].size;
    free(sel);
    s3_listing_release(&l);
    s3_client_destroy(c);
    s3_url_release(&u);
    return rc;
}

enum vt_err source_s3_parquet_resolve(const struct vt_dataset_config *ds,
                                      const struct source_context *ctx,
                                      struct source_snapshot *out, bool *out_access_denied,
                                      struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->kind = CFG_SOURCE_PARQUET;
    if (out_access_denied)
        *out_access_denied = false;
    struct s3_url u = {0};
    struct s3_client *c = NULL;
    struct s3_listing l = {0};
    size_t *sel = NULL, n = 0;
    struct hive_kv **hv = NULL;
    size_t *hn = NULL;
    char **paths = NULL, **pvals = NULL;
    char **dnames = NULL, **dtypes = NULL;
    size_t nd = 0, npart = 0;
    struct delta_probe probe = {0};
    struct delta_duck *duck = NULL;
    struct delta_sql_column *cols = NULL;
    const struct delta_type **ptypes = NULL;
    struct s3_cache_item *citems = NULL;
    struct s3_download *jobs = NULL;
    struct s3_outcome oc = {0};
    enum vt_err rc = s3_url_parse(ds->location, &u, err);
    if (rc != VT_ERR_OK)
        goto done;
    rc = s3_client_create(&ds->s3, &c, err);
    if (rc != VT_ERR_OK)
        goto done;

    /* 1. What to list and how to filter. */
    rc = select_objects(ds, c, &u, &l, &sel, &n, &oc, err);
    if (oc.access_denied && out_access_denied)
        *out_access_denied = true;
    if (rc != VT_ERR_OK)
        goto done;

    /* 2. Hive partitions. */
    if (ds->s3.partitioning != CFG_S3_PARTITIONING_NONE) {
        hv = calloc(n, sizeof *hv);
        hn = calloc(n, sizeof *hn);
        if (!hv || !hn) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        bool consistent = true;
        for (size_t i = 0; i < n; i++) {
            if (parse_hive(l.items[sel[i]].key, &hv[i], &hn[i]) < 0) {
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
                goto done;
            }
            if (hn[i] != hn[0])
                consistent = false;
            for (size_t k = 0; consistent && k < hn[i]; k++)
                if (strcmp(hv[i][k].key, hv[0][k].key) != 0)
                    consistent = false;
        }
        if (!consistent && ds->s3.partitioning == CFG_S3_PARTITIONING_HIVE) {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                              "s3.partitioning = \"hive\" but the objects under %s do not all "
                              "have the same key=value directories",
                              ds->location);
            goto done;
        }
        npart = consistent ? hn[0] : 0;
        for (size_t k = 0; k < npart; k++)
            for (size_t k2 = k + 1; k2 < npart; k2++)
                if (strcasecmp(hv[0][k].key, hv[0][k2].key) == 0) {
                    rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                      "partition key \"%.100s\" appears twice in the keys of %s",
                                      hv[0][k].key, ds->location);
                    goto done;
                }
    }
    ptypes = calloc(npart ? npart : 1, sizeof *ptypes);
    pvals = calloc(n * (npart ? npart : 1), sizeof *pvals);
    paths = calloc(n, sizeof *paths);
    out->files = calloc(n, sizeof *out->files);
    if (!ptypes || !pvals || !paths || !out->files) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    out->n_files = n;
    for (size_t k = 0; k < npart; k++) {
        bool all_int = true, all_date = true, any = false;
        for (size_t i = 0; i < n; i++) {
            const char *v = hv[i][k].value;
            if (!v)
                continue;
            any = true;
            all_int = all_int && is_int(v);
            all_date = all_date && is_date(v);
        }
        ptypes[k] = !any ? NULL : all_int ? &t_bigint : all_date ? &t_date : NULL;
        for (size_t i = 0; i < n; i++) {
            const char *v = hv[i][k].value;
            if (v) {
                pvals[i * npart + k] = strdup(v);
                if (!pvals[i * npart + k]) {
                    rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
                    goto done;
                }
            }
        }
    }

    /* 3. Local copies. */
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        out->files[i].size = l.items[sel[i]].size;
        total += l.items[sel[i]].size;
    }
    out->total_bytes = total;
    if (ctx && ctx->for_lazy) {
        citems = calloc(n, sizeof *citems);
        if (!citems) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        for (size_t i = 0; i < n; i++) {
            const struct s3_object *o = &l.items[sel[i]];
            citems[i].bucket = u.bucket;
            citems[i].key = o->key;
            citems[i].tag = o->etag ? o->etag : "";
            citems[i].if_match = o->etag;
            citems[i].size = o->size;
        }
        const char *cdir = ctx->cache_dir;
        char fallback[4096];
        if (!cdir || !*cdir) {
            snprintf(fallback, sizeof fallback, "%s/vitrine-s3-cache", source_temp_dir(ctx));
            cdir = fallback;
        }
        rc = s3_cache_fetch(c, cdir, ctx->cache_max_bytes, ds->name ? ds->name : "", citems, n,
                            &oc, err);
        if (rc == VT_ERR_OK)
            for (size_t i = 0; i < n; i++) {
                paths[i] = citems[i].path;
                citems[i].path = NULL;
            }
    } else {
        static atomic_uint seq;
        jobs = calloc(n, sizeof *jobs);
        out->temp_files = calloc(n, sizeof *out->temp_files);
        if (!jobs || !out->temp_files) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        char ulid[27];
        ulid_new(ulid);
        for (size_t i = 0; i < n; i++) {
            struct strbuf p;
            sb_init(&p, 0);
            sb_addf(&p, "%s/vt-s3-%s-%zu-%u.parquet", source_temp_dir(ctx), ulid, i,
                    atomic_fetch_add(&seq, 1));
            paths[i] = sb_detach(&p, NULL);
            out->temp_files[i] = paths[i] ? strdup(paths[i]) : NULL;
            if (!paths[i] || !out->temp_files[i]) {
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
                goto done;
            }
            out->n_temp_files = i + 1;
            jobs[i].bucket = u.bucket;
            jobs[i].key = l.items[sel[i]].key;
            jobs[i].if_match = l.items[sel[i]].etag;
            jobs[i].path = paths[i];
        }
        rc = s3_download_many(c, jobs, n, &oc, err);
    }
    if (oc.access_denied && out_access_denied)
        *out_access_denied = true;
    if (rc != VT_ERR_OK)
        goto done;

    /* 4. Columns of the files, then the SELECT. */
    rc = delta_duck_open(&duck, err);
    if (rc != VT_ERR_OK)
        goto done;
    {
        struct strbuf from;
        sb_init(&from, 0);
        sb_adds(&from, "read_parquet([");
        for (size_t i = 0; i < n; i++) {
            if (i)
                sb_adds(&from, ", ");
            delta_sql_add_path_literal(&from, paths[i]);
        }
        sb_adds(&from, "], union_by_name = true, hive_partitioning = false)");
        rc = from.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory")
                           : delta_duck_describe(duck, from.buf, &dnames, &dtypes, &nd, err);
        sb_release(&from);
        if (rc != VT_ERR_OK)
            goto done;
    }
    probe.cols = calloc(nd ? nd : 1, sizeof *probe.cols);
    cols = calloc(nd + npart + 1, sizeof *cols);
    out->schema_names = calloc(nd + npart + 1, sizeof *out->schema_names);
    out->schema_types = calloc(nd + npart + 1, sizeof *out->schema_types);
    out->partition_columns = calloc(npart ? npart : 1, sizeof *out->partition_columns);
    out->partition_types = calloc(npart ? npart : 1, sizeof *out->partition_types);
    if (!probe.cols || !cols || !out->schema_names || !out->schema_types ||
        !out->partition_columns || !out->partition_types) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    size_t nc = 0;
    for (size_t i = 0; i < nd; i++) {
        probe.cols[probe.n].name = strdup(dnames[i]);
        if (!probe.cols[probe.n].name) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        probe.n++;
        bool shadowed = false;
        for (size_t k = 0; k < npart; k++)
            if (strcasecmp(hv[0][k].key, dnames[i]) == 0)
                shadowed = true;
        if (shadowed)
            continue;
        cols[nc].name = dnames[i];
        cols[nc].duck_type = dtypes[i];
        cols[nc].partition_index = -1;
        out->schema_names[nc] = strdup(dnames[i]);
        out->schema_types[nc] = strdup(dtypes[i]);
        nc++;
        out->n_schema = nc;
    }
    for (size_t k = 0; k < npart; k++) {
        cols[nc].name = hv[0][k].key;
        cols[nc].partition_index = (int)k;
        cols[nc].partition_type = ptypes[k];
        out->schema_names[nc] = strdup(hv[0][k].key);
        out->schema_types[nc] = strdup(ptypes[k] ? ptypes[k]->duck : "VARCHAR");
        out->partition_columns[k] = strdup(hv[0][k].key);
        out->partition_types[k] = strdup(ptypes[k] ? ptypes[k]->duck : "VARCHAR");
        out->n_partitions = k + 1;
        nc++;
        out->n_schema = nc;
    }
    for (size_t i = 0; i < nc; i++)
        if (!out->schema_names[i] || !out->schema_types[i])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t k = 0; k < npart; k++)
        if (!out->partition_columns[k] || !out->partition_types[k])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (rc != VT_ERR_OK)
        goto done;
    struct delta_sql_input in = {
        .paths = (const char *const *)paths,
        .n_paths = n,
        .columns = cols,
        .n_columns = nc,
        .n_partitions = npart,
        .partition_values = (const char *const *)pvals,
        .probe = &probe,
    };
    rc = delta_sql_build_string(&in, &out->select_sql, err);
    if (rc != VT_ERR_OK)
        goto done;
    out->version = listing_digest(&l, sel, n);
    if (!out->select_sql || !out->version) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        out->files[i].path = paths[i];
        paths[i] = NULL;
        if (npart) {
            out->files[i].partition_values = calloc(npart, sizeof(char *));
            if (!out->files[i].partition_values) {
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
                goto done;
            }
            for (size_t k = 0; k < npart; k++) {
                out->files[i].partition_values[k] = pvals[i * npart + k];
                pvals[i * npart + k] = NULL;
            }
        }
    }
    log_debug("s3 parquet %s: %zu objects, %lld bytes, %zu partition columns", ds->location, n,
              (long long)total, npart);
done:
    if (paths) {
        for (size_t i = 0; i < n; i++)
            free(paths[i]);
        free(paths);
    }
    if (pvals) {
        for (size_t i = 0; i < n * (npart ? npart : 1); i++)
            free(pvals[i]);
        free(pvals);
    }
    if (hv) {
        for (size_t i = 0; i < n; i++)
            hive_free(hv[i], hn[i]);
        free(hv);
    }
    free(hn);
    if (dnames) {
        for (size_t i = 0; i < nd; i++) {
            free(dnames[i]);
            free(dtypes[i]);
        }
        free(dnames);
        free(dtypes);
    }
    if (citems) {
        for (size_t i = 0; i < n; i++)
            free(citems[i].path);
        free(citems);
    }
    free(jobs);
    free(cols);
    free(ptypes);
    delta_probe_release(&probe);
    delta_duck_close(duck);
    free(sel);
    s3_listing_release(&l);
    s3_client_destroy(c);
    s3_url_release(&u);
    if (rc != VT_ERR_OK)
        delta_snapshot_discard(out);
    return rc;
}
