/*
 * Delta Lake resolver: finds the current snapshot of a table in a local
 * directory or under an s3:// prefix and turns it into a source_snapshot whose
 * select_sql reads exactly the active files with their partition values.
 *
 * Steps (see delta.h): _last_checkpoint hint -> listing of _delta_log/ ->
 * newest complete checkpoint -> contiguous JSON commits after it -> replay ->
 * protocol and schema -> data files (local paths, or S3 objects downloaded to
 * the temp dir for resident builds / the object cache for lazy ones) -> probe
 * of the files' columns -> SELECT. `_change_data/` files are never named by add
 * actions, so CDC data is ignored by construction.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "sources/delta.h"
#include "sources/objcache.h"
#include "sources/s3.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

/* ---- storage access: a local directory or an S3 prefix --------------------- */

struct delta_io {
    bool s3;
    const char *location;       /* as configured, for messages */
    char *root;                 /* local table directory, no trailing '/' */
    struct s3_client *c;
    char *bucket;
    char *prefix;               /* S3 table prefix, "" or ending in '/' */
    bool access_denied;
    const struct source_context *ctx;
    /* files created during the resolve that must go when it ends */
    char **scratch;
    size_t n_scratch;
};

static void io_release(struct delta_io *io)
{
    for (size_t i = 0; i < io->n_scratch; i++) {
        unlink(io->scratch[i]);
        free(io->scratch[i]);
    }
    free(io->scratch);
    free(io->root);
    free(io->bucket);
    free(io->prefix);
    s3_client_destroy(io->c);
}

/* A fresh file name in the temp dir: vt-<tag>-<ulid>-<n>.parquet */
static char *temp_name(const struct source_context *ctx, const char *tag, size_t n)
{
    static atomic_uint seq;
    char ulid[27];
    ulid_new(ulid);
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_addf(&sb, "%s/vt-%s-%s-%zu-%u.parquet", source_temp_dir(ctx), tag, ulid, n,
            atomic_fetch_add(&seq, 1));
    return sb_detach(&sb, NULL);
}

static int push_str(char ***v, size_t *n, char *s)
{
    char **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return -1;
    nv[(*n)++] = s;
    *v = nv;
    return 0;
}

static void note_outcome(struct delta_io *io, const struct s3_outcome *oc)
{
    if (oc->access_denied)
        io->access_denied = true;
}

/* Reads a file of the log (relative to _delta_log/) into memory.
 * *out_missing is set (and VT_ERR_OK returned) when it does not exist. */
static enum vt_err io_read_log(struct delta_io *io, const char *name, size_t max, char **out,
                               size_t *out_len, bool *out_missing, struct vt_error *err)
{
    *out = NULL;
    *out_len = 0;
    if (out_missing)
        *out_missing = false;
    if (io->s3) {
        struct strbuf key;
        sb_init(&key, 0);
        sb_addf(&key, "%s_delta_log/%s", io->prefix, name);
        struct s3_outcome oc;
        struct vt_error lerr = {0};
        enum vt_err rc = s3_get_mem(io->c, io->bucket, key.buf, 0, -1, max, out, out_len, &oc,
                                    &lerr);
        sb_release(&key);
        note_outcome(io, &oc);
        if (rc != VT_ERR_OK && oc.not_found && out_missing) {
            *out_missing = true;
            return VT_ERR_OK;
        }
        if (rc != VT_ERR_OK)
            return vt_error_set(err, rc, "%s", vt_error_message(&lerr));
        return VT_ERR_OK;
    }
    struct strbuf path;
    sb_init(&path, 0);
    sb_addf(&path, "%s/_delta_log/%s", io->root, name);
    int fd = open(path.buf, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        enum vt_err rc = VT_ERR_OK;
        if (errno == ENOENT && out_missing)
            *out_missing = true;
        else
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot read %s: %s", path.buf,
                              strerror(errno));
        sb_release(&path);
        return rc;
    }
    struct stat st;
    enum vt_err rc = VT_ERR_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s is not a regular file", path.buf);
    } else if ((uint64_t)st.st_size > max) {
        rc = vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "%s is larger than %zu bytes", path.buf,
                          max);
    } else {
        char *buf = malloc((size_t)st.st_size + 1);
        size_t got = 0;
        if (!buf) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        } else {
            while (got < (size_t)st.st_size) {
                ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0)
                    break;
                got += (size_t)r;
            }
            buf[got] = '\0';
            *out = buf;
            *out_len = got;
        }
    }
    close(fd);
    sb_release(&path);
    return rc;
}

