/*
 * Address classes for outbound connections (util/netaddr.h): every range the
 * S3 client refuses or allows, IPv4-mapped forms included.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "testlib.h"
#include "util/netaddr.h"

static enum util_addr_class of(const char *text)
{
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    if (inet_pton(AF_INET, text, &v4.sin_addr) == 1)
        return util_addr_classify((const struct sockaddr *)&v4);
    if (inet_pton(AF_INET6, text, &v6.sin6_addr) == 1)
        return util_addr_classify((const struct sockaddr *)&v6);
    return (enum util_addr_class)-1;
}

TEST(ipv4_classes)
{
    CHECK_EQ_INT(of("8.8.8.8"), UTIL_ADDR_PUBLIC);
    CHECK_EQ_INT(of("52.216.1.1"), UTIL_ADDR_PUBLIC);
    CHECK_EQ_INT(of("127.0.0.1"), UTIL_ADDR_LOOPBACK);
    CHECK_EQ_INT(of("127.255.0.9"), UTIL_ADDR_LOOPBACK);
    CHECK_EQ_INT(of("10.1.2.3"), UTIL_ADDR_PRIVATE);
    CHECK_EQ_INT(of("172.16.0.1"), UTIL_ADDR_PRIVATE);
    CHECK_EQ_INT(of("172.31.255.255"), UTIL_ADDR_PRIVATE);
    CHECK_EQ_INT(of("172.32.0.1"), UTIL_ADDR_PUBLIC);
    CHECK_EQ_INT(of("192.168.1.1"), UTIL_ADDR_PRIVATE);
    CHECK_EQ_INT(of("100.64.0.1"), UTIL_ADDR_PRIVATE);
    CHECK_EQ_INT(of("169.254.169.254"), UTIL_ADDR_METADATA);
    CHECK_EQ_INT(of("100.100.100.200"), UTIL_ADDR_METADATA);
    CHECK_EQ_INT(of("169.254.1.1"), UTIL_ADDR_LINK_LOCAL);
    CHECK_EQ_INT(of("0.0.0.0"), UTIL_ADDR_RESERVED);
    CHECK_EQ_INT(of("224.0.0.1"), UTIL_ADDR_RESERVED);
    CHECK_EQ_INT(of("255.255.255.255"), UTIL_ADDR_RESERVED);
}

TEST(ipv6_classes)
{
    CHECK_EQ_INT(of("2600:1f18::1"), UTIL_ADDR_PUBLIC);
    CHECK_EQ_INT(of("::1"), UTIL_ADDR_LOOPBACK);
    CHECK_EQ_INT(of("::"), UTIL_ADDR_RESERVED);
    CHECK_EQ_INT(of("fe80::1"), UTIL_ADDR_LINK_LOCAL);
    CHECK_EQ_INT(of("fd00:ec2::254"), UTIL_ADDR_METADATA);
    CHECK_EQ_INT(of("fd12:3456::1"), UTIL_ADDR_PRIVATE);
    CHECK_EQ_INT(of("ff02::1"), UTIL_ADDR_RESERVED);
    /* IPv4 inside IPv6 is judged as IPv4. */
    CHECK_EQ_INT(of("::ffff:169.254.169.254"), UTIL_ADDR_METADATA);
    CHECK_EQ_INT(of("::ffff:127.0.0.1"), UTIL_ADDR_LOOPBACK);
    CHECK_EQ_INT(of("::ffff:8.8.8.8"), UTIL_ADDR_PUBLIC);
    CHECK_EQ_INT(of("64:ff9b::a9fe:a9fe"), UTIL_ADDR_METADATA);
    CHECK_EQ_INT(of("2002:7f00:1::"), UTIL_ADDR_RESERVED);
}

TEST(dialable)
{
    CHECK(util_addr_dialable(UTIL_ADDR_PUBLIC, false));
    CHECK(!util_addr_dialable(UTIL_ADDR_LOOPBACK, false));
    CHECK(util_addr_dialable(UTIL_ADDR_LOOPBACK, true));
    CHECK(util_addr_dialable(UTIL_ADDR_PRIVATE, true));
    CHECK(!util_addr_dialable(UTIL_ADDR_LINK_LOCAL, true));
    CHECK(!util_addr_dialable(UTIL_ADDR_METADATA, true));
    CHECK(!util_addr_dialable(UTIL_ADDR_RESERVED, true));
}

RUN_TESTS(TEST_CASE(ipv4_classes), TEST_CASE(ipv6_classes), TEST_CASE(dialable))
