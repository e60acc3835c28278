/*
 * libFuzzer target for the JSON span reader of src/explore (jspan.c), which
 * walks the JSON text of summary and facet results without converting it.
 * Build and run (clang; not part of `make` or `make check`):
 *   make build-fuzz/fuzz_explore_jspan
 *   build-fuzz/fuzz_explore_jspan -dict=tests/fuzz/explore_jspan.dict tests/fuzz/corpus/fuzz_explore_jspan
 *
 * Properties checked (trap on failure), besides staying inside the input:
 * - jansson is the oracle: text jansson accepts as one value (nesting within
 *   JSPAN_MAX_DEPTH) is accepted by jspan_value_end, which ends where the
 *   value ends; an object's or array's members iterate to the count jansson
 *   sees, keys quoted, and jspan_get finds every plain key;
 * - any span jspan_value_end accepts starts and ends inside the input, and a
 *   value the iterator returns is itself a value jspan_value_end accepts;
 * - jspan_int agrees with jansson on integers that fit an int64.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "explore/explore_int.h"

#define CHECK(c)                                                                                  \
    do {                                                                                          \
        if (!(c))                                                                                 \
            __builtin_trap();                                                                     \
    } while (0)

/* Deepest bracket nesting outside strings (the text need not be valid). */
static int nesting(const char *s, size_t n)
{
    int d = 0, max = 0;
    bool str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                str = false;
        } else if (c == '"') {
            str = true;
        } else if (c == '{' || c == '[') {
            if (++d > max)
                max = d;
        } else if (c == '}' || c == ']') {
            d--;
        }
    }
    return max;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && strchr(" \t\r\n", s[i]) && s[i])
        i++;
    return i;
}

/* Walks a container span; returns its member count, or -1 if the iterator
 * reported it malformed. Every member value must be a value by itself. */
static long walk(struct jspan c, bool *object)
{
    struct jspan_iter it;
    if (!jspan_iter_init(&it, c))
        return -1;
    *object = it.object;
    struct jspan k, v;
    long count = 0;
    while (jspan_next(&it, &k, &v)) {
        CHECK(v.p >= c.p && v.n > 0 && v.p + v.n <= c.p + c.n);
        CHECK(jspan_value_end(v.p, v.n, 0) == v.n);
        if (it.object) {
            CHECK(k.p >= c.p && k.n >= 2 && k.p + k.n <= v.p);
            CHECK(k.p[0] == '"' && k.p[k.n - 1] == '"');
        } else {
            CHECK(k.p == NULL && k.n == 0);
        }
        count++;
    }
    return it.bad ? -1 : count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy without a terminator, so a read past the end is caught. */
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);

    size_t e = jspan_value_end(s, size, 0);
    CHECK(e == (size_t)-1 || (e > 0 && e <= size));

    bool object = false;
    long members = walk((struct jspan){s, size}, &object);
    int64_t iv = 0;
    bool is_int = jspan_int((struct jspan){s, size}, &iv);
    (void)jspan_is_null((struct jspan){s, size});
    CHECK(jspan_eq((struct jspan){s, size}, (struct jspan){s, size}));

    json_error_t jerr;
    /* jansson stops at a raw NUL after a complete value ("1\0" loads): not
     * JSON, so such texts have no oracle. */
    json_t *j = memchr(s, '\0', size)
                    ? NULL
                    : json_loadb(s, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (j && nesting(s, size) <= JSPAN_MAX_DEPTH) {
        /* Valid JSON: jspan reads the same value, to its last character. */
        CHECK(e != (size_t)-1);
        CHECK(skip_ws(s, size, e) == size);
        if (json_is_object(j) || json_is_array(j)) {
            CHECK(members >= 0);
            CHECK(object == json_is_object(j));
            CHECK((size_t)members == (object ? json_object_size(j) : json_array_size(j)));
            /* jspan_get compares a key's text: when the text has no escapes,
             * every key jansson read is found. */
            const char *key;
            json_t *val;
            if (object && !memchr(s, '\\', size))
                json_object_foreach(j, key, val)
                {
                    struct jspan got;
                    CHECK(jspan_get((struct jspan){s, size}, key, &got));
                    CHECK(jspan_value_end(got.p, got.n, 0) == got.n);
                }
        }
        if (json_is_integer(j)) {
            size_t a = skip_ws(s, size, 0), b = e;
            if (a == 0 && b == size)
                CHECK(is_int && iv == json_integer_value(j));
        }
    }
    json_decref(j);
    free(s);
    return 0;
}
