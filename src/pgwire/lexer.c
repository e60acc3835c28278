/*
 * PostgreSQL's SQL lexer, as much as the listener needs (pgwire.h): split a
 * simple Query into statements at top-level semicolons, and recognise the
 * session statements that clients and connection pools send (BEGIN, COMMIT,
 * SET, SHOW, DISCARD ALL, ...) and COPY ... TO STDOUT. Everything it does not
 * recognise exactly goes to the SQL gate, which parses with DuckDB's own
 * parser and refuses what is not a read-only SELECT: this file decides only
 * which harmless statements are answered here, never what may run.
 *
 * Token rules follow PostgreSQL's scan.l with standard_conforming_strings on:
 * '...' with '' doubling, E'...' with backslash escapes, U&'...', B'...',
 * X'...', $tag$...$tag$, "..." identifiers with "" doubling, nested block
 * comments and -- comments.
 *
 * Also here, as pure text work: PostgreSQL's date/time template patterns as
 * DuckDB's strftime/strptime formats (pgw_datetime_format, for the dialect's
 * to_char/to_timestamp/to_date rewrites).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pgwire/pgwire.h"
#include "util/strbuf.h"

static bool ident_start(unsigned char c)
{
    return isalpha(c) || c == '_' || c >= 0x80;
}

static bool ident_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

static bool op_char(char c)
{
    return c && strchr("+-*/<>=~!@#%^&|`?", c) != NULL;
}

/* End of a quoted run starting after the opening quote at i: `q` doubled is
 * an escaped quote; with `backslash`, \x escapes any character. Returns the
 * index after the closing quote, or n when unterminated (*bad set). */
static size_t quoted_end(const char *s, size_t n, size_t i, char q, bool backslash, bool *bad)
{
    while (i < n) {
        char c = s[i];
        if (backslash && c == '\\') {
            i += 2;
            continue;
        }
        if (c == q) {
            if (i + 1 < n && s[i + 1] == q) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i++;
    }
    *bad = true;
    return n;
}

/* A dollar-quote opening tag at i ("$$" or "$tag$"): its length, else 0. */
static size_t dollar_tag(const char *s, size_t n, size_t i)
{
    if (i >= n || s[i] != '$')
        return 0;
    size_t j = i + 1;
    if (j < n && s[j] == '$')
        return 2;
    if (j >= n || !ident_start((unsigned char)s[j]) || s[j] == '$')
        return 0;
    while (j < n && ident_char((unsigned char)s[j]) && s[j] != '$')
        j++;
    if (j < n && s[j] == '$')
        return j - i + 1;
    return 0;
}

/* Skips whitespace and comments from i. An unterminated block comment runs
 * to the end (*bad set). */
static size_t skip_space(const char *s, size_t n, size_t i, bool *bad)
{
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ||
                         s[i] == '\f' || s[i] == '\v'))
            i++;
        if (i + 1 < n && s[i] == '-' && s[i + 1] == '-') {
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
            int depth = 0;
            while (i < n) {
                if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
                    depth++;
                    i += 2;
                } else if (i + 1 < n && s[i] == '*' && s[i + 1] == '/') {
                    depth--;
                    i += 2;
                    if (depth == 0)
                        break;
                } else {
                    i++;
                }
            }
            if (depth != 0) {
                *bad = true;
                return n;
            }
            continue;
        }
        return i;
    }
}

size_t pgw_lex(const char *s, size_t n, size_t pos, struct pgw_token *out)
{
    bool bad = false;
    size_t i = skip_space(s, n, pos, &bad);
    out->pos = i;
    out->len = 0;
    if (bad) {
        out->kind = PGW_TOK_BAD;
        out->pos = pos;
        out->len = n - pos;
        return n;
    }
    if (i >= n) {
        out->kind = PGW_TOK_END;
        return n;
    }
    unsigned char c = (unsigned char)s[i];
    size_t j = i;
    /* Prefixed strings: E'..', B'..', X'..', N'..', U&'..' and U&".." */
    if ((c == 'e' || c == 'E' || c == 'b' || c == 'B' || c == 'x' || c == 'X' || c == 'n' ||
         c == 'N') &&
        i + 1 < n && s[i + 1] == '\'') {
        bool esc = c == 'e' || c == 'E';
        j = quoted_end(s, n, i + 2, '\'', esc, &bad);
        out->kind = bad ? PGW_TOK_BAD : PGW_TOK_STRING;
    } else if ((c == 'u' || c == 'U') && i + 2 < n && s[i + 1] == '&' &&
               (s[i + 2] == '\'' || s[i + 2] == '"')) {
        char q = s[i + 2];
        j = quoted_end(s, n, i + 3, q, false, &bad);
        out->kind = bad ? PGW_TOK_BAD : (q == '"' ? PGW_TOK_QIDENT : PGW_TOK_STRING);
    } else if (ident_start(c)) {
        while (j < n && ident_char((unsigned char)s[j]))
            j++;
        out->kind = PGW_TOK_IDENT;
    } else if (c == '\'') {
        j = quoted_end(s, n, i + 1, '\'', false, &bad);
        out->kind = bad ? PGW_TOK_BAD : PGW_TOK_STRING;
    } else if (c == '"') {
        j = quoted_end(s, n, i + 1, '"', false, &bad);
        out->kind = bad ? PGW_TOK_BAD : PGW_TOK_QIDENT;
    } else if (c == '$') {
        size_t tag = dollar_tag(s, n, i);
        if (tag) {
            j = i + tag;
            for (;;) {
                const char *hit = j < n ? memchr(s + j, '$', n - j) : NULL;
                if (!hit) {
                    bad = true;
                    j = n;
                    break;
                }
                size_t k = (size_t)(hit - s);
                if (k + tag <= n && memcmp(s + k, s + i, tag) == 0) {
                    j = k + tag;
                    break;
                }
                j = k + 1;
            }
            out->kind = bad ? PGW_TOK_BAD : PGW_TOK_STRING;
        } else if (i + 1 < n && isdigit((unsigned char)s[i + 1])) {
            j = i + 1;
            while (j < n && isdigit((unsigned char)s[j]))
                j++;
            out->kind = PGW_TOK_PARAM;
        } else {
            j = i + 1;
            out->kind = PGW_TOK_OP;
        }
    } else if (isdigit(c) || (c == '.' && i + 1 < n && isdigit((unsigned char)s[i + 1]))) {
        while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_' ||
                         (s[j] == '.' && !(j + 1 < n && s[j + 1] == '.'))))
            j++;
        /* signed exponent: 1e+5 */
        if (j < n && (s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E') &&
            j + 1 < n && isdigit((unsigned char)s[j + 1])) {
            j++;
            while (j < n && isdigit((unsigned char)s[j]))
                j++;
        }
        out->kind = PGW_TOK_NUMBER;
    } else if (strchr("()[],;:.", c)) {
        j = i + 1;
        out->kind = PGW_TOK_PUNCT;
    } else if (op_char((char)c)) {
        /* An operator ends where a comment starts. */
        while (j < n && op_char(s[j]) &&
               !(j > i && ((s[j] == '-' && j + 1 < n && s[j + 1] == '-') ||
                           (s[j] == '/' && j + 1 < n && s[j + 1] == '*'))))
            j++;
        out->kind = PGW_TOK_OP;
    } else {
        j = i + 1; /* a stray byte: an operator of one character, DuckDB decides */
        out->kind = PGW_TOK_OP;
    }
    if (out->kind == PGW_TOK_BAD) {
        out->len = n - i;
        return n;
    }
    out->len = j - i;
    return j;
}

