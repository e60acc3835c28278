/*
 * Running a statement the gate passed: the job's deadline for it, the
 * catalog on the worker's connection brought up to date when the statement
 * reads it, exec_run with the DataRow sink (RowDescription, DataRows
 * through types.c's encoders, rows past an Execute's limit held for the
 * next one, COPY out data), and the error to report when a run stops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "pgwire/pgwire_internal.h"
#include "util/timeutil.h"

/* -------------------------------------------------------------- the sink */

static struct pgw_sink *sink_of(struct exec_sink *b)
{
    return (struct pgw_sink *)b;
}



/* The client learnt the statement's columns from Describe(S): the portal's
 * result must match them. */
static void tell_from_statement(struct pgw_portal *p)
{
    const struct exec_shape *sh = &p->stmt->shape;
    free(p->told_oids);
    p->told_oids = calloc(sh->ncols ? sh->ncols : 1, sizeof *p->told_oids);
    if (!p->told_oids)
        return;
    for (size_t i = 0; i < sh->ncols; i++)
        p->told_oids[i] = duckdb_get_type_id(sh->types[i]) == DUCKDB_TYPE_INVALID
                              ? PGW_OID_TEXT
                              : pgw_type_of(sh->types[i]).oid;
    p->told_n = sh->ncols;
    p->told = true;
}

static enum vt_err sink_begin(struct exec_sink *b, duckdb_result *res, struct vt_error *err)
{
    struct pgw_sink *k = sink_of(b);
    struct pgw_session *s = k->s;
    k->began = true;
    if (!res)
        return vt_error_set(err, VT_ERR_INTERNAL, "rows without a result");
    size_t n = duckdb_column_count(res);
    duckdb_logical_type *types = calloc(n ? n : 1, sizeof *types);
    const char **names = calloc(n ? n : 1, sizeof *names);
    bool *as_text = calloc(n ? n : 1, sizeof *as_text);
    enum vt_err rc = VT_ERR_OK;
    if (!types || !names || !as_text) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        types[i] = duckdb_column_logical_type(res, i);
        names[i] = duckdb_column_name(res, i);
    }
    const int16_t *formats = NULL;
    size_t nformats = 0;
    struct pgw_portal *p = k->portal;
    if (k->mode == PGW_SINK_PORTAL) {
        formats = p->formats;
        nformats = p->nformats;
        if (!p->told && !p->describe_pending && p->stmt->described)
            tell_from_statement(p);
        if (p->told) {
            /* The client was told the columns: the result must be that
             * shape. A column told as text because DuckDB could not say its
             * type before binding is sent as text. */
            if (p->told_n != n)
                rc = vt_error_set(err, VT_ERR_PG_RESULT_CHANGED,
                                  "cached plan must not change result type (%zu columns "
                                  "described, %zu returned)",
                                  p->told_n, n);
            for (size_t i = 0; rc == VT_ERR_OK && i < n; i++) {
                uint32_t actual = pgw_type_of(types[i]).oid;
                if (actual == p->told_oids[i])
                    continue;
                if (p->told_oids[i] == PGW_OID_TEXT)
                    as_text[i] = true;
                else
                    rc = vt_error_set(err, VT_ERR_PG_RESULT_CHANGED,
                                      "cached plan must not change result type (column %zu)",
                                      i + 1);
            }
        }
    }
    if (rc != VT_ERR_OK)
        goto out;
    struct pgw_format fmt = pgw_session_format(s);
    bool binary_copy = k->mode == PGW_SINK_COPY && k->copy.format == PGW_COPY_BINARY;
    if (k->mode == PGW_SINK_EXPLAIN) {
        if (k->describe)
            pgw_explain_describe(s);
        goto out;
    } else if (k->mode == PGW_SINK_COPY) {
        int16_t f = binary_copy ? 1 : 0;
        k->enc = pgw_rows_create(n, types, &f, 1, &fmt, NULL, err);
    } else {
        k->enc = pgw_rows_create(n, types, formats, nformats, &fmt, as_text, err);
    }
    if (!k->enc) {
        rc = err->code;
        goto out;
    }
    if (k->mode == PGW_SINK_SIMPLE) {
        pgw_write_row_description(s->out, n, names, types, NULL, 0);
    } else if (k->mode == PGW_SINK_PORTAL && p->describe_pending) {
        pgw_write_row_description(s->out, n, names, types, formats, nformats);
        p->describe_pending = false;
        p->told = true;
        p->told_n = n;
        free(p->told_oids);
        p->told_oids = calloc(n ? n : 1, sizeof *p->told_oids);
        for (size_t i = 0; p->told_oids && i < n; i++)
            p->told_oids[i] = pgw_type_of(types[i]).oid;
    } else if (k->mode == PGW_SINK_COPY) {
        size_t m = pgw_msg_begin(s->out, 'H');
        pgw_put_u8(s->out, binary_copy ? 1 : 0);
        pgw_put_i16(s->out, (int16_t)n);
        for (size_t i = 0; i < n; i++)
            pgw_put_i16(s->out, binary_copy ? 1 : 0);
        pgw_msg_end(s->out, m);
        if (binary_copy) { /* the file header goes with the first row */
            k->header_due = true;
        } else if (k->copy_header) {
            m = pgw_msg_begin(s->out, 'd');
            for (size_t i = 0; i < n; i++) {
                if (i)
                    sb_addc(s->out, k->copy.delimiter);
                sb_adds(s->out, names[i]);
            }
            sb_addc(s->out, '\n');
            pgw_msg_end(s->out, m);
        }
    }
    if (s->out->overflow)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
