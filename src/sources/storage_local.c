/*
 * Local storage: a directory tree (or one file) on this machine.
 *
 * Confinement: the root and every path an operation touches must resolve,
 * after symbolic links, inside the roots the policy allows (policy.c); a path
 * outside is refused with one message, whatever is there.
 *
 * Listing walks the tree with every directory's entries sorted, following
 * symbolic links that stay inside the roots and never a directory already on
 * the way down (no cycles), to a depth cap, a file-count cap and a cap on the
 * entries looked at, checking the build's deadline as it goes; only regular
 * files are listed. Files are opened only after fstat says they are regular
 * files, and with O_NONBLOCK, so a FIFO named *.parquet cannot hold a builder
 * in open().
 *
 * Fetching for a lazy generation pins the files: a lazy view reads them when
 * it is queried, not when it is built, and a source rewritten the usual way
 * (temp name, rename) before the next reload must not change the rows of the
 * generation in use. Each file gets a link in a directory of the snapshot: a
 * hard link, or (another file system, or protected_hardlinks refusing a file
 * the service may only read) a symbolic link to /proc/self/fd/N of the file
 * kept open (at most VT_MAX_PINNED_FDS per snapshot). When a file cannot be
 * pinned, the snapshot reads the paths in place and the log says so.
 *
 * DuckDB opens only the directories it was confined to at start; a file the
 * policy allows outside them (a directory a config reload added) gets a
 * symbolic link to its real path in the snapshot's pin directory, which is in
 * the runtime directory DuckDB may open (link_for_duckdb). Pinned files need
 * none: their links are there already.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/sources_internal.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

struct local_storage {
    struct storage base;
    char *root;                 /* after links; no trailing '/' (except "/") */
    const struct source_policy *policy;
    const char *extra_root;
};

/* The confined real path of `name` (see source_policy_confine). */
static enum vt_err confine(const struct local_storage *ls, const char *path, char **out_real,
                           bool *out_missing, struct vt_error *err)
{
    return source_policy_confine(ls->policy, ls->extra_root, path, out_real, out_missing, err);
}

static char *join(const struct local_storage *ls, const char *name)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    if (name[0] == '/')
        sb_adds(&sb, name);
    else if (!*name)
        sb_adds(&sb, ls->root);
    else
        sb_addf(&sb, "%s%s%s", ls->root, strcmp(ls->root, "/") ? "/" : "", name);
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb, NULL);
}

/* ---- listing ---------------------------------------------------------------- */

struct walk {
    const struct local_storage *ls;
    struct storage_listing *out;
    int max_depth;
    size_t entries;             /* looked at so far (VT_SOURCE_MAX_ENTRIES) */
    struct { dev_t dev; ino_t ino; } up[VT_SOURCE_MAX_DEPTH + 2]; /* directories on the way */
    struct vt_error *err;
};

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int compare_objects(const void *a, const void *b)
{
    return strcmp(((const struct storage_object *)a)->name,
                  ((const struct storage_object *)b)->name);
}

