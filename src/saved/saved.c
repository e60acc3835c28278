/*
 * Saved queries: the POST /api/v1/queries body and the files of the
 * saved-queries directory (see saved.h).
 */
#include "saved/saved.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"
#include "util/limits.h"
#include "util/strbuf.h"
#include "util/strvec.h"

/* ------------------------------------------------------------- request */

static const char *const fields[] = {"name", "sql", "kind", "ttl", "refresh", "materialize",
                                     "index", NULL};

static bool is_field(const char *k)
{
    for (size_t i = 0; fields[i]; i++)
        if (!strcmp(fields[i], k))
            return true;
    return false;
}

/* `v` is absent or JSON null. */
static bool unset(const json_t *v)
{
    return !v || json_is_null(v);
}

void saved_request_release(struct saved_request *r)
{
    config_dataset_free(&r->ds);
    memset(r, 0, sizeof *r);
}

enum vt_err saved_parse_request(const json_t *body, struct saved_request *out,
                                struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    config_dataset_defaults(&out->ds);
    if (!json_is_object(body))
        return vt_error_set(err, VT_ERR_INVALID_FIELD, "the body must be a JSON object");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)body, k, v) {
        (void)v;
        if (!is_field(k)) {
            if (!strcmp(k, "depends_on"))
                return vt_error_set(err, VT_ERR_UNKNOWN_FIELD,
                                    "depends_on is inferred from the SQL, never given "
                                    "(fields: name, sql, kind, ttl, refresh, materialize, index)");
            return vt_error_set(err, VT_ERR_UNKNOWN_FIELD,
                                "unknown field \"%.64s\" (fields: name, sql, kind, ttl, refresh, "
                                "materialize, index)",
                                k);
        }
    }
    const json_t *name = json_object_get(body, "name");
    const json_t *sql = json_object_get(body, "sql");
    const json_t *kind = json_object_get(body, "kind");
    const json_t *ttl = json_object_get(body, "ttl");
    const json_t *refresh = json_object_get(body, "refresh");
    const json_t *materialize = json_object_get(body, "materialize");
    const json_t *index = json_object_get(body, "index");
    if (!json_is_string(name))
        return vt_error_set(err, VT_ERR_INVALID_FIELD, "name: a string is required");
    const char *why;
    if (!config_valid_dataset_name(json_string_value(name), &why))
        return vt_error_set(err, VT_ERR_INVALID_NAME, "invalid dataset name \"%.*s\": it %s",
                            VT_MAX_DATASET_NAME_BYTES, json_string_value(name), why);
    /* Its file would be <name>.toml: hidden, and never read back at start. */
    if (json_string_value(name)[0] == '.')
        return vt_error_set(err, VT_ERR_INVALID_NAME,
                            "invalid dataset name \"%.*s\": a saved query's name cannot start "
                            "with '.' (its file would be hidden)",
                            VT_MAX_DATASET_NAME_BYTES, json_string_value(name));
    if (!json_is_string(sql) || json_string_length(sql) == 0)
        return vt_error_set(err, VT_ERR_INVALID_FIELD, "sql: a non-empty string is required");
    if (json_string_length(sql) > VT_MAX_SQL_BYTES)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "sql: longer than %d bytes",
                            VT_MAX_SQL_BYTES);
    if (strlen(json_string_value(sql)) != json_string_length(sql))
        return vt_error_set(err, VT_ERR_INVALID_FIELD, "sql: contains a NUL character");
    out->persist = false;
    if (!unset(kind)) {
        const char *kv = json_is_string(kind) ? json_string_value(kind) : NULL;
        if (kv && !strcmp(kv, "query"))
            out->persist = true;
        else if (!kv || strcmp(kv, "temp") != 0)
            return vt_error_set(err, VT_ERR_INVALID_FIELD,
                                "kind: expected \"temp\" (memory only, lost on restart) or "
                                "\"query\" (kept across restarts)");
    }
    if (!unset(ttl)) {
        if (out->persist)
            return vt_error_set(err, VT_ERR_INVALID_FIELD,
                                "ttl: only saved queries of kind \"temp\" expire (a \"query\" is "
                                "kept until deleted)");
        int64_t ms = json_is_string(ttl) ? config_parse_duration_ms(json_string_value(ttl)) : -1;
        if (ms <= 0)
            return vt_error_set(err, VT_ERR_INVALID_FIELD,
                                "ttl: expected a duration such as \"30s\", \"15m\" or \"2h\"");
        out->ttl_ms = ms;
    }
    static const char *const objects[] = {"refresh", "materialize", "index", NULL};
    for (size_t i = 0; objects[i]; i++) {
        const json_t *o = json_object_get(body, objects[i]);
        if (!unset(o) && !json_is_object(o))
            return vt_error_set(err, VT_ERR_INVALID_FIELD, "%s: an object is expected",
                                objects[i]);
    }
    /* The spec's rule, stricter than the config's (which accepts an index
     * block with mode "none"): no index object beside residency "lazy". */
    const json_t *residency = unset(materialize) ? NULL : json_object_get(materialize, "residency");
    if (!unset(index) && json_is_string(residency) &&
        !strcmp(json_string_value(residency), "lazy"))
        return vt_error_set(err, VT_ERR_INVALID_FIELD,
                            "index: not allowed with materialize.residency \"lazy\" (a lazy "
                            "dataset is served from its Parquet files and carries no index)");

    /* The dataset block, read by the config's parser (same rules, same
     * messages as a [[dataset]] block). */
    json_t *block = json_object();
    if (!block)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    json_object_set(block, "name", (json_t *)name);
    json_object_set(block, "sql", (json_t *)sql);
    if (!unset(refresh))
        json_object_set(block, "refresh", (json_t *)refresh);
    if (!unset(materialize))
        json_object_set(block, "materialize", (json_t *)materialize);
    if (!unset(index))
        json_object_set(block, "index", (json_t *)index);
    config_dataset_free(&out->ds);
    struct vt_error perr = {0};
    enum vt_err rc = config_dataset_from_json(block, &out->ds, &perr);
    json_decref(block);
    if (rc != VT_ERR_OK) {
        /* The config parser's INVALID_CONFIG is, for a request body, a bad
         * field; its other codes (unknown_field, invalid_name) stand. */
        if (rc == VT_ERR_INVALID_CONFIG)
            rc = VT_ERR_INVALID_FIELD;
        config_dataset_defaults(&out->ds);
        return vt_error_set(err, rc, "%s", vt_error_message(&perr));
    }
    if (out->ds.kind != CFG_SOURCE_QUERY) {
        saved_request_release(out);
        return vt_error_set(err, VT_ERR_INVALID_FIELD, "sql: required");
    }
    return VT_ERR_OK;
}

