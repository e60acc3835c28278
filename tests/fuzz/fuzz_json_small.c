/*
 * libFuzzer target for json_small_load (src/util/json_small.h), with jansson
 * as its oracle: whenever it accepts a text, json_loadb (as the API loads
 * bodies: JSON_REJECT_DUPLICATES) must load the same text into the same
 * tree: the same types (an integer is never a real), values, and keys in
 * the same order. Texts it declines may be anything.
 *
 *   make fuzz && build-fuzz/fuzz_json_small -dict=tests/fuzz/json_small.dict DIR
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_small.h"

/* Exactly the same tree (json_equal ignores key order). */
static int same(json_t *a, json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        void *ia = json_object_iter(a), *ib = json_object_iter(b);
        while (ia && ib) {
            size_t na = json_object_iter_key_len(ia), nb = json_object_iter_key_len(ib);
            if (na != nb || memcmp(json_object_iter_key(ia), json_object_iter_key(ib), na) != 0 ||
                !same(json_object_iter_value(ia), json_object_iter_value(ib)))
                return 0;
            ia = json_object_iter_next(a, ia);
            ib = json_object_iter_next(b, ib);
        }
        return !ia && !ib;
    }
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_INTEGER: return json_integer_value(a) == json_integer_value(b);
    default: return json_equal(a, b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *small = json_small_load((const char *)data, size);
    if (!small)
        return 0;
    json_error_t err;
    json_t *full = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
    if (!full || !json_is_object(small) || !same(small, full))
        abort();
    json_decref(full);
    json_decref(small);
    return 0;
}