/* A log file DuckDB must read (Parquet checkpoint, sidecar): its local path,
 * downloaded into the temp dir first when the table is on S3. */
static enum vt_err io_local_log_file(struct delta_io *io, const char *name, char **out,
                                     struct vt_error *err)
{
    *out = NULL;
    if (!io->s3) {
        struct strbuf p;
        sb_init(&p, 0);
        sb_addf(&p, "%s/_delta_log/%s", io->root, name);
        *out = sb_detach(&p, NULL);
        return *out ? VT_ERR_OK : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    char *local = temp_name(io->ctx, "ckpt", io->n_scratch);
    struct strbuf key;
    sb_init(&key, 0);
    sb_addf(&key, "%s_delta_log/%s", io->prefix, name);
    if (!local || !key.buf) {
        free(local);
        sb_release(&key);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    struct s3_outcome oc;
    enum vt_err rc = s3_get_file(io->c, io->bucket, key.buf, NULL, local, NULL, &oc, err);
    sb_release(&key);
    note_outcome(io, &oc);
    if (rc != VT_ERR_OK) {
        free(local);
        return rc;
    }
    char *copy = strdup(local);
    if (!copy || push_str(&io->scratch, &io->n_scratch, copy) < 0) {
        free(copy);
        unlink(local);
        free(local);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *out = local;
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
static enum vt_err io_list_log(struct delta_io *io, const char *start_after, struct log_list *out,
                               struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    enum vt_err rc = VT_ERR_OK;
    if (io->s3) {
        struct strbuf pfx, sa;
        sb_init(&pfx, 0);
        sb_init(&sa, 0);
        sb_addf(&pfx, "%s_delta_log/", io->prefix);
        if (start_after)
            sb_addf(&sa, "%s_delta_log/%s", io->prefix, start_after);
        struct s3_listing l;
        struct s3_outcome oc;
        rc = s3_list(io->c, io->bucket, pfx.buf, start_after ? sa.buf : NULL, "/", 0, &l, &oc,
                     err);
        note_outcome(io, &oc);
        for (size_t i = 0; rc == VT_ERR_OK && i < l.n; i++) {
            const char *k = l.items[i].key;
            if (strncmp(k, pfx.buf, pfx.len) != 0)
                continue;
            rc = add_entry(out, k + pfx.len, start_after, err);
        }
        s3_listing_release(&l); /* zeroed by s3_list on failure */
        sb_release(&pfx);
        sb_release(&sa);
    } else {
        struct strbuf dir;
        sb_init(&dir, 0);
        sb_addf(&dir, "%s/_delta_log", io->root);
        DIR *d = opendir(dir.buf);
        if (!d) {
            if (errno != ENOENT)
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot list %s: %s", dir.buf,
                                  strerror(errno));
        } else {
            struct dirent *de;
            while (rc == VT_ERR_OK && (de = readdir(d)) != NULL)
                rc = add_entry(out, de->d_name, start_after, err);
            closedir(d);
        }
        sb_release(&dir);
    }
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

static bool plan_log(const struct log_list *l, struct log_plan *p)
{
    memset(p, 0, sizeof *p);
    p->cp_version = -1;
    /* Newest complete checkpoint. Entries are sorted by version, kind, part. */
    for (size_t i = 0; i < l->n;) {
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
                                const char *location, struct vt_error *err)
{
    int64_t next = p->cp_version + 1;
    p->commits = calloc(l->n ? l->n : 1, sizeof *p->commits);
    if (!p->commits)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    p->version = p->cp_version;
    for (size_t i = 0; i < l->n; i++) {
        const struct log_entry *e = &l->e[i];
        if (e->kind != LOG_COMMIT || e->version <= p->cp_version)
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

static const struct delta_probe_col *probe_col(const struct delta_probe *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->cols[i].name, name) == 0)
            return &p->cols[i];
    return NULL;
}

static bool probe_has_child(const struct delta_probe_col *c, const char *name)
{
    if (!c || c->type.kind != DELTA_T_STRUCT)
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
static enum vt_err read_parquet_actions(struct delta_duck *duck, char **paths, size_t n,
                                        struct delta_replay *r, const char *what,
                                        struct vt_error *err)
{
    struct delta_probe probe;
    enum vt_err rc = delta_duck_probe(duck, (const char *const *)paths, n, &probe, err);
    if (rc != VT_ERR_OK)
        return rc;
    const struct delta_probe_col *add = probe_col(&probe, "add");
    const struct delta_probe_col *proto = probe_col(&probe, "protocol");
    const struct delta_probe_col *meta = probe_col(&probe, "metaData");
    const struct delta_probe_col *side = probe_col(&probe, "sidecar");
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "SELECT CASE");
    int arms = 0;
    if (add && probe_has_child(add, "path")) {
        sb_adds(&sql, " WHEN \"add\" IS NOT NULL THEN to_json(struct_pack(\"add\" := "
                      "struct_pack(path := \"add\".path");
        if (probe_has_child(add, "partitionValues"))
            sb_adds(&sql, ", partitionValues := \"add\".partitionValues");
        if (probe_has_child(add, "size"))
            sb_adds(&sql, ", size := \"add\".size");
        if (probe_has_child(add, "deletionVector"))
            sb_adds(&sql, ", deletionVector := \"add\".deletionVector");
        sb_adds(&sql, ")))::VARCHAR");
        arms++;
    }
    if (proto) {
        sb_adds(&sql, " WHEN protocol IS NOT NULL THEN to_json(struct_pack(protocol := "
                      "protocol))::VARCHAR");
        arms++;
    }
    if (meta) {
        sb_adds(&sql, " WHEN \"metaData\" IS NOT NULL THEN to_json(struct_pack(\"metaData\" := "
                      "\"metaData\"))::VARCHAR");
        arms++;
    }
    if (side && probe_has_child(side, "path")) {
        sb_adds(&sql, " WHEN sidecar IS NOT NULL THEN to_json(struct_pack(sidecar := "
                      "struct_pack(path := sidecar.path)))::VARCHAR");
        arms++;
    }
    delta_probe_release(&probe);
    if (arms == 0) {
        sb_release(&sql);
        return VT_ERR_OK; /* nothing we apply (e.g. only txn rows) */
    }
    sb_adds(&sql, " END FROM read_parquet([");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_adds(&sql, ", ");
        delta_sql_add_path_literal(&sql, paths[i]);
    }
    sb_adds(&sql, "], union_by_name = true, hive_partitioning = false)");
    if (sql.overflow) {
        sb_release(&sql);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    struct replay_sink sink = {r, what};
    rc = delta_duck_each_text(duck, sql.buf, sink_line, &sink, err);
    sb_release(&sql);
    return rc;
}

static enum vt_err load_checkpoint(struct delta_io *io, struct delta_duck *duck,
                                   const struct log_list *l, const struct log_plan *p,
                                   struct delta_replay *r, struct vt_error *err)
{
    char what[64];
    snprintf(what, sizeof what, "checkpoint %lld", (long long)p->cp_version);
    const struct log_entry *first = &l->e[p->cp_first];
    enum vt_err rc = VT_ERR_OK;
    if (p->cp_v2 && first->json) {
        char *buf;
        size_t len;
        rc = io_read_log(io, first->name, VT_DELTA_MAX_LOG_FILE_BYTES, &buf, &len, NULL, err);
        if (rc != VT_ERR_OK)
            return rc;
        rc = delta_replay_text(r, buf, len, true, what, err);
        free(buf);
    } else {
        char **paths = calloc(p->cp_count, sizeof *paths);
        if (!paths)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < p->cp_count && rc == VT_ERR_OK; i++)
            rc = io_local_log_file(io, l->e[p->cp_first + i].name, &paths[i], err);
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
        rc = io_local_log_file(io, nm.buf, &paths[i], err);
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

/* Where one data file lives: a local path, or (S3) bucket + key. */
static enum vt_err locate_data_file(struct delta_io *io, const char *logpath, char **out_local,
                                    char **out_bucket, char **out_key, struct vt_error *err)
{
    *out_local = *out_bucket = *out_key = NULL;
    char dec[VT_DELTA_MAX_PATH_BYTES + 1];
    if (!delta_path_decode(logpath, dec, sizeof dec))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s: bad data file path \"%.200s\"", io->location,
                            logpath);
    if (is_uri(dec)) {
        if (strncmp(dec, "file:", 5) == 0 && !io->s3) {
            const char *p = dec + 5;
            if (strncmp(p, "//", 2) == 0) {
                p += 2;
                if (*p != '/') { /* file://host/path: only an empty or local host */
                    if (strncmp(p, "localhost/", 10) != 0)
                        return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                                            "Delta table %s: data file on a remote host: %.200s",
                                            io->location, dec);
                    p += 9;
                }
            }
            *out_local = strdup(p);
            return *out_local ? VT_ERR_OK : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        if (io->s3 && (strncmp(dec, "s3://", 5) == 0 || strncmp(dec, "s3a://", 6) == 0)) {
            /* s3a:// (Hadoop's name for the same store) is read as s3://. */
            char url[VT_DELTA_MAX_PATH_BYTES + 8];
            snprintf(url, sizeof url, "s3://%s", dec + (dec[2] == 'a' ? 6 : 5));
            struct s3_url u;
            enum vt_err rc = s3_url_parse(url, &u, err);
            if (rc != VT_ERR_OK)
                return rc;
            *out_bucket = u.bucket;
            *out_key = u.key;
            return VT_ERR_OK;
        }
        return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                            "Delta table %s: data file URI scheme not readable here: %.200s",
                            io->location, dec);
    }
    if (strstr(dec, "../") || strncmp(dec, "..", 2) == 0 || dec[0] == '/')
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s: data file path escapes the table: %.200s",
                            io->location, dec);
    struct strbuf sb;
    sb_init(&sb, 0);
    if (io->s3) {
        sb_addf(&sb, "%s%s", io->prefix, dec);
        *out_bucket = strdup(io->bucket);
        *out_key = sb_detach(&sb, NULL);
        if (!*out_bucket || !*out_key)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    } else {
        sb_addf(&sb, "%s/%s", io->root, dec);
        *out_local = sb_detach(&sb, NULL);
        if (!*out_local)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return VT_ERR_OK;
}

static char *xstrdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static enum vt_err open_io(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           struct delta_io *io, struct vt_error *err)
{
    memset(io, 0, sizeof *io);
    io->location = ds->location;
    io->ctx = ctx;
    const char *loc = ds->location;
    if (!loc || !*loc)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "dataset %s: source.location is empty",
                            ds->name ? ds->name : "?");
    if (strncmp(loc, "s3://", 5) == 0) {
        io->s3 = true;
        struct s3_url u;
        enum vt_err rc = s3_url_parse(loc, &u, err);
        if (rc != VT_ERR_OK)
            return rc;
        if (s3_glob_literal_prefix_len(u.key) != strlen(u.key)) {
            s3_url_release(&u);
            return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                                "a Delta location is a table prefix, not a glob: %s", loc);
        }
        io->bucket = u.bucket;
        size_t kl = strlen(u.key);
        while (kl > 0 && u.key[kl - 1] == '/')
            u.key[--kl] = '\0';
        struct strbuf p;
        sb_init(&p, 0);
        if (kl)
            sb_addf(&p, "%s/", u.key);
        else
            sb_adds(&p, "");
        io->prefix = sb_detach(&p, NULL);
        free(u.key);
        if (!io->prefix)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        return s3_client_create(&ds->s3, &io->c, err);
    }
    if (strncmp(loc, "file://", 7) == 0)
        loc += 7;
    size_t n = strlen(loc);
    while (n > 1 && loc[n - 1] == '/')
        n--;
    io->root = strndup(loc, n);
    if (!io->root)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    struct stat st;
    if (stat(io->root, &st) != 0)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "Delta table %s: %s", ds->location,
                            strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta table %s is not a directory", ds->location);
    return VT_ERR_OK;
}

/* Reads _last_checkpoint's version (-1 when absent or unreadable: it is only a
 * hint, so a broken one means "list everything"). */
static int64_t last_checkpoint_hint(struct delta_io *io, struct vt_error *err,
                                    enum vt_err *out_rc)
{
    *out_rc = VT_ERR_OK;
    char *buf;
    size_t len;
    bool missing;
    struct vt_error lerr = {0};
    enum vt_err rc =
        io_read_log(io, "_last_checkpoint", VT_DELTA_MAX_LAST_CHECKPOINT_BYTES, &buf, &len,
                    &missing, &lerr);
    if (rc != VT_ERR_OK) {
        if (io->access_denied) {
            *out_rc = vt_error_set(err, rc, "%s", vt_error_message(&lerr));
            return -1;
        }
        log_debug("delta %s: _last_checkpoint unreadable (%s); listing the whole log",
                  io->location, vt_error_message(&lerr));
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

/* ---- the table: log replayed, files located, nothing downloaded --------- */

struct delta_table {
    struct delta_io io;
    struct delta_replay r;
    struct delta_schema schema;
    struct delta_duck *duck;
    int64_t version;
    bool mapped;                        /* columnMapping mode "name" */
    size_t npc;
    const struct delta_field **pfields; /* partition columns, in metaData order */
    const struct delta_add **adds;      /* active files, sorted by path */
    size_t n_adds;
    char **local;                       /* local tables: file paths */
    char **buckets, **keys;             /* S3 tables: objects */
    int64_t *sizes;
    char **pvals;                       /* n_adds * npc normalised texts (NULL = null) */
    int64_t total_bytes;
};

void delta_table_close(struct delta_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_adds; i++) {
        if (t->local)
            free(t->local[i]);
        if (t->buckets)
            free(t->buckets[i]);
        if (t->keys)
            free(t->keys[i]);
        for (size_t k = 0; t->pvals && k < t->npc; k++)
            free(t->pvals[i * t->npc + k]);
    }
    free(t->local);
    free(t->buckets);
    free(t->keys);
    free(t->sizes);
    free(t->pvals);
    free(t->adds);
    free(t->pfields);
    delta_duck_close(t->duck);
    delta_schema_release(&t->schema);
    delta_replay_release(&t->r);
    io_release(&t->io);
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
    delta_replay_init(&t->r);
    enum vt_err rc = open_io(ds, ctx, &t->io, err);
    if (rc != VT_ERR_OK)
        goto done;
    struct delta_io *io = &t->io;

    /* 1. Listing, from the _last_checkpoint hint when there is one. */
    int64_t hint = last_checkpoint_hint(io, err, &rc);
    if (rc != VT_ERR_OK)
        goto done;
    if (hint >= 0) {
        char sa[32];
        snprintf(sa, sizeof sa, "%020lld", (long long)hint);
        rc = io_list_log(io, sa, &list, err);
        if (rc != VT_ERR_OK)
            goto done;
        plan_log(&list, &plan);
        if (plan.cp_version < hint) {
            log_debug("delta %s: _last_checkpoint names version %lld but no complete "
                      "checkpoint is there; listing the whole log",
                      ds->location, (long long)hint);
            log_list_release(&list);
            hint = -1;
        }
    }
    if (hint < 0) {
        rc = io_list_log(io, NULL, &list, err);
        if (rc != VT_ERR_OK)
            goto done;
        plan_log(&list, &plan);
    }
    if (list.n == 0) {
        rc = vt_error_set(err, VT_ERR_SOURCE_EMPTY,
                          "%s has no Delta log (_delta_log/ is missing or empty)", ds->location);
        goto done;
    }
    rc = plan_commits(&list, &plan, ds->location, err);
    if (rc != VT_ERR_OK)
        goto done;
    if (plan.cp_version < 0 && (plan.n_commits == 0 || list.e[plan.commits[0]].version != 0)) {
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "Delta table %s: no checkpoint and no commit 0 in _delta_log",
                          ds->location);
        goto done;
    }
    t->version = plan.version;

    /* 2. Replay: checkpoint, then commits in order. */
    if (plan.cp_version >= 0) {
        rc = delta_duck_open(&t->duck, err);
        if (rc == VT_ERR_OK)
            rc = load_checkpoint(io, t->duck, &list, &plan, &t->r, err);
        if (rc != VT_ERR_OK)
            goto done;
    }
    for (size_t i = 0; i < plan.n_commits; i++) {
        const struct log_entry *e = &list.e[plan.commits[i]];
        char *buf;
        size_t len;
        bool missing;
        rc = io_read_log(io, e->name, VT_DELTA_MAX_LOG_FILE_BYTES, &buf, &len, &missing, err);
        if (rc != VT_ERR_OK)
            goto done;
        if (missing) {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                              "Delta table %s: commit %s disappeared while reading the log "
                              "(log cleanup?); retry",
                              ds->location, e->name);
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
    rc = delta_replay_check_protocol(&t->r, ds->location, err);
    if (rc != VT_ERR_OK)
        goto done;
    rc = delta_schema_parse(t->r.schema_string, strlen(t->r.schema_string), &t->schema, err);
    if (rc != VT_ERR_OK)
        goto done;
    t->mapped = t->r.column_mapping_mode && strcmp(t->r.column_mapping_mode, "name") == 0;
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
                              ds->location, t->r.partition_columns[k]);
            goto done;
        }
        if (t->pfields[k]->type->kind != DELTA_T_PRIMITIVE) {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                              "Delta table %s: partition column \"%.100s\" has a nested type",
                              ds->location, t->pfields[k]->name);
            goto done;
        }
    }

    /* 4. Active files and where they live. */
    rc = delta_replay_active(&t->r, &t->adds, &t->n_adds, err);
    if (rc != VT_ERR_OK)
        goto done;
    if (t->n_adds == 0) {
        rc = vt_error_set(err, VT_ERR_SOURCE_EMPTY,
                          "Delta table %s has no data files at version %lld (empty table)",
                          ds->location, (long long)t->version);
        goto done;
    }
    size_t n = t->n_adds;
    t->local = calloc(n, sizeof *t->local);
    t->buckets = calloc(n, sizeof *t->buckets);
    t->keys = calloc(n, sizeof *t->keys);
    t->sizes = calloc(n, sizeof *t->sizes);
    t->pvals = calloc(n * (t->npc ? t->npc : 1), sizeof *t->pvals);
    if (!t->local || !t->buckets || !t->keys || !t->sizes || !t->pvals) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        const struct delta_add *a = t->adds[i];
        rc = locate_data_file(io, a->path, &t->local[i], &t->buckets[i], &t->keys[i], err);
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
    if (t->io.access_denied && out_access_denied)
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