bool pgw_tok_word(const char *s, const struct pgw_token *t, const char *kw)
{
    size_t k = strlen(kw);
    return t->kind == PGW_TOK_IDENT && t->len == k && strncasecmp(s + t->pos, kw, k) == 0;
}

static bool tok_punct(const char *s, const struct pgw_token *t, char c)
{
    return t->kind == PGW_TOK_PUNCT && s[t->pos] == c;
}

size_t pgw_split(const char *s, size_t n, struct pgw_span *out, size_t max)
{
    size_t count = 0, pos = 0;
    size_t start = SIZE_MAX, end = 0; /* first and last token of the current statement */
    for (;;) {
        struct pgw_token t;
        pos = pgw_lex(s, n, pos, &t);
        bool semi = tok_punct(s, &t, ';');
        if (t.kind == PGW_TOK_END || semi) {
            if (start != SIZE_MAX) {
                if (count < max)
                    out[count] = (struct pgw_span){start, end - start};
                count++;
            }
            start = SIZE_MAX;
            if (t.kind == PGW_TOK_END)
                return count;
            continue;
        }
        if (start == SIZE_MAX)
            start = t.pos;
        end = t.pos + t.len;
        if (t.kind == PGW_TOK_BAD) {
            if (count < max)
                out[count] = (struct pgw_span){start, end - start};
            return count + 1;
        }
    }
}

/* ------------------------------------------------------ session statements */

struct toks {
    struct pgw_token t[48];
    size_t n;       /* tokens read (at most the array) */
    bool more;      /* there were more */
};

static void read_tokens(const char *s, size_t len, struct toks *k)
{
    size_t pos = 0;
    k->n = 0;
    k->more = false;
    for (;;) {
        struct pgw_token t;
        pos = pgw_lex(s, len, pos, &t);
        if (t.kind == PGW_TOK_END)
            return;
        if (k->n == sizeof k->t / sizeof k->t[0]) {
            k->more = true;
            return;
        }
        k->t[k->n++] = t;
    }
}

/* Copies a token's text as a name: unquoted words folded to lower case,
 * quoted identifiers unquoted; truncated to PGW_NAME_MAX - 1 bytes. */
static void tok_name(const char *s, const struct pgw_token *t, char *out, size_t cap)
{
    size_t o = 0;
    if (t->kind == PGW_TOK_QIDENT) {
        for (size_t i = t->pos + 1; i + 1 < t->pos + t->len && o + 1 < cap; i++) {
            if (s[i] == '"' && s[i + 1] == '"')
                i++;
            out[o++] = s[i];
        }
    } else {
        for (size_t i = t->pos; i < t->pos + t->len && o + 1 < cap; i++)
            out[o++] = (char)tolower((unsigned char)s[i]);
    }
    out[o] = '\0';
}

/* A SET value item: strings unquoted ('' and E'' escapes resolved), other
 * tokens as written (numbers, words lower case kept as written). False when
 * the token cannot be a value. */
static bool value_item(const char *s, const struct pgw_token *t, struct strbuf *out)
{
    const char *p = s + t->pos;
    if (t->kind == PGW_TOK_STRING) {
        bool esc = p[0] == 'e' || p[0] == 'E';
        if (p[0] != '\'' && !esc)
            return false; /* B'', X'', U&'', $$ values: not for settings */
        size_t i = esc ? 2 : 1, end = t->len - 1;
        for (; i < end; i++) {
            char c = p[i];
            if (c == '\'' && i + 1 < end && p[i + 1] == '\'')
                i++;
            else if (esc && c == '\\' && i + 1 < end) {
                char e = p[++i];
                c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
            }
            sb_addc(out, c);
        }
        return true;
    }
    if (t->kind == PGW_TOK_IDENT || t->kind == PGW_TOK_NUMBER || t->kind == PGW_TOK_QIDENT) {
        if (t->kind == PGW_TOK_QIDENT) {
            char name[PGW_SET_VALUE_MAX];
            tok_name(s, t, name, sizeof name);
            sb_adds(out, name);
        } else {
            sb_add(out, p, t->len);
        }
        return true;
    }
    return false;
}

static void set_kind(struct pgw_stmt *st, enum pgw_stmt_kind kind)
{
    st->kind = kind;
}

/* Optional noise words after BEGIN/COMMIT/ROLLBACK/ABORT/END. */
static size_t skip_work(const char *s, const struct toks *k, size_t i)
{
    if (i < k->n && (pgw_tok_word(s, &k->t[i], "work") ||
                     pgw_tok_word(s, &k->t[i], "transaction")))
        i++;
    return i;
}

