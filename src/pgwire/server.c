/*
 * The PostgreSQL listener (pgwire.h): one thread with an epoll loop that
 * accepts, negotiates TLS (SSLRequest -> 'S' and an OpenSSL handshake, or
 * 'N'), reads the startup packet, asks for the cleartext password, and then
 * hands each batch of complete messages to a job on the engine's query pool
 * (session.c runs them and writes the answers itself). The loop never blocks:
 * its writes are non-blocking with EPOLLOUT for the rest, and it enforces
 * the startup deadline, the idle timeout and the connection cap.
 *
 * A busy connection is watched for the peer hanging up only (EPOLLRDHUP,
 * one-shot), which cancels its job; a CancelRequest on a new connection
 * interrupts the named session's running statement.
 *
 * Passwords (login.c): the static one, compared as SHA-256 digests with
 * CRYPTO_memcmp (constant time), or with [auth] a bearer token under the
 * same permission map as HTTP; failures are limited per address. On a
 * listener that is not loopback, a client without TLS is refused before any
 * password is asked for (unless it comes from a loopback address). The
 * connections still logging in have their own slots (the headroom past
 * max_connections); when those are full the oldest gives way, so silent
 * sockets cannot lock real clients out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/engine.h"
#include "pgwire/pgwire_internal.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

#define SERVER_VERSION "15.0"
#define LOOP_TICK_MS 250
#define READ_CHUNK 65536
#define IN_CAP (VT_PGWIRE_MAX_MESSAGE_BYTES + 5 + READ_CHUNK)

struct pgw_server {
    const struct vt_config *cfg;
    struct cat_catalog *catalog;
    struct eng_pool *pool;
    int listen_fd;
    int port;
    bool loopback_listener;
    int epfd;
    int wake_fd;
    SSL_CTX *tls;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    struct pgw_conn *returned;      /* handed back by jobs (mu) */
    int busy;                       /* connections owned by jobs (mu) */
    bool stopping;                  /* shutdown: no new connections, idle ones closed (mu) */
    bool stop_thread;               /* the loop ends (mu) */
    struct pgw_conn *conns;         /* loop only */
    size_t nconns, nsessions;
    char username[64];
    struct pgw_login *login;        /* passwords, tokens, the failure limiter */
    int64_t started_us;
    int32_t next_pid;
};

/* --------------------------------------------------------------- helpers */

static void wake(struct pgw_server *s)
{
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        log_debug("pgwire: wake: %s", strerror(errno));
}

static void arm(struct pgw_server *s, struct pgw_conn *c, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        log_debug("pgwire: epoll_ctl: %s", strerror(errno));
}

static uint32_t idle_events(const struct pgw_conn *c)
{
    uint32_t ev = EPOLLIN | EPOLLRDHUP;
    if (c->out.len > c->out_off)
        ev |= EPOLLOUT;
    return ev;
}

static bool addr_is_loopback(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)a;
        return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)a;
        if (IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr))
            return true;
        if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr))
            return v6->sin6_addr.s6_addr[12] == 127;
    }
    return false;
}

static void free_pending_startup(struct pgw_conn *c);

static void conn_free(struct pgw_server *s, struct pgw_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    if (c->counted)
        s->nsessions--;
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->ssl) {
        SSL_shutdown(c->ssl); /* best effort close_notify */
        SSL_free(c->ssl);
    }
    close(c->fd);
    free_pending_startup(c);
    pgw_session_destroy(c->session);
    eng_budget_settle(); /* its prepared statements and results held DuckDB's memory */
    sb_release(&c->in);
    sb_release(&c->out);
    free(c);
}

/* Non-blocking write of what is queued. 0: all written or the rest waits
 * for EPOLLOUT; -1: the connection is broken. */
static int try_write(struct pgw_conn *c)
{
    while (c->out_off < c->out.len) {
        size_t n = c->out.len - c->out_off;
        const char *p = c->out.buf + c->out_off;
        ssize_t w;
        if (c->ssl) {
            ERR_clear_error();
            int r = SSL_write(c->ssl, p, (int)(n > INT32_MAX ? INT32_MAX : n));
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ)
                    return 0;
                return -1;
            }
            w = r;
        } else {
            w = send(c->fd, p, n, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    return 0;
                return -1;
            }
        }
        c->out_off += (size_t)w;
    }
    sb_reset(&c->out);
    c->out_off = 0;
    return 0;
}

