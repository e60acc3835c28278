/*
 * One PostgreSQL session (pgwire_internal.h): its lifecycle, its prepared
 * statements and portals as objects, errors, and the loop over the messages
 * a job finds in the connection's input, run by jobs on the engine's
 * workers. Every statement that reads data goes the one way /sql goes: the
 * SQL gate (with PostgreSQL's dialect, dialect.c), the datasets pinned at
 * their current generation, exec_run on the worker's connection with the
 * DataRow sink (run.c). What clients and pools send around
 * their queries (BEGIN/COMMIT/ROLLBACK, SAVEPOINT, DISCARD ALL, DEALLOCATE,
 * RESET, UNLISTEN, harmless SETs, SHOW) is answered with PostgreSQL's
 * command tags; transactions are no-ops over read-only snapshots but keep
 * PostgreSQL's status ('I', 'T', 'E') so that drivers and pools see what
 * they expect, including "current transaction is aborted" after an error.
 *
 * (statements.c, settings.c). Extended protocol (extended.c): Parse runs the gate (errors come at Parse, as in
 * PostgreSQL); Bind pins the datasets for the portal (Describe and Execute
 * of a portal see one snapshot) and decodes the parameters; Describe of a
 * portal is answered by the RowDescription of the result itself when the
 * Execute follows, so types are exact; Execute with a row limit sends that
 * many rows and holds the rest of the result, bounded, for the next Execute.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pgwire/pgwire_internal.h"

/* ------------------------------------------------------------- errors */

/* Errors the catalog's macros raise (catalog_sql.c: error('relation "x"
 * does not exist'), as a regclass cast does; the JSON functions' errors, and
 * engine/jsonb.c's): DuckDB reports them as "Invalid Input Error: ...";
 * (jsonb.c's limits come as limit_exceeded, 54000: util/errors.h);
 * PostgreSQL's SQLSTATE and text are theirs. `whole`: the message is exactly
 * `start`; else with `end` it must contain that too. */
static const struct {
    const char *start, *end, *state;
    bool whole;
} raised[] = {
    {"relation \"", "\" does not exist", "42P01", false},
    {"type \"", "\" does not exist", "42704", false},
    {"schema \"", "\" does not exist", "3F000", false},
    {"invalid fork name", NULL, "22023", true},
    {"cannot call json", NULL, "22023", false},
    {"cannot extract elements from ", NULL, "22023", false},
    {"cannot get array length of ", NULL, "22023", false},
    {"field name must not be null", NULL, "22004", true},
    {"invalid input syntax for type json", NULL, "22P02", true},
    {"operator does not exist: ", NULL, "42883", false},
    {"cannot set path in scalar", NULL, "22023", true},
    {"cannot replace existing key", NULL, "22023", true},
    {"path element at position ", " is null", "22004", false},
    {"path element at position ", " is not an integer: ", "22P02", false},
};
#define RAISED_PREFIX "Invalid Input Error: "

static const char *raised_by_catalog(const char *msg)
{
    if (!msg || strncmp(msg, RAISED_PREFIX, strlen(RAISED_PREFIX)) != 0)
        return NULL;
    const char *rest = msg + strlen(RAISED_PREFIX);
    for (size_t i = 0; i < sizeof raised / sizeof raised[0]; i++) {
        if (strncmp(rest, raised[i].start, strlen(raised[i].start)) != 0)
            continue;
        if (raised[i].whole ? !strcmp(rest, raised[i].start)
                            : !raised[i].end || strstr(rest, raised[i].end) != NULL)
            return raised[i].state;
    }
    return NULL;
}

