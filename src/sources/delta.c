/*
 * Delta Lake resolver: finds the current snapshot of a table (a local
 * directory or an s3:// prefix, through the storage interface) and turns it
 * into a source_snapshot whose select_sql reads exactly the active files with
 * their partition values.
 *
 * Steps (see delta.h): _last_checkpoint hint -> listing of _delta_log/ ->
 * newest complete checkpoint -> contiguous JSON commits after it -> replay ->
 * protocol and schema -> data files (made readable by the storage: in place
 * or pinned locally, downloaded or cached from S3) -> probe of the files'
 * columns -> SELECT. `_change_data/` files are never named by add actions, so
 * CDC data is ignored by construction.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sources/delta.h"
#include "sources/sources_internal.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

#define LOG_DIR "_delta_log/"

/* Reads a file of the log (relative to _delta_log/) into memory.
 * *out_missing is set (and VT_ERR_OK returned) when it does not exist. */
static enum vt_err read_log(struct storage *st, const char *name, size_t max, char **out,
                            size_t *out_len, bool *out_missing, struct vt_error *err)
{
    struct strbuf nm;
    sb_init(&nm, 0);
    sb_addf(&nm, LOG_DIR "%s", name);
    enum vt_err rc = nm.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory")
                                 : st->ops->read(st, nm.buf, 0, -1, max, out, out_len,
                                                 out_missing, err);
    sb_release(&nm);
    return rc;
}

/* A log file DuckDB must read (Parquet checkpoint, sidecar): its local path,
 * downloaded into a temp file of `scratch` when the table is on S3. */
static enum vt_err local_log_file(struct storage *st, struct source_snapshot *scratch,
                                  const char *name, char **out, struct vt_error *err)
{
    *out = NULL;
    struct strbuf nm;
    sb_init(&nm, 0);
    sb_addf(&nm, LOG_DIR "%s", name);
    if (nm.overflow) {
        sb_release(&nm);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    struct storage_fetch f = {.name = nm.buf, .size = -1};
    enum vt_err rc = st->ops->fetch(st, &f, 1, STORAGE_USE_BUILD, scratch, err);
    sb_release(&nm);
    if (rc != VT_ERR_OK) {
        free(f.path);
        return rc;
    }
    *out = f.path;
    return VT_ERR_OK;
}

/* ---- the log listing ---------------------------------------------------------- */

enum log_kind { LOG_COMMIT, LOG_CP_SINGLE, LOG_CP_PART, LOG_CP_V2 };

struct log_entry {
    int64_t version;
    enum log_kind kind;
    int part, parts;            /* multi-part checkpoints */
    bool json;                  /* v2 checkpoint in JSON */
    char *name;
};

struct log_list {
    struct log_entry *e;
    size_t n;
};

static void log_list_release(struct log_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->e[i].name);
    free(l->e);
    l->e = NULL;
    l->n = 0;
}

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static int64_t parse_digits(const char *s, size_t n)
{
    int64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

/* Classifies a file name of _delta_log/; false for names we ignore (.crc,
 * compacted logs, temporary files, _last_checkpoint). */
static bool parse_log_name(const char *nm, struct log_entry *out)
{
    memset(out, 0, sizeof *out);
    size_t n = strlen(nm);
    if (n < 21 || !digits(nm, 20) || nm[20] != '.')
        return false;
    out->version = parse_digits(nm, 20);
    if (out->version < 0 || out->version > INT64_MAX / 2)
        return false;
    const char *rest = nm + 21;
    if (strcmp(rest, "json") == 0) {
        out->kind = LOG_COMMIT;
        return true;
    }
    if (strncmp(rest, "checkpoint.", 11) != 0)
        return false;
    rest += 11;
    if (strcmp(rest, "parquet") == 0) {
        out->kind = LOG_CP_SINGLE;
        return true;
    }
    size_t rl = strlen(rest);
    /* checkpoint.<10 digits>.<10 digits>.parquet */
    if (rl == 10 + 1 + 10 + 8 && digits(rest, 10) && rest[10] == '.' && digits(rest + 11, 10) &&
        strcmp(rest + 21, ".parquet") == 0) {
        out->kind = LOG_CP_PART;
        out->part = (int)parse_digits(rest, 10);
        out->parts = (int)parse_digits(rest + 11, 10);
        return out->part >= 1 && out->parts >= 1 && out->part <= out->parts &&
               out->parts <= VT_DELTA_MAX_CHECKPOINT_PARTS;
    }
    /* checkpoint.<uuid>.json|parquet (v2) */
    const char *dot = strchr(rest, '.');
    if (!dot || dot == rest)
        return false;
    if (strcmp(dot, ".json") == 0 || strcmp(dot, ".parquet") == 0) {
        out->kind = LOG_CP_V2;
        out->json = strcmp(dot, ".json") == 0;
        return true;
    }
    return false;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct log_entry *x = a, *y = b;
    if (x->version != y->version)
        return x->version < y->version ? -1 : 1;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    if (x->part != y->part)
        return x->part - y->part;
    return strcmp(x->name, y->name);
}

static enum vt_err add_entry(struct log_list *l, const char *nm, const char *start_after,
                             struct vt_error *err)
{
    if (start_after && strcmp(nm, start_after) <= 0)
        return VT_ERR_OK;
    struct log_entry e;
    if (!parse_log_name(nm, &e))
        return VT_ERR_OK;
    if (l->n >= VT_DELTA_MAX_LOG_ENTRIES)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "more than %d files in _delta_log",
                            VT_DELTA_MAX_LOG_ENTRIES);
    if ((l->n & (l->n - 1)) == 0) { /* grow at powers of two */
        struct log_entry *ne = realloc(l->e, (l->n ? l->n * 2 : 16) * sizeof *ne);
        if (!ne)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        l->e = ne;
    }
    e.name = strdup(nm);
    if (!e.name)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    l->e[l->n++] = e;
    return VT_ERR_OK;
}

/* Lists _delta_log/ (names greater than start_after when given).
 * *out_no_log: the log directory does not exist (local) / nothing listed. */