/* A FATAL error, then close once it is written (or at once if it cannot
 * be). */
static bool fatal(struct pgw_server *s, struct pgw_conn *c, const char *state, const char *msg)
{
    pgw_write_error(&c->out, 'E', "FATAL", state, msg, NULL, NULL);
    c->phase = PGW_PH_CLOSING;
    c->last_active_ms = time_mono_ms();
    if (try_write(c) != 0 || c->out.len == c->out_off) {
        conn_free(s, c);
        return false;
    }
    arm(s, c, EPOLLOUT | EPOLLRDHUP);
    return true;
}

/* ----------------------------------------------------- writes from a job */

int pgw_conn_flush(struct pgw_conn *c)
{
    int64_t stall_until = time_mono_ms() + VT_STREAM_STALL_MS;
    while (c->out_off < c->out.len) {
        if (atomic_load(&c->peer_gone))
            goto gone;
        size_t n = c->out.len - c->out_off;
        const char *p = c->out.buf + c->out_off;
        ssize_t w = -1;
        short wait_for = POLLOUT;
        if (c->ssl) {
            ERR_clear_error();
            int r = SSL_write(c->ssl, p, (int)(n > INT32_MAX ? INT32_MAX : n));
            if (r > 0) {
                w = r;
            } else {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ)
                    wait_for = POLLIN;
                else if (e != SSL_ERROR_WANT_WRITE)
                    goto gone;
            }
        } else {
            w = send(c->fd, p, n, MSG_NOSIGNAL);
            if (w < 0 && errno != EAGAIN && errno != EINTR)
                goto gone;
        }
        if (w > 0) {
            c->out_off += (size_t)w;
            stall_until = time_mono_ms() + VT_STREAM_STALL_MS;
            continue;
        }
        if (time_mono_ms() >= stall_until)
            goto gone;
        struct pollfd pfd = {.fd = c->fd, .events = wait_for};
        poll(&pfd, 1, 200);
    }
    /* Keep a modest buffer between batches; a huge one goes. A long result
     * fills a larger one (flush_bytes), kept until the result ends. */
    if (c->out.cap > 4 * VT_PGWIRE_OUT_FLUSH_BYTES && c->out.cap > 2 * c->flush_bytes)
        sb_release(&c->out);
    sb_reset(&c->out);
    c->out_off = 0;
    return 0;
gone:
    atomic_store(&c->peer_gone, true);
    sb_reset(&c->out);
    c->out_off = 0;
    return -1;
}

/* ------------------------------------------------------------------ jobs */

static void job_run(struct eng_job *job, duckdb_connection con)
{
    struct pgw_conn *c = (struct pgw_conn *)((char *)job - offsetof(struct pgw_conn, job));
    pgw_session_run(c->session, con);
}

static void job_done(struct eng_job *job)
{
    struct pgw_conn *c = (struct pgw_conn *)((char *)job - offsetof(struct pgw_conn, job));
    struct pgw_server *s = c->srv;
    pthread_mutex_lock(&s->mu);
    c->next_returned = s->returned;
    s->returned = c;
    pthread_mutex_unlock(&s->mu);
    wake(s);
}

/* Hands the buffered messages to a worker. false when c was freed. */
static bool dispatch(struct pgw_server *s, struct pgw_conn *c)
{
    c->busy = true;
    atomic_store(&c->job.deadline_ms, 0);
    atomic_store(&c->job.timed_out, false);
    atomic_store(&c->job.cancelled, atomic_load(&c->peer_gone));
    c->job.run = job_run;
    c->job.done = job_done;
    arm(s, c, EPOLLRDHUP | EPOLLONESHOT);
    pthread_mutex_lock(&s->mu);
    s->busy++;
    pthread_mutex_unlock(&s->mu);
    if (!eng_pool_submit(s->pool, &c->job)) {
        pthread_mutex_lock(&s->mu);
        s->busy--;
        pthread_mutex_unlock(&s->mu);
        c->busy = false;
        return fatal(s, c, "53300", "too many queued queries; try again later");
    }
    return true;
}

/* A complete message is buffered: dispatch, or refuse a broken frame.
 * false when c was freed. */
