/*
 * The byte-range cache of S3 objects that lazy generations read (issue 17):
 * one sparse local file per object version, named by SHA-256(bucket, key,
 * ETag), holding only the byte ranges that were needed (footers, the chunks
 * of the columns and row groups a query reads). DuckDB reads the local file;
 * before it does, the ranges it will read are made present here.
 *
 * Fetching: the missing parts of what is asked are coalesced (gaps up to
 * VT_S3_RANGE_COALESCE_BYTES are fetched too, rather than one more request),
 * then fetched with ranged GETs, at most VT_S3_RANGE_THREADS at a time, each
 * with If-Match: <the ETag the generation was built with>, so an object
 * rewritten under a generation is detected (VT_ERR_SOURCE_CHANGED) and never
 * mixed with what is cached. Retries, timeouts and the caller's deadline are
 * the S3 client's.
 *
 * Budget: the bytes present across all entries are kept at or below
 * max_bytes by dropping least recently used entries that no running query
 * holds (a lease, taken by range_cache_ensure and given back with
 * range_cache_release). What running queries hold can exceed the budget.
 * The index of present ranges lives in memory; after a restart an entry
 * starts empty and is fetched again as queries need it.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/rangecache.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

struct span {
    int64_t off, end;           /* [off, end) */
};

struct entry {
    char name[80];              /* 64 hex + ".vtr" */
    char *path;
    int64_t size;
    struct span *present;       /* sorted, disjoint */
    size_t n, cap;
    int64_t bytes;              /* sum of present */
    int64_t used_ms;            /* last ensure (LRU) */
    int leases;
    struct entry *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;
static int64_t total_bytes;

static void entry_name(const char *bucket, const char *key, const char *etag, char out[80])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1) {
        EVP_DigestUpdate(ctx, "range\0", 6);
        EVP_DigestUpdate(ctx, bucket, strlen(bucket) + 1);
        EVP_DigestUpdate(ctx, key, strlen(key) + 1);
        EVP_DigestUpdate(ctx, etag ? etag : "", strlen(etag ? etag : "") + 1);
        EVP_DigestFinal_ex(ctx, md, &mdlen);
    }
    EVP_MD_CTX_free(ctx);
    static const char hex[] = "0123456789abcdef";
    size_t j = 0;
    for (unsigned int i = 0; i < mdlen && i < 32; i++) {
        out[j++] = hex[md[i] >> 4];
        out[j++] = hex[md[i] & 15];
    }
    memcpy(out + j, ".vtr", 5);
}

/* Adds [off, end) to the entry's present spans (mu held). */
static int add_span(struct entry *e, int64_t off, int64_t end)
{
    size_t i = 0;
    while (i < e->n && e->present[i].end < off)
        i++;
    /* merge every span touching [off, end) */
    size_t j = i;
    while (j < e->n && e->present[j].off <= end) {
        if (e->present[j].off < off)
            off = e->present[j].off;
        if (e->present[j].end > end)
            end = e->present[j].end;
        e->bytes -= e->present[j].end - e->present[j].off;
        total_bytes -= e->present[j].end - e->present[j].off;
        j++;
    }
    if (j == i) {
        if (e->n == e->cap) {
            size_t cap = e->cap ? e->cap * 2 : 8;
            struct span *p = realloc(e->present, cap * sizeof *p);
            if (!p)
                return -1;
            e->present = p;
            e->cap = cap;
        }
        memmove(e->present + i + 1, e->present + i, (e->n - i) * sizeof *e->present);
        e->n++;
    } else if (j > i + 1) {
        memmove(e->present + i + 1, e->present + j, (e->n - j) * sizeof *e->present);
        e->n -= j - i - 1;
    }
    e->present[i] = (struct span){off, end};
    e->bytes += end - off;
    total_bytes += end - off;
    return 0;
}

static void entry_drop(struct entry *e)
{
    unlink(e->path);
    total_bytes -= e->bytes;
    free(e->present);
    free(e->path);
    free(e);
}

