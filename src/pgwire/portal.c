/*
 * Portals and cursors. A portal is a checked statement with its parameters
 * and the snapshot of the datasets it reads; its rows go out in parts: an
 * Execute with a row limit, or FETCH from a cursor. The first part runs the
 * statement; the rows past the limit are kept, encoded, for the next part
 * (bounded: VT_PGWIRE_MAX_SUSPENDED_BYTES for all portals of a connection),
 * so a part never holds a DuckDB result (or a worker) between messages.
 *
 * SQL cursors are portals with names (PostgreSQL's own model): DECLARE
 * checks the query with the gate and pins its snapshot, FETCH/MOVE read it
 * forward, CLOSE frees it; a cursor ends with its transaction unless it was
 * declared WITH HOLD. Results are text unless the cursor is BINARY.
 *
 * Held rows stay in memory while all portals of the connection hold less
 * than VT_PGWIRE_MAX_SUSPENDED_BYTES; past that a portal writes the rest to
 * an unlinked file under server.temp_directory and reads it back
 * VT_PGWIRE_SPILL_READ_BYTES at a time, so a psycopg2 named cursor can page
 * through a result of gigabytes (VT_PGWIRE_MAX_SPILL_BYTES per connection,
 * VT_PGWIRE_MAX_SPILL_TOTAL_BYTES for the listener).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_TMPFILE */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pgwire/pgwire_internal.h"
#include "query/query.h"
#include "util/file.h"
#include "util/log.h"
#include "util/timeutil.h"

/* ------------------------------------------------------------- statements */

enum vt_err pgw_prepared_check(struct pgw_session *s, struct pgw_prepared *p, const char *q,
                               size_t qlen, bool params, struct vt_error *err)
{
    char *norm = pgw_normalize(q, qlen);
    p->sql = norm ? norm : strndup(q, qlen);
    if (!p->sql)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    struct sql_checked chk;
    struct sql_gate_options o = pgw_gate_options(s, params);
    if (sql_gate_check_opts(s->con, p->sql, &o, pgw_is_dataset, s->cfg.catalog, &chk, err) !=
        VT_ERR_OK)
        return err->code;
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
    return VT_ERR_OK;
}

enum vt_err pgw_pin_for(struct pgw_session *s, struct pgw_prepared *p, struct exec_snapshot *snap,
                        struct vt_error *err)
{
    memset(snap, 0, sizeof *snap);
    int64_t deadline = pgw_statement_deadline(s);
    return exec_snapshot_pin(s->cfg.catalog, p->deps, p->ndeps,
                            deadline ? deadline : time_mono_ms() + 60000, snap, err);
}

enum vt_err pgw_describe_statement(struct pgw_session *s, struct pgw_prepared *p,
                                   struct vt_error *err)
{
    if (p->described)
        return VT_ERR_OK;
    struct exec_snapshot snap;
    if (pgw_pin_for(s, p, &snap, err) != VT_ERR_OK)
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
    exec_snapshot_release(&snap);
    if (rc == VT_ERR_OK)
        p->described = true;
    return rc;
}