/* Lists _delta_log/ (names greater than start_after when given); no log
 * directory is an empty list. */
static enum vt_err list_log(struct storage *st, const char *start_after, struct log_list *out,
                            struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    struct strbuf sa;
    sb_init(&sa, 0);
    if (start_after)
        sb_addf(&sa, LOG_DIR "%s", start_after);
    struct storage_listing l = {0};
    struct vt_error lerr = {0};
    enum vt_err rc = sa.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory")
                                 : st->ops->list(st, LOG_DIR, 0, start_after ? sa.buf : NULL,
                                                 &l, &lerr);
    sb_release(&sa);
    if (rc == VT_ERR_SOURCE_EMPTY)
        rc = VT_ERR_OK; /* no _delta_log/: the caller says so */
    else if (rc != VT_ERR_OK && lerr.code)
        vt_error_set(err, rc, "%s", vt_error_message(&lerr));
    size_t pl = strlen(LOG_DIR);
    for (size_t i = 0; rc == VT_ERR_OK && i < l.n; i++)
        if (strncmp(l.items[i].name, LOG_DIR, pl) == 0)
            rc = add_entry(out, l.items[i].name + pl, start_after, err);
    storage_listing_release(&l);
    if (rc != VT_ERR_OK) {
        log_list_release(out);
        return rc;
    }
    if (out->n)
        qsort(out->e, out->n, sizeof *out->e, cmp_entry);
    return VT_ERR_OK;
}

/* The plan: which checkpoint (if any) and which commits to read. */
struct log_plan {
    int64_t cp_version;         /* -1: none */
    size_t cp_first, cp_count;  /* entries of the chosen checkpoint */
    bool cp_v2;
    int64_t version;            /* snapshot version */
    size_t *commits;            /* indexes of commit entries to apply, in order */
    size_t n_commits;
};

/* max_version: the newest version to consider (time travel), or INT64_MAX. */
static bool plan_log(const struct log_list *l, struct log_plan *p, int64_t max_version)
{
    memset(p, 0, sizeof *p);
    p->cp_version = -1;
    /* Newest complete checkpoint. Entries are sorted by version, kind, part. */
    for (size_t i = 0; i < l->n && l->e[i].version <= max_version;) {
        size_t j = i;
        while (j < l->n && l->e[j].version == l->e[i].version)
            j++;
        /* Within one version: single, v2 and multi-part candidates. */
        for (size_t k = i; k < j; k++) {
            const struct log_entry *e = &l->e[k];
            if (e->kind == LOG_CP_SINGLE || e->kind == LOG_CP_V2) {
                p->cp_version = e->version;
                p->cp_first = k;
                p->cp_count = 1;
                p->cp_v2 = e->kind == LOG_CP_V2;
                break;
            }
            if (e->kind == LOG_CP_PART && e->part == 1) {
                /* Complete when parts 1..n (same n) follow in order. */
                int parts = e->parts;
                size_t m = k;
                int want = 1;
                while (m < j && l->e[m].kind == LOG_CP_PART && want <= parts) {
                    if (l->e[m].parts == parts && l->e[m].part == want)
                        want++;
                    m++;
                }
                if (want == parts + 1) {
                    p->cp_version = e->version;
                    p->cp_first = k;
                    p->cp_count = (size_t)parts;
                    p->cp_v2 = false;
                    break;
                }
            }
        }
        i = j;
    }
    return true;
}

/* Commits after the checkpoint must be contiguous; returns false with a
 * message when a version is missing. */
static enum vt_err plan_commits(const struct log_list *l, struct log_plan *p,
                                int64_t max_version, const char *location, struct vt_error *err)
{
    int64_t next = p->cp_version + 1;
    p->commits = calloc(l->n ? l->n : 1, sizeof *p->commits);
    if (!p->commits)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    p->version = p->cp_version;
    for (size_t i = 0; i < l->n; i++) {
        const struct log_entry *e = &l->e[i];
        if (e->kind != LOG_COMMIT || e->version <= p->cp_version || e->version > max_version)
            continue;
        if (e->version != next)
            return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                "Delta table %s: commit %lld is missing from _delta_log (found "
                                "%lld)%s",
                                location, (long long)next, (long long)e->version,
                                p->cp_version < 0 ? " and there is no checkpoint before it" : "");
        p->commits[p->n_commits++] = i;
        p->version = e->version;
        next++;
    }
    return VT_ERR_OK;
}

/* ---- checkpoint reading -------------------------------------------------------- */

struct replay_sink {
    struct delta_replay *r;
    const char *what;
};

static enum vt_err sink_line(void *ud, const char *text, size_t len, struct vt_error *err)
{
    struct replay_sink *s = ud;
    return delta_replay_line(s->r, text, len, true, s->what, err);
}

static const struct source_probe_col *probe_col(const struct source_probe *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->cols[i].name, name) == 0)
            return &p->cols[i];
    return NULL;
}

static bool probe_has_child(const struct source_probe_col *c, const char *name)
{
    if (!c || c->type.kind != SOURCE_T_STRUCT)
        return false;
    for (size_t i = 0; i < c->type.n_children; i++)
        if (c->type.child_names[i] && strcmp(c->type.child_names[i], name) == 0)
            return true;
    return false;
}

/* Reads Parquet checkpoint files (or sidecars) with DuckDB: one CASE per row
 * turns the action present in that row into the same JSON line a commit
 * would hold, so both paths share delta_replay_line(). Only the fields the
 * replay needs are serialised (stats can be large). */