/* BEGIN/START TRANSACTION modes: ISOLATION LEVEL x [y], READ ONLY/WRITE,
 * [NOT] DEFERRABLE, separated by commas. True when all tokens from i are. */
static bool tx_modes(const char *s, const struct toks *k, size_t i)
{
    while (i < k->n) {
        const struct pgw_token *t = &k->t[i];
        if (t->kind != PGW_TOK_IDENT && !tok_punct(s, t, ','))
            return false;
        i++;
    }
    return !k->more;
}

static enum vt_err read_copy(const char *s, size_t len, const struct toks *k,
                             struct pgw_stmt *st, struct vt_error *err);

/* The text of s from pos to its end, trimmed (malloc'd; NULL when empty or
 * out of memory). */
static char *rest_from(const char *s, size_t len, size_t pos)
{
    while (pos < len && isspace((unsigned char)s[pos]))
        pos++;
    size_t end = len;
    while (end > pos && isspace((unsigned char)s[end - 1]))
        end--;
    return end > pos ? strndup(s + pos, end - pos) : NULL;
}

/* EXPLAIN [ANALYZE] [VERBOSE] query | EXPLAIN (option [value], ...) query */
static enum vt_err read_explain(const char *s, size_t len, struct pgw_stmt *st,
                                struct vt_error *err)
{
    struct pgw_token t;
    size_t pos = pgw_lex(s, len, 0, &t); /* EXPLAIN */
    size_t before = pos;
    pos = pgw_lex(s, len, pos, &t);
    if (tok_punct(s, &t, '(')) {
        bool want_value = false;
        const char *opt = NULL;
        for (;;) {
            pos = pgw_lex(s, len, pos, &t);
            if (t.kind == PGW_TOK_END || t.kind == PGW_TOK_BAD)
                return VT_ERR_OK;
            if (tok_punct(s, &t, ')'))
                break;
            if (tok_punct(s, &t, ',')) {
                want_value = false;
                continue;
            }
            if (!want_value) {
                opt = s + t.pos;
                if (pgw_tok_word(s, &t, "analyze") || pgw_tok_word(s, &t, "analyse"))
                    st->analyze = true;
                want_value = true;
            } else if (opt && (!strncasecmp(opt, "analy", 5)) &&
                       (pgw_tok_word(s, &t, "false") || pgw_tok_word(s, &t, "off") ||
                        (t.kind == PGW_TOK_NUMBER && s[t.pos] == '0'))) {
                st->analyze = false;
            }
        }
        before = pos;
    } else {
        while (pgw_tok_word(s, &t, "analyze") || pgw_tok_word(s, &t, "analyse") ||
               pgw_tok_word(s, &t, "verbose")) {
            if (!pgw_tok_word(s, &t, "verbose"))
                st->analyze = true;
            before = pos;
            pos = pgw_lex(s, len, pos, &t);
        }
    }
    if (!(st->query = rest_from(s, len, before)))
        return vt_error_set(err, VT_ERR_SQL_SYNTAX, "EXPLAIN needs a statement");
    st->kind = PGW_STMT_EXPLAIN;
    return VT_ERR_OK;
}

/* DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE] [[NO] SCROLL] CURSOR
 * [{WITH | WITHOUT} HOLD] FOR query */
static enum vt_err read_declare(const char *s, size_t len, struct pgw_stmt *st,
                                struct vt_error *err)
{
    struct pgw_token t;
    size_t pos = pgw_lex(s, len, 0, &t); /* DECLARE */
    pos = pgw_lex(s, len, pos, &t);
    if (t.kind != PGW_TOK_IDENT && t.kind != PGW_TOK_QIDENT)
        return VT_ERR_OK;
    tok_name(s, &t, st->name, sizeof st->name);
    bool no = false, cursor = false;
    for (;;) {
        pos = pgw_lex(s, len, pos, &t);
        if (pgw_tok_word(s, &t, "binary")) {
            st->binary = true;
        } else if (pgw_tok_word(s, &t, "asensitive") || pgw_tok_word(s, &t, "insensitive")) {
        } else if (pgw_tok_word(s, &t, "no")) {
            no = true;
        } else if (pgw_tok_word(s, &t, "scroll")) {
            if (!no)
                return vt_error_set(err, VT_ERR_NOT_IMPLEMENTED,
                                    "scrollable cursors are not supported (a cursor reads "
                                    "forward only; declare it NO SCROLL)");
            no = false;
        } else if (pgw_tok_word(s, &t, "cursor") && !cursor) {
            cursor = true;
        } else if (cursor && (pgw_tok_word(s, &t, "with") || pgw_tok_word(s, &t, "without"))) {
            bool with = pgw_tok_word(s, &t, "with");
            pos = pgw_lex(s, len, pos, &t);
            if (!pgw_tok_word(s, &t, "hold"))
                return VT_ERR_OK;
            st->hold = with;
        } else if (cursor && pgw_tok_word(s, &t, "for")) {
            break;
        } else {
            return VT_ERR_OK; /* not a cursor declaration: the gate refuses it */
        }
    }
    if (!(st->query = rest_from(s, len, pos)))
        return vt_error_set(err, VT_ERR_SQL_SYNTAX, "DECLARE CURSOR needs a query");
    st->kind = PGW_STMT_DECLARE;
    return VT_ERR_OK;
}

/* FETCH/MOVE [direction] [FROM | IN] cursor. Forward directions only: NEXT,
 * n, ALL, FORWARD [n | ALL], ABSOLUTE/RELATIVE are refused like backward ones. */
