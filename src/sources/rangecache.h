/*
 * The byte-range cache of S3 objects read by lazy generations (see
 * rangecache.c): sparse local files holding the ranges queries needed,
 * fetched with ranged GETs under If-Match, bounded by a byte budget.
 */
#ifndef VT_SOURCES_RANGECACHE_H
#define VT_SOURCES_RANGECACHE_H

#include <stdint.h>

#include "sources/s3.h"

struct range_cache_object {
    const char *cache_dir;
    int64_t max_bytes;          /* budget of the whole cache; 0 = the default */
    const char *bucket, *key;
    const char *etag;           /* the version the generation was built with (the cache key) */
    const char *if_match;       /* sent as If-Match (the listed ETag), or NULL */
    int64_t size;
};

struct range_cache_span {
    int64_t off, len;
};

/* Entries a running query holds: not evicted until released. */
struct range_cache_lease {
    void *entry;
    struct range_cache_lease *next;
};

/* Makes need[0..n) of the object present in its local file (fetching what is
 * missing), adds a lease to *lease (may be NULL: none kept) and gives the
 * file's path (may be NULL). VT_ERR_SOURCE_CHANGED when the object's ETag is
 * not the generation's any more. */
enum vt_err range_cache_ensure(const struct range_cache_object *o, struct s3_client *c,
                               const struct range_cache_span *need, size_t n_need,
                               struct range_cache_lease **lease, char **out_path,
                               struct vt_error *err);
void range_cache_release(struct range_cache_lease *lease);
/* Bytes present in the cache now (tests, metrics). */
int64_t range_cache_bytes(void);

#endif
