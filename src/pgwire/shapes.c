/*
 * The gate's answers for simple Queries, remembered by shape. Clients that
 * put values into the SQL text (psql, psycopg2, pgbench -M simple, most
 * Python and BI code) send the same statement again and again with other
 * constants; the SQL gate costs ~0.7M instructions per statement (DuckDB's
 * parse to JSON, jansson, the walk), ten times what running a point lookup
 * from the index does. A shape is the statement with each constant that is
 * an operand of a comparison (`col = 42`, `s <> 'x'`, `t >= 1.5`) replaced
 * by a parameter ($1, $2, ...), in this session.
 *
 * The first statement of a shape goes through the gate as always; then the
 * shape itself goes through it with parameters allowed. The shape is
 * remembered when both agree: the shape's answer with the constants put
 * back is the same text, the same datasets, the same catalog use and the
 * same index lookup as the statement's. A parameter is a value the gate
 * cannot look into, so what the gate let through for the shape it lets
 * through for any constant there; and since the answers matched, the
 * dialect's rewrite does not depend on the constant either (where it does,
 * e.g. a template a function reads, the texts differ and the shape is
 * remembered as "check every time"). Later statements of the shape skip
 * the gate: the remembered text with their constants, pinned as usual.
 *
 * Entries are per session (the dialect reads session settings), dropped
 * when a setting changes or the catalog's dataset names change
 * (cat_names_epoch), least recently used first past SHAPE_ENTRIES.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "catalog/catalog.h"
#include "pgwire/pgwire_internal.h"
#include "sql/sql.h"

#define SHAPE_ENTRIES 32
#define SHAPE_MAX_CONSTS 64

struct shape {
    char *key;                  /* shape text, then '\n' and the constants' kinds */
    uint64_t hash, epoch, settings;
    uint64_t used;
    bool same;                  /* the gate's answers agree: skip it */
    char *text;                 /* what runs, with $k for the constants; NULL: as written */
    char **names;               /* datasets read */
    size_t n_names;
    bool reads_catalog;
    struct sql_lookup *lookup;  /* terms with param k: constant k */
};

struct pgw_shapes {
    struct shape e[SHAPE_ENTRIES];
    size_t n;
    uint64_t tick;
};

/* A constant of the statement: [pos, pos + len), kind 'i' (digits), 'd'
 * (a decimal or exponent number), 's' (a plain '...' string). */
struct konst {
    size_t pos, len;
    char kind;
};

static void shape_clear(struct shape *e)
{
    free(e->key);
    free(e->text);
    for (size_t i = 0; i < e->n_names; i++)
        free(e->names[i]);
    free(e->names);
    sql_lookup_free(e->lookup);
    memset(e, 0, sizeof *e);
}

void pgw_shapes_free(struct pgw_shapes *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        shape_clear(&c->e[i]);
    free(c);
}

static bool comparison(const char *s, const struct pgw_token *t)
{
    static const char *const ops[] = {"=", "<>", "!=", "<", ">", "<=", ">=", NULL};
    if (t->kind != PGW_TOK_OP)
        return false;
    for (size_t i = 0; ops[i]; i++)
        if (strlen(ops[i]) == t->len && !memcmp(s + t->pos, ops[i], t->len))
            return true;
    return false;
}

static char number_kind(const char *s, size_t len)
{
    bool digits = true, dot = false, exp = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9')
            continue;
        digits = false;
        if (c == '.' && !dot && !exp) {
            dot = true;
        } else if ((c == 'e' || c == 'E') && !exp && i > 0 && i + 1 < len) {
            exp = true;
            if (s[i + 1] == '+' || s[i + 1] == '-')
                i++;
            if (i + 1 >= len)
                return 0;
        } else {
            return 0;
        }
    }
    return digits ? 'i' : 'd';
}

/* The constants to abstract; false when the statement has none or is not
 * for shapes at all (parameters of its own, an unreadable token). */