static enum vt_err read_fetch(const char *s, const struct toks *k, struct pgw_stmt *st,
                              struct vt_error *err)
{
    const struct pgw_token *t = k->t;
    size_t n = k->n, i = 1;
    st->count = 1;
    if (i < n && (pgw_tok_word(s, &t[i], "next") || pgw_tok_word(s, &t[i], "forward"))) {
        bool forward = pgw_tok_word(s, &t[i], "forward");
        i++;
        if (forward && i < n && pgw_tok_word(s, &t[i], "all")) {
            st->count = PGW_FETCH_ALL;
            i++;
        } else if (forward && i < n && t[i].kind == PGW_TOK_NUMBER) {
            st->count = strtoll(s + t[i].pos, NULL, 10);
            i++;
        }
    } else if (i < n && pgw_tok_word(s, &t[i], "all")) {
        st->count = PGW_FETCH_ALL;
        i++;
    } else if (i < n && t[i].kind == PGW_TOK_NUMBER) {
        st->count = strtoll(s + t[i].pos, NULL, 10);
        i++;
    } else if (i < n && t[i].kind == PGW_TOK_OP && t[i].len == 1 && s[t[i].pos] == '-') {
        st->backward = true;
    } else if (i < n && (pgw_tok_word(s, &t[i], "prior") || pgw_tok_word(s, &t[i], "first") ||
                         pgw_tok_word(s, &t[i], "last") || pgw_tok_word(s, &t[i], "absolute") ||
                         pgw_tok_word(s, &t[i], "relative") ||
                         pgw_tok_word(s, &t[i], "backward"))) {
        st->backward = true;
    }
    if (st->backward || st->count < 0)
        return vt_error_set(err, VT_ERR_NOT_IMPLEMENTED,
                            "cursor can only scan forward (FETCH NEXT, n, ALL or FORWARD)");
    if (i < n && (pgw_tok_word(s, &t[i], "from") || pgw_tok_word(s, &t[i], "in")))
        i++;
    if (i + 1 != n || k->more || (t[i].kind != PGW_TOK_IDENT && t[i].kind != PGW_TOK_QIDENT))
        return VT_ERR_OK;
    tok_name(s, &t[i], st->name, sizeof st->name);
    st->kind = pgw_tok_word(s, &t[0], "fetch") ? PGW_STMT_FETCH : PGW_STMT_MOVE;
    return VT_ERR_OK;
}

