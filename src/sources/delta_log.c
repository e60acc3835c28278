/*
 * Delta log replay: applies JSON actions (protocol, metaData, add, remove,
 * sidecar) in commit order to build the current snapshot's active file set.
 * Input is untrusted bytes from storage; this is the part the fuzzer drives
 * (tests/fuzz/fuzz_delta_log.c). Files are keyed by their percent-decoded path,
 * so an add written as "a%20b" and a remove written as "a b" meet.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sources/delta.h"
#include "util/text.h"
#include "util/limits.h"
#include "util/strbuf.h"

/* ---- the active-file map: chained hash on the decoded path -------------- */

struct fm_node {
    struct fm_node *next;
    uint64_t hash;
    char *key;              /* decoded path */
    struct delta_add add;
};

struct delta_file_map {
    struct fm_node **buckets;
    size_t n_buckets;
    size_t n;
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static void dv_desc_free(struct delta_dv_desc *d)
{
    if (d)
        free(d->path_or_inline);
    free(d);
}

static void add_release(struct delta_add *a)
{
    free(a->path);
    dv_desc_free(a->dv);
    free(a->dv_id);
    free(a->stats);
    for (size_t i = 0; i < a->n_pvs; i++) {
        free(a->pvs[i].key);
        free(a->pvs[i].value);
    }
    free(a->pvs);
    memset(a, 0, sizeof *a);
}

static void fm_free(struct delta_file_map *m)
{
    if (!m)
        return;
    for (size_t b = 0; b < m->n_buckets; b++) {
        struct fm_node *n = m->buckets[b];
        while (n) {
            struct fm_node *next = n->next;
            free(n->key);
            add_release(&n->add);
            free(n);
            n = next;
        }
    }
    free(m->buckets);
    free(m);
}

static int fm_grow(struct delta_file_map *m)
{
    size_t nb = m->n_buckets ? m->n_buckets * 2 : 1024;
    struct fm_node **b = calloc(nb, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < m->n_buckets; i++) {
        struct fm_node *n = m->buckets[i];
        while (n) {
            struct fm_node *next = n->next;
            size_t slot = n->hash & (nb - 1);
            n->next = b[slot];
            b[slot] = n;
            n = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->n_buckets = nb;
    return 0;
}

/* Inserts or replaces; takes ownership of key and add on success. */
static int fm_put(struct delta_file_map *m, char *key, struct delta_add *add)
{
    if (m->n >= m->n_buckets && fm_grow(m) < 0)
        return -1;
    uint64_t h = fnv1a(key);
    size_t slot = h & (m->n_buckets - 1);
    for (struct fm_node *n = m->buckets[slot]; n; n = n->next) {
        if (n->hash == h && strcmp(n->key, key) == 0) {
            add_release(&n->add);
            n->add = *add;
            free(key);
            return 0;
        }
    }
    struct fm_node *n = calloc(1, sizeof *n);
    if (!n)
        return -1;
    n->hash = h;
    n->key = key;
    n->add = *add;
    n->next = m->buckets[slot];
    m->buckets[slot] = n;
    m->n++;
    return 0;
}

static bool same_dv(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Removes the logical file (key, dv_id): the entry of that path only when it
 * carries the same deletion vector (a remove of an older vector of the file
 * leaves the newer one alone). */
static void fm_remove(struct delta_file_map *m, const char *key, const char *dv_id)
{
    if (!m->n_buckets)
        return;
    uint64_t h = fnv1a(key);
    struct fm_node **pp = &m->buckets[h & (m->n_buckets - 1)];
    for (; *pp; pp = &(*pp)->next) {
        struct fm_node *n = *pp;
        if (n->hash == h && strcmp(n->key, key) == 0) {
            if (!same_dv(n->add.dv_id, dv_id))
                return;
            *pp = n->next;
            free(n->key);
            add_release(&n->add);
            free(n);
            m->n--;
            return;
        }
    }
}

/* ---- helpers ---------------------------------------------------------------- */

bool delta_path_decode(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; in[i]; i++) {
        char c = in[i];
        if (c == '%') {
            int h = text_hexval((unsigned char)in[i + 1]);
            int l = h >= 0 ? text_hexval((unsigned char)in[i + 2]) : -1;
            if (h < 0 || l < 0)
                return false;
            c = (char)(h * 16 + l);
            if (c == '\0')
                return false;
            i += 2;
        }
        if (j + 1 >= cap)
            return false;
        out[j++] = c;
    }
    if (j >= cap)
        return false;
    out[j] = '\0';
    return true;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void delta_replay_init(struct delta_replay *r)
{
    memset(r, 0, sizeof *r);
}

void delta_replay_release(struct delta_replay *r)
{
    if (!r)
        return;
    free_strv(r->reader_features, r->n_reader_features);
    free(r->schema_string);
    free_strv(r->partition_columns, r->n_partition_columns);
    free(r->column_mapping_mode);
    free(r->format_provider);
    free_strv(r->sidecars, r->n_sidecars);
    fm_free(r->files);
    memset(r, 0, sizeof *r);
}

size_t delta_replay_active_count(const struct delta_replay *r)
{
    return r->files ? r->files->n : 0;
}

/* A JSON array of strings -> owned vector. */
static enum vt_err strv_from_json(json_t *arr, char ***out, size_t *out_n, size_t max,
                                  const char *what, struct vt_error *err)
{
    *out = NULL;
    *out_n = 0;
    if (!json_is_array(arr))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "Delta log: %s is not an array",
                            what);
    size_t n = json_array_size(arr);
    if (n > max)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "Delta log: %s has more than %zu entries",
                            what, max);
    char **v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s) {
            free_strv(v, i);
            return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                "Delta log: %s holds a non-string", what);
        }
        v[i] = strdup(s);
        if (!v[i]) {
            free_strv(v, i);
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    *out = v;
    *out_n = n;
    return VT_ERR_OK;
}

static enum vt_err apply_protocol(struct delta_replay *r, json_t *p, const char *what,
                                  struct vt_error *err)
{
    json_t *mr = json_object_get(p, "minReaderVersion");
    if (!json_is_integer(mr))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta log %s: protocol without minReaderVersion", what);
    json_int_t v = json_integer_value(mr);
    r->min_reader = v < 0 ? 0 : v > 1000 ? 1000 : (int)v;
    r->have_protocol = true;
    free_strv(r->reader_features, r->n_reader_features);
    r->reader_features = NULL;
    r->n_reader_features = 0;
    r->have_reader_features = false;
    json_t *rf = json_object_get(p, "readerFeatures");
    if (rf && !json_is_null(rf)) {
        enum vt_err rc = strv_from_json(rf, &r->reader_features, &r->n_reader_features, 1000,
                                        "protocol.readerFeatures", err);
        if (rc != VT_ERR_OK)
            return rc;
        r->have_reader_features = true;
    }
    return VT_ERR_OK;
}

static enum vt_err apply_metadata(struct delta_replay *r, json_t *m, const char *what,
                                  struct vt_error *err)
{
    /* A table created empty may carry no schemaString yet (Delta Live Tables
     * does this); a later metaData supplies it. Checked after the replay. */
    const char *schema = json_string_value(json_object_get(m, "schemaString"));
    char **pcs = NULL;
    size_t npc = 0;
    json_t *jpc = json_object_get(m, "partitionColumns");
    if (jpc && !json_is_null(jpc)) {
        enum vt_err rc = strv_from_json(jpc, &pcs, &npc, VT_DELTA_MAX_COLUMNS,
                                        "metaData.partitionColumns", err);
        if (rc != VT_ERR_OK)
            return rc;
    }
    char *s = schema ? strdup(schema) : NULL;
    const char *mode = NULL, *provider = NULL;
    json_t *conf = json_object_get(m, "configuration");
    if (json_is_object(conf))
        mode = json_string_value(json_object_get(conf, "delta.columnMapping.mode"));
    json_t *fmt = json_object_get(m, "format");
    if (json_is_object(fmt))
        provider = json_string_value(json_object_get(fmt, "provider"));
    char *mode_c = mode ? strdup(mode) : NULL;
    char *prov_c = provider ? strdup(provider) : NULL;
    if ((schema && !s) || (mode && !mode_c) || (provider && !prov_c)) {
        free(s);
        free(mode_c);
        free(prov_c);
        free_strv(pcs, npc);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(r->schema_string);
    free_strv(r->partition_columns, r->n_partition_columns);
    free(r->column_mapping_mode);
    free(r->format_provider);
    r->schema_string = s;
    r->partition_columns = pcs;
    r->n_partition_columns = npc;
    r->column_mapping_mode = mode_c;
    r->format_provider = prov_c;
    r->have_metadata = true;
    return VT_ERR_OK;
}

static enum vt_err decode_key(const char *path, char **out, const char *what,
                              struct vt_error *err)
{
    size_t l = strlen(path);
    if (l == 0 || l > VT_DELTA_MAX_PATH_BYTES * 3)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta log %s: file path empty or too long", what);
    char *k = malloc(l + 1);
    if (!k)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (!delta_path_decode(path, k, l + 1) || strlen(k) > VT_DELTA_MAX_PATH_BYTES) {
        free(k);
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta log %s: bad percent-encoding in a file path", what);
    }
    *out = k;
    return VT_ERR_OK;
}

/* add/remove.deletionVector -> descriptor and uniqueId ("<type><path>[@<offset>]");
 * both NULL when there is none. */
static enum vt_err parse_dv(json_t *j, struct delta_dv_desc **out, char **out_id,
                            const char *what, struct vt_error *err)
{
    *out = NULL;
    *out_id = NULL;
    if (!j || json_is_null(j))
        return VT_ERR_OK;
    const char *st = json_string_value(json_object_get(j, "storageType"));
    const char *pd = json_string_value(json_object_get(j, "pathOrInlineDv"));
    json_t *off = json_object_get(j, "offset");
    json_t *sz = json_object_get(j, "sizeInBytes");
    json_t *card = json_object_get(j, "cardinality");
    if (!json_is_object(j) || !st || strlen(st) != 1 || !pd ||
        strlen(pd) > VT_DELTA_MAX_PATH_BYTES * 3 || !json_is_integer(sz) ||
        (off && !json_is_null(off) && !json_is_integer(off)))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta log %s: malformed deletionVector", what);
    struct delta_dv_desc *d = calloc(1, sizeof *d);
    if (!d)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    d->storage = st[0];
    d->offset = json_is_integer(off) ? (int64_t)json_integer_value(off) : -1;
    d->size_in_bytes = (int64_t)json_integer_value(sz);
    d->cardinality = json_is_integer(card) ? (int64_t)json_integer_value(card) : -1;
    d->path_or_inline = strdup(pd);
    struct strbuf id;
    sb_init(&id, 0);
    sb_addf(&id, "%c%s", d->storage, pd);
    if (d->offset >= 0)
        sb_addf(&id, "@%lld", (long long)d->offset);
    if (!d->path_or_inline || id.overflow) {
        sb_release(&id);
        dv_desc_free(d);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *out = d;
    *out_id = sb_detach(&id, NULL);
    return VT_ERR_OK;
}

static enum vt_err apply_add(struct delta_replay *r, json_t *a, const char *what,
                             struct vt_error *err)
{
    const char *path = json_string_value(json_object_get(a, "path"));
    if (!path)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "Delta log %s: add without path",
                            what);
    char *key;
    enum vt_err rc = decode_key(path, &key, what, err);
    if (rc != VT_ERR_OK)
        return rc;
    struct delta_add add = {0};
    json_t *jsz = json_object_get(a, "size");
    add.size = json_is_integer(jsz) ? (int64_t)json_integer_value(jsz) : -1;
    add.path = strdup(path);
    if (!add.path)
        goto oom;
    rc = parse_dv(json_object_get(a, "deletionVector"), &add.dv, &add.dv_id, what, err);
    if (rc != VT_ERR_OK) {
        add_release(&add);
        free(key);
        return rc;
    }
    const char *stats = json_string_value(json_object_get(a, "stats"));
    if (stats && strlen(stats) <= VT_DELTA_MAX_STATS_BYTES && !(add.stats = strdup(stats)))
        goto oom;
    json_t *pv = json_object_get(a, "partitionValues");
    if (json_is_object(pv)) {
        size_t n = json_object_size(pv);
        if (n > VT_DELTA_MAX_COLUMNS) {
            add_release(&add);
            free(key);
            return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                                "Delta log %s: too many partition values", what);
        }
        add.pvs = calloc(n ? n : 1, sizeof *add.pvs);
        if (!add.pvs)
            goto oom;
        const char *k;
        json_t *v;
        json_object_foreach(pv, k, v)
        {
            struct delta_pv *e = &add.pvs[add.n_pvs++];
            e->key = strdup(k);
            if (!e->key)
                goto oom;
            if (json_is_string(v)) {
                e->value = strdup(json_string_value(v));
                if (!e->value)
                    goto oom;
            } else if (!json_is_null(v)) {
                /* Writers use strings; accept numbers/bools by their JSON text. */
                char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                if (!t)
                    goto oom;
                e->value = t;
            }
        }
    } else if (pv && !json_is_null(pv)) {
        add_release(&add);
        free(key);
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta log %s: add.partitionValues is not an object", what);
    }
    if (!r->files) {
        r->files = calloc(1, sizeof *r->files);
        if (!r->files)
            goto oom;
    }
    if (r->files->n >= VT_DELTA_MAX_ACTIVE_FILES) {
        add_release(&add);
        free(key);
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "Delta table has more than %d files",
                            VT_DELTA_MAX_ACTIVE_FILES);
    }
    if (fm_put(r->files, key, &add) < 0)
        goto oom;
    return VT_ERR_OK;
oom:
    add_release(&add);
    free(key);
    return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
}

