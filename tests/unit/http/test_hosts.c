/*
 * Host and Origin rules against DNS rebinding (src/http/hosts.c): the host
 * part of header values, loopback names, allowed_hosts patterns, and the two
 * rules on loopback and public listeners (issue 21 item 2).
 */
#include "http/hosts.h"
#include "testlib.h"

static struct strvec list(const char *a, const char *b, const char *c)
{
    struct strvec v = {0};
    const char *items[] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (items[i])
            strvec_push(&v, items[i]);
    return v;
}

TEST(host_name)
{
    char b[64];
    CHECK(http_host_name("localhost", b, sizeof b) && !strcmp(b, "localhost"));
    CHECK(http_host_name("LocalHost:8080", b, sizeof b) && !strcmp(b, "localhost"));
    CHECK(http_host_name("localhost.:80", b, sizeof b) && !strcmp(b, "localhost"));
    CHECK(http_host_name("[::1]:8080", b, sizeof b) && !strcmp(b, "[::1]"));
    CHECK(http_host_name("127.0.0.1:", b, sizeof b) && !strcmp(b, "127.0.0.1"));
    CHECK(http_host_name("Example.COM", b, sizeof b) && !strcmp(b, "example.com"));
    CHECK(!http_host_name("", b, sizeof b));
    CHECK(!http_host_name(":80", b, sizeof b));
    CHECK(!http_host_name("a b", b, sizeof b));
    CHECK(!http_host_name("a:80x", b, sizeof b));
    CHECK(!http_host_name("a:123456", b, sizeof b));
    CHECK(!http_host_name("[::1", b, sizeof b));
    CHECK(!http_host_name("[]", b, sizeof b));
    CHECK(!http_host_name("[::1]x", b, sizeof b));
    CHECK(!http_host_name("[zz::1]", b, sizeof b));
    CHECK(!http_host_name("user@evil.com", b, sizeof b));
    CHECK(!http_host_name("evil.com/x", b, sizeof b));
    CHECK(!http_host_name(NULL, b, sizeof b));
    CHECK(!http_host_name("abcdefgh", b, 8)); /* does not fit */
}

TEST(loopback_names)
{
    CHECK(http_host_is_loopback("localhost"));
    CHECK(http_host_is_loopback("127.0.0.1"));
    CHECK(http_host_is_loopback("127.255.3.4"));
    CHECK(http_host_is_loopback("[::1]"));
    CHECK(http_host_is_loopback("[0:0:0:0:0:0:0:1]"));
    CHECK(http_host_is_loopback("[::ffff:127.0.0.1]"));
    CHECK(!http_host_is_loopback("[::ffff:10.0.0.1]"));
    CHECK(!http_host_is_loopback("127.1"));           /* not a dotted quad */
    CHECK(!http_host_is_loopback("127.0.0.1.evil.com"));
    CHECK(!http_host_is_loopback("localhost.evil.com"));
    CHECK(!http_host_is_loopback("evil.localhost"));
    CHECK(!http_host_is_loopback("128.0.0.1"));
    CHECK(!http_host_is_loopback("0.0.0.0"));
    CHECK(http_host_is_ip("10.1.2.3") && http_host_is_ip("[2001:db8::1]"));
    CHECK(!http_host_is_ip("example.com") && !http_host_is_ip("10.1.2"));
}

TEST(patterns)
{
    CHECK(http_host_pattern_match("*", "anything.example"));
    CHECK(http_host_pattern_match("data.example.com", "data.example.com"));
    CHECK(http_host_pattern_match("Data.Example.com", "data.example.com"));
    CHECK(!http_host_pattern_match("data.example.com", "xdata.example.com"));
    CHECK(http_host_pattern_match("*.example.com", "a.example.com"));
    CHECK(http_host_pattern_match("*.example.com", "a.b.example.com"));
    CHECK(!http_host_pattern_match("*.example.com", "example.com"));
    CHECK(!http_host_pattern_match("*.example.com", "evilexample.com"));
    CHECK(http_host_pattern_match("[2001:db8::1]", "[2001:db8::1]"));
}

TEST(host_rule_on_loopback)
{
    struct strvec none = {0};
    struct http_hosts h = {.allowed_hosts = &none, .allowed_origins = &none,
                           .loopback_listener = true};
    CHECK(http_hosts_host_ok(&h, NULL)); /* HTTP/1.0 without Host */
    CHECK(http_hosts_host_ok(&h, "localhost:8080"));
    CHECK(http_hosts_host_ok(&h, "127.0.0.1:8080"));
    CHECK(http_hosts_host_ok(&h, "[::1]:8080"));
    CHECK(!http_hosts_host_ok(&h, "evil.example.com"));
    CHECK(!http_hosts_host_ok(&h, "evil.example.com:8080"));
    CHECK(!http_hosts_host_ok(&h, "10.0.0.1")); /* loopback listener: loopback names only */
    CHECK(!http_hosts_host_ok(&h, ""));
    CHECK(!http_hosts_host_ok(&h, "localhost evil"));
    struct strvec named = list("data.example.com", "*.corp.example", NULL);
    h.allowed_hosts = &named;
    CHECK(http_hosts_host_ok(&h, "data.example.com"));
    CHECK(http_hosts_host_ok(&h, "x.corp.example:443"));
    CHECK(!http_hosts_host_ok(&h, "corp.example"));
    CHECK(!http_hosts_host_ok(&h, "evil.example.com"));
    struct strvec any = list("*", NULL, NULL);
    h.allowed_hosts = &any;
    CHECK(http_hosts_host_ok(&h, "evil.example.com"));
    strvec_free(&named);
    strvec_free(&any);
}