static bool find_constants(const char *s, size_t n, struct konst *out, size_t *nout)
{
    struct pgw_token prev = {.kind = PGW_TOK_END}, t, next;
    size_t k = 0, pos = pgw_lex(s, n, 0, &t);
    while (t.kind != PGW_TOK_END) {
        if (t.kind == PGW_TOK_BAD || t.kind == PGW_TOK_PARAM)
            return false;
        size_t after = pgw_lex(s, n, pos, &next);
        char kind = 0;
        if (t.kind == PGW_TOK_NUMBER)
            kind = number_kind(s + t.pos, t.len);
        else if (t.kind == PGW_TOK_STRING && s[t.pos] == '\'')
            kind = 's';
        /* an operand of a comparison, not cast, subscripted or qualified */
        bool followed = next.kind == PGW_TOK_PUNCT &&
                        (s[next.pos] == ':' || s[next.pos] == '[' || s[next.pos] == '.' ||
                         s[next.pos] == '(');
        if (kind && comparison(s, &prev) && !followed) {
            if (k == SHAPE_MAX_CONSTS)
                return false;
            out[k++] = (struct konst){t.pos, t.len, kind};
        }
        prev = t;
        t = next;
        pos = after;
    }
    *nout = k;
    return k > 0;
}

/* text with its PARAM tokens $k replaced by constant k of sql (a lexer
 * walk: a "$1" inside a string stays). NULL when a parameter is unknown. */
static char *put_back(const char *text, const char *sql, const struct konst *c, size_t nc)
{
    struct strbuf o;
    sb_init(&o, 0);
    size_t n = strlen(text), last = 0, pos = 0;
    struct pgw_token t;
    for (;;) {
        pos = pgw_lex(text, n, pos, &t);
        if (t.kind == PGW_TOK_END || t.kind == PGW_TOK_BAD)
            break;
        if (t.kind != PGW_TOK_PARAM)
            continue;
        long k = strtol(text + t.pos + 1, NULL, 10);
        if (k < 1 || (size_t)k > nc) {
            sb_release(&o);
            return NULL;
        }
        sb_add(&o, text + last, t.pos - last);
        sb_add(&o, sql + c[k - 1].pos, c[k - 1].len);
        last = t.pos + t.len;
    }
    sb_add(&o, text + last, n - last);
    if (o.overflow) {
        sb_release(&o);
        return NULL;
    }
    return sb_detach(&o, NULL);
}

/* The JSON a lookup term holds for constant c (as the gate writes an
 * INTEGER/BIGINT or VARCHAR constant), or NULL when the gate would not make
 * it a lookup value (decimals, integers past int64). */
static char *const_json(const char *sql, const struct konst *c)
{
    json_t *v = NULL;
    if (c->kind == 'i') {
        char digits[32];
        if (c->len >= sizeof digits)
            return NULL;
        memcpy(digits, sql + c->pos, c->len);
        digits[c->len] = '\0';
        errno = 0;
        char *end;
        long long x = strtoll(digits, &end, 10);
        if (errno || *end)
            return NULL;
        v = json_integer(x);
    } else if (c->kind == 's') {
        struct strbuf u;
        sb_init(&u, c->len);
        for (size_t i = c->pos + 1; i + 1 < c->pos + c->len; i++) {
            sb_addc(&u, sql[i]);
            if (sql[i] == '\'')
                i++; /* '' */
        }
        v = u.overflow ? NULL : json_stringn(u.buf ? u.buf : "", u.len);
        sb_release(&u);
    }
    if (!v)
        return NULL;
    char *out = json_dumps(v, JSON_ENCODE_ANY);
    json_decref(v);
    return out;
}

static char *dup_or_null(const char *s, bool *bad)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *bad = true;
    return d;
}

/* A copy of lookup l with parameter terms given the constants' values;
 * NULL when a value cannot be a lookup value (then the statement runs
 * without the index, as the gate would have said). With c NULL, a copy that
 * keeps the parameter terms. */
