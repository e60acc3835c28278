/*
 * What sources may reach (docs/architecture.md, "Confined by default"; issue 10 items 4
 * and 5): local directories, S3 endpoints and credential variables.
 *
 *   roots      server.allowed_roots, or by default the config file's
 *              directory, the saved-queries and storage directories (the
 *              working directory without a config file) and the directories
 *              of the config file's own datasets: config_source_roots. They
 *              follow the config: a dataset a config reload adds brings its
 *              directory (source_policy_add_dataset). Every local path a
 *              build reads must lie inside one, after symbolic links are
 *              resolved.
 *              A dataset of the config file also reads its own location, as
 *              written and after links: the operator wrote it.
 *   DuckDB     may open only the directories it was confined to at start
 *              (config_file_dirs plus the runtime directory; eng_confine):
 *              DuckDB cannot widen them once external access is off. A file
 *              the policy allows outside them (a directory a config reload
 *              added) is read through a link in the build's pin directory
 *              (source_policy_engine_reads, storage_local.c), so /sql still
 *              reaches nothing new.
 *   endpoints  server.allowed_s3_endpoints plus every s3.endpoint the config
 *              file's datasets name: the only endpoints a request may choose.
 *   envs       AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 *              server.allowed_credential_envs and every s3.*_env the config
 *              file's datasets name: the only variables a request may name.
 *
 * A path outside the roots gets one message whatever it is (there, missing,
 * unreadable): the check looks at the text of the path first and touches the
 * file system only for paths that lie inside, so a request cannot probe
 * what exists elsewhere.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/sources_internal.h"
#include "util/strvec.h"

struct source_policy {
    pthread_rwlock_t lock;      /* the lists grow at config reloads */
    bool roots_follow_config;   /* server.allowed_roots is empty */
    struct strvec roots;        /* absolute, normalized text */
    struct strvec real_roots;   /* the same after symbolic links (those that exist) */
    struct strvec endpoints;    /* normalized URLs */
    struct strvec envs;
    struct strvec engine_dirs;  /* where DuckDB may open files (frozen at start), normalized */
};

static const char *const standard_envs[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                            "AWS_SESSION_TOKEN"};

/* "/a/./b//c/../d/" -> "/a/b/d" (no file system access); a relative path is
 * taken from the working directory. NULL when it cannot be made absolute. */
static char *normalize(const char *path)
{
    struct strbuf in;
    sb_init(&in, 0);
    if (path[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            sb_release(&in);
            return NULL;
        }
        sb_addf(&in, "%s/", cwd);
    }
    sb_adds(&in, path);
    if (in.overflow) {
        sb_release(&in);
        return NULL;
    }
    char *out = malloc(in.len + 2);
    if (!out) {
        sb_release(&in);
        return NULL;
    }
    size_t o = 0;
    for (const char *p = in.buf; *p;) {
        while (*p == '/')
            p++;
        const char *seg = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - seg);
        if (n == 0 || (n == 1 && seg[0] == '.'))
            continue;
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--; /* the '/' before the dropped segment */
            continue;
        }
        out[o++] = '/';
        memcpy(out + o, seg, n);
        o += n;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    sb_release(&in);
    return out;
}