static bool maybe_dispatch(struct pgw_server *s, struct pgw_conn *c)
{
    if (c->valid_until && time_wall_us() / 1000000 > c->valid_until &&
        c->in.len > c->in_off) {
        struct vt_error err = {0};
        vt_error_set(&err, VT_ERR_PG_TOKEN_EXPIRED,
                     "the bearer token this session logged in with has expired: connect again "
                     "with a new one");
        return fatal(s, c, vt_err_sqlstate(err.code), vt_error_message(&err));
    }
    struct pgw_frame f;
    enum pgw_frame_rc rc = pgw_frame_message((const unsigned char *)c->in.buf + c->in_off,
                                             c->in.len - c->in_off, VT_PGWIRE_MAX_MESSAGE_BYTES,
                                             &f);
    if (rc == PGW_FRAME_OK)
        return dispatch(s, c);
    if (rc == PGW_FRAME_TOO_BIG)
        return fatal(s, c, "08P01", "message too long");
    if (rc == PGW_FRAME_BAD)
        return fatal(s, c, "08P01", "invalid message length");
    return true;
}

/* ------------------------------------------------------------- startup */

static void cancel_request(struct pgw_server *s, int32_t pid, int32_t secret)
{
    for (struct pgw_conn *c = s->conns; c; c = c->next) {
        if (c->pid != pid || c->phase != PGW_PH_READY)
            continue;
        if (CRYPTO_memcmp(&c->secret, &secret, sizeof secret) != 0)
            return;
        if (c->busy) {
            atomic_store(&c->cancel_requested, true);
            atomic_store(&c->job.cancelled, true);
            eng_pool_interrupt(s->pool, &c->job);
            log_debug("pgwire: cancel request for session %d", pid);
        }
        return;
    }
}

/* Startup parameters kept until the password is checked. */
struct startup_copy {
    unsigned char *body;
    struct pgw_startup st;
};

static bool authenticated(struct pgw_server *s, struct pgw_conn *c, const struct pgw_startup *st)
{
    if (s->nsessions >= (size_t)s->cfg->server.pgwire.max_connections) {
        return fatal(s, c, "53300", "sorry, too many clients already");
    }
    const char *database = c->user;
    for (size_t i = 0; i < st->nparams; i++)
        if (!strcmp(st->names[i], "database") && *st->values[i])
            database = st->values[i];
    struct pgw_session_config cfg = {
        .user = c->user,
        .database = database,
        .request_timeout_ms = s->cfg->server.request_timeout_ms,
        .catalog = s->catalog,
        .server_version = SERVER_VERSION,
        .started_us = s->started_us,
        .spill_dir = s->cfg->server.temp_directory,
    };
    struct vt_error err = {0};
    c->session = pgw_session_create(&cfg, st->names, st->values, st->nparams, c, &err);
    if (!c->session)
        return fatal(s, c, vt_err_sqlstate(err.code), vt_error_message(&err));
    c->counted = true;
    s->nsessions++;
    c->phase = PGW_PH_READY;
    c->last_active_ms = time_mono_ms();
    pgw_write_auth(&c->out, 0);
    pgw_session_greet(c->session, &c->out);
    char uname[sizeof c->user * 4], dname[256];
    pgw_log_name(c->user, uname, sizeof uname);
    pgw_log_name(database, dname, sizeof dname);
    log_debug("pgwire: session %d for %s from %s (database %s)", c->pid, uname, c->peer, dname);
    return true;
}

