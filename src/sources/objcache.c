/*
 * The bounded on-disk cache of S3 objects for lazy datasets (see objcache.h for
 * the rules). State lives in the file system (name = hash of bucket/key/tag,
 * mtime = last use), so a restart reuses what is on disk. Within the process a
 * mutex orders "is it there / touch / pin" against eviction, so a file found
 * present cannot be evicted before it is pinned.
 */
#include "sources/objcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/limits.h"
#include "util/log.h"

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

/* Pins: for each owner (dataset name) the cache file names of its current
 * snapshot. Few datasets, so a flat array is enough. */
struct pin_set {
    char *owner;
    char **names;
    size_t n;
};
static struct pin_set *pins;
static size_t n_pins;

void s3_cache_name(const char *bucket, const char *key, const char *tag, char out[80])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    /* NUL separators: no (bucket, key, tag) triple can collide with another. */
    if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1) {
        EVP_DigestUpdate(ctx, bucket, strlen(bucket) + 1);
        EVP_DigestUpdate(ctx, key, strlen(key) + 1);
        EVP_DigestUpdate(ctx, tag ? tag : "", strlen(tag ? tag : "") + 1);
        EVP_DigestFinal_ex(ctx, md, &mdlen);
    }
    EVP_MD_CTX_free(ctx);
    static const char hex[] = "0123456789abcdef";
    size_t j = 0;
    for (unsigned int i = 0; i < mdlen && i < 32; i++) {
        out[j++] = hex[md[i] >> 4];
        out[j++] = hex[md[i] & 15];
    }
    memcpy(out + j, ".parquet", 9);
}

static bool is_cache_name(const char *n)
{
    size_t l = strlen(n);
    if (l != 64 + 8 || strcmp(n + 64, ".parquet") != 0)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return false;
    return true;
}

static bool is_pinned_locked(const char *name)
{
    for (size_t i = 0; i < n_pins; i++)
        for (size_t j = 0; j < pins[i].n; j++)
            if (strcmp(pins[i].names[j], name) == 0)
                return true;
    return false;
}

static void pin_set_free(struct pin_set *p)
{
    for (size_t j = 0; j < p->n; j++)
        free(p->names[j]);
    free(p->names);
    free(p->owner);
}

void s3_cache_unpin(const char *owner)
{
    pthread_mutex_lock(&cache_mu);
    for (size_t i = 0; i < n_pins; i++) {
        if (strcmp(pins[i].owner, owner) == 0) {
            pin_set_free(&pins[i]);
            pins[i] = pins[--n_pins];
            break;
        }
    }
    if (n_pins == 0) {
        free(pins);
        pins = NULL;
    }
    pthread_mutex_unlock(&cache_mu);
}

/* Replaces the owner's pins; takes ownership of names on success. */
static int pin_replace_locked(const char *owner, char **names, size_t n)
{
    for (size_t i = 0; i < n_pins; i++) {
        if (strcmp(pins[i].owner, owner) == 0) {
            for (size_t j = 0; j < pins[i].n; j++)
                free(pins[i].names[j]);
            free(pins[i].names);
            pins[i].names = names;
            pins[i].n = n;
            return 0;
        }
    }
    struct pin_set *np = realloc(pins, (n_pins + 1) * sizeof *np);
    if (!np)
        return -1;
    pins = np;
    pins[n_pins].owner = strdup(owner);
    if (!pins[n_pins].owner)
        return -1;
    pins[n_pins].names = names;
    pins[n_pins].n = n;
    n_pins++;
    return 0;
}

/* Adds copies of names to the owner's pins (creating the owner). */
static int pin_add_locked(const char *owner, char *const *names, size_t n)
{
    struct pin_set *ps = NULL;
    for (size_t i = 0; i < n_pins; i++)
        if (strcmp(pins[i].owner, owner) == 0)
            ps = &pins[i];
    if (!ps) {
        char **none = calloc(1, sizeof *none);
        if (!none || pin_replace_locked(owner, none, 0) != 0) {
            free(none);
            return -1;
        }
        ps = &pins[n_pins - 1];
    }
    char **nn = realloc(ps->names, (ps->n + n + 1) * sizeof *nn);
    if (!nn)
        return -1;
    ps->names = nn;
    for (size_t i = 0; i < n; i++) {
        ps->names[ps->n] = strdup(names[i]);
        if (!ps->names[ps->n])
            return -1;
        ps->n++;
    }
    return 0;
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof tmp)
        return -1;
    memcpy(tmp, dir, n + 1);
    for (size_t i = 1; i < n; i++) {
        if (tmp[i] == '/') {
            tmp[i] = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
                return -1;
            tmp[i] = '/';
        }
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

struct cache_entry {
    char name[80];
    int64_t size;
    time_t mtime;
};

static int cmp_mtime(const void *a, const void *b)
{
    const struct cache_entry *x = a, *y = b;
    return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

static int64_t evict_locked(const char *cache_dir, int64_t max_bytes)
{
    DIR *d = opendir(cache_dir);
    if (!d)
        return 0;
    struct cache_entry *ents = NULL;
    size_t n = 0, cap = 0;
    int64_t total = 0;
    time_t now = time(NULL);
    struct dirent *de;
    char path[4096];
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        size_t l = strlen(nm);
        bool part = l > 5 && strcmp(nm + l - 5, ".part") == 0;
        if (!part && !is_cache_name(nm))
            continue; /* not ours: never touch it */
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", cache_dir, nm) >= (int)sizeof path ||
            stat(path, &st) != 0)
            continue;
        if (part) {
            /* Leftover of a crashed download (live ones are seconds old). */
            if (now - st.st_mtime > 24 * 3600)
                unlink(path);
            continue;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            struct cache_entry *ne = realloc(ents, nc * sizeof *ne);
            if (!ne)
                break;
            ents = ne;
            cap = nc;
        }
        if (l >= sizeof ents[n].name)
            continue; /* cannot happen for cache names (72 bytes) */
        memcpy(ents[n].name, nm, l + 1);
        ents[n].size = st.st_size;
        ents[n].mtime = st.st_mtime;
        total += st.st_size;
        n++;
    }
    closedir(d);
    if (total > max_bytes && n > 0) {
        qsort(ents, n, sizeof *ents, cmp_mtime);
        for (size_t i = 0; i < n && total > max_bytes; i++) {
            if (is_pinned_locked(ents[i].name))
                continue;
            if (now - ents[i].mtime < VT_S3_CACHE_GRACE_SECS)
                continue;
            snprintf(path, sizeof path, "%s/%s", cache_dir, ents[i].name);
            if (unlink(path) == 0) {
                total -= ents[i].size;
                log_debug("s3 cache: evicted %s (%lld bytes)", ents[i].name,
                          (long long)ents[i].size);
            }
        }
        if (total > max_bytes)
            log_warn("s3 cache %s holds %lld bytes, over its budget of %lld: the rest is in "
                     "use by current lazy snapshots or was used in the last %d s",
                     cache_dir, (long long)total, (long long)max_bytes, VT_S3_CACHE_GRACE_SECS);
    }
    free(ents);
    return total;
}