/* Walks `dir` (rel: its name relative to the root, "" or ending in '/'). */
static int walk(struct walk *w, const char *dir, const char *rel, int depth)
{
    struct stat self;
    if (stat(dir, &self) == 0) {
        for (int i = 0; i < depth; i++)
            if (w->up[i].dev == self.st_dev && w->up[i].ino == self.st_ino) {
                log_debug("source: %s leads back to a directory above it: not followed", dir);
                return 0;
            }
        w->up[depth].dev = self.st_dev;
        w->up[depth].ino = self.st_ino;
    }
    DIR *d = opendir(dir);
    if (!d) {
        if (depth == 0) {
            if (errno == ENOENT)
                vt_error_set(w->err, VT_ERR_SOURCE_EMPTY, "%s does not exist", dir);
            else
                vt_error_set(w->err,
                             errno == ENOTDIR ? VT_ERR_SOURCE_EMPTY : VT_ERR_SOURCE_UNAVAILABLE,
                             "cannot open directory %s: %s", dir, strerror(errno));
            return -1;
        }
        log_warn("source: skipping unreadable directory %s: %s", dir, strerror(errno));
        return 0;
    }
    size_t n = 0, cap = 0;
    char **names = NULL;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (++w->entries > VT_SOURCE_MAX_ENTRIES) {
            vt_error_set(w->err, VT_ERR_SOURCE_UNAVAILABLE,
                         "%s: more than %d entries under the location", w->ls->base.location,
                         VT_SOURCE_MAX_ENTRIES);
            rc = -1;
            break;
        }
        if ((w->entries & 1023) == 0 &&
            source_check_bounds(w->ls->base.ctx, w->ls->base.location, w->err) != VT_ERR_OK) {
            rc = -1;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **p = realloc(names, cap * sizeof *p);
            if (!p) {
                rc = -1;
                break;
            }
            names = p;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc < 0 && !w->err->code)
        vt_error_set(w->err, VT_ERR_OUT_OF_MEMORY, "out of memory listing %s", dir);
    if (n)
        qsort(names, n, sizeof *names, compare_names);
    struct strbuf path, sub;
    sb_init(&path, 0);
    sb_init(&sub, 0);
    for (size_t i = 0; i < n && rc == 0; i++) {
        sb_reset(&path);
        sb_reset(&sub);
        sb_addf(&path, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", names[i]);
        sb_addf(&sub, "%s%s", rel, names[i]);
        if (path.overflow || sub.overflow) {
            rc = -1;
            vt_error_set(w->err, VT_ERR_OUT_OF_MEMORY, "out of memory listing %s", dir);
            break;
        }
        struct stat st;
        if (lstat(path.buf, &st) != 0)
            continue; /* vanished */
        if (S_ISLNK(st.st_mode)) {
            /* Followed only when it stays inside the roots. */
            char *real = NULL;
            bool missing = false;
            struct vt_error lerr = {0};
            if (confine(w->ls, path.buf, &real, &missing, &lerr) != VT_ERR_OK || !real ||
                stat(real, &st) != 0) {
                log_debug("source: link %s not followed: %s", path.buf,
                          lerr.code ? vt_error_message(&lerr) : "dangling");
                free(real);
                continue;
            }
            free(real);
        }
        if (S_ISDIR(st.st_mode)) {
            int limit = w->max_depth < 0 ? VT_SOURCE_MAX_DEPTH : w->max_depth;
            if (depth < limit) {
                sb_addc(&sub, '/');
                rc = walk(w, path.buf, sub.buf, depth + 1);
            }
        } else if (S_ISREG(st.st_mode)) {
            if (w->out->n >= VT_SOURCE_MAX_FILES) {
                vt_error_set(w->err, VT_ERR_SOURCE_UNAVAILABLE, "more than %d files in %s",
                             VT_SOURCE_MAX_FILES, dir);
                rc = -1;
            } else if (storage_listing_add(w->out, sub.buf, (int64_t)st.st_size, NULL) < 0) {
                vt_error_set(w->err, VT_ERR_OUT_OF_MEMORY, "out of memory listing %s", dir);
                rc = -1;
            }
        }
    }
    sb_release(&path);
    sb_release(&sub);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static enum vt_err local_list(struct storage *st, const char *dir, int max_depth,
                              const char *start_after, struct storage_listing *out,
                              struct vt_error *err)
{
    struct local_storage *ls = (struct local_storage *)st;
    memset(out, 0, sizeof *out);
    char *joined = join(ls, dir), *path = NULL;
    bool missing = false;
    if (!joined)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    enum vt_err crc = confine(ls, joined, &path, &missing, err);
    /* Not "cannot open directory": the location is as often a file that
     * is not there (a typo in data/trips.parquet). */
    if (crc == VT_ERR_OK && missing)
        crc = vt_error_set(err, VT_ERR_SOURCE_EMPTY, "%s does not exist", joined);
    free(joined);
    if (crc != VT_ERR_OK)
        return crc;
    struct strbuf rel;
    sb_init(&rel, 0);
    sb_adds(&rel, dir);
    if (*dir && dir[strlen(dir) - 1] != '/')
        sb_addc(&rel, '/');
    struct walk w = {.ls = ls, .out = out, .max_depth = max_depth, .err = err};
    int rc = rel.overflow ? (vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory"), -1)
                          : walk(&w, path, rel.buf ? rel.buf : "", 0);
    sb_release(&rel);
    free(path);
    if (rc < 0) {
        storage_listing_release(out);
        return err->code;
    }
    if (out->n)
        qsort(out->items, out->n, sizeof *out->items, compare_objects);
    if (start_after) {
        size_t keep = 0;
        for (size_t i = 0; i < out->n; i++) {
            if (strcmp(out->items[i].name, start_after) > 0)
                out->items[keep++] = out->items[i];
            else
                storage_object_release(&out->items[i]);
        }
        out->n = keep;
    }
    return VT_ERR_OK;
}

/* ---- one file ----------------------------------------------------------------- */

static enum vt_err local_stat(struct storage *st, const char *name, struct storage_object *out,
                              bool *out_missing, struct vt_error *err)
{
    struct local_storage *ls = (struct local_storage *)st;
    memset(out, 0, sizeof *out);
    *out_missing = false;
    char *joined = join(ls, name), *path = NULL;
    if (!joined)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    enum vt_err rc = confine(ls, joined, &path, out_missing, err);
    free(joined);
    if (rc != VT_ERR_OK || *out_missing)
        return rc;
    struct stat sbuf;
    if (stat(path, &sbuf) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            *out_missing = true;
        else
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot open %s: %s", path,
                              strerror(errno));
    } else if (S_ISDIR(sbuf.st_mode)) {
        *out_missing = true;
    } else if (!S_ISREG(sbuf.st_mode)) {
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s is not a regular file", path);
    } else {
        out->name = strdup(name);
        out->size = (int64_t)sbuf.st_size;
        if (!out->name)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(path);
    return rc;
}

/* Opens a regular file for reading without ever blocking in open(2). */
static int open_regular(const char *path, struct stat *out_st, struct vt_error *err,
                        bool *out_missing)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (out_missing && (errno == ENOENT || errno == ENOTDIR)) {
            *out_missing = true;
            return -1;
        }
        vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot read %s: %s", path,
                     strerror(errno));
        return -1;
    }
    if (fstat(fd, out_st) != 0 || !S_ISREG(out_st->st_mode)) {
        vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s is not a regular file", path);
        close(fd);
        return -1;
    }
    return fd;
}

