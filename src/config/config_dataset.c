/*
 * Dataset blocks: the [[dataset]] tables of a config file, the JSON body of
 * POST /api/v1/datasets, and the TOML block written back by persist.
 *
 * One reader (cfg_read_dataset) serves the file and the JSON paths, so a
 * dataset is accepted or refused by the same rules whichever way it arrives.
 * config_dataset_to_toml() writes every field that differs from its default
 * so the block parses back to an equal struct (config_dataset_equal).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "util/limits.h"
#include "util/strbuf.h"

#define DEFAULT_MAX_CARDINALITY 100000
#define DEFAULT_REFRESH_TIMEOUT_MS (10 * 60 * 1000)
#define DEFAULT_REFRESH_DEBOUNCE_MS (5 * 1000)

static const char *const kind_names[] = {"parquet", "delta", "query", NULL};
static const char *const index_mode_names[] = {"auto", "list", "none", NULL};
static const char *const on_start_names[] = {"eager", "lazy", "skip", NULL};
static const char *const residency_names[] = {"auto", "memory", "lazy", NULL};
static const char *const addressing_names[] = {"virtual", "path", NULL};
static const char *const partitioning_names[] = {"auto", "hive", "none", NULL};

const char *source_kind_name(enum source_kind k)
{
    return (unsigned)k < 3 ? kind_names[k] : "unknown";
}

/* ---------------------------------------------------------------- lifecycle */

void config_dataset_defaults(struct vt_dataset_config *ds)
{
    memset(ds, 0, sizeof *ds);
    ds->kind = SOURCE_PARQUET;
    ds->index_mode = INDEX_AUTO;
    ds->index_max_cardinality = DEFAULT_MAX_CARDINALITY;
    ds->s3.addressing_style = S3_ADDRESSING_VIRTUAL;
    ds->s3.partitioning = S3_PARTITIONING_AUTO;
    ds->refresh.timeout_ms = DEFAULT_REFRESH_TIMEOUT_MS;
    ds->refresh.jitter = true;
    ds->refresh.debounce_ms = DEFAULT_REFRESH_DEBOUNCE_MS;
    ds->materialize.residency = RESIDENCY_AUTO;
    ds->on_start = ON_START_EAGER;
}

void config_dataset_free(struct vt_dataset_config *ds)
{
    if (!ds)
        return;
    free(ds->name);
    free(ds->location);
    free(ds->sql);
    strvec_free(&ds->depends_on);
    strvec_free(&ds->columns);
    strvec_free(&ds->index_columns);
    free(ds->s3.region);
    free(ds->s3.endpoint);
    free(ds->s3.access_key_id_env);
    free(ds->s3.secret_access_key_env);
    free(ds->s3.session_token_env);
    strvec_free(&ds->materialize.sort_by);
    memset(ds, 0, sizeof *ds);
}

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    return src && !(*dst = strdup(src)) ? -1 : 0;
}

