/*
 * A checked statement and the generations it reads (exec.h, "snapshots"):
 * the SQL gate (src/sql) on the statement, then a pin on each dataset it
 * reads.
 *
 * The gate's answer depends on the statement's text and on the set of
 * registered names only, so each thread remembers the last statements it let
 * through (text -> datasets read) while the catalog's names epoch stays the
 * same: a statement sent again (a dashboard, a pooled client's prepared
 * query) skips DuckDB's serializer and the JSON walk, which are about a
 * quarter of a /sql point query's instructions (bench/callgrind.py
 * sql_point). A refused statement is checked every time, and so is any
 * statement checked with gate options (pgwire's PostgreSQL names): only the
 * plain gate of /sql, MCP and saved queries is remembered.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "catalog/catalog.h"
#include "exec/exec.h"

#define MEMO_ENTRIES 64

struct memo {
    uint64_t hash;
    char *sql;
    uint64_t epoch;
    struct sql_checked chk;
    uint64_t used;
};

struct memo_table {
    struct memo e[MEMO_ENTRIES];
    size_t n;
    uint64_t tick;
};

static pthread_key_t memo_key;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;

static void memo_drop(struct memo *m)
{
    free(m->sql);
    sql_checked_release(&m->chk);
    memset(m, 0, sizeof *m);
}

static void memo_free(void *p)
{
    struct memo_table *t = p;
    for (size_t i = 0; i < t->n; i++)
        memo_drop(&t->e[i]);
    free(t);
}

static void memo_key_init(void)
{
    pthread_key_create(&memo_key, memo_free);
}

static struct memo_table *memo_table(void)
{
    pthread_once(&memo_once, memo_key_init);
    struct memo_table *t = pthread_getspecific(memo_key);
    if (!t && (t = calloc(1, sizeof *t)) != NULL)
        pthread_setspecific(memo_key, t);
    return t;
}

void exec_snapshot_thread_release(void)
{
    pthread_once(&memo_once, memo_key_init);
    struct memo_table *t = pthread_getspecific(memo_key);
    if (t) {
        pthread_setspecific(memo_key, NULL);
        memo_free(t);
    }
}

static int copy_checked(struct sql_checked *dst, const struct sql_checked *src)
{
    memset(dst, 0, sizeof *dst);
    dst->depends_on = calloc(src->n_depends_on ? src->n_depends_on : 1, sizeof *dst->depends_on);
    if (!dst->depends_on)
        return -1;
    for (size_t i = 0; i < src->n_depends_on; i++) {
        if (!(dst->depends_on[i] = strdup(src->depends_on[i]))) {
            sql_checked_release(dst);
            return -1;
        }
        dst->n_depends_on++;
    }
    return 0;
}

/* The gate, or its remembered answer (the plain gate only: with options the
 * answer also carries a rewritten statement, and pgwire keeps its own
 * prepared statements, so the gate runs every time). */
static enum vt_err checked(struct cat_catalog *cat, duckdb_connection con, const char *sql,
                           const struct sql_gate_options *opts, struct sql_checked *out,
                           struct vt_error *err);

static bool is_dataset(void *ctx, const char *name)
{
    return cat_has_dataset(ctx, name);
}

void exec_snapshot_release(struct exec_snapshot *s)
{
    for (size_t i = 0; i < s->n; i++)
        exec_unpin(&s->pins[i]);
    s->n = 0;
    free(s->rewritten);
    s->rewritten = NULL;
    s->reads_catalog = false;
    sql_lookup_free(s->lookup);
    s->lookup = NULL;
}

enum vt_err exec_snapshot_take(struct cat_catalog *cat, duckdb_connection con, const char *sql,
                              int64_t deadline_ms, struct exec_snapshot *out,
                              struct vt_error *err)
{
    return exec_snapshot_take_opts(cat, con, sql, NULL, deadline_ms, out, err);
}