static enum vt_err read_parquet_actions(struct source_duck *duck, char **paths, size_t n,
                                        struct delta_replay *r, const char *what,
                                        struct vt_error *err)
{
    struct source_probe probe;
    enum vt_err rc = source_duck_probe(duck, (const char *const *)paths, n, &probe, err);
    if (rc != VT_ERR_OK)
        return rc;
    const struct source_probe_col *add = probe_col(&probe, "add");
    const struct source_probe_col *proto = probe_col(&probe, "protocol");
    const struct source_probe_col *meta = probe_col(&probe, "metaData");
    const struct source_probe_col *side = probe_col(&probe, "sidecar");
    struct strbuf sql;
    sb_init(&sql, 0);
    /* system.main.to_json: the built-in, not the wrapper user statements
     * get (engine/functions.c "vt:json_out", 256 MiB per 2,048 rows: a
     * checkpoint of a wide table's statistics comes near) */
    sb_adds(&sql, "SELECT CASE");
    int arms = 0;
    if (add && probe_has_child(add, "path")) {
        sb_adds(&sql, " WHEN \"add\" IS NOT NULL THEN system.main.to_json(struct_pack(\"add\" := "
                      "struct_pack(path := \"add\".path");
        if (probe_has_child(add, "partitionValues"))
            sb_adds(&sql, ", partitionValues := \"add\".partitionValues");
        if (probe_has_child(add, "size"))
            sb_adds(&sql, ", size := \"add\".size");
        if (probe_has_child(add, "deletionVector"))
            sb_adds(&sql, ", deletionVector := \"add\".deletionVector");
        /* Statistics as JSON text (stats), or as a struct (stats_parsed,
         * delta.checkpoint.writeStatsAsStruct) turned into the same text. */
        if (probe_has_child(add, "stats"))
            sb_adds(&sql, ", stats := \"add\".stats");
        else if (probe_has_child(add, "stats_parsed"))
            sb_adds(&sql, ", stats := system.main.to_json(\"add\".stats_parsed)::VARCHAR");
        sb_adds(&sql, ")))::VARCHAR");
        arms++;
    }
    if (proto) {
        sb_adds(&sql, " WHEN protocol IS NOT NULL THEN system.main.to_json(struct_pack(protocol := "
                      "protocol))::VARCHAR");
        arms++;
    }
    if (meta) {
        sb_adds(&sql, " WHEN \"metaData\" IS NOT NULL THEN "
                      "system.main.to_json(struct_pack(\"metaData\" := \"metaData\"))::VARCHAR");
        arms++;
    }
    if (side && probe_has_child(side, "path")) {
        sb_adds(&sql, " WHEN sidecar IS NOT NULL THEN system.main.to_json(struct_pack(sidecar := "
                      "struct_pack(path := sidecar.path)))::VARCHAR");
        arms++;
    }
    source_probe_release(&probe);
    if (arms == 0) {
        sb_release(&sql);
        return VT_ERR_OK; /* nothing we apply (e.g. only txn rows) */
    }
    sb_adds(&sql, " END FROM ");
    source_scan_add_read_parquet(&sql, (const char *const *)paths, n, NULL);
    if (sql.overflow) {
        sb_release(&sql);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    struct replay_sink sink = {r, what};
    rc = source_duck_each_text(duck, sql.buf, sink_line, &sink, err);
    sb_release(&sql);
    return rc;
}

static enum vt_err load_checkpoint(struct storage *st, struct source_snapshot *scratch,
                                   struct source_duck *duck, const struct log_list *l,
                                   const struct log_plan *p, struct delta_replay *r,
                                   struct vt_error *err)
{
    char what[64];
    snprintf(what, sizeof what, "checkpoint %lld", (long long)p->cp_version);
    const struct log_entry *first = &l->e[p->cp_first];
    enum vt_err rc = VT_ERR_OK;
    if (p->cp_v2 && first->json) {
        char *buf;
        size_t len;
        rc = read_log(st, first->name, VT_DELTA_MAX_LOG_FILE_BYTES, &buf, &len, NULL, err);
        if (rc != VT_ERR_OK)
            return rc;
        rc = delta_replay_text(r, buf, len, true, what, err);
        free(buf);
    } else {
        char **paths = calloc(p->cp_count, sizeof *paths);
        if (!paths)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < p->cp_count && rc == VT_ERR_OK; i++)
            rc = local_log_file(st, scratch, l->e[p->cp_first + i].name, &paths[i], err);
        if (rc == VT_ERR_OK)
            rc = read_parquet_actions(duck, paths, p->cp_count, r, what, err);
        for (size_t i = 0; i < p->cp_count; i++)
            free(paths[i]);
        free(paths);
    }
    if (rc != VT_ERR_OK || r->n_sidecars == 0)
        return rc;
    /* v2 checkpoint: the file actions live in sidecar files under
     * _delta_log/_sidecars/ (relative, URI-encoded names). */
    char **paths = calloc(r->n_sidecars, sizeof *paths);
    size_t n = r->n_sidecars;
    if (!paths)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        const char *sp = r->sidecars[i];
        char dec[VT_DELTA_MAX_PATH_BYTES];
        if (strchr(sp, ':') || !delta_path_decode(sp, dec, sizeof dec) || strstr(dec, "..")) {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                              "Delta %s: sidecar path \"%.200s\" is not a plain relative name",
                              what, sp);
            break;
        }
        struct strbuf nm;
        sb_init(&nm, 0);
        sb_addf(&nm, "_sidecars/%s", dec);
        rc = local_log_file(st, scratch, nm.buf, &paths[i], err);
        sb_release(&nm);
    }
    if (rc == VT_ERR_OK)
        rc = read_parquet_actions(duck, paths, n, r, what, err);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    return rc;
}

/* ---- snapshot building ----------------------------------------------------- */

static bool has_zone(const char *ts)
{
    /* After the date part (YYYY-MM-DD), 'Z' or a +/- offset marks a zone. */
    size_t n = strlen(ts);
    for (size_t i = 10; i < n; i++)
        if (ts[i] == 'Z' || ts[i] == 'z' || ts[i] == '+' || ts[i] == '-')
            return true;
    return false;
}

/* Partition value text as the SELECT wants it: NULL for null and "" (Spark
 * writes empty strings as null partitions), UTC for zone-less timestamps. */
