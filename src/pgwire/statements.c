/*
 * The simple Query protocol (one or more statements in one message, each
 * with its RowDescription, rows and tag, ReadyForQuery at the end) and the
 * statements a session answers without the gate: transactions (no-ops over
 * read-only snapshots that keep PostgreSQL's status 'I', 'T', 'E', including
 * "current transaction is aborted" after an error), savepoints, DISCARD ALL,
 * DEALLOCATE, RESET/SET/SHOW (settings.c), UNLISTEN.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgwire/pgwire_internal.h"
#include "util/timeutil.h"

static void notice(struct pgw_session *s, const char *state, const char *msg)
{
    pgw_write_error(s->out, 'N', "WARNING", state, msg, NULL, NULL);
}

enum vt_err pgw_refuse_set(struct pgw_session *s, const char *text, size_t len,
                           const struct pgw_stmt *st, bool extended, struct vt_error *err)
{
    char *q = strndup(text, len);
    struct sql_checked chk;
    if (!q)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    struct sql_gate_options o = pgw_gate_options(s, extended);
    if (sql_gate_check_opts(s->con, q, &o, pgw_is_dataset, s->cfg.catalog, &chk, err) ==
        VT_ERR_OK) {
        sql_checked_release(&chk); /* never: SET is not a SELECT */
        vt_error_set(err, VT_ERR_SQL_NOT_READ_ONLY, "SET %s is not allowed", st->name);
    } else if (err->code == VT_ERR_SQL_NOT_READ_ONLY) {
        /* The gate's words, "only one read-only SELECT ... is allowed", read
         * as if the SET had been taken for something else; a syntax error
         * keeps the gate's message and SQLSTATE. */
        vt_error_clear(err);
        vt_error_set(err, VT_ERR_SQL_NOT_READ_ONLY,
                     "parameter \"%.64s\" cannot be set: vitrine is read-only and takes the "
                     "settings SHOW ALL lists",
                     st->name);
    }
    free(q);
    return err->code;
}

/* A simple-Query SQL statement, or the query of COPY ... TO STDOUT or of
 * EXPLAIN (st: the statement; NULL for plain SQL). */
static bool simple_sql(struct pgw_session *s, const char *text, size_t len,
                       const struct pgw_stmt *st)
{
    struct vt_error err = {0};
    bool copy = st && st->kind == PGW_STMT_COPY_OUT;
    bool explain = st && st->kind == PGW_STMT_EXPLAIN;
    char *owned = strndup(text, len);
    char *norm = owned ? pgw_normalize(owned, len) : NULL;
    const char *sql = norm ? norm : owned;
    if (!sql) {
        free(owned);
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        pgw_fail(s, &err);
        return false;
    }
    int64_t deadline = pgw_statement_deadline(s);
    pgw_start_statement(s, deadline);
    struct exec_snapshot snap;
    memset(&snap, 0, sizeof snap);
    bool ok = false;
    uint64_t rows = 0;
    if (pgw_shaped_snapshot(s, sql, deadline ? deadline : time_mono_ms() + 60000, &snap,
                            &err) != VT_ERR_OK ||
        (snap.reads_catalog && pgw_sync_catalog(s, &err) != VT_ERR_OK)) {
        pgw_fail(s, &err);
    } else if (explain) {
        ok = pgw_explain(s, snap.rewritten ? snap.rewritten : sql, st->analyze, &snap, NULL, 0,
                         true);
    } else if (!copy && pgw_fast_lookup(s, snap.lookup, &snap, NULL, 0, true, NULL, 0, &rows, &ok)) {
        if (ok) {
            char tag[48];
            snprintf(tag, sizeof tag, "SELECT %" PRIu64, rows);
            pgw_write_command_complete(s->out, tag);
        }
    } else {
        struct pgw_sink k = {.s = s, .mode = PGW_SINK_SIMPLE};
        if (copy)
            pgw_copy_sink(&k, st);
        ok = pgw_run_plan(s, snap.rewritten ? snap.rewritten : sql, &snap, NULL, 0, true, &k);
        if (ok) {
            char tag[48];
            if (copy) {
                pgw_copy_done(&k);
                snprintf(tag, sizeof tag, "COPY %" PRIu64, k.sent);
            } else {
                snprintf(tag, sizeof tag, "SELECT %" PRIu64, k.sent);
            }
            pgw_write_command_complete(s->out, tag);
        }
    }
    pgw_end_statement(s);
    exec_snapshot_release(&snap);
    free(norm);
    free(owned);
    return ok;
}