enum vt_err exec_snapshot_take_opts(struct cat_catalog *cat, duckdb_connection con,
                                   const char *sql, const struct sql_gate_options *opts,
                                   int64_t deadline_ms, struct exec_snapshot *out,
                                   struct vt_error *err)
{
    exec_snapshot_release(out);
    struct sql_checked chk;
    if (checked(cat, con, sql, opts, &chk, err) != VT_ERR_OK)
        return err->code;
    out->reads_catalog = chk.reads_catalog;
    out->rewritten = chk.rewritten;
    chk.rewritten = NULL;
    out->lookup = chk.lookup;
    chk.lookup = NULL;
    enum vt_err rc = exec_snapshot_pin(cat, chk.depends_on, chk.n_depends_on, deadline_ms, out,
                                      err);
    sql_checked_release(&chk);
    return rc;
}

enum vt_err exec_snapshot_pin(struct cat_catalog *cat, char *const *names, size_t n,
                             int64_t deadline_ms, struct exec_snapshot *out, struct vt_error *err)
{
    if (n > EXEC_MAX_DATASETS) {
        exec_snapshot_release(out);
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                            "the statement reads %zu datasets; at most %d are allowed", n,
                            EXEC_MAX_DATASETS);
    }
    for (size_t i = 0; i < n; i++) {
        struct exec_pin *p = &out->pins[out->n];
        if (exec_pin(cat, names[i], deadline_ms, p, err) != VT_ERR_OK) {
            exec_snapshot_release(out);
            return err->code;
        }
        /* A statement reads the generation through its whole view: a lazy
         * S3 one has its objects made local first (and held) for it. */
        if (cat_generation_read_all(p->gen, deadline_ms, &p->reads, err) != VT_ERR_OK) {
            exec_unpin(p);
            exec_snapshot_release(out);
            return err->code;
        }
        out->views[out->n].name = cat_dataset_name(p->ds);
        out->views[out->n].relation = p->gen->relation;
        out->n++;
    }
    return VT_ERR_OK;
}

static enum vt_err checked(struct cat_catalog *cat, duckdb_connection con, const char *sql,
                           const struct sql_gate_options *opts, struct sql_checked *out,
                           struct vt_error *err)
{
    if (opts)
        return sql_gate_check_opts(con, sql, opts, is_dataset, cat, out, err);
    uint64_t epoch = cat_names_epoch(cat);
    struct memo_table *t = memo_table();
    uint64_t h = XXH3_64bits(sql, strlen(sql));
    for (size_t i = 0; t && i < t->n; i++) {
        struct memo *m = &t->e[i];
        if (m->hash != h || m->epoch != epoch || strcmp(m->sql, sql) != 0)
            continue;
        if (copy_checked(out, &m->chk) != 0)
            break;
        m->used = ++t->tick;
        return VT_ERR_OK;
    }
    enum vt_err rc = sql_gate_check(con, sql, is_dataset, cat, out, err);
    /* The epoch read before the check: a name that changed meanwhile makes
     * this entry stale at once, never wrong. */
    if (rc != VT_ERR_OK || !t)
        return rc;
    size_t slot = t->n;
    if (slot == MEMO_ENTRIES) {
        slot = 0;
        for (size_t i = 1; i < t->n; i++)
            if (t->e[i].used < t->e[slot].used || t->e[i].epoch != epoch)
                slot = i;
        memo_drop(&t->e[slot]);
    }
    struct memo *m = &t->e[slot];
    m->sql = strdup(sql);
    if (!m->sql || copy_checked(&m->chk, out) != 0) {
        memo_drop(m);
        return rc;
    }
    m->hash = h;
    m->epoch = epoch;
    m->used = ++t->tick;
    if (slot == t->n)
        t->n++;
    return rc;
}

enum vt_err exec_sql_check(struct cat_catalog *cat, duckdb_connection con, const char *sql,
                           struct vt_error *err)
{
    struct sql_checked chk;
    if (checked(cat, con, sql, NULL, &chk, err) != VT_ERR_OK)
        return err->code;
    sql_checked_release(&chk);
    return VT_ERR_OK;
}