static bool startup_packet(struct pgw_server *s, struct pgw_conn *c, const struct pgw_frame *f)
{
    struct vt_error err = {0};
    struct pgw_startup st;
    if (pgw_parse_startup(f->body, f->body_len, &st, &err) != VT_ERR_OK) {
        return fatal(s, c, "08P01", vt_error_message(&err));
    }
    if (st.code == PGW_CANCEL_REQUEST_CODE) {
        cancel_request(s, st.pid, st.secret);
        conn_free(s, c);
        return false;
    }
    if (st.code == PGW_SSL_REQUEST_CODE) {
        if (c->tls_asked || c->ssl) {
            return fatal(s, c, "08P01", "duplicate SSL negotiation request");
        }
        c->tls_asked = true;
        if (!s->tls) {
            sb_addc(&c->out, 'N');
            return true;
        }
        if (c->in.len > c->in_off) {
            /* Bytes sent after SSLRequest before our answer would be read
             * as if they came over TLS (CVE-2021-23214). */
            return fatal(s, c, "08P01", "received unencrypted data after SSL request");
        }
        sb_addc(&c->out, 'S');
        if (try_write(c) != 0 || c->out.len > c->out_off) {
            conn_free(s, c);
            return false;
        }
        c->ssl = SSL_new(s->tls);
        if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
            conn_free(s, c);
            return false;
        }
        SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        c->phase = PGW_PH_TLS;
        return true;
    }
    if (st.code == PGW_GSSENC_REQUEST_CODE) {
        if (c->gss_asked || c->ssl) {
            return fatal(s, c, "08P01", "duplicate GSSAPI negotiation request");
        }
        c->gss_asked = true;
        sb_addc(&c->out, 'N');
        return true;
    }
    unsigned major = (unsigned)st.code >> 16, minor = (unsigned)st.code & 0xffff;
    if (major != 3) {
        char m[128];
        snprintf(m, sizeof m, "unsupported frontend protocol %u.%u: server supports 3.0 to 3.0",
                 major, minor);
        return fatal(s, c, "0A000", m);
    }
    const char *unknown[VT_PGWIRE_MAX_STARTUP_PARAMS];
    size_t nunknown = 0;
    for (size_t i = 0; i < st.nparams; i++)
        if (!strncmp(st.names[i], "_pq_.", 5))
            unknown[nunknown++] = st.names[i];
    if (minor > 0 || nunknown)
        pgw_write_negotiate_version(&c->out, 0, unknown, nunknown);
    if (!s->loopback_listener && !c->ssl && !c->peer_loopback) {
        return fatal(s, c, "28000", "SSL connection is required (this listener is not loopback; "
                                    "connect with sslmode=require)");
    }
    const char *user = NULL;
    for (size_t i = 0; i < st.nparams; i++)
        if (!strcmp(st.names[i], "user"))
            user = st.values[i];
    if (!user || !*user) {
        return fatal(s, c, "28000", "no PostgreSQL user name specified in startup packet");
    }
    snprintf(c->user, sizeof c->user, "%s", user);
    if (pgw_login_admit(s->login, c->peer, &err) != VT_ERR_OK)
        return fatal(s, c, vt_err_sqlstate(err.code), vt_error_message(&err));
    if (pgw_login_needs_password(s->login)) {
        /* Keep the parameters until the password arrives. */
        struct startup_copy *sc = calloc(1, sizeof *sc);
        if (sc)
            sc->body = malloc(f->body_len);
        if (!sc || !sc->body) {
            free(sc);
            conn_free(s, c);
            return false;
        }
        memcpy(sc->body, f->body, f->body_len);
        pgw_parse_startup(sc->body, f->body_len, &sc->st, &err);
        c->startup_copy = sc;
        c->phase = PGW_PH_PASSWORD;
        pgw_write_auth(&c->out, 3);
        return true;
    }
    if (strcmp(user, s->username) != 0) {
        char m[128];
        snprintf(m, sizeof m, "role \"%.60s\" does not exist", user);
        return fatal(s, c, "28000", m);
    }
    return authenticated(s, c, &st);
}

static void free_pending_startup(struct pgw_conn *c)
{
    struct startup_copy *sc = c->startup_copy;
    if (sc) {
        free(sc->body);
        free(sc);
        c->startup_copy = NULL;
    }
}

static bool password_message(struct pgw_server *s, struct pgw_conn *c, const struct pgw_frame *f)
{
    struct vt_error err = {0};
    const char *pw;
    if (f->type != 'p' || pgw_parse_password(f->body, f->body_len, &pw, &err) != VT_ERR_OK) {
        free_pending_startup(c);
        return fatal(s, c, "08P01", f->type != 'p' ? "expected password response"
                                            : "invalid password packet");
    }
    struct startup_copy *sc = c->startup_copy;
    c->startup_copy = NULL;
    if (!sc) {
        vt_error_set(&err, VT_ERR_PG_PROTOCOL, "no startup packet");
        return fatal(s, c, "08P01", vt_error_message(&err));
    }
    if (pgw_login_check(s->login, c->peer, c->user, pw, &c->valid_until, &err) != VT_ERR_OK) {
        free(sc->body);
        free(sc);
        return fatal(s, c, vt_err_sqlstate(err.code), vt_error_message(&err));
    }
    bool alive = authenticated(s, c, &sc->st);
    free(sc->body);
    free(sc);
    return alive;
}