static enum vt_err local_read(struct storage *st, const char *name, int64_t off, int64_t len,
                              size_t max, char **out, size_t *out_len, bool *out_missing,
                              struct vt_error *err)
{
    struct local_storage *ls = (struct local_storage *)st;
    *out = NULL;
    *out_len = 0;
    if (out_missing)
        *out_missing = false;
    char *joined = join(ls, name), *path = NULL;
    bool missing = false;
    if (!joined)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    enum vt_err crc = confine(ls, joined, &path, &missing, err);
    if (crc == VT_ERR_OK && missing && !out_missing)
        crc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot read %s: %s", joined,
                           strerror(ENOENT));
    free(joined);
    if (crc != VT_ERR_OK)
        return crc;
    if (missing) {
        *out_missing = true;
        return VT_ERR_OK;
    }
    struct stat sbuf;
    int fd = open_regular(path, &sbuf, err, out_missing ? &missing : NULL);
    if (fd < 0) {
        free(path);
        if (missing) {
            *out_missing = true;
            return VT_ERR_OK;
        }
        return err->code;
    }
    enum vt_err rc = VT_ERR_OK;
    int64_t size = (int64_t)sbuf.st_size;
    if (off > size)
        off = size;
    int64_t want = len < 0 || off + len > size ? size - off : len;
    if ((uint64_t)want > max) {
        rc = vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "%s is larger than %zu bytes", path, max);
    } else {
        char *buf = malloc((size_t)want + 1);
        size_t got = 0;
        if (!buf) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        } else {
            while (got < (size_t)want) {
                ssize_t r = pread(fd, buf + got, (size_t)want - got, (off_t)(off + (int64_t)got));
                if (r < 0 && errno == EINTR)
                    continue;
                if (r < 0) {
                    rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot read %s: %s", path,
                                      strerror(errno));
                    break;
                }
                if (r == 0)
                    break;
                got += (size_t)r;
            }
            buf[got] = '\0';
            if (rc == VT_ERR_OK) {
                *out = buf;
                *out_len = got;
            } else {
                free(buf);
            }
        }
    }
    close(fd);
    free(path);
    return rc;
}

/* ---- fetch: in place, or pinned ------------------------------------------------ */

/* mkdir -p of the directory part of `path` (everything before the last '/'). */
static bool make_parents(char *path)
{
    for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        bool ok = mkdir(path, 0700) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok)
            return false;
    }
    return true;
}

/* Pins `src` at `dst`: a hard link, else a link to /proc/self/fd/N of the
 * file kept open. Returns errno on failure. */
