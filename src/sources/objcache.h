/*
 * The on-disk object cache that backs lazy S3 datasets: DuckDB views read local
 * files, so the objects a lazy snapshot needs are kept under one directory,
 * named by SHA-256(bucket, key, version tag). The version tag is the listing's
 * ETag (parquet) or "size:<n>" for Delta data files (immutable by protocol), so a
 * rewritten object gets a new name and is fetched again: revalidation happens on
 * every resolve through the listing, without extra requests.
 *
 * Budget: total bytes under the directory are kept at or below max_bytes
 * (source_context.cache_max_bytes, default VT_S3_CACHE_DEFAULT_MAX_BYTES) by
 * deleting least recently used files (file mtime, refreshed on every use),
 * except files pinned by a dataset's current snapshot and files used within the
 * last VT_S3_CACHE_GRACE_SECS (queries on a just-replaced generation may still
 * open them). Pinned files are never evicted, so the budget is a target that
 * the current snapshots of lazy datasets can exceed (logged as a warning).
 */
#ifndef VT_SOURCES_OBJCACHE_H
#define VT_SOURCES_OBJCACHE_H

#include <stdint.h>

#include "sources/s3.h"

struct s3_cache_item {
    const char *bucket;
    const char *key;
    const char *tag;        /* ETag or "size:<n>": part of the cache name */
    const char *if_match;   /* sent on download when not NULL */
    int64_t size;           /* expected size (listing / add action); -1 unknown */
    char *path;             /* out: local path inside the cache (caller frees) */
};

/* Makes every item present in the cache (downloading missing ones in
 * parallel), pins them for `owner` (replacing the owner's previous pins), then
 * evicts down to the budget. */
enum vt_err s3_cache_fetch(struct s3_client *c, const char *cache_dir, int64_t max_bytes,
                           const char *owner, struct s3_cache_item *items, size_t n,
                           struct s3_outcome *outcome, struct vt_error *err);

/* Drops the pins of a dataset that no longer exists (its files become
 * evictable). */
void s3_cache_unpin(const char *owner);

/* Evicts down to max_bytes now; returns the bytes left in the cache. */
int64_t s3_cache_evict(const char *cache_dir, int64_t max_bytes);

/* The cache file name for (bucket, key, tag): 64 hex chars + ".parquet". */
void s3_cache_name(const char *bucket, const char *key, const char *tag, char out[80]);

#endif
