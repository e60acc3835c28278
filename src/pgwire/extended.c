/*
 * The extended query protocol: Parse runs the gate (errors come at Parse, as
 * in PostgreSQL) and keeps the checked statement; Bind pins the datasets for
 * the portal (Describe and Execute of a portal see one snapshot) and decodes
 * the parameters; Describe of a portal is answered by the RowDescription of
 * the result itself when the Execute follows, so types are exact; Execute
 * with a row limit sends that many rows and holds the rest, bounded, for the
 * next Execute (PortalSuspended); Close and Sync. After an error everything
 * up to the next Sync is skipped.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgwire/pgwire_internal.h"
#include "query/query.h"
#include "util/timeutil.h"

static void ext_error(struct pgw_session *s, const struct vt_error *err)
{
    pgw_fail(s, err);
    s->skip_to_sync = true;
}

static bool session_room(struct pgw_session *s, size_t more, struct vt_error *err)
{
    if (s->mem + more > VT_PGWIRE_MAX_SESSION_BYTES) {
        vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                     "this connection holds too much in prepared statements and portals "
                     "(at most %d MiB); close some",
                     VT_PGWIRE_MAX_SESSION_BYTES / (1024 * 1024));
        return false;
    }
    return true;
}

/* Statements whose query goes through the gate and reads datasets. */
static bool runs_sql(enum pgw_stmt_kind k)
{
    return k == PGW_STMT_SQL || k == PGW_STMT_COPY_OUT || k == PGW_STMT_EXPLAIN ||
           k == PGW_STMT_DECLARE;
}

/* Statements whose portal pins the datasets at Bind (a cursor pins its own
 * when it is declared). */
static bool pins(enum pgw_stmt_kind k)
{
    return k == PGW_STMT_SQL || k == PGW_STMT_COPY_OUT || k == PGW_STMT_EXPLAIN;
}