/* --------------------------------------------------------------- files */

#define SAVED_SUFFIX ".toml"

char *saved_file_path(const char *dir, const char *name)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_addf(&sb, "%s/%s%s", dir, name, SAVED_SUFFIX);
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    size_t n;
    return sb_detach(&sb, &n);
}

enum vt_err saved_write(const char *dir, const struct vt_dataset_config *ds,
                        struct vt_error *err)
{
    if (util_make_dirs(dir) != 0)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot create %s: %s", dir, strerror(errno));
    char *block = config_dataset_to_toml(ds);
    char *path = saved_file_path(dir, ds->name);
    struct strbuf text;
    sb_init(&text, VT_MAX_CONFIG_BYTES);
    sb_adds(&text, "# A saved query of kind \"query\" (POST /api/v1/queries), written by vitrine.\n"
                   "# Read at startup; DELETE /api/v1/queries/<name> removes it.\n");
    if (block)
        sb_adds(&text, block);
    enum vt_err rc;
    if (!block || !path || text.overflow)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot render the saved query %s",
                          ds->name);
    else
        rc = util_write_file_atomic(path, text.buf, text.len, 0644, VT_ERR_INTERNAL, err);
    sb_release(&text);
    free(block);
    free(path);
    return rc;
}

enum vt_err saved_remove(const char *dir, const char *name, struct vt_error *err)
{
    char *path = saved_file_path(dir, name);
    if (!path)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    enum vt_err rc = VT_ERR_OK;
    if (unlink(path) != 0 && errno != ENOENT)
        rc = vt_error_set(err, VT_ERR_INTERNAL, "cannot remove %s: %s", path, strerror(errno));
    else
        util_fsync_path(dir);
    free(path);
    return rc;
}

void saved_files_free(struct saved_file *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(files[i].path);
        config_dataset_free(&files[i].ds);
    }
    free(files);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The file names <name>.toml of `dir`, sorted; NULL list when absent. */
static enum vt_err list_files(const char *dir, char ***out, size_t *out_n, struct vt_error *err)
{
    *out = NULL;
    *out_n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return VT_ERR_OK;
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: cannot read the saved-queries "
                            "directory: %s", dir, strerror(errno));
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    enum vt_err rc = VT_ERR_OK;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name), sl = strlen(SAVED_SUFFIX);
        /* Hidden files and the temp files of an interrupted write are not
         * saved queries. */
        if (de->d_name[0] == '.' || len <= sl || strcmp(de->d_name + len - sl, SAVED_SUFFIX) != 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **p = realloc(names, ncap * sizeof *p);
            if (!p) {
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
                break;
            }
            names = p;
            cap = ncap;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
            break;
        }
        n++;
    }
    closedir(d);
    if (rc != VT_ERR_OK) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return rc;
    }
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    *out = names;
    *out_n = n;
    return VT_ERR_OK;
}

