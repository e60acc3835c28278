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
    if (ok && (p->st.kind == PGW_STMT_SQL || p->st.kind == PGW_STMT_COPY_OUT)) {
        const char *q = p->st.kind == PGW_STMT_SQL ? text : p->st.copy_query;
        size_t qlen = p->st.kind == PGW_STMT_SQL ? tlen : strlen(q);
        char *norm = pgw_normalize(q, qlen);
        p->sql = norm ? norm : strndup(q, qlen);
        struct sql_checked chk;
        if (!p->sql) {
            ok = false;
            vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        } else if (sql_gate_check_opts(s->con, p->sql, &pgw_gate_extended,
                                       pgw_is_dataset, s->cfg.catalog, &chk,
                                       &err) != VT_ERR_OK) {
            ok = false;
        } else {
            p->deps = chk.depends_on;
            p->ndeps = chk.n_depends_on;
            p->rewritten = chk.rewritten;
            p->reads_catalog = chk.reads_catalog;
            p->lookup = p->st.kind == PGW_STMT_SQL ? chk.lookup : NULL;
            if (p->lookup)
                chk.lookup = NULL;
            chk.depends_on = NULL;
            chk.n_depends_on = 0;
            chk.rewritten = NULL;
            sql_checked_release(&chk);
        }
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

/* Pins the statement's datasets for a portal. */
static enum vt_err pin_for(struct pgw_session *s, struct pgw_prepared *p, struct sql_snapshot *snap,
                           struct vt_error *err)
{
    memset(snap, 0, sizeof *snap);
    int64_t deadline = pgw_statement_deadline(s);
    return sql_snapshot_pin(s->cfg.catalog, p->deps, p->ndeps,
                            deadline ? deadline : time_mono_ms() + 60000, snap, err);
}

/* Describes a SQL statement (its parameters and columns) on this worker. */
static enum vt_err describe_statement(struct pgw_session *s, struct pgw_prepared *p,
                                      struct vt_error *err)
{
    if (p->described)
        return VT_ERR_OK;
    struct sql_snapshot snap;
    if (pin_for(s, p, &snap, err) != VT_ERR_OK)
        return err->code;
    enum vt_err rc = VT_ERR_OK;
    if (p->reads_catalog)
        rc = pgw_sync_catalog(s, err);
    if (rc == VT_ERR_OK) {
        struct arena arena;
        arena_init(&arena, 0);
        struct exec_plan plan = {
            .kind = EXEC_SQL,
            .sql = p->rewritten ? p->rewritten : p->sql,
            .views = snap.views,
            .nviews = snap.n,
            .job = &s->conn->job,
            .arena = &arena,
        };
        rc = exec_describe(&plan, s->con, &p->shape, err);
        arena_release(&arena);
    }
    sql_snapshot_release(&snap);
    if (rc == VT_ERR_OK)
        p->described = true;
    return rc;
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
    if (st->noids && m.nparams != st->noids && st->st.kind == PGW_STMT_SQL) {
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
    sb_init(&p->held, 0);
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
        need_types |= vals[i].format == 1 && vals[i].len >= 0 && !param_oid(st, i);
    if (ok && need_types && st->st.kind == PGW_STMT_SQL &&
        describe_statement(s, st, &err) != VT_ERR_OK)
        ok = false;
    for (size_t i = 0; ok && i < m.nparams; i++) {
        uint32_t oid = param_oid(st, i);
        if (!oid && vals[i].format == 1 && st->described && i < st->shape.nparams)
            oid = duck_param_oid(st->shape.param_types[i]);
        if (pgw_param_decode(&vals[i], oid, &p->arena, &p->params[i], &err) != VT_ERR_OK)
            ok = false;
    }
    free(vals);
    if (ok && (st->st.kind == PGW_STMT_SQL || st->st.kind == PGW_STMT_COPY_OUT)) {
        if (pin_for(s, st, &p->snap, &err) != VT_ERR_OK)
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

/* RowDescription (or NoData) from a statement's shape; columns DuckDB
 * cannot type before binding are described as text (and sent as text). */
static void write_shape(struct pgw_session *s, const struct pgw_prepared *p, const int16_t *formats,
                        size_t nformats, struct pgw_portal *told)
{
    if (p->st.kind == PGW_STMT_SHOW) {
        pgw_show_describe(s, &p->st);
        return;
    }
    if (p->st.kind != PGW_STMT_SQL || p->shape.ncols == 0) {
        pgw_write_empty(s->out, 'n');
        return;
    }
    size_t n = p->shape.ncols;
    duckdb_logical_type *types = calloc(n, sizeof *types);
    if (!types) {
        s->out->overflow = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (duckdb_get_type_id(p->shape.types[i]) == DUCKDB_TYPE_INVALID)
            types[i] = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
        else
            types[i] = p->shape.types[i];
    }
    pgw_write_row_description(s->out, n, (const char *const *)p->shape.names, types, formats,
                              nformats);
    if (told) {
        told->told = true;
        told->told_n = n;
        free(told->told_oids);
        told->told_oids = calloc(n, sizeof *told->told_oids);
        for (size_t i = 0; told->told_oids && i < n; i++)
            told->told_oids[i] = pgw_type_of(types[i]).oid;
    }
    for (size_t i = 0; i < n; i++)
        if (types[i] != p->shape.types[i])
            duckdb_destroy_logical_type(&types[i]);
    free(types);
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
        if (p->st.kind == PGW_STMT_SQL && describe_statement(s, p, &err) != VT_ERR_OK) {
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
    if (describe_statement(s, p->stmt, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    write_shape(s, p->stmt, p->formats, p->nformats, p);
}

/* Sends up to `limit` held rows of a suspended portal. */
static void send_held(struct pgw_session *s, struct pgw_portal *p, uint64_t limit)
{
    uint64_t sent = 0;
    while (p->held_off < p->held.len && (!limit || sent < limit)) {
        const unsigned char *m = (const unsigned char *)p->held.buf + p->held_off;
        size_t mlen = 1 + ((size_t)m[1] << 24 | (size_t)m[2] << 16 | (size_t)m[3] << 8 | m[4]);
        sb_add(s->out, m, mlen);
        p->held_off += mlen;
        p->held_rows--;
        sent++;
        if (pgw_flush_if_full(s) != 0)
            return;
    }
    p->rows += sent;
    if (p->held_off < p->held.len) {
        pgw_write_empty(s->out, 's');
        return;
    }
    sb_release(&p->held);
    p->held_off = 0;
    s->held -= p->held_counted;
    p->held_counted = 0;
    if (p->held_truncated) {
        struct vt_error err = {0};
        vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED,
                     "the rest of this result did not fit the %d MiB a connection holds "
                     "for portals read in parts; read it without a row limit or add "
                     "LIMIT/OFFSET",
                     VT_PGWIRE_MAX_SUSPENDED_BYTES / (1024 * 1024));
        p->state = PGW_P_DONE;
        ext_error(s, &err);
        return;
    }
    p->state = PGW_P_DONE;
    snprintf(p->tag, sizeof p->tag, "SELECT %" PRIu64, p->rows);
    pgw_write_command_complete(s->out, p->tag);
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
    if (p->state == PGW_P_SUSPENDED) {
        send_held(s, p, limit);
        return;
    }
    if (p->state == PGW_P_DONE) {
        pgw_write_command_complete(s->out, p->tag[0] ? p->tag : "SELECT 0");
        return;
    }
    if (st->st.kind == PGW_STMT_EMPTY) {
        pgw_write_empty(s->out, 'I');
        return;
    }
    if (st->st.kind != PGW_STMT_SQL && st->st.kind != PGW_STMT_COPY_OUT) {
        bool describe = p->describe_pending;
        p->describe_pending = false;
        if (!pgw_session_statement(s, &st->st, describe, "", 0))
            s->skip_to_sync = true;
        p->state = PGW_P_DONE;
        return;
    }
    if (st->reads_catalog && pgw_sync_catalog(s, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    bool copy = st->st.kind == PGW_STMT_COPY_OUT;
    struct pgw_sink k = {.s = s, .mode = copy ? PGW_SINK_COPY : PGW_SINK_PORTAL, .portal = p,
                         .limit = copy ? 0 : limit};
    if (copy) {
        k.copy.format = st->st.copy_format;
        k.copy.delimiter = st->st.copy_delimiter;
        k.copy.null_text = st->st.copy_null[0] || st->st.copy_format == PGW_COPY_CSV
                               ? st->st.copy_null
                               : "\\N";
        k.copy_header = st->st.copy_header;
    }
    bool text = true;
    for (size_t i = 0; i < p->nformats; i++)
        text &= p->formats[i] == 0;
    uint64_t fast_rows = 0;
    bool fast_ok = false;
    /* From the index when the client learns the columns from this result
     * (or does not ask): a Describe(S) answer came from DuckDB's types. */
    if (!copy && st->lookup && text && !limit && !p->told && !st->described &&
        pgw_fast_lookup(s, st->lookup, &p->snap, p->params, p->nparams, p->describe_pending,
                    &fast_rows, &fast_ok)) {
        p->describe_pending = false;
        p->state = PGW_P_DONE;
        if (!fast_ok) {
            s->skip_to_sync = true;
            return;
        }
        p->rows = fast_rows;
        snprintf(p->tag, sizeof p->tag, "SELECT %" PRIu64, p->rows);
        pgw_write_command_complete(s->out, p->tag);
        return;
    }
    pgw_start_statement(s, pgw_statement_deadline(s));
    bool ok = pgw_run_plan(s, st->rewritten ? st->rewritten : st->sql, &p->snap, p->params,
                       p->nparams, false, &k);
    pgw_end_statement(s);
    if (!ok) {
        p->state = PGW_P_DONE;
        s->skip_to_sync = true;
        return;
    }
    if (copy) {
        pgw_write_empty(s->out, 'c');
        snprintf(p->tag, sizeof p->tag, "COPY %" PRIu64, k.sent);
        pgw_write_command_complete(s->out, p->tag);
        p->state = PGW_P_DONE;
        return;
    }
    p->rows = k.sent;
    if (k.suspended) {
        p->state = PGW_P_SUSPENDED;
        pgw_write_empty(s->out, 's');
        return;
    }
    p->state = PGW_P_DONE;
    snprintf(p->tag, sizeof p->tag, "SELECT %" PRIu64, p->rows);
    pgw_write_command_complete(s->out, p->tag);
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
        pgw_close_portals(s);
    pgw_write_ready(s->out, s->tx);
    atomic_store(&s->conn->cancel_requested, false);
    atomic_store(&s->conn->job.cancelled, atomic_load(&s->conn->peer_gone));
}