static bool inside(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return path[0] == '/';
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* An extra root (source_policy_extra_root) is "<as written, normalized>\0<after
 * links>\0": a path inside either form is inside it. */
static bool inside_extra(const char *path, const char *extra)
{
    return extra && (inside(path, extra) || inside(path, extra + strlen(extra) + 1));
}

static bool inside_any(const char *path, const struct strvec *roots, const char *extra)
{
    for (size_t i = 0; i < roots->len; i++)
        if (inside(path, roots->items[i]))
            return true;
    return inside_extra(path, extra);
}

static void add_unique(struct strvec *v, const char *s)
{
    if (strvec_find(v, s) < 0)
        strvec_push(v, s);
}

static void add_root(struct source_policy *p, const char *path)
{
    char *n = path && *path ? normalize(path) : NULL;
    if (!n)
        return;
    add_unique(&p->roots, n);
    char real[PATH_MAX];
    if (realpath(n, real))
        add_unique(&p->real_roots, real);
    free(n);
}

/* "HTTP://Host:9000/" -> "http://host:9000": scheme and host compare without
 * case, a trailing '/' does not matter. */
static char *normalize_endpoint(const char *ep)
{
    size_t n = strlen(ep);
    while (n > 0 && ep[n - 1] == '/')
        n--;
    char *out = strndup(ep, n);
    if (!out)
        return NULL;
    char *scheme_end = strstr(out, "://");
    char *host_end = scheme_end ? scheme_end + 3 + strcspn(scheme_end + 3, "/") : out + n;
    for (char *c = out; c < host_end; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    return out;
}

static void add_dataset(struct source_policy *p, const struct vt_dataset_config *ds)
{
    if (ds->s3.endpoint && *ds->s3.endpoint) {
        char *e = normalize_endpoint(ds->s3.endpoint);
        if (e)
            add_unique(&p->endpoints, e);
        free(e);
    }
    const char *envs[] = {ds->s3.access_key_id_env, ds->s3.secret_access_key_env,
                          ds->s3.session_token_env};
    for (size_t i = 0; i < 3; i++)
        if (envs[i] && *envs[i])
            add_unique(&p->envs, envs[i]);
}

struct source_policy *source_policy_create(const struct vt_config *cfg)
{
    struct source_policy *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_rwlock_init(&p->lock, NULL);
    p->roots_follow_config = cfg->server.allowed_roots.len == 0;
    /* The same roots DuckDB's confinement starts from (config_file_dirs),
     * and DuckDB's own directories as they are now: eng_confine froze them. */
    struct strvec roots = {0}, dirs = {0};
    if (config_source_roots(cfg, &roots) != 0 || config_file_dirs(cfg, &dirs) != 0) {
        strvec_free(&roots);
        strvec_free(&dirs);
        source_policy_destroy(p);
        return NULL;
    }
    for (size_t i = 0; i < roots.len; i++)
        add_root(p, roots.items[i]);
    strvec_free(&roots);
    for (size_t i = 0; i < dirs.len; i++) {
        char *n = normalize(dirs.items[i]);
        if (n)
            add_unique(&p->engine_dirs, n);
        free(n);
    }
    strvec_free(&dirs);
    for (size_t i = 0; i < cfg->server.allowed_s3_endpoints.len; i++) {
        char *e = normalize_endpoint(cfg->server.allowed_s3_endpoints.items[i]);
        if (e)
            add_unique(&p->endpoints, e);
        free(e);
    }
    for (size_t i = 0; i < sizeof standard_envs / sizeof standard_envs[0]; i++)
        add_unique(&p->envs, standard_envs[i]);
    for (size_t i = 0; i < cfg->server.allowed_credential_envs.len; i++)
        add_unique(&p->envs, cfg->server.allowed_credential_envs.items[i]);
    for (size_t i = 0; i < cfg->n_datasets; i++)
        add_dataset(p, &cfg->datasets[i]);
    return p;
}

void source_policy_destroy(struct source_policy *p)
{
    if (!p)
        return;
    strvec_free(&p->roots);
    strvec_free(&p->real_roots);
    strvec_free(&p->endpoints);
    strvec_free(&p->envs);
    strvec_free(&p->engine_dirs);
    pthread_rwlock_destroy(&p->lock);
    free(p);
}

void source_policy_add_dataset(struct source_policy *p, const struct vt_dataset_config *ds)
{
    if (!p || ds->kind == CFG_SOURCE_QUERY)
        return;
    pthread_rwlock_wrlock(&p->lock);
    if (p->roots_follow_config) {
        char *d = config_location_root(ds->location);
        add_root(p, d);
        free(d);
    }
    add_dataset(p, ds);
    pthread_rwlock_unlock(&p->lock);
}

bool source_policy_engine_reads(const struct source_policy *p, const char *real_path)
{
    if (!p)
        return true;
    char *n = normalize(real_path);
    pthread_rwlock_rdlock((pthread_rwlock_t *)&p->lock);
    bool ok = n && inside_any(n, &p->engine_dirs, NULL);
    pthread_rwlock_unlock((pthread_rwlock_t *)&p->lock);
    free(n);
    return ok;
}

/* The one answer for a path outside the roots, whatever is there. */
static enum vt_err refuse_outside(const char *path, struct vt_error *err)
{
    return vt_error_set(err, VT_ERR_SOURCE_NOT_ALLOWED,
                        "%.300s is outside the directories sources may be read from "
                        "(server.allowed_roots)",
                        path);
}

/* The literal part of a location: up to the directory holding its first
 * wildcard, else all of it. */
static char *literal_root(const char *loc)
{
    size_t wild = strcspn(loc, "*?[");
    if (!loc[wild])
        return strdup(loc);
    while (wild > 0 && loc[wild - 1] != '/')
        wild--;
    return wild ? strndup(loc, wild) : strdup(".");
}

enum vt_err source_policy_check(const struct source_policy *p,
                                const struct vt_dataset_config *ds, struct vt_error *err)
{
    if (!p || ds->kind == CFG_SOURCE_QUERY)
        return VT_ERR_OK;
    const char *loc = ds->location ? ds->location : "";
    if (!storage_is_s3(loc)) {
        if (strncmp(loc, "file://", 7) == 0)
            loc += 7;
        char *lit = literal_root(loc);
        char *n = lit ? normalize(lit) : NULL;
        pthread_rwlock_rdlock((pthread_rwlock_t *)&p->lock);
        bool ok = n && inside_any(n, &p->roots, NULL);
        pthread_rwlock_unlock((pthread_rwlock_t *)&p->lock);
        free(lit);
        free(n);
        return ok ? VT_ERR_OK : refuse_outside(ds->location ? ds->location : "", err);
    }
    if (ds->s3.endpoint && *ds->s3.endpoint) {
        char *e = normalize_endpoint(ds->s3.endpoint);
        pthread_rwlock_rdlock((pthread_rwlock_t *)&p->lock);
        bool ok = e && strvec_find(&p->endpoints, e) >= 0;
        pthread_rwlock_unlock((pthread_rwlock_t *)&p->lock);
        free(e);
        if (!ok)
            return vt_error_set(err, VT_ERR_SOURCE_NOT_ALLOWED,
                                "s3.endpoint %.300s is not one the server allows (endpoints of "
                                "the config file's datasets and server.allowed_s3_endpoints)",
                                ds->s3.endpoint);
    }
    const char *keys[] = {"s3.access_key_id_env", "s3.secret_access_key_env",
                          "s3.session_token_env"};
    const char *envs[] = {ds->s3.access_key_id_env, ds->s3.secret_access_key_env,
                          ds->s3.session_token_env};
    for (size_t k = 0; k < 3; k++) {
        if (!envs[k] || !*envs[k])
            continue;
        pthread_rwlock_rdlock((pthread_rwlock_t *)&p->lock);
        bool listed = strvec_find(&p->envs, envs[k]) >= 0;
        pthread_rwlock_unlock((pthread_rwlock_t *)&p->lock);
        if (!listed)
            return vt_error_set(err, VT_ERR_SOURCE_NOT_ALLOWED,
                                "%s names %.100s, which is not a credential variable the server "
                                "allows (the AWS_* variables, those of the config file's "
                                "datasets and server.allowed_credential_envs)",
                                keys[k], envs[k]);
    }
    return VT_ERR_OK;
}

char *source_policy_extra_root(const char *location)
{
    if (!location || storage_is_s3(location))
        return NULL;
    if (strncmp(location, "file://", 7) == 0)
        location += 7;
    char *lit = literal_root(location);
    char *n = lit ? normalize(lit) : NULL;
    free(lit);
    if (!n)
        return NULL;
    /* As written and after links: a location reached through a link
     * ("../shared/t" where shared is one) is read under either name. */
    char real[PATH_MAX];
    const char *r = realpath(n, real) ? real : n;
    size_t nl = strlen(n), rl = strlen(r);
    char *out = malloc(nl + rl + 2);
    if (out) {
        memcpy(out, n, nl + 1);
        memcpy(out + nl + 1, r, rl + 1);
    }
    free(n);
    return out;
}

/* Where `path` (absolute, normalized) leads after symbolic links, as far as
 * it exists: each component is looked at in turn and a link's target spliced
 * in, so a link to a place that does not exist still resolves to that place.
 * *out_exists says whether all of it exists. NULL on a link loop (more than
 * 40 links) or out of memory. */
static char *resolve(const char *path, bool *out_exists, int *out_errno)
{
    *out_exists = false;
    *out_errno = 0;
    char *todo = strdup(path);          /* what is left to resolve */
    char *done = calloc(1, PATH_MAX);   /* resolved so far, "" = "/" */
    int links = 0;
    if (!todo || !done)
        goto fail;
    const char *p = todo;
    size_t dl = 0;
    bool missing = false;
    while (*p) {
        while (*p == '/')
            p++;
        const char *seg = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - seg);
        if (n == 0 || (n == 1 && seg[0] == '.'))
            continue;
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            while (dl > 0 && done[dl - 1] != '/')
                dl--;
            if (dl > 0)
                dl--;
            done[dl] = '\0';
            continue;
        }
        if (dl + 1 + n >= PATH_MAX)
            goto fail;
        done[dl] = '/';
        memcpy(done + dl + 1, seg, n);
        done[dl + 1 + n] = '\0';
        if (missing) { /* below a missing component: text only */
            dl += 1 + n;
            continue;
        }
        struct stat st;
        if (lstat(done, &st) != 0) {
            *out_errno = errno;
            missing = true;
            dl += 1 + n;
            continue;
        }
        if (!S_ISLNK(st.st_mode)) {
            dl += 1 + n;
            continue;
        }
        if (++links > 40)
            goto fail;
        char target[PATH_MAX];
        ssize_t tl = readlink(done, target, sizeof target - 1);
        if (tl < 0)
            goto fail;
        target[tl] = '\0';
        /* The rest becomes target + what followed the link. */
        struct strbuf next;
        sb_init(&next, 0);
        sb_addf(&next, "%s/%s", target, p);
        if (next.overflow) {
            sb_release(&next);
            goto fail;
        }
        if (target[0] == '/')
            dl = 0;
        done[dl] = '\0';
        free(todo);
        todo = sb_detach(&next, NULL);
        p = todo;
    }
    if (dl == 0) {
        done[0] = '/';
        done[1] = '\0';
    }
    free(todo);
    *out_exists = !missing;
    return done;
fail:
    if (!*out_errno)
        *out_errno = links > 40 ? ELOOP : ENOMEM;
    free(todo);
    free(done);
    return NULL;
}