/* Reads one file into `f` (path and dataset). */
static enum vt_err load_one(const char *dir, const char *file, struct saved_file *f,
                            struct vt_error *err)
{
    struct strbuf p;
    sb_init(&p, 0);
    sb_addf(&p, "%s/%s", dir, file);
    size_t plen;
    f->path = p.overflow ? NULL : sb_detach(&p, &plen);
    sb_release(&p);
    if (!f->path)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    char *text = NULL;
    size_t len = 0;
    enum vt_err rc = util_read_file(f->path, VT_MAX_CONFIG_BYTES, VT_ERR_INVALID_CONFIG, &text,
                                    &len, err);
    if (rc != VT_ERR_OK)
        return rc;
    struct vt_dataset_config *ds = NULL;
    size_t n = 0;
    rc = config_load_datasets_text(text, len, f->path, &ds, &n, err);
    free(text);
    if (rc != VT_ERR_OK)
        return rc;
    size_t stem = strlen(file) - strlen(SAVED_SUFFIX);
    if (n != 1)
        rc = vt_error_set(err, VT_ERR_INVALID_CONFIG,
                          "%s: a saved query file holds exactly one [[dataset]] block (found %zu)",
                          f->path, n);
    else if (ds[0].kind != CFG_SOURCE_QUERY)
        rc = vt_error_set(err, VT_ERR_INVALID_CONFIG,
                          "%s: a saved query is of kind \"query\" (found \"%s\")", f->path,
                          config_source_kind_name(ds[0].kind));
    else if (strlen(ds[0].name) != stem || strncmp(ds[0].name, file, stem) != 0)
        rc = vt_error_set(err, VT_ERR_INVALID_CONFIG,
                          "%s: the dataset is named \"%s\"; a saved query's file is named after "
                          "it (%s%s)",
                          f->path, ds[0].name, ds[0].name, SAVED_SUFFIX);
    if (rc == VT_ERR_OK)
        f->ds = ds[0];
    else if (n)
        config_dataset_free(&ds[0]);
    for (size_t i = 1; i < n; i++)
        config_dataset_free(&ds[i]);
    free(ds);
    return rc;
}

enum vt_err saved_load(const char *dir, const struct vt_config *cfg, struct saved_file **out,
                       size_t *out_n, struct strvec *skipped, struct vt_error *err)
{
    *out = NULL;
    *out_n = 0;
    if (!dir)
        return VT_ERR_OK;
    char **names;
    size_t n;
    enum vt_err rc = list_files(dir, &names, &n, err);
    if (rc != VT_ERR_OK || n == 0)
        return rc;
    struct saved_file *files = calloc(n, sizeof *files);
    size_t loaded = 0;
    if (!files)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    for (size_t i = 0; rc == VT_ERR_OK && i < n; i++) {
        struct vt_error why = {0};
        struct saved_file f = {0};
        enum vt_err frc = load_one(dir, names[i], &f, &why);
        bool read = frc == VT_ERR_OK; /* f.ds holds a dataset to free */
        /* Unique ignoring case, against the config and the files before. */
        for (size_t c = 0; frc == VT_ERR_OK && cfg && c < cfg->n_datasets; c++)
            if (!strcasecmp(cfg->datasets[c].name, f.ds.name))
                frc = vt_error_set(&why, VT_ERR_INVALID_CONFIG,
                                   "%s: dataset \"%s\" is also defined in %s (line %d), which "
                                   "wins: remove one of them",
                                   f.path, f.ds.name, cfg->path ? cfg->path : "the config",
                                   cfg->datasets[c].line);
        for (size_t j = 0; frc == VT_ERR_OK && j < loaded; j++)
            if (!strcasecmp(files[j].ds.name, f.ds.name))
                frc = vt_error_set(&why, VT_ERR_INVALID_CONFIG,
                                   "%s: dataset \"%s\" is also defined in %s (names are unique "
                                   "ignoring case): remove one of them",
                                   f.path, f.ds.name, files[j].path);
        if (frc == VT_ERR_OK) {
            files[loaded++] = f;
            continue;
        }
        if (frc == VT_ERR_OUT_OF_MEMORY) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        } else {
            /* One unreadable or foreign file never stops the start: it is
             * skipped, with the reason naming the file (its name, when the
             * reader had no path to give). */
            const char *msg = vt_error_message(&why);
            char line[VT_ERROR_MSG_MAX + 512];
            if (f.path && strstr(msg, f.path))
                snprintf(line, sizeof line, "saved query skipped: %s", msg);
            else
                snprintf(line, sizeof line, "saved query skipped: %s/%s: %s", dir, names[i], msg);
            if (skipped && strvec_push(skipped, line) != 0)
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        }
        free(f.path);
        if (read)
            config_dataset_free(&f.ds);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc != VT_ERR_OK) {
        saved_files_free(files, loaded);
        return rc;
    }
    if (!loaded) {
        free(files);
        files = NULL;
    }
    *out = files;
    *out_n = loaded;
    return VT_ERR_OK;
}
