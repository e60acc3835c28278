/*
 * A TOML 1.0.0 parser (see toml.h), written from the specification at
 * toml.io/en/v1.0.0 and checked against the toml-test corpus.
 *
 * One pass over the whole document, recursive descent for values. The tree is
 * built in place: every table remembers how it came to exist (a [header], a
 * header path, dotted keys, an inline table) because TOML's rules about which
 * tables may be reopened or extended depend on exactly that:
 *   - a table may be defined by a [header] once; a table created only as a
 *     header path ("implicit") may be defined later;
 *   - dotted keys may only extend tables that dotted keys created, within
 *     the section that created them, never a [header]-defined table;
 *   - a [header] may not redefine a table created by dotted keys, but may
 *     define sub-tables under it;
 *   - inline tables and static arrays are frozen once written;
 *   - [[name]] appends only to arrays of tables created by [[name]].
 *
 * Every error reports the line and column (in characters) where the problem
 * was found. Nesting is bounded (TOML_MAX_DEPTH) so neither parsing nor freeing
 * recurses without bound on hostile input.
 */
#include "config/toml.h"
#include "util/text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

/* How a table or array came to exist (toml_value.flags_). */
enum {
    TF_DEFINED = 1, /* [header] or [[header]] element, or the root */
    TF_DOTTED = 2,  /* created by a dotted key */
    TF_INLINE = 4,  /* inline table { ... }: frozen */
    TF_AOT = 8,     /* array created by [[header]] */
};

#define HASH_MIN_ITEMS 16 /* tables at least this long get a hash index */

struct keyseg {
    char *ptr; /* owned, NUL-terminated */
    size_t len;
    size_t pos;      /* offset in the source */
    int line, col;   /* located once, while scanning forward */
    bool moved;      /* ptr now belongs to a table (still readable for messages) */
};

struct keypath {
    struct keyseg *segs;
    size_t len, cap;
};

struct parser {
    const char *src;
    size_t len;
    size_t pos;
    char *errbuf;
    size_t errlen;
    bool failed;
    struct toml_value *root;
    struct toml_value *current; /* table receiving key/values */
    /* locate() memo: line/column of memo_pos, advanced incrementally. */
    size_t text_start; /* 3 after a byte order mark, which is not a column */
    size_t memo_pos;
    int memo_line, memo_col;
};

/* ---------------------------------------------------------------- errors */

static void locate(struct parser *p, size_t pos, int *line, int *col)
{
    if (pos > p->len)
        pos = p->len;
    if (pos < p->text_start)
        pos = p->text_start;
    if (pos < p->memo_pos) {
        p->memo_pos = p->text_start;
        p->memo_line = 1;
        p->memo_col = 1;
    }
    int l = p->memo_line, c = p->memo_col;
    for (size_t i = p->memo_pos; i < pos; i++) {
        unsigned char ch = (unsigned char)p->src[i];
        if (ch == '\n') {
            l++;
            c = 1;
        } else if ((ch & 0xC0) != 0x80) {
            c++; /* count characters, not UTF-8 continuation bytes */
        }
    }
    p->memo_pos = pos;
    p->memo_line = l;
    p->memo_col = c;
    *line = l;
    *col = c;
}