static char *normalize_pv(const char *v, const struct delta_type *t)
{
    if (!v || !*v)
        return NULL;
    if (t && t->kind == DELTA_T_PRIMITIVE && strcmp(t->name, "timestamp") == 0 && !has_zone(v)) {
        size_t n = strlen(v);
        char *s = malloc(n + 4);
        if (s) {
            memcpy(s, v, n);
            memcpy(s + n, "+00", 4);
        }
        return s;
    }
    return strdup(v);
}

static const char *find_pv(const struct delta_add *a, const char *phys, const char *logical,
                           bool *found)
{
    *found = false;
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < a->n_pvs; i++) {
            const char *k = a->pvs[i].key;
            bool m = pass == 0   ? (phys && strcmp(k, phys) == 0)
                     : pass == 1 ? strcmp(k, logical) == 0
                                 : strcasecmp(k, logical) == 0;
            if (m) {
                *found = true;
                return a->pvs[i].value;
            }
        }
    }
    return NULL;
}

static const struct delta_field *schema_field(const struct delta_schema *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->fields[i].name, name) == 0)
            return &s->fields[i];
    for (size_t i = 0; i < s->n; i++)
        if (strcasecmp(s->fields[i].name, name) == 0)
            return &s->fields[i];
    return NULL;
}

static bool is_uri(const char *p)
{
    const char *c = strstr(p, "://");
    if (!c && strncmp(p, "file:", 5) == 0)
        return true;
    if (!c)
        return false;
    for (const char *q = p; q < c; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
              *q == '+' || *q == '-' || *q == '.'))
            return false;
    return c > p;
}


/* The storage name of one data file: relative to the table, or absolute
 * when the log names a URI. */
static enum vt_err locate_data_file(const struct storage *st, const char *logpath,
                                    char **out_name, struct vt_error *err)
{
    *out_name = NULL;
    char dec[VT_DELTA_MAX_PATH_BYTES + 1];
    if (!delta_path_decode(logpath, dec, sizeof dec))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s: bad data file path \"%.200s\"", st->location,
                            logpath);
    /* Which URIs name an object the table's storage can reach is the
     * storage's to say (file:/// locally, s3:// and s3a:// on S3). */
    if (is_uri(dec))
        return st->ops->absolute_name(st, dec, out_name, err);
    if (strstr(dec, "../") || strncmp(dec, "..", 2) == 0 || dec[0] == '/')
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s: data file path escapes the table: %.200s",
                            st->location, dec);
    if (!(*out_name = strdup(dec)))
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    return VT_ERR_OK;
}

/* Reads _last_checkpoint's version (-1 when absent or unreadable: it is only a
 * hint, so a broken one means "list everything"). */
static int64_t last_checkpoint_hint(struct storage *st, struct vt_error *err,
                                    enum vt_err *out_rc)
{
    *out_rc = VT_ERR_OK;
    char *buf;
    size_t len;
    bool missing;
    struct vt_error lerr = {0};
    enum vt_err rc = read_log(st, "_last_checkpoint", VT_DELTA_MAX_LAST_CHECKPOINT_BYTES, &buf,
                              &len, &missing, &lerr);
    if (rc != VT_ERR_OK) {
        if (st->access_denied) {
            *out_rc = vt_error_set(err, rc, "%s", vt_error_message(&lerr));
            return -1;
        }
        log_debug("delta %s: _last_checkpoint unreadable (%s); listing the whole log",
                  st->location, vt_error_message(&lerr));
        return -1;
    }
    if (missing)
        return -1;
    json_t *j = json_loadb(buf, len, 0, NULL);
    free(buf);
    json_t *v = j ? json_object_get(j, "version") : NULL;
    int64_t version = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
    json_decref(j);
    return version;
}

/* ---- time travel by timestamp ------------------------------------------------ */

/* The commit time of a commit file: commitInfo.inCommitTimestamp (tables
 * with in-commit timestamps), else commitInfo.timestamp; -1 when it has
 * neither. Commit files' modification times are not used: a copied table
 * would travel differently from its original. */
static enum vt_err commit_time(struct storage *st, const char *name, int64_t *out_ms,
                               struct vt_error *err)
{
    *out_ms = -1;
    char *buf;
    size_t len;
    bool missing;
    enum vt_err rc = read_log(st, name, VT_DELTA_MAX_LOG_FILE_BYTES, &buf, &len, &missing, err);
    if (rc != VT_ERR_OK)
        return rc;
    if (missing)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s: commit %s disappeared while reading the log",
                            st->location, name);
    for (size_t start = 0; start < len;) {
        const char *nl = memchr(buf + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - buf) : len;
        if (memmem(buf + start, end - start, "\"commitInfo\"", 12)) {
            json_t *j = json_loadb(buf + start, end - start, 0, NULL);
            json_t *ci = json_object_get(j, "commitInfo");
            json_t *ict = json_object_get(ci, "inCommitTimestamp");
            json_t *ts = json_object_get(ci, "timestamp");
            if (json_is_integer(ict))
                *out_ms = (int64_t)json_integer_value(ict);
            else if (json_is_integer(ts))
                *out_ms = (int64_t)json_integer_value(ts);
            json_decref(j);
            if (*out_ms >= 0)
                break;
        }
        start = end + 1;
    }
    free(buf);
    return VT_ERR_OK;
}

/* The newest version committed at or before `when` (a binary search over the
 * listed commits, whose times increase with their versions). */