int64_t s3_cache_evict(const char *cache_dir, int64_t max_bytes)
{
    pthread_mutex_lock(&cache_mu);
    int64_t left = evict_locked(cache_dir, max_bytes > 0 ? max_bytes : VT_S3_CACHE_DEFAULT_MAX_BYTES);
    pthread_mutex_unlock(&cache_mu);
    return left;
}

enum vt_err s3_cache_fetch(struct s3_client *c, const char *cache_dir, int64_t max_bytes,
                           const char *owner, struct s3_cache_item *items, size_t n,
                           struct s3_outcome *outcome, struct vt_error *err)
{
    if (max_bytes <= 0)
        max_bytes = VT_S3_CACHE_DEFAULT_MAX_BYTES;
    if (mkdir_p(cache_dir) != 0)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot create the S3 cache %s: %s",
                            cache_dir, strerror(errno));
    char **names = calloc(n ? n : 1, sizeof *names);
    struct s3_download *jobs = calloc(n ? n : 1, sizeof *jobs);
    if (!names || !jobs) {
        free(names);
        free(jobs);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    enum vt_err rc = VT_ERR_OK;
    size_t nj = 0;
    size_t dl = strlen(cache_dir);
    for (size_t i = 0; i < n; i++) {
        char nm[80];
        s3_cache_name(items[i].bucket, items[i].key, items[i].tag, nm);
        names[i] = strdup(nm);
        items[i].path = malloc(dl + 1 + sizeof nm);
        if (!names[i] || !items[i].path) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            goto out;
        }
        snprintf(items[i].path, dl + 1 + sizeof nm, "%s/%s", cache_dir, nm);
    }
    /* Present files: touch them (LRU clock) under the lock, so an eviction
     * running in another build cannot remove them in between. Pin everything
     * now, including what is about to be downloaded. */
    pthread_mutex_lock(&cache_mu);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(items[i].path, &st) == 0 &&
            (items[i].size < 0 || st.st_size == items[i].size)) {
            utimensat(AT_FDCWD, items[i].path, NULL, 0);
        } else {
            jobs[nj].bucket = items[i].bucket;
            jobs[nj].key = items[i].key;
            jobs[nj].if_match = items[i].if_match;
            jobs[nj].path = items[i].path;
            nj++;
        }
    }
    /* While downloading, the owner keeps its previous pins plus the new names:
     * a failed fetch must not unpin the snapshot that is still being served. */
    if (pin_add_locked(owner ? owner : "", names, n) != 0) {
        pthread_mutex_unlock(&cache_mu);
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    pthread_mutex_unlock(&cache_mu);

    if (nj > 0) {
        log_debug("s3 cache: fetching %zu of %zu objects into %s", nj, n, cache_dir);
        rc = s3_download_many(c, jobs, nj, outcome, err);
        if (rc != VT_ERR_OK)
            goto out;
    }
    /* Success: the owner's pins become exactly this snapshot. */
    pthread_mutex_lock(&cache_mu);
    char **pinned = calloc(n ? n : 1, sizeof *pinned);
    if (pinned) {
        for (size_t i = 0; i < n; i++) {
            pinned[i] = names[i];
            names[i] = NULL;
        }
        if (pin_replace_locked(owner ? owner : "", pinned, n) != 0) {
            for (size_t i = 0; i < n; i++)
                free(pinned[i]);
            free(pinned);
        }
    }
    pthread_mutex_unlock(&cache_mu);
    s3_cache_evict(cache_dir, max_bytes);
out:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(jobs);
    if (rc != VT_ERR_OK) {
        for (size_t i = 0; i < n; i++) {
            free(items[i].path);
            items[i].path = NULL;
        }
    }
    return rc;
}