__attribute__((format(printf, 3, 4))) static bool fail(struct parser *p, size_t pos,
                                                        const char *fmt, ...)
{
    if (p->failed)
        return false;
    p->failed = true;
    if (!p->errbuf || p->errlen == 0)
        return false;
    int line, col;
    locate(p, pos, &line, &col);
    int n = snprintf(p->errbuf, p->errlen, "line %d, column %d: ", line, col);
    if (n >= 0 && (size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->errbuf + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* The dotted path segs[0..n) as text, for messages. */
static const char *show_path(const struct keypath *kp, size_t n, char *out, size_t outlen)
{
    struct strbuf sb;
    sb_init(&sb, outlen > 4 ? outlen - 4 : 1);
    char tmp[128];
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_addc(&sb, '.');
        sb_adds(&sb, text_show(kp->segs[i].ptr, kp->segs[i].len, tmp, sizeof tmp));
    }
    snprintf(out, outlen, "%s%s", sb.buf ? sb.buf : "", sb.overflow ? "..." : "");
    sb_release(&sb);
    return out;
}

static bool fail_oom(struct parser *p)
{
    return fail(p, p->pos, "out of memory");
}

/* ---------------------------------------------------------------- tree */

/* Values are created with a known position. locate() is cheap only when
 * called with increasing offsets, so callers that create a value for an
 * earlier spot (a key, a header) pass the line and column they saved. */
static struct toml_value *new_value_at(struct parser *p, enum toml_type type, size_t pos,
                                       int line, int col, unsigned depth)
{
    if (depth > TOML_MAX_DEPTH) {
        fail(p, pos, "nesting too deep (more than %d levels of tables and arrays)",
             TOML_MAX_DEPTH);
        return NULL;
    }
    struct toml_value *v = calloc(1, sizeof *v);
    if (!v) {
        fail_oom(p);
        return NULL;
    }
    v->type = type;
    v->depth_ = (unsigned short)depth;
    v->line = line;
    v->column = col;
    return v;
}

static struct toml_value *new_value(struct parser *p, enum toml_type type, size_t pos,
                                    unsigned depth)
{
    int line, col;
    locate(p, pos, &line, &col);
    return new_value_at(p, type, pos, line, col, depth);
}

void toml_free(struct toml_value *v)
{
    if (!v)
        return;
    switch (v->type) {
    case TOML_STRING:
        free(v->u.string.ptr);
        break;
    case TOML_ARRAY:
        for (size_t i = 0; i < v->u.array.len; i++)
            toml_free(v->u.array.items[i]);
        free(v->u.array.items);
        break;
    case TOML_TABLE:
        for (size_t i = 0; i < v->u.table.len; i++) {
            free(v->u.table.items[i].key);
            toml_free(v->u.table.items[i].value);
        }
        free(v->u.table.items);
        free(v->u.table.hash_);
        break;
    default:
        break;
    }
    free(v);
}

static uint64_t hash_key(const char *k, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)k[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void hash_put(struct toml_value *t, size_t idx)
{
    size_t mask = t->u.table.hash_cap_ - 1;
    const struct toml_keyval *kv = &t->u.table.items[idx];
    size_t slot = (size_t)hash_key(kv->key, kv->key_len) & mask;
    while (t->u.table.hash_[slot])
        slot = (slot + 1) & mask;
    t->u.table.hash_[slot] = (uint32_t)(idx + 1);
}

/* Keeps the hash index at most half full; rebuilt on growth. On OOM the table
 * simply stays without an index: lookups fall back to a scan. */
static void hash_update(struct toml_value *t)
{
    size_t n = t->u.table.len;
    if (n < HASH_MIN_ITEMS || n >= UINT32_MAX)
        return;
    if (t->u.table.hash_ && n * 2 <= t->u.table.hash_cap_) {
        hash_put(t, n - 1);
        return;
    }
    size_t cap = 64;
    while (cap < n * 4)
        cap *= 2;
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h) {
        free(t->u.table.hash_);
        t->u.table.hash_ = NULL;
        t->u.table.hash_cap_ = 0;
        return;
    }
    free(t->u.table.hash_);
    t->u.table.hash_ = h;
    t->u.table.hash_cap_ = cap;
    for (size_t i = 0; i < n; i++)
        hash_put(t, i);
}

static struct toml_keyval *table_find(const struct toml_value *t, const char *key, size_t len)
{
    if (!t || t->type != TOML_TABLE)
        return NULL;
    if (t->u.table.hash_) {
        size_t mask = t->u.table.hash_cap_ - 1;
        size_t slot = (size_t)hash_key(key, len) & mask;
        uint32_t idx;
        while ((idx = t->u.table.hash_[slot]) != 0) {
            struct toml_keyval *kv = &t->u.table.items[idx - 1];
            if (kv->key_len == len && memcmp(kv->key, key, len) == 0)
                return kv;
            slot = (slot + 1) & mask;
        }
        return NULL;
    }
    for (size_t i = 0; i < t->u.table.len; i++) {
        struct toml_keyval *kv = &t->u.table.items[i];
        if (kv->key_len == len && memcmp(kv->key, key, len) == 0)
            return kv;
    }
    return NULL;
}

/* Appends key -> value to table t, taking ownership of both (the key only on
 * success; the value is freed on failure). */
static bool table_insert(struct parser *p, struct toml_value *t, struct keyseg *seg,
                         struct toml_value *value)
{
    if (t->u.table.len == t->u.table.cap_) {
        size_t cap = t->u.table.cap_ ? t->u.table.cap_ * 2 : 4;
        struct toml_keyval *items = realloc(t->u.table.items, cap * sizeof *items);
        if (!items) {
            toml_free(value);
            return fail_oom(p);
        }
        t->u.table.items = items;
        t->u.table.cap_ = cap;
    }
    struct toml_keyval *kv = &t->u.table.items[t->u.table.len++];
    kv->key = seg->ptr;
    kv->key_len = seg->len;
    kv->value = value;
    kv->line = seg->line;
    kv->column = seg->col;
    seg->moved = true;
    hash_update(t);
    return true;
}

static bool array_append(struct parser *p, struct toml_value *a, struct toml_value *item)
{
    if (a->u.array.len == a->u.array.cap_) {
        size_t cap = a->u.array.cap_ ? a->u.array.cap_ * 2 : 4;
        struct toml_value **items = realloc(a->u.array.items, cap * sizeof *items);
        if (!items) {
            toml_free(item);
            return fail_oom(p);
        }
        a->u.array.items = items;
        a->u.array.cap_ = cap;
    }
    a->u.array.items[a->u.array.len++] = item;
    return true;
}

/* ---------------------------------------------------------------- lexing */

static int peek(const struct parser *p, size_t ahead)
{
    size_t i = p->pos + ahead;
    return i < p->len ? (unsigned char)p->src[i] : -1;
}

static bool at_newline(const struct parser *p)
{
    int c = peek(p, 0);
    return c == '\n' || (c == '\r' && peek(p, 1) == '\n');
}

static void skip_newline(struct parser *p)
{
    p->pos += peek(p, 0) == '\r' ? 2 : 1;
}

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len && (p->src[p->pos] == ' ' || p->src[p->pos] == '\t'))
        p->pos++;
}

static bool is_bare_key_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

/* Describes the character at pos for messages. */
static const char *describe_char(const struct parser *p, size_t pos, char *out, size_t outlen)
{
    if (pos >= p->len)
        return "end of file";
    unsigned char c = (unsigned char)p->src[pos];
    if (c == '\n' || (c == '\r' && pos + 1 < p->len && p->src[pos + 1] == '\n'))
        return "end of line";
    if (c < 0x20 || c == 0x7f)
        snprintf(out, outlen, "control character U+%04X", c);
    else if (c >= 0x80)
        snprintf(out, outlen, "non-ASCII character");
    else
        snprintf(out, outlen, "'%c'", c);
    return out;
}

/* A comment runs to the end of the line; control characters other than tab
 * are not allowed in it. */
