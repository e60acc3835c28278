/*
 * Capped whole-file reads (see file.h). The size is checked twice: once from
 * fstat before reading, and again while reading, because a file can grow
 * between the two (a log being appended to, a file being rewritten). Also
 * the atomic whole-file replacement and the directory helpers beside it.
 */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum vt_err util_read_file(const char *path, size_t max_bytes, enum vt_err code, char **out_buf,
                           size_t *out_len, struct vt_error *err)
{
    *out_buf = NULL;
    *out_len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return vt_error_set(err, code, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return vt_error_set(err, code, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)max_bytes) {
        close(fd);
        return vt_error_set(err, code, "%s: larger than the %zu-byte limit", path, max_bytes);
    }
    /* One byte more than the cap shows a file that grew past it. */
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    for (;;) {
        if (len == cap) {
            if (len > max_bytes)
                break;
            size_t ncap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                close(fd);
                return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return vt_error_set(err, code, "%s: read error: %s", path, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (len > max_bytes) {
        free(buf);
        return vt_error_set(err, code, "%s: larger than the %zu-byte limit", path, max_bytes);
    }
    buf[len] = '\0';
    *out_buf = buf;
    *out_len = len;
    return VT_ERR_OK;
}

int util_fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

enum vt_err util_write_file_atomic(const char *path, const char *data, size_t len,
                                   unsigned mode, enum vt_err code, struct vt_error *err)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid()) >= sizeof tmp)
        return vt_error_set(err, code, "%s: path too long", path);
    struct stat st;
    if (stat(path, &st) == 0)
        mode = st.st_mode & 07777;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, (mode_t)mode);
    if (fd < 0)
        return vt_error_set(err, code, "cannot create %s: %s", tmp, strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return vt_error_set(err, code, "cannot write %s: %s", tmp, strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return vt_error_set(err, code, "cannot sync %s: %s", tmp, strerror(e));
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return vt_error_set(err, code, "cannot write %s: %s", tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return vt_error_set(err, code, "cannot replace %s: %s", path, strerror(e));
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    util_fsync_path(dirname(dir)); /* best effort: the rename is done either way */
    return VT_ERR_OK;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

void util_remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int util_make_dirs(const char *dir)
{
    char *p = strdup(dir);
    if (!p)
        return -1;
    int rc = 0;
    for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
        if (s)
            *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            rc = -1;
            break;
        }
        if (!s)
            break;
        *s = '/';
    }
    int e = errno;
    free(p);
    errno = e;
    return rc;
}