static enum vt_err version_at_time(struct storage *st, const struct log_list *l,
                                   const char *when, int64_t *out_version, struct vt_error *err)
{
    int64_t want;
    if (!time_parse_rfc3339(when, &want))
        return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                            "source.timestamp \"%.60s\" is not an RFC 3339 time", when);
    size_t *c = calloc(l->n ? l->n : 1, sizeof *c), n = 0;
    if (!c)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < l->n; i++)
        if (l->e[i].kind == LOG_COMMIT)
            c[n++] = i;
    enum vt_err rc = VT_ERR_OK;
    size_t lo = 0, hi = n; /* the answer is c[lo - 1]: commits before lo are at or before */
    while (lo < hi && rc == VT_ERR_OK) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t t;
        rc = commit_time(st, l->e[c[mid]].name, &t, err);
        if (rc == VT_ERR_OK && t < 0)
            rc = vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                              "Delta table %s: commit %lld records no commit time "
                              "(commitInfo.timestamp): source.timestamp cannot be used; use "
                              "source.version",
                              st->location, (long long)l->e[c[mid]].version);
        if (rc == VT_ERR_OK && t <= want)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (rc == VT_ERR_OK && lo == 0) {
        char first[32];
        int64_t t = -1;
        if (n)
            commit_time(st, l->e[c[0]].name, &t, err);
        time_format_rfc3339(t * 1000, first);
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "Delta table %s: no version was committed at or before %.60s (the "
                          "oldest commit in the log, version %lld, is from %s)",
                          st->location, when, n ? (long long)l->e[c[0]].version : -1LL,
                          t >= 0 ? first : "an unknown time");
    }
    if (rc == VT_ERR_OK)
        *out_version = l->e[c[lo - 1]].version;
    free(c);
    return rc;
}

/* ---- the table: log replayed, files located, nothing downloaded --------- */

struct delta_table {
    struct storage *st;
    struct source_snapshot scratch;     /* checkpoint downloads, deleted on close */
    struct delta_replay r;
    struct delta_schema schema;
    struct source_duck *duck;
    int64_t version;
    bool mapped;                        /* columnMapping mode "name" or "id" */
    bool by_id;                         /* mode "id": files' field ids checked */
    size_t npc;
    const struct delta_field **pfields; /* partition columns, in metaData order */
    const struct delta_add **adds;      /* active files, sorted by path */
    size_t n_adds;
    char **names;                       /* storage names of the data files */
    int64_t *sizes;
    char **pvals;                       /* n_adds * npc normalised texts (NULL = null) */
    int64_t total_bytes;
};

void delta_table_close(struct delta_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_adds; i++) {
        if (t->names)
            free(t->names[i]);
        for (size_t k = 0; t->pvals && k < t->npc; k++)
            free(t->pvals[i * t->npc + k]);
    }
    free(t->names);
    free(t->sizes);
    free(t->pvals);
    free(t->adds);
    free(t->pfields);
    source_duck_close(t->duck);
    delta_schema_release(&t->schema);
    delta_replay_release(&t->r);
    source_snapshot_release(&t->scratch);
    storage_close(t->st);
    free(t);
}

size_t delta_table_file_count(const struct delta_table *t)
{
    return t->n_adds;
}

const char *delta_table_file_log_path(const struct delta_table *t, size_t i)
{
    return t->adds[i]->path;
}

int64_t delta_table_total_bytes(const struct delta_table *t)
{
    return t->total_bytes;
}

int64_t delta_table_version(const struct delta_table *t)
{
    return t->version;
}

enum vt_err delta_table_open(const struct vt_dataset_config *ds, const struct source_context *ctx,
                             struct delta_table **out, bool *out_access_denied,
                             struct vt_error *err)
{
    *out = NULL;
    if (out_access_denied)
        *out_access_denied = false;
    struct delta_table *t = calloc(1, sizeof *t);
    if (!t)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    struct log_list list = {0};
    struct log_plan plan = {0};
    t->scratch.scratch = true; /* its links must not share the generation's directory */
    delta_replay_init(&t->r);
    const char *loc = ds->location ? ds->location : "";
    enum vt_err rc = VT_ERR_OK;
    if (loc[strcspn(loc, "*?[")])
        rc = vt_error_set(err, VT_ERR_INVALID_CONFIG,
                          "a Delta location is a table directory or prefix, not a glob: %s", loc);
    if (rc == VT_ERR_OK)
        rc = storage_open(ds, loc, ctx, &t->st, err);
    if (rc != VT_ERR_OK)
        goto done;
    struct storage *st = t->st;