static bool skip_comment(struct parser *p)
{
    if (peek(p, 0) != '#')
        return true;
    while (p->pos < p->len) {
        unsigned char c = (unsigned char)p->src[p->pos];
        if (c == '\n' || (c == '\r' && peek(p, 1) == '\n'))
            return true;
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(p, p->pos, "control character U+%04X is not allowed in a comment", c);
        p->pos++;
    }
    return true;
}

/* After a key/value or header: optional whitespace and comment, then a
 * newline or the end of the file. */
static bool expect_eol(struct parser *p, const char *after)
{
    skip_ws(p);
    if (!skip_comment(p))
        return false;
    if (p->pos >= p->len)
        return true;
    if (at_newline(p)) {
        skip_newline(p);
        return true;
    }
    char d[48];
    return fail(p, p->pos, "expected end of line after %s, found %s", after,
                describe_char(p, p->pos, d, sizeof d));
}

/* Whitespace, newlines and comments, as allowed between array elements. */
static bool skip_ws_nl_comments(struct parser *p)
{
    for (;;) {
        skip_ws(p);
        if (peek(p, 0) == '#') {
            if (!skip_comment(p))
                return false;
        } else if (at_newline(p)) {
            skip_newline(p);
        } else {
            return true;
        }
    }
}

/* ---------------------------------------------------------------- strings */

static bool add_utf8(struct strbuf *sb, uint32_t cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return sb_add(sb, b, n) == 0;
}

/* One escape sequence; p->pos is at the backslash. */
static bool parse_escape(struct parser *p, struct strbuf *out, bool multiline)
{
    size_t start = p->pos;
    int c = peek(p, 1);
    char simple = 0;
    switch (c) {
    case 'b': simple = '\b'; break;
    case 't': simple = '\t'; break;
    case 'n': simple = '\n'; break;
    case 'f': simple = '\f'; break;
    case 'r': simple = '\r'; break;
    case '"': simple = '"'; break;
    case '\\': simple = '\\'; break;
    default: break;
    }
    if (simple) {
        p->pos += 2;
        return sb_addc(out, simple) == 0 || fail_oom(p);
    }
    if (c == 'u' || c == 'U') {
        int n = c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int i = 0; i < n; i++) {
            int h = text_hexval(peek(p, 2 + (size_t)i));
            if (h < 0)
                return fail(p, start, "\\%c escape needs %d hexadecimal digits", c, n);
            cp = (cp << 4) | (uint32_t)h;
        }
        if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return fail(p, start, "\\%c%0*X is not a Unicode scalar value", c, n, (unsigned)cp);
        p->pos += 2 + (size_t)n;
        return add_utf8(out, cp) || fail_oom(p);
    }
    if (multiline && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
        /* Line-ending backslash: only whitespace may follow it on its line; it
         * swallows the newline and all whitespace and newlines after it. */
        p->pos++;
        skip_ws(p);
        if (!at_newline(p))
            return fail(p, start, "a backslash followed by spaces must end the line");
        for (;;) {
            skip_ws(p);
            if (at_newline(p))
                skip_newline(p);
            else
                return true;
        }
    }
    if (c < 0)
        return fail(p, start, "unterminated string");
    char d[48];
    return fail(p, start, "invalid escape sequence: backslash followed by %s",
                describe_char(p, p->pos + 1, d, sizeof d));
}

/* Checks one raw character inside a string; newline handling is the caller's. */
static bool string_char_ok(struct parser *p, unsigned char c)
{
    if ((c < 0x20 && c != '\t') || c == 0x7f)
        return fail(p, p->pos, "control character U+%04X must be escaped in a string", c);
    return true;
}

/* "basic", """multi-line basic""", 'literal', '''multi-line literal'''.
 * p->pos is at the opening quote. */
static bool parse_string(struct parser *p, struct strbuf *out, bool allow_multiline)
{
    size_t start = p->pos;
    char q = p->src[p->pos];
    bool literal = q == '\'';
    bool multiline = allow_multiline && peek(p, 1) == q && peek(p, 2) == q;
    if (!multiline) {
        p->pos++;
        for (;;) {
            if (p->pos >= p->len)
                return fail(p, start, "unterminated string");
            unsigned char c = (unsigned char)p->src[p->pos];
            if (c == (unsigned char)q) {
                p->pos++;
                return true;
            }
            if (c == '\n' || c == '\r')
                return fail(p, start, "unterminated string (a newline needs a multi-line string)");
            if (c == '\\' && !literal) {
                if (!parse_escape(p, out, false))
                    return false;
                continue;
            }
            if (!string_char_ok(p, c))
                return false;
            if (sb_addc(out, (char)c) < 0)
                return fail_oom(p);
            p->pos++;
        }
    }
    p->pos += 3;
    /* A newline right after the opening delimiter is trimmed. */
    if (at_newline(p))
        skip_newline(p);
    for (;;) {
        if (p->pos >= p->len)
            return fail(p, start, "unterminated multi-line string");
        unsigned char c = (unsigned char)p->src[p->pos];
        if (c == (unsigned char)q && peek(p, 1) == q && peek(p, 2) == q) {
            /* Up to two quotes may sit right before the closing delimiter. */
            size_t n = 3;
            while (peek(p, n) == q)
                n++;
            if (n > 5)
                return fail(p, p->pos, "too many quotes at the end of a multi-line string");
            if (sb_add(out, p->src + p->pos, n - 3) < 0)
                return fail_oom(p);
            p->pos += n;
            return true;
        }
        if (c == '\n') {
            if (sb_addc(out, '\n') < 0)
                return fail_oom(p);
            p->pos++;
            continue;
        }
        if (c == '\r' && peek(p, 1) == '\n') {
            if (sb_addc(out, '\n') < 0) /* CRLF is normalised to LF */
                return fail_oom(p);
            p->pos += 2;
            continue;
        }
        if (c == '\\' && !literal) {
            if (!parse_escape(p, out, true))
                return false;
            continue;
        }
        if (!string_char_ok(p, c))
            return false;
        if (sb_addc(out, (char)c) < 0)
            return fail_oom(p);
        p->pos++;
    }
}

