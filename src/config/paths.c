/*
 * Relative paths in dataset blocks are relative to the config file's
 * directory, not to the server's working directory, so a config file and its
 * data can move together. config_load_text applies this to every [[dataset]];
 * the HTTP registration path applies it to JSON bodies.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_internal.h"

int config_dataset_resolve_paths(struct vt_dataset_config *ds, const char *dir)
{
    const char *loc = ds->location;
    if (!loc || !*loc || loc[0] == '/' || strstr(loc, "://") || !dir || !*dir)
        return 0;
    char *abs = cfg_resolve_against(dir, loc);
    if (!abs)
        return -1;
    free(ds->location);
    ds->location = abs;
    return 0;
}

/* Adds `dir` (and its real path, when it differs: DuckDB compares paths as
 * written, and a source may be named either way) unless already there. */
static int add_dir(struct strvec *out, const char *dir)
{
    if (!dir || !*dir)
        return 0;
    if (strvec_find(out, dir) < 0 && strvec_push(out, dir) != 0)
        return -1;
    char real[PATH_MAX];
    if (realpath(dir, real) && strcmp(real, dir) != 0 && strvec_find(out, real) < 0 &&
        strvec_push(out, real) != 0)
        return -1;
    return 0;
}

/* The directory a local location lives in: the location itself when it is a
 * directory, else the part before the last '/' that precedes any glob
 * character (a glob /d/x/y*.parquet gives /d/x; a file /d/a.parquet gives /d).
 * A single file reached through a link adds the directory of its target too:
 * the source policy lets a config dataset read its own location after links,
 * so DuckDB must be able to open it there. */
static int add_location_dir(struct strvec *out, const char *loc)
{
    if (!loc || loc[0] != '/')
        return 0; /* s3:// and the like are not files */
    size_t n = strcspn(loc, "*?[{");
    struct stat st;
    if (!loc[n] && stat(loc, &st) == 0 && S_ISDIR(st.st_mode))
        return add_dir(out, loc);
    char real[PATH_MAX];
    if (!loc[n] && realpath(loc, real)) {
        char *slash = strrchr(real, '/');
        if (slash && slash != real) {
            *slash = '\0';
            if (add_dir(out, real) != 0)
                return -1;
        }
    }
    while (n > 0 && loc[n - 1] != '/')
        n--;
    if (n <= 1)
        return add_dir(out, "/");
    char *d = strndup(loc, n - 1);
    if (!d)
        return -1;
    int rc = add_dir(out, d);
    free(d);
    return rc;
}

char *config_location_root(const char *loc)
{
    if (loc && strncmp(loc, "file://", 7) == 0)
        loc += 7;
    if (!loc || loc[0] != '/')
        return NULL; /* s3:// and the like are not directories */
    size_t n = strcspn(loc, "*?[{");
    struct stat st;
    if (!loc[n] && stat(loc, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t len = strlen(loc);
        while (len > 1 && loc[len - 1] == '/')
            len--;
        return len > 1 ? strndup(loc, len) : NULL;
    }
    while (n > 0 && loc[n - 1] != '/')
        n--;
    /* "/x.parquet" would make the whole file system a root: never. */
    return n > 1 ? strndup(loc, n - 1) : NULL;
}

int config_source_roots(const struct vt_config *cfg, struct strvec *out)
{
    const struct strvec *roots = &cfg->server.allowed_roots;
    for (size_t i = 0; i < roots->len; i++)
        if (strvec_push(out, roots->items[i]) != 0)
            return -1;
    if (roots->len)
        return 0;
    const char *defaults[] = {cfg->dir, cfg->server.saved_queries_dir, cfg->server.storage_dir};
    char cwd[PATH_MAX];
    if (!cfg->dir)
        defaults[0] = getcwd(cwd, sizeof cwd);
    for (size_t i = 0; i < 3; i++)
        if (defaults[i] && *defaults[i] && strvec_find(out, defaults[i]) < 0 &&
            strvec_push(out, defaults[i]) != 0)
            return -1;
    /* The directories of the config file's own datasets: a file beside one
     * may be registered (issue 21 item 3). */
    for (size_t i = 0; i < cfg->n_datasets; i++) {
        char *d = config_location_root(cfg->datasets[i].location);
        int rc = d && strvec_find(out, d) < 0 ? strvec_push(out, d) : 0;
        free(d);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int config_file_dirs(const struct vt_config *cfg, struct strvec *out)
{
    /* The source roots first: every path the source policy lets a build
     * read, DuckDB may open (server.allowed_roots is a subset of these). */
    struct strvec roots = {0};
    int rc = config_source_roots(cfg, &roots);
    for (size_t i = 0; !rc && i < roots.len; i++)
        rc = add_dir(out, roots.items[i]);
    strvec_free(&roots);
    /* The service's own directories, wherever allowed_roots puts sources. */
    rc = rc ? rc : add_dir(out, cfg->server.saved_queries_dir);
    rc = rc ? rc : add_dir(out, cfg->server.storage_dir);
    rc = rc ? rc : add_dir(out, cfg->server.temp_directory);
    for (size_t i = 0; !rc && i < cfg->n_datasets; i++)
        rc = add_location_dir(out, cfg->datasets[i].location);
    return rc;
}