/* TLS handshake step. */
static void tls_step(struct pgw_server *s, struct pgw_conn *c)
{
    ERR_clear_error();
    int r = SSL_accept(c->ssl);
    if (r == 1) {
        c->phase = PGW_PH_STARTUP;
        arm(s, c, idle_events(c));
        return;
    }
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
        arm(s, c, EPOLLIN | EPOLLRDHUP);
        return;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        arm(s, c, EPOLLOUT | EPOLLRDHUP);
        return;
    }
    unsigned long code = ERR_peek_error();
    log_debug("pgwire: TLS handshake with %s failed: %s", c->peer,
              code ? ERR_reason_error_string(code) : "connection closed");
    conn_free(s, c);
}

/* Reads what the socket has. -1: closed or broken. */
static int read_in(struct pgw_conn *c)
{
    for (;;) {
        if (c->in.len >= IN_CAP)
            return 0;
        size_t room = IN_CAP - c->in.len;
        if (room > READ_CHUNK)
            room = READ_CHUNK;
        if (sb_grow(&c->in, room) != 0)
            return -1;
        ssize_t n;
        if (c->ssl) {
            ERR_clear_error();
            int r = SSL_read(c->ssl, c->in.buf + c->in.len, (int)room);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                    return 0;
                return -1;
            }
            n = r;
        } else {
            n = recv(c->fd, c->in.buf + c->in.len, room, 0);
            if (n == 0)
                return -1;
            if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -1;
        }
        c->in.len += (size_t)n;
        c->in.buf[c->in.len] = '\0';
    }
}

/* Consumed bytes out of the input buffer. */
static void compact_in(struct pgw_conn *c)
{
    if (!c->in_off)
        return;
    memmove(c->in.buf, c->in.buf + c->in_off, c->in.len - c->in_off);
    c->in.len -= c->in_off;
    c->in_off = 0;
}

/* Runs the startup phase over what is buffered. */
static void startup_progress(struct pgw_server *s, struct pgw_conn *c)
{
    while (c->phase == PGW_PH_STARTUP || c->phase == PGW_PH_PASSWORD) {
        const unsigned char *buf = (const unsigned char *)c->in.buf + c->in_off;
        size_t avail = c->in.len - c->in_off;
        struct pgw_frame f;
        enum pgw_frame_rc rc = c->phase == PGW_PH_STARTUP
                                   ? pgw_frame_startup(buf, avail, &f)
                                   : pgw_frame_message(buf, avail,
                                                       VT_PGWIRE_MAX_PASSWORD_BYTES, &f);
        if (rc == PGW_FRAME_NEED)
            break;
        if (rc != PGW_FRAME_OK) {
            free_pending_startup(c);
            fatal(s, c, "08P01", c->phase == PGW_PH_STARTUP ? "invalid length of startup packet"
                                                            : "invalid password packet size");
            return;
        }
        c->in_off += f.total;
        bool alive = c->phase == PGW_PH_STARTUP ? startup_packet(s, c, &f)
                                                : password_message(s, c, &f);
        if (!alive || c->phase == PGW_PH_CLOSING)
            return;
        if (c->phase == PGW_PH_TLS) {
            compact_in(c);
            tls_step(s, c);
            return;
        }
    }
    compact_in(c);
    if (try_write(c) != 0) {
        conn_free(s, c);
        return;
    }
    if (c->phase != PGW_PH_READY || c->out.len != c->out_off)
        arm(s, c, idle_events(c));
    else if (maybe_dispatch(s, c) && !c->busy && c->phase == PGW_PH_READY)
        arm(s, c, idle_events(c));
}

/* ------------------------------------------------------------- the loop */

/* Closes the connection that has been logging in the longest (not yet a
 * session). false when there is none. */