int config_dataset_copy(struct vt_dataset_config *dst, const struct vt_dataset_config *src)
{
    *dst = *src; /* scalars; every owned pointer is replaced below */
    dst->name = dst->location = dst->sql = NULL;
    dst->s3.region = dst->s3.endpoint = NULL;
    dst->s3.access_key_id_env = dst->s3.secret_access_key_env = dst->s3.session_token_env = NULL;
    memset(&dst->depends_on, 0, sizeof dst->depends_on);
    memset(&dst->columns, 0, sizeof dst->columns);
    memset(&dst->index_columns, 0, sizeof dst->index_columns);
    memset(&dst->materialize.sort_by, 0, sizeof dst->materialize.sort_by);
    if (dup_str(&dst->name, src->name) || dup_str(&dst->location, src->location) ||
        dup_str(&dst->sql, src->sql) || dup_str(&dst->s3.region, src->s3.region) ||
        dup_str(&dst->s3.endpoint, src->s3.endpoint) ||
        dup_str(&dst->s3.access_key_id_env, src->s3.access_key_id_env) ||
        dup_str(&dst->s3.secret_access_key_env, src->s3.secret_access_key_env) ||
        dup_str(&dst->s3.session_token_env, src->s3.session_token_env) ||
        strvec_copy(&dst->depends_on, &src->depends_on) ||
        strvec_copy(&dst->columns, &src->columns) ||
        strvec_copy(&dst->index_columns, &src->index_columns) ||
        strvec_copy(&dst->materialize.sort_by, &src->materialize.sort_by)) {
        config_dataset_free(dst);
        return -1;
    }
    return 0;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool config_dataset_equal(const struct vt_dataset_config *a, const struct vt_dataset_config *b)
{
    const struct refresh_config *ra = &a->refresh, *rb = &b->refresh;
    const struct materialize_config *ma = &a->materialize, *mb = &b->materialize;
    return str_eq(a->name, b->name) && a->kind == b->kind && str_eq(a->location, b->location) &&
           str_eq(a->sql, b->sql) && strvec_equal(&a->depends_on, &b->depends_on) &&
           strvec_equal(&a->columns, &b->columns) && a->dict_encode == b->dict_encode &&
           a->lazy == b->lazy && a->index_mode == b->index_mode &&
           strvec_equal(&a->index_columns, &b->index_columns) &&
           a->index_max_cardinality == b->index_max_cardinality &&
           str_eq(a->s3.region, b->s3.region) && str_eq(a->s3.endpoint, b->s3.endpoint) &&
           a->s3.addressing_style == b->s3.addressing_style &&
           a->s3.allow_http == b->s3.allow_http && a->s3.partitioning == b->s3.partitioning &&
           str_eq(a->s3.access_key_id_env, b->s3.access_key_id_env) &&
           str_eq(a->s3.secret_access_key_env, b->s3.secret_access_key_env) &&
           str_eq(a->s3.session_token_env, b->s3.session_token_env) && ra->set == rb->set &&
           ra->interval_ms == rb->interval_ms && ra->on_upstream_reload == rb->on_upstream_reload &&
           ra->timeout_ms == rb->timeout_ms && ra->jitter == rb->jitter &&
           ra->debounce_ms == rb->debounce_ms && ma->set == mb->set &&
           ma->residency == mb->residency && strvec_equal(&ma->sort_by, &mb->sort_by) &&
           ma->reuse_on_start == mb->reuse_on_start && a->on_start == b->on_start;
}

/* ---------------------------------------------------------------- names */

bool config_valid_dataset_name(const char *name, const char **out_reason)
{
    const char *reason = NULL;
    size_t len = name ? strlen(name) : 0;
    if (len == 0)
        reason = "must not be empty";
    else if (len > VT_MAX_DATASET_NAME_BYTES)
        reason = "is too long (at most 128 bytes)";
    else if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
        reason = "may only contain the characters A-Z a-z 0-9 _ . -";
    else if (strcmp(name, "reload-all") == 0)
        reason = "\"reload-all\" is reserved";
    else if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        reason = "\".\" and \"..\" are not dataset names"; /* they would read as URL path steps */
    if (out_reason)
        *out_reason = reason;
    return reason == NULL;
}

/* ---------------------------------------------------------------- reading */

static bool valid_env_name(const char *s)
{
    if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(s);
}

static bool read_source(const struct cfg_blk *b, struct vt_dataset_config *ds)
{
    static const char *const keys[] = {"kind", "location", NULL};
    struct cfg_blk src;
    if (!cfg_sub(b, "source", &src) || !cfg_check_keys(&src, keys))
        return false;
    /* Without source.kind, a dataset with sql is a query, anything else parquet. */
    int kind = cfg_has(b, "sql") ? SOURCE_QUERY : SOURCE_PARQUET;
    if (!cfg_enum(&src, "kind", kind_names, &kind) ||
        !cfg_str(&src, "location", CFG_NONEMPTY, &ds->location))
        return false;
    ds->kind = (enum source_kind)kind;
    if (!cfg_str(b, "sql", CFG_NONEMPTY, &ds->sql) || !cfg_strvec(b, "depends_on", &ds->depends_on))
        return false;
    const char *kn = source_kind_name(ds->kind);
    if (ds->kind == SOURCE_QUERY) {
        if (ds->location)
            return cfg_fail(&src, "location", 0, VT_ERR_INVALID_CONFIG,
                            "not allowed for kind \"query\" (a query reads other datasets through sql)");
        if (!ds->sql)
            return cfg_fail(b, "sql", 0, VT_ERR_INVALID_CONFIG, "required for kind \"query\"");
        for (size_t i = 0; i < ds->depends_on.len; i++) {
            const char *dep = ds->depends_on.items[i], *why;
            char k[48];
            snprintf(k, sizeof k, "depends_on[%zu]", i);
            if (!config_valid_dataset_name(dep, &why))
                return cfg_fail(b, k, cfg_line_of(b, "depends_on"), VT_ERR_INVALID_CONFIG,
                                "\"%.*s\" is not a valid dataset name: it %s",
                                VT_MAX_DATASET_NAME_BYTES, dep, why);
            if (ds->name && strcmp(dep, ds->name) == 0)
                return cfg_fail(b, k, cfg_line_of(b, "depends_on"), VT_ERR_INVALID_CONFIG,
                                "a dataset cannot depend on itself");
            for (size_t j = 0; j < i; j++)
                if (strcmp(dep, ds->depends_on.items[j]) == 0)
                    return cfg_fail(b, k, cfg_line_of(b, "depends_on"), VT_ERR_INVALID_CONFIG,
                                    "\"%s\" is listed twice", dep);
        }
        return true;
    }
    if (!ds->location)
        return cfg_fail(&src, "location", 0, VT_ERR_INVALID_CONFIG, "required for kind \"%s\"", kn);
    if (strncmp(ds->location, "s3://", 5) == 0 &&
        (ds->location[5] == '\0' || ds->location[5] == '/'))
        return cfg_fail(&src, "location", 0, VT_ERR_INVALID_CONFIG,
                        "an s3:// location needs a bucket name (s3://bucket/prefix)");
    if (ds->sql)
        return cfg_fail(b, "sql", 0, VT_ERR_INVALID_CONFIG, "only allowed for kind \"query\"");
    if (cfg_has(b, "depends_on"))
        return cfg_fail(b, "depends_on", 0, VT_ERR_INVALID_CONFIG,
                        "only allowed for kind \"query\"");
    return true;
}

static bool read_index(const struct cfg_blk *b, struct vt_dataset_config *ds)
{
    static const char *const keys[] = {"mode", "columns", "max_cardinality", NULL};
    struct cfg_blk ix;
    int mode = ds->index_mode;
    if (!cfg_sub(b, "index", &ix) || !cfg_check_keys(&ix, keys) ||
        !cfg_enum(&ix, "mode", index_mode_names, &mode) ||
        !cfg_strvec(&ix, "columns", &ds->index_columns) ||
        !cfg_int(&ix, "max_cardinality", 1, INT64_MAX, &ds->index_max_cardinality))
        return false;
    ds->index_mode = (enum index_mode)mode;
    if (ds->index_mode == INDEX_LIST && ds->index_columns.len == 0)
        return cfg_fail(&ix, "columns", 0, VT_ERR_INVALID_CONFIG,
                        "required (non-empty) when index.mode is \"list\"");
    if (ds->index_mode != INDEX_LIST && ds->index_columns.len > 0)
        return cfg_fail(&ix, "columns", 0, VT_ERR_INVALID_CONFIG,
                        "only used when index.mode is \"list\" (mode is \"%s\")",
                        index_mode_names[ds->index_mode]);
    return true;
}

static bool read_s3(const struct cfg_blk *b, struct s3_config *s3)
{
    static const char *const keys[] = {"region", "endpoint", "addressing_style", "allow_http",
                                       "partitioning", "access_key_id_env",
                                       "secret_access_key_env", "session_token_env", NULL};
    struct cfg_blk sb;
    int addressing = s3->addressing_style, partitioning = s3->partitioning;
    if (!cfg_sub(b, "s3", &sb) || !cfg_check_keys(&sb, keys) ||
        !cfg_str(&sb, "region", CFG_NONEMPTY, &s3->region) ||
        !cfg_str(&sb, "endpoint", CFG_NONEMPTY, &s3->endpoint) ||
        !cfg_enum(&sb, "addressing_style", addressing_names, &addressing) ||
        !cfg_bool(&sb, "allow_http", &s3->allow_http) ||
        !cfg_enum(&sb, "partitioning", partitioning_names, &partitioning) ||
        !cfg_str(&sb, "access_key_id_env", 0, &s3->access_key_id_env) ||
        !cfg_str(&sb, "secret_access_key_env", 0, &s3->secret_access_key_env) ||
        !cfg_str(&sb, "session_token_env", 0, &s3->session_token_env))
        return false;
    s3->addressing_style = (enum s3_addressing)addressing;
    s3->partitioning = (enum s3_partitioning)partitioning;
    if (s3->endpoint) {
        bool http = strncmp(s3->endpoint, "http://", 7) == 0;
        if (!http && strncmp(s3->endpoint, "https://", 8) != 0)
            return cfg_fail(&sb, "endpoint", 0, VT_ERR_INVALID_CONFIG,
                            "expected an http:// or https:// URL");
        if (http && !s3->allow_http)
            return cfg_fail(&sb, "endpoint", 0, VT_ERR_INVALID_CONFIG,
                            "a plain http:// endpoint needs s3.allow_http = true");
    }
    const char *env_keys[] = {"access_key_id_env", "secret_access_key_env", "session_token_env"};
    char *env_vals[] = {s3->access_key_id_env, s3->secret_access_key_env, s3->session_token_env};
    for (int i = 0; i < 3; i++)
        if (env_vals[i] && !valid_env_name(env_vals[i]))
            return cfg_fail(&sb, env_keys[i], 0, VT_ERR_INVALID_CONFIG,
                            "expected the name of an environment variable (letters, digits, _)");
    return true;
}

static bool read_refresh(const struct cfg_blk *b, struct vt_dataset_config *ds)
{
    static const char *const keys[] = {"interval", "on_upstream_reload", "timeout", "jitter",
                                       "debounce", NULL};
    struct cfg_blk rb;
    struct refresh_config *r = &ds->refresh;
    if (!cfg_sub(b, "refresh", &rb) || !cfg_check_keys(&rb, keys))
        return false;
    if (!rb.t)
        return true;
    r->set = true;
    if (!cfg_duration(&rb, "interval", 1, &r->interval_ms) ||
        !cfg_bool(&rb, "on_upstream_reload", &r->on_upstream_reload) ||
        !cfg_duration(&rb, "timeout", 1, &r->timeout_ms) || !cfg_bool(&rb, "jitter", &r->jitter) ||
        !cfg_duration(&rb, "debounce", 0, &r->debounce_ms))
        return false;
    if (r->on_upstream_reload && ds->kind != SOURCE_QUERY)
        return cfg_fail(&rb, "on_upstream_reload", 0, VT_ERR_INVALID_CONFIG,
                        "only applies to datasets of kind \"query\" (they have upstreams)");
    return true;
}

static bool read_materialize(const struct cfg_blk *b, struct vt_dataset_config *ds)
{
    static const char *const keys[] = {"residency", "sort_by", "reuse_on_start", NULL};
    struct cfg_blk mb;
    struct materialize_config *m = &ds->materialize;
    if (!cfg_sub(b, "materialize", &mb) || !cfg_check_keys(&mb, keys))
        return false;
    if (!mb.t)
        return true;
    m->set = true;
    int residency = m->residency;
    if (!cfg_enum(&mb, "residency", residency_names, &residency) ||
        !cfg_strvec(&mb, "sort_by", &m->sort_by) ||
        !cfg_bool(&mb, "reuse_on_start", &m->reuse_on_start))
        return false;
    m->residency = (enum residency)residency;
    if (ds->lazy && m->residency == RESIDENCY_MEMORY)
        return cfg_fail(&mb, "residency", 0, VT_ERR_INVALID_CONFIG,
                        "\"memory\" contradicts lazy = true");
    return true;
}

bool cfg_read_dataset(const struct cfg_blk *b, struct vt_dataset_config *ds)
{
    static const char *const keys[] = {"name", "source", "sql", "depends_on", "columns",
                                       "dict_encode", "lazy", "index", "s3", "refresh",
                                       "materialize", "on_start", NULL};
    if (!cfg_check_keys(b, keys))
        return false;
    if (!cfg_str(b, "name", 0, &ds->name))
        return false;
    if (!ds->name)
        return cfg_fail(b, "name", 0, VT_ERR_INVALID_NAME, "required");
    const char *why;
    if (!config_valid_dataset_name(ds->name, &why))
        return cfg_fail(b, "name", 0, VT_ERR_INVALID_NAME, "invalid dataset name \"%.*s\": it %s",
                        VT_MAX_DATASET_NAME_BYTES, ds->name, why);
    int on_start = ds->on_start;
    if (!read_source(b, ds) || !cfg_strvec(b, "columns", &ds->columns) ||
        !cfg_bool(b, "dict_encode", &ds->dict_encode) || !cfg_bool(b, "lazy", &ds->lazy) ||
        !read_index(b, ds) || !read_s3(b, &ds->s3) || !read_refresh(b, ds) ||
        !read_materialize(b, ds) || !cfg_enum(b, "on_start", on_start_names, &on_start))
        return false;
    ds->on_start = (enum on_start)on_start;
    bool lazy = ds->lazy || (ds->materialize.set && ds->materialize.residency == RESIDENCY_LAZY);
    if (lazy && cfg_has(b, "index") && ds->index_mode != INDEX_NONE)
        return cfg_fail(b, "index", 0, VT_ERR_INVALID_CONFIG,
                        "lazy datasets carry no index (remove the index block or set "
                        "index.mode = \"none\")");
    return true;
}

/* ---------------------------------------------------------------- arrays */

struct name_ref {
    const char *name;
    size_t idx;
};

static int cmp_name_ref(const void *a, const void *b)
{
    return strcmp(((const struct name_ref *)a)->name, ((const struct name_ref *)b)->name);
}

static long find_name(const struct name_ref *refs, size_t n, const char *name)
{
    struct name_ref key = {name, 0};
    const struct name_ref *r = bsearch(&key, refs, n, sizeof *refs, cmp_name_ref);
    return r ? (long)r->idx : -1;
}

/* Kahn's algorithm over depends_on; on a cycle, walks it from a left-over node
 * to name every dataset on it. */
static bool check_cycles(const struct cfg_blk *root, struct vt_dataset_config *ds, size_t n,
                         const struct name_ref *refs)
{
    size_t *pending = calloc(n ? n : 1, sizeof *pending); /* unbuilt upstreams per dataset */
    size_t *queue = calloc(n ? n : 1, sizeof *queue);
    bool ok = true;
    if (!pending || !queue) {
        ok = cfg_fail(root, "dataset", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    size_t qh = 0, qt = 0;
    for (size_t i = 0; i < n; i++) {
        pending[i] = ds[i].depends_on.len;
        if (!pending[i])
            queue[qt++] = i;
    }
    /* Downstream edges are found by scanning: datasets are few, files small. */
    while (qh < qt) {
        size_t done = queue[qh++];
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < ds[i].depends_on.len; k++)
                if (strcmp(ds[i].depends_on.items[k], ds[done].name) == 0 && --pending[i] == 0)
                    queue[qt++] = i;
    }
    if (qt == n)
        goto out;
    size_t start = 0;
    while (pending[start] == 0)
        start++;
    /* Follow unbuilt upstreams until one repeats: that stretch is a cycle. */
    size_t *seen_at = calloc(n, sizeof *seen_at);
    size_t *walk = calloc(n + 1, sizeof *walk);
    if (!seen_at || !walk) {
        free(seen_at);
        free(walk);
        ok = cfg_fail(root, "dataset", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    size_t len = 0, cur = start;
    while (!seen_at[cur]) {
        walk[len++] = cur;
        seen_at[cur] = len;
        for (size_t k = 0; k < ds[cur].depends_on.len; k++) {
            long up = find_name(refs, n, ds[cur].depends_on.items[k]);
            if (up >= 0 && pending[up]) {
                cur = (size_t)up;
                break;
            }
        }
    }
    struct strbuf sb;
    sb_init(&sb, 400);
    for (size_t i = seen_at[cur] - 1; i < len; i++)
        sb_addf(&sb, "%s -> ", ds[walk[i]].name);
    sb_adds(&sb, ds[cur].name);
    struct cfg_blk b;
    cfg_root(root->cx, NULL, "", ds[cur].line, &b);
    snprintf(b.path, sizeof b.path, "dataset[%zu]", (size_t)(&ds[cur] - ds));
    ok = cfg_fail(&b, "depends_on", ds[cur].line, VT_ERR_INVALID_CONFIG, "dependency cycle: %s%s",
                  sb.buf ? sb.buf : "", sb.overflow ? "..." : "");
    sb_release(&sb);
    free(seen_at);
    free(walk);
out:
    free(pending);
    free(queue);
    return ok;
}

bool cfg_read_dataset_array(const struct cfg_blk *root, bool deps_in_file,
                            struct vt_dataset_config **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    const struct toml_value *arr = root->t ? toml_get(root->t, "dataset") : NULL;
    if (!arr)
        return true;
    if (arr->type != TOML_ARRAY)
        return cfg_fail(root, "dataset", 0, VT_ERR_INVALID_CONFIG,
                        "expected [[dataset]] blocks (an array of tables)");
    size_t n = arr->u.array.len;
    struct vt_dataset_config *ds = calloc(n ? n : 1, sizeof *ds);
    struct name_ref *refs = calloc(n ? n : 1, sizeof *refs);
    bool ok = ds && refs;
    if (!ok)
        cfg_fail(root, "dataset", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t read = 0;
    for (size_t i = 0; ok && i < n; i++) {
        const struct toml_value *item = arr->u.array.items[i];
        struct cfg_blk b;
        cfg_root(root->cx, NULL, "", item->line, &b);
        snprintf(b.path, sizeof b.path, "dataset[%zu]", i);
        config_dataset_defaults(&ds[i]);
        read++;
        if (item->type != TOML_TABLE) {
            ok = cfg_fail(&b, NULL, cfg_line_of(root, "dataset"), VT_ERR_INVALID_CONFIG,
                          "expected a table, got %s", toml_type_name(item->type));
            break;
        }
        b.t = item;
        ds[i].line = item->line;
        ok = cfg_read_dataset(&b, &ds[i]);
        refs[i].name = ds[i].name;
        refs[i].idx = i;
    }
    if (ok) {
        qsort(refs, n, sizeof *refs, cmp_name_ref);
        for (size_t i = 1; ok && i < n; i++) {
            if (strcmp(refs[i].name, refs[i - 1].name) != 0)
                continue;
            size_t first = refs[i - 1].idx < refs[i].idx ? refs[i - 1].idx : refs[i].idx;
            size_t second = refs[i - 1].idx < refs[i].idx ? refs[i].idx : refs[i - 1].idx;
            struct cfg_blk b;
            cfg_root(root->cx, arr->u.array.items[second], "", ds[second].line, &b);
            snprintf(b.path, sizeof b.path, "dataset[%zu]", second);
            ok = cfg_fail(&b, "name", 0, VT_ERR_INVALID_CONFIG,
                          "duplicate dataset name \"%s\" (also dataset[%zu] at line %d)",
                          ds[second].name, first, ds[first].line);
        }
    }
    if (ok && deps_in_file) {
        for (size_t i = 0; ok && i < n; i++) {
            for (size_t k = 0; ok && k < ds[i].depends_on.len; k++) {
                if (find_name(refs, n, ds[i].depends_on.items[k]) >= 0)
                    continue;
                struct cfg_blk b;
                cfg_root(root->cx, arr->u.array.items[i], "", ds[i].line, &b);
                snprintf(b.path, sizeof b.path, "dataset[%zu]", i);
                char key[48];
                snprintf(key, sizeof key, "depends_on[%zu]", k);
                ok = cfg_fail(&b, key, cfg_line_of(&b, "depends_on"), VT_ERR_INVALID_CONFIG,
                              "\"%s\" is not a dataset of this file (config datasets may only "
                              "depend on datasets defined in the same file)",
                              ds[i].depends_on.items[k]);
            }
        }
        if (ok)
            ok = check_cycles(root, ds, n, refs);
    }
    free(refs);
    if (!ok) {
        for (size_t i = 0; ds && i < read; i++)
            config_dataset_free(&ds[i]);
        free(ds);
        return false;
    }
    *out = ds;
    *out_n = n;
    return true;
}

enum vt_err config_load_datasets_text(const char *text, size_t len, const char *display_name,
                                      struct vt_dataset_config **out, size_t *out_n,
                                      struct vt_error *err)
{
    static const char *const keys[] = {"dataset", NULL};
    *out = NULL;
    *out_n = 0;
    const char *file = display_name ? display_name : "(datasets)";
    if (len > VT_MAX_CONFIG_BYTES)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: larger than %d bytes", file,
                            VT_MAX_CONFIG_BYTES);
    char perr[256];
    struct toml_value *doc = toml_parse(text, len, perr, sizeof perr);
    if (!doc)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: %s", file, perr);
    struct cfg_ctx cx = {.file = file, .dir = NULL, .err = err};
    struct cfg_blk root;
    cfg_root(&cx, doc, "", 0, &root);
    bool ok = cfg_check_keys(&root, keys) && cfg_read_dataset_array(&root, false, out, out_n);
    toml_free(doc);
    return ok ? VT_ERR_OK : err->code;
}

enum vt_err config_dataset_from_json(const void *json_obj, struct vt_dataset_config *out,
                                     struct vt_error *err)
{
    config_dataset_defaults(out);
    struct toml_value *doc = cfg_json_to_toml(json_obj, err);
    if (!doc)
        return err->code ? err->code : VT_ERR_INVALID_CONFIG;
    struct cfg_ctx cx = {.file = NULL, .dir = NULL, .err = err};
    struct cfg_blk b;
    cfg_root(&cx, doc, "", 0, &b);
    bool ok = cfg_read_dataset(&b, out);
    toml_free(doc);
    if (!ok) {
        config_dataset_free(out);
        return err->code;
    }
    return VT_ERR_OK;
}

/* ---------------------------------------------------------------- writing */

void cfg_toml_quote(struct strbuf *sb, const char *s)
{
    sb_addc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_adds(sb, "\\\""); break;
        case '\\': sb_adds(sb, "\\\\"); break;
        case '\n': sb_adds(sb, "\\n"); break;
        case '\t': sb_adds(sb, "\\t"); break;
        case '\r': sb_adds(sb, "\\r"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                sb_addf(sb, "\\u%04X", *p);
            else
                sb_addc(sb, (char)*p);
        }
    }
    sb_addc(sb, '"');
}

static void add_strvec(struct strbuf *sb, const struct strvec *v)
{
    sb_addc(sb, '[');
    for (size_t i = 0; i < v->len; i++) {
        if (i)
            sb_adds(sb, ", ");
        cfg_toml_quote(sb, v->items[i]);
    }
    sb_addc(sb, ']');
}

/* Inline-table fields: `first` tracks the separator. */
static void field(struct strbuf *sb, bool *first, const char *key)
{
    sb_adds(sb, *first ? " " : ", ");
    *first = false;
    sb_adds(sb, key);
    sb_adds(sb, " = ");
}

static void field_str(struct strbuf *sb, bool *first, const char *key, const char *val)
{
    if (!val)
        return;
    field(sb, first, key);
    cfg_toml_quote(sb, val);
}

static void field_dur(struct strbuf *sb, bool *first, const char *key, int64_t ms)
{
    char d[64];
    config_format_duration(ms, d);
    field(sb, first, key);
    cfg_toml_quote(sb, d);
}

static void close_inline(struct strbuf *sb, bool first)
{
    sb_adds(sb, first ? "}\n" : " }\n");
}

char *config_dataset_to_toml(const struct vt_dataset_config *ds)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    bool first;
    sb_adds(&sb, "[[dataset]]\nname = ");
    cfg_toml_quote(&sb, ds->name ? ds->name : "");
    sb_adds(&sb, "\nsource = {");
    first = true;
    field_str(&sb, &first, "kind", source_kind_name(ds->kind));
    field_str(&sb, &first, "location", ds->location);
    close_inline(&sb, first);
    if (ds->sql) {
        sb_adds(&sb, "sql = ");
        cfg_toml_quote(&sb, ds->sql);
        sb_addc(&sb, '\n');
    }
    if (ds->depends_on.len) {
        sb_adds(&sb, "depends_on = ");
        add_strvec(&sb, &ds->depends_on);
        sb_addc(&sb, '\n');
    }
    if (ds->columns.len) {
        sb_adds(&sb, "columns = ");
        add_strvec(&sb, &ds->columns);
        sb_addc(&sb, '\n');
    }
    if (ds->dict_encode)
        sb_adds(&sb, "dict_encode = true\n");
    if (ds->lazy)
        sb_adds(&sb, "lazy = true\n");
    if (ds->index_mode != INDEX_AUTO || ds->index_columns.len ||
        ds->index_max_cardinality != DEFAULT_MAX_CARDINALITY) {
        sb_adds(&sb, "index = {");
        first = true;
        if (ds->index_mode != INDEX_AUTO)
            field_str(&sb, &first, "mode", index_mode_names[ds->index_mode]);
        if (ds->index_columns.len) {
            field(&sb, &first, "columns");
            add_strvec(&sb, &ds->index_columns);
        }
        if (ds->index_max_cardinality != DEFAULT_MAX_CARDINALITY) {
            field(&sb, &first, "max_cardinality");
            sb_addf(&sb, "%lld", (long long)ds->index_max_cardinality);
        }
        close_inline(&sb, first);
    }
    const struct s3_config *s3 = &ds->s3;
    if (s3->region || s3->endpoint || s3->addressing_style != S3_ADDRESSING_VIRTUAL ||
        s3->allow_http || s3->partitioning != S3_PARTITIONING_AUTO || s3->access_key_id_env ||
        s3->secret_access_key_env || s3->session_token_env) {
        sb_adds(&sb, "s3 = {");
        first = true;
        field_str(&sb, &first, "region", s3->region);
        field_str(&sb, &first, "endpoint", s3->endpoint);
        if (s3->addressing_style != S3_ADDRESSING_VIRTUAL)
            field_str(&sb, &first, "addressing_style", addressing_names[s3->addressing_style]);
        if (s3->allow_http) {
            field(&sb, &first, "allow_http");
            sb_adds(&sb, "true");
        }
        if (s3->partitioning != S3_PARTITIONING_AUTO)
            field_str(&sb, &first, "partitioning", partitioning_names[s3->partitioning]);
        field_str(&sb, &first, "access_key_id_env", s3->access_key_id_env);
        field_str(&sb, &first, "secret_access_key_env", s3->secret_access_key_env);
        field_str(&sb, &first, "session_token_env", s3->session_token_env);
        close_inline(&sb, first);
    }
    const struct refresh_config *r = &ds->refresh;
    if (r->set) {
        sb_adds(&sb, "refresh = {");
        first = true;
        if (r->interval_ms > 0)
            field_dur(&sb, &first, "interval", r->interval_ms);
        if (r->on_upstream_reload) {
            field(&sb, &first, "on_upstream_reload");
            sb_adds(&sb, "true");
        }
        if (r->timeout_ms != DEFAULT_REFRESH_TIMEOUT_MS)
            field_dur(&sb, &first, "timeout", r->timeout_ms);
        if (!r->jitter) {
            field(&sb, &first, "jitter");
            sb_adds(&sb, "false");
        }
        if (r->debounce_ms != DEFAULT_REFRESH_DEBOUNCE_MS)
            field_dur(&sb, &first, "debounce", r->debounce_ms);
        close_inline(&sb, first);
    }
    const struct materialize_config *m = &ds->materialize;
    if (m->set) {
        sb_adds(&sb, "materialize = {");
        first = true;
        if (m->residency != RESIDENCY_AUTO)
            field_str(&sb, &first, "residency", residency_names[m->residency]);
        if (m->sort_by.len) {
            field(&sb, &first, "sort_by");
            add_strvec(&sb, &m->sort_by);
        }
        if (m->reuse_on_start) {
            field(&sb, &first, "reuse_on_start");
            sb_adds(&sb, "true");
        }
        close_inline(&sb, first);
    }
    if (ds->on_start != ON_START_EAGER) {
        sb_adds(&sb, "on_start = ");
        cfg_toml_quote(&sb, on_start_names[ds->on_start]);
        sb_addc(&sb, '\n');
    }
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    size_t n;
    return sb_detach(&sb, &n);
}
