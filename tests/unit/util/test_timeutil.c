/*
 * util/timeutil: RFC 3339 parsing (Delta time travel's source.timestamp)
 * against values computed by hand, and its round trip with the formatter.
 */
#include <stdlib.h>

#include "testlib.h"
#include "util/timeutil.h"

TEST(rfc3339_parse)
{
    int64_t ms;
    CHECK(time_parse_rfc3339("1970-01-01", &ms) && ms == 0);
    CHECK(time_parse_rfc3339("2023-03-03T02:39:38.585Z", &ms) && ms == 1677811178585LL);
    CHECK(time_parse_rfc3339("2023-03-03 02:39:38.5859Z", &ms) && ms == 1677811178585LL);
    CHECK(time_parse_rfc3339("2023-03-03T04:39:38.585+02:00", &ms) && ms == 1677811178585LL);
    CHECK(time_parse_rfc3339("2023-03-02T23:39:38.585-03:00", &ms) && ms == 1677811178585LL);
    CHECK(time_parse_rfc3339("2024-02-29", &ms) && ms == 1709164800000LL);
    CHECK(time_parse_rfc3339("1969-12-31T23:59:59Z", &ms) && ms == -1000);
    const char *bad[] = {"", "2023", "2023-02-29", "2023-13-01", "2023-01-32", "2023-01-01T",
                         "2023-01-01T10:00:00", "2023-01-01T25:00:00Z", "2023-01-01T10:00Z",
                         "2023-01-01T10:00:00.Z", "2023-01-01T10:00:00Zjunk",
                         "2023-01-01T10:00:00+2:00", "2023-01-01x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool ok = time_parse_rfc3339(bad[i], &ms);
        if (ok)
            fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
        CHECK(!ok);
    }
    char out[32];
    time_format_rfc3339(1677811178585LL * 1000, out);
    CHECK(time_parse_rfc3339(out, &ms) && ms == 1677811178585LL);
}

RUN_TESTS(TEST_CASE(rfc3339_parse))