/* ---------------------------------------------------------------- keys */

static void keypath_release(struct keypath *kp)
{
    for (size_t i = 0; i < kp->len; i++)
        if (!kp->segs[i].moved)
            free(kp->segs[i].ptr);
    free(kp->segs);
    kp->segs = NULL;
    kp->len = kp->cap = 0;
}

/* key = simple-key *( ws "." ws simple-key ), whitespace allowed around dots. */
static bool parse_key(struct parser *p, struct keypath *kp)
{
    for (;;) {
        skip_ws(p);
        if (kp->len >= TOML_MAX_DEPTH)
            return fail(p, p->pos, "key has too many dotted parts (limit %d)", TOML_MAX_DEPTH);
        if (kp->len == kp->cap) {
            size_t cap = kp->cap ? kp->cap * 2 : 4;
            struct keyseg *segs = realloc(kp->segs, cap * sizeof *segs);
            if (!segs)
                return fail_oom(p);
            kp->segs = segs;
            kp->cap = cap;
        }
        struct keyseg *seg = &kp->segs[kp->len];
        seg->pos = p->pos;
        locate(p, p->pos, &seg->line, &seg->col);
        seg->ptr = NULL;
        seg->len = 0;
        seg->moved = false;
        int c = peek(p, 0);
        struct strbuf sb;
        sb_init(&sb, 0);
        if (is_bare_key_char(c)) {
            size_t s = p->pos;
            while (is_bare_key_char(peek(p, 0)))
                p->pos++;
            if (sb_add(&sb, p->src + s, p->pos - s) < 0) {
                sb_release(&sb);
                return fail_oom(p);
            }
        } else if (c == '"' || c == '\'') {
            if (!parse_string(p, &sb, false)) {
                sb_release(&sb);
                return false;
            }
        } else {
            char d[48];
            sb_release(&sb);
            return fail(p, p->pos, "expected a key, found %s", describe_char(p, p->pos, d, sizeof d));
        }
        seg->ptr = sb_detach(&sb, &seg->len); /* an empty key still gets a buffer */
        if (!seg->ptr)
            return fail_oom(p);
        kp->len++;
        skip_ws(p);
        if (peek(p, 0) != '.')
            return true;
        p->pos++;
    }
}

/* ---------------------------------------------------------------- numbers */

static bool is_digit_base(int c, int base)
{
    if (base == 16)
        return text_hexval(c) >= 0;
    return c >= '0' && c < '0' + base;
}

/* Digits of `base` with single underscores between digits, from s[*i]; copies
 * the digits (without underscores) into out. At least one digit is required. */
static bool scan_digits(const char *s, size_t n, size_t *i, int base, struct strbuf *out)
{
    size_t j = *i;
    if (j >= n || !is_digit_base((unsigned char)s[j], base))
        return false;
    while (j < n) {
        int c = (unsigned char)s[j];
        if (is_digit_base(c, base)) {
            sb_addc(out, (char)c);
            j++;
        } else if (c == '_') {
            if (j + 1 >= n || !is_digit_base((unsigned char)s[j + 1], base))
                return false;
            j++;
        } else {
            break;
        }
    }
    *i = j;
    return true;
}

/* Integers (decimal, 0x, 0o, 0b), floats, inf and nan, from the token s[0..n). */
static bool parse_number(struct parser *p, size_t pos, const char *s, size_t n,
                         struct toml_value *v)
{
    size_t i = 0;
    bool neg = false, has_sign = false;
    if (n && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        has_sign = true;
        i = 1;
    }
    if (n - i == 3 && (memcmp(s + i, "inf", 3) == 0 || memcmp(s + i, "nan", 3) == 0)) {
        v->type = TOML_FLOAT;
        if (s[i] == 'i')
            v->u.floating = neg ? -INFINITY : INFINITY;
        else
            v->u.floating = neg ? -NAN : NAN;
        return true;
    }
    struct strbuf digits;
    sb_init(&digits, 0);
    bool ok = false;
    if (n - i >= 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'o' || s[i + 1] == 'b')) {
        int base = s[i + 1] == 'x' ? 16 : s[i + 1] == 'o' ? 8 : 2;
        if (has_sign) {
            fail(p, pos, "a sign is not allowed on hexadecimal, octal or binary integers");
            goto out;
        }
        i += 2;
        if (!scan_digits(s, n, &i, base, &digits) || i != n) {
            fail(p, pos, "invalid %s integer", base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary");
            goto out;
        }
        uint64_t acc = 0;
        for (size_t k = 0; k < digits.len; k++) {
            uint64_t d = (uint64_t)text_hexval((unsigned char)digits.buf[k]);
            if (acc > ((uint64_t)INT64_MAX - d) / (uint64_t)base) {
                fail(p, pos, "integer does not fit in 64 bits");
                goto out;
            }
            acc = acc * (uint64_t)base + d;
        }
        v->type = TOML_INTEGER;
        v->u.integer = (int64_t)acc;
        ok = true;
        goto out;
    }
    if (neg)
        sb_addc(&digits, '-');
    size_t int_start = i;
    if (!scan_digits(s, n, &i, 10, &digits)) {
        fail(p, pos, "invalid number");
        goto out;
    }
    if (s[int_start] == '0' && i - int_start > 1) {
        fail(p, pos, "leading zeros are not allowed in numbers");
        goto out;
    }
    bool is_float = false;
    if (i < n && s[i] == '.') {
        is_float = true;
        i++;
        sb_addc(&digits, '.');
        if (!scan_digits(s, n, &i, 10, &digits)) {
            fail(p, pos, "a decimal point must be followed by digits");
            goto out;
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        is_float = true;
        i++;
        sb_addc(&digits, 'e');
        if (i < n && (s[i] == '+' || s[i] == '-'))
            sb_addc(&digits, s[i++]);
        if (!scan_digits(s, n, &i, 10, &digits)) {
            fail(p, pos, "an exponent must be followed by digits");
            goto out;
        }
    }
    if (i != n) {
        fail(p, pos, "invalid number");
        goto out;
    }
    if (digits.overflow) {
        fail_oom(p);
        goto out;
    }
    errno = 0;
    char *end;
    if (is_float) {
        double d = strtod(digits.buf, &end);
        if (isinf(d)) {
            fail(p, pos, "float is out of range");
            goto out;
        }
        v->type = TOML_FLOAT;
        v->u.floating = d;
    } else {
        long long ll = strtoll(digits.buf, &end, 10);
        if (errno == ERANGE) {
            fail(p, pos, "integer does not fit in 64 bits");
            goto out;
        }
        v->type = TOML_INTEGER;
        v->u.integer = ll;
    }
    ok = true;
out:
    sb_release(&digits);
    return ok;
}

/* ---------------------------------------------------------------- datetimes */

static bool digits_at(const char *s, size_t n, size_t i, size_t count, int *out)
{
    if (i + count > n)
        return false;
    int v = 0;
    for (size_t k = 0; k < count; k++) {
        char c = s[i + k];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

static int days_in_month(int year, int month)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month == 2 && ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0))
        return 29;
    return days[month - 1];
}