/* Drops least recently used entries nobody holds until the budget is met. */
static void evict_locked(int64_t max_bytes)
{
    while (total_bytes > max_bytes) {
        struct entry **victim = NULL;
        for (struct entry **p = &entries; *p; p = &(*p)->next)
            if ((*p)->leases == 0 && (*p)->bytes > 0 &&
                (!victim || (*p)->used_ms < (*victim)->used_ms))
                victim = p;
        if (!victim)
            break;
        struct entry *e = *victim;
        *victim = e->next;
        log_debug("range cache: evicted %s (%lld bytes)", e->name, (long long)e->bytes);
        entry_drop(e);
    }
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof tmp)
        return -1;
    memcpy(tmp, dir, n + 1);
    for (size_t i = 1; i < n; i++)
        if (tmp[i] == '/') {
            tmp[i] = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
                return -1;
            tmp[i] = '/';
        }
    return mkdir(tmp, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* The entry for an object version, created (with its sparse file of the
 * object's size) when new. mu held. */
static struct entry *entry_get(const char *cache_dir, const char *bucket, const char *key,
                               const char *etag, int64_t size, struct vt_error *err)
{
    char name[80];
    entry_name(bucket, key, etag, name);
    for (struct entry *e = entries; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return e;
    if (mkdir_p(cache_dir) != 0) {
        vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot create the S3 cache %s: %s",
                     cache_dir, strerror(errno));
        return NULL;
    }
    struct entry *e = calloc(1, sizeof *e);
    size_t pl = strlen(cache_dir) + sizeof name + 2;
    if (e)
        e->path = malloc(pl);
    if (!e || !e->path) {
        free(e);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    memcpy(e->name, name, sizeof name);
    snprintf(e->path, pl, "%s/%s", cache_dir, name);
    e->size = size;
    /* A file left by an earlier process holds unknown parts: start over. */
    int fd = open(e->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot create %s: %s", e->path,
                     strerror(errno));
        if (fd >= 0)
            close(fd);
        free(e->path);
        free(e);
        return NULL;
    }
    close(fd);
    e->next = entries;
    entries = e;
    return e;
}

struct job {
    const char *bucket, *key, *etag;
    int64_t off, len;
};

struct fetch {
    struct s3_client *c;
    const char *path;
    struct job *jobs;
    size_t n;
    size_t next;
    pthread_mutex_t mu;
    enum vt_err rc;
    struct vt_error *err;
    bool changed, denied;
};

static void *fetch_worker(void *arg)
{
    struct fetch *f = arg;
    struct s3_conn *conn = s3_conn_create();
    int fd = open(f->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || !conn) {
        pthread_mutex_lock(&f->mu);
        if (f->rc == VT_ERR_OK)
            f->rc = vt_error_set(f->err, VT_ERR_SOURCE_UNAVAILABLE, "cannot write %s: %s",
                                 f->path, strerror(errno));
        pthread_mutex_unlock(&f->mu);
        if (fd >= 0)
            close(fd);
        s3_conn_destroy(conn);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&f->mu);
        size_t i = f->rc == VT_ERR_OK && f->next < f->n ? f->next++ : f->n;
        pthread_mutex_unlock(&f->mu);
        if (i >= f->n)
            break;
        struct job *j = &f->jobs[i];
        struct s3_outcome oc = {0};
        struct vt_error lerr = {0};
        char *buf = NULL;
        size_t got = 0;
        enum vt_err rc = s3_get_range(f->c, conn, j->bucket, j->key, j->off, j->len, j->etag,
                                      &buf, &got, &oc, &lerr);
        if (rc == VT_ERR_OK && (int64_t)got != j->len)
            rc = vt_error_set(&lerr, VT_ERR_SOURCE_UNAVAILABLE,
                              "s3://%s/%s: short range (%zu of %lld bytes)", j->bucket, j->key,
                              got, (long long)j->len);
        for (size_t w = 0; rc == VT_ERR_OK && w < got;) {
            ssize_t n = pwrite(fd, buf + w, got - w, (off_t)(j->off + (int64_t)w));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                rc = vt_error_set(&lerr, VT_ERR_SOURCE_UNAVAILABLE, "cannot write %s: %s",
                                  f->path, strerror(errno));
            else
                w += (size_t)n;
        }
        free(buf);
        if (rc != VT_ERR_OK) {
            pthread_mutex_lock(&f->mu);
            if (f->rc == VT_ERR_OK) {
                f->changed = oc.changed;
                f->denied = oc.access_denied;
                f->rc = oc.changed
                            ? vt_error_set(f->err, VT_ERR_SOURCE_CHANGED,
                                           "s3://%s/%s changed under the published generation "
                                           "(ETag); reload the dataset",
                                           j->bucket, j->key)
                            : vt_error_set(f->err, rc, "%s", vt_error_message(&lerr));
            }
            pthread_mutex_unlock(&f->mu);
        }
    }
    close(fd);
    s3_conn_destroy(conn);
    return NULL;
}

enum vt_err range_cache_ensure(const struct range_cache_object *o, struct s3_client *c,
                               const struct range_cache_span *need, size_t n_need,
                               struct range_cache_lease **lease, char **out_path,
                               struct vt_error *err)
{
    if (out_path)
        *out_path = NULL;
    pthread_mutex_lock(&mu);
    struct entry *e = entry_get(o->cache_dir, o->bucket, o->key, o->etag, o->size, err);
    if (!e) {
        pthread_mutex_unlock(&mu);
        return err->code;
    }
    e->leases++;
    e->used_ms = time_mono_ms();
    /* What is missing: each asked span minus what is present. */
    struct job *jobs = NULL;
    size_t nj = 0, cap = 0;
    bool oom = false;
    for (size_t i = 0; i < n_need && !oom; i++) {
        int64_t a = need[i].off < 0 ? 0 : need[i].off;
        int64_t z = need[i].off + need[i].len;
        if (z > o->size)
            z = o->size;
        for (size_t k = 0; k <= e->n && a < z && !oom; k++) {
            /* the next present span at or after a (or none: the rest) */
            int64_t gap_end = k < e->n ? e->present[k].off : z;
            if (k < e->n && e->present[k].end <= a)
                continue;
            if (gap_end > z)
                gap_end = z;
            if (gap_end > a) {
                if (nj == cap) {
                    cap = cap ? cap * 2 : 16;
                    struct job *g = realloc(jobs, cap * sizeof *g);
                    if (!g) {
                        oom = true;
                        break;
                    }
                    jobs = g;
                }
                jobs[nj++] = (struct job){o->bucket, o->key, o->if_match, a, gap_end - a};
            }
            if (k < e->n && e->present[k].end > a)
                a = e->present[k].end;
        }
    }
    char *path = strdup(e->path);
    pthread_mutex_unlock(&mu);
    enum vt_err rc = !oom && path ? VT_ERR_OK
                                  : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    /* Sort and coalesce the jobs. */
    for (size_t i = 1; i < nj; i++)
        for (size_t k = i; k > 0 && jobs[k].off < jobs[k - 1].off; k--) {
            struct job t = jobs[k];
            jobs[k] = jobs[k - 1];
            jobs[k - 1] = t;
        }
    size_t m = 0;
    for (size_t i = 0; i < nj; i++) {
        if (m && jobs[i].off <= jobs[m - 1].off + jobs[m - 1].len + VT_S3_RANGE_COALESCE_BYTES &&
            jobs[i].off + jobs[i].len - jobs[m - 1].off <= VT_S3_RANGE_MAX_BYTES) {
            int64_t end = jobs[i].off + jobs[i].len;
            if (end > jobs[m - 1].off + jobs[m - 1].len)
                jobs[m - 1].len = end - jobs[m - 1].off;
        } else {
            jobs[m++] = jobs[i];
        }
    }
    if (rc == VT_ERR_OK && m) {
        struct fetch f = {.c = c, .path = path, .jobs = jobs, .n = m, .err = err};
        pthread_mutex_init(&f.mu, NULL);
        size_t nt = m < VT_S3_RANGE_THREADS ? m : VT_S3_RANGE_THREADS;
        pthread_t th[VT_S3_RANGE_THREADS];
        size_t started = 0;
        for (size_t i = 1; i < nt; i++)
            if (pthread_create(&th[started], NULL, fetch_worker, &f) == 0)
                started++;
        fetch_worker(&f); /* this thread works too */
        for (size_t i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        pthread_mutex_destroy(&f.mu);
        rc = f.rc;
        int64_t fetched = 0;
        for (size_t i = 0; i < m; i++)
            fetched += jobs[i].len;
        log_debug("range cache: s3://%s/%s: %zu ranges, %lld bytes fetched", o->bucket, o->key,
                  m, (long long)fetched);
    }
    pthread_mutex_lock(&mu);
    for (size_t i = 0; rc == VT_ERR_OK && i < m; i++)
        if (add_span(e, jobs[i].off, jobs[i].off + jobs[i].len) < 0)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (rc == VT_ERR_OK && lease) {
        struct range_cache_lease *l = calloc(1, sizeof *l);
        if (l) {
            l->entry = e;
            l->next = *lease;
            *lease = l;
        } else {
            e->leases--;
        }
    } else {
        e->leases--;
    }
    evict_locked(o->max_bytes > 0 ? o->max_bytes : VT_S3_CACHE_DEFAULT_MAX_BYTES);
    pthread_mutex_unlock(&mu);
    free(jobs);
    if (rc == VT_ERR_OK && out_path)
        *out_path = path;
    else
        free(path);
    return rc;
}

void range_cache_release(struct range_cache_lease *lease)
{
    if (!lease)
        return;
    pthread_mutex_lock(&mu);
    while (lease) {
        struct range_cache_lease *next = lease->next;
        ((struct entry *)lease->entry)->leases--;
        free(lease);
        lease = next;
    }
    pthread_mutex_unlock(&mu);
}

int64_t range_cache_bytes(void)
{
    pthread_mutex_lock(&mu);
    int64_t n = total_bytes;
    pthread_mutex_unlock(&mu);
    return n;
}