out:
    for (size_t i = 0; types && i < n; i++)
        duckdb_destroy_logical_type(&types[i]);
    free(types);
    free(names);
    free(as_text);
    return rc;
}

/* EXPLAIN: DuckDB's plan (the last column, one text per row) as one
 * "QUERY PLAN" row per line, as PostgreSQL shows it. */
static int explain_rows(duckdb_data_chunk chunk, struct strbuf *out)
{
    idx_t ncol = duckdb_data_chunk_get_column_count(chunk);
    if (!ncol)
        return 0;
    duckdb_vector v = duckdb_data_chunk_get_vector(chunk, ncol - 1);
    duckdb_string_t *d = duckdb_vector_get_data(v);
    uint64_t *valid = duckdb_vector_get_validity(v);
    idx_t n = duckdb_data_chunk_get_size(chunk);
    for (idx_t i = 0; i < n; i++) {
        if (valid && !duckdb_validity_row_is_valid(valid, i))
            continue;
        const char *p = duckdb_string_t_data(&d[i]);
        uint32_t len = duckdb_string_t_length(d[i]);
        for (uint32_t at = 0; at < len;) {
            const char *nl = memchr(p + at, '\n', len - at);
            uint32_t end = nl ? (uint32_t)(nl - p) : len;
            size_t m = pgw_msg_begin(out, 'D');
            pgw_put_i16(out, 1);
            pgw_put_i32(out, (int32_t)(end - at));
            sb_add(out, p + at, end - at);
            pgw_msg_end(out, m);
            at = end + 1;
        }
    }
    return out->overflow ? -1 : 0;
}

void pgw_explain_describe(struct pgw_session *s)
{
    static const duckdb_type text = DUCKDB_TYPE_VARCHAR;
    duckdb_logical_type t = duckdb_create_logical_type(text);
    const char *name = "QUERY PLAN";
    pgw_write_row_description(s->out, 1, &name, &t, NULL, 0);
    duckdb_destroy_logical_type(&t);
}

void pgw_copy_sink(struct pgw_sink *k, const struct pgw_stmt *st)
{
    k->mode = PGW_SINK_COPY;
    k->copy.format = st->copy_format;
    k->copy.delimiter = st->copy_delimiter;
    k->copy.null_text = st->copy_null[0] || st->copy_format == PGW_COPY_CSV ? st->copy_null
                                                                           : "\\N";
    k->copy_header = st->copy_header;
}