/* A loopback Host value is remembered per thread: the next request with
 * the same value skips the parse; any other value is judged afresh. */
TEST(host_rule_repeated_values)
{
    struct strvec none = {0};
    struct http_hosts h = {.allowed_hosts = &none, .allowed_origins = &none,
                           .loopback_listener = true};
    for (int i = 0; i < 3; i++) {
        CHECK(http_hosts_host_ok(&h, "127.0.0.1:8080"));
        CHECK(!http_hosts_host_ok(&h, "127.0.0.1:8080x"));
        CHECK(!http_hosts_host_ok(&h, "127.0.0.1:8080 "));
        CHECK(http_hosts_host_ok(&h, "127.0.0.1:808")); /* another port: loopback still */
        CHECK(!http_hosts_host_ok(&h, "127.0.0.1.evil:8080"));
        CHECK(!http_hosts_host_ok(&h, "evil.example.com"));
        CHECK(http_hosts_host_ok(&h, "localhost"));
        CHECK(!http_hosts_host_ok(&h, "localhost.evil"));
        CHECK(!http_hosts_host_ok(&h, ""));
    }
    /* too long to remember: judged every time */
    char longname[200];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(!http_hosts_host_ok(&h, longname));
    CHECK(!http_hosts_host_ok(&h, longname));
}

TEST(host_rule_on_public_listener)
{
    struct strvec none = {0};
    struct http_hosts h = {.allowed_hosts = &none, .allowed_origins = &none,
                           .loopback_listener = false};
    CHECK(http_hosts_host_ok(&h, "anything.example"));
    struct strvec named = list("data.example.com", NULL, NULL);
    h.allowed_hosts = &named;
    CHECK(http_hosts_host_ok(&h, "data.example.com"));
    CHECK(http_hosts_host_ok(&h, "10.1.2.3:8080"));   /* addresses: probes, never rebinding */
    CHECK(http_hosts_host_ok(&h, "[2001:db8::1]:80"));
    CHECK(http_hosts_host_ok(&h, "localhost"));
    CHECK(!http_hosts_host_ok(&h, "evil.example.com"));
    strvec_free(&named);
}

TEST(origin_rule)
{
    struct strvec none = {0};
    struct http_hosts h = {.allowed_hosts = &none, .allowed_origins = &none,
                           .loopback_listener = true};
    CHECK(http_hosts_origin_ok(&h, NULL, "localhost", NULL));
    CHECK(http_hosts_origin_ok(&h, "http://localhost:8080", "localhost:8080", NULL));
    CHECK(http_hosts_origin_ok(&h, "http://127.0.0.1:3000", "localhost:8080", NULL));
    CHECK(http_hosts_origin_ok(&h, "https://[::1]", "localhost:8080", NULL));
    /* the rebinding pair: same origin as Host, but Host is nobody we know */
    CHECK(!http_hosts_origin_ok(&h, "http://evil.example.com", "evil.example.com", NULL));
    CHECK(!http_hosts_origin_ok(&h, "http://evil.example.com", "localhost:8080", NULL));
    CHECK(!http_hosts_origin_ok(&h, "null", "localhost:8080", NULL));
    CHECK(!http_hosts_origin_ok(&h, "http://localhost.evil.com", "localhost", NULL));
    CHECK(!http_hosts_origin_ok(&h, "http://localhost/path", "localhost", NULL));
    CHECK(!http_hosts_origin_ok(&h, "garbage", "localhost", NULL));
    struct strvec origins = list("https://app.example.com", "HTTP://Other.example:8443/", NULL);
    h.allowed_origins = &origins;
    CHECK(http_hosts_origin_ok(&h, "https://app.example.com", "localhost", NULL));
    CHECK(http_hosts_origin_ok(&h, "https://APP.example.com/", "localhost", NULL));
    CHECK(http_hosts_origin_ok(&h, "http://other.example:8443", "localhost", NULL));
    CHECK(!http_hosts_origin_ok(&h, "http://app.example.com", "localhost", NULL)); /* scheme */
    CHECK(!http_hosts_origin_ok(&h, "https://app.example.com:444", "localhost", NULL));
    struct strvec extra = list("https://agent.example", NULL, NULL);
    CHECK(http_hosts_origin_ok(&h, "https://agent.example", "localhost", &extra));
    CHECK(!http_hosts_origin_ok(&h, "https://agent.example", "localhost", NULL));
    struct strvec nulls = list("null", NULL, NULL);
    CHECK(http_hosts_origin_ok(&h, "null", "localhost", &nulls));
    /* a listed host's own origin */
    struct strvec named = list("data.example.com", "*.corp.example", NULL);
    h.allowed_hosts = &named;
    CHECK(http_hosts_origin_ok(&h, "https://data.example.com", "data.example.com", NULL));
    CHECK(!http_hosts_origin_ok(&h, "https://data.example.com", "localhost", NULL));
    CHECK(!http_hosts_origin_ok(&h, "https://x.corp.example", "x.corp.example", NULL));
    struct strvec any = list("*", NULL, NULL);
    h.allowed_origins = &any;
    CHECK(http_hosts_origin_ok(&h, "https://whoever.example", "localhost", NULL));
    strvec_free(&origins);
    strvec_free(&extra);
    strvec_free(&nulls);
    strvec_free(&named);
    strvec_free(&any);
}

RUN_TESTS(TEST_CASE(host_name), TEST_CASE(loopback_names), TEST_CASE(patterns),
          TEST_CASE(host_rule_on_loopback), TEST_CASE(host_rule_repeated_values),
          TEST_CASE(host_rule_on_public_listener),
          TEST_CASE(origin_rule))