static bool savepoint_known(struct pgw_session *s, const char *name, size_t *out_i)
{
    for (size_t i = s->n_savepoints; i-- > 0;)
        if (!strcmp(s->savepoints[i], name)) {
            *out_i = i;
            return true;
        }
    return false;
}

bool pgw_session_statement(struct pgw_session *s, const struct pgw_stmt *st, bool describe,
                              const char *text, size_t len)
{
    struct vt_error err = {0};
    switch (st->kind) {
    case PGW_STMT_BEGIN:
        if (s->tx != 'I')
            notice(s, "25001", "there is already a transaction in progress");
        else
            s->tx = 'T';
        s->n_savepoints = 0;
        pgw_write_command_complete(s->out, "BEGIN");
        return true;
    case PGW_STMT_COMMIT:
        if (s->tx == 'I')
            notice(s, "25P01", "there is no transaction in progress");
        pgw_write_command_complete(s->out, s->tx == 'E' ? "ROLLBACK" : "COMMIT");
        s->tx = 'I';
        s->n_savepoints = 0;
        return true; /* portals close at the end of the query or at Sync */
    case PGW_STMT_ROLLBACK:
        if (s->tx == 'I')
            notice(s, "25P01", "there is no transaction in progress");
        pgw_write_command_complete(s->out, "ROLLBACK");
        s->tx = 'I';
        s->n_savepoints = 0;
        return true; /* portals close at the end of the query or at Sync */
    case PGW_STMT_SAVEPOINT:
        if (s->tx == 'I') {
            pgw_write_error(s->out, 'E', "ERROR", "25P01",
                            "SAVEPOINT can only be used in transaction blocks", NULL, NULL);
            return false;
        }
        if (s->n_savepoints == sizeof s->savepoints / sizeof s->savepoints[0]) {
            vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED, "too many savepoints");
            pgw_fail(s, &err);
            return false;
        }
        snprintf(s->savepoints[s->n_savepoints++], PGW_NAME_MAX, "%s", st->name);
        pgw_write_command_complete(s->out, "SAVEPOINT");
        return true;
    case PGW_STMT_RELEASE:
    case PGW_STMT_ROLLBACK_TO: {
        size_t at;
        if (s->tx == 'I' || !savepoint_known(s, st->name, &at)) {
            pgw_write_error(s->out, 'E', "ERROR", "3B001",
                            s->tx == 'I' ? "savepoints can only be used in transaction blocks"
                                         : "savepoint does not exist",
                            NULL, NULL);
            if (s->tx == 'T')
                s->tx = 'E';
            return false;
        }
        if (st->kind == PGW_STMT_RELEASE) {
            s->n_savepoints = at;
            pgw_write_command_complete(s->out, "RELEASE");
        } else {
            s->n_savepoints = at + 1;
            s->tx = 'T'; /* back before the error */
            pgw_write_command_complete(s->out, "ROLLBACK");
        }
        return true;
    }
    case PGW_STMT_DISCARD_ALL:
        if (s->tx != 'I') {
            pgw_write_error(s->out, 'E', "ERROR", "25001",
                            "DISCARD ALL cannot run inside a transaction block", NULL, NULL);
            return false;
        }
        pgw_drop_statements(s); /* portals close at the end of the query or at Sync */
        for (size_t i = s->n_portals; i-- > 0;) { /* and WITH HOLD cursors now */
            if (!s->portals[i]->hold)
                continue;
            pgw_portal_free(s, s->portals[i]);
            s->portals[i] = s->portals[--s->n_portals];
        }
        pgw_setting_reset(s, NULL, &err);
        pgw_write_command_complete(s->out, "DISCARD ALL");
        return true;
    case PGW_STMT_DEALLOCATE:
        if (st->all) {
            pgw_drop_statements(s);
            pgw_write_command_complete(s->out, "DEALLOCATE ALL");
            return true;
        } else {
            size_t at;
            struct pgw_prepared *p = *st->name ? pgw_find_statement(s, st->name, &at) : NULL;
            if (!p) {
                vt_error_set(&err, VT_ERR_PG_NO_STATEMENT,
                             "prepared statement \"%s\" does not exist", st->name);
                pgw_fail(s, &err);
                return false;
            }
            s->stmts[at] = s->stmts[--s->n_stmts];
            pgw_prepared_put(s, p);
            pgw_write_command_complete(s->out, "DEALLOCATE");
            return true;
        }
    case PGW_STMT_RESET:
        if (pgw_setting_reset(s, st->all ? NULL : st->name, &err) != VT_ERR_OK) {
            pgw_fail(s, &err);
            return false;
        }
        pgw_write_command_complete(s->out, "RESET");
        return true;
    case PGW_STMT_LISTEN: /* no notifications are ever sent */
        pgw_write_command_complete(s->out, "LISTEN");
        return true;
    case PGW_STMT_UNLISTEN:
        pgw_write_command_complete(s->out, "UNLISTEN");
        return true;
    case PGW_STMT_FETCH:
    case PGW_STMT_MOVE:
        return pgw_cursor_fetch(s, st, describe, NULL, 0);
    case PGW_STMT_CLOSE:
        return pgw_cursor_close(s, st);
    case PGW_STMT_SET_TRANSACTION:
        pgw_write_command_complete(s->out, "SET");
        return true;
    case PGW_STMT_SET:
        if (!pgw_setting_settable(st->name)) {
            pgw_refuse_set(s, text, len, st, false, &err);
            pgw_fail(s, &err);
            return false;
        }
        if (pgw_setting_set(s, st, &err) != VT_ERR_OK) {
            pgw_fail(s, &err);
            return false;
        }
        pgw_write_command_complete(s->out, "SET");
        return true;
    case PGW_STMT_SHOW:
        return pgw_show(s, st, describe);
    default:
        return true;
    }
}