    /* 1. Listing, from the _last_checkpoint hint when there is one (not when
     * travelling: an older version may need an older checkpoint). */
    bool by_version = ds->source_version_set && ds->source_version >= 0;
    bool travel = by_version || ds->source_timestamp;
    int64_t max_version = by_version ? ds->source_version : INT64_MAX;
    int64_t hint = travel ? -1 : last_checkpoint_hint(st, err, &rc);
    if (rc != VT_ERR_OK)
        goto done;
    if (hint >= 0) {
        char sa[32];
        snprintf(sa, sizeof sa, "%020lld", (long long)hint);
        rc = list_log(st, sa, &list, err);
        if (rc != VT_ERR_OK)
            goto done;
        plan_log(&list, &plan, max_version);
        if (plan.cp_version < hint) {
            log_debug("delta %s: _last_checkpoint names version %lld but no complete "
                      "checkpoint is there; listing the whole log",
                      loc, (long long)hint);
            log_list_release(&list);
            hint = -1;
        }
    }
    if (hint < 0) {
        rc = list_log(st, NULL, &list, err);
        if (rc != VT_ERR_OK)
            goto done;
        if (ds->source_timestamp && list.n)
            rc = version_at_time(st, &list, ds->source_timestamp, &max_version, err);
        if (rc != VT_ERR_OK)
            goto done;
        plan_log(&list, &plan, max_version);
    }
    if (list.n == 0) {
        /* No log: an empty source, unless the table directory itself is not
         * there (a local listing of it fails then). */
        struct storage_listing top = {0};
        struct vt_error terr = {0};
        if (st->ops->list(st, "", 0, NULL, &top, &terr) == VT_ERR_SOURCE_EMPTY)
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "Delta table %s: %s", loc,
                              vt_error_message(&terr));
        else
            rc = vt_error_set(err, VT_ERR_SOURCE_EMPTY,
                              "%s has no Delta log (_delta_log/ is missing or empty)", loc);
        storage_listing_release(&top);
        goto done;
    }
    rc = plan_commits(&list, &plan, max_version, loc, err);
    if (rc != VT_ERR_OK)
        goto done;
    if (plan.cp_version < 0 && (plan.n_commits == 0 || list.e[plan.commits[0]].version != 0)) {
        rc = travel ? vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                   "Delta table %s: version %lld is not available: the log "
                                   "before it was cleaned up and no checkpoint reaches it",
                                   loc, (long long)max_version)
                    : vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                   "Delta table %s: no checkpoint and no commit 0 in _delta_log",
                                   loc);
        goto done;
    }
    if (by_version && plan.version != ds->source_version) {
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "Delta table %s has no version %lld (the latest is %lld)", loc,
                          (long long)ds->source_version, (long long)plan.version);
        goto done;
    }
    t->version = plan.version;

    /* 2. Replay: checkpoint, then commits in order. */
    if (plan.cp_version >= 0) {
        rc = source_duck_open(ctx, &t->duck, err);
        if (rc == VT_ERR_OK)
            rc = load_checkpoint(st, &t->scratch, t->duck, &list, &plan, &t->r, err);
        if (rc != VT_ERR_OK)
            goto done;
    }
    for (size_t i = 0; i < plan.n_commits; i++) {
        const struct log_entry *e = &list.e[plan.commits[i]];
        char *buf;
        size_t len;
        bool missing;
        rc = read_log(st, e->name, VT_DELTA_MAX_LOG_FILE_BYTES, &buf, &len, &missing, err);
        if (rc != VT_ERR_OK)
            goto done;
        if (missing) {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                              "Delta table %s: commit %s disappeared while reading the log "
                              "(log cleanup?); retry",
                              loc, e->name);
            goto done;
        }
        char what[48];
        snprintf(what, sizeof what, "commit %lld", (long long)e->version);
        rc = delta_replay_text(&t->r, buf, len, false, what, err);
        free(buf);
        if (rc != VT_ERR_OK)
            goto done;
    }

    /* 3. Protocol, schema, partition columns. */
    rc = delta_replay_check_protocol(&t->r, loc, err);
    if (rc != VT_ERR_OK)
        goto done;
    rc = delta_schema_parse(t->r.schema_string, strlen(t->r.schema_string), &t->schema, err);
    if (rc != VT_ERR_OK)
        goto done;
    t->mapped = t->r.column_mapping_mode && (strcmp(t->r.column_mapping_mode, "name") == 0 ||
                                             strcmp(t->r.column_mapping_mode, "id") == 0);
    t->by_id = t->mapped && strcmp(t->r.column_mapping_mode, "id") == 0;
    if (!t->mapped) {
        /* Mapping off: files use logical names even if physical-name metadata
         * was left in the schema. */
        for (size_t c = 0; c < t->schema.n; c++) {
            free(t->schema.fields[c].physical);
            t->schema.fields[c].physical = NULL;
        }
    }
    t->npc = t->r.n_partition_columns;
    t->pfields = calloc(t->npc ? t->npc : 1, sizeof *t->pfields);
    if (!t->pfields) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < t->npc; k++) {
        t->pfields[k] = schema_field(&t->schema, t->r.partition_columns[k]);
        if (!t->pfields[k]) {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                              "Delta table %s: partition column \"%.100s\" is not in the schema",
                              loc, t->r.partition_columns[k]);
            goto done;
        }
        if (t->pfields[k]->type->kind != DELTA_T_PRIMITIVE) {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                              "Delta table %s: partition column \"%.100s\" has a nested type",
                              loc, t->pfields[k]->name);
            goto done;
        }
    }

    /* 4. Active files and where they live. */
    rc = delta_replay_active(&t->r, &t->adds, &t->n_adds, err);
    if (rc != VT_ERR_OK)
        goto done;
    if (t->n_adds == 0) {
        rc = vt_error_set(err, VT_ERR_SOURCE_EMPTY,
                          "Delta table %s has no data files at version %lld (empty table)", loc,
                          (long long)t->version);
        goto done;
    }
    size_t n = t->n_adds;
    t->names = calloc(n, sizeof *t->names);
    t->sizes = calloc(n, sizeof *t->sizes);
    t->pvals = calloc(n * (t->npc ? t->npc : 1), sizeof *t->pvals);
    if (!t->names || !t->sizes || !t->pvals) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        const struct delta_add *a = t->adds[i];
        rc = locate_data_file(st, a->path, &t->names[i], err);
        if (rc != VT_ERR_OK)
            break;
        t->sizes[i] = a->size;
        t->total_bytes += a->size > 0 ? a->size : 0;
        for (size_t k = 0; k < t->npc; k++) {
            bool found;
            const char *v = find_pv(a, t->mapped ? t->pfields[k]->physical : NULL,
                                    t->pfields[k]->name, &found);
            if (v && *v) {
                t->pvals[i * t->npc + k] = normalize_pv(v, t->pfields[k]->type);
                if (!t->pvals[i * t->npc + k])
                    rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            }
        }
    }
done:
    free(plan.commits);
    log_list_release(&list);
    if (t->st && t->st->access_denied && out_access_denied)
        *out_access_denied = true;
    if (rc != VT_ERR_OK) {
        delta_table_close(t);
        return rc;
    }
    *out = t;
    return VT_ERR_OK;
}

enum vt_err source_delta_measure(const struct vt_dataset_config *ds,
                                 const struct source_context *ctx, int64_t *out_bytes,
                                 bool *out_access_denied, struct vt_error *err)
{
    *out_bytes = 0;
    struct delta_table *t;
    enum vt_err rc = delta_table_open(ds, ctx, &t, out_access_denied, err);
    if (rc != VT_ERR_OK)
        return rc;
    *out_bytes = t->total_bytes;
    delta_table_close(t);
    return VT_ERR_OK;
}

/* The deletion vector of active file i (if any), read and registered for the
 * statements (dvset.c): *out_id 0 when the file has none. */
