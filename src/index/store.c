/*
 * The backing file of one fast path (index_internal.h): written once while
 * the fast path is built, then only read. The file has no name (O_TMPFILE,
 * or unlinked right after it is created), so it disappears with its last
 * descriptor, also when the process dies. Its pages are the kernel's page
 * cache: readers use pread, and a thread that must not wait for a disk reads
 * with RWF_NOWAIT, which fails with EAGAIN instead of starting I/O.
 */
#include "index/index_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>


/* ---- big allocations (index_internal.h): a 64-byte header holds the size */

#define BIG_HEADER 64

void *ix_big_alloc(size_t bytes)
{
    size_t total = bytes + BIG_HEADER;
    if (total < bytes)
        return NULL;
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    *(size_t *)m = total;
    return (char *)m + BIG_HEADER;
}

void *ix_big_calloc(size_t bytes)
{
    return ix_big_alloc(bytes); /* fresh anonymous pages are zero */
}

void *ix_big_realloc(void *p, size_t bytes)
{
    if (!p)
        return ix_big_alloc(bytes);
    char *m = (char *)p - BIG_HEADER;
    size_t total = bytes + BIG_HEADER;
    if (total < bytes)
        return NULL;
    void *q = mremap(m, *(size_t *)m, total, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        return NULL;
    *(size_t *)q = total;
    return (char *)q + BIG_HEADER;
}

void ix_big_free(void *p)
{
    if (!p)
        return;
    char *m = (char *)p - BIG_HEADER;
    munmap(m, *(size_t *)m);
}

/* Writes go out in pieces of this size (one buffer while building). */
#define WBUF_BYTES (1u << 20)

static int open_unnamed(const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return -1;
    /* A file system without O_TMPFILE: a unique name, unlinked at once. */
    char path[4096];
    snprintf(path, sizeof path, "%s/vt-index-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return -1;
    unlink(path);
    return fd;
}

int ix_store_open(struct ix_store *s, const char *dir)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    if (!dir)
        return 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    s->fd = open_unnamed(dir);
    if (s->fd < 0)
        return -1;
    s->wbuf = ix_big_alloc(WBUF_BYTES);
    if (!s->wbuf) {
        close(s->fd);
        s->fd = -1;
        errno = ENOMEM;
        return -1;
    }
    s->wcap = WBUF_BYTES;
    return 0;
}

static int write_all(int fd, const char *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int flush(struct ix_store *s)
{
    if (!s->wlen)
        return 0;
    uint64_t at = s->size - s->wlen;
    if (write_all(s->fd, s->wbuf, s->wlen, at) != 0) {
        s->failed = true;
        return -1;
    }
    s->wlen = 0;
    return 0;
}

uint64_t ix_store_append(struct ix_store *s, const void *p, size_t len)
{
    if (s->failed)
        return UINT64_MAX;
    uint64_t off = s->size;
    if (s->fd < 0) {
        if (s->size + len > s->mem_cap) {
            size_t cap = s->mem_cap ? s->mem_cap * 2 : 65536;
            while (cap < s->size + len)
                cap *= 2;
            char *m = realloc(s->mem, cap);
            if (!m) {
                s->failed = true;
                return UINT64_MAX;
            }
            s->mem = m;
            s->mem_cap = cap;
        }
        if (len)
            memcpy(s->mem + s->size, p, len);
        s->size += len;
        return off;
    }
    const char *src = p;
    while (len) {
        size_t room = s->wcap - s->wlen, n = len < room ? len : room;
        memcpy(s->wbuf + s->wlen, src, n);
        s->wlen += n;
        s->size += n;
        src += n;
        len -= n;
        if (s->wlen == s->wcap && flush(s) != 0)
            return UINT64_MAX;
    }
    return off;
}

int ix_store_seal(struct ix_store *s)
{
    if (s->failed)
        return -1;
    if (s->fd < 0) {
        if (s->mem && s->size < s->mem_cap) {
            char *m = realloc(s->mem, s->size ? s->size : 1);
            if (m) {
                s->mem = m;
                s->mem_cap = s->size;
            }
        }
        return 0;
    }
    int rc = flush(s);
    ix_big_free(s->wbuf);
    s->wbuf = NULL;
    s->wcap = 0;
    return rc;
}

void ix_store_close(struct ix_store *s)
{
    if (s->fd >= 0)
        close(s->fd);
    free(s->mem);
    ix_big_free(s->wbuf);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

static _Thread_local uint64_t reads;

uint64_t ix_store_reads(void)
{
    return reads;
}

enum ix_read ix_store_read(const struct ix_store *s, uint64_t off, size_t len, void *dst,
                           bool nowait)
{
    if (off > s->size || len > s->size - off)
        return IX_READ_ERROR;
    reads++;
    if (s->fd < 0) {
        if (len)
            memcpy(dst, s->mem + off, len);
        return IX_READ_OK;
    }
    char *p = dst;
    while (len) {
        struct iovec iov = {.iov_base = p, .iov_len = len};
        ssize_t n = preadv2(s->fd, &iov, 1, (off_t)off, nowait ? RWF_NOWAIT : 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && nowait && (errno == EAGAIN || errno == EOPNOTSUPP))
            return IX_READ_WOULD_BLOCK;
        if (n <= 0)
            return IX_READ_ERROR;
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return IX_READ_OK;
}
