/*
 * One PostgreSQL session (pgwire_internal.h): settings, transaction status,
 * prepared statements and portals, and the protocol's message handling, run
 * by jobs on the engine's workers. Every statement that reads data goes the
 * one way /sql goes: the SQL gate (with PostgreSQL's names, sql_pg_names),
 * the datasets pinned at their current generation, exec_run on the worker's
 * connection with the DataRow sink below. What clients and pools send around
 * their queries (BEGIN/COMMIT/ROLLBACK, SAVEPOINT, DISCARD ALL, DEALLOCATE,
 * RESET, UNLISTEN, harmless SETs, SHOW) is answered here with PostgreSQL's
 * command tags; transactions are no-ops over read-only snapshots but keep
 * PostgreSQL's status ('I', 'T', 'E') so that drivers and pools see what
 * they expect, including "current transaction is aborted" after an error.
 *
 * Extended protocol: Parse runs the gate (errors come at Parse, as in
 * PostgreSQL); Bind pins the datasets for the portal (Describe and Execute
 * of a portal see one snapshot) and decodes the parameters; Describe of a
 * portal is answered by the RowDescription of the result itself when the
 * Execute follows, so types are exact; Execute with a row limit sends that
 * many rows and holds the rest of the result, bounded, for the next Execute.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "exec/exec.h"
#include "pgwire/pgwire_internal.h"
#include "query/query.h"
#include "sql/sql.h"
#include "util/arena.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

/* ---------------------------------------------------------------- settings */

enum { S_REPORT = 1, S_SET = 2 };

typedef bool (*setting_check_fn)(const char *in, char *out, size_t cap);

static bool chk_any(const char *in, char *out, size_t cap)
{
    snprintf(out, cap, "%s", in);
    return true;
}

/* application_name: printable ASCII (others become '?'), at most 63 bytes. */
static bool chk_name(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < cap && o < 63; i++)
        out[o++] = (in[i] >= 32 && in[i] < 127) ? in[i] : '?';
    out[o] = '\0';
    return true;
}

static bool chk_encoding(const char *in, char *out, size_t cap)
{
    if (!strcasecmp(in, "utf8") || !strcasecmp(in, "utf-8") || !strcasecmp(in, "unicode")) {
        snprintf(out, cap, "UTF8");
        return true;
    }
    if (!strcasecmp(in, "sql_ascii")) { /* bytes pass through unchanged either way */
        snprintf(out, cap, "SQL_ASCII");
        return true;
    }
    return false;
}

/* DateStyle: output is always ISO; the order word only matters for input,
 * which DuckDB reads in ISO anyway. */
static bool chk_datestyle(const char *in, char *out, size_t cap)
{
    const char *order = "MDY";
    char buf[128];
    snprintf(buf, sizeof buf, "%s", in);
    for (char *tok = buf; *tok;) {
        while (*tok == ' ' || *tok == ',')
            tok++;
        char *end = tok;
        while (*end && *end != ' ' && *end != ',')
            end++;
        char save = *end;
        *end = '\0';
        if (*tok) {
            if (!strcasecmp(tok, "iso")) {
            } else if (!strcasecmp(tok, "mdy") || !strcasecmp(tok, "us") ||
                       !strcasecmp(tok, "noneuropean")) {
                order = "MDY";
            } else if (!strcasecmp(tok, "dmy") || !strcasecmp(tok, "european")) {
                order = "DMY";
            } else if (!strcasecmp(tok, "ymd")) {
                order = "YMD";
            } else {
                return false; /* SQL, Postgres, German output styles */
            }
        }
        *end = save;
        tok = end;
    }
    snprintf(out, cap, "ISO, %s", order);
    return true;
}

static bool chk_interval(const char *in, char *out, size_t cap)
{
    if (strcasecmp(in, "postgres") != 0)
        return false;
    snprintf(out, cap, "postgres");
    return true;
}

static bool chk_on(const char *in, char *out, size_t cap)
{
    if (strcasecmp(in, "on") && strcasecmp(in, "true") && strcasecmp(in, "1") &&
        strcasecmp(in, "yes"))
        return false;
    snprintf(out, cap, "on");
    return true;
}

static bool chk_off(const char *in, char *out, size_t cap)
{
    if (strcasecmp(in, "off") && strcasecmp(in, "false") && strcasecmp(in, "0") &&
        strcasecmp(in, "no"))
        return false;
    snprintf(out, cap, "off");
    return true;
}

static bool chk_bool(const char *in, char *out, size_t cap)
{
    return chk_on(in, out, cap) || chk_off(in, out, cap);
}

static bool chk_hex(const char *in, char *out, size_t cap)
{
    if (strcasecmp(in, "hex") != 0)
        return false;
    snprintf(out, cap, "hex");
    return true;
}

static bool chk_efd(const char *in, char *out, size_t cap)
{
    char *end;
    long v = strtol(in, &end, 10);
    if (!*in || *end || v < -15 || v > 3)
        return false;
    snprintf(out, cap, "%ld", v);
    return true;
}

/* A duration in milliseconds (bare number) or with a unit: ms, s, min, h, d. */
static bool parse_ms(const char *in, int64_t *out_ms)
{
    char *end;
    double v = strtod(in, &end);
    if (end == in || v < 0)
        return false;
    while (*end == ' ')
        end++;
    double mul = !*end || !strcmp(end, "ms") ? 1
                 : !strcmp(end, "s")         ? 1000
                 : !strcmp(end, "min")       ? 60000
                 : !strcmp(end, "h")         ? 3600000
                 : !strcmp(end, "d")         ? 86400000
                                             : -1;
    if (mul < 0 || v * mul > 1e15)
        return false;
    *out_ms = (int64_t)(v * mul);
    return true;
}

static bool chk_duration(const char *in, char *out, size_t cap)
{
    int64_t ms;
    if (!parse_ms(in, &ms))
        return false;
    snprintf(out, cap, "%s", in);
    return true;
}

static bool chk_timezone(const char *in, char *out, size_t cap)
{
    size_t n = strlen(in);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)in[i]) || strchr("/_+-:. ", in[i])))
            return false;
    snprintf(out, cap, "%s", in);
    return true;
}

static bool chk_level(const char *in, char *out, size_t cap)
{
    static const char *const ok[] = {"debug5", "debug4", "debug3", "debug2", "debug1", "log",
                                     "notice", "warning", "error", "info", NULL};
    for (size_t i = 0; ok[i]; i++)
        if (!strcasecmp(in, ok[i])) {
            snprintf(out, cap, "%s", ok[i]);
            return true;
        }
    return false;
}

static bool chk_isolation(const char *in, char *out, size_t cap)
{
    static const char *const ok[] = {"read uncommitted", "read committed", "repeatable read",
                                     "serializable", NULL};
    for (size_t i = 0; ok[i]; i++)
        if (!strcasecmp(in, ok[i])) {
            snprintf(out, cap, "%s", ok[i]);
            return true;
        }
    return false;
}

struct setting {
    const char *name;
    const char *def;                /* NULL: filled per session */
    unsigned flags;
    setting_check_fn check;
    const char *desc;
};

/* The settings this server has. S_SET ones are what `SET` acknowledges
 * (harmless: they change nothing a read-only session could misuse); any
 * other SET goes to the gate, which refuses it (25006). */
