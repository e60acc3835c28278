/*
 * S3 storage: objects under s3://bucket/prefix through our S3 client (s3.c).
 *
 * Names are keys relative to the prefix. The root itself may be one object
 * (s3://b/dir/file.parquet): stat("") asks for it with HEAD. Listing uses
 * ListObjectsV2 without a delimiter and cuts at the depth asked for (a
 * delimiter is one more query parameter a signature must cover, and some S3
 * implementations sign it differently: moto decodes %2F before checking).
 * Fetching for a resident build downloads whole objects into temp files the
 * build deletes (If-Match with the listed ETag, so an object rewritten
 * between the listing and the download fails the build instead of mixing
 * versions). A lazy generation gets sparse files of the byte-range cache
 * (rangecache.h) holding only each object's footer for now: queries fetch
 * the ranges they read (lazy.c). Objects without an ETag (Delta data files,
 * immutable by protocol) are keyed by their size.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/rangecache.h"
#include "sources/s3.h"
#include "sources/sources_internal.h"
#include "util/limits.h"
#include "util/log.h"

struct s3_reader;

struct s3_storage {
    struct storage base;
    struct s3_client *c;
    const struct s3_config *cfg; /* the dataset's (borrowed, for the resolve) */
    char *bucket;
    char *key;                  /* the root key as configured ("" = bucket root) */
    char *prefix;               /* key + '/' unless empty or already ending in '/' */
    struct s3_reader *reader;   /* objects kept so far (lazy generations), or NULL */
};

/* ---- the reader of kept objects ------------------------------------------ */

/* One object kept for a lazy generation: where it is and which version. */
struct s3_kept {
    char *bucket, *key;
    char *version;              /* the cache key: the listed ETag, or "size:N" (Delta data
                                 * files are immutable and listed without one) */
    char *if_match;             /* the listed ETag, or NULL */
    int64_t size;
};

/* Its own client (the storage's goes with the resolve); one fetch at a time,
 * since the client's bounds are per call. */
struct s3_reader {
    struct storage_reader base;
    struct s3_client *c;
    pthread_mutex_t mu;
    char *cache_dir;
    int64_t max_bytes;
    struct s3_kept *objs;
    size_t n, cap;
};

static enum vt_err reader_ensure(struct storage_reader *r, size_t kept,
                                 const struct range_cache_span *need, size_t n,
                                 int64_t deadline_ms, const atomic_bool *cancel,
                                 struct range_cache_lease **holds, struct vt_error *err)
{
    struct s3_reader *sr = (struct s3_reader *)r;
    if (kept == 0 || kept > sr->n)
        return vt_error_set(err, VT_ERR_INTERNAL, "no kept object %zu", kept);
    const struct s3_kept *k = &sr->objs[kept - 1];
    struct range_cache_object o = {.cache_dir = sr->cache_dir, .max_bytes = sr->max_bytes,
                                   .bucket = k->bucket, .key = k->key, .etag = k->version,
                                   .if_match = k->if_match, .size = k->size};
    pthread_mutex_lock(&sr->mu);
    s3_client_bound(sr->c, deadline_ms, cancel);
    enum vt_err rc = range_cache_ensure(&o, sr->c, need, n, holds, NULL, err);
    s3_client_bound(sr->c, 0, NULL);
    pthread_mutex_unlock(&sr->mu);
    return rc;
}

static void reader_destroy(struct storage_reader *r)
{
    struct s3_reader *sr = (struct s3_reader *)r;
    for (size_t i = 0; i < sr->n; i++) {
        free(sr->objs[i].bucket);
        free(sr->objs[i].key);
        free(sr->objs[i].version);
        free(sr->objs[i].if_match);
    }
    free(sr->objs);
    s3_client_destroy(sr->c);
    pthread_mutex_destroy(&sr->mu);
    free(sr->cache_dir);
    free(sr);
}

static const struct storage_reader_ops s3_reader_ops = {
    .ensure = reader_ensure,
    .destroy = reader_destroy,
};

/* Keeps one object in the storage's reader (made on first use); its number
 * (> 0) in *out. */