/* Local paths for the data files: checked in place (local tables) or fetched
 * (S3: temp files for a resident build, the object cache for a lazy view). */
static enum vt_err materialize_files(struct delta_table *t, const struct vt_dataset_config *ds,
                                     const struct source_context *ctx, char **paths,
                                     struct source_snapshot *out, struct vt_error *err)
{
    size_t n = t->n_adds;
    enum vt_err rc = VT_ERR_OK;
    if (!t->io.s3) {
        for (size_t i = 0; i < n; i++) {
            struct stat st;
            if (stat(t->local[i], &st) != 0)
                return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                    "Delta table %s: data file %s is missing (%s)", ds->location,
                                    t->local[i], strerror(errno));
            if (t->sizes[i] < 0) {
                t->sizes[i] = st.st_size;
                t->total_bytes += st.st_size;
            }
            paths[i] = strdup(t->local[i]);
            if (!paths[i])
                return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        return VT_ERR_OK;
    }
    struct s3_outcome oc = {0};
    if (ctx && ctx->for_lazy) {
        struct s3_cache_item *items = calloc(n, sizeof *items);
        char **tags = calloc(n, sizeof *tags);
        if (!items || !tags) {
            free(items);
            free(tags);
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
            char tag[48];
            /* Data files are immutable by protocol: size stands in for the ETag. */
            snprintf(tag, sizeof tag, "size:%lld", (long long)t->sizes[i]);
            tags[i] = strdup(tag);
            if (!tags[i])
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            items[i].bucket = t->buckets[i];
            items[i].key = t->keys[i];
            items[i].tag = tags[i];
            items[i].size = t->sizes[i];
        }
        if (rc == VT_ERR_OK) {
            const char *cdir = ctx->cache_dir;
            char fallback[4096];
            if (!cdir || !*cdir) {
                snprintf(fallback, sizeof fallback, "%s/vitrine-s3-cache", source_temp_dir(ctx));
                cdir = fallback;
            }
            rc = s3_cache_fetch(t->io.c, cdir, ctx->cache_max_bytes, ds->name ? ds->name : "",
                                items, n, &oc, err);
        }
        for (size_t i = 0; i < n; i++) {
            free(tags[i]);
            paths[i] = rc == VT_ERR_OK ? items[i].path : NULL;
        }
        free(tags);
        free(items);
    } else {
        struct s3_download *jobs = calloc(n, sizeof *jobs);
        out->temp_files = calloc(n, sizeof *out->temp_files);
        if (!jobs || !out->temp_files) {
            free(jobs);
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
            paths[i] = temp_name(ctx, "delta", i);
            out->temp_files[i] = xstrdup_or_null(paths[i]);
            if (!paths[i] || !out->temp_files[i])
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            out->n_temp_files = i + 1;
            jobs[i].bucket = t->buckets[i];
            jobs[i].key = t->keys[i];
            jobs[i].path = paths[i];
        }
        if (rc == VT_ERR_OK)
            rc = s3_download_many(t->io.c, jobs, n, &oc, err);
        free(jobs);
    }
    note_outcome(&t->io, &oc);
    return rc;
}