static bool evict_oldest_pending(struct pgw_server *s)
{
    struct pgw_conn *oldest = NULL;
    for (struct pgw_conn *c = s->conns; c; c = c->next)
        if (!c->counted && !c->busy && c->phase != PGW_PH_READY &&
            (!oldest || c->accepted_ms < oldest->accepted_ms))
            oldest = c;
    if (!oldest)
        return false;
    log_debug("pgwire: connection from %s still logging in after %lld ms gives way to a new one",
              oldest->peer, (long long)(time_mono_ms() - oldest->accepted_ms));
    conn_free(s, oldest);
    return true;
}

static void on_accept(struct pgw_server *s)
{
    for (;;) {
        struct sockaddr_storage addr;
        socklen_t alen = sizeof addr;
        int fd = accept4(s->listen_fd, (struct sockaddr *)&addr, &alen,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                log_warn("pgwire: accept: %s", strerror(errno));
            return;
        }
        /* Sessions are bounded by max_connections when they log in; the
         * connections still logging in by the headroom. When those are all
         * taken, the oldest gives way: sockets that never speak cannot keep
         * real clients out (they would have held their slots until the
         * startup deadline). */
        if (s->nconns - s->nsessions >= VT_PGWIRE_CONNECTION_HEADROOM && !evict_oldest_pending(s)) {
            close(fd);
            continue;
        }
        struct pgw_conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->srv = s;
        c->fd = fd;
        c->phase = PGW_PH_STARTUP;
        c->peer_loopback = addr_is_loopback(&addr);
        char host[INET6_ADDRSTRLEN] = "?";
        if (addr.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&addr)->sin_addr, host, sizeof host);
        else if (addr.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&addr)->sin6_addr, host, sizeof host);
        snprintf(c->peer, sizeof c->peer, "%s", host);
        sb_init(&c->in, IN_CAP + 1);
        sb_init(&c->out, 0);
        c->last_active_ms = c->accepted_ms = time_mono_ms();
        int64_t startup = (int64_t)VT_PGWIRE_STARTUP_TIMEOUT_SECS * 1000;
        int64_t idle = s->cfg->server.pgwire.idle_timeout_secs * 1000;
        if (idle > 0 && idle < startup)
            startup = idle;
        c->deadline_ms = c->last_active_ms + startup;
        c->pid = ++s->next_pid;
        if (RAND_bytes((unsigned char *)&c->secret, sizeof c->secret) != 1)
            c->secret = (int32_t)(time_wall_us() ^ (int64_t)(intptr_t)c);
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
            conn_free(s, c);
    }
}

static void on_event(struct pgw_server *s, struct pgw_conn *c, uint32_t ev)
{
    if (c->busy) {
        /* Only the peer hanging up is watched while a job owns it. */
        if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
            atomic_store(&c->peer_gone, true);
            atomic_store(&c->job.cancelled, true);
            eng_pool_interrupt(s->pool, &c->job);
        }
        return;
    }
    if (c->phase == PGW_PH_CLOSING) {
        if (ev & (EPOLLHUP | EPOLLERR) || try_write(c) != 0 || c->out.len == c->out_off)
            conn_free(s, c);
        return;
    }
    if (c->phase == PGW_PH_TLS) {
        tls_step(s, c);
        return;
    }
    if (ev & EPOLLOUT) {
        if (try_write(c) != 0) {
            conn_free(s, c);
            return;
        }
    }
    if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        int r = read_in(c);
        if (r != 0) {
            conn_free(s, c);
            return;
        }
        c->last_active_ms = time_mono_ms();
    }
    if (c->phase == PGW_PH_READY) {
        if (c->out.len > c->out_off) {
            arm(s, c, idle_events(c));
            return;
        }
        if (maybe_dispatch(s, c) && !c->busy && c->phase == PGW_PH_READY)
            arm(s, c, idle_events(c));
        return;
    }
    startup_progress(s, c);
}

/* Connections whose job ended. */
static void take_returned(struct pgw_server *s)
{
    pthread_mutex_lock(&s->mu);
    struct pgw_conn *list = s->returned;
    s->returned = NULL;
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    while (list) {
        struct pgw_conn *c = list;
        list = c->next_returned;
        c->busy = false;
        pthread_mutex_lock(&s->mu);
        s->busy--;
        pthread_mutex_unlock(&s->mu);
        c->last_active_ms = time_mono_ms();
        if (c->close_after_job || atomic_load(&c->peer_gone)) {
            conn_free(s, c);
            continue;
        }
        if (stopping) {
            fatal(s, c, "57P01", "terminating connection due to administrator command");
            continue;
        }
        if (maybe_dispatch(s, c) && !c->busy && c->phase == PGW_PH_READY)
            arm(s, c, idle_events(c));
    }
}