static enum vt_err reader_keep(struct s3_storage *ss, const char *bucket, const char *key,
                               const char *version, const char *if_match, int64_t size,
                               const char *cache_dir, size_t *out, struct vt_error *err)
{
    if (!ss->reader) {
        struct s3_reader *sr = calloc(1, sizeof *sr);
        if (!sr)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        sr->base.ops = &s3_reader_ops;
        pthread_mutex_init(&sr->mu, NULL);
        sr->cache_dir = strdup(cache_dir);
        sr->max_bytes = ss->base.ctx ? ss->base.ctx->cache_max_bytes : 0;
        enum vt_err rc = sr->cache_dir ? s3_client_create(ss->cfg, &sr->c, err)
                                       : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        if (rc != VT_ERR_OK) {
            reader_destroy(&sr->base);
            return rc;
        }
        ss->reader = sr;
    }
    struct s3_reader *sr = ss->reader;
    if (sr->n == sr->cap) {
        size_t cap = sr->cap ? sr->cap * 2 : 16;
        struct s3_kept *p = realloc(sr->objs, cap * sizeof *p);
        if (!p)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        sr->objs = p;
        sr->cap = cap;
    }
    struct s3_kept *k = &sr->objs[sr->n];
    *k = (struct s3_kept){.bucket = strdup(bucket), .key = strdup(key),
                          .version = strdup(version),
                          .if_match = if_match ? strdup(if_match) : NULL, .size = size};
    if (!k->bucket || !k->key || !k->version || (if_match && !k->if_match)) {
        free(k->bucket);
        free(k->key);
        free(k->version);
        free(k->if_match);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *out = ++sr->n;
    return VT_ERR_OK;
}

static struct storage_reader *s3s_take_reader(struct storage *st)
{
    struct s3_storage *ss = (struct s3_storage *)st;
    struct s3_reader *sr = ss->reader;
    ss->reader = NULL;
    return sr ? &sr->base : NULL;
}

static void note(struct storage *st, const struct s3_outcome *oc)
{
    if (oc->access_denied)
        st->access_denied = true;
}

/* bucket and key of a name: relative to the root, or an absolute s3:// URL. */
static enum vt_err locate(const struct s3_storage *ss, const char *name, char **out_bucket,
                          char **out_key, struct vt_error *err)
{
    *out_bucket = *out_key = NULL;
    if (storage_is_s3(name)) {
        struct s3_url u;
        enum vt_err rc = s3_url_parse(name, &u, err);
        if (rc != VT_ERR_OK)
            return rc;
        *out_bucket = u.bucket;
        *out_key = u.key;
        return VT_ERR_OK;
    }
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_addf(&sb, "%s%s", *name ? ss->prefix : ss->key, name);
    *out_bucket = strdup(ss->bucket);
    *out_key = sb.overflow ? NULL : sb_detach(&sb, NULL);
    sb_release(&sb);
    if (!*out_bucket || !*out_key) {
        free(*out_bucket);
        free(*out_key);
        *out_bucket = *out_key = NULL;
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return VT_ERR_OK;
}

/* Listing page size: the server's default unless VITRINE_S3_LIST_PAGE_SIZE
 * (a test hook to exercise continuation tokens with few objects) says less. */
static int list_page_size(void)
{
    const char *v = getenv("VITRINE_S3_LIST_PAGE_SIZE");
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 && n <= 1000 ? (int)n : 0;
}

static int slashes(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '/';
    return n;
}

static enum vt_err s3s_list(struct storage *st, const char *dir, int max_depth,
                            const char *start_after, struct storage_listing *out,
                            struct vt_error *err)
{
    struct s3_storage *ss = (struct s3_storage *)st;
    memset(out, 0, sizeof *out);
    struct strbuf pfx, sa;
    sb_init(&pfx, 0);
    sb_init(&sa, 0);
    sb_addf(&pfx, "%s%s", ss->prefix, dir);
    if (*dir && dir[strlen(dir) - 1] != '/')
        sb_addc(&pfx, '/');
    if (start_after)
        sb_addf(&sa, "%s%s", ss->prefix, start_after);
    struct s3_listing l = {0};
    struct s3_outcome oc = {0};
    enum vt_err rc = pfx.overflow || sa.overflow
                         ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory")
                         : s3_list(ss->c, ss->bucket, pfx.buf ? pfx.buf : "",
                                   start_after ? sa.buf : NULL, NULL, list_page_size(), &l,
                                   &oc, err);
    note(st, &oc);
    size_t plen = strlen(ss->prefix), dlen = pfx.len;
    int limit = max_depth < 0 ? VT_SOURCE_MAX_DEPTH : max_depth;
    for (size_t i = 0; rc == VT_ERR_OK && i < l.n; i++) {
        const char *k = l.items[i].key;
        if (strncmp(k, pfx.buf ? pfx.buf : "", dlen) != 0 || slashes(k + dlen) > limit)
            continue;
        if (out->n >= VT_SOURCE_MAX_FILES)
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "more than %d objects under %s",
                              VT_SOURCE_MAX_FILES, st->location);
        else if (storage_listing_add(out, k + plen, l.items[i].size, l.items[i].etag) < 0)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    s3_listing_release(&l);
    sb_release(&pfx);
    sb_release(&sa);
    if (rc != VT_ERR_OK)
        storage_listing_release(out);
    return rc;
}

static enum vt_err s3s_stat(struct storage *st, const char *name, struct storage_object *out,
                            bool *out_missing, struct vt_error *err)
{
    struct s3_storage *ss = (struct s3_storage *)st;
    memset(out, 0, sizeof *out);
    *out_missing = false;
    char *bucket, *key;
    enum vt_err rc = locate(ss, name, &bucket, &key, err);
    if (rc != VT_ERR_OK)
        return rc;
    if (!*key || key[strlen(key) - 1] == '/') {
        *out_missing = true; /* a bucket root or a "directory" is no object */
    } else {
        struct s3_object o;
        struct s3_outcome oc = {0};
        struct vt_error lerr = {0};
        rc = s3_head(ss->c, bucket, key, &o, &oc, &lerr);
        note(st, &oc);
        if (rc != VT_ERR_OK && oc.not_found) {
            *out_missing = true;
            rc = VT_ERR_OK;
        } else if (rc != VT_ERR_OK) {
            vt_error_set(err, rc, "%s", vt_error_message(&lerr));
        } else {
            out->name = strdup(name);
            out->size = o.size;
            out->etag = o.etag;
            o.etag = NULL;
            s3_object_release(&o);
            if (!out->name)
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    free(bucket);
    free(key);
    return rc;
}

static enum vt_err s3s_read(struct storage *st, const char *name, int64_t off, int64_t len,
                            size_t max, char **out, size_t *out_len, bool *out_missing,
                            struct vt_error *err)
{
    struct s3_storage *ss = (struct s3_storage *)st;
    *out = NULL;
    *out_len = 0;
    if (out_missing)
        *out_missing = false;
    char *bucket, *key;
    enum vt_err rc = locate(ss, name, &bucket, &key, err);
    if (rc != VT_ERR_OK)
        return rc;
    struct s3_outcome oc = {0};
    struct vt_error lerr = {0};
    rc = s3_get_mem(ss->c, bucket, key, off, len, max, out, out_len, &oc, &lerr);
    note(st, &oc);
    free(bucket);
    free(key);
    if (rc != VT_ERR_OK && oc.not_found && out_missing) {
        *out_missing = true;
        return VT_ERR_OK;
    }
    if (rc != VT_ERR_OK)
        return vt_error_set(err, rc, "%s", vt_error_message(&lerr));
    return VT_ERR_OK;
}

/* The footer of one object present in its sparse file: the tail first, then
 * (a footer longer than the tail) the rest, as the last 8 bytes say. */
static enum vt_err fetch_footer(struct s3_storage *ss, const struct range_cache_object *o,
                                struct source_snapshot *snap, char **out_path,
                                struct vt_error *err)
{
    int64_t tail = o->size < VT_S3_FOOTER_PROBE_BYTES ? o->size : VT_S3_FOOTER_PROBE_BYTES;
    struct range_cache_span need = {o->size - tail, tail};
    enum vt_err rc = range_cache_ensure(o, ss->c, &need, 1, &snap->holds, out_path, err);
    if (rc != VT_ERR_OK || o->size < 12)
        return rc;
    unsigned char last[8];
    FILE *f = fopen(*out_path, "rb");
    bool ok = f && fseeko(f, (off_t)(o->size - 8), SEEK_SET) == 0 && fread(last, 1, 8, f) == 8;
    if (f)
        fclose(f);
    if (!ok || memcmp(last + 4, "PAR1", 4) != 0)
        return vt_error_set(err, VT_ERR_BUILD_FAILED, "s3://%s/%s is not a Parquet file",
                            o->bucket, o->key);
    int64_t flen = (int64_t)last[0] | (int64_t)last[1] << 8 | (int64_t)last[2] << 16 |
                   (int64_t)last[3] << 24;
    if (flen + 8 > o->size)
        return vt_error_set(err, VT_ERR_BUILD_FAILED, "s3://%s/%s: bad Parquet footer",
                            o->bucket, o->key);
    if (flen + 8 <= tail)
        return VT_ERR_OK;
    need = (struct range_cache_span){o->size - 8 - flen, flen + 8};
    char *again = NULL;
    rc = range_cache_ensure(o, ss->c, &need, 1, &snap->holds, &again, err);
    free(again);
    return rc;
}

static enum vt_err fetch_to_cache(struct s3_storage *ss, struct storage_fetch *items, size_t n,
                                  char **buckets, char **keys, struct source_snapshot *snap,
                                  struct vt_error *err)
{
    struct storage *st = &ss->base;
    char buf[4096];
    const char *dir = storage_cache_dir(st->ctx, buf, sizeof buf);
    enum vt_err rc = VT_ERR_OK;
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        if (items[i].size < 0) {
            struct storage_object o;
            bool missing = false;
            rc = s3s_stat(st, items[i].name, &o, &missing, err);
            if (rc == VT_ERR_OK && missing)
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s: %s is missing",
                                  st->location, items[i].name);
            if (rc == VT_ERR_OK)
                items[i].size = o.size;
            storage_object_release(&o);
            if (rc != VT_ERR_OK)
                break;
        }
        char tag[48];
        snprintf(tag, sizeof tag, "size:%lld", (long long)items[i].size);
        struct range_cache_object o = {
            .cache_dir = dir, .max_bytes = st->ctx ? st->ctx->cache_max_bytes : 0,
            .bucket = buckets[i], .key = keys[i],
            .etag = items[i].etag ? items[i].etag : tag, .if_match = items[i].etag,
            .size = items[i].size};
        rc = fetch_footer(ss, &o, snap, &items[i].path, err);
        if (rc == VT_ERR_OK)
            rc = reader_keep(ss, buckets[i], keys[i], o.etag, o.if_match, o.size, dir,
                             &items[i].kept, err);
    }
    return rc;
}

static enum vt_err fetch_to_temp(struct s3_storage *ss, struct storage_fetch *items, size_t n,
                                 char **buckets, char **keys, struct source_snapshot *snap,
                                 struct vt_error *err)
{
    struct storage *st = &ss->base;
    struct s3_download *jobs = calloc(n ? n : 1, sizeof *jobs);
    if (!jobs)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    enum vt_err rc = VT_ERR_OK;
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        char *path = source_temp_name(st->ctx, "s3", i);
        items[i].path = path ? strdup(path) : NULL;
        /* Owned by the snapshot from now on: a failed build deletes it. */
        if (!path || !items[i].path || source_snapshot_add_temp(snap, path) < 0) {
            free(path);
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        jobs[i].bucket = buckets[i];
        jobs[i].key = keys[i];
        jobs[i].if_match = items[i].etag;
        jobs[i].path = items[i].path;
    }
    if (rc == VT_ERR_OK) {
        struct s3_outcome oc = {0};
        rc = s3_download_many(ss->c, jobs, n, &oc, err);
        note(st, &oc);
    }
    free(jobs);
    return rc;
}

static enum vt_err s3s_fetch(struct storage *st, struct storage_fetch *items, size_t n,
                             enum storage_use use, struct source_snapshot *snap,
                             struct vt_error *err)
{
    struct s3_storage *ss = (struct s3_storage *)st;
    char **buckets = calloc(n ? n : 1, sizeof *buckets);
    char **keys = calloc(n ? n : 1, sizeof *keys);
    enum vt_err rc = buckets && keys ? VT_ERR_OK
                                     : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++)
        rc = locate(ss, items[i].name, &buckets[i], &keys[i], err);
    if (rc == VT_ERR_OK)
        rc = use == STORAGE_USE_KEEP ? fetch_to_cache(ss, items, n, buckets, keys, snap, err)
                                     : fetch_to_temp(ss, items, n, buckets, keys, snap, err);
    for (size_t i = 0; i < n; i++) {
        free(buckets ? buckets[i] : NULL);
        free(keys ? keys[i] : NULL);
    }
    free(buckets);
    free(keys);
    return rc;
}

/* Listings are cached per endpoint, region, credentials and location. */
static char *s3s_listing_key(struct storage *st)
{
    struct s3_storage *ss = (struct s3_storage *)st;
    const struct s3_config *c = ss->cfg;
    struct strbuf k;
    sb_init(&k, 0);
    sb_addf(&k, "%s\n%s\n%s\n%s", c && c->endpoint ? c->endpoint : "",
            c && c->region ? c->region : "", c && c->access_key_id_env ? c->access_key_id_env : "",
            st->location ? st->location : "");
    char *key = k.overflow ? NULL : sb_detach(&k, NULL);
    sb_release(&k);
    return key;
}

/* s3:// and s3a:// (Hadoop's name for the same store) URIs, read as s3://. */
static enum vt_err s3s_absolute_name(const struct storage *st, const char *uri, char **out,
                                     struct vt_error *err)
{
    *out = NULL;
    bool s3a = strncmp(uri, "s3a://", 6) == 0;
    if (!s3a && strncmp(uri, "s3://", 5) != 0)
        return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                            "%s: data file URI scheme not readable here: %.200s", st->location,
                            uri);
    struct strbuf name;
    sb_init(&name, 0);
    sb_addf(&name, "s3://%s", uri + (s3a ? 6 : 5));
    *out = name.overflow ? NULL : sb_detach(&name, NULL);
    sb_release(&name);
    return *out ? VT_ERR_OK : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
}