void pgw_copy_done(struct pgw_sink *k)
{
    struct strbuf *out = k->s->out;
    if (k->copy.format == PGW_COPY_BINARY) { /* the file trailer (the header too: no rows) */
        size_t m = pgw_msg_begin(out, 'd');
        if (k->header_due)
            sb_add(out, PGW_COPY_BINARY_HEADER, PGW_COPY_BINARY_HEADER_LEN);
        pgw_put_i16(out, -1);
        pgw_msg_end(out, m);
    }
    pgw_write_empty(out, 'c');
}

bool pgw_explain(struct pgw_session *s, const char *sql, bool analyze,
                 const struct exec_snapshot *snap, const struct query_value *params,
                 size_t nparams, bool describe)
{
    struct vt_error err = {0};
    struct strbuf q;
    sb_init(&q, 0);
    sb_adds(&q, analyze ? "EXPLAIN ANALYZE " : "EXPLAIN ");
    sb_adds(&q, sql);
    if (q.overflow) {
        sb_release(&q);
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        pgw_fail(s, &err);
        return false;
    }
    struct pgw_sink k = {.s = s, .mode = PGW_SINK_EXPLAIN, .describe = describe};
    pgw_start_statement(s, pgw_statement_deadline(s));
    bool ok = pgw_run_plan(s, q.buf, snap, params, nparams, true, &k);
    pgw_end_statement(s);
    sb_release(&q);
    if (ok)
        pgw_write_command_complete(s->out, "EXPLAIN");
    return ok;
}

#define PGW_ROWS_SLICE 128 /* rows encoded between checks of the output's size */