enum vt_err source_policy_confine(const struct source_policy *p, const char *extra_root,
                                  const char *path, char **out_real, bool *out_missing,
                                  struct vt_error *err)
{
    *out_real = NULL;
    *out_missing = false;
    char *n = normalize(path);
    if (!n)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (p)
        pthread_rwlock_rdlock((pthread_rwlock_t *)&p->lock);
    /* 1. The text: nothing outside is looked at. */
    if (p && !inside_any(n, &p->roots, extra_root) && !inside_any(n, &p->real_roots, NULL)) {
        pthread_rwlock_unlock((pthread_rwlock_t *)&p->lock);
        free(n);
        goto outside;
    }
    if (p)
        pthread_rwlock_unlock((pthread_rwlock_t *)&p->lock);
    /* 2. Where it leads after links, whether that exists or not: the answer
     * for a place outside is the same either way. */
    bool exists;
    int why;
    char *real = resolve(n, &exists, &why);
    free(n);
    if (!real) {
        if (why == ELOOP)
            return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                "%.300s: too many levels of symbolic links", path);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bool in = true;
    if (p) {
        pthread_rwlock_rdlock((pthread_rwlock_t *)&p->lock);
        in = inside_any(real, &p->real_roots, extra_root) || inside_any(real, &p->roots, NULL);
        pthread_rwlock_unlock((pthread_rwlock_t *)&p->lock);
    }
    if (!in) {
        free(real);
        goto outside;
    }
    if (exists) {
        *out_real = real;
        return VT_ERR_OK;
    }
    free(real);
    if (why == ENOENT || why == ENOTDIR) {
        *out_missing = true;
        return VT_ERR_OK;
    }
    return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot open %.300s: %s", path,
                        strerror(why));
outside:
    return refuse_outside(path, err);
}
