/*
 * A growable byte buffer with a hard cap. Appends past `max` fail (return -1)
 * and set `overflow`, so a caller can finish its work and check once. The
 * buffer is always NUL-terminated when cap > 0 (the NUL is not in `len`).
 */
#ifndef VT_UTIL_STRBUF_H
#define VT_UTIL_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct strbuf {
    char *buf;
    size_t len;
    size_t cap;
    size_t max;    /* 0 means SIZE_MAX */
    bool overflow; /* an append was refused (cap or allocation) */
};

#define STRBUF_INIT {NULL, 0, 0, 0, false}

void sb_init(struct strbuf *sb, size_t max);
void sb_release(struct strbuf *sb);
void sb_reset(struct strbuf *sb); /* len = 0, keeps memory */
/* The out-of-line part of sb_grow: a reallocation, or a refusal. */
int sb_grow_slow(struct strbuf *sb, size_t extra);

/* Ensures room for `extra` more bytes (plus NUL). -1 when over max or OOM.
 * Inline while the room is there (a row's cells each reserve theirs). */
static inline int sb_grow(struct strbuf *sb, size_t extra)
{
    if (sb->cap > sb->len && extra < sb->cap - sb->len && (!sb->max || sb->len + extra <= sb->max))
        return 0;
    return sb_grow_slow(sb, extra);
}
/* The out-of-line part of sb_add: growth, or a refusal. */
int sb_add_slow(struct strbuf *sb, const void *data, size_t n);

/* Appends inline while the room is there (the usual append: a response
 * head is ~25 of them, a call each was ~50 instructions). */
static inline int sb_add(struct strbuf *sb, const void *data, size_t n)
{
    if (sb->cap > sb->len && n < sb->cap - sb->len && (!sb->max || sb->len + n <= sb->max)) {
        if (n)
            __builtin_memcpy(sb->buf + sb->len, data, n);
        sb->len += n;
        sb->buf[sb->len] = '\0';
        return 0;
    }
    return sb_add_slow(sb, data, n);
}

/* (inline: a literal's length is known at compile time) */
static inline int sb_adds(struct strbuf *sb, const char *s)
{
    return sb_add(sb, s, __builtin_strlen(s));
}

static inline int sb_addc(struct strbuf *sb, char c)
{
    if (sb->cap > sb->len + 1 && (!sb->max || sb->len + 1 <= sb->max)) {
        sb->buf[sb->len++] = c;
        sb->buf[sb->len] = '\0';
        return 0;
    }
    return sb_add_slow(sb, &c, 1);
}
int sb_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Detaches the buffer (caller frees); the strbuf is left empty. */
char *sb_detach(struct strbuf *sb, size_t *out_len);

/* Appends s as a JSON string literal, quotes included. */
int sb_add_json_string(struct strbuf *sb, const char *s, size_t n);
/* Appends s as a SQL identifier in double quotes, doubling embedded quotes. */
int sb_add_sql_ident(struct strbuf *sb, const char *s);
/* Appends s as a SQL string literal in single quotes (for trusted text such as
 * file paths from the config; client values are always bound parameters). */
int sb_add_sql_string(struct strbuf *sb, const char *s);

#endif