const char *pgw_duckdb_sqlstate(const char *msg)
{
    const char *own = raised_by_catalog(msg);
    if (own)
        return own;
    static const struct {
        const char *prefix, *state;
    } map[] = {
        {"Parser Error", "42601"},       {"Syntax Error", "42601"},
        {"Catalog Error", "42P01"},      {"Conversion Error", "22P02"},
        {"Invalid Input Error", "22P02"}, {"Out of Range Error", "22003"},
        {"Out of Memory Error", "53200"}, {"Interrupt Error", "57014"},
        {"Not implemented Error", "0A000"}, {"Permission Error", "42501"},
        {"IO Error", "58030"},           {"Division By Zero", "22012"},
        {"Constraint Error", "23000"},   {"Dependency Error", "2BP01"},
        {"Invalid type Error", "42804"}, {"Mismatch Type Error", "42804"},
    };
    if (!msg)
        return "XX000";
    if (!strncmp(msg, "Binder Error", 12)) {
        if (strstr(msg, "Referenced column") || strstr(msg, "column"))
            return "42703";
        if (strstr(msg, "function") || strstr(msg, "Function"))
            return "42883";
        return "42P18";
    }
    if (!strncmp(msg, "Catalog Error", 13) && (strstr(msg, "Function") || strstr(msg, "function")))
        return "42883";
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strncmp(msg, map[i].prefix, strlen(map[i].prefix)))
            return map[i].state;
    return "22000";
}

size_t pgw_scrub_names(const char *msg, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; msg[i] && o + 1 < cap;) {
        bool quoted = msg[i] == '"' && !strncmp(msg + i + 1, "vt:", 3);
        if (!quoted && strncmp(msg + i, "vt:", 3) != 0) {
            out[o++] = msg[i++];
            continue;
        }
        i += quoted ? 4 : 3;
        if (!strncmp(msg + i, "is_", 3)) { /* information_schema's */
            const char *p = "information_schema.";
            for (; *p && o + 1 < cap; p++)
                out[o++] = *p;
            i += 3;
        }
        while (msg[i] && msg[i] != '"' && o + 1 < cap &&
               (isalnum((unsigned char)msg[i]) || msg[i] == '_'))
            out[o++] = msg[i++];
        if (quoted && msg[i] == '"')
            i++;
    }
    out[o] = '\0';
    return o;
}

void pgw_error_out(struct strbuf *out, const struct vt_error *err, const char *severity)
{
    const char *msg = vt_error_message(err);
    const char *state = vt_err_sqlstate(err->code);
    if (err->code == VT_ERR_QUERY_FAILED) {
        state = pgw_duckdb_sqlstate(msg);
        if (raised_by_catalog(msg))
            msg += strlen(RAISED_PREFIX);
    }
    /* The catalog's own names ("vt:imatch") are ours, not the client's:
     * an error speaks of what the client wrote. */
    char clean[VT_ERROR_MSG_MAX + 64];
    if (strstr(msg, "vt:")) {
        pgw_scrub_names(msg, clean, sizeof clean);
        msg = clean;
    }
    pgw_write_error(out, 'E', severity, state, msg, NULL, NULL);
}

/* An error inside a statement: reported, and the transaction (if one is
 * open) fails until ROLLBACK, as in PostgreSQL. */
void pgw_fail(struct pgw_session *s, const struct vt_error *err)
{
    pgw_error_out(s->out, err, "ERROR");
    if (s->tx == 'T')
        s->tx = 'E';
}

/* The connection's local (or peer) address and port, as inet_server_addr()
 * shows them. */
static void socket_address(int fd, bool peer, char *out, size_t cap, int *port)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    *port = 0;
    snprintf(out, cap, "%s", "");
    if ((peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
              : getsockname(fd, (struct sockaddr *)&ss, &len)) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)cap);
        *port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, out, (socklen_t)cap);
        *port = ntohs(a->sin6_port);
    }
}

