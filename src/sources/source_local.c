/*
 * Local Parquet sources: a file, a glob (with ** for any depth), or a
 * directory (every *.parquet below it). Resolution lists the files now, sorted
 * so builds are deterministic, and sums their sizes for force_lazy_above_mb.
 * Hive `key=value` directories below the base become typed columns; DuckDB
 * derives them from the paths (hive_partitioning), which types them the same
 * way it does for any hive layout.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sources/source.h"
#include "util/log.h"

#define LOCAL_MAX_FILES 1000000 /* a listing larger than this is refused */
#define LOCAL_MAX_DEPTH 64      /* directory recursion */

struct file_list {
    struct source_file *items;
    size_t len, cap;
    int64_t total_bytes;
    bool saw_hive_dir;
    bool too_many;
};

static int list_push(struct file_list *fl, const char *path, int64_t size)
{
    if (fl->len >= LOCAL_MAX_FILES) {
        fl->too_many = true;
        return -1;
    }
    if (fl->len == fl->cap) {
        size_t cap = fl->cap ? fl->cap * 2 : 16;
        struct source_file *p = realloc(fl->items, cap * sizeof *p);
        if (!p)
            return -1;
        fl->items = p;
        fl->cap = cap;
    }
    struct source_file *f = &fl->items[fl->len];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (!f->path)
        return -1;
    f->size = size;
    fl->len++;
    fl->total_bytes += size;
    return 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Names writers leave beside data files (_SUCCESS, _delta_log, .crc, ...). */
static bool is_hidden(const char *name)
{
    return name[0] == '.' || name[0] == '_';
}

static bool is_hive_component(const char *name)
{
    const char *eq = strchr(name, '=');
    return eq && eq != name;
}

/* Splits off the first '/'-separated segment of s into seg (bounded); returns
 * the rest ("" when s had one segment), or NULL when the segment is too long. */
static const char *first_segment(const char *s, char *seg, size_t segcap)
{
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n >= segcap)
        return NULL;
    memcpy(seg, s, n);
    seg[n] = '\0';
    return slash ? slash + 1 : s + n;
}

/* Glob matching over '/'-separated segments: a "**" segment matches any number
 * (including zero) of segments, other segments use fnmatch(3). */
static bool glob_match(const char *pat, const char *path)
{
    if (*pat == '\0')
        return *path == '\0';
    char pseg[512], sseg[512];
    const char *prest = first_segment(pat, pseg, sizeof pseg);
    if (!prest)
        return false;
    if (strcmp(pseg, "**") == 0) {
        if (glob_match(prest, path))
            return true;
        if (*path == '\0')
            return false;
        const char *srest = first_segment(path, sseg, sizeof sseg);
        return srest && glob_match(pat, srest);
    }
    if (*path == '\0')
        return false;
    const char *srest = first_segment(path, sseg, sizeof sseg);
    if (!srest || fnmatch(pseg, sseg, FNM_PERIOD) != 0)
        return false;
    return glob_match(prest, srest);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Walks `dir` recursively. With `pattern` (relative to `base_len` chars of the
 * path) only matching files are kept; without it, every *.parquet file. */
static int walk(const char *dir, size_t base_len, const char *pattern, int depth,
                int max_depth, struct file_list *fl, struct vt_error *err)
{
    if (depth > max_depth)
        return 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (depth == 0) {
            vt_error_set(err, errno == ENOENT ? VT_ERR_SOURCE_EMPTY : VT_ERR_SOURCE_UNAVAILABLE,
                         "cannot open directory %s: %s", dir, strerror(errno));
            return -1;
        }
        log_warn("source: skipping unreadable directory %s: %s", dir, strerror(errno));
        return 0;
    }
    /* Collect and sort entries so the file order is stable. */
    size_t n = 0, cap = 0;
    char **names = NULL;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **p = realloc(names, cap * sizeof *p);
            if (!p)
                break;
            names = p;
        }
        names[n] = strdup(de->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *name = names[i];
        if (is_hidden(name))
            continue;
        size_t need = strlen(dir) + 1 + strlen(name) + 1;
        char *path = malloc(need);
        if (!path) {
            rc = -1;
            break;
        }
        snprintf(path, need, "%s/%s", dir, name);
        struct stat st;
        if (stat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                if (is_hive_component(name))
                    fl->saw_hive_dir = true;
                rc = walk(path, base_len, pattern, depth + 1, max_depth, fl, err);
            } else if (S_ISREG(st.st_mode)) {
                bool keep = pattern ? glob_match(pattern, path + base_len)
                                    : has_suffix(name, ".parquet");
                if (keep && list_push(fl, path, (int64_t)st.st_size) < 0) {
                    if (fl->too_many)
                        vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "more than %d files in %s",
                                     LOCAL_MAX_FILES, dir);
                    else
                        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory listing %s", dir);
                    rc = -1;
                }
            }
        }
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static bool has_glob_chars(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

enum vt_err source_local_resolve(const struct vt_dataset_config *ds,
                                 struct source_snapshot *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->kind = ds->kind;
    const char *loc = ds->location;
    if (!loc || !*loc)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "dataset %s: source.location is empty",
                            ds->name);
    struct file_list fl = {0};
    int rc = 0;
    if (has_glob_chars(loc)) {
        /* Base directory: the segments before the first one with a wildcard. */
        char *base = strdup(loc);
        if (!base)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        char *wild = base + (strpbrk(base, "*?[") - base);
        while (wild > base && *wild != '/')
            wild--;
        const char *pattern;
        if (*wild == '/') {
            *wild = '\0';
            pattern = loc + (wild - base) + 1;
        } else {
            memcpy(base, ".", 2); /* base holds at least loc's one character */
            pattern = loc;
        }
        const char *dir = *base ? base : "/";
        size_t base_len = strlen(dir) + 1; /* the '/' after the base */
        /* Without "**" the pattern fixes the depth: do not descend further. */
        int max_depth = LOCAL_MAX_DEPTH;
        if (!strstr(pattern, "**")) {
            max_depth = 0;
            for (const char *c = pattern; *c; c++)
                max_depth += *c == '/';
        }
        rc = walk(dir, base_len, pattern, 0, max_depth, &fl, err);
        free(base);
    } else {
        struct stat st;
        if (stat(loc, &st) != 0) {
            free(fl.items);
            if (errno == ENOENT)
                return vt_error_set(err, VT_ERR_SOURCE_EMPTY, "no such file or directory: %s", loc);
            return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot open %s: %s", loc,
                                strerror(errno));
        }
        if (S_ISDIR(st.st_mode)) {
            char *dir = strdup(loc);
            if (!dir)
                return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
            size_t n = strlen(dir);
            while (n > 1 && dir[n - 1] == '/')
                dir[--n] = '\0';
            rc = walk(dir, n + 1, NULL, 0, LOCAL_MAX_DEPTH, &fl, err);
            free(dir);
        } else {
            rc = list_push(&fl, loc, (int64_t)st.st_size);
            if (rc < 0)
                vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        }
    }
    out->files = fl.items;
    out->n_files = fl.len;
    out->total_bytes = fl.total_bytes;
    out->hive_from_paths = fl.saw_hive_dir;
    if (rc < 0) {
        source_snapshot_release(out);
        return err->code;
    }
    if (fl.len == 0) {
        source_snapshot_release(out);
        return vt_error_set(err, VT_ERR_SOURCE_EMPTY, "no parquet files match %s", loc);
    }
    return VT_ERR_OK;
}