/* HH:MM:SS[.frac] at s[*i]. Seconds are required in TOML 1.0. */
static bool parse_time_part(struct parser *p, size_t pos, const char *s, size_t n, size_t *i,
                            struct toml_datetime *dt)
{
    size_t j = *i;
    if (!digits_at(s, n, j, 2, &dt->hour) || j + 2 >= n || s[j + 2] != ':' ||
        !digits_at(s, n, j + 3, 2, &dt->minute) || j + 5 >= n || s[j + 5] != ':' ||
        !digits_at(s, n, j + 6, 2, &dt->second))
        return fail(p, pos, "invalid time: expected HH:MM:SS");
    j += 8;
    if (dt->hour > 23 || dt->minute > 59 || dt->second > 60)
        return fail(p, pos, "invalid time: %02d:%02d:%02d is out of range", dt->hour, dt->minute,
                    dt->second);
    if (j < n && s[j] == '.') {
        j++;
        size_t k = j;
        int ns = 0, nd = 0;
        while (k < n && s[k] >= '0' && s[k] <= '9') {
            if (nd < 9) {
                ns = ns * 10 + (s[k] - '0');
                nd++;
            }
            k++;
        }
        if (k == j)
            return fail(p, pos, "invalid time: a '.' must be followed by digits");
        dt->frac_digits = (int)(k - j);
        for (int z = nd; z < 9; z++)
            ns *= 10;
        dt->nanosecond = ns;
        j = k;
    }
    *i = j;
    return true;
}

/* Offset date-time, local date-time, local date or local time from s[0..n). */
static bool parse_datetime(struct parser *p, size_t pos, const char *s, size_t n,
                           struct toml_value *v)
{
    struct toml_datetime *dt = &v->u.datetime;
    memset(dt, 0, sizeof *dt);
    size_t i = 0;
    if (n >= 3 && s[2] == ':') {
        if (!parse_time_part(p, pos, s, n, &i, dt))
            return false;
        if (i != n)
            return fail(p, pos, "invalid local time");
        v->type = TOML_LOCAL_TIME;
        return true;
    }
    if (!digits_at(s, n, 0, 4, &dt->year) || n < 10 || s[4] != '-' ||
        !digits_at(s, n, 5, 2, &dt->month) || s[7] != '-' || !digits_at(s, n, 8, 2, &dt->day))
        return fail(p, pos, "invalid date: expected YYYY-MM-DD");
    if (dt->month < 1 || dt->month > 12 || dt->day < 1 ||
        dt->day > days_in_month(dt->year, dt->month))
        return fail(p, pos, "invalid date: %04d-%02d-%02d does not exist", dt->year, dt->month,
                    dt->day);
    i = 10;
    if (i == n) {
        v->type = TOML_LOCAL_DATE;
        return true;
    }
    if (s[i] != 'T' && s[i] != 't' && s[i] != ' ')
        return fail(p, pos, "invalid date-time: expected 'T' between date and time");
    i++;
    if (!parse_time_part(p, pos, s, n, &i, dt))
        return false;
    if (i == n) {
        v->type = TOML_LOCAL_DATETIME;
        return true;
    }
    if (s[i] == 'Z' || s[i] == 'z') {
        dt->has_offset = true;
        dt->offset_z = true;
        i++;
    } else if (s[i] == '+' || s[i] == '-') {
        int oh, om;
        if (!digits_at(s, n, i + 1, 2, &oh) || i + 3 >= n || s[i + 3] != ':' ||
            !digits_at(s, n, i + 4, 2, &om))
            return fail(p, pos, "invalid time offset: expected +HH:MM or -HH:MM");
        if (oh > 23 || om > 59)
            return fail(p, pos, "invalid time offset: out of range");
        dt->has_offset = true;
        dt->offset_minutes = (oh * 60 + om) * (s[i] == '-' ? -1 : 1);
        i += 6;
    }
    if (i != n)
        return fail(p, pos, "invalid date-time");
    v->type = TOML_OFFSET_DATETIME;
    return true;
}