struct pgw_session *pgw_session_create(const struct pgw_session_config *cfg,
                                       const char *const *names, const char *const *values,
                                       size_t n, struct pgw_conn *conn, struct vt_error *err)
{
    struct pgw_session *s = calloc(1, sizeof *s);
    if (!s) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    s->conn = conn;
    s->cfg = *cfg;
    s->tx = 'I';
    snprintf(s->user, sizeof s->user, "%s", cfg->user);
    snprintf(s->database, sizeof s->database, "%s", cfg->database);
    snprintf(s->server_version, sizeof s->server_version, "%s", cfg->server_version);
    s->cfg.user = s->user;
    s->cfg.database = s->database;
    socket_address(conn->fd, false, s->server_addr, sizeof s->server_addr, &s->server_port);
    socket_address(conn->fd, true, s->client_addr, sizeof s->client_addr, &s->client_port);
    if (pgw_settings_init(s, names, values, n, err) != VT_ERR_OK) {
        free(s);
        return NULL;
    }
    s->out = &conn->out;
    return s;
}

void pgw_session_greet(struct pgw_session *s, struct strbuf *out)
{
    s->out = out;
    pgw_settings_report(s);
    pgw_write_backend_key(out, s->conn->pid, s->conn->secret);
    pgw_write_ready(out, s->tx);
}

void pgw_prepared_put(struct pgw_session *s, struct pgw_prepared *p)
{
    if (!p || --p->refs > 0)
        return;
    s->mem -= p->mem;
    free(p->name);
    pgw_stmt_release(&p->st);
    free(p->sql);
    for (size_t i = 0; i < p->ndeps; i++)
        free(p->deps[i]);
    free(p->deps);
    free(p->rewritten);
    sql_lookup_free(p->lookup);
    free(p->oids);
    exec_shape_release(&p->shape);
    free(p);
}

void pgw_portal_free(struct pgw_session *s, struct pgw_portal *p)
{
    if (!p)
        return;
    s->mem -= p->mem;
    pgw_held_release(s, p);
    free(p->name);
    pgw_prepared_put(s, p->stmt);
    arena_release(&p->arena);
    free(p->formats);
    if (p->pinned)
        exec_snapshot_release(&p->snap);
    free(p->told_oids);
    free(p);
}

void pgw_close_portals(struct pgw_session *s, bool all)
{
    for (size_t i = s->n_portals; i-- > 0;) {
        if (!all && s->portals[i]->hold)
            continue;
        pgw_portal_free(s, s->portals[i]);
        s->portals[i] = s->portals[--s->n_portals];
    }
    pgw_portal_free(s, s->unnamed_portal);
    s->unnamed_portal = NULL;
}

void pgw_drop_statements(struct pgw_session *s)
{
    for (size_t i = 0; i < s->n_stmts; i++)
        pgw_prepared_put(s, s->stmts[i]);
    s->n_stmts = 0;
}

void pgw_session_destroy(struct pgw_session *s)
{
    if (!s)
        return;
    pgw_close_portals(s, true);
    pgw_drop_statements(s);
    pgw_prepared_put(s, s->unnamed);
    pgw_shapes_free(s->shapes);
    free(s);
}

struct pgw_prepared *pgw_find_statement(struct pgw_session *s, const char *name, size_t *out_i)
{
    if (!*name)
        return s->unnamed;
    for (size_t i = 0; i < s->n_stmts; i++)
        if (!strcmp(s->stmts[i]->name, name)) {
            if (out_i)
                *out_i = i;
            return s->stmts[i];
        }
    return NULL;
}

struct pgw_portal *pgw_find_portal(struct pgw_session *s, const char *name, size_t *out_i)
{
    if (!*name)
        return s->unnamed_portal;
    for (size_t i = 0; i < s->n_portals; i++)
        if (!strcmp(s->portals[i]->name, name)) {
            if (out_i)
                *out_i = i;
            return s->portals[i];
        }
    return NULL;
}

/* ------------------------------------------------------------- output */

int pgw_flush_if_full(struct pgw_session *s)
{
    struct pgw_conn *c = s->conn;
    if (c->out.len - c->out_off < (c->flush_bytes ? c->flush_bytes : VT_PGWIRE_OUT_FLUSH_BYTES))
        return 0;
    return pgw_conn_flush(c);
}

