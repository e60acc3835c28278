/*
 * The tiny unit-test runner: TEST(name) defines a test, CHECK* record failures
 * without stopping, RUN_TESTS() in main runs the tests listed by TEST_LIST and
 * prints "N passed, N failed"; the exit status is non-zero on any failure.
 */
#ifndef VT_TESTLIB_H
#define VT_TESTLIB_H

#include <stdio.h>
#include <string.h>

static int tl_failed_checks;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            tl_failed_checks++;                                                  \
        }                                                                        \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                       \
    do {                                                                         \
        long long tl_a = (long long)(a), tl_b = (long long)(b);                  \
        if (tl_a != tl_b) {                                                      \
            fprintf(stderr, "  %s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, #b, \
                    tl_a, tl_b);                                                 \
            tl_failed_checks++;                                                  \
        }                                                                        \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                       \
    do {                                                                         \
        const char *tl_a = (a), *tl_b = (b);                                     \
        if (!tl_a || !tl_b || strcmp(tl_a, tl_b) != 0) {                          \
            fprintf(stderr, "  %s:%d: %s == %s: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, \
                    #b, tl_a ? tl_a : "(null)", tl_b ? tl_b : "(null)");         \
            tl_failed_checks++;                                                  \
        }                                                                        \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                              \
    do {                                                                         \
        const char *tl_h = (hay), *tl_n = (needle);                              \
        if (!tl_h || !strstr(tl_h, tl_n)) {                                      \
            fprintf(stderr, "  %s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, \
                    tl_h ? tl_h : "(null)", tl_n);                               \
            tl_failed_checks++;                                                  \
        }                                                                        \
    } while (0)

#define TEST(name) static void name(void)

struct tl_case {
    const char *name;
    void (*fn)(void);
};

#define TEST_CASE(name) {#name, name}

static inline int tl_run(const struct tl_case *cases, size_t n, const char *file)
{
    int passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        int before = tl_failed_checks;
        cases[i].fn();
        if (tl_failed_checks == before) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "FAIL %s\n", cases[i].name);
        }
    }
    printf("%s: %d passed, %d failed\n", file, passed, failed);
    return failed ? 1 : 0;
}

#define RUN_TESTS(...)                                                           \
    int main(void)                                                               \
    {                                                                            \
        static const struct tl_case tl_cases[] = {__VA_ARGS__};                  \
        return tl_run(tl_cases, sizeof tl_cases / sizeof tl_cases[0], __FILE__); \
    }

#endif
