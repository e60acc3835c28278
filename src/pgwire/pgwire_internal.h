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
#include "pgwire/pgwire.h"
#include "util/strbuf.h"

struct pgw_session;

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
    int64_t last_active_ms;
    int64_t deadline_ms;            /* startup must finish by then */
    int32_t pid, secret;            /* BackendKeyData */
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

#endif