static const struct setting settings[] = {
    {"server_version", NULL, S_REPORT, NULL, "Server version (PostgreSQL protocol level)."},
    {"server_version_num", NULL, 0, NULL, "Server version as a number."},
    {"server_encoding", "UTF8", S_REPORT, NULL, "Server character set encoding."},
    {"client_encoding", "UTF8", S_REPORT | S_SET, chk_encoding, "Client character set."},
    {"DateStyle", "ISO, MDY", S_REPORT | S_SET, chk_datestyle, "Date display format."},
    {"IntervalStyle", "postgres", S_REPORT | S_SET, chk_interval, "Interval display format."},
    {"TimeZone", "UTC", S_REPORT | S_SET, chk_timezone,
     "Time zone name; timestamptz values are always sent in UTC (+00)."},
    {"integer_datetimes", "on", S_REPORT, NULL, "Datetimes are integer based."},
    {"standard_conforming_strings", "on", S_REPORT | S_SET, chk_on,
     "Backslashes in '...' strings are literal."},
    {"is_superuser", "off", S_REPORT, NULL, "The user is not a superuser."},
    {"session_authorization", NULL, S_REPORT, NULL, "Session user name."},
    {"application_name", "", S_REPORT | S_SET, chk_name, "Application name."},
    {"default_transaction_read_only", "on", S_REPORT | S_SET, chk_on,
     "Every transaction is read-only."},
    {"in_hot_standby", "off", S_REPORT, NULL, "Not a standby."},
    {"transaction_read_only", "on", 0, NULL, "The transaction is read-only."},
    {"extra_float_digits", "1", S_SET, chk_efd, "Float output precision."},
    {"search_path", "\"$user\", public", S_SET, chk_any, "Schema search order."},
    {"statement_timeout", "0", S_SET, chk_duration,
     "Statement time limit (server.request_timeout_ms applies as well)."},
    {"lock_timeout", "0", S_SET, chk_duration, "No locks are taken."},
    {"idle_in_transaction_session_timeout", "0", S_SET, chk_duration, "Accepted, not used."},
    {"idle_session_timeout", "0", 0, NULL, "See server.pgwire.idle_timeout_secs."},
    {"client_min_messages", "notice", S_SET, chk_level, "Message levels sent."},
    {"bytea_output", "hex", S_SET, chk_hex, "bytea output format."},
    {"transaction_isolation", "repeatable read", S_SET, chk_isolation,
     "Each statement reads one snapshot of the datasets."},
    {"default_transaction_isolation", "repeatable read", S_SET, chk_isolation,
     "Each statement reads one snapshot of the datasets."},
    {"default_transaction_deferrable", "off", S_SET, chk_bool, "Accepted, not used."},
    {"max_identifier_length", "63", 0, NULL, "Longest identifier."},
    {"lc_collate", "C", 0, NULL, "Collation order."},
    {"lc_ctype", "C", 0, NULL, "Character classification."},
    {"lc_messages", "C", S_SET, chk_any, "Message language (messages are English)."},
    {"lc_monetary", "C", S_SET, chk_any, "Accepted, not used."},
    {"lc_numeric", "C", S_SET, chk_any, "Accepted, not used."},
    {"lc_time", "C", S_SET, chk_any, "Accepted, not used."},
    {"jit", "off", S_SET, chk_bool, "Accepted, not used."},
    {"max_connections", NULL, 0, NULL, "server.pgwire.max_connections."},
    {"row_security", "on", S_SET, chk_bool, "Accepted, not used."},
};

#define N_SETTINGS (sizeof settings / sizeof settings[0])
#define VALUE_MAX 256

static int setting_index(const char *name)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (!strcasecmp(settings[i].name, name))
            return (int)i;
    return -1;
}

/* ------------------------------------------------------- session objects */

struct prepared {
    char *name;
    struct pgw_stmt st;             /* its kind; session statements' fields */
    char *sql;                      /* SQL and COPY: the text the gate checked */
    char **deps;                    /* datasets it reads (from the gate at Parse) */
    size_t ndeps;
    char *rewritten;                /* mapped text, or NULL: sql runs as written */
    bool reads_catalog;
    struct sql_lookup *lookup;      /* an equality lookup (index fast path), or NULL */
    uint32_t *oids;                 /* parameter types the client declared */
    size_t noids;
    bool described;                 /* Describe(S) answered from shape */
    struct exec_shape shape;
    int refs;                       /* the session's table + portals */
    size_t mem;
};

enum portal_state { P_READY, P_SUSPENDED, P_DONE };

struct portal {
    char *name;
    struct prepared *stmt;
    struct arena arena;             /* parameter values */
    struct query_value *params;
    size_t nparams;
    int16_t *formats;
    size_t nformats;
    struct sql_snapshot snap;       /* pinned at Bind */
    bool pinned;
    enum portal_state state;
    bool describe_pending;          /* Describe(P): RowDescription comes with the result */
    /* what the client was told about the columns (Describe S or P) */
    bool told;
    size_t told_n;
    uint32_t *told_oids;
    /* rows of a suspended result, as DataRow messages */
    struct strbuf held;
    size_t held_off;
    uint64_t held_rows;
    bool held_truncated;
    size_t held_counted;            /* of held.len, counted in session.held */
    uint64_t rows;                  /* sent so far */
    char tag[32];                   /* CommandComplete of a finished portal */
    size_t mem;
};

struct pgw_session {
    struct pgw_conn *conn;
    struct pgw_session_config cfg;
    char user[64], database[64];
    char server_version[32];
    char values[N_SETTINGS][VALUE_MAX];
    char startup[N_SETTINGS][VALUE_MAX]; /* RESET goes back here */
    char tx;                        /* 'I', 'T', 'E' */
    bool skip_to_sync;              /* extended protocol: after an error */
    char savepoints[16][PGW_NAME_MAX];
    size_t n_savepoints;
    struct prepared *stmts[VT_PGWIRE_MAX_STATEMENTS];
    size_t n_stmts;
    struct prepared *unnamed;
    struct portal *portals[VT_PGWIRE_MAX_PORTALS];
    size_t n_portals;
    struct portal *unnamed_portal;
    size_t mem;                     /* bytes held for statements and portals */
    size_t held;                    /* rows held by all portals (bounded together) */
    struct strbuf *out;
    duckdb_connection con;          /* of the running job */
};

/* ------------------------------------------------------------- errors */