void pgw_write_shape(struct pgw_session *s, const struct pgw_prepared *p, const int16_t *formats,
                     size_t nformats, struct pgw_portal *told)
{
    size_t n = p->shape.ncols;
    if (n == 0) {
        pgw_write_empty(s->out, 'n');
        return;
    }
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

/* ------------------------------------------------------------------- rows */

static _Atomic uint64_t spilled_total; /* every connection's spill files */

void pgw_held_init(struct pgw_portal *p)
{
    sb_init(&p->held, 0);
    p->spill_fd = -1;
}

void pgw_held_release(struct pgw_session *s, struct pgw_portal *p)
{
    s->held -= p->held_counted;
    p->held_counted = 0;
    sb_release(&p->held);
    p->held_off = 0;
    if (p->spill_fd >= 0) {
        close(p->spill_fd);
        p->spill_fd = -1;
        s->spilled -= p->spill_len;
        atomic_fetch_sub(&spilled_total, p->spill_len);
        p->spill_len = p->spill_off = 0;
    }
}

/* An unlinked file in dir (made when missing). -1 with errno. */
static int spill_open(const char *dir)
{
    if (!dir)
        dir = "/tmp";
    if (util_make_dirs(dir) != 0)
        return -1;
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
#endif
    char path[4200];
    snprintf(path, sizeof path, "%s/pgwire-held-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int write_all(int fd, const char *b, size_t n, uint64_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, b, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w, n -= (size_t)w, off += (uint64_t)w;
    }
    return 0;
}

static int read_all(int fd, char *b, size_t n, uint64_t off)
{
    while (n) {
        ssize_t r = pread(fd, b, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r, n -= (size_t)r, off += (uint64_t)r;
    }
    return 0;
}

enum vt_err pgw_held_add(struct pgw_session *s, struct pgw_portal *p, struct pgw_rows *enc,
                         duckdb_data_chunk chunk, uint64_t from, uint64_t n,
                         struct vt_error *err)
{
    if (p->spill_fd < 0 && s->held <= VT_PGWIRE_MAX_SUSPENDED_BYTES) {
        if (pgw_rows_data(enc, chunk, from, n, &p->held) != 0)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
        p->held_rows += n;
        s->held += p->held.len - p->held_counted;
        p->held_counted = p->held.len;
        return VT_ERR_OK;
    }
    if (p->spill_fd < 0) {
        p->spill_fd = spill_open(s->cfg.spill_dir);
        if (p->spill_fd < 0) {
            log_warn("pgwire: cannot hold rows in a file under %s: %s",
                     s->cfg.spill_dir ? s->cfg.spill_dir : "/tmp", strerror(errno));
            p->held_truncated = true;
            return VT_ERR_RESULT_CAPPED;
        }
    }
    struct strbuf b;
    sb_init(&b, 0);
    if (pgw_rows_data(enc, chunk, from, n, &b) != 0) {
        sb_release(&b);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
    }
    uint64_t total = atomic_fetch_add(&spilled_total, b.len) + b.len;
    bool fits = s->spilled + b.len <= (uint64_t)VT_PGWIRE_MAX_SPILL_BYTES &&
                total <= (uint64_t)VT_PGWIRE_MAX_SPILL_TOTAL_BYTES;
    if (!fits || write_all(p->spill_fd, b.buf, b.len, p->spill_len) != 0) {
        if (fits)
            log_warn("pgwire: cannot hold rows in a file under %s: %s",
                     s->cfg.spill_dir ? s->cfg.spill_dir : "/tmp", strerror(errno));
        atomic_fetch_sub(&spilled_total, b.len);
        sb_release(&b);
        p->held_truncated = true;
        return VT_ERR_RESULT_CAPPED;
    }
    p->spill_len += b.len;
    s->spilled += b.len;
    p->held_rows += n;
    sb_release(&b);
    return VT_ERR_OK;
}

/* The next whole DataRows of the portal's spill file into held (which has
 * been sent). 0: none left; -1: the file could not be read. */
static int held_refill(struct pgw_session *s, struct pgw_portal *p)
{
    if (p->spill_fd < 0 || p->spill_off >= p->spill_len)
        return 0;
    s->held -= p->held_counted;
    p->held_counted = 0;
    sb_release(&p->held); /* its memory part may have been large */
    sb_init(&p->held, 0);
    p->held_off = 0;
    uint64_t left = p->spill_len - p->spill_off;
    size_t want = left < VT_PGWIRE_SPILL_READ_BYTES ? (size_t)left : VT_PGWIRE_SPILL_READ_BYTES;
    if (want < 5 || sb_grow(&p->held, want) != 0 ||
        read_all(p->spill_fd, p->held.buf, want, p->spill_off) != 0)
        return -1;
    size_t end = 0;
    for (;;) {
        if (end + 5 > want)
            break;
        const unsigned char *m = (const unsigned char *)p->held.buf + end;
        size_t mlen = 1 + ((size_t)m[1] << 24 | (size_t)m[2] << 16 | (size_t)m[3] << 8 | m[4]);
        if (end + mlen > want) {
            if (end == 0) { /* one row larger than a read: read it whole */
                if (mlen > left || sb_grow(&p->held, mlen) != 0 ||
                    read_all(p->spill_fd, p->held.buf, mlen, p->spill_off) != 0)
                    return -1;
                end = mlen;
            }
            break;
        }
        end += mlen;
    }
    p->held.len = end;
    p->spill_off += end;
    return 1;
}

/* Up to `limit` (0: all) of a suspended portal's held rows: sent, or dropped
 * (discard). */
static bool held_rows(struct pgw_session *s, struct pgw_portal *p, uint64_t limit, bool discard,
                      uint64_t *out_n, struct vt_error *err)
{
    uint64_t sent = 0;
    while (!limit || sent < limit) {
        if (p->held_off >= p->held.len) {
            int r = held_refill(s, p);
            if (r < 0) {
                vt_error_set(err, VT_ERR_INTERNAL, "cannot read the rows held for this portal");
                pgw_held_release(s, p);
                p->state = PGW_P_DONE;
                return false;
            }
            if (r == 0)
                break;
        }
        const unsigned char *m = (const unsigned char *)p->held.buf + p->held_off;
        size_t mlen = 1 + ((size_t)m[1] << 24 | (size_t)m[2] << 16 | (size_t)m[3] << 8 | m[4]);
        if (!discard)
            sb_add(s->out, m, mlen);
        p->held_off += mlen;
        p->held_rows--;
        sent++;
        if (!discard && pgw_flush_if_full(s) != 0) {
            vt_error_set(err, VT_ERR_CLIENT_GONE, NULL);
            return false;
        }
    }
    *out_n = sent;
    p->rows += sent;
    if (p->held_off < p->held.len || (p->spill_fd >= 0 && p->spill_off < p->spill_len))
        return true;
    pgw_held_release(s, p);
    p->state = PGW_P_DONE;
    if (p->held_truncated) {
        vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                     "the rest of this result did not fit the %lld MiB a connection holds "
                     "for portals and cursors read in parts; read it without a row limit or "
                     "add LIMIT/OFFSET",
                     (VT_PGWIRE_MAX_SUSPENDED_BYTES + VT_PGWIRE_MAX_SPILL_BYTES) / (1024 * 1024));
        return false;
    }
    return true;
}

bool pgw_portal_rows(struct pgw_session *s, struct pgw_portal *p, uint64_t limit, bool discard,
                     uint64_t *out_n)
{
    struct vt_error err = {0};
    *out_n = 0;
    if (p->state == PGW_P_DONE)
        return true;
    if (p->state == PGW_P_SUSPENDED) {
        bool ok = held_rows(s, p, limit, discard, out_n, &err);
        if (!ok && pgw_stopped_error(s, &err))
            pgw_fail(s, &err);
        return ok;
    }
    struct pgw_prepared *st = p->stmt;
    if (st->reads_catalog && pgw_sync_catalog(s, &err) != VT_ERR_OK) {
        p->state = PGW_P_DONE;
        pgw_fail(s, &err);
        return false;
    }
    bool text = true;
    for (size_t i = 0; i < p->nformats; i++)
        text &= p->formats[i] == 0;
    /* From the index when it answers with the types the client was told
     * (Describe of the statement or the portal), or when the client learns
     * them from this result. */
    uint64_t fast_rows = 0;
    bool fast_ok = false;
    uint32_t stack[64], *told = NULL;
    size_t ntold = 0;
    if (p->told) {
        told = p->told_oids;
        ntold = p->told_n;
    } else if (st->described && !p->describe_pending && st->shape.ncols <= 64) {
        for (size_t i = 0; i < st->shape.ncols; i++)
            stack[i] = duckdb_get_type_id(st->shape.types[i]) == DUCKDB_TYPE_INVALID
                           ? PGW_OID_TEXT
                           : pgw_type_of(st->shape.types[i]).oid;
        told = stack;
        ntold = st->shape.ncols;
    }
    if (!discard && st->lookup && text && !limit &&
        (told || !st->described || p->describe_pending) &&
        pgw_fast_lookup(s, st->lookup, &p->snap, p->params, p->nparams, p->describe_pending,
                        told, ntold, &fast_rows, &fast_ok)) {
        p->describe_pending = false;
        p->state = PGW_P_DONE;
        p->rows = *out_n = fast_rows;
        return fast_ok;
    }
    struct pgw_sink k = {.s = s, .mode = PGW_SINK_PORTAL, .portal = p, .limit = limit,
                         .discard = discard};
    struct strbuf scratch, *out = s->out;
    if (discard) { /* MOVE: the rows are made and dropped */
        sb_init(&scratch, VT_PGWIRE_MAX_SUSPENDED_BYTES);
        s->out = &scratch;
    }
    pgw_start_statement(s, pgw_statement_deadline(s));
    bool ok = pgw_run_plan(s, st->rewritten ? st->rewritten : st->sql, &p->snap, p->params,
                           p->nparams, false, &k);
    pgw_end_statement(s);
    if (discard) {
        s->out = out;
        if (!ok) /* the error went to the scratch buffer */
            pgw_fail(s, &k.err);
        sb_release(&scratch);
    }
    p->rows = *out_n = k.sent;
    p->state = ok && k.suspended ? PGW_P_SUSPENDED : PGW_P_DONE;
    return ok;
}

/* ---------------------------------------------------------------- cursors */

/* A copy of a bound value into arena a (strings and list items too). */
static bool copy_value(struct arena *a, struct query_value *dst, const struct query_value *src)
{
    *dst = *src;
    if (src->kind == QUERY_VALUE_VARCHAR || src->kind == QUERY_VALUE_BLOB) {
        char *c = arena_alloc(a, src->u.s.len + 1);
        if (!c)
            return false;
        memcpy(c, src->u.s.ptr, src->u.s.len);
        c[src->u.s.len] = '\0';
        dst->u.s.ptr = c;
    } else if (src->kind == QUERY_VALUE_LIST) {
        size_t n = src->u.list.n;
        struct query_value *items = arena_alloc(a, (n ? n : 1) * sizeof *items);
        if (!items)
            return false;
        for (size_t i = 0; i < n; i++)
            if (!copy_value(a, &items[i], &src->u.list.items[i]))
                return false;
        dst->u.list.items = items;
    }
    return true;
}

bool pgw_cursor_declare(struct pgw_session *s, const struct pgw_stmt *st,
                        const struct pgw_portal *bound)
{
    struct vt_error err = {0};
    if (s->tx == 'I' && !st->hold) {
        vt_error_set(&err, VT_ERR_PG_NO_TRANSACTION,
                     "DECLARE CURSOR can only be used in transaction blocks");
        pgw_fail(s, &err);
        return false;
    }
    if (!*st->name || pgw_find_portal(s, st->name, NULL)) {
        vt_error_set(&err, VT_ERR_PG_DUPLICATE_CURSOR, "cursor \"%s\" already exists", st->name);
        pgw_fail(s, &err);
        return false;
    }
    if (s->n_portals == VT_PGWIRE_MAX_PORTALS) {
        vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED, "too many open portals and cursors (at most %d)",
                     VT_PGWIRE_MAX_PORTALS);
        pgw_fail(s, &err);
        return false;
    }
    size_t qlen = strlen(st->query);
    size_t mem = sizeof(struct pgw_prepared) + sizeof(struct pgw_portal) + 2 * qlen + 128;
    if (s->mem + mem > VT_PGWIRE_MAX_SESSION_BYTES) {
        vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED,
                     "this connection holds too much in prepared statements, portals and "
                     "cursors (at most %d MiB); close some",
                     VT_PGWIRE_MAX_SESSION_BYTES / (1024 * 1024));
        pgw_fail(s, &err);
        return false;
    }
    struct pgw_prepared *ps = calloc(1, sizeof *ps);
    struct pgw_portal *p = calloc(1, sizeof *p);
    bool ok = ps && p;
    if (ps) {
        ps->refs = 1;
        ps->name = strdup("");
        ps->st.kind = PGW_STMT_SQL;
        ok = ok && ps->name;
    }
    if (ok && pgw_prepared_check(s, ps, st->query, qlen, bound != NULL, &err) != VT_ERR_OK) {
        pgw_prepared_put(s, ps);
        free(p);
        pgw_fail(s, &err);
        return false;
    }
    if (ok) {
        p->mem = mem;
        s->mem += mem;
        p->name = strdup(st->name);
        p->stmt = ps; /* the portal's reference */
        ps = NULL;
        p->cursor = true;
        p->hold = st->hold;
        arena_init(&p->arena, VT_PGWIRE_MAX_SESSION_BYTES);
        pgw_held_init(p);
        p->nformats = 1;
        p->formats = calloc(1, sizeof *p->formats);
        ok = p->name && p->formats;
        if (ok)
            p->formats[0] = st->binary ? 1 : 0;
        size_t np = bound ? bound->nparams : 0;
        p->params = arena_calloc(&p->arena, (np ? np : 1) * sizeof *p->params);
        ok = ok && p->params;
        for (size_t i = 0; ok && i < np; i++)
            ok = copy_value(&p->arena, &p->params[i], &bound->params[i]);
        p->nparams = np;
    }
    if (!ok) {
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
    } else if (pgw_pin_for(s, p->stmt, &p->snap, &err) == VT_ERR_OK) {
        p->pinned = true;
    } else {
        ok = false;
    }
    if (!ok) {
        pgw_prepared_put(s, ps);
        pgw_portal_free(s, p);
        pgw_fail(s, &err);
        return false;
    }
    s->portals[s->n_portals++] = p;
    pgw_write_command_complete(s->out, "DECLARE CURSOR");
    return true;
}

