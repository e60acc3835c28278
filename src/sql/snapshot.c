/*
 * A checked statement and the generations it reads (sql.h).
 */
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
}

enum vt_err sql_snapshot_take(struct cat_catalog *cat, duckdb_connection con, const char *sql,
                              int64_t deadline_ms, struct sql_snapshot *out,
                              struct vt_error *err)
{
    sql_snapshot_release(out);
    struct sql_checked chk;
    if (sql_gate_check(con, sql, is_dataset, cat, &chk, err) != VT_ERR_OK)
        return err->code;
    if (chk.n_depends_on > SQL_MAX_DATASETS) {
        sql_checked_release(&chk);
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                            "the statement reads %zu datasets; at most %d are allowed",
                            chk.n_depends_on, SQL_MAX_DATASETS);
    }
    for (size_t i = 0; i < chk.n_depends_on; i++) {
        struct exec_pin *p = &out->pins[out->n];
        if (exec_pin(cat, chk.depends_on[i], deadline_ms, p, err) != VT_ERR_OK) {
            sql_checked_release(&chk);
            sql_snapshot_release(out);
            return err->code;
        }
        out->views[out->n].name = cat_dataset_name(p->ds);
        out->views[out->n].relation = p->gen->relation;
        out->n++;
    }
    sql_checked_release(&chk);
    return VT_ERR_OK;
}
