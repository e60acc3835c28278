/*
 * Inside pgwire: the connection as the listener (server.c) and the session
 * state machine (session.c) share it. Ownership is simple: the listener
 * thread owns a connection except while a job runs for it on an engine
 * worker (busy); then the job owns the socket, the TLS state and both
 * buffers, and hands the connection back through the listener's return list
 * when it ends. The listener touches a busy connection only to cancel its
 * job (atomics) when the peer hangs up or a CancelRequest names it.
 */
#ifndef VT_PGWIRE_INTERNAL_H
#define VT_PGWIRE_INTERNAL_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "engine/engine.h"
#include "exec/exec.h"
#include "pgwire/pgwire.h"
#include "sql/sql.h"
#include "util/arena.h"
#include "util/limits.h"
#include "util/strbuf.h"

struct pgw_session;
struct auth_policy;

/* login.c: who may open a session (listener thread only). */
struct pgw_login;
struct pgw_login *pgw_login_create(const struct pgwire_config *pg,
                                   const struct auth_policy *auth);
void pgw_login_destroy(struct pgw_login *l);
/* Whether clients must send a password (the static one or a bearer token). */
bool pgw_login_needs_password(const struct pgw_login *l);
/* The startup warning when the listener at `where` is open without
 * credentials (or its static password bypasses [auth]). */
void pgw_login_describe(const struct pgw_login *l, const char *where);
/* PG_TOO_MANY_FAILURES while the address is blocked (before any password
 * is read), else VT_ERR_OK. */
enum vt_err pgw_login_admit(struct pgw_login *l, const char *peer, struct vt_error *err);
/* The password (or bearer token) of `user` from `peer`: VT_ERR_OK (and, for
 * a token, *out_valid_until: its expiry, Unix seconds; 0 none),
 * PG_PASSWORD_FAILED (counted against the address), PG_TOO_MANY_FAILURES,
 * AUTH_UNAVAILABLE (no signing keys yet). */
enum vt_err pgw_login_check(struct pgw_login *l, const char *peer, const char *user,
                            const char *password, int64_t *out_valid_until,
                            struct vt_error *err);
/* A name a client sent, for a log line: control bytes, quotes and
 * backslashes as \xNN (out: cap bytes; 4 per input byte at most). */
void pgw_log_name(const char *in, char *out, size_t cap);

enum pgw_phase {
    PGW_PH_STARTUP,         /* waiting for SSLRequest / GSSENCRequest / StartupMessage */
    PGW_PH_TLS,             /* TLS handshake in progress */
    PGW_PH_PASSWORD,        /* AuthenticationCleartextPassword sent */
    PGW_PH_READY,           /* authenticated: messages go to jobs */
    PGW_PH_CLOSING,         /* flush what is queued, then close */
};

struct pgw_server;

struct pgw_conn {
    struct pgw_server *srv;
    int fd;
    SSL *ssl;
    enum pgw_phase phase;
    bool busy;                      /* a job owns it (set and cleared by the listener) */
    bool close_after_job;           /* peer gone, Terminate, fatal error */
    bool tls_asked, gss_asked;      /* each request is allowed once */
    bool peer_loopback;
    bool counted;                   /* counts as a session (after authentication) */
    char peer[64];
    struct strbuf in;               /* bytes read and not yet consumed, from in_off */
    size_t in_off;
    struct strbuf out;              /* bytes to write, from out_off */
    size_t out_off;
    size_t flush_bytes;             /* out is written once it holds this much (0: the
                                     * default, VT_PGWIRE_OUT_FLUSH_BYTES) */
    int64_t last_active_ms;
    int64_t deadline_ms;            /* startup must finish by then */
    int32_t pid, secret;            /* BackendKeyData */
    int64_t accepted_ms;            /* monotonic: the oldest pre-auth one is evicted first */
    int64_t valid_until;            /* logged in with a bearer token: its expiry (Unix s) */
    char user[64];
    void *startup_copy;             /* startup parameters while the password is awaited */
    struct pgw_session *session;
    /* the job (one at a time) */
    struct eng_job job;
    atomic_bool cancel_requested;   /* a CancelRequest named this connection */
    atomic_bool peer_gone;          /* the listener saw the peer hang up */
    struct pgw_conn *next, *prev;   /* all connections (listener) */
    struct pgw_conn *next_returned; /* the return list */
};

