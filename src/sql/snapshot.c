/*
 * A checked statement and the generations it reads (sql.h).
 */
#include <stdlib.h>

#include "catalog/catalog.h"
#include "sql/sql.h"

static bool is_dataset(void *ctx, const char *name)
{
    return cat_has_dataset(ctx, name);
}

void sql_snapshot_release(struct sql_snapshot *s)
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

enum vt_err sql_snapshot_take(struct cat_catalog *cat, duckdb_connection con, const char *sql,
                              int64_t deadline_ms, struct sql_snapshot *out,
                              struct vt_error *err)
{
    return sql_snapshot_take_opts(cat, con, sql, NULL, deadline_ms, out, err);
}

enum vt_err sql_snapshot_take_opts(struct cat_catalog *cat, duckdb_connection con,
                                   const char *sql, const struct sql_gate_options *opts,
                                   int64_t deadline_ms, struct sql_snapshot *out,
                                   struct vt_error *err)
{
    sql_snapshot_release(out);
    struct sql_checked chk;
    if (sql_gate_check_opts(con, sql, opts, is_dataset, cat, &chk, err) != VT_ERR_OK)
        return err->code;
    out->reads_catalog = chk.reads_catalog;
    out->rewritten = chk.rewritten;
    chk.rewritten = NULL;
    out->lookup = chk.lookup;
    chk.lookup = NULL;
    enum vt_err rc = sql_snapshot_pin(cat, chk.depends_on, chk.n_depends_on, deadline_ms, out,
                                      err);
    sql_checked_release(&chk);
    return rc;
}

enum vt_err sql_snapshot_pin(struct cat_catalog *cat, char *const *names, size_t n,
                             int64_t deadline_ms, struct sql_snapshot *out, struct vt_error *err)
{
    if (n > SQL_MAX_DATASETS) {
        sql_snapshot_release(out);
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                            "the statement reads %zu datasets; at most %d are allowed", n,
                            SQL_MAX_DATASETS);
    }
    for (size_t i = 0; i < n; i++) {
        struct exec_pin *p = &out->pins[out->n];
        if (exec_pin(cat, names[i], deadline_ms, p, err) != VT_ERR_OK) {
            sql_snapshot_release(out);
            return err->code;
        }
        out->views[out->n].name = cat_dataset_name(p->ds);
        out->views[out->n].relation = p->gen->relation;
        out->n++;
    }
    return VT_ERR_OK;
}