static enum vt_err apply_remove(struct delta_replay *r, json_t *a, const char *what,
                                struct vt_error *err)
{
    const char *path = json_string_value(json_object_get(a, "path"));
    if (!path)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "Delta log %s: remove without path",
                            what);
    char *key;
    enum vt_err rc = decode_key(path, &key, what, err);
    if (rc != VT_ERR_OK)
        return rc;
    struct delta_dv_desc *dv;
    char *dv_id;
    rc = parse_dv(json_object_get(a, "deletionVector"), &dv, &dv_id, what, err);
    if (rc == VT_ERR_OK && r->files)
        fm_remove(r->files, key, dv_id);
    dv_desc_free(dv);
    free(dv_id);
    free(key);
    return rc;
}

static enum vt_err apply_sidecar(struct delta_replay *r, json_t *s, const char *what,
                                 struct vt_error *err)
{
    const char *path = json_string_value(json_object_get(s, "path"));
    if (!path)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "Delta log %s: sidecar without path",
                            what);
    if (r->n_sidecars >= VT_DELTA_MAX_CHECKPOINT_PARTS)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "Delta log %s: too many sidecars", what);
    char **v = realloc(r->sidecars, (r->n_sidecars + 1) * sizeof *v);
    if (!v)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    r->sidecars = v;
    r->sidecars[r->n_sidecars] = strdup(path);
    if (!r->sidecars[r->n_sidecars])
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    r->n_sidecars++;
    return VT_ERR_OK;
}