enum vt_err source_delta_resolve(const struct vt_dataset_config *ds,
                                 const struct source_context *ctx, struct source_snapshot *out,
                                 bool *out_access_denied, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->kind = CFG_SOURCE_DELTA;
    struct delta_table *t = NULL;
    struct delta_probe probe = {0};
    struct delta_sql_column *cols = NULL;
    char **paths = NULL;
    size_t n = 0;
    enum vt_err rc = delta_table_open(ds, ctx, &t, out_access_denied, err);
    if (rc != VT_ERR_OK)
        return rc;
    n = t->n_adds;
    size_t npc = t->npc;
    paths = calloc(n, sizeof *paths);
    out->files = calloc(n, sizeof *out->files);
    if (!paths || !out->files) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    out->n_files = n;
    rc = materialize_files(t, ds, ctx, paths, out, err);
    if (rc != VT_ERR_OK)
        goto done;
    out->total_bytes = t->total_bytes;

    /* Probe the files' columns and build the SELECT. */
    if (!t->duck) {
        rc = delta_duck_open(&t->duck, err);
        if (rc != VT_ERR_OK)
            goto done;
    }
    rc = delta_duck_probe(t->duck, (const char *const *)paths, n, &probe, err);
    if (rc != VT_ERR_OK)
        goto done;
    const struct delta_schema *schema = &t->schema;
    cols = calloc(schema->n ? schema->n : 1, sizeof *cols);
    out->schema_names = calloc(schema->n ? schema->n : 1, sizeof *out->schema_names);
    out->schema_types = calloc(schema->n ? schema->n : 1, sizeof *out->schema_types);
    out->partition_columns = calloc(npc ? npc : 1, sizeof *out->partition_columns);
    out->partition_types = calloc(npc ? npc : 1, sizeof *out->partition_types);
    if (!cols || !out->schema_names || !out->schema_types || !out->partition_columns ||
        !out->partition_types) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t c = 0; c < schema->n && rc == VT_ERR_OK; c++) {
        const struct delta_field *f = &schema->fields[c];
        cols[c].name = f->name;
        cols[c].partition_index = -1;
        for (size_t k = 0; k < npc; k++) {
            if (t->pfields[k] == f) {
                cols[c].partition_index = (int)k;
                cols[c].partition_type = f->type;
            }
        }
        if (cols[c].partition_index < 0)
            cols[c].field = f;
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
    if (rc != VT_ERR_OK)
        goto done;
    struct delta_sql_input in = {
        .paths = (const char *const *)paths,
        .n_paths = n,
        .columns = cols,
        .n_columns = schema->n,
        .n_partitions = npc,
        .partition_values = (const char *const *)t->pvals,
        .probe = &probe,
    };
    rc = delta_sql_build_string(&in, &out->select_sql, err);
    if (rc != VT_ERR_OK)
        goto done;
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        out->files[i].path = paths[i];
        out->files[i].size = t->sizes[i];
        paths[i] = NULL;
        if (npc) {
            out->files[i].partition_values = calloc(npc, sizeof(char *));
            if (!out->files[i].partition_values) {
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            for (size_t k = 0; k < npc; k++) {
                out->files[i].partition_values[k] = t->pvals[i * npc + k];
                t->pvals[i * npc + k] = NULL;
            }
        }
    }
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)t->version);
    out->version = strdup(vbuf);
    if (rc == VT_ERR_OK && (!out->version || !out->select_sql))
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (rc == VT_ERR_OK)
        log_debug("delta %s: version %lld, %zu files, %lld bytes", ds->location,
                  (long long)t->version, n, (long long)t->total_bytes);
done:
    if (t->io.access_denied && out_access_denied)
        *out_access_denied = true;
    if (paths) {
        for (size_t i = 0; i < n; i++)
            free(paths[i]);
        free(paths);
    }
    free(cols);
    delta_probe_release(&probe);
    delta_table_close(t);
    if (rc != VT_ERR_OK)
        delta_snapshot_discard(out);
    return rc;
}