static int pin_file(struct source_snapshot *snap, const char *src, char *dst, size_t max_fds)
{
    if (!make_parents(dst))
        return errno;
    if (link(src, dst) == 0)
        return 0;
    int why = errno;
    if (snap->n_pin_fds >= max_fds)
        return why;
    struct stat sbuf;
    struct vt_error ignored = {0};
    int fd = open_regular(src, &sbuf, &ignored, NULL);
    if (fd < 0)
        return EINVAL;
    char target[64];
    snprintf(target, sizeof target, "/proc/self/fd/%d", fd);
    if (symlink(target, dst) != 0) {
        why = errno;
        close(fd);
        return why;
    }
    snap->pin_fds[snap->n_pin_fds++] = fd;
    return 0;
}

/* The snapshot's pin directory (<temp>/lazy-<pin name or a new ULID>; a
 * scratch snapshot's <temp>/scratch-<new ULID>, as its release removes the
 * whole directory), named once per snapshot; NULL out of memory. Made on
 * demand by make_parents. */
static const char *pin_dir(const struct storage *st, struct source_snapshot *snap)
{
    if (snap->pin_dir)
        return snap->pin_dir;
    char ulid[27];
    ulid_new(ulid);
    const char *name =
        !snap->scratch && st->ctx && st->ctx->pin_name ? st->ctx->pin_name : ulid;
    struct strbuf dir;
    sb_init(&dir, 0);
    sb_addf(&dir, "%s/%s-%s", source_temp_dir(st->ctx), snap->scratch ? "scratch" : "lazy",
            name);
    if (dir.overflow) {
        sb_release(&dir);
        return NULL;
    }
    snap->pin_dir = sb_detach(&dir, NULL);
    return snap->pin_dir;
}

/* Links for every file, or none (then the paths are read in place). */
static void pin_all(const struct storage *st, struct storage_fetch *items, size_t n,
                    enum storage_use use, struct source_snapshot *snap)
{
    /* One array per snapshot, for all its fetches. */
    size_t max_fds = VT_MAX_PINNED_FDS;
    char **links = calloc(n ? n : 1, sizeof *links);
    if (!snap->pin_fds)
        snap->pin_fds = calloc(max_fds, sizeof *snap->pin_fds);
    int why = links && snap->pin_fds && pin_dir(st, snap) ? 0 : ENOMEM;
    for (size_t i = 0; !why && i < n; i++) {
        struct strbuf dst;
        sb_init(&dst, 0);
        sb_addf(&dst, "%s/%zu.parquet", snap->pin_dir, i);
        why = dst.overflow ? ENOMEM : pin_file(snap, items[i].path, dst.buf, max_fds);
        if (!why && !(links[i] = sb_detach(&dst, NULL)))
            why = ENOMEM;
        sb_release(&dst);
    }
    if (!why) {
        for (size_t i = 0; i < n; i++) {
            /* The pin is what the generation reads: its size, not the
             * listing's, which a file renamed over the source between the
             * listing and the link makes stale (and a lazy generation would
             * then answer 503 source_changed to every request). */
            struct stat pinned;
            if (stat(links[i], &pinned) == 0)
                items[i].size = (int64_t)pinned.st_size;
            source_snapshot_add_link(snap, links[i], items[i].path);
            free(items[i].path);
            items[i].path = links[i];
        }
        free(links);
        return;
    }
    if (use == STORAGE_USE_KEEP)
        log_warn("%s: cannot pin its %zu source file(s) (%s): they are read in place, so "
                 "replacing them changes the rows of this generation before a reload",
                 st->location, n, strerror(why));
    else
        log_debug("%s: the build reads its %zu source file(s) in place (no links: %s)",
                  st->location, n, strerror(why));
    for (size_t i = 0; links && i < n; i++)
        free(links[i]);
    free(links);
    /* The snapshot's release removes whatever was made. */
}

/* Every path DuckDB may not open itself gets a symbolic link to it in the
 * pin directory (the path was confined already: this only lets DuckDB, whose
 * directories are frozen at start, open what the policy allows now). */
