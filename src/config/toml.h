/*
 * A TOML 1.0.0 parser of our own (no C TOML library is packaged in Debian).
 *
 * toml_parse() turns a whole document into a tree of struct toml_value. Every
 * value and key remembers the line and column where it was written, so the
 * configuration layer can report "file:line: key: problem". Errors from the
 * parser itself name line and column: "line 3, column 7: expected '='".
 *
 * Strings are UTF-8 and may contain NUL (from \u0000), so they carry a length.
 * Tables keep keys in document order. The tree is owned by the root value and
 * freed with toml_free().
 */
#ifndef VT_CONFIG_TOML_H
#define VT_CONFIG_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum toml_type {
    TOML_STRING,
    TOML_INTEGER,
    TOML_FLOAT,
    TOML_BOOL,
    TOML_OFFSET_DATETIME, /* 1979-05-27T07:32:00Z, 1979-05-27T00:32:00-07:00 */
    TOML_LOCAL_DATETIME,  /* 1979-05-27T07:32:00 */
    TOML_LOCAL_DATE,      /* 1979-05-27 */
    TOML_LOCAL_TIME,      /* 07:32:00 */
    TOML_ARRAY,
    TOML_TABLE,
};

struct toml_datetime {
    int year, month, day;       /* unset parts are 0 (e.g. for a local time) */
    int hour, minute, second;
    int nanosecond;             /* fractional seconds, truncated to ns */
    int frac_digits;            /* digits written after the '.', 0 when none */
    bool has_offset;            /* offset datetimes only */
    int offset_minutes;         /* east of UTC; 'Z' is 0 */
    bool offset_z;              /* written as 'Z'/'z' rather than +00:00 */
};

struct toml_value;

struct toml_keyval {
    char *key;                  /* UTF-8, NUL-terminated; a quoted key may also hold
                                 * NULs ("\u0000"), so key_len is authoritative */
    size_t key_len;
    struct toml_value *value;
    int line, column;           /* where the key was written */
};

struct toml_value {
    enum toml_type type;
    int line, column;           /* where the value (or table header) starts; 1-based */
    /* Parser bookkeeping (how a table was created, nesting depth); not for callers. */
    unsigned char flags_;
    unsigned short depth_;
    union {
        struct {
            char *ptr;          /* NUL-terminated; may also contain NULs */
            size_t len;
        } string;
        int64_t integer;
        double floating;
        bool boolean;
        struct toml_datetime datetime;
        struct {
            struct toml_value **items;
            size_t len;
            size_t cap_;        /* parser bookkeeping */
        } array;
        struct {
            struct toml_keyval *items;
            size_t len;
            size_t cap_;        /* parser bookkeeping: allocated items */
            uint32_t *hash_;    /* open-addressing index into items (large tables) */
            size_t hash_cap_;
        } table;
    } u;
};

/* Parses `len` bytes of TOML. On failure returns NULL and writes
 * "line L, column C: message" into errbuf. */
struct toml_value *toml_parse(const char *text, size_t len, char *errbuf, size_t errlen);
void toml_free(struct toml_value *root);

/* Nesting limit of arrays, inline tables and table paths together; deeper
 * documents are rejected so nothing downstream recurses without bound. */
#define TOML_MAX_DEPTH 128

/* Table lookup by key; NULL when absent or `table` is not a table. */
const struct toml_value *toml_get(const struct toml_value *table, const char *key);
/* Same with an explicit length (keys may contain NUL). */
const struct toml_value *toml_getn(const struct toml_value *table, const char *key, size_t len);
/* The keyval entry for `key` (for its line), or NULL. */
const struct toml_keyval *toml_get_keyval(const struct toml_value *table, const char *key);
const char *toml_type_name(enum toml_type t);

#endif