/* ------------------------------------------------------------ the loop */

static void fatal(struct pgw_session *s, enum vt_err code, const char *msg)
{
    struct vt_error err = {0};
    vt_error_set(&err, code, "%s", msg);
    pgw_error_out(s->out, &err, "FATAL");
    s->conn->close_after_job = true;
}

/* The type of the next complete message after the one at off, or 0. */
static char next_type(const struct pgw_conn *c, size_t off)
{
    return off < c->in.len ? c->in.buf[off] : 0;
}

void pgw_session_run(struct pgw_session *s, duckdb_connection con)
{
    struct pgw_conn *c = s->conn;
    s->con = con;
    s->out = &c->out;
    while (!c->close_after_job) {
        struct pgw_frame f;
        const unsigned char *buf = (const unsigned char *)c->in.buf + c->in_off;
        size_t avail = c->in.len - c->in_off;
        enum pgw_frame_rc rc = pgw_frame_message(buf, avail, VT_PGWIRE_MAX_MESSAGE_BYTES, &f);
        if (rc == PGW_FRAME_NEED)
            break;
        if (rc != PGW_FRAME_OK) {
            fatal(s, VT_ERR_PG_PROTOCOL,
                  rc == PGW_FRAME_TOO_BIG ? "message too long" : "invalid message length");
            break;
        }
        c->in_off += f.total;
        if (atomic_load(&c->peer_gone)) {
            c->close_after_job = true;
            break;
        }
        if (s->skip_to_sync && f.type != 'S' && f.type != 'X')
            continue;
        switch (f.type) {
        case 'Q': {
            const char *sql;
            size_t len;
            struct vt_error err = {0};
            if (pgw_parse_query(f.body, f.body_len, &sql, &len, &err) != VT_ERR_OK) {
                fatal(s, VT_ERR_PG_PROTOCOL, vt_error_message(&err));
                break;
            }
            pgw_simple_query(s, sql, len);
            break;
        }
        case 'P':
            pgw_on_parse(s, f.body, f.body_len);
            break;
        case 'B':
            pgw_on_bind(s, f.body, f.body_len);
            break;
        case 'D':
            pgw_on_describe(s, f.body, f.body_len, next_type(c, c->in_off) == 'E');
            break;
        case 'E':
            pgw_on_execute(s, f.body, f.body_len);
            break;
        case 'C':
            pgw_on_close(s, f.body, f.body_len);
            break;
        case 'S':
            pgw_on_sync(s);
            break;
        case 'H':
            if (pgw_conn_flush(c) != 0)
                c->close_after_job = true;
            break;
        case 'X':
            c->close_after_job = true;
            break;
        case 'd': case 'c': case 'f':
            break; /* COPY data outside COPY FROM: ignored, as PostgreSQL does */
        case 'F': {
            struct vt_error err = {0};
            vt_error_set(&err, VT_ERR_NOT_IMPLEMENTED, "the function-call protocol is not "
                                                       "supported");
            pgw_fail(s, &err);
            s->skip_to_sync = true;
            break;
        }
        default: {
            char m[64];
            snprintf(m, sizeof m, "invalid frontend message type %d", (unsigned char)f.type);
            fatal(s, VT_ERR_PG_PROTOCOL, m);
            break;
        }
        }
        if (s->out->overflow) {
            /* Out of memory building an answer: the stream is no longer
             * consistent. */
            c->close_after_job = true;
            break;
        }
        if (pgw_flush_if_full(s) != 0) {
            c->close_after_job = true;
            break;
        }
    }
    /* Consumed input goes; what is left is a partial message. */
    if (c->in_off) {
        memmove(c->in.buf, c->in.buf + c->in_off, c->in.len - c->in_off);
        c->in.len -= c->in_off;
        c->in_off = 0;
    }
    if (pgw_conn_flush(c) != 0)
        c->close_after_job = true;
    s->con = NULL;
}