static enum vt_err link_for_duckdb(struct local_storage *ls, struct storage_fetch *items,
                                   size_t n, struct source_snapshot *snap, struct vt_error *err)
{
    const char *tmp = source_temp_dir(ls->base.ctx);
    size_t tl = strlen(tmp);
    for (size_t i = 0; i < n; i++) {
        const char *path = items[i].path;
        if ((!strncmp(path, tmp, tl) && path[tl] == '/') ||
            source_policy_engine_reads(ls->policy, path))
            continue;
        const char *dir = pin_dir(&ls->base, snap);
        char ulid[27];
        ulid_new(ulid);
        struct strbuf dst;
        sb_init(&dst, 0);
        sb_addf(&dst, "%s/r-%s.parquet", dir ? dir : "", ulid);
        int why = !dir || dst.overflow ? ENOMEM : 0;
        if (!why && (!make_parents(dst.buf) || symlink(path, dst.buf) != 0))
            why = errno;
        if (why) {
            sb_release(&dst);
            return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s: cannot link %s for reading (%s)",
                                ls->base.location, path, strerror(why));
        }
        source_snapshot_add_link(snap, dst.buf, path);
        free(items[i].path);
        items[i].path = sb_detach(&dst, NULL);
    }
    return VT_ERR_OK;
}

static enum vt_err local_fetch(struct storage *st, struct storage_fetch *items, size_t n,
                               enum storage_use use, struct source_snapshot *snap,
                               struct vt_error *err)
{
    struct local_storage *ls = (struct local_storage *)st;
    for (size_t i = 0; i < n; i++) {
        char *joined = join(ls, items[i].name);
        bool missing = false;
        if (!joined)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        enum vt_err rc = confine(ls, joined, &items[i].path, &missing, err);
        if (rc == VT_ERR_OK && missing)
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s: data file %s is missing",
                              st->location, joined);
        free(joined);
        if (rc != VT_ERR_OK)
            return rc;
        struct stat sbuf;
        if (stat(items[i].path, &sbuf) != 0)
            return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s: data file %s is missing (%s)",
                                st->location, items[i].path, strerror(errno));
        if (!S_ISREG(sbuf.st_mode))
            return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                "%s: data file %s is not a regular file", st->location,
                                items[i].path);
        if (items[i].size < 0)
            items[i].size = (int64_t)sbuf.st_size;
    }
    if (use != STORAGE_USE_BUILD && n > 0)
        pin_all(st, items, n, use, snap);
    return link_for_duckdb(ls, items, n, snap, err);
}

/* file:/path, file:///path and file://localhost/path name local files;
 * anything else (another host, another scheme) is out of reach. */
static enum vt_err local_absolute_name(const struct storage *st, const char *uri, char **out,
                                       struct vt_error *err)
{
    *out = NULL;
    if (strncmp(uri, "file:", 5) != 0)
        return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                            "%s: data file URI scheme not readable here: %.200s", st->location,
                            uri);
    const char *p = uri + 5;
    if (strncmp(p, "//", 2) == 0) {
        p += 2;
        if (*p != '/') { /* file://host/path: only an empty or local host */
            if (strncmp(p, "localhost/", 10) != 0)
                return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                                    "%s: data file on a remote host: %.200s", st->location, uri);
            p += 9;
        }
    }
    if (!(*out = strdup(p)))
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    return VT_ERR_OK;
}

static void local_destroy(struct storage *st)
{
    struct local_storage *ls = (struct local_storage *)st;
    free(ls->root);
    free(ls);
}

static const struct storage_ops local_ops = {
    .scheme = "file",
    .list = local_list,
    .stat = local_stat,
    .read = local_read,
    .fetch = local_fetch,
    .absolute_name = local_absolute_name,
    .destroy = local_destroy,
};

enum vt_err storage_local_open(const char *root, const struct source_context *ctx,
                               struct storage **out, struct vt_error *err)
{
    *out = NULL;
    if (strncmp(root, "file://", 7) == 0)
        root += 7;
    struct local_storage *ls = calloc(1, sizeof *ls);
    if (!ls)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    ls->base.ops = &local_ops;
    ls->policy = ctx ? ctx->policy : NULL;
    ls->extra_root = ctx ? ctx->extra_root : NULL;
    bool missing = false;
    enum vt_err rc = confine(ls, root, &ls->root, &missing, err);
    if (rc == VT_ERR_OK && missing) {
        /* Inside the roots but not there (yet): operations say so. */
        size_t n = strlen(root);
        while (n > 1 && root[n - 1] == '/')
            n--;
        if (!(ls->root = strndup(root, n)))
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (rc != VT_ERR_OK) {
        local_destroy(&ls->base);
        return rc;
    }
    *out = &ls->base;
    return VT_ERR_OK;
}