static void check_timeouts(struct pgw_server *s, int64_t now, bool stopping)
{
    int64_t idle = s->cfg->server.pgwire.idle_timeout_secs * 1000;
    for (struct pgw_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->busy)
            continue;
        if (c->phase == PGW_PH_STARTUP || c->phase == PGW_PH_TLS || c->phase == PGW_PH_PASSWORD) {
            if (now >= c->deadline_ms || stopping) {
                free_pending_startup(c);
                conn_free(s, c);
            }
            continue;
        }
        if (c->phase == PGW_PH_READY && stopping) {
            fatal(s, c, "57P01", "terminating connection due to administrator command");
            continue;
        }
        if (c->phase == PGW_PH_READY && idle > 0 && now - c->last_active_ms >= idle) {
            log_debug("pgwire: session %d idle for %lld s: closed", c->pid,
                      (long long)(idle / 1000));
            fatal(s, c, "57P05", "terminating connection due to idle-session timeout");
            continue;
        }
        if (c->phase == PGW_PH_CLOSING && now - c->last_active_ms > 5000)
            conn_free(s, c);
    }
}

static void *loop_main(void *arg)
{
    struct pgw_server *s = arg;
    pthread_setname_np(pthread_self(), "pgwire");
    struct epoll_event evs[64];
    int64_t last_check = 0;
    bool closed_listener = false;
    for (;;) {
        int n = epoll_wait(s->epfd, evs, 64, LOOP_TICK_MS);
        pthread_mutex_lock(&s->mu);
        bool stopping = s->stopping, stop = s->stop_thread;
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &s->listen_fd) {
                if (!stopping)
                    on_accept(s);
            } else if (p == &s->wake_fd) {
                uint64_t v;
                if (read(s->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
                    log_debug("pgwire: wake read: %s", strerror(errno));
            } else {
                /* a connection freed earlier in this batch cannot appear:
                 * epoll drops events of closed descriptors, and a freed
                 * connection's descriptor is removed before close */
                on_event(s, p, evs[i].events);
            }
        }
        take_returned(s);
        if (stopping && !closed_listener) {
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listen_fd, NULL);
            close(s->listen_fd);
            s->listen_fd = -1;
            closed_listener = true;
        }
        int64_t now = time_mono_ms();
        if (now - last_check >= 500 || stopping) {
            check_timeouts(s, now, stopping);
            last_check = now;
        }
        if (stop)
            break;
    }
    return NULL;
}

/* ------------------------------------------------------------ lifecycle */