enum vt_err pgw_stmt_read(const char *s, size_t len, struct pgw_stmt *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->copy_delimiter = '\t';
    struct toks k;
    read_tokens(s, len, &k);
    if (k.n == 0) {
        set_kind(out, PGW_STMT_EMPTY);
        return VT_ERR_OK;
    }
    set_kind(out, PGW_STMT_SQL);
    const struct pgw_token *t = k.t;
    if (k.t[0].kind != PGW_TOK_IDENT || k.more)
        return k.more && pgw_tok_word(s, &t[0], "copy") ? read_copy(s, len, &k, out, err)
                                                       : VT_ERR_OK;
    size_t i = 1;
    if (pgw_tok_word(s, &t[0], "declare"))
        return read_declare(s, len, out, err);
    if (pgw_tok_word(s, &t[0], "explain"))
        return read_explain(s, len, out, err);
    if (pgw_tok_word(s, &t[0], "fetch") || pgw_tok_word(s, &t[0], "move"))
        return read_fetch(s, &k, out, err);
    if (pgw_tok_word(s, &t[0], "close")) {
        if (k.n == 2 && pgw_tok_word(s, &t[1], "all")) {
            out->all = true;
            set_kind(out, PGW_STMT_CLOSE);
        } else if (k.n == 2 && (t[1].kind == PGW_TOK_IDENT || t[1].kind == PGW_TOK_QIDENT)) {
            tok_name(s, &t[1], out->name, sizeof out->name);
            set_kind(out, PGW_STMT_CLOSE);
        }
        return VT_ERR_OK;
    }
    if (pgw_tok_word(s, &t[0], "listen")) {
        if (k.n == 2 && (t[1].kind == PGW_TOK_IDENT || t[1].kind == PGW_TOK_QIDENT)) {
            tok_name(s, &t[1], out->name, sizeof out->name);
            set_kind(out, PGW_STMT_LISTEN);
        }
        return VT_ERR_OK;
    }
    if (pgw_tok_word(s, &t[0], "begin")) {
        i = skip_work(s, &k, 1);
        if (tx_modes(s, &k, i))
            set_kind(out, PGW_STMT_BEGIN);
    } else if (pgw_tok_word(s, &t[0], "start")) {
        if (k.n > 1 && pgw_tok_word(s, &t[1], "transaction") && tx_modes(s, &k, 2))
            set_kind(out, PGW_STMT_BEGIN);
    } else if (pgw_tok_word(s, &t[0], "commit") || pgw_tok_word(s, &t[0], "end")) {
        i = skip_work(s, &k, 1);
        /* COMMIT AND [NO] CHAIN: the chain is a no-op too */
        if (i == k.n || (pgw_tok_word(s, &t[i], "and") && tx_modes(s, &k, i)))
            set_kind(out, PGW_STMT_COMMIT);
    } else if (pgw_tok_word(s, &t[0], "rollback") || pgw_tok_word(s, &t[0], "abort")) {
        i = skip_work(s, &k, 1);
        if (i == k.n || (pgw_tok_word(s, &t[i], "and") && tx_modes(s, &k, i))) {
            set_kind(out, PGW_STMT_ROLLBACK);
        } else if (pgw_tok_word(s, &t[0], "rollback") && pgw_tok_word(s, &t[i], "to")) {
            i++;
            if (i < k.n && pgw_tok_word(s, &t[i], "savepoint"))
                i++;
            if (i + 1 == k.n && (t[i].kind == PGW_TOK_IDENT || t[i].kind == PGW_TOK_QIDENT)) {
                tok_name(s, &t[i], out->name, sizeof out->name);
                set_kind(out, PGW_STMT_ROLLBACK_TO);
            }
        }
    } else if (pgw_tok_word(s, &t[0], "savepoint")) {
        if (k.n == 2 && (t[1].kind == PGW_TOK_IDENT || t[1].kind == PGW_TOK_QIDENT)) {
            tok_name(s, &t[1], out->name, sizeof out->name);
            set_kind(out, PGW_STMT_SAVEPOINT);
        }
    } else if (pgw_tok_word(s, &t[0], "release")) {
        if (i < k.n && pgw_tok_word(s, &t[i], "savepoint"))
            i++;
        if (i + 1 == k.n && (t[i].kind == PGW_TOK_IDENT || t[i].kind == PGW_TOK_QIDENT)) {
            tok_name(s, &t[i], out->name, sizeof out->name);
            set_kind(out, PGW_STMT_RELEASE);
        }
    } else if (pgw_tok_word(s, &t[0], "discard")) {
        if (k.n == 2 && pgw_tok_word(s, &t[1], "all")) {
            out->all = true;
            set_kind(out, PGW_STMT_DISCARD_ALL);
        }
    } else if (pgw_tok_word(s, &t[0], "deallocate")) {
        if (i < k.n && pgw_tok_word(s, &t[i], "prepare"))
            i++;
        if (i + 1 == k.n && pgw_tok_word(s, &t[i], "all")) {
            out->all = true;
            set_kind(out, PGW_STMT_DEALLOCATE);
        } else if (i + 1 == k.n && (t[i].kind == PGW_TOK_IDENT || t[i].kind == PGW_TOK_QIDENT)) {
            /* Statement names are case-sensitive in the protocol; SQL folds
             * unquoted ones like any identifier. */
            tok_name(s, &t[i], out->name, sizeof out->name);
            set_kind(out, PGW_STMT_DEALLOCATE);
        }
    } else if (pgw_tok_word(s, &t[0], "unlisten")) {
        if (k.n == 2 && t[1].kind == PGW_TOK_OP && t[1].len == 1 && s[t[1].pos] == '*') {
            out->all = true;
            set_kind(out, PGW_STMT_UNLISTEN);
        } else if (k.n == 2 && (t[1].kind == PGW_TOK_IDENT || t[1].kind == PGW_TOK_QIDENT)) {
            tok_name(s, &t[1], out->name, sizeof out->name);
            set_kind(out, PGW_STMT_UNLISTEN);
        }
    } else if (pgw_tok_word(s, &t[0], "reset")) {
        if (k.n == 2 && pgw_tok_word(s, &t[1], "all")) {
            out->all = true;
            set_kind(out, PGW_STMT_RESET);
        } else if (k.n == 2 && (t[1].kind == PGW_TOK_IDENT || t[1].kind == PGW_TOK_QIDENT)) {
            tok_name(s, &t[1], out->name, sizeof out->name);
            set_kind(out, PGW_STMT_RESET);
        } else if (k.n == 3 && pgw_tok_word(s, &t[1], "time") &&
                   pgw_tok_word(s, &t[2], "zone")) {
            snprintf(out->name, sizeof out->name, "timezone");
            set_kind(out, PGW_STMT_RESET);
        }
    } else if (pgw_tok_word(s, &t[0], "show")) {
        if (k.n == 2 && pgw_tok_word(s, &t[1], "all")) {
            out->all = true;
            set_kind(out, PGW_STMT_SHOW);
        } else if (k.n == 2 && (t[1].kind == PGW_TOK_IDENT || t[1].kind == PGW_TOK_QIDENT)) {
            tok_name(s, &t[1], out->name, sizeof out->name);
            set_kind(out, PGW_STMT_SHOW);
        } else if (k.n == 3 && pgw_tok_word(s, &t[1], "time") &&
                   pgw_tok_word(s, &t[2], "zone")) {
            snprintf(out->name, sizeof out->name, "timezone");
            set_kind(out, PGW_STMT_SHOW);
        } else if (k.n == 4 && pgw_tok_word(s, &t[1], "transaction") &&
                   pgw_tok_word(s, &t[2], "isolation") && pgw_tok_word(s, &t[3], "level")) {
            snprintf(out->name, sizeof out->name, "transaction_isolation");
            set_kind(out, PGW_STMT_SHOW);
        }
    } else if (pgw_tok_word(s, &t[0], "set")) {
        if (i < k.n && (pgw_tok_word(s, &t[i], "session") || pgw_tok_word(s, &t[i], "local"))) {
            if (i + 1 < k.n && pgw_tok_word(s, &t[i], "session") &&
                pgw_tok_word(s, &t[i + 1], "characteristics")) {
                if (tx_modes(s, &k, i + 1))
                    set_kind(out, PGW_STMT_SET_TRANSACTION);
                return VT_ERR_OK;
            }
            i++;
        }
        if (i < k.n && pgw_tok_word(s, &t[i], "transaction")) {
            if (tx_modes(s, &k, i))
                set_kind(out, PGW_STMT_SET_TRANSACTION);
            return VT_ERR_OK;
        }
        size_t vstart;
        if (i + 1 < k.n && pgw_tok_word(s, &t[i], "time") && pgw_tok_word(s, &t[i + 1], "zone")) {
            snprintf(out->name, sizeof out->name, "timezone");
            vstart = i + 2;
        } else if (i < k.n && pgw_tok_word(s, &t[i], "names")) {
            snprintf(out->name, sizeof out->name, "client_encoding");
            vstart = i + 1;
        } else if (i + 1 < k.n && (t[i].kind == PGW_TOK_IDENT || t[i].kind == PGW_TOK_QIDENT) &&
                   (pgw_tok_word(s, &t[i + 1], "to") ||
                    (t[i + 1].kind == PGW_TOK_OP && t[i + 1].len == 1 &&
                     s[t[i + 1].pos] == '='))) {
            tok_name(s, &t[i], out->name, sizeof out->name);
            vstart = i + 2;
        } else {
            return VT_ERR_OK; /* dotted names, SET ROLE, ...: the gate refuses them */
        }
        if (vstart >= k.n)
            return VT_ERR_OK;
        if (vstart + 1 == k.n && pgw_tok_word(s, &t[vstart], "default")) {
            out->is_default = true;
            set_kind(out, PGW_STMT_SET);
            return VT_ERR_OK;
        }
        /* value [, value ...]: each a word, number, string or signed number */
        struct strbuf v;
        sb_init(&v, PGW_SET_VALUE_MAX - 1);
        bool ok = true;
        size_t j = vstart;
        while (ok && j < k.n) {
            if (t[j].kind == PGW_TOK_OP && t[j].len == 1 &&
                (s[t[j].pos] == '-' || s[t[j].pos] == '+') && j + 1 < k.n &&
                t[j + 1].kind == PGW_TOK_NUMBER) {
                sb_addc(&v, s[t[j].pos]);
                j++;
            }
            ok = value_item(s, &t[j], &v);
            j++;
            if (ok && j < k.n) {
                ok = tok_punct(s, &t[j], ',') && j + 1 < k.n;
                sb_adds(&v, ", ");
                j++;
            }
        }
        if (ok && !v.overflow) {
            snprintf(out->value, sizeof out->value, "%s", v.buf ? v.buf : "");
            set_kind(out, PGW_STMT_SET);
        }
        sb_release(&v);
    } else if (pgw_tok_word(s, &t[0], "copy")) {
        return read_copy(s, len, &k, out, err);
    }
    return VT_ERR_OK;
}