static enum vt_err load_dv(struct delta_table *t, size_t i, uint64_t *out_id,
                           struct vt_error *err)
{
    *out_id = 0;
    const struct delta_add *a = t->adds[i];
    if (!a->dv)
        return VT_ERR_OK;
    char *name = NULL;
    struct vt_error lerr = {0};
    enum vt_err rc = delta_dv_desc_check(a->dv, &lerr);
    if (rc == VT_ERR_OK && a->dv->storage != 'i') {
        char *raw = NULL;
        rc = delta_dv_file_name(a->dv, &raw, &lerr);
        if (rc == VT_ERR_OK && a->dv->storage == 'p')
            rc = locate_data_file(t->st, raw, &name, &lerr);
        else if (rc == VT_ERR_OK) {
            name = raw;
            raw = NULL;
        }
        free(raw);
    }
    struct delta_dv *dv = NULL;
    if (rc == VT_ERR_OK)
        rc = delta_dv_load(t->st, name, a->dv, &dv, &lerr);
    if (rc != VT_ERR_OK)
        vt_error_set(err, rc, "Delta table %s: %s (the deletion vector of data file %.200s)",
                     t->st->location, vt_error_message(&lerr), t->names[i]);
    free(name);
    if (rc != VT_ERR_OK)
        return rc;
    *out_id = dvset_add(dv);
    return *out_id ? VT_ERR_OK : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
}

/* Data files made readable (in place, pinned, downloaded or cached) into
 * out->files, with their sizes and partition values. */
/* ---- columnMapping mode "id" ------------------------------------------------- */

/* The physical name of the field with this id (nested fields too), or NULL. */
static const char *physical_of_id(const struct delta_field *f, size_t n, int64_t id);

static const char *physical_of_type(const struct delta_type *t, int64_t id)
{
    if (!t)
        return NULL;
    const char *p = physical_of_id(t->fields, t->n_fields, id);
    if (!p)
        p = physical_of_type(t->elem, id);
    return p ? p : physical_of_type(t->key, id);
}

static const char *physical_of_id(const struct delta_field *f, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (f[i].id == id && f[i].physical)
            return f[i].physical;
        const char *p = physical_of_type(f[i].type, id);
        if (p)
            return p;
    }
    return NULL;
}

struct id_check {
    const struct delta_table *t;
    const char *bad;            /* the first mismatch, as "file\x01id\x01name" */
    char *copy;
};

static enum vt_err id_row(void *ud, const char *text, size_t len, struct vt_error *err)
{
    struct id_check *c = ud;
    const char *a = memchr(text, 1, len);
    const char *b = a ? memchr(a + 1, 1, len - (size_t)(a + 1 - text)) : NULL;
    if (!b || c->copy)
        return VT_ERR_OK;
    int64_t id = strtoll(a + 1, NULL, 10);
    const char *want = physical_of_id(c->t->schema.fields, c->t->schema.n, id);
    size_t nl = len - (size_t)(b + 1 - text);
    if (!want || (strlen(want) == nl && memcmp(want, b + 1, nl) == 0))
        return VT_ERR_OK;
    if (!(c->copy = strndup(text, len)))
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    return VT_ERR_OK;
}

/* Mode "id" resolves a file's columns by Parquet field id. Writers (Spark,
 * Databricks, delta-rs) also name them by the physical name, which is what
 * the SELECT reads; so every field id a file carries that the schema knows
 * must carry its physical name there, or the build fails naming the file
 * (a file whose names differ from its ids, e.g. converted from Iceberg, is
 * refused rather than read wrong). A file without a column's id lacks it
 * (NULL), as in name mode. */
static enum vt_err check_field_ids(const struct delta_table *t, const char *const *paths,
                                   size_t n, struct vt_error *err)
{
    if (n == 0)
        return VT_ERR_OK;
    struct strbuf q;
    sb_init(&q, 0);
    sb_adds(&q, "SELECT concat_ws(chr(1), file_name, field_id::VARCHAR, name) FROM "
                "parquet_schema([");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_addc(&q, ',');
        sb_add_sql_string(&q, paths[i]);
    }
    sb_adds(&q, "]) WHERE field_id IS NOT NULL");
    if (q.overflow) {
        sb_release(&q);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    struct id_check c = {.t = t};
    enum vt_err rc = source_duck_each_text(t->duck, q.buf, id_row, &c, err);
    sb_release(&q);
    if (rc == VT_ERR_OK && c.copy) {
        char *a = strchr(c.copy, 1), *b = a ? strchr(a + 1, 1) : NULL;
        if (a && b) {
            *a = *b = '\0';
            /* The file by its log name, not the local (pinned or cached) path. */
            const char *file = c.copy;
            for (size_t i = 0; i < n; i++)
                if (strcmp(paths[i], c.copy) == 0 && t->adds[i])
                    file = t->adds[i]->path;
            rc = vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                              "Delta table %s (columnMapping mode \"id\"): data file %.300s "
                              "stores field id %s as \"%.100s\", not under its physical name "
                              "\"%.100s\"",
                              t->st->location, file, a + 1, b + 1,
                              physical_of_id(t->schema.fields, t->schema.n,
                                             strtoll(a + 1, NULL, 10)));
        }
    }
    free(c.copy);
    return rc;
}

static enum vt_err fetch_files(struct delta_table *t, const struct source_context *ctx,
                               struct source_snapshot *out, struct storage_fetch **out_fetched,
                               struct vt_error *err)
{
    size_t n = t->n_adds, npc = t->npc;
    struct storage_fetch *f = calloc(n, sizeof *f);
    *out_fetched = f;
    out->files = calloc(n, sizeof *out->files);
    if (!f || !out->files)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    out->n_files = n;
    for (size_t i = 0; i < n; i++)
        f[i] = (struct storage_fetch){.name = t->names[i], .size = t->sizes[i]};
    enum vt_err rc = t->st->ops->fetch(t->st, f, n,
                                       ctx && ctx->for_lazy ? STORAGE_USE_KEEP
                                                            : STORAGE_USE_BUILD,
                                       out, err);
    t->total_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        out->files[i].path = f[i].path;
        out->files[i].size = f[i].size;
        t->total_bytes += f[i].size > 0 ? f[i].size : 0;
        if (rc != VT_ERR_OK || !npc)
            continue;
        out->files[i].partition_values = calloc(npc, sizeof(char *));
        if (!out->files[i].partition_values) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            continue;
        }
        for (size_t k = 0; k < npc; k++) {
            out->files[i].partition_values[k] = t->pvals[i * npc + k];
            t->pvals[i * npc + k] = NULL;
        }
    }
    out->total_bytes = t->total_bytes;
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++)
        rc = load_dv(t, i, &out->files[i].dv, err);
    return rc;
}

