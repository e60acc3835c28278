/*
 * A fast loader for the small, plain JSON bodies most requests send (a point
 * lookup's {"predicates":[{"col":"id","op":"eq","val":42}]}): it builds the
 * same jansson tree json_loadb would, in a fraction of its instructions
 * (jansson's lexer reads a character at a time through a stream; this one
 * walks the buffer once and hands jansson ready-made values).
 *
 * It is a recogniser of a strict subset of JSON, never a second JSON
 * parser with its own answers: it accepts a text only when the text is
 * valid JSON that json_loadb (with JSON_REJECT_DUPLICATES) would load into
 * an equal tree (the same types, the same values, keys in the same order),
 * and declines (NULL) everything else, valid or not, for the caller to
 * load with jansson. So errors, their messages and every unusual input keep
 * jansson's behaviour. tests/fuzz/fuzz_json_small.c checks exactly this
 * against jansson.
 *
 * The subset: one object at the top; objects, arrays, strings of printable
 * ASCII without escapes, integers of at most 18 digits (never "-0"), true,
 * false, null; JSON whitespace anywhere JSON allows it; nesting at most
 * JSON_SMALL_MAX_DEPTH containers; no key twice in one object. Numbers with
 * a fraction or an exponent, escapes, non-ASCII bytes: declined.
 */
#ifndef VT_UTIL_JSON_SMALL_H
#define VT_UTIL_JSON_SMALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Containers nested deeper than this are declined (the API's own bound,
 * VT_MAX_JSON_DEPTH, is larger: an accepted tree always passes it). */
#define JSON_SMALL_MAX_DEPTH 8

/* text[0..len) as a new jansson object (a reference the caller owns), or
 * NULL: outside the subset (or out of memory); load it with json_loadb. */
json_t *json_small_load(const char *text, size_t len);

/* The subset's tokens, for scanners of one fixed shape (query_small_scan)
 * that read a body without building a tree. Each takes the cursor at the
 * token, moves it past on success, and on failure returns false with the
 * cursor anywhere (the caller then declines the whole text). A text such a
 * scanner accepts, built only from these tokens, is in the subset, so
 * json_small_load loads it. */
struct json_small_cur {
    const char *p, *end;
};
/* Skips JSON whitespace. */
void json_small_ws(struct json_small_cur *c);
/* A string of printable ASCII without escapes at c->p; s/n: its bytes
 * inside the text (not NUL-terminated). */
bool json_small_string(struct json_small_cur *c, const char **s, size_t *n);
/* An integer of at most 18 digits, never "-0", no fraction or exponent. */
bool json_small_int(struct json_small_cur *c, int64_t *out);
/* Whitespace, then the byte ch. */
bool json_small_punct(struct json_small_cur *c, char ch);

#endif