void pgw_stmt_release(struct pgw_stmt *st)
{
    free(st->query);
    st->query = NULL;
}

/* COPY options after TO STDOUT: the legacy list (CSV, HEADER, DELIMITER 'x',
 * NULL 'x', BINARY) or WITH (FORMAT x, HEADER [bool], DELIMITER 'x', NULL 'x'). */
static enum vt_err copy_options(const char *s, const struct pgw_token *t, size_t n,
                                struct pgw_stmt *st, struct vt_error *err)
{
    size_t i = 0;
    if (i < n && pgw_tok_word(s, &t[i], "with"))
        i++;
    bool paren = i < n && tok_punct(s, &t[i], '(');
    if (paren)
        i++;
    char str[32];
    bool delimiter_set = false;
    while (i < n) {
        if (paren && tok_punct(s, &t[i], ')')) {
            i++;
            break;
        }
        if (tok_punct(s, &t[i], ',')) {
            i++;
            continue;
        }
        const struct pgw_token *o = &t[i++];
        const struct pgw_token *arg = i < n && !tok_punct(s, &t[i], ',') &&
                                              !tok_punct(s, &t[i], ')') ? &t[i] : NULL;
        if (pgw_tok_word(s, o, "csv")) {
            st->copy_format = PGW_COPY_CSV;
        } else if (pgw_tok_word(s, o, "binary")) {
            st->copy_format = PGW_COPY_BINARY;
        } else if (pgw_tok_word(s, o, "format") && arg) {
            i++;
            tok_name(s, arg, str, sizeof str);
            if (arg->kind == PGW_TOK_STRING)
                snprintf(str, sizeof str, "%.*s", (int)(arg->len > 2 ? arg->len - 2 : 0),
                         s + arg->pos + 1);
            if (!strcasecmp(str, "csv"))
                st->copy_format = PGW_COPY_CSV;
            else if (!strcasecmp(str, "text"))
                st->copy_format = PGW_COPY_TEXT;
            else if (!strcasecmp(str, "binary"))
                st->copy_format = PGW_COPY_BINARY;
            else
                return vt_error_set(err, VT_ERR_NOT_IMPLEMENTED,
                                    "COPY format \"%s\" is not supported; use text, csv or "
                                    "binary", str);
        } else if (pgw_tok_word(s, o, "header")) {
            st->copy_header = true;
            if (paren && arg) {
                i++;
                st->copy_header = !(pgw_tok_word(s, arg, "false") ||
                                    pgw_tok_word(s, arg, "off") ||
                                    (arg->kind == PGW_TOK_NUMBER && s[arg->pos] == '0'));
            }
        } else if ((pgw_tok_word(s, o, "delimiter") || pgw_tok_word(s, o, "null")) && arg) {
            if (!paren && pgw_tok_word(s, arg, "as") && i + 1 < n)
                arg = &t[++i];
            i++;
            if (arg->kind != PGW_TOK_STRING || s[arg->pos] != '\'')
                return vt_error_set(err, VT_ERR_SQL_SYNTAX, "COPY %.*s needs a string",
                                    (int)o->len, s + o->pos);
            size_t body = arg->len - 2;
            if (pgw_tok_word(s, o, "delimiter")) {
                if (body != 1 || s[arg->pos + 1] == '\n' || s[arg->pos + 1] == '\r' ||
                    s[arg->pos + 1] == '\\')
                    return vt_error_set(err, VT_ERR_SQL_SYNTAX,
                                        "COPY delimiter must be a single one-byte character");
                st->copy_delimiter = s[arg->pos + 1];
                delimiter_set = true;
            } else {
                if (body >= sizeof st->copy_null)
                    return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                                        "COPY NULL string longer than %zu bytes",
                                        sizeof st->copy_null - 1);
                memcpy(st->copy_null, s + arg->pos + 1, body);
                st->copy_null[body] = '\0';
            }
        } else {
            return vt_error_set(err, VT_ERR_NOT_IMPLEMENTED,
                                "COPY option \"%.*s\" is not supported (supported: FORMAT "
                                "text, csv or binary, HEADER, DELIMITER, NULL)",
                                (int)o->len, s + o->pos);
        }
    }
    if (i != n)
        return vt_error_set(err, VT_ERR_SQL_SYNTAX, "syntax error in COPY options");
    if (st->copy_format == PGW_COPY_CSV && !delimiter_set)
        st->copy_delimiter = ',';
    if (st->copy_format == PGW_COPY_BINARY && (delimiter_set || st->copy_header ||
                                               st->copy_null[0]))
        return vt_error_set(err, VT_ERR_SQL_SYNTAX,
                            "cannot specify DELIMITER, NULL or HEADER in BINARY mode");
    return VT_ERR_OK;
}

/* COPY (query) TO STDOUT [options] | COPY table [(cols)] TO STDOUT [options].
 * Anything else (FROM, a file, a program) is left to the gate (25006). */