enum vt_err source_delta_resolve(const struct vt_dataset_config *ds,
                                 const struct source_context *ctx, struct source_snapshot *out,
                                 bool *out_access_denied, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->kind = CFG_SOURCE_DELTA;
    struct delta_table *t = NULL;
    struct source_probe probe = {0};
    struct source_scan_column *cols = NULL;
    const char **paths = NULL, **pvals = NULL;
    uint64_t *dvs = NULL;
    struct storage_fetch *fetched = NULL;
    enum vt_err rc = delta_table_open(ds, ctx, &t, out_access_denied, err);
    if (rc != VT_ERR_OK)
        return rc;
    size_t n = t->n_adds, npc = t->npc;
    const struct delta_schema *schema = &t->schema;
    rc = fetch_files(t, ctx, out, &fetched, err);
    if (rc == VT_ERR_OK && !t->duck)
        rc = source_duck_open(ctx, &t->duck, err);
    paths = calloc(n, sizeof *paths);
    pvals = calloc(n * (npc ? npc : 1), sizeof *pvals);
    dvs = calloc(n, sizeof *dvs);
    if (rc == VT_ERR_OK && (!paths || !pvals || !dvs))
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; rc == VT_ERR_OK && i < n; i++) {
        paths[i] = out->files[i].path;
        dvs[i] = out->files[i].dv;
        for (size_t k = 0; k < npc; k++)
            pvals[i * npc + k] = out->files[i].partition_values[k];
    }
    if (rc == VT_ERR_OK && t->by_id)
        rc = check_field_ids(t, paths, n, err);
    /* Probe the files' columns and build the SELECT. */
    if (rc == VT_ERR_OK)
        rc = source_duck_probe(t->duck, paths, n, &probe, err);
    if (rc == VT_ERR_OK) {
        size_t cap = schema->n ? schema->n : 1;
        cols = calloc(cap, sizeof *cols);
        out->schema_names = calloc(cap, sizeof(char *));
        out->schema_types = calloc(cap, sizeof(char *));
        out->partition_columns = calloc(npc ? npc : 1, sizeof(char *));
        out->partition_types = calloc(npc ? npc : 1, sizeof(char *));
        if (!cols || !out->schema_names || !out->schema_types || !out->partition_columns ||
            !out->partition_types)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t c = 0; c < schema->n && rc == VT_ERR_OK; c++) {
        const struct delta_field *f = &schema->fields[c];
        cols[c] = (struct source_scan_column){.name = f->name, .partition = -1,
                                              .type = f->type->duck, .arg = f->type,
                                              .convert = delta_sql_convert};
        for (size_t k = 0; k < npc; k++)
            if (t->pfields[k] == f) {
                cols[c].partition = (int)k;
                cols[c].convert = delta_sql_convert_partition;
            }
        if (cols[c].partition < 0)
            cols[c].file = source_probe_find(&probe, f->physical ? f->physical : f->name);
        out->schema_names[c] = strdup(f->name);
        out->schema_types[c] = strdup(f->type->duck);
        out->n_schema = c + 1;
        if (!out->schema_names[c] || !out->schema_types[c])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t k = 0; k < npc && rc == VT_ERR_OK; k++) {
        out->partition_columns[k] = strdup(t->pfields[k]->name);
        out->partition_types[k] = strdup(t->pfields[k]->type->duck);
        out->n_partitions = k + 1;
        if (!out->partition_columns[k] || !out->partition_types[k])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (rc == VT_ERR_OK) {
        struct source_scan scan = {
            .paths = paths, .n_paths = n, .columns = cols, .n_columns = schema->n,
            .n_partitions = npc, .partition_values = pvals, .dvs = dvs,
        };
        rc = source_scan_sql(&scan, &out->select_sql, err);
        char *list = NULL;
        if (rc == VT_ERR_OK && ctx && ctx->for_lazy)
            rc = source_scan_select_list(&scan, &list, err);
        struct source_file_stats *fs = NULL;
        if (rc == VT_ERR_OK && list) {
            /* add.stats name columns by their physical names. */
            const char **keys = calloc(schema->n ? schema->n : 1, sizeof *keys);
            const char **types = calloc(schema->n ? schema->n : 1, sizeof *types);
            for (size_t c = 0; keys && types && c < schema->n; c++) {
                const struct delta_field *f = &schema->fields[c];
                keys[c] = cols[c].partition < 0 ? (f->physical ? f->physical : f->name) : NULL;
                types[c] = f->type->duck;
            }
            fs = keys && types ? delta_stats_for_files(t->adds, n, keys, types, schema->n)
                               : NULL;
            free(keys);
            free(types);
            if (!fs)
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        if (rc == VT_ERR_OK && list)
            rc = source_lazy_build(t->duck, out, ds, ctx, fetched, storage_take_reader(t->st),
                                   cols, schema->n, fs, list, err);
        delta_stats_free(fs, n, schema->n);
        free(list);
    }
    if (rc == VT_ERR_OK) {
        char vbuf[32];
        snprintf(vbuf, sizeof vbuf, "%lld", (long long)t->version);
        if (!(out->version = strdup(vbuf)))
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (rc == VT_ERR_OK)
        log_debug("delta %s: version %lld, %zu files, %lld bytes", ds->location,
                  (long long)t->version, n, (long long)t->total_bytes);
    if (t->st->access_denied && out_access_denied)
        *out_access_denied = true;
    free(fetched);
    free(paths);
    free(pvals);
    free(dvs);
    free(cols);
    source_probe_release(&probe);
    delta_table_close(t);
    if (rc != VT_ERR_OK)
        source_snapshot_release(out);
    return rc;
}