/* ---------------------------------------------------------------- values */

static struct toml_value *parse_value(struct parser *p, unsigned depth);
static bool parse_keyval(struct parser *p, struct toml_value *table);

static bool is_token_char(int c)
{
    return is_bare_key_char(c) || c == '.' || c == '+' || c == ':';
}

/* Numbers and date-times share a lexical start; collect the token first. A
 * date followed by a space and a time is one token ("1979-05-27 07:32:00"). */
static struct toml_value *parse_scalar_token(struct parser *p, unsigned depth)
{
    size_t start = p->pos;
    while (is_token_char(peek(p, 0)))
        p->pos++;
    size_t n = p->pos - start;
    const char *s = p->src + start;
    bool date_like = n >= 5 && s[4] == '-' && s[0] >= '0' && s[0] <= '9' && s[1] >= '0' &&
                     s[1] <= '9' && s[2] >= '0' && s[2] <= '9' && s[3] >= '0' && s[3] <= '9';
    if (date_like && n == 10 && peek(p, 0) == ' ' && peek(p, 1) >= '0' && peek(p, 1) <= '9' &&
        peek(p, 2) >= '0' && peek(p, 2) <= '9' && peek(p, 3) == ':') {
        p->pos++;
        while (is_token_char(peek(p, 0)))
            p->pos++;
        n = p->pos - start;
    }
    bool time_like = n >= 3 && s[2] == ':' && s[0] >= '0' && s[0] <= '9' && s[1] >= '0' &&
                     s[1] <= '9';
    struct toml_value *v = new_value(p, TOML_INTEGER, start, depth);
    if (!v)
        return NULL;
    bool ok = (date_like || time_like) ? parse_datetime(p, start, s, n, v)
                                       : parse_number(p, start, s, n, v);
    if (!ok) {
        free(v);
        return NULL;
    }
    return v;
}

static struct toml_value *parse_array(struct parser *p, unsigned depth)
{
    struct toml_value *a = new_value(p, TOML_ARRAY, p->pos, depth);
    if (!a)
        return NULL;
    p->pos++; /* [ */
    for (;;) {
        if (!skip_ws_nl_comments(p))
            goto fail;
        if (peek(p, 0) == ']') {
            p->pos++;
            return a;
        }
        struct toml_value *item = parse_value(p, depth + 1);
        if (!item || !array_append(p, a, item))
            goto fail;
        if (!skip_ws_nl_comments(p))
            goto fail;
        int c = peek(p, 0);
        if (c == ',') {
            p->pos++;
        } else if (c == ']') {
            p->pos++;
            return a;
        } else {
            char d[48];
            fail(p, p->pos, c < 0 ? "unterminated array" : "expected ',' or ']' in array, found %s",
                 describe_char(p, p->pos, d, sizeof d));
            goto fail;
        }
    }
fail:
    toml_free(a);
    return NULL;
}

/* { key = value, ... } on one line, no trailing comma (TOML 1.0). */
static struct toml_value *parse_inline_table(struct parser *p, unsigned depth)
{
    struct toml_value *t = new_value(p, TOML_TABLE, p->pos, depth);
    if (!t)
        return NULL;
    t->flags_ = TF_DEFINED;
    p->pos++; /* { */
    skip_ws(p);
    if (peek(p, 0) == '}') {
        p->pos++;
        t->flags_ |= TF_INLINE;
        return t;
    }
    for (;;) {
        skip_ws(p);
        if (at_newline(p)) {
            fail(p, p->pos, "newlines are not allowed inside an inline table");
            goto fail;
        }
        if (peek(p, 0) == '}') {
            fail(p, p->pos, "trailing comma is not allowed in an inline table");
            goto fail;
        }
        if (!parse_keyval(p, t))
            goto fail;
        skip_ws(p);
        int c = peek(p, 0);
        if (c == ',') {
            p->pos++;
        } else if (c == '}') {
            p->pos++;
            t->flags_ |= TF_INLINE; /* frozen from now on */
            return t;
        } else if (c < 0) {
            fail(p, p->pos, "unterminated inline table");
            goto fail;
        } else if (at_newline(p)) {
            fail(p, p->pos, "newlines are not allowed inside an inline table");
            goto fail;
        } else {
            char d[48];
            fail(p, p->pos, "expected ',' or '}' in inline table, found %s",
                 describe_char(p, p->pos, d, sizeof d));
            goto fail;
        }
    }
fail:
    toml_free(t);
    return NULL;
}

static struct toml_value *parse_value(struct parser *p, unsigned depth)
{
    int c = peek(p, 0);
    if (depth > TOML_MAX_DEPTH) {
        fail(p, p->pos, "nesting too deep (more than %d levels of tables and arrays)",
             TOML_MAX_DEPTH);
        return NULL;
    }
    if (c == '"' || c == '\'') {
        struct toml_value *v = new_value(p, TOML_STRING, p->pos, depth);
        if (!v)
            return NULL;
        struct strbuf sb;
        sb_init(&sb, 0);
        if (!parse_string(p, &sb, true) || sb.overflow ||
            !(v->u.string.ptr = sb_detach(&sb, &v->u.string.len))) {
            if (!p->failed)
                fail_oom(p);
            sb_release(&sb);
            free(v);
            return NULL;
        }
        return v;
    }
    if (c == '[')
        return parse_array(p, depth);
    if (c == '{')
        return parse_inline_table(p, depth);
    if (c == 't' || c == 'f') {
        const char *word = c == 't' ? "true" : "false";
        size_t wl = strlen(word);
        if (p->len - p->pos >= wl && memcmp(p->src + p->pos, word, wl) == 0 &&
            !is_bare_key_char(peek(p, wl))) {
            struct toml_value *v = new_value(p, TOML_BOOL, p->pos, depth);
            if (!v)
                return NULL;
            v->u.boolean = c == 't';
            p->pos += wl;
            return v;
        }
    }
    if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'i' || c == 'n')
        return parse_scalar_token(p, depth);
    char d[48];
    if (c < 0 || at_newline(p) || c == '#')
        fail(p, p->pos, "expected a value after '='");
    else if (is_bare_key_char(c))
        fail(p, p->pos, "expected a value, found bare text (strings need quotes)");
    else
        fail(p, p->pos, "expected a value, found %s", describe_char(p, p->pos, d, sizeof d));
    return NULL;
}