static enum vt_err read_copy(const char *s, size_t len, const struct toks *k,
                             struct pgw_stmt *st, struct vt_error *err)
{
    /* The query form may be longer than the token window: find the closing
     * parenthesis by lexing the whole text. */
    size_t pos = 0;
    struct pgw_token t;
    pos = pgw_lex(s, len, pos, &t); /* COPY */
    pos = pgw_lex(s, len, pos, &t);
    struct strbuf q;
    sb_init(&q, 0);
    size_t after; /* position after the source */
    if (tok_punct(s, &t, '(')) {
        size_t qstart = pos;
        int depth = 1;
        size_t qend = pos;
        while (depth > 0) {
            qend = pos;
            pos = pgw_lex(s, len, pos, &t);
            if (t.kind == PGW_TOK_END || t.kind == PGW_TOK_BAD) {
                sb_release(&q);
                return VT_ERR_OK;
            }
            if (tok_punct(s, &t, '('))
                depth++;
            else if (tok_punct(s, &t, ')'))
                depth--;
            qend = depth == 0 ? t.pos : qend;
        }
        sb_add(&q, s + qstart, qend - qstart);
        after = pos;
    } else if (t.kind == PGW_TOK_IDENT || t.kind == PGW_TOK_QIDENT) {
        /* table, schema.table; then an optional column list */
        size_t tstart = t.pos, tend = t.pos + t.len;
        struct pgw_token d;
        size_t p2 = pgw_lex(s, len, pos, &d);
        if (tok_punct(s, &d, '.')) {
            p2 = pgw_lex(s, len, p2, &d);
            if (d.kind != PGW_TOK_IDENT && d.kind != PGW_TOK_QIDENT) {
                sb_release(&q);
                return VT_ERR_OK;
            }
            tend = d.pos + d.len;
            pos = p2;
            p2 = pgw_lex(s, len, pos, &d);
        }
        sb_adds(&q, "SELECT ");
        if (tok_punct(s, &d, '(')) {
            pos = p2;
            bool first = true;
            for (;;) {
                pos = pgw_lex(s, len, pos, &d);
                if (tok_punct(s, &d, ')'))
                    break;
                if (tok_punct(s, &d, ',') && !first) {
                    sb_adds(&q, ", ");
                    continue;
                }
                if (d.kind != PGW_TOK_IDENT && d.kind != PGW_TOK_QIDENT) {
                    sb_release(&q);
                    return VT_ERR_OK;
                }
                sb_add(&q, s + d.pos, d.len);
                first = false;
            }
            if (first) {
                sb_release(&q);
                return VT_ERR_OK;
            }
        } else {
            sb_adds(&q, "*");
        }
        sb_adds(&q, " FROM ");
        sb_add(&q, s + tstart, tend - tstart);
        after = pos;
    } else {
        sb_release(&q);
        return VT_ERR_OK;
    }
    /* TO STDOUT */
    struct pgw_token to, dest;
    size_t p = pgw_lex(s, len, after, &to);
    p = pgw_lex(s, len, p, &dest);
    if (!pgw_tok_word(s, &to, "to") || !pgw_tok_word(s, &dest, "stdout") || q.overflow) {
        sb_release(&q);
        return VT_ERR_OK; /* COPY ... FROM, TO 'file', TO PROGRAM: the gate refuses */
    }
    struct toks opts = {.n = 0};
    for (;;) {
        struct pgw_token o;
        p = pgw_lex(s, len, p, &o);
        if (o.kind == PGW_TOK_END)
            break;
        if (opts.n == sizeof opts.t / sizeof opts.t[0] || o.kind == PGW_TOK_BAD) {
            sb_release(&q);
            return vt_error_set(err, VT_ERR_SQL_SYNTAX, "syntax error in COPY options");
        }
        opts.t[opts.n++] = o;
    }
    enum vt_err rc = copy_options(s, opts.t, opts.n, st, err);
    if (rc != VT_ERR_OK) {
        sb_release(&q);
        return rc;
    }
    (void)k;
    st->query = sb_detach(&q, NULL);
    if (!st->query)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    st->kind = PGW_STMT_COPY_OUT;
    return VT_ERR_OK;
}

/* ------------------------------------------------------------ normalizing */

/* The stand-in for jsonb operator op (n bytes), or NULL. */
static const char *json_operator(const char *op, size_t n)
{
    static const char *const map[][2] = {
        {"->", PGW_OP_GET},  {"->>", PGW_OP_GET_TEXT}, {"#>", PGW_OP_PATH},
        {"#>>", PGW_OP_PATH_TEXT}, {"?", PGW_OP_EXISTS},
        {"?|", PGW_OP_EXISTS_ANY}, {"?&", PGW_OP_EXISTS_ALL},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i][0]) == n && !memcmp(op, map[i][0], n))
            return map[i][1];
    return NULL;
}

/* Whether the token at pos is what PostgreSQL's -> takes: a key or an index
 * (a string, a number, a negative number, a parameter). */
static bool json_key_follows(const char *s, size_t n, size_t pos)
{
    struct pgw_token k;
    size_t p = pgw_lex(s, n, pos, &k);
    if (k.kind == PGW_TOK_STRING || k.kind == PGW_TOK_NUMBER || k.kind == PGW_TOK_PARAM)
        return true;
    if (k.kind != PGW_TOK_OP || k.len != 1 || s[k.pos] != '-')
        return false;
    pgw_lex(s, n, p, &k);
    return k.kind == PGW_TOK_NUMBER;
}