void pgw_on_parse(struct pgw_session *s, const unsigned char *body, size_t len)
{
    struct vt_error err = {0};
    struct pgw_parse_msg m;
    if (pgw_parse_parse(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    struct pgw_prepared *old = pgw_find_statement(s, m.name, NULL);
    if (*m.name && old) {
        vt_error_set(&err, VT_ERR_PG_DUPLICATE_STATEMENT,
                     "prepared statement \"%s\" already exists", m.name);
        ext_error(s, &err);
        return;
    }
    if (*m.name && s->n_stmts == VT_PGWIRE_MAX_STATEMENTS) {
        vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED,
                     "too many prepared statements on this connection (at most %d)",
                     VT_PGWIRE_MAX_STATEMENTS);
        ext_error(s, &err);
        return;
    }
    size_t mem = sizeof(struct pgw_prepared) + strlen(m.name) + 2 * m.query_len + 4 * m.nparams + 64;
    if (!session_room(s, mem, &err)) {
        ext_error(s, &err);
        return;
    }
    struct pgw_span spans[2];
    size_t n = pgw_split(m.query, m.query_len, spans, 2);
    if (n > 1) {
        vt_error_set(&err, VT_ERR_SQL_SYNTAX,
                     "cannot insert multiple commands into a prepared statement");
        ext_error(s, &err);
        return;
    }
    struct pgw_prepared *p = calloc(1, sizeof *p);
    if (!p) {
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        ext_error(s, &err);
        return;
    }
    p->refs = 1;
    p->mem = mem;
    s->mem += mem;
    p->name = strdup(m.name);
    p->noids = m.nparams;
    p->oids = calloc(m.nparams ? m.nparams : 1, sizeof *p->oids);
    for (size_t i = 0; p->oids && i < m.nparams; i++) {
        const unsigned char *o = m.oids + 4 * i;
        p->oids[i] = (uint32_t)o[0] << 24 | (uint32_t)o[1] << 16 | (uint32_t)o[2] << 8 | o[3];
    }
    const char *text = n ? m.query + spans[0].pos : "";
    size_t tlen = n ? spans[0].len : 0;
    bool ok = p->name && p->oids;
    if (ok && pgw_stmt_read(text, tlen, &p->st, &err) != VT_ERR_OK)
        ok = false;
    else if (!ok)
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
    if (ok && runs_sql(p->st.kind)) {
        /* The query of COPY, EXPLAIN and DECLARE is checked at Parse too:
         * errors come here, as in PostgreSQL. */
        const char *q = p->st.kind == PGW_STMT_SQL ? text : p->st.query;
        size_t qlen = p->st.kind == PGW_STMT_SQL ? tlen : strlen(q);
        if (pgw_prepared_check(s, p, q, qlen, true, &err) != VT_ERR_OK)
            ok = false;
    } else if (ok && p->st.kind == PGW_STMT_SET && !pgw_setting_settable(p->st.name)) {
        /* refused at Parse, like any statement the gate refuses */
        pgw_refuse_set(s, text, tlen, &p->st, true, &err);
        ok = false;
    }
    if (!ok) {
        pgw_prepared_put(s, p);
        ext_error(s, &err);
        return;
    }
    if (*m.name) {
        s->stmts[s->n_stmts++] = p;
    } else {
        pgw_prepared_put(s, s->unnamed);
        s->unnamed = p;
    }
    pgw_write_empty(s->out, '1');
}

/* The type a parameter is decoded as: the client's, else what DuckDB
 * inferred (for binary values), else text. */
static uint32_t param_oid(const struct pgw_prepared *p, size_t i)
{
    if (i < p->noids && p->oids[i])
        return p->oids[i];
    return 0;
}

static uint32_t duck_param_oid(duckdb_type t)
{
    duckdb_logical_type lt = duckdb_create_logical_type(t);
    uint32_t oid = lt ? pgw_type_of(lt).oid : PGW_OID_TEXT;
    duckdb_destroy_logical_type(&lt);
    return oid;
}

/* A text value that may be an array literal ('{...}'). */
static bool array_text(const struct pgw_value *v)
{
    return v->format == 0 && v->len >= 2 && v->data[0] == '{' && v->data[v->len - 1] == '}';
}

void pgw_on_bind(struct pgw_session *s, const unsigned char *body, size_t len)
{
    struct vt_error err = {0};
    struct pgw_bind_msg m;
    if (pgw_parse_bind(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    struct pgw_prepared *st = pgw_find_statement(s, m.statement, NULL);
    if (!st) {
        vt_error_set(&err, VT_ERR_PG_NO_STATEMENT, "prepared statement \"%s\" does not exist",
                     m.statement);
        ext_error(s, &err);
        return;
    }
    if (s->tx == 'E' && !pgw_allowed_in_failed_tx(st->st.kind)) {
        pgw_tx_aborted(s);
        s->skip_to_sync = true;
        return;
    }
    if (*m.portal && pgw_find_portal(s, m.portal, NULL)) {
        vt_error_set(&err, VT_ERR_PG_DUPLICATE_STATEMENT, "portal \"%s\" already exists",
                     m.portal);
        err.code = VT_ERR_PG_DUPLICATE_STATEMENT;
        ext_error(s, &err);
        return;
    }
    if (*m.portal && s->n_portals == VT_PGWIRE_MAX_PORTALS) {
        vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED, "too many open portals (at most %d)",
                     VT_PGWIRE_MAX_PORTALS);
        ext_error(s, &err);
        return;
    }
    size_t mem = sizeof(struct pgw_portal) + len + 64;
    if (!session_room(s, mem, &err)) {
        ext_error(s, &err);
        return;
    }
    if (st->noids && m.nparams != st->noids && runs_sql(st->st.kind)) {
        vt_error_set(&err, VT_ERR_PG_PROTOCOL,
                     "bind message supplies %u parameters, but prepared statement \"%s\" "
                     "requires %zu",
                     m.nparams, st->name, st->noids);
        ext_error(s, &err);
        return;
    }
    struct pgw_portal *p = calloc(1, sizeof *p);
    if (!p) {
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        ext_error(s, &err);
        return;
    }
    p->mem = mem;
    s->mem += mem;
    p->name = strdup(m.portal);
    p->stmt = st;
    st->refs++;
    arena_init(&p->arena, VT_PGWIRE_MAX_SESSION_BYTES);
    pgw_held_init(p);
    p->nparams = m.nparams;
    p->params = arena_calloc(&p->arena, (m.nparams ? m.nparams : 1) * sizeof *p->params);
    p->nformats = m.nresult_formats;
    p->formats = calloc(m.nresult_formats ? m.nresult_formats : 1, sizeof *p->formats);
    struct pgw_value *vals = calloc(m.nparams ? m.nparams : 1, sizeof *vals);
    bool ok = p->name && p->params && p->formats && vals;
    if (!ok)
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
    for (size_t i = 0; ok && i < m.nresult_formats; i++)
        p->formats[i] = pgw_bind_result_format(&m, i);
    if (ok)
        pgw_bind_values(&m, vals);
    /* Binary values of undeclared type: DuckDB's inferred type says how to
     * read them. */
    bool need_types = false;
    for (size_t i = 0; ok && i < m.nparams; i++)
        need_types |= vals[i].len >= 0 && !param_oid(st, i) &&
                      (vals[i].format == 1 || array_text(&vals[i]));
    if (ok && need_types && runs_sql(st->st.kind) &&
        pgw_describe_statement(s, st, &err) != VT_ERR_OK)
        ok = false;
    for (size_t i = 0; ok && i < m.nparams; i++) {
        uint32_t oid = param_oid(st, i);
        if (!oid && vals[i].format == 1 && st->described && i < st->shape.nparams)
            oid = duck_param_oid(st->shape.param_types[i]);
        /* An untyped '{a,b}' where DuckDB expects a list (psycopg's lists of
         * strings): an array, its items cast by DuckDB. */
        enum vt_err rc;
        if (!oid && array_text(&vals[i]) && st->described && i < st->shape.nparams &&
            st->shape.param_types[i] == DUCKDB_TYPE_LIST) {
            /* its items by the element type DuckDB expects, when it says */
            duckdb_logical_type lt = st->shape.param_logical[i];
            duckdb_logical_type child = lt ? duckdb_list_type_child_type(lt) : NULL;
            uint32_t elem = child && duckdb_get_type_id(child) != DUCKDB_TYPE_INVALID
                                ? pgw_type_of(child).oid : 0;
            duckdb_destroy_logical_type(&child);
            uint32_t arr = elem ? pgw_array_oid(elem) : 0;
            rc = arr ? pgw_param_decode(&vals[i], arr, &p->arena, &p->params[i], &err)
                     : pgw_param_decode_untyped_array(&vals[i], &p->arena, &p->params[i], &err);
        } else {
            rc = pgw_param_decode(&vals[i], oid, &p->arena, &p->params[i], &err);
        }
        if (rc != VT_ERR_OK)
            ok = false;
    }
    free(vals);
    if (ok && pins(st->st.kind)) {
        if (pgw_pin_for(s, st, &p->snap, &err) != VT_ERR_OK)
            ok = false;
        else
            p->pinned = true;
    }
    if (!ok) {
        pgw_portal_free(s, p);
        ext_error(s, &err);
        return;
    }
    if (*m.portal) {
        s->portals[s->n_portals++] = p;
    } else {
        pgw_portal_free(s, s->unnamed_portal);
        s->unnamed_portal = p;
    }
    pgw_write_empty(s->out, '2');
}

static void write_parameter_description(struct pgw_session *s, const struct pgw_prepared *p)
{
    size_t n = p->described ? p->shape.nparams : p->noids;
    if (n < p->noids)
        n = p->noids;
    size_t m = pgw_msg_begin(s->out, 't');
    pgw_put_i16(s->out, (int16_t)n);
    for (size_t i = 0; i < n; i++) {
        uint32_t oid = param_oid(p, i);
        if (!oid && p->described && i < p->shape.nparams &&
            p->shape.param_types[i] != DUCKDB_TYPE_INVALID)
            oid = duck_param_oid(p->shape.param_types[i]);
        pgw_put_i32(s->out, (int32_t)(oid ? oid : PGW_OID_TEXT));
    }
    pgw_msg_end(s->out, m);
}

/* RowDescription (or NoData) for a statement: its shape (SQL), or what the
 * statement answered here sends (SHOW, EXPLAIN, FETCH). `told`: the portal
 * that is to send the rows. */
static void write_shape(struct pgw_session *s, const struct pgw_prepared *p, const int16_t *formats,
                        size_t nformats, struct pgw_portal *told)
{
    switch (p->st.kind) {
    case PGW_STMT_SHOW:
        pgw_show_describe(s, &p->st);
        return;
    case PGW_STMT_EXPLAIN:
        pgw_explain_describe(s);
        return;
    case PGW_STMT_FETCH:
        if (!pgw_find_portal(s, p->st.name, NULL)) /* no cursor (yet): NoData */
            break;
        if (!pgw_cursor_describe(s, &p->st, formats, nformats))
            s->skip_to_sync = true;
        return;
    case PGW_STMT_SQL:
        pgw_write_shape(s, p, formats, nformats, told);
        return;
    default:
        break;
    }
    pgw_write_empty(s->out, 'n');
}

void pgw_on_describe(struct pgw_session *s, const unsigned char *body, size_t len,
                        bool execute_follows)
{
    struct vt_error err = {0};
    struct pgw_target_msg m;
    if (pgw_parse_target(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    if (m.kind == 'S') {
        struct pgw_prepared *p = pgw_find_statement(s, m.name, NULL);
        if (!p) {
            vt_error_set(&err, VT_ERR_PG_NO_STATEMENT, "prepared statement \"%s\" does not exist",
                         m.name);
            ext_error(s, &err);
            return;
        }
        if (runs_sql(p->st.kind) && pgw_describe_statement(s, p, &err) != VT_ERR_OK) {
            ext_error(s, &err);
            return;
        }
        write_parameter_description(s, p);
        write_shape(s, p, NULL, 0, NULL);
        return;
    }
    struct pgw_portal *p = pgw_find_portal(s, m.name, NULL);
    if (!p) {
        vt_error_set(&err, VT_ERR_PG_NO_PORTAL, "portal \"%s\" does not exist", m.name);
        ext_error(s, &err);
        return;
    }
    if (p->stmt->st.kind != PGW_STMT_SQL) {
        write_shape(s, p->stmt, p->formats, p->nformats, NULL);
        return;
    }
    if (p->told) { /* described before (or already running) */
        write_shape(s, p->stmt, p->formats, p->nformats, NULL);
        return;
    }
    if (execute_follows && p->state == PGW_P_READY) {
        /* The result's own RowDescription answers, at the same place in
         * the stream (nothing is sent between Describe and Execute). */
        p->describe_pending = true;
        return;
    }
    if (pgw_describe_statement(s, p->stmt, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    write_shape(s, p->stmt, p->formats, p->nformats, p);
}

/* COPY ... TO STDOUT of a portal: all its rows as CopyData. */
static bool copy_out(struct pgw_session *s, struct pgw_portal *p)
{
    struct pgw_prepared *st = p->stmt;
    struct vt_error err = {0};
    if (st->reads_catalog && pgw_sync_catalog(s, &err) != VT_ERR_OK) {
        pgw_fail(s, &err);
        return false;
    }
    struct pgw_sink k = {.s = s, .mode = PGW_SINK_COPY, .portal = p};
    pgw_copy_sink(&k, &st->st);
    pgw_start_statement(s, pgw_statement_deadline(s));
    bool ok = pgw_run_plan(s, st->rewritten ? st->rewritten : st->sql, &p->snap, p->params,
                           p->nparams, false, &k);
    pgw_end_statement(s);
    if (!ok)
        return false;
    pgw_copy_done(&k);
    snprintf(p->tag, sizeof p->tag, "COPY %" PRIu64, k.sent);
    pgw_write_command_complete(s->out, p->tag);
    return true;
}

void pgw_on_execute(struct pgw_session *s, const unsigned char *body, size_t len)
{
    struct vt_error err = {0};
    struct pgw_execute_msg m;
    if (pgw_parse_execute(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    struct pgw_portal *p = pgw_find_portal(s, m.portal, NULL);
    if (!p) {
        vt_error_set(&err, VT_ERR_PG_NO_PORTAL, "portal \"%s\" does not exist", m.portal);
        ext_error(s, &err);
        return;
    }
    struct pgw_prepared *st = p->stmt;
    if (s->tx == 'E' && !pgw_allowed_in_failed_tx(st->st.kind)) {
        pgw_tx_aborted(s);
        s->skip_to_sync = true;
        return;
    }
    uint64_t limit = m.max_rows > 0 ? (uint64_t)m.max_rows : 0;
    if (p->state == PGW_P_DONE) {
        pgw_write_command_complete(s->out, p->tag[0] ? p->tag : "SELECT 0");
        return;
    }
    bool describe = p->describe_pending;
    bool ok = true;
    switch (st->st.kind) {
    case PGW_STMT_EMPTY:
        pgw_write_empty(s->out, 'I');
        return;
    case PGW_STMT_SQL: {
        uint64_t n = 0;
        if (!pgw_portal_rows(s, p, limit, false, &n)) {
            s->skip_to_sync = true;
            return;
        }
        if (p->state == PGW_P_SUSPENDED) {
            pgw_write_empty(s->out, 's');
            return;
        }
        snprintf(p->tag, sizeof p->tag, "SELECT %" PRIu64, p->rows);
        pgw_write_command_complete(s->out, p->tag);
        return;
    }
    case PGW_STMT_COPY_OUT:
        ok = copy_out(s, p);
        break;
    case PGW_STMT_EXPLAIN:
        ok = pgw_explain(s, st->rewritten ? st->rewritten : st->sql, st->st.analyze, &p->snap,
                         p->params, p->nparams, describe);
        break;
    case PGW_STMT_DECLARE:
        ok = pgw_cursor_declare(s, &st->st, p);
        break;
    case PGW_STMT_FETCH:
    case PGW_STMT_MOVE:
        ok = pgw_cursor_fetch(s, &st->st, describe, p->formats, p->nformats);
        break;
    default:
        ok = pgw_session_statement(s, &st->st, describe, "", 0);
        break;
    }
    p->describe_pending = false;
    p->state = PGW_P_DONE;
    if (!ok)
        s->skip_to_sync = true;
}

void pgw_on_close(struct pgw_session *s, const unsigned char *body, size_t len)
{
    struct vt_error err = {0};
    struct pgw_target_msg m;
    if (pgw_parse_target(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    size_t at = 0;
    if (m.kind == 'S') {
        struct pgw_prepared *p = pgw_find_statement(s, m.name, &at);
        if (p && *m.name) {
            s->stmts[at] = s->stmts[--s->n_stmts];
            pgw_prepared_put(s, p);
        } else if (p) {
            pgw_prepared_put(s, p);
            s->unnamed = NULL;
        }
    } else {
        struct pgw_portal *p = pgw_find_portal(s, m.name, &at);
        if (p && *m.name) {
            s->portals[at] = s->portals[--s->n_portals];
            pgw_portal_free(s, p);
        } else if (p) {
            pgw_portal_free(s, p);
            s->unnamed_portal = NULL;
        }
    }
    pgw_write_empty(s->out, '3');
}

void pgw_on_sync(struct pgw_session *s)
{
    s->skip_to_sync = false;
    /* An implicit transaction ends at Sync, and its portals with it. */
    if (s->tx == 'I')
        pgw_close_portals(s, false);
    pgw_write_ready(s->out, s->tx);
    atomic_store(&s->conn->cancel_requested, false);
    atomic_store(&s->conn->job.cancelled, atomic_load(&s->conn->peer_gone));
}