/* ---------------------------------------------------------------- structure */

static bool key_is_table_error(struct parser *p, const struct keyseg *seg,
                               const struct toml_value *v)
{
    char k[80];
    const char *tn = toml_type_name(v->type);
    return fail(p, seg->pos, "key \"%s\" is already defined as %s %s, not a table",
                text_show(seg->ptr, seg->len, k, sizeof k), strchr("aeiou", tn[0]) ? "an" : "a",
                tn);
}

/* key = value into `table`; dotted keys create sub-tables on the way. */
static bool parse_keyval(struct parser *p, struct toml_value *table)
{
    struct keypath kp = {0};
    bool ok = false;
    char k[200];
    if (!parse_key(p, &kp))
        goto out;
    skip_ws(p);
    if (peek(p, 0) != '=') {
        char d[48];
        fail(p, p->pos, "expected '=' after key \"%s\", found %s",
             show_path(&kp, kp.len, k, sizeof k), describe_char(p, p->pos, d, sizeof d));
        goto out;
    }
    p->pos++;
    skip_ws(p);
    struct toml_value *t = table;
    for (size_t i = 0; i + 1 < kp.len; i++) {
        struct keyseg *seg = &kp.segs[i];
        struct toml_keyval *kv = table_find(t, seg->ptr, seg->len);
        if (!kv) {
            struct toml_value *child =
                new_value_at(p, TOML_TABLE, seg->pos, seg->line, seg->col, t->depth_ + 1u);
            if (!child || !table_insert(p, t, seg, child))
                goto out;
            child->flags_ = TF_DOTTED;
            t = child;
            continue;
        }
        struct toml_value *v = kv->value;
        if (v->type != TOML_TABLE) {
            key_is_table_error(p, seg, v);
            goto out;
        }
        if (v->flags_ & TF_INLINE) {
            fail(p, seg->pos, "cannot add keys to inline table \"%s\"",
                 show_path(&kp, i + 1, k, sizeof k));
            goto out;
        }
        if (!(v->flags_ & TF_DOTTED)) {
            fail(p, seg->pos,
                 "cannot add keys to table \"%s\" with dotted keys: it was defined by a [table] header",
                 show_path(&kp, i + 1, k, sizeof k));
            goto out;
        }
        t = v;
    }
    struct keyseg *last = &kp.segs[kp.len - 1];
    if (table_find(t, last->ptr, last->len)) {
        fail(p, last->pos, "duplicate key \"%s\"", show_path(&kp, kp.len, k, sizeof k));
        goto out;
    }
    struct toml_value *val = parse_value(p, t->depth_ + 1u);
    if (!val || !table_insert(p, t, last, val))
        goto out;
    ok = true;
out:
    keypath_release(&kp);
    return ok;
}

/* [table] or [[array.of.tables]] */
static bool parse_header(struct parser *p)
{
    size_t start = p->pos;
    int sl, sc; /* where the header starts: tables it creates report this spot */
    locate(p, start, &sl, &sc);
    bool aot = peek(p, 1) == '[';
    p->pos += aot ? 2 : 1;
    struct keypath kp = {0};
    bool ok = false;
    char k[200];
    if (!parse_key(p, &kp))
        goto out;
    skip_ws(p);
    if (peek(p, 0) != ']' || (aot && peek(p, 1) != ']')) {
        char d[48];
        fail(p, p->pos, "expected '%s' to close the table header, found %s", aot ? "]]" : "]",
             describe_char(p, p->pos, d, sizeof d));
        goto out;
    }
    p->pos += aot ? 2 : 1;
    if (!expect_eol(p, "table header"))
        goto out;

    struct toml_value *t = p->root;
    for (size_t i = 0; i + 1 < kp.len; i++) {
        struct keyseg *seg = &kp.segs[i];
        struct toml_keyval *kv = table_find(t, seg->ptr, seg->len);
        if (!kv) {
            struct toml_value *child = new_value_at(p, TOML_TABLE, start, sl, sc, t->depth_ + 1u);
            if (!child || !table_insert(p, t, seg, child))
                goto out;
            t = child; /* implicit: may be defined by its own header later */
            continue;
        }
        struct toml_value *v = kv->value;
        if (v->type == TOML_ARRAY && (v->flags_ & TF_AOT)) {
            t = v->u.array.items[v->u.array.len - 1]; /* the latest [[element]] */
            continue;
        }
        if (v->type != TOML_TABLE) {
            key_is_table_error(p, seg, v);
            goto out;
        }
        if (v->flags_ & TF_INLINE) {
            fail(p, seg->pos, "cannot extend inline table \"%s\"", show_path(&kp, i + 1, k, sizeof k));
            goto out;
        }
        t = v;
    }
    struct keyseg *last = &kp.segs[kp.len - 1];
    struct toml_keyval *kv = table_find(t, last->ptr, last->len);
    show_path(&kp, kp.len, k, sizeof k);
    if (aot) {
        struct toml_value *arr;
        if (!kv) {
            arr = new_value_at(p, TOML_ARRAY, start, sl, sc, t->depth_ + 1u);
            if (!arr || !table_insert(p, t, last, arr))
                goto out;
            arr->flags_ = TF_AOT;
        } else {
            arr = kv->value;
            if (arr->type != TOML_ARRAY || !(arr->flags_ & TF_AOT)) {
                fail(p, start, "cannot use [[%s]]: \"%s\" is already defined as %s", k, k,
                     arr->type == TOML_ARRAY ? "a static array" : toml_type_name(arr->type));
                goto out;
            }
        }
        struct toml_value *elem = new_value_at(p, TOML_TABLE, start, sl, sc, arr->depth_ + 1u);
        if (!elem || !array_append(p, arr, elem))
            goto out;
        elem->flags_ = TF_DEFINED;
        p->current = elem;
    } else if (!kv) {
        struct toml_value *child = new_value_at(p, TOML_TABLE, start, sl, sc, t->depth_ + 1u);
        if (!child || !table_insert(p, t, last, child))
            goto out;
        child->flags_ = TF_DEFINED;
        p->current = child;
    } else {
        struct toml_value *v = kv->value;
        if (v->type == TOML_ARRAY && (v->flags_ & TF_AOT)) {
            fail(p, start, "[%s] is an array of tables; use [[%s]] to add an element", k, k);
            goto out;
        }
        if (v->type != TOML_TABLE) {
            key_is_table_error(p, last, v);
            goto out;
        }
        if (v->flags_ & TF_INLINE) {
            fail(p, start, "table [%s] is already defined as an inline table", k);
            goto out;
        }
        if (v->flags_ & TF_DEFINED) {
            fail(p, start, "table [%s] is defined twice", k);
            goto out;
        }
        if (v->flags_ & TF_DOTTED) {
            fail(p, start, "table [%s] is already defined by dotted keys", k);
            goto out;
        }
        v->flags_ |= TF_DEFINED;
        v->line = sl; /* report the header, not the first use */
        v->column = sc;
        p->current = v;
    }
    ok = true;
out:
    keypath_release(&kp);
    return ok;
}