char *pgw_normalize(const char *s, size_t n)
{
    struct strbuf out;
    sb_init(&out, 0);
    size_t pos = 0, copied = 0; /* s[copied..) not yet in out */
    bool changed = false;
    struct pgw_token t[4];
    for (;;) {
        size_t next = pgw_lex(s, n, pos, &t[0]);
        if (t[0].kind == PGW_TOK_END || t[0].kind == PGW_TOK_BAD)
            break;
        /* OPERATOR ( [pg_catalog .] op ) -> op */
        if (pgw_tok_word(s, &t[0], "operator")) {
            size_t p = pgw_lex(s, n, next, &t[1]);
            if (tok_punct(s, &t[1], '(')) {
                p = pgw_lex(s, n, p, &t[2]);
                if (pgw_tok_word(s, &t[2], "pg_catalog")) {
                    struct pgw_token dot;
                    p = pgw_lex(s, n, p, &dot);
                    if (!tok_punct(s, &dot, '.'))
                        goto plain;
                    p = pgw_lex(s, n, p, &t[2]);
                }
                size_t op_end = p;
                p = pgw_lex(s, n, p, &t[3]);
                if (t[2].kind == PGW_TOK_OP && tok_punct(s, &t[3], ')')) {
                    sb_add(&out, s + copied, t[0].pos - copied);
                    sb_addc(&out, ' ');
                    const char *jop = json_operator(s + t[2].pos, op_end - t[2].pos);
                    if (jop)
                        sb_adds(&out, jop);
                    else
                        sb_add(&out, s + t[2].pos, op_end - t[2].pos);
                    sb_addc(&out, ' ');
                    copied = pos = p;
                    changed = true;
                    continue;
                }
            }
        }
        /* PostgreSQL's jsonb operators DuckDB's parser cannot read (`#` is
         * not an operator character there, `?` is a parameter) or reads
         * otherwise (-> and ->> bind looser, and take '$..' and '/..' as
         * paths, not keys; -> only before a key or an index, else it is
         * DuckDB's lambda arrow) -> operators
         * of the same precedence class it reads and nobody else defines;
         * the dialect maps them (catalog.c) */
        const char *jop = t[0].kind == PGW_TOK_OP ? json_operator(s + t[0].pos, t[0].len) : NULL;
        if (jop && !strcmp(jop, PGW_OP_GET) && !json_key_follows(s, n, next))
            jop = NULL; /* `x -> x + 1`: DuckDB's lambda, which clients send too */
        if (jop) {
            sb_add(&out, s + copied, t[0].pos - copied);
            sb_addc(&out, ' ');
            sb_adds(&out, jop);
            sb_addc(&out, ' ');
            copied = pos = next;
            changed = true;
            continue;
        }
        /* pg_catalog . name -> name */
        if (pgw_tok_word(s, &t[0], "pg_catalog")) {
            size_t p = pgw_lex(s, n, next, &t[1]);
            if (tok_punct(s, &t[1], '.')) {
                sb_add(&out, s + copied, t[0].pos - copied);
                copied = pos = p;
                changed = true;
                continue;
            }
        }
        /* COLLATE "default" | COLLATE default (after the step above) */
        if (pgw_tok_word(s, &t[0], "collate")) {
            size_t p = pgw_lex(s, n, next, &t[1]);
            if (pgw_tok_word(s, &t[1], "pg_catalog")) {
                struct pgw_token dot;
                p = pgw_lex(s, n, p, &dot);
                if (tok_punct(s, &dot, '.'))
                    p = pgw_lex(s, n, p, &t[1]);
            }
            if (pgw_tok_word(s, &t[1], "default") ||
                (t[1].kind == PGW_TOK_QIDENT && t[1].len == 9 &&
                 !memcmp(s + t[1].pos, "\"default\"", 9))) {
                sb_add(&out, s + copied, t[0].pos - copied);
                sb_addc(&out, ' ');
                copied = pos = p;
                changed = true;
                continue;
            }
        }
    plain:
        pos = next;
    }
    if (!changed) {
        sb_release(&out);
        return NULL;
    }
    sb_add(&out, s + copied, n - copied);
    if (out.overflow) {
        sb_release(&out);
        return NULL;
    }
    return sb_detach(&out, NULL);
}

/* ------------------------------------------------ date and time templates */

bool pgw_datetime_format(const char *pg, size_t n, char *out, size_t cap)
{
    /* Longest patterns first: HH24 before HH, Month before Mon before MM. */
    static const struct {
        const char *pat, *conv;
    } map[] = {
        {"HH24", "%H"}, {"HH12", "%I"}, {"HH", "%I"},   {"MI", "%M"},   {"SS", "%S"},
        {"MS", "%g"},   {"US", "%f"},   {"AM", "%p"},   {"PM", "%p"},   {"am", "%p"},
        {"pm", "%p"},   {"A.M.", "%p"}, {"P.M.", "%p"}, {"YYYY", "%Y"}, {"YY", "%y"},
        {"MONTH", "%B"}, {"Month", "%B"}, {"month", "%B"}, {"MON", "%b"}, {"Mon", "%b"},
        {"mon", "%b"},  {"MM", "%m"},   {"DAY", "%A"},  {"Day", "%A"},  {"day", "%A"},
        {"DY", "%a"},   {"Dy", "%a"},   {"dy", "%a"},   {"DDD", "%j"},  {"DD", "%d"},
        {"IW", "%V"},   {"WW", "%U"},   {"TZ", "%Z"},   {"tz", "%Z"},   {"OF", "%z"},
    };
    size_t o = 0;
    bool fm = false;
    for (size_t i = 0; i < n;) {
        if (n - i >= 2 && (!memcmp(pg + i, "FM", 2) || !memcmp(pg + i, "fm", 2))) { /* fill */
            fm = true;
            i += 2;
            continue;
        }
        const char *conv = NULL;
        size_t plen = 0;
        for (size_t k = 0; k < sizeof map / sizeof map[0]; k++) {
            size_t l = strlen(map[k].pat);
            if (l <= n - i && !memcmp(pg + i, map[k].pat, l)) {
                conv = map[k].conv;
                plen = l;
                break;
            }
        }
        if (conv) {
            if (o + 4 >= cap)
                return false;
            out[o++] = '%';
            if (fm && strchr("dmHIMSj", conv[1]))
                out[o++] = '-';
            out[o++] = conv[1];
            fm = false;
            i += plen;
            continue;
        }
        char c = pg[i];
        if (c == '"') { /* a quoted literal */
            for (i++; i < n && pg[i] != '"'; i++) {
                if (pg[i] == '\\' && i + 1 < n)
                    i++;
                if (o + 3 >= cap)
                    return false;
                if (pg[i] == '%')
                    out[o++] = '%';
                out[o++] = pg[i];
            }
            i++;
            continue;
        }
        if (isalpha((unsigned char)c)) /* a pattern we do not know (Q, J, Y,YYY ...) */
            return false;
        if (o + 3 >= cap)
            return false;
        if (c == '%')
            out[o++] = '%';
        out[o++] = c;
        i++;
    }
    out[o] = '\0';
    return true;
}