const char *pgw_duckdb_sqlstate(const char *msg)
{
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

static void error_out(struct strbuf *out, const struct vt_error *err, const char *severity)
{
    const char *msg = vt_error_message(err);
    const char *state = vt_err_sqlstate(err->code);
    if (err->code == VT_ERR_QUERY_FAILED)
        state = pgw_duckdb_sqlstate(msg);
    pgw_write_error(out, 'E', severity, state, msg, NULL, NULL);
}

static void notice(struct pgw_session *s, const char *state, const char *msg)
{
    pgw_write_error(s->out, 'N', "WARNING", state, msg, NULL, NULL);
}

/* An error inside a statement: reported, and the transaction (if one is
 * open) fails until ROLLBACK, as in PostgreSQL. */
static void fail(struct pgw_session *s, const struct vt_error *err)
{
    error_out(s->out, err, "ERROR");
    if (s->tx == 'T')
        s->tx = 'E';
}

/* ------------------------------------------------------------ lifecycle */

static void set_value(struct pgw_session *s, size_t i, const char *v)
{
    snprintf(s->values[i], VALUE_MAX, "%s", v);
}

static void report(struct pgw_session *s, size_t i)
{
    if (settings[i].flags & S_REPORT)
        pgw_write_parameter_status(s->out, settings[i].name, s->values[i]);
}

/* Applies name=value (a startup parameter or -c option). */
static enum vt_err apply_setting(struct pgw_session *s, const char *name, const char *value,
                                 bool at_startup, struct vt_error *err)
{
    int i = setting_index(name);
    if (i < 0 || !(settings[i].flags & S_SET)) {
        if (at_startup)
            return VT_ERR_OK; /* PostgreSQL would know it; nothing here depends on it */
        return vt_error_set(err, VT_ERR_PG_UNKNOWN_SETTING,
                            "unrecognized configuration parameter \"%s\"", name);
    }
    char v[VALUE_MAX];
    if (!settings[i].check(value, v, sizeof v))
        return vt_error_set(err, VT_ERR_PG_INVALID_SETTING,
                            "invalid value for parameter \"%s\": \"%.100s\"", settings[i].name,
                            value);
    set_value(s, (size_t)i, v);
    return VT_ERR_OK;
}

/* The `options` startup parameter: "-c name=value" and "--name=value". */
static enum vt_err apply_options(struct pgw_session *s, const char *opts, struct vt_error *err)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", opts);
    char *p = buf;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char *tok = p;
        while (*p && *p != ' ')
            p++;
        if (*p)
            *p++ = '\0';
        if (!strcmp(tok, "-c")) {
            while (*p == ' ')
                p++;
            tok = p;
            while (*p && *p != ' ')
                p++;
            if (*p)
                *p++ = '\0';
        } else if (!strncmp(tok, "--", 2)) {
            tok += 2;
        } else {
            continue;
        }
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        for (char *c = tok; *c; c++)
            if (*c == '-')
                *c = '_';
        if (apply_setting(s, tok, eq + 1, true, err) != VT_ERR_OK)
            return err->code;
    }
    return VT_ERR_OK;
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
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const char *d = settings[i].def;
        if (!strcmp(settings[i].name, "server_version"))
            d = s->server_version;
        else if (!strcmp(settings[i].name, "server_version_num"))
            d = "150000";
        else if (!strcmp(settings[i].name, "session_authorization"))
            d = s->user;
        else if (!d)
            d = "";
        set_value(s, i, d);
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(names[i], "user") || !strcmp(names[i], "database") ||
            !strncmp(names[i], "_pq_.", 5))
            continue;
        if (!strcmp(names[i], "replication")) {
            if (chk_off(values[i], (char[8]){0}, 8))
                continue;
            vt_error_set(err, VT_ERR_NOT_IMPLEMENTED, "replication connections are not supported");
            free(s);
            return NULL;
        }
        enum vt_err rc = !strcmp(names[i], "options")
                             ? apply_options(s, values[i], err)
                             : apply_setting(s, names[i], values[i], true, err);
        if (rc != VT_ERR_OK) {
            free(s);
            return NULL;
        }
    }
    memcpy(s->startup, s->values, sizeof s->values);
    s->out = &conn->out;
    return s;
}

void pgw_session_greet(struct pgw_session *s, struct strbuf *out)
{
    s->out = out;
    for (size_t i = 0; i < N_SETTINGS; i++)
        report(s, i);
    pgw_write_backend_key(out, s->conn->pid, s->conn->secret);
    pgw_write_ready(out, s->tx);
}

static void prepared_put(struct pgw_session *s, struct prepared *p)
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

static void portal_free(struct pgw_session *s, struct portal *p)
{
    if (!p)
        return;
    s->mem -= p->mem;
    s->held -= p->held_counted;
    free(p->name);
    prepared_put(s, p->stmt);
    arena_release(&p->arena);
    free(p->formats);
    if (p->pinned)
        sql_snapshot_release(&p->snap);
    free(p->told_oids);
    sb_release(&p->held);
    free(p);
}

static void close_portals(struct pgw_session *s)
{
    for (size_t i = 0; i < s->n_portals; i++)
        portal_free(s, s->portals[i]);
    s->n_portals = 0;
    portal_free(s, s->unnamed_portal);
    s->unnamed_portal = NULL;
}

static void drop_statements(struct pgw_session *s)
{
    for (size_t i = 0; i < s->n_stmts; i++)
        prepared_put(s, s->stmts[i]);
    s->n_stmts = 0;
}

void pgw_session_destroy(struct pgw_session *s)
{
    if (!s)
        return;
    close_portals(s);
    drop_statements(s);
    prepared_put(s, s->unnamed);
    free(s);
}

static struct prepared *find_statement(struct pgw_session *s, const char *name, size_t *out_i)
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

static struct portal *find_portal(struct pgw_session *s, const char *name, size_t *out_i)
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

static int flush_if_full(struct pgw_session *s)
{
    struct pgw_conn *c = s->conn;
    if (c->out.len - c->out_off < VT_PGWIRE_OUT_FLUSH_BYTES)
        return 0;
    return pgw_conn_flush(c);
}

/* -------------------------------------------------------------- the sink */

enum sink_mode { SINK_SIMPLE, SINK_PORTAL, SINK_COPY };

struct pgw_sink {
    struct exec_sink base;
    struct pgw_session *s;
    enum sink_mode mode;
    struct portal *portal;
    uint64_t limit;                 /* rows to send before suspending; 0 = all */
    struct pgw_rows *enc;
    uint64_t sent;
    bool suspended;                 /* the limit was reached with rows left */
    bool ended;
    bool began;
    struct vt_error err;
    struct pgw_copy_options copy;
    bool copy_header;
};

static struct pgw_sink *sink_of(struct exec_sink *b)
{
    return (struct pgw_sink *)b;
}

static struct pgw_format session_format(const struct pgw_session *s)
{
    int i = setting_index("extra_float_digits");
    return (struct pgw_format){.extra_float_digits = (int)strtol(s->values[i], NULL, 10)};
}

/* The client learnt the statement's columns from Describe(S): the portal's
 * result must match them. */