/* Session (session.c): created after authentication on the listener thread
 * (sends the startup ParameterStatus messages), then run by jobs. */
struct pgw_session_config {
    const char *user;
    const char *database;
    int64_t request_timeout_ms;     /* server.request_timeout_ms (0 none) */
    struct cat_catalog *catalog;
    const char *server_version;
    int64_t started_us;             /* pg_postmaster_start_time */
    const char *spill_dir;          /* server.temp_directory: held rows past memory */
};

/* Applies the startup packet's parameters; FATAL errors come back in err
 * (invalid client_encoding, ...). */
struct pgw_session *pgw_session_create(const struct pgw_session_config *cfg,
                                       const char *const *names, const char *const *values,
                                       size_t n, struct pgw_conn *conn, struct vt_error *err);
void pgw_session_destroy(struct pgw_session *s);
/* ParameterStatus for every reported setting, BackendKeyData, ReadyForQuery. */
void pgw_session_greet(struct pgw_session *s, struct strbuf *out);
/* On an engine worker: processes every complete message in conn->in,
 * writes the answers (flushing as it goes). Sets conn->close_after_job on
 * Terminate, on a fatal protocol error or when the client is gone. */
void pgw_session_run(struct pgw_session *s, duckdb_connection con);

/* Writes conn->out to the socket from a worker: blocking, in slices that
 * check the job's cancel flags, for at most VT_STREAM_STALL_MS without
 * progress. 0, or -1 when the client is gone (the rest is dropped). */
int pgw_conn_flush(struct pgw_conn *c);

/* The SQLSTATE for a DuckDB error message (its "<Class> Error:" prefix). */
const char *pgw_duckdb_sqlstate(const char *msg);

/* ------------------------------------------------------------ the session
 *
 * The session's state and the pieces of its state machine, one file per
 * concern: session.c (lifecycle, statements and portals as objects, errors,
 * the message loop), settings.c (the settings, SET/SHOW/RESET),
 * statements.c (the simple Query protocol and the statements answered
 * without the gate: transactions, savepoints, DISCARD, DEALLOCATE), extended.c
 * (Parse, Bind, Describe, Execute, Close, Sync), run.c (a checked statement
 * run by exec with the DataRow sink; the catalog brought up to date),
 * fastpath.c (equality lookups answered from the dataset's index). */

struct query_value;

#define PGW_N_SETTINGS 39       /* rows of settings.c's table */
#define PGW_VALUE_MAX 256       /* a setting's value */