bool pgw_allowed_in_failed_tx(enum pgw_stmt_kind k)
{
    return k == PGW_STMT_COMMIT || k == PGW_STMT_ROLLBACK || k == PGW_STMT_ROLLBACK_TO;
}

void pgw_tx_aborted(struct pgw_session *s)
{
    struct vt_error err = {0};
    vt_error_set(&err, VT_ERR_PG_TX_ABORTED, NULL);
    pgw_error_out(s->out, &err, "ERROR");
}

/* ------------------------------------------------------------ simple Query */

void pgw_simple_query(struct pgw_session *s, const char *sql, size_t len)
{
    /* The unnamed statement and portal end with a simple Query. */
    pgw_prepared_put(s, s->unnamed);
    s->unnamed = NULL;
    pgw_portal_free(s, s->unnamed_portal);
    s->unnamed_portal = NULL;
    struct pgw_span spans[64];
    size_t n = pgw_split(sql, len, spans, 64);
    struct pgw_span *all = spans;
    if (n > 64) {
        if (n > VT_PGWIRE_MAX_STATEMENTS_PER_QUERY) {
            struct vt_error err = {0};
            vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED,
                         "a query string may hold at most %d statements",
                         VT_PGWIRE_MAX_STATEMENTS_PER_QUERY);
            pgw_fail(s, &err);
            pgw_write_ready(s->out, s->tx);
            return;
        }
        all = malloc(n * sizeof *all);
        if (!all) {
            struct vt_error err = {0};
            vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
            pgw_fail(s, &err);
            pgw_write_ready(s->out, s->tx);
            return;
        }
        pgw_split(sql, len, all, n);
    }
    if (n == 0)
        pgw_write_empty(s->out, 'I');
    for (size_t i = 0; i < n; i++) {
        const char *text = sql + all[i].pos;
        struct pgw_stmt st;
        struct vt_error err = {0};
        if (pgw_stmt_read(text, all[i].len, &st, &err) != VT_ERR_OK) {
            pgw_fail(s, &err);
            break;
        }
        bool ok;
        if (s->tx == 'E' && !pgw_allowed_in_failed_tx(st.kind)) {
            pgw_tx_aborted(s);
            ok = false;
        } else if (st.kind == PGW_STMT_SQL) {
            ok = simple_sql(s, text, all[i].len, NULL);
        } else if (st.kind == PGW_STMT_COPY_OUT || st.kind == PGW_STMT_EXPLAIN) {
            ok = simple_sql(s, st.query, strlen(st.query), &st);
        } else if (st.kind == PGW_STMT_DECLARE) {
            ok = pgw_cursor_declare(s, &st, NULL);
        } else {
            ok = pgw_session_statement(s, &st, true, text, all[i].len);
        }
        pgw_stmt_release(&st);
        if (!ok || s->conn->close_after_job || pgw_flush_if_full(s) != 0)
            break;
    }
    if (all != spans)
        free(all);
    if (s->tx == 'I')
        pgw_close_portals(s, false);
    if (!s->conn->close_after_job)
        pgw_write_ready(s->out, s->tx);
    atomic_store(&s->conn->cancel_requested, false);
    atomic_store(&s->conn->job.cancelled, atomic_load(&s->conn->peer_gone));
}