static void tell_from_statement(struct portal *p)
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
    struct portal *p = k->portal;
    if (k->mode == SINK_PORTAL) {
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
    struct pgw_format fmt = session_format(s);
    if (k->mode == SINK_COPY) {
        int16_t zero = 0;
        k->enc = pgw_rows_create(n, types, &zero, 1, &fmt, NULL, err);
    } else {
        k->enc = pgw_rows_create(n, types, formats, nformats, &fmt, as_text, err);
    }
    if (!k->enc) {
        rc = err->code;
        goto out;
    }
    if (k->mode == SINK_SIMPLE) {
        pgw_write_row_description(s->out, n, names, types, NULL, 0);
    } else if (k->mode == SINK_PORTAL && p->describe_pending) {
        pgw_write_row_description(s->out, n, names, types, formats, nformats);
        p->describe_pending = false;
        p->told = true;
        p->told_n = n;
        free(p->told_oids);
        p->told_oids = calloc(n ? n : 1, sizeof *p->told_oids);
        for (size_t i = 0; p->told_oids && i < n; i++)
            p->told_oids[i] = pgw_type_of(types[i]).oid;
    } else if (k->mode == SINK_COPY) {
        size_t m = pgw_msg_begin(s->out, 'H');
        pgw_put_u8(s->out, 0);
        pgw_put_i16(s->out, (int16_t)n);
        for (size_t i = 0; i < n; i++)
            pgw_put_i16(s->out, 0);
        pgw_msg_end(s->out, m);
        if (k->copy_header) {
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

static enum vt_err sink_chunk(struct exec_sink *b, duckdb_data_chunk chunk, struct vt_error *err)
{
    struct pgw_sink *k = sink_of(b);
    struct pgw_session *s = k->s;
    uint64_t n = duckdb_data_chunk_get_size(chunk);
    uint64_t send = n;
    if (k->mode == SINK_PORTAL && k->limit) {
        uint64_t room = k->limit > k->sent ? k->limit - k->sent : 0;
        send = n < room ? n : room;
    }
    int rc = 0;
    if (k->mode == SINK_COPY)
        rc = pgw_rows_copy(k->enc, chunk, &k->copy, s->out);
    else if (send)
        rc = pgw_rows_data(k->enc, chunk, 0, send, s->out);
    if (rc != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
    k->sent += k->mode == SINK_COPY ? n : send;
    if (send < n) {
        /* Past the Execute's row limit: held for the next Execute. */
        struct portal *p = k->portal;
        k->suspended = true;
        if (pgw_rows_data(k->enc, chunk, send, n - send, &p->held) != 0)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
        p->held_rows += n - send;
        s->held += p->held.len - p->held_counted;
        p->held_counted = p->held.len;
        if (s->held > VT_PGWIRE_MAX_SUSPENDED_BYTES) {
            p->held_truncated = true;
            return VT_ERR_RESULT_CAPPED;
        }
    }
    if (flush_if_full(s) != 0)
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

static int64_t statement_deadline(const struct pgw_session *s)
{
    int64_t t = s->cfg.request_timeout_ms;
    int64_t st = 0;
    if (parse_ms(s->values[setting_index("statement_timeout")], &st) && st > 0 &&
        (t <= 0 || st < t))
        t = st;
    return t > 0 ? time_mono_ms() + t : 0;
}

static void start_statement(struct pgw_session *s, int64_t deadline)
{
    struct eng_job *job = &s->conn->job;
    atomic_store(&job->timed_out, false);
    atomic_store(&job->deadline_ms, deadline);
}

static void end_statement(struct pgw_session *s)
{
    atomic_store(&s->conn->job.deadline_ms, 0);
}

/* The error to report for a stopped run. false: nothing is to be reported
 * (the client is gone). */
static bool stopped_error(struct pgw_session *s, struct vt_error *err)
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
static enum vt_err sync_catalog(struct pgw_session *s, struct vt_error *err)
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
    struct pgw_cat_setting set[N_SETTINGS + 5];
    size_t ns = 0;
    for (size_t i = 0; i < N_SETTINGS; i++)
        set[ns++] = (struct pgw_cat_setting){settings[i].name, s->values[i], settings[i].desc};
    set[ns++] = (struct pgw_cat_setting){"vt.user", s->user, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.database", s->database, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.version", version, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.pid", pid, NULL};
    set[ns++] = (struct pgw_cat_setting){"vt.started", started, NULL};
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

static bool is_dataset(void *ctx, const char *name)
{
    return cat_has_dataset(ctx, name);
}

static const struct sql_gate_options gate_simple = {.allow_params = false, .lookups = true,
                                                     .pg = &pgw_pg_names};
static const struct sql_gate_options gate_extended = {.allow_params = true, .lookups = true,
                                                       .pg = &pgw_pg_names};

/* Runs a checked statement: the snapshot is taken (or was pinned at Bind),
 * the sink decides the messages. Returns true when it ended well; false
 * after an error was reported (or the client is gone). */
static bool run_plan(struct pgw_session *s, const char *sql, const struct sql_snapshot *snap,
                     const struct query_value *params, size_t nparams, bool one_off,
                     struct pgw_sink *k)
{
    struct arena arena;
    arena_init(&arena, 0);
    struct exec_plan plan = {
        .kind = EXEC_SQL,
        .sql = sql,
        .params = params,
        .nparams = nparams,
        .views = snap->views,
        .nviews = snap->n,
        .job = &s->conn->job,
        .arena = &arena,
        .one_off = one_off,
    };
    k->base.ops = &sink_ops;
    exec_run(&plan, &k->base, s->con);
    arena_release(&arena);
    pgw_rows_destroy(k->enc);
    k->enc = NULL;
    if (k->err.code != VT_ERR_OK) {
        if (stopped_error(s, &k->err))
            fail(s, &k->err);
        return false;
    }
    return true;
}

/* ------------------------------------------------- the index fast path
 *
 * An equality lookup (sql_lookup: SELECT * | columns FROM a dataset WHERE
 * col = value AND ...) is what /query answers from the dataset's equality
 * index in microseconds, where DuckDB's point query costs ~0.7 ms on a 1M-row
 * table. Text results only; the index gives rows as typed cells (the values
 * as DuckDB's vectors hold them), which pgw_rows_cells turns into DataRows
 * with the same code as DuckDB's chunks. Whatever the index cannot answer
 * exactly (a column it does not cover, too many rows, a value of another
 * type, a list column) runs as SQL instead: nothing has been sent then. */

struct fast_sink {
    struct exec_sink base;
    struct pgw_rows *enc;
    const size_t *cols;             /* the projection, as the index numbers columns */
    size_t ncols;
    const char *const *names;
    const duckdb_logical_type *types;
    bool describe;
    uint64_t rows;
    struct strbuf buf;              /* the answer, sent when it is certain */
    struct vt_error err;
};

static enum vt_err fast_begin(struct exec_sink *b, duckdb_result *res, struct vt_error *err)
{
    struct fast_sink *k = (struct fast_sink *)b;
    if (res)
        return vt_error_set(err, VT_ERR_INTERNAL, "unexpected result");
    if (k->describe)
        pgw_write_row_description(&k->buf, k->ncols, k->names, k->types, NULL, 0);
    return VT_ERR_OK;
}

static enum vt_err fast_row(struct exec_sink *b, const struct index_row *row,
                            struct vt_error *err)
{
    struct fast_sink *k = (struct fast_sink *)b;
    if (pgw_rows_cells(k->enc, row->cells, k->cols, &k->buf) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    k->rows++;
    return VT_ERR_OK;
}

static enum vt_err fast_count(struct exec_sink *b, uint64_t n, struct vt_error *err)
{
    (void)b;
    (void)n;
    return vt_error_set(err, VT_ERR_INTERNAL, "unexpected count");
}

static void fast_end(struct exec_sink *b)
{
    (void)b;
}

static void fast_fail(struct exec_sink *b, const struct vt_error *err)
{
    ((struct fast_sink *)b)->err = *err;
}

static const struct exec_sink_ops fast_ops = {
    .begin = fast_begin, .chunk = NULL, .row = fast_row, .count = fast_count,
    .end = fast_end, .fail = fast_fail,
};

/* A term's value as JSON (the constant, or the parameter). NULL: not one the
 * index can take. */
static bool integer_type(duckdb_type t)
{
    return t == DUCKDB_TYPE_TINYINT || t == DUCKDB_TYPE_SMALLINT || t == DUCKDB_TYPE_INTEGER ||
           t == DUCKDB_TYPE_BIGINT || t == DUCKDB_TYPE_UTINYINT || t == DUCKDB_TYPE_USMALLINT ||
           t == DUCKDB_TYPE_UINTEGER;
}

/* A term's value as JSON (the constant, or the parameter; a parameter sent
 * as text, such as pgbench's, is read as the integer column it is compared
 * with). NULL: not one the index can take. */
static json_t *term_value(const struct sql_lookup_term *t, const struct query_value *params,
                          size_t nparams, const struct cat_generation *gen)
{
    if (!t->param)
        return json_loads(t->json, JSON_DECODE_ANY, NULL);
    if ((size_t)t->param > nparams)
        return NULL;
    const struct query_value *v = &params[t->param - 1];
    switch (v->kind) {
    case QUERY_VALUE_INT64: return json_integer(v->u.i);
    case QUERY_VALUE_BOOL: return json_boolean(v->u.b);
    case QUERY_VALUE_VARCHAR: {
        for (size_t c = 0; c < gen->n_cols; c++) {
            if (strcmp(gen->cols[c].name, t->column) != 0 || !integer_type(gen->cols[c].type))
                continue;
            char *end;
            errno = 0;
            long long x = strtoll(v->u.s.ptr, &end, 10);
            bool digits = v->u.s.len > 0 && (isdigit((unsigned char)v->u.s.ptr[0]) ||
                                              v->u.s.ptr[0] == '-');
            if (!digits || *end || errno)
                return NULL;
            return json_integer(x);
        }
        return json_stringn(v->u.s.ptr, v->u.s.len);
    }
    default: return NULL;
    }
}

/* 1: answered (rows sent, or an error reported); 0: not from the index
 * (nothing sent: run the SQL). */
static int fast_lookup(struct pgw_session *s, const struct sql_lookup *l,
                       const struct sql_snapshot *snap, const struct query_value *params,
                       size_t nparams, bool describe, uint64_t *out_rows, bool *out_ok)
{
    if (!l || snap->n != 1 || strcmp(snap->views[0].name, l->dataset) != 0)
        return 0;
    struct cat_generation *gen = snap->pins[0].gen;
    const struct index_fastpath *fp = cat_generation_fastpath(gen);
    if (!fp || !index_fastpath_has_rows(fp) || index_fastpath_columns(fp) != gen->n_cols)
        return 0;
    size_t ncols = l->ncolumns ? l->ncolumns : gen->n_cols;
    size_t *cols = calloc(ncols ? ncols : 1, sizeof *cols);
    const char **names = calloc(ncols ? ncols : 1, sizeof *names);
    duckdb_logical_type *types = calloc(ncols ? ncols : 1, sizeof *types);
    json_t *body = json_object();
    json_t *preds = json_array();
    struct pgw_rows *enc = NULL;
    int answered = 0;
    if (!cols || !names || !types || !body || !preds)
        goto out;
    json_t *colnames = l->ncolumns ? json_array() : NULL;
    for (size_t i = 0; i < ncols; i++) {
        size_t c = i;
        if (l->ncolumns) {
            for (c = 0; c < gen->n_cols && strcmp(gen->cols[c].name, l->columns[i]) != 0; c++)
                ;
            if (c == gen->n_cols) {
                json_decref(colnames);
                goto out;
            }
            json_array_append_new(colnames, json_string(gen->cols[c].name));
        }
        cols[i] = c;
        names[i] = gen->cols[c].name;
        types[i] = index_fastpath_column_type(fp, c);
    }
    if (colnames)
        json_object_set_new(body, "columns", colnames);
    struct vt_error err = {0};
    struct pgw_format fmt = session_format(s);
    int16_t zero = 0;
    enc = pgw_rows_create(ncols, types, &zero, 1, &fmt, NULL, &err);
    if (!enc || !pgw_rows_cells_supported(enc))
        goto out;
    for (size_t i = 0; i < l->nterms; i++) {
        json_t *val = term_value(&l->terms[i], params, nparams, gen);
        if (!val)
            goto out;
        json_t *pr = json_object();
        json_object_set_new(pr, "col", json_string(l->terms[i].column));
        json_object_set_new(pr, "op", json_string("eq"));
        json_object_set_new(pr, "val", val);
        json_array_append_new(preds, pr);
    }
    json_object_set(body, "predicates", preds);
    json_object_set_new(body, "page_size", json_integer(QUERY_DEFAULT_MAX_PAGE_SIZE));
    struct arena arena;
    arena_init(&arena, 0);
    struct query_request qr;
    struct query_options qo = {.mode = QUERY_PAGED, .max_page_size = QUERY_DEFAULT_MAX_PAGE_SIZE};
    if (exec_parse_query(body, gen, &qo, &arena, &qr, &err) == VT_ERR_OK) {
        struct exec_plan plan = {
            .kind = EXEC_ROWS,
            .query = &qr,
            .gen = gen,
            .job = &s->conn->job,
            .arena = &arena,
        };
        struct fast_sink k = {.base.ops = &fast_ops, .enc = enc, .cols = cols, .ncols = ncols,
                              .names = names, .types = types, .describe = describe};
        sb_init(&k.buf, 0);
        enum exec_fast r = exec_try_fast(&plan, &k.base, QUERY_DEFAULT_MAX_PAGE_SIZE - 1);
        if (r == EXEC_FAST_DONE && k.err.code == VT_ERR_OK) {
            sb_add(s->out, k.buf.buf ? k.buf.buf : "", k.buf.len);
            if (flush_if_full(s) != 0)
                vt_error_set(&k.err, VT_ERR_CLIENT_GONE, NULL);
        }
        sb_release(&k.buf);
        if (r == EXEC_FAST_DONE) {
            log_debug("pgwire: session %d: lookup on %s answered from the index", s->conn->pid,
                      l->dataset);
            answered = 1;
            *out_rows = k.rows;
            *out_ok = k.err.code == VT_ERR_OK;
            if (!*out_ok && stopped_error(s, &k.err))
                fail(s, &k.err);
        }
    }
    arena_release(&arena);
out:
    pgw_rows_destroy(enc);
    json_decref(preds);
    json_decref(body);
    free(cols);
    free(names);
    free(types);
    return answered;
}

/* A simple-Query SQL statement (or the query of COPY ... TO STDOUT). */
static bool simple_sql(struct pgw_session *s, const char *text, size_t len, bool copy,
                       const struct pgw_stmt *st)
{
    struct vt_error err = {0};
    char *owned = strndup(text, len);
    char *norm = owned ? pgw_normalize(owned, len) : NULL;
    const char *sql = norm ? norm : owned;
    if (!sql) {
        free(owned);
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        fail(s, &err);
        return false;
    }
    int64_t deadline = statement_deadline(s);
    start_statement(s, deadline);
    struct sql_snapshot snap;
    memset(&snap, 0, sizeof snap);
    bool ok = false;
    uint64_t rows = 0;
    if (sql_snapshot_take_opts(s->cfg.catalog, s->con, sql, &gate_simple,
                               deadline ? deadline : time_mono_ms() + 60000, &snap,
                               &err) != VT_ERR_OK ||
        (snap.reads_catalog && sync_catalog(s, &err) != VT_ERR_OK)) {
        fail(s, &err);
    } else if (!copy && fast_lookup(s, snap.lookup, &snap, NULL, 0, true, &rows, &ok)) {
        if (ok) {
            char tag[48];
            snprintf(tag, sizeof tag, "SELECT %" PRIu64, rows);
            pgw_write_command_complete(s->out, tag);
        }
    } else {
        struct pgw_sink k = {.s = s, .mode = copy ? SINK_COPY : SINK_SIMPLE};
        if (copy) {
            k.copy.format = st->copy_format;
            k.copy.delimiter = st->copy_delimiter;
            k.copy.null_text = st->copy_null[0] || st->copy_format == PGW_COPY_CSV
                                   ? st->copy_null
                                   : "\\N";
            k.copy_header = st->copy_header;
        }
        ok = run_plan(s, snap.rewritten ? snap.rewritten : sql, &snap, NULL, 0, true, &k);
        if (ok) {
            char tag[48];
            if (copy) {
                pgw_write_empty(s->out, 'c');
                snprintf(tag, sizeof tag, "COPY %" PRIu64, k.sent);
            } else {
                snprintf(tag, sizeof tag, "SELECT %" PRIu64, k.sent);
            }
            pgw_write_command_complete(s->out, tag);
        }
    }
    end_statement(s);
    sql_snapshot_release(&snap);
    free(norm);
    free(owned);
    return ok;
}

/* SHOW name / SHOW ALL: rows (with a RowDescription unless described). */
static bool show(struct pgw_session *s, const struct pgw_stmt *st, bool describe)
{
    if (st->all) {
        if (describe) {
            size_t m = pgw_msg_begin(s->out, 'T');
            pgw_put_i16(s->out, 3);
            static const char *const cols[] = {"name", "setting", "description"};
            for (int i = 0; i < 3; i++) {
                pgw_put_str(s->out, cols[i]);
                pgw_put_i32(s->out, 0);
                pgw_put_i16(s->out, 0);
                pgw_put_i32(s->out, PGW_OID_TEXT);
                pgw_put_i16(s->out, -1);
                pgw_put_i32(s->out, -1);
                pgw_put_i16(s->out, 0);
            }
            pgw_msg_end(s->out, m);
        }
        for (size_t i = 0; i < N_SETTINGS; i++) {
            const char *v[3] = {settings[i].name, s->values[i], settings[i].desc};
            size_t m = pgw_msg_begin(s->out, 'D');
            pgw_put_i16(s->out, 3);
            for (int c = 0; c < 3; c++) {
                pgw_put_i32(s->out, (int32_t)strlen(v[c]));
                sb_adds(s->out, v[c]);
            }
            pgw_msg_end(s->out, m);
        }
        pgw_write_command_complete(s->out, "SHOW");
        return true;
    }
    int i = setting_index(st->name);
    if (i < 0) {
        struct vt_error err = {0};
        vt_error_set(&err, VT_ERR_PG_UNKNOWN_SETTING, "unrecognized configuration parameter \"%s\"",
                     st->name);
        fail(s, &err);
        return false;
    }
    if (describe) {
        size_t m = pgw_msg_begin(s->out, 'T');
        pgw_put_i16(s->out, 1);
        pgw_put_str(s->out, settings[i].name);
        pgw_put_i32(s->out, 0);
        pgw_put_i16(s->out, 0);
        pgw_put_i32(s->out, PGW_OID_TEXT);
        pgw_put_i16(s->out, -1);
        pgw_put_i32(s->out, -1);
        pgw_put_i16(s->out, 0);
        pgw_msg_end(s->out, m);
    }
    size_t m = pgw_msg_begin(s->out, 'D');
    pgw_put_i16(s->out, 1);
    pgw_put_i32(s->out, (int32_t)strlen(s->values[i]));
    sb_adds(s->out, s->values[i]);
    pgw_msg_end(s->out, m);
    pgw_write_command_complete(s->out, "SHOW");
    return true;
}

static void reset_settings(struct pgw_session *s)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        if (strcmp(s->values[i], s->startup[i]) != 0) {
            memcpy(s->values[i], s->startup[i], VALUE_MAX);
            report(s, i);
        }
    }
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

/* Statements answered here. false after an error was reported. `text` is
 * the statement for the gate when a SET is not one of ours. */
static bool session_statement(struct pgw_session *s, const struct pgw_stmt *st, bool describe,
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
            fail(s, &err);
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
        drop_statements(s); /* portals close at the end of the query or at Sync */
        reset_settings(s);
        pgw_write_command_complete(s->out, "DISCARD ALL");
        return true;
    case PGW_STMT_DEALLOCATE:
        if (st->all) {
            drop_statements(s);
            pgw_write_command_complete(s->out, "DEALLOCATE ALL");
            return true;
        } else {
            size_t at;
            struct prepared *p = *st->name ? find_statement(s, st->name, &at) : NULL;
            if (!p) {
                vt_error_set(&err, VT_ERR_PG_NO_STATEMENT,
                             "prepared statement \"%s\" does not exist", st->name);
                fail(s, &err);
                return false;
            }
            s->stmts[at] = s->stmts[--s->n_stmts];
            prepared_put(s, p);
            pgw_write_command_complete(s->out, "DEALLOCATE");
            return true;
        }
    case PGW_STMT_RESET:
        if (st->all) {
            reset_settings(s);
        } else {
            int i = setting_index(st->name);
            if (i < 0 || !(settings[i].flags & S_SET)) {
                if (i < 0) {
                    vt_error_set(&err, VT_ERR_PG_UNKNOWN_SETTING,
                                 "unrecognized configuration parameter \"%s\"", st->name);
                } else {
                    vt_error_set(&err, VT_ERR_SQL_NOT_READ_ONLY,
                                 "parameter \"%s\" cannot be changed", settings[i].name);
                }
                fail(s, &err);
                return false;
            }
            if (strcmp(s->values[i], s->startup[i]) != 0) {
                memcpy(s->values[i], s->startup[i], VALUE_MAX);
                report(s, (size_t)i);
            }
        }
        pgw_write_command_complete(s->out, "RESET");
        return true;
    case PGW_STMT_UNLISTEN:
        pgw_write_command_complete(s->out, "UNLISTEN");
        return true;
    case PGW_STMT_SET_TRANSACTION:
        pgw_write_command_complete(s->out, "SET");
        return true;
    case PGW_STMT_SET: {
        int i = setting_index(st->name);
        if (i < 0 || !(settings[i].flags & S_SET)) {
            /* Not ours: the gate decides (and refuses: not a SELECT). */
            char *q = strndup(text, len);
            struct sql_checked chk;
            if (q && sql_gate_check_opts(s->con, q, &gate_simple, is_dataset, s->cfg.catalog, &chk,
                                            &err) ==
                         VT_ERR_OK) {
                sql_checked_release(&chk); /* never: SET is not a SELECT */
                vt_error_set(&err, VT_ERR_SQL_NOT_READ_ONLY, "SET %s is not allowed", st->name);
            }
            if (!q)
                vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
            free(q);
            fail(s, &err);
            return false;
        }
        if (st->is_default) {
            memcpy(s->values[i], s->startup[i], VALUE_MAX);
        } else {
            char v[VALUE_MAX];
            if (!settings[i].check(st->value, v, sizeof v)) {
                vt_error_set(&err, VT_ERR_PG_INVALID_SETTING,
                             "invalid value for parameter \"%s\": \"%.100s\"", settings[i].name,
                             st->value);
                fail(s, &err);
                return false;
            }
            set_value(s, (size_t)i, v);
        }
        report(s, (size_t)i);
        pgw_write_command_complete(s->out, "SET");
        return true;
    }
    case PGW_STMT_SHOW:
        return show(s, st, describe);
    default:
        return true;
    }
}

/* Whether a statement may run in a failed transaction. */
static bool allowed_in_failed_tx(enum pgw_stmt_kind k)
{
    return k == PGW_STMT_COMMIT || k == PGW_STMT_ROLLBACK || k == PGW_STMT_ROLLBACK_TO;
}

static void tx_aborted(struct pgw_session *s)
{
    struct vt_error err = {0};
    vt_error_set(&err, VT_ERR_PG_TX_ABORTED, NULL);
    error_out(s->out, &err, "ERROR");
}

/* ------------------------------------------------------------ simple Query */

static void simple_query(struct pgw_session *s, const char *sql, size_t len)
{
    /* The unnamed statement and portal end with a simple Query. */
    prepared_put(s, s->unnamed);
    s->unnamed = NULL;
    portal_free(s, s->unnamed_portal);
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
            fail(s, &err);
            pgw_write_ready(s->out, s->tx);
            return;
        }
        all = malloc(n * sizeof *all);
        if (!all) {
            struct vt_error err = {0};
            vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
            fail(s, &err);
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
            fail(s, &err);
            break;
        }
        bool ok;
        if (s->tx == 'E' && !allowed_in_failed_tx(st.kind)) {
            tx_aborted(s);
            ok = false;
        } else if (st.kind == PGW_STMT_SQL) {
            ok = simple_sql(s, text, all[i].len, false, NULL);
        } else if (st.kind == PGW_STMT_COPY_OUT) {
            ok = simple_sql(s, st.copy_query, strlen(st.copy_query), true, &st);
        } else {
            ok = session_statement(s, &st, true, text, all[i].len);
        }
        pgw_stmt_release(&st);
        if (!ok || s->conn->close_after_job || flush_if_full(s) != 0)
            break;
    }
    if (all != spans)
        free(all);
    if (s->tx == 'I')
        close_portals(s);
    if (!s->conn->close_after_job)
        pgw_write_ready(s->out, s->tx);
    atomic_store(&s->conn->cancel_requested, false);
    atomic_store(&s->conn->job.cancelled, atomic_load(&s->conn->peer_gone));
}

/* -------------------------------------------------------- extended protocol */

static void ext_error(struct pgw_session *s, const struct vt_error *err)
{
    fail(s, err);
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

static void on_parse(struct pgw_session *s, const unsigned char *body, size_t len)
{
    struct vt_error err = {0};
    struct pgw_parse_msg m;
    if (pgw_parse_parse(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    struct prepared *old = find_statement(s, m.name, NULL);
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
    size_t mem = sizeof(struct prepared) + strlen(m.name) + 2 * m.query_len + 4 * m.nparams + 64;
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
    struct prepared *p = calloc(1, sizeof *p);
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
        } else if (sql_gate_check_opts(s->con, p->sql, &gate_extended,
                                       is_dataset, s->cfg.catalog, &chk,
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
    } else if (ok && p->st.kind == PGW_STMT_SET) {
        int i = setting_index(p->st.name);
        if (i < 0 || !(settings[i].flags & S_SET)) {
            /* refused at Parse, like any statement the gate refuses */
            struct sql_checked chk;
            char *q = strndup(text, tlen);
            if (q && sql_gate_check_opts(s->con, q, &gate_extended, is_dataset, s->cfg.catalog, &chk,
                                            &err) ==
                         VT_ERR_OK) {
                sql_checked_release(&chk);
                vt_error_set(&err, VT_ERR_SQL_NOT_READ_ONLY, "SET %s is not allowed",
                             p->st.name);
            }
            free(q);
            ok = false;
        }
    }
    if (!ok) {
        prepared_put(s, p);
        ext_error(s, &err);
        return;
    }
    if (*m.name) {
        s->stmts[s->n_stmts++] = p;
    } else {
        prepared_put(s, s->unnamed);
        s->unnamed = p;
    }
    pgw_write_empty(s->out, '1');
}

/* Pins the statement's datasets for a portal. */
static enum vt_err pin_for(struct pgw_session *s, struct prepared *p, struct sql_snapshot *snap,
                           struct vt_error *err)
{
    memset(snap, 0, sizeof *snap);
    int64_t deadline = statement_deadline(s);
    return sql_snapshot_pin(s->cfg.catalog, p->deps, p->ndeps,
                            deadline ? deadline : time_mono_ms() + 60000, snap, err);
}

/* Describes a SQL statement (its parameters and columns) on this worker. */
static enum vt_err describe_statement(struct pgw_session *s, struct prepared *p,
                                      struct vt_error *err)
{
    if (p->described)
        return VT_ERR_OK;
    struct sql_snapshot snap;
    if (pin_for(s, p, &snap, err) != VT_ERR_OK)
        return err->code;
    enum vt_err rc = VT_ERR_OK;
    if (p->reads_catalog)
        rc = sync_catalog(s, err);
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
static uint32_t param_oid(const struct prepared *p, size_t i)
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

static void on_bind(struct pgw_session *s, const unsigned char *body, size_t len)
{
    struct vt_error err = {0};
    struct pgw_bind_msg m;
    if (pgw_parse_bind(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    struct prepared *st = find_statement(s, m.statement, NULL);
    if (!st) {
        vt_error_set(&err, VT_ERR_PG_NO_STATEMENT, "prepared statement \"%s\" does not exist",
                     m.statement);
        ext_error(s, &err);
        return;
    }
    if (s->tx == 'E' && !allowed_in_failed_tx(st->st.kind)) {
        tx_aborted(s);
        s->skip_to_sync = true;
        return;
    }
    if (*m.portal && find_portal(s, m.portal, NULL)) {
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
    size_t mem = sizeof(struct portal) + len + 64;
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
    struct portal *p = calloc(1, sizeof *p);
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
        portal_free(s, p);
        ext_error(s, &err);
        return;
    }
    if (*m.portal) {
        s->portals[s->n_portals++] = p;
    } else {
        portal_free(s, s->unnamed_portal);
        s->unnamed_portal = p;
    }
    pgw_write_empty(s->out, '2');
}

static void write_parameter_description(struct pgw_session *s, const struct prepared *p)
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
static void write_shape(struct pgw_session *s, const struct prepared *p, const int16_t *formats,
                        size_t nformats, struct portal *told)
{
    if (p->st.kind == PGW_STMT_SHOW) {
        struct pgw_stmt st = p->st;
        st.kind = PGW_STMT_SHOW;
        /* the RowDescription part of show() */
        size_t m = pgw_msg_begin(s->out, 'T');
        int i = setting_index(st.name);
        if (st.all || i < 0) {
            pgw_put_i16(s->out, st.all ? 3 : 1);
            static const char *const cols[] = {"name", "setting", "description"};
            for (int c = 0; c < (st.all ? 3 : 1); c++) {
                pgw_put_str(s->out, st.all ? cols[c] : st.name);
                pgw_put_i32(s->out, 0);
                pgw_put_i16(s->out, 0);
                pgw_put_i32(s->out, PGW_OID_TEXT);
                pgw_put_i16(s->out, -1);
                pgw_put_i32(s->out, -1);
                pgw_put_i16(s->out, 0);
            }
        } else {
            pgw_put_i16(s->out, 1);
            pgw_put_str(s->out, settings[i].name);
            pgw_put_i32(s->out, 0);
            pgw_put_i16(s->out, 0);
            pgw_put_i32(s->out, PGW_OID_TEXT);
            pgw_put_i16(s->out, -1);
            pgw_put_i32(s->out, -1);
            pgw_put_i16(s->out, 0);
        }
        pgw_msg_end(s->out, m);
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

static void on_describe(struct pgw_session *s, const unsigned char *body, size_t len,
                        bool execute_follows)
{
    struct vt_error err = {0};
    struct pgw_target_msg m;
    if (pgw_parse_target(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    if (m.kind == 'S') {
        struct prepared *p = find_statement(s, m.name, NULL);
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
    struct portal *p = find_portal(s, m.name, NULL);
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
    if (execute_follows && p->state == P_READY) {
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
static void send_held(struct pgw_session *s, struct portal *p, uint64_t limit)
{
    uint64_t sent = 0;
    while (p->held_off < p->held.len && (!limit || sent < limit)) {
        const unsigned char *m = (const unsigned char *)p->held.buf + p->held_off;
        size_t mlen = 1 + ((size_t)m[1] << 24 | (size_t)m[2] << 16 | (size_t)m[3] << 8 | m[4]);
        sb_add(s->out, m, mlen);
        p->held_off += mlen;
        p->held_rows--;
        sent++;
        if (flush_if_full(s) != 0)
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
        p->state = P_DONE;
        ext_error(s, &err);
        return;
    }
    p->state = P_DONE;
    snprintf(p->tag, sizeof p->tag, "SELECT %" PRIu64, p->rows);
    pgw_write_command_complete(s->out, p->tag);
}

static void on_execute(struct pgw_session *s, const unsigned char *body, size_t len)
{
    struct vt_error err = {0};
    struct pgw_execute_msg m;
    if (pgw_parse_execute(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    struct portal *p = find_portal(s, m.portal, NULL);
    if (!p) {
        vt_error_set(&err, VT_ERR_PG_NO_PORTAL, "portal \"%s\" does not exist", m.portal);
        ext_error(s, &err);
        return;
    }
    struct prepared *st = p->stmt;
    if (s->tx == 'E' && !allowed_in_failed_tx(st->st.kind)) {
        tx_aborted(s);
        s->skip_to_sync = true;
        return;
    }
    uint64_t limit = m.max_rows > 0 ? (uint64_t)m.max_rows : 0;
    if (p->state == P_SUSPENDED) {
        send_held(s, p, limit);
        return;
    }
    if (p->state == P_DONE) {
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
        if (!session_statement(s, &st->st, describe, "", 0))
            s->skip_to_sync = true;
        p->state = P_DONE;
        return;
    }
    if (st->reads_catalog && sync_catalog(s, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    bool copy = st->st.kind == PGW_STMT_COPY_OUT;
    struct pgw_sink k = {.s = s, .mode = copy ? SINK_COPY : SINK_PORTAL, .portal = p,
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
        fast_lookup(s, st->lookup, &p->snap, p->params, p->nparams, p->describe_pending,
                    &fast_rows, &fast_ok)) {
        p->describe_pending = false;
        p->state = P_DONE;
        if (!fast_ok) {
            s->skip_to_sync = true;
            return;
        }
        p->rows = fast_rows;
        snprintf(p->tag, sizeof p->tag, "SELECT %" PRIu64, p->rows);
        pgw_write_command_complete(s->out, p->tag);
        return;
    }
    start_statement(s, statement_deadline(s));
    bool ok = run_plan(s, st->rewritten ? st->rewritten : st->sql, &p->snap, p->params,
                       p->nparams, false, &k);
    end_statement(s);
    if (!ok) {
        p->state = P_DONE;
        s->skip_to_sync = true;
        return;
    }
    if (copy) {
        pgw_write_empty(s->out, 'c');
        snprintf(p->tag, sizeof p->tag, "COPY %" PRIu64, k.sent);
        pgw_write_command_complete(s->out, p->tag);
        p->state = P_DONE;
        return;
    }
    p->rows = k.sent;
    if (k.suspended) {
        p->state = P_SUSPENDED;
        pgw_write_empty(s->out, 's');
        return;
    }
    p->state = P_DONE;
    snprintf(p->tag, sizeof p->tag, "SELECT %" PRIu64, p->rows);
    pgw_write_command_complete(s->out, p->tag);
}

static void on_close(struct pgw_session *s, const unsigned char *body, size_t len)
{
    struct vt_error err = {0};
    struct pgw_target_msg m;
    if (pgw_parse_target(body, len, &m, &err) != VT_ERR_OK) {
        ext_error(s, &err);
        return;
    }
    size_t at = 0;
    if (m.kind == 'S') {
        struct prepared *p = find_statement(s, m.name, &at);
        if (p && *m.name) {
            s->stmts[at] = s->stmts[--s->n_stmts];
            prepared_put(s, p);
        } else if (p) {
            prepared_put(s, p);
            s->unnamed = NULL;
        }
    } else {
        struct portal *p = find_portal(s, m.name, &at);
        if (p && *m.name) {
            s->portals[at] = s->portals[--s->n_portals];
            portal_free(s, p);
        } else if (p) {
            portal_free(s, p);
            s->unnamed_portal = NULL;
        }
    }
    pgw_write_empty(s->out, '3');
}

static void on_sync(struct pgw_session *s)
{
    s->skip_to_sync = false;
    /* An implicit transaction ends at Sync, and its portals with it. */
    if (s->tx == 'I')
        close_portals(s);
    pgw_write_ready(s->out, s->tx);
    atomic_store(&s->conn->cancel_requested, false);
    atomic_store(&s->conn->job.cancelled, atomic_load(&s->conn->peer_gone));
}

/* ------------------------------------------------------------ the loop */

static void fatal(struct pgw_session *s, enum vt_err code, const char *msg)
{
    struct vt_error err = {0};
    vt_error_set(&err, code, "%s", msg);
    error_out(s->out, &err, "FATAL");
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
            simple_query(s, sql, len);
            break;
        }
        case 'P':
            on_parse(s, f.body, f.body_len);
            break;
        case 'B':
            on_bind(s, f.body, f.body_len);
            break;
        case 'D':
            on_describe(s, f.body, f.body_len, next_type(c, c->in_off) == 'E');
            break;
        case 'E':
            on_execute(s, f.body, f.body_len);
            break;
        case 'C':
            on_close(s, f.body, f.body_len);
            break;
        case 'S':
            on_sync(s);
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
            ext_error(s, &err);
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
        if (flush_if_full(s) != 0) {
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