static enum vt_err sink_chunk(struct exec_sink *b, duckdb_data_chunk chunk, struct vt_error *err)
{
    struct pgw_sink *k = sink_of(b);
    struct pgw_session *s = k->s;
    uint64_t n = duckdb_data_chunk_get_size(chunk);
    uint64_t send = n;
    /* A long result goes out in larger writes from its third chunk on: a
     * quarter of the sends, and of the client's wake-ups (1M rows of the
     * bench's table: 1,955 -> ~500 sends); the first rows still leave
     * at the default size. pgw_run_plan puts the size back. */
    if (++k->chunks == 3)
        s->conn->flush_bytes = VT_PGWIRE_BULK_FLUSH_BYTES;
    if (k->mode == PGW_SINK_PORTAL && k->limit) {
        uint64_t room = k->limit > k->sent ? k->limit - k->sent : 0;
        send = n < room ? n : room;
    }
    int rc = 0;
    if (k->mode == PGW_SINK_EXPLAIN)
        rc = explain_rows(chunk, s->out);
    else if (k->mode == PGW_SINK_COPY && k->copy.format == PGW_COPY_BINARY) {
        rc = pgw_rows_copy_binary(k->enc, chunk, k->header_due ? PGW_COPY_BINARY_HEADER : NULL,
                                  PGW_COPY_BINARY_HEADER_LEN, s->out);
        k->header_due = k->header_due && n == 0;
    }
    else if (k->mode == PGW_SINK_COPY)
        rc = pgw_rows_copy(k->enc, chunk, &k->copy, s->out);
    else {
        /* In slices, flushed as they fill the output: the buffer stays
         * small (a whole chunk would outgrow what a connection keeps between
         * writes, and be freed and grown again for every chunk). */
        for (uint64_t at = 0; at < send && rc == 0; at += PGW_ROWS_SLICE) {
            rc = pgw_rows_data(k->enc, chunk, at, send - at < PGW_ROWS_SLICE ? send - at
                                                                            : PGW_ROWS_SLICE,
                               s->out);
            if (rc == 0 && at + PGW_ROWS_SLICE < send && pgw_flush_if_full(s) != 0)
                return vt_error_set(err, VT_ERR_CLIENT_GONE, NULL);
        }
    }
    if (rc != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
    k->sent += k->mode == PGW_SINK_COPY || k->mode == PGW_SINK_EXPLAIN ? n : send;
    if (send < n) {
        /* Past the Execute's row limit: held for the next Execute. */
        k->suspended = true;
        enum vt_err rc2 = pgw_held_add(s, k->portal, k->enc, chunk, send, n - send, err);
        if (rc2 != VT_ERR_OK)
            return rc2;
    }
    if (k->discard)
        sb_reset(s->out);
    if (pgw_flush_if_full(s) != 0)
        return vt_error_set(err, VT_ERR_CLIENT_GONE, NULL);
    return VT_ERR_OK;
}

static enum vt_err sink_count(struct exec_sink *b, uint64_t n, struct vt_error *err)
{
    (void)b;
    (void)n;
    return vt_error_set(err, VT_ERR_INTERNAL, "unexpected count");
}

static void sink_end(struct exec_sink *b)
{
    struct pgw_sink *k = sink_of(b);
    k->ended = true;
}

static void sink_fail(struct exec_sink *b, const struct vt_error *err)
{
    struct pgw_sink *k = sink_of(b);
    k->err = *err;
}

static const struct exec_sink_ops sink_ops = {
    .begin = sink_begin,
    .chunk = sink_chunk,
    .count = sink_count,
    .end = sink_end,
    .fail = sink_fail,
};

/* ---------------------------------------------------- running statements */

void pgw_start_statement(struct pgw_session *s, int64_t deadline)
{
    struct eng_job *job = &s->conn->job;
    atomic_store(&job->timed_out, false);
    atomic_store(&job->deadline_ms, deadline);
}

void pgw_end_statement(struct pgw_session *s)
{
    atomic_store(&s->conn->job.deadline_ms, 0);
}

/* The error to report for a stopped run. false: nothing is to be reported
 * (the client is gone). */
bool pgw_stopped_error(struct pgw_session *s, struct vt_error *err)
{
    struct pgw_conn *c = s->conn;
    if (err->code == VT_ERR_TIMEOUT || atomic_load(&c->job.timed_out)) {
        vt_error_clear(err);
        vt_error_set(err, VT_ERR_TIMEOUT, "canceling statement due to statement timeout");
        return true;
    }
    if (err->code == VT_ERR_CLIENT_GONE) {
        if (atomic_load(&c->cancel_requested) && !atomic_load(&c->peer_gone)) {
            vt_error_clear(err);
            vt_error_set(err, VT_ERR_PG_CANCELLED, "canceling statement due to user request");
            return true;
        }
        if (!atomic_load(&c->peer_gone) && atomic_load(&c->job.cancelled)) {
            /* Neither the client nor a CancelRequest: the server is
             * shutting down after the drain. */
            pgw_write_error(s->out, 'E', "FATAL", "57P01",
                            "terminating connection due to administrator command", NULL, NULL);
        }
        c->close_after_job = true;
        return false;
    }
    return true;
}

/* The catalog on this worker's connection, brought up to date for s. */
enum vt_err pgw_sync_catalog(struct pgw_session *s, struct vt_error *err)
{
    struct cat_status *list = NULL;
    size_t n = cat_status_list(s->cfg.catalog, &list);
    struct pgw_cat_table *t = calloc(n ? n : 1, sizeof *t);
    struct exec_pin *pins = calloc(n ? n : 1, sizeof *pins);
    bool **nullable = calloc(n ? n : 1, sizeof *nullable);
    size_t nt = 0;
    enum vt_err rc = VT_ERR_OK;
    if (!t || !pins || !nullable) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct vt_error ignored = {0};
        /* Datasets with a generation only: pinning a lazy one never built
         * would start its build, and its columns are not known yet. */
        if ((list[i].state != CAT_PUBLISHED && list[i].columns <= 0) ||
            exec_pin(s->cfg.catalog, list[i].name, 0, &pins[nt], &ignored) != VT_ERR_OK)
            continue;
        struct cat_generation *g = pins[nt].gen;
        nullable[nt] = calloc(g->n_cols ? g->n_cols : 1, sizeof **nullable);
        for (size_t c = 0; nullable[nt] && c < g->n_cols; c++)
            nullable[nt][c] = g->cols[c].nullable;
        t[nt] = (struct pgw_cat_table){
            .name = cat_dataset_name(pins[nt].ds),
            .relation = g->relation,
            .generation = g->id,
            .rows = g->rows,
            .bytes = list[i].source_bytes,
            .nullable = nullable[nt],
            .ncols = nullable[nt] ? g->n_cols : 0,
        };
        nt++;
    }
    char pid[16], started[40];
    snprintf(pid, sizeof pid, "%d", s->conn->pid);
    time_format_rfc3339(s->cfg.started_us, started);
    char version[160];
    snprintf(version, sizeof version,
             "PostgreSQL %s on x86_64-pc-linux-gnu, compiled by vitrine %s (DuckDB %s), 64-bit",
             s->server_version, VT_VERSION, duckdb_library_version());
    char xid[24], sport[8], cport[8];
    snprintf(xid, sizeof xid, "%lld", 1000LL + (long long)s->conn->pid);
    snprintf(sport, sizeof sport, "%d", s->server_port);
    snprintf(cport, sizeof cport, "%d", s->client_port);
    struct pgw_cat_setting set[PGW_N_SETTINGS + 10];
    size_t ns = pgw_settings_catalog(s, set);
    set[ns++] = (struct pgw_cat_setting){"vt.user", s->user, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.database", s->database, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.version", version, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.pid", pid, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.started", started, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.xid", xid, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.server_addr", s->server_addr, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.server_port", sport, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.client_addr", s->client_addr, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.client_port", cport, NULL};
    rc = pgw_catalog_sync(s->con, t, nt, set, ns, s->user, s->database, err);
out:
    for (size_t i = 0; i < nt; i++) {
        exec_unpin(&pins[i]);
        free(nullable[i]);
    }
    free(nullable);
    free(pins);
    free(t);
    cat_status_list_free(list, n);
    return rc;
}

bool pgw_is_dataset(void *ctx, const char *name)
{
    return cat_has_dataset(ctx, name);
}

struct sql_gate_options pgw_gate_options(struct pgw_session *s, bool params)
{
    return (struct sql_gate_options){.allow_params = params, .lookups = true,
                                     .dialect = &pgw_dialect, .dialect_ctx = s};
}

/* The driver's queue hook: this thread is the worker already, running the
 * session's job (whose flags stop the run: a CancelRequest, a hang-up, the
 * statement's deadline). */
static void run_here(struct exec_call *call, enum eng_job_class cls)
{
    (void)cls;
    struct pgw_session *s = call->rq.user;
    exec_call_resume(call, &s->conn->job);
}

/* Runs a checked statement: the snapshot is taken (or was pinned at Bind),
 * the sink decides the messages. Returns true when it ended well; false
 * after an error was reported (or the client is gone). */
bool pgw_run_plan(struct pgw_session *s, const char *sql, const struct exec_snapshot *snap,
                     const struct query_value *params, size_t nparams, bool one_off,
                     struct pgw_sink *k)
{
    struct arena arena;
    arena_init(&arena, 0);
    k->base.ops = &sink_ops;
    /* Through the driver, with the snapshot taken (or pinned at Bind) here:
     * the session already runs on a query worker, in its connection's job. */
    struct exec_request rq = {
        .kind = EXEC_SQL,
        .catalog = s->cfg.catalog,
        .sql = sql,
        .snapshot = snap,
        .params = params,
        .nparams = nparams,
        .one_off = one_off,
        .caps = {.max_rows = EXEC_NO_CAP},
        .sink = &k->base,
        .arena = &arena,
        .queue = run_here,
        .user = s,
    };
    struct exec_call call;
    exec_call_start(&call, &rq);
    exec_call_release(&call);
    s->conn->flush_bytes = 0;
    arena_release(&arena);
    pgw_rows_destroy(k->enc);
    k->enc = NULL;
    if (k->err.code != VT_ERR_OK) {
        if (pgw_stopped_error(s, &k->err))
            pgw_fail(s, &k->err);
        return false;
    }
    return true;
}