static void s3s_destroy(struct storage *st)
{
    struct s3_storage *ss = (struct s3_storage *)st;
    if (ss->reader)
        reader_destroy(&ss->reader->base);
    s3_client_destroy(ss->c);
    free(ss->bucket);
    free(ss->key);
    free(ss->prefix);
    free(ss);
}

static const struct storage_ops s3_ops = {
    .scheme = "s3",
    .list = s3s_list,
    .stat = s3s_stat,
    .read = s3s_read,
    .fetch = s3s_fetch,
    .take_reader = s3s_take_reader,
    .listing_key = s3s_listing_key,
    .absolute_name = s3s_absolute_name,
    .destroy = s3s_destroy,
};

enum vt_err storage_s3_open(const char *root, const struct s3_config *cfg,
                            const struct source_context *ctx, struct storage **out,
                            struct vt_error *err)
{
    *out = NULL;
    struct s3_url u;
    enum vt_err rc = s3_url_parse(root, &u, err);
    if (rc != VT_ERR_OK)
        return rc;
    struct s3_storage *ss = calloc(1, sizeof *ss);
    if (!ss) {
        s3_url_release(&u);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    ss->base.ops = &s3_ops;
    ss->cfg = cfg;
    ss->bucket = u.bucket;
    ss->key = u.key;
    size_t kl = strlen(ss->key);
    struct strbuf p;
    sb_init(&p, 0);
    sb_addf(&p, "%s%s", ss->key, kl && ss->key[kl - 1] != '/' ? "/" : "");
    ss->prefix = sb_detach(&p, NULL);
    if (!ss->prefix)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (rc == VT_ERR_OK)
        rc = s3_client_create(cfg, &ss->c, err);
    if (rc == VT_ERR_OK && ctx)
        s3_client_bound(ss->c, ctx->deadline_ms, ctx->cancel);
    if (rc != VT_ERR_OK) {
        s3s_destroy(&ss->base);
        return rc;
    }
    *out = &ss->base;
    return VT_ERR_OK;
}