static SSL_CTX *load_tls(const struct pgwire_config *pg, struct vt_error *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        vt_error_set(err, VT_ERR_INTERNAL, "pgwire: cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_use_certificate_chain_file(ctx, pg->tls_cert) != 1) {
        unsigned long e = ERR_get_error();
        vt_error_set(err, VT_ERR_INVALID_CONFIG, "server.pgwire.tls_cert %s: %s", pg->tls_cert,
                     e ? ERR_reason_error_string(e) : "cannot be read");
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, pg->tls_key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        unsigned long e = ERR_get_error();
        vt_error_set(err, VT_ERR_INVALID_CONFIG, "server.pgwire.tls_key %s: %s", pg->tls_key,
                     e ? ERR_reason_error_string(e) : "cannot be read or does not match tls_cert");
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static int bind_listener(const char *host, int port, struct sockaddr_storage *out_addr,
                         struct vt_error *err)
{
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char h[256];
    snprintf(h, sizeof h, "%s", host);
    size_t hl = strlen(h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') { /* [::1] */
        memmove(h, h + 1, hl - 2);
        h[hl - 2] = '\0';
    }
    int rc = getaddrinfo(h, portbuf, &hints, &res);
    if (rc != 0) {
        vt_error_set(err, VT_ERR_INVALID_CONFIG, "server.pgwire.listen \"%s\": %s", host,
                     gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    int last = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 256) == 0) {
            memcpy(out_addr, ai->ai_addr, ai->ai_addrlen);
            break;
        }
        last = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        vt_error_set(err, VT_ERR_INVALID_CONFIG, "pgwire: cannot listen on %s:%d: %s", host, port,
                     strerror(last));
    return fd;
}

struct pgw_server *pgw_server_start(const struct pgw_server_options *o, struct vt_error *err)
{
    const struct pgwire_config *pg = &o->cfg->server.pgwire;
    struct pgw_server *s = calloc(1, sizeof *s);
    if (!s) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    s->cfg = o->cfg;
    s->catalog = o->catalog;
    s->pool = o->pool;
    s->listen_fd = s->epfd = s->wake_fd = -1;
    s->started_us = time_wall_us();
    pthread_mutex_init(&s->mu, NULL);
    snprintf(s->username, sizeof s->username, "%s", pg->username);
    if (!(s->login = pgw_login_create(pg, o->auth))) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        goto fail;
    }
    if (pg->tls_cert && pg->tls_key && !(s->tls = load_tls(pg, err)))
        goto fail;
    struct sockaddr_storage addr = {0};
    s->listen_fd = bind_listener(pg->listen, pg->port, &addr, err);
    if (s->listen_fd < 0)
        goto fail;
    s->loopback_listener = addr_is_loopback(&addr);
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    if (getsockname(s->listen_fd, (struct sockaddr *)&bound, &blen) == 0)
        s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    char where[320];
    snprintf(where, sizeof where, "the PostgreSQL listener on %s:%d", pg->listen, s->port);
    pgw_login_describe(s->login, where);
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->epfd < 0 || s->wake_fd < 0) {
        vt_error_set(err, VT_ERR_INTERNAL, "pgwire: %s", strerror(errno));
        goto fail;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->listen_fd};
    struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &s->wake_fd};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &ev) != 0 ||
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake_fd, &wev) != 0) {
        vt_error_set(err, VT_ERR_INTERNAL, "pgwire: epoll: %s", strerror(errno));
        goto fail;
    }
    if (pthread_create(&s->thread, NULL, loop_main, s) != 0) {
        vt_error_set(err, VT_ERR_INTERNAL, "pgwire: cannot start the listener thread");
        goto fail;
    }
    s->thread_started = true;
    return s;
fail:
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    SSL_CTX_free(s->tls);
    pgw_login_destroy(s->login);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
}

int pgw_server_port(const struct pgw_server *s)
{
    return s->port;
}

bool pgw_server_tls(const struct pgw_server *s)
{
    return s->tls != NULL;
}

void pgw_server_shutdown(struct pgw_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_mutex_unlock(&s->mu);
    wake(s);
}

bool pgw_server_destroy(struct pgw_server *s, int64_t drain_until_ms)
{
    if (!s)
        return true;
    pgw_server_shutdown(s);
    /* Running statements may finish until the drain deadline; then they are
     * cancelled and get a bounded time to hand their connections back. */
    bool cancelled = false;
    int64_t give_up = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int busy = s->busy;
        pthread_mutex_unlock(&s->mu);
        if (busy == 0)
            break;
        int64_t now = time_mono_ms();
        if (!cancelled && now >= drain_until_ms) {
            /* The loop thread owns the list; the jobs' flags are atomics,
             * and a connection is freed only by the loop after its job
             * handed it back, so reading the list here would race: ask the
             * pool instead. */
            eng_pool_interrupt_all(s->pool);
            cancelled = true;
            give_up = now + (int64_t)VT_SHUTDOWN_JOIN_SECS * 1000;
        }
        if (cancelled && now >= give_up) {
            log_warn("pgwire: %d sessions still running a statement after shutdown", busy);
            return false; /* the caller exits without freeing what jobs use */
        }
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&s->mu);
    s->stop_thread = true;
    pthread_mutex_unlock(&s->mu);
    wake(s);
    if (s->thread_started)
        pthread_join(s->thread, NULL);
    take_returned(s);
    while (s->conns)
        conn_free(s, s->conns);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    close(s->epfd);
    close(s->wake_fd);
    SSL_CTX_free(s->tls);
    pgw_login_destroy(s->login);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return true;
}