enum vt_err delta_replay_line(struct delta_replay *r, const char *line, size_t len,
                              bool in_checkpoint, const char *what, struct vt_error *err)
{
    /* Blank lines (trailing newline, CRLF) are not actions. */
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
        i++;
    if (i == len)
        return VT_ERR_OK;
    json_error_t jerr;
    json_t *root = json_loadb(line, len, 0, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta log %s: an action is not a JSON object%s%s", what,
                            root ? "" : ": ", root ? "" : jerr.text);
    }
    r->n_actions++;
    enum vt_err rc = VT_ERR_OK;
    /* One action per line; unknown action types (commitInfo, txn, cdc,
     * domainMetadata, checkpointMetadata, future ones) do not affect the
     * snapshot's rows. */
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        if (rc != VT_ERR_OK)
            break;
        if (!json_is_object(v))
            continue;
        if (strcmp(k, "add") == 0)
            rc = apply_add(r, v, what, err);
        else if (strcmp(k, "remove") == 0) {
            if (!in_checkpoint)
                rc = apply_remove(r, v, what, err);
        } else if (strcmp(k, "protocol") == 0)
            rc = apply_protocol(r, v, what, err);
        else if (strcmp(k, "metaData") == 0)
            rc = apply_metadata(r, v, what, err);
        else if (strcmp(k, "sidecar") == 0 && in_checkpoint)
            rc = apply_sidecar(r, v, what, err);
    }
    json_decref(root);
    return rc;
}