/* A prepared statement (Parse, or the unnamed one of a simple Query). */
struct pgw_prepared {
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

enum pgw_portal_state { PGW_P_READY, PGW_P_SUSPENDED, PGW_P_DONE };

struct pgw_portal {
    char *name;
    struct pgw_prepared *stmt;
    struct arena arena;             /* parameter values */
    struct query_value *params;
    size_t nparams;
    int16_t *formats;
    size_t nformats;
    struct exec_snapshot snap;       /* pinned at Bind */
    bool pinned;
    enum pgw_portal_state state;
    bool describe_pending;          /* Describe(P): RowDescription comes with the result */
    /* what the client was told about the columns (Describe S or P) */
    bool told;
    size_t told_n;
    uint32_t *told_oids;
    /* rows of a suspended result, as DataRow messages: in memory up to the
     * connection's share, the rest in an unlinked file (portal.c) */
    struct strbuf held;
    size_t held_off;
    uint64_t held_rows;
    bool held_truncated;
    size_t held_counted;            /* of held.len, counted in session.held */
    int spill_fd;                   /* -1: none */
    uint64_t spill_len, spill_off;  /* written, read back */
    uint64_t rows;                  /* sent so far */
    char tag[32];                   /* CommandComplete of a finished portal */
    bool cursor;                    /* made by DECLARE (CLOSE ALL closes it) */
    bool hold;                      /* WITH HOLD: outlives its transaction */
    size_t mem;
};

struct pgw_session {
    struct pgw_conn *conn;
    struct pgw_session_config cfg;
    char user[64], database[64];
    char server_version[32];
    char server_addr[64], client_addr[64]; /* inet_server_addr(), inet_client_addr() */
    int server_port, client_port;
    char values[PGW_N_SETTINGS][PGW_VALUE_MAX];
    char startup[PGW_N_SETTINGS][PGW_VALUE_MAX]; /* RESET goes back here */
    char tx;                        /* 'I', 'T', 'E' */
    bool skip_to_sync;              /* extended protocol: after an error */
    char savepoints[16][PGW_NAME_MAX];
    size_t n_savepoints;
    struct pgw_prepared *stmts[VT_PGWIRE_MAX_STATEMENTS];
    size_t n_stmts;
    struct pgw_prepared *unnamed;
    struct pgw_portal *portals[VT_PGWIRE_MAX_PORTALS];
    size_t n_portals;
    struct pgw_portal *unnamed_portal;
    size_t mem;                     /* bytes held for statements and portals */
    size_t held;                    /* rows held by all portals (bounded together) */
    uint64_t spilled;               /* bytes of their spill files */
    struct strbuf *out;
    duckdb_connection con;          /* of the running job */
    uint64_t settings_gen;          /* counts setting changes (shapes.c) */
    struct pgw_shapes *shapes;      /* the gate's answers by shape (shapes.c) */
};

/* catalog_sql.c: the SQL that makes the catalog on a worker's connection. */
extern const char pgw_catalog_ddl[];

/* session.c: errors. pgw_fail reports an error inside a statement (and a
 * transaction, if one is open, fails until ROLLBACK). */
void pgw_error_out(struct strbuf *out, const struct vt_error *err, const char *severity);
void pgw_fail(struct pgw_session *s, const struct vt_error *err);
/* Flushes the output once VT_PGWIRE_OUT_FLUSH_BYTES are buffered; -1 when the
 * client is gone. */
int pgw_flush_if_full(struct pgw_session *s);
/* session.c: statements and portals (refcounted: a portal holds its
 * statement). find_* with "" give the unnamed one; out_i (may be NULL) is the
 * slot of a named one. */
void pgw_prepared_put(struct pgw_session *s, struct pgw_prepared *p);
void pgw_portal_free(struct pgw_session *s, struct pgw_portal *p);
/* At the end of a transaction: every portal but WITH HOLD cursors (all:
 * those too, when the session ends). */
void pgw_close_portals(struct pgw_session *s, bool all);
void pgw_drop_statements(struct pgw_session *s);
struct pgw_prepared *pgw_find_statement(struct pgw_session *s, const char *name, size_t *out_i);
struct pgw_portal *pgw_find_portal(struct pgw_session *s, const char *name, size_t *out_i);

/* shapes.c: gate + pins of a simple Query's statement (as
 * exec_snapshot_take_opts with pgw_gate_options(s, false)), the gate skipped
 * for a statement whose shape (constants compared with as $k) it answered
 * before with the same answer as for the constants. */
struct exec_snapshot;
enum vt_err pgw_shaped_snapshot(struct pgw_session *s, const char *sql, int64_t deadline_ms,
                                struct exec_snapshot *snap, struct vt_error *err);
void pgw_shapes_free(struct pgw_shapes *c);

/* settings.c */
enum vt_err pgw_settings_init(struct pgw_session *s, const char *const *names,
                              const char *const *values, size_t n, struct vt_error *err);
/* ParameterStatus for every reported setting. */
void pgw_settings_report(struct pgw_session *s);
/* Whether SET may change `name` (else the gate decides, and refuses). */
bool pgw_setting_settable(const char *name);
/* SET name TO value / DEFAULT (ParameterStatus when reported). */
enum vt_err pgw_setting_set(struct pgw_session *s, const struct pgw_stmt *st, struct vt_error *err);
/* RESET name, or every setting when name is NULL. */
enum vt_err pgw_setting_reset(struct pgw_session *s, const char *name, struct vt_error *err);
/* SHOW: the RowDescription only (describe), or the rows and the tag. */
void pgw_show_describe(struct pgw_session *s, const struct pgw_stmt *st);
bool pgw_show(struct pgw_session *s, const struct pgw_stmt *st, bool describe);
/* The settings as the catalog shows them (out has room for PGW_N_SETTINGS). */
size_t pgw_settings_catalog(const struct pgw_session *s, struct pgw_cat_setting *out);
struct pgw_format pgw_session_format(const struct pgw_session *s);
/* A setting's value as current_setting() shows it (NULL: no such setting). */
const char *pgw_session_setting(const struct pgw_session *s, const char *name);
/* The deadline of a statement starting now (monotonic ms; 0 none):
 * request_timeout_ms, or statement_timeout when lower. */
int64_t pgw_statement_deadline(const struct pgw_session *s);

/* run.c: the gate's options for s (PostgreSQL's dialect, which reads the
 * session's settings; parameters in the extended protocol only). */
struct sql_gate_options pgw_gate_options(struct pgw_session *s, bool params);
bool pgw_is_dataset(void *ctx, const char *name);

enum pgw_sink_mode { PGW_SINK_SIMPLE, PGW_SINK_PORTAL, PGW_SINK_COPY, PGW_SINK_EXPLAIN };

/* The DataRow sink: RowDescription (simple Query, or a portal's pending
 * Describe), DataRows up to the portal's limit (the rest held for the next
 * Execute), or COPY out data. */
struct pgw_sink {
    struct exec_sink base;
    struct pgw_session *s;
    enum pgw_sink_mode mode;
    struct pgw_portal *portal;
    uint64_t limit;                 /* rows to send before suspending; 0 = all */
    struct pgw_rows *enc;
    uint64_t sent;
    uint64_t chunks;                /* chunks received */
    bool suspended;                 /* the limit was reached with rows left */
    bool discard;                   /* MOVE: rows sent to s->out are dropped */
    bool ended;
    bool began;
    struct vt_error err;
    struct pgw_copy_options copy;
    bool copy_header;
    bool describe;                  /* EXPLAIN: RowDescription first */
    bool header_due;                /* COPY binary: the file header not sent yet */
};

/* COPY: the sink's options from the statement; the end (the binary
 * trailer, CopyDone). */
void pgw_copy_sink(struct pgw_sink *k, const struct pgw_stmt *st);
void pgw_copy_done(struct pgw_sink *k);
/* EXPLAIN [ANALYZE] of a checked statement (its mapped text): DuckDB's plan
 * as rows of one text column "QUERY PLAN"; its RowDescription. */
bool pgw_explain(struct pgw_session *s, const char *sql, bool analyze,
                 const struct exec_snapshot *snap, const struct query_value *params,
                 size_t nparams, bool describe);
void pgw_explain_describe(struct pgw_session *s);

/* The job's deadline for one statement. */
void pgw_start_statement(struct pgw_session *s, int64_t deadline);
void pgw_end_statement(struct pgw_session *s);
/* The error to report for a stopped run (a timeout, a CancelRequest).
 * false: nothing is to be reported (the client is gone). */
bool pgw_stopped_error(struct pgw_session *s, struct vt_error *err);
/* The catalog on this worker's connection, brought up to date for s. */
enum vt_err pgw_sync_catalog(struct pgw_session *s, struct vt_error *err);
/* Runs a checked statement (the snapshot taken, or pinned at Bind) into the
 * sink k; true when it ended well, false after an error was reported (or the
 * client is gone). */
bool pgw_run_plan(struct pgw_session *s, const char *sql, const struct exec_snapshot *snap,
                  const struct query_value *params, size_t nparams, bool one_off,
                  struct pgw_sink *k);

/* portal.c: a prepared statement's SQL checked by the gate (normalized
 * first; params: $n allowed) into p's sql, deps, rewritten, lookup. */
enum vt_err pgw_prepared_check(struct pgw_session *s, struct pgw_prepared *p, const char *q,
                               size_t qlen, bool params, struct vt_error *err);
/* Pins the statement's datasets (for a portal). */
enum vt_err pgw_pin_for(struct pgw_session *s, struct pgw_prepared *p, struct exec_snapshot *snap,
                        struct vt_error *err);
/* Describes a SQL statement (its parameters and columns) on this worker. */
enum vt_err pgw_describe_statement(struct pgw_session *s, struct pgw_prepared *p,
                                   struct vt_error *err);
/* RowDescription (or NoData) from a described statement's shape; columns
 * DuckDB cannot type before binding are described (and then sent) as text.
 * told: the portal that is to send rows of that shape. */
void pgw_write_shape(struct pgw_session *s, const struct pgw_prepared *p, const int16_t *formats,
                     size_t nformats, struct pgw_portal *told);
/* Rows held for a portal's next part: none yet; freed (and the spill file
 * closed). */
void pgw_held_init(struct pgw_portal *p);
void pgw_held_release(struct pgw_session *s, struct pgw_portal *p);
/* Holds n rows of chunk from `from` for the portal's next part: in memory
 * while the connection's held rows fit VT_PGWIRE_MAX_SUSPENDED_BYTES, then in
 * the portal's spill file (VT_PGWIRE_MAX_SPILL_BYTES per connection,
 * VT_PGWIRE_MAX_SPILL_TOTAL_BYTES in all). VT_ERR_RESULT_CAPPED when they fit
 * neither (the portal is marked truncated: reading past its end is 54000). */
enum vt_err pgw_held_add(struct pgw_session *s, struct pgw_portal *p, struct pgw_rows *enc,
                         duckdb_data_chunk chunk, uint64_t from, uint64_t n,
                         struct vt_error *err);
/* The next rows of a portal (READY: runs it; SUSPENDED: its held rows): up
 * to limit (0: all), sent, or dropped (discard: MOVE). The portal is left
 * SUSPENDED when rows remain, else DONE. false after an error was reported;
 * *out_n: the rows of this call. Writes no tag. */
bool pgw_portal_rows(struct pgw_session *s, struct pgw_portal *p, uint64_t limit, bool discard,
                     uint64_t *out_n);
/* DECLARE (bound: the portal whose parameters the query's $n take, in the
 * extended protocol; NULL in a simple Query), FETCH/MOVE (describe: a
 * RowDescription first; formats: the result formats the FETCH's Bind asked
 * for, NULL in a simple Query), CLOSE; the RowDescription a FETCH sends.
 * false after an error was reported. */
bool pgw_cursor_declare(struct pgw_session *s, const struct pgw_stmt *st,
                        const struct pgw_portal *bound);
bool pgw_cursor_fetch(struct pgw_session *s, const struct pgw_stmt *st, bool describe,
                      const int16_t *formats, size_t nformats);
bool pgw_cursor_close(struct pgw_session *s, const struct pgw_stmt *st);
bool pgw_cursor_describe(struct pgw_session *s, const struct pgw_stmt *st, const int16_t *formats,
                         size_t nformats);

/* fastpath.c: an equality lookup answered from the dataset's index. 1:
 * answered (rows sent, or an error reported: *out_ok false); 0: not from the
 * index (nothing sent: run the SQL). told (may be NULL): the column types
 * the client was told, which the answer must have. */
int pgw_fast_lookup(struct pgw_session *s, const struct sql_lookup *l,
                    const struct exec_snapshot *snap, const struct query_value *params,
                    size_t nparams, bool describe, const uint32_t *told, size_t ntold,
                    uint64_t *out_rows, bool *out_ok);

/* statements.c */
void pgw_simple_query(struct pgw_session *s, const char *sql, size_t len);
/* A statement answered here (not SQL). false after an error was reported.
 * `text` is the statement for the gate when a SET is not one of ours. */
bool pgw_session_statement(struct pgw_session *s, const struct pgw_stmt *st, bool describe,
                           const char *text, size_t len);
/* A SET of a setting that is not ours: the gate's refusal (25006) in err. */
enum vt_err pgw_refuse_set(struct pgw_session *s, const char *text, size_t len,
                           const struct pgw_stmt *st, bool extended, struct vt_error *err);
/* Whether a statement may run in a failed transaction; the error when not. */
bool pgw_allowed_in_failed_tx(enum pgw_stmt_kind k);
void pgw_tx_aborted(struct pgw_session *s);

/* extended.c: the extended protocol's messages. */
void pgw_on_parse(struct pgw_session *s, const unsigned char *body, size_t len);
void pgw_on_bind(struct pgw_session *s, const unsigned char *body, size_t len);
void pgw_on_describe(struct pgw_session *s, const unsigned char *body, size_t len,
                     bool execute_follows);
void pgw_on_execute(struct pgw_session *s, const unsigned char *body, size_t len);
void pgw_on_close(struct pgw_session *s, const unsigned char *body, size_t len);
void pgw_on_sync(struct pgw_session *s);

#endif
