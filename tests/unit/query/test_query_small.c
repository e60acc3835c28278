/*
 * The lookup shape read without a JSON tree (query.h: query_small_scan and
 * query_small_parse): which bodies it takes, which it leaves to the general
 * path, and that what it takes equals query_parse's request for the same
 * text in every mode (the oracle of tests/fuzz/fuzz_query_small.c).
 */
#include "../../fuzz/query_small_check.h"
#include "testlib.h"

static int check(const char *text)
{
    return query_small_check(text, strlen(text), &qs_schema);
}

/* Every body gives `want` (query_small_check's answer). */
static void expect_all(const char *const *bodies, size_t n, int want)
{
    for (size_t i = 0; i < n; i++) {
        int rc = check(bodies[i]);
        if (rc != want)
            fprintf(stderr, "  body %zu: %d, not %d: %s\n", i, rc, want, bodies[i]);
        CHECK_EQ_INT(rc, want);
    }
}

/* Taken (2), and the general path builds the same request. */
TEST(lookups_are_taken_and_agree)
{
    static const char *const bodies[] = {
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":4242}]}",
        " {\n\"predicates\" : [ { \"op\" : \"eq\", \"val\" : -17, \"col\" : \"bi\" } ] }\t",
        "{\"predicates\":[{\"col\":\"s\",\"op\":\"eq\",\"val\":\"c3\"}]}",
        "{\"predicates\":[{\"col\":\"s\",\"op\":\"eq\",\"val\":\"\"}]}",
        "{\"predicates\":[{\"col\":\"e\",\"op\":\"neq\",\"val\":\"a\"}]}",
        "{\"predicates\":[{\"col\":\"f\",\"op\":\"gt\",\"val\":0}]}",
        "{\"predicates\":[{\"col\":\"d\",\"op\":\"gte\",\"val\":123456789012345678}]}",
        "{\"predicates\":[{\"col\":\"dec\",\"op\":\"lt\",\"val\":-5}]}",
        "{\"predicates\":[{\"col\":\"ub\",\"op\":\"lte\",\"val\":5}]}",
        "{\"limit\":2,\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1},"
        "{\"col\":\"s\",\"op\":\"eq\",\"val\":\"x\"}],\"columns\":[\"s\",\"id\"]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"limit\":0}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"limit\":999999999999999999}",
    };
    expect_all(bodies, sizeof bodies / sizeof bodies[0], 2);
}

/* Outside the shape: the scan declines (0); the general path answers. */
TEST(other_bodies_go_to_the_general_path)
{
    static const char *const bodies[] = {
        "{}",
        "",
        "{\"predicates\":[]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"page\":1}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"predicates\":[]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1,\"col\":\"id\"}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\"}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"in\",\"val\":[1]}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1.0}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1e2}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":-0}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1234567890123456789}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":null}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":true}]}",
        "{\"predicates\":[{\"col\":\"s\",\"op\":\"eq\",\"val\":\"\\u0041\"}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"limit\":-1}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"limit\":null}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"columns\":[]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}]} x",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}]",
        "[{\"predicates\":[]}]",
        "{\"predicates\":[{\"col\":\"i\\\"d\",\"op\":\"eq\",\"val\":1}]}", /* an escape */
    };
    expect_all(bodies, sizeof bodies / sizeof bodies[0], 0);
}

/* In the shape, but the schema or the value is not the plain case: the
 * parse declines (1), so query_parse gives its own answer or error. */
TEST(schema_misfits_are_declined_not_refused)
{
    static const char *const bodies[] = {
        "{\"predicates\":[{\"col\":\"nope\",\"op\":\"eq\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"\",\"op\":\"eq\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"ID\",\"op\":\"eq\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":\"1\"}]}",
        "{\"predicates\":[{\"col\":\"s\",\"op\":\"eq\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"b\",\"op\":\"eq\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"ts\",\"op\":\"eq\",\"val\":\"2024-01-01\"}]}",
        "{\"predicates\":[{\"col\":\"u\",\"op\":\"eq\",\"val\":\"x\"}]}",
        "{\"predicates\":[{\"col\":\"l\",\"op\":\"eq\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"bl\",\"op\":\"eq\",\"val\":\"x\"}]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"columns\":[\"id\",\"id\"]}",
        "{\"predicates\":[{\"col\":\"id\",\"op\":\"eq\",\"val\":1}],\"columns\":[\"zz\"]}",
    };
    expect_all(bodies, sizeof bodies / sizeof bodies[0], 1);
}

/* A name's prefix is not the name; a name in the text is not NUL-ended. */
TEST(names_match_whole)
{
    struct query_small sq;
    const char *t = "{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":1}]}";
    CHECK(query_small_scan(t, strlen(t), &sq));
    struct arena a;
    arena_init(&a, 0);
    struct query_request r;
    struct query_options o = {.mode = QUERY_PAGED};
    CHECK(!query_small_parse(&sq, &qs_schema, &o, &a, &r)); /* "i" is not "id" */
    t = "{\"predicates\":[{\"col\":\"bi\",\"op\":\"eq\",\"val\":1}]}";
    CHECK(query_small_scan(t, 20 + 6, &sq) == false); /* cut short */
    CHECK(query_small_scan(t, strlen(t), &sq));
    CHECK(query_small_parse(&sq, &qs_schema, &o, &a, &r));
    CHECK_EQ_INT(r.preds[0].ref.idx, 1);
    CHECK_EQ_INT(r.ncolumns, qs_schema.n);
    CHECK_EQ_INT(r.page_size, QUERY_DEFAULT_PAGE_SIZE);
    arena_release(&a);
}

RUN_TESTS(TEST_CASE(lookups_are_taken_and_agree), TEST_CASE(other_bodies_go_to_the_general_path),
          TEST_CASE(schema_misfits_are_declined_not_refused), TEST_CASE(names_match_whole))
