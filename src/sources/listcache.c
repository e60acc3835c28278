/*
 * The listing cache of object-store Parquet sources ([datafusion]
 * list_files_cache, list_files_cache_mb, list_files_cache_ttl_secs; the
 * spec's settings, given the same meaning for our engine, issue 17).
 *
 * A rebuild of an S3 Parquet dataset (reload, scheduled refresh, a lazy
 * dataset measured for force_lazy_above_mb) lists its location again; with
 * the cache on, a listing younger than the TTL is reused instead of paging
 * through ListObjectsV2 again. The cost is staleness: objects added within
 * the TTL are not seen until it expires (and a rewritten object fails the
 * build's If-Match instead of being read). Delta sources never use it (the
 * log decides what is current), nor do local files (listing is cheap).
 *
 * Entries are keyed by endpoint, region, credentials' variable and
 * location; the bytes of all entries are kept under the budget by dropping
 * the oldest.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sources/sources_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

struct lc_entry {
    char *key;
    struct storage_listing l;
    int64_t at_ms;
    size_t bytes;
    struct lc_entry *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct lc_entry *entries;
static size_t total;

static void entry_free(struct lc_entry *e)
{
    free(e->key);
    storage_listing_release(&e->l);
    free(e);
}

static int copy_listing(const struct storage_listing *from, struct storage_listing *to)
{
    memset(to, 0, sizeof *to);
    for (size_t i = 0; i < from->n; i++)
        if (storage_listing_add(to, from->items[i].name, from->items[i].size,
                                from->items[i].etag) < 0) {
            storage_listing_release(to);
            return -1;
        }
    return 0;
}

/* Unlinks and frees *p (mu held). */
static void drop(struct lc_entry **p)
{
    struct lc_entry *e = *p;
    *p = e->next;
    total -= e->bytes;
    entry_free(e);
}

bool list_cache_get(const char *key, int64_t ttl_secs, struct storage_listing *out)
{
    bool hit = false;
    pthread_mutex_lock(&mu);
    for (struct lc_entry **p = &entries; *p; p = &(*p)->next) {
        if (strcmp((*p)->key, key) != 0)
            continue;
        if (ttl_secs > 0 && time_mono_ms() - (*p)->at_ms >= ttl_secs * 1000) {
            drop(p); /* expired */
            break;
        }
        hit = copy_listing(&(*p)->l, out) == 0;
        break;
    }
    pthread_mutex_unlock(&mu);
    return hit;
}

void list_cache_put(const char *key, const struct storage_listing *l, int64_t max_bytes)
{
    struct lc_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key)) || copy_listing(l, &e->l) != 0) {
        if (e)
            free(e->key);
        free(e);
        return; /* a cache: nothing lost but the next listing */
    }
    e->bytes = sizeof *e + strlen(key) + l->n * sizeof *l->items;
    for (size_t i = 0; i < l->n; i++)
        e->bytes += strlen(l->items[i].name) + 1 +
                    (l->items[i].etag ? strlen(l->items[i].etag) + 1 : 0);
    e->at_ms = time_mono_ms();
    pthread_mutex_lock(&mu);
    for (struct lc_entry **p = &entries; *p; p = &(*p)->next)
        if (strcmp((*p)->key, key) == 0) {
            drop(p);
            break;
        }
    if ((int64_t)e->bytes > max_bytes) {
        pthread_mutex_unlock(&mu);
        log_debug("listing cache: a listing of %zu bytes exceeds the budget", e->bytes);
        entry_free(e);
        return;
    }
    e->next = entries; /* newest first */
    entries = e;
    total += e->bytes;
    while ((int64_t)total > max_bytes) {
        struct lc_entry **oldest = &entries;
        while ((*oldest)->next)
            oldest = &(*oldest)->next;
        drop(oldest);
    }
    pthread_mutex_unlock(&mu);
}

size_t list_cache_bytes(void)
{
    pthread_mutex_lock(&mu);
    size_t n = total;
    pthread_mutex_unlock(&mu);
    return n;
}