/* The cursor a FETCH, MOVE or CLOSE names, or NULL with the error reported. */
static struct pgw_portal *cursor_named(struct pgw_session *s, const char *name, size_t *out_i)
{
    struct pgw_portal *p = *name ? pgw_find_portal(s, name, out_i) : NULL;
    if (p && p->stmt->st.kind == PGW_STMT_SQL)
        return p;
    struct vt_error err = {0};
    vt_error_set(&err, VT_ERR_PG_NO_PORTAL, "cursor \"%s\" does not exist", name);
    pgw_fail(s, &err);
    return NULL;
}

/* A cursor that has not run yet takes the result formats its first FETCH
 * asks for (psycopg's binary cursors: FETCH with binary results), unless it
 * was declared BINARY; its rows are encoded once, in that format. */
static bool cursor_formats(struct pgw_portal *p, const int16_t *formats, size_t nformats)
{
    if (p->state != PGW_P_READY || !formats || !nformats || !p->cursor ||
        (p->nformats == 1 && p->formats[0] == 1))
        return true;
    int16_t *f = calloc(nformats, sizeof *f);
    if (!f)
        return false;
    memcpy(f, formats, nformats * sizeof *f);
    free(p->formats);
    p->formats = f;
    p->nformats = nformats;
    return true;
}

