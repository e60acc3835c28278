/*
 * Internals of src/explore: reading the JSON our own row encoder wrote
 * (src/encode/json_rows.c) without converting its values. A number such as
 * 42.40 (a DECIMAL(10,2)) or 170141183460469231731687303715884105727 (a
 * HUGEINT) must reach the client as written; jansson would make a double or
 * refuse it. So summary and facet results are read as spans of the text and
 * copied into the answer verbatim.
 */
#ifndef VT_EXPLORE_EXPLORE_INT_H
#define VT_EXPLORE_EXPLORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "explore/explore.h"

/* A piece of a JSON text: [p, p + n). */
struct jspan {
    const char *p;
    size_t n;
};

/* The end of the JSON value starting at s[i] (after leading white space),
 * or (size_t)-1 when the text is not well formed there. Strings (escapes
 * included), numbers, literals and nested containers; nesting is bounded
 * (JSPAN_MAX_DEPTH), as is everything else by n. */
#define JSPAN_MAX_DEPTH 64
size_t jspan_value_end(const char *s, size_t n, size_t i);

/* Iteration over a container's members. Start with jspan_iter_init on the
 * span of an object or array; each jspan_next gives the next member's key
 * (objects only: the key's text with its quotes) and value. false at the end
 * or on malformed text (it->bad is then set). */
struct jspan_iter {
    const char *s;
    size_t n, i;
    bool object;
    bool bad;
    bool first;
};

bool jspan_iter_init(struct jspan_iter *it, struct jspan container);
bool jspan_next(struct jspan_iter *it, struct jspan *key, struct jspan *value);

/* The member `key` (unquoted, no escapes) of an object span; false if absent. */
bool jspan_get(struct jspan obj, const char *key, struct jspan *out);
bool jspan_is_null(struct jspan v);
/* A JSON integer in the int64 range. */
bool jspan_int(struct jspan v, int64_t *out);
/* Whether two spans hold the same text. */
bool jspan_eq(struct jspan a, struct jspan b);

#endif