/* ---------------------------------------------------------------- driver */

/* Returns the offset of the first byte that is not well-formed UTF-8 (overlong
 * forms, surrogates and code points above U+10FFFF included), or len. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) {
            n = 2;
            cp = c & 0x1F;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3;
            cp = c & 0x0F;
            min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4;
            cp = c & 0x07;
            min = 0x10000;
        } else {
            return i;
        }
        if (i + n > len)
            return i;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += n;
    }
    return len;
}

struct toml_value *toml_parse(const char *text, size_t len, char *errbuf, size_t errlen)
{
    struct parser p = {
        .src = text, .len = len, .errbuf = errbuf, .errlen = errlen,
        .memo_line = 1, .memo_col = 1,
    };
    if (errbuf && errlen)
        errbuf[0] = '\0';
    if (!text && len) {
        fail(&p, 0, "no input");
        return NULL;
    }
    size_t bad = utf8_invalid_at((const unsigned char *)text, len);
    if (bad < len) {
        fail(&p, bad, "invalid UTF-8 byte 0x%02X", (unsigned char)text[bad]);
        return NULL;
    }
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        p.pos = p.text_start = p.memo_pos = 3; /* a byte order mark is allowed at the very start */
    p.root = new_value(&p, TOML_TABLE, 0, 0);
    if (!p.root)
        return NULL;
    p.root->flags_ = TF_DEFINED;
    p.current = p.root;

    while (p.pos < p.len) {
        skip_ws(&p);
        int c = peek(&p, 0);
        if (c < 0)
            break;
        if (c == '#') {
            if (!skip_comment(&p) || !expect_eol(&p, "comment"))
                goto fail;
        } else if (at_newline(&p)) {
            skip_newline(&p);
        } else if (c == '[') {
            if (!parse_header(&p))
                goto fail;
        } else if (is_bare_key_char(c) || c == '"' || c == '\'') {
            if (!parse_keyval(&p, p.current) || !expect_eol(&p, "value"))
                goto fail;
        } else {
            char d[48];
            if (c == '\r')
                fail(&p, p.pos, "carriage return must be followed by a line feed");
            else
                fail(&p, p.pos, "expected a key or a [table] header, found %s",
                     describe_char(&p, p.pos, d, sizeof d));
            goto fail;
        }
    }
    return p.root;
fail:
    toml_free(p.root);
    return NULL;
}

/* ---------------------------------------------------------------- lookup */

const struct toml_value *toml_getn(const struct toml_value *table, const char *key, size_t len)
{
    const struct toml_keyval *kv = table_find(table, key, len);
    return kv ? kv->value : NULL;
}

const struct toml_value *toml_get(const struct toml_value *table, const char *key)
{
    return key ? toml_getn(table, key, strlen(key)) : NULL;
}

const struct toml_keyval *toml_get_keyval(const struct toml_value *table, const char *key)
{
    return key ? table_find(table, key, strlen(key)) : NULL;
}

const char *toml_type_name(enum toml_type t)
{
    switch (t) {
    case TOML_STRING: return "string";
    case TOML_INTEGER: return "integer";
    case TOML_FLOAT: return "float";
    case TOML_BOOL: return "boolean";
    case TOML_OFFSET_DATETIME: return "offset date-time";
    case TOML_LOCAL_DATETIME: return "local date-time";
    case TOML_LOCAL_DATE: return "local date";
    case TOML_LOCAL_TIME: return "local time";
    case TOML_ARRAY: return "array";
    case TOML_TABLE: return "table";
    }
    return "value";
}