enum vt_err delta_replay_text(struct delta_replay *r, const char *text, size_t len,
                              bool in_checkpoint, const char *what, struct vt_error *err)
{
    size_t start = 0;
    while (start < len) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        enum vt_err rc = delta_replay_line(r, text + start, end - start, in_checkpoint, what, err);
        if (rc != VT_ERR_OK)
            return rc;
        start = end + 1;
    }
    return VT_ERR_OK;
}

/* ---- protocol --------------------------------------------------------------- */

static bool feature_supported(const char *f)
{
    static const char *const ok[] = {"columnMapping",        "timestampNtz",
                                     "v2Checkpoint",         "vacuumProtocolCheck",
                                     "typeWidening",
                                     "typeWidening-preview", "deletionVectors",
                                     "variantType",          "variantType-preview",
                                     "variantShredding-preview"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcmp(f, ok[i]) == 0)
            return true;
    return false;
}

enum vt_err delta_replay_check_protocol(const struct delta_replay *r, const char *location,
                                        struct vt_error *err)
{
    if (!r->have_protocol)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s: the log has no protocol action", location);
    if (!r->have_metadata)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s: the log has no metaData action", location);
    if (!r->schema_string)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s: the current metaData has no schemaString", location);
    if (r->format_provider && strcasecmp(r->format_provider, "parquet") != 0)
        return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                            "Delta table %s stores data as \"%.40s\", not parquet", location,
                            r->format_provider);
    struct strbuf bad;
    sb_init(&bad, 2048);
    for (size_t i = 0; i < r->n_reader_features; i++) {
        const char *f = r->reader_features[i];
        if (feature_supported(f))
            continue;
        if (bad.len)
            sb_adds(&bad, ", ");
        /* Feature names come from storage: show them bounded and printable. */
        for (size_t k = 0; f[k] && k < 64; k++)
            sb_addc(&bad, (f[k] >= 0x20 && f[k] < 0x7f) ? f[k] : '?');
    }
    if (bad.len) {
        enum vt_err rc = vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                                      "Delta table %s requires reader feature(s) vitrine does "
                                      "not support: %s",
                                      location, bad.buf);
        sb_release(&bad);
        return rc;
    }
    sb_release(&bad);
    if (r->min_reader > 3 || r->min_reader < 1)
        return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                            "Delta table %s requires reader version %d (vitrine reads 1 to 3)",
                            location, r->min_reader);
    if (r->column_mapping_mode && strcmp(r->column_mapping_mode, "none") != 0 &&
        strcmp(r->column_mapping_mode, "name") != 0 && strcmp(r->column_mapping_mode, "id") != 0)
        return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                            "Delta table %s uses columnMapping mode \"%.16s\" (vitrine reads "
                            "\"name\" and \"id\")",
                            location, r->column_mapping_mode);
    return VT_ERR_OK;
}

static int cmp_add_path(const void *a, const void *b)
{
    const struct delta_add *x = *(const struct delta_add *const *)a;
    const struct delta_add *y = *(const struct delta_add *const *)b;
    return strcmp(x->path, y->path);
}

enum vt_err delta_replay_active(const struct delta_replay *r, const struct delta_add ***out,
                                size_t *out_n, struct vt_error *err)
{
    *out = NULL;
    *out_n = 0;
    size_t n = delta_replay_active_count(r);
    const struct delta_add **v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t k = 0;
    if (r->files)
        for (size_t b = 0; b < r->files->n_buckets; b++)
            for (struct fm_node *nd = r->files->buckets[b]; nd; nd = nd->next)
                v[k++] = &nd->add;
    qsort(v, k, sizeof *v, cmp_add_path);
    *out = v;
    *out_n = k;
    return VT_ERR_OK;
}
