/*
 * json_small_load: the lookup-shaped bodies it takes (the same tree as
 * jansson's), and the texts it must leave to jansson (valid or not).
 */
#include <jansson.h>
#include <string.h>

#include "testlib.h"
#include "util/json_small.h"

/* Accepted, and equal to jansson's tree; key order checked by dumping. */
static void takes(const char *text)
{
    json_t *a = json_small_load(text, strlen(text));
    CHECK(a != NULL);
    if (!a) {
        fprintf(stderr, "  declined: %s\n", text);
        return;
    }
    json_error_t err;
    json_t *b = json_loadb(text, strlen(text), JSON_REJECT_DUPLICATES, &err);
    CHECK(b != NULL);
    char *da = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER);
    char *db = b ? json_dumps(b, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    CHECK(da && db);
    if (da && db)
        CHECK_EQ_STR(da, db);
    free(da);
    free(db);
    json_decref(a);
    json_decref(b);
}

static void leaves(const char *text, size_t len)
{
    json_t *a = json_small_load(text, len);
    CHECK(a == NULL);
    if (a) {
        fprintf(stderr, "  accepted: %.*s\n", (int)len, text);
        json_decref(a);
    }
}

#define LEAVES(s) leaves((s), sizeof(s) - 1)

TEST(takes_lookup_bodies)
{
    takes("{\"predicates\": [{\"col\": \"id\", \"op\": \"eq\", \"val\": 4242}]}");
    takes("{\"predicates\":[{\"col\":\"token\",\"op\":\"in\",\"val\":[\"a\",\"b c\"]}],"
          "\"page_size\":20,\"include_total\":true,\"columns\":null,\"x\":false}");
    takes(" \r\n\t{ \"a\" : [ ] , \"b\" : { } , \"c\" : -123456789012345678 , \"d\" : 0 } \n");
    takes("{}");
    takes("{\"a\":[[[[[[[1]]]]]]]}"); /* 8 containers */
    json_t *v = json_small_load("{\"v\":-17}", 9);
    CHECK(v && json_is_integer(json_object_get(v, "v")) &&
          json_integer_value(json_object_get(v, "v")) == -17);
    json_decref(v);
}

TEST(leaves_everything_else_to_jansson)
{
    LEAVES("");
    LEAVES("[1]");                             /* not an object */
    LEAVES("\"x\"");
    LEAVES("{\"a\":1,\"a\":2}");               /* duplicate key: jansson's error */
    LEAVES("{\"a\":1.5}");                     /* a real */
    LEAVES("{\"a\":1e3}");
    LEAVES("{\"a\":-0}");
    LEAVES("{\"a\":01}");                      /* invalid */
    LEAVES("{\"a\":1234567890123456789}");     /* 19 digits */
    LEAVES("{\"a\":\"\\u00e9\"}");             /* escape */
    LEAVES("{\"a\":\"\xc3\xa9\"}");            /* non-ASCII */
    LEAVES("{\"a\":\"x\ty\"}");                /* control byte */
    LEAVES("{\"a\":1}x");                      /* trailing garbage */
    LEAVES("{\"a\":1} {}");
    LEAVES("{\"a\":1,}");                      /* trailing comma */
    LEAVES("{\"a\":[1,]}");
    LEAVES("{\"a\" 1}");
    LEAVES("{\"a\":tru}");
    LEAVES("{\"a\":truex}");
    LEAVES("{\"a\":-}");
    LEAVES("{\"a\":1");                        /* cut short */
    LEAVES("{\"a\":\"x");
    LEAVES("{\"a\":1}\0");                     /* a NUL after it */
    LEAVES("{\"a\":[[[[[[[[1]]]]]]]]}");       /* 9 containers */
    LEAVES("{a:1}");
}

RUN_TESTS(TEST_CASE(takes_lookup_bodies), TEST_CASE(leaves_everything_else_to_jansson))