bool pgw_cursor_describe(struct pgw_session *s, const struct pgw_stmt *st, const int16_t *formats,
                         size_t nformats)
{
    struct pgw_portal *p = cursor_named(s, st->name, NULL);
    if (!p)
        return false;
    if (!cursor_formats(p, formats, nformats)) {
        struct vt_error err = {0};
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        pgw_fail(s, &err);
        return false;
    }
    struct vt_error err = {0};
    if (pgw_describe_statement(s, p->stmt, &err) != VT_ERR_OK) {
        pgw_fail(s, &err);
        return false;
    }
    pgw_write_shape(s, p->stmt, p->formats, p->nformats, p);
    return true;
}

bool pgw_cursor_fetch(struct pgw_session *s, const struct pgw_stmt *st, bool describe,
                      const int16_t *formats, size_t nformats)
{
    struct pgw_portal *p = cursor_named(s, st->name, NULL);
    if (!p)
        return false;
    bool move = st->kind == PGW_STMT_MOVE;
    if (describe && !move && !pgw_cursor_describe(s, st, formats, nformats))
        return false;
    if (!move && !cursor_formats(p, formats, nformats)) {
        struct vt_error err = {0};
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
        pgw_fail(s, &err);
        return false;
    }
    if (!move && !p->told) {
        /* The client learnt the columns from a Describe of this FETCH. */
        struct vt_error err = {0};
        if (pgw_describe_statement(s, p->stmt, &err) != VT_ERR_OK) {
            pgw_fail(s, &err);
            return false;
        }
        struct strbuf none;
        sb_init(&none, 0);
        struct strbuf *out = s->out;
        s->out = &none;
        pgw_write_shape(s, p->stmt, p->formats, p->nformats, p);
        s->out = out;
        sb_release(&none);
    }
    uint64_t limit = st->count == PGW_FETCH_ALL ? 0 : (uint64_t)st->count;
    uint64_t n = 0;
    if (st->count != 0 && !pgw_portal_rows(s, p, limit, move, &n))
        return false;
    char tag[48];
    snprintf(tag, sizeof tag, "%s %" PRIu64, move ? "MOVE" : "FETCH", n);
    pgw_write_command_complete(s->out, tag);
    return true;
}

bool pgw_cursor_close(struct pgw_session *s, const struct pgw_stmt *st)
{
    if (st->all) {
        for (size_t i = s->n_portals; i-- > 0;) {
            if (!s->portals[i]->cursor)
                continue;
            pgw_portal_free(s, s->portals[i]);
            s->portals[i] = s->portals[--s->n_portals];
        }
        pgw_write_command_complete(s->out, "CLOSE CURSOR ALL");
        return true;
    }
    size_t at = 0;
    struct pgw_portal *p = cursor_named(s, st->name, &at);
    if (!p)
        return false;
    pgw_portal_free(s, p);
    s->portals[at] = s->portals[--s->n_portals];
    pgw_write_command_complete(s->out, "CLOSE CURSOR");
    return true;
}