static struct sql_lookup *with_values(const struct sql_lookup *l, const char *sql,
                                      const struct konst *c, size_t nc)
{
    if (!l)
        return NULL;
    struct sql_lookup *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    bool bad = false;
    o->dataset = dup_or_null(l->dataset, &bad);
    if (l->ncolumns && (o->columns = calloc(l->ncolumns, sizeof *o->columns)) != NULL) {
        o->ncolumns = l->ncolumns;
        for (size_t i = 0; i < l->ncolumns; i++)
            o->columns[i] = dup_or_null(l->columns[i], &bad);
    } else if (l->ncolumns) {
        bad = true;
    }
    if (l->nterms && (o->terms = calloc(l->nterms, sizeof *o->terms)) != NULL) {
        o->nterms = l->nterms;
        for (size_t i = 0; i < l->nterms && !bad; i++) {
            const struct sql_lookup_term *t = &l->terms[i];
            o->terms[i].column = dup_or_null(t->column, &bad);
            if (t->param > 0 && !c)
                o->terms[i].param = t->param;
            else if (t->param > 0 && (size_t)t->param <= nc)
                bad |= !(o->terms[i].json = const_json(sql, &c[t->param - 1]));
            else if (t->param > 0)
                bad = true;
            else
                o->terms[i].json = dup_or_null(t->json, &bad);
        }
    } else if (l->nterms) {
        bad = true;
    }
    if (bad) {
        sql_lookup_free(o);
        return NULL;
    }
    return o;
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same_lookup(const struct sql_lookup *a, const struct sql_lookup *b)
{
    if (!a || !b)
        return !a && !b;
    if (!same_str(a->dataset, b->dataset) || a->ncolumns != b->ncolumns ||
        a->nterms != b->nterms)
        return false;
    for (size_t i = 0; i < a->ncolumns; i++)
        if (!same_str(a->columns[i], b->columns[i]))
            return false;
    for (size_t i = 0; i < a->nterms; i++)
        if (!same_str(a->terms[i].column, b->terms[i].column) ||
            a->terms[i].param != b->terms[i].param || !same_str(a->terms[i].json, b->terms[i].json))
            return false;
    return true;
}

/* The entry for key (a hit moves it up), or NULL. */
static struct shape *find(struct pgw_shapes *c, const char *key, uint64_t h, uint64_t epoch,
                          uint64_t settings)
{
    for (size_t i = 0; i < c->n; i++) {
        struct shape *e = &c->e[i];
        if (e->key && e->hash == h && e->epoch == epoch && e->settings == settings && !strcmp(e->key, key)) {
            e->used = ++c->tick;
            return e;
        }
    }
    return NULL;
}

static struct shape *slot(struct pgw_shapes *c)
{
    if (c->n < SHAPE_ENTRIES)
        return &c->e[c->n++];
    struct shape *old = &c->e[0];
    for (size_t i = 1; i < c->n; i++)
        if (c->e[i].used < old->used)
            old = &c->e[i];
    shape_clear(old);
    return old;
}

/* Whether the shape's answer p, with the constants put back, is the
 * statement's answer o; fills e (text, names, lookup) when it is. */
static bool agree(const struct exec_snapshot *o, const struct exec_snapshot *p, const char *sql,
                  const char *shape_sql, const struct konst *c, size_t nc, struct shape *e)
{
    if (o->reads_catalog != p->reads_catalog || o->n != p->n || !o->rewritten != !p->rewritten)
        return false;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->views[i].name, p->views[i].name) != 0)
            return false;
    char *back = put_back(p->rewritten ? p->rewritten : shape_sql, sql, c, nc);
    bool same = back && !strcmp(back, o->rewritten ? o->rewritten : sql);
    free(back);
    if (!same)
        return false;
    struct sql_lookup *l = with_values(p->lookup, sql, c, nc);
    same = same_lookup(l, o->lookup);
    sql_lookup_free(l);
    if (!same)
        return false;
    bool bad = false;
    e->text = dup_or_null(p->rewritten, &bad);
    if (o->n && !(e->names = calloc(o->n, sizeof *e->names)))
        return false;
    for (size_t i = 0; i < o->n; i++)
        e->names[i] = dup_or_null(o->views[i].name, &bad);
    e->n_names = o->n;
    e->reads_catalog = o->reads_catalog;
    return !bad;
}

enum vt_err pgw_shaped_snapshot(struct pgw_session *s, const char *sql, int64_t deadline_ms,
                                struct exec_snapshot *snap, struct vt_error *err)
{
    struct sql_gate_options o = pgw_gate_options(s, false);
    size_t len = strlen(sql), nc = 0;
    struct konst c[SHAPE_MAX_CONSTS];
    if (!find_constants(sql, len, c, &nc) || (!s->shapes && !(s->shapes = calloc(1, sizeof *s->shapes))))
        return exec_snapshot_take_opts(s->cfg.catalog, s->con, sql, &o, deadline_ms, snap, err);
    /* the shape: $k for constant k; the key adds the constants' kinds */
    struct strbuf k;
    sb_init(&k, len + nc + 8);
    size_t last = 0;
    for (size_t i = 0; i < nc; i++) {
        sb_add(&k, sql + last, c[i].pos - last);
        sb_addf(&k, "$%zu", i + 1);
        last = c[i].pos + c[i].len;
    }
    sb_add(&k, sql + last, len - last);
    size_t shape_len = k.len;
    sb_addc(&k, '\n');
    for (size_t i = 0; i < nc; i++)
        sb_addc(&k, c[i].kind);
    if (k.overflow) {
        sb_release(&k);
        return exec_snapshot_take_opts(s->cfg.catalog, s->con, sql, &o, deadline_ms, snap, err);
    }
    uint64_t epoch = cat_names_epoch(s->cfg.catalog);
    uint64_t h = XXH3_64bits(k.buf, k.len);
    struct shape *e = find(s->shapes, k.buf, h, epoch, s->settings_gen);
    if (e && e->same) {
        sb_release(&k);
        exec_snapshot_release(snap);
        snap->reads_catalog = e->reads_catalog;
        if (e->text && !(snap->rewritten = put_back(e->text, sql, c, nc)))
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        snap->lookup = with_values(e->lookup, sql, c, nc);
        return exec_snapshot_pin(s->cfg.catalog, e->names, e->n_names, deadline_ms, snap, err);
    }
    enum vt_err rc = exec_snapshot_take_opts(s->cfg.catalog, s->con, sql, &o, deadline_ms, snap,
                                             err);
    if (rc != VT_ERR_OK || e) { /* refused (not remembered), or known to disagree */
        sb_release(&k);
        return rc;
    }
    /* The shape through the gate, parameters allowed (pins it too: on the
     * first statement of a shape only). */
    struct sql_gate_options po = pgw_gate_options(s, true);
    struct exec_snapshot p;
    memset(&p, 0, sizeof p);
    struct vt_error ignored = {0};
    k.buf[shape_len] = '\0';
    e = slot(s->shapes);
    e->hash = h;
    e->epoch = epoch;
    e->settings = s->settings_gen;
    e->used = ++s->shapes->tick;
    if (exec_snapshot_take_opts(s->cfg.catalog, s->con, k.buf, &po, deadline_ms, &p, &ignored) ==
        VT_ERR_OK) {
        e->same = agree(snap, &p, sql, k.buf, c, nc, e);
        if (e->same && p.lookup && !(e->lookup = with_values(p.lookup, NULL, NULL, 0)))
            e->same = false;
    }
    exec_snapshot_release(&p);
    k.buf[shape_len] = '\n';
    if (!e->same) { /* remembered as "check every time" */
        free(e->text);
        e->text = NULL;
    }
    e->key = sb_detach(&k, NULL);
    if (!e->key) { /* without a key it can never be found: free the slot's contents */
        shape_clear(e);
        e->used = 0;
    }
    return VT_ERR_OK;
}
