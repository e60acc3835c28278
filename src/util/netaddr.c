/*
 * Address classification for outbound connections (see netaddr.h). Callers
 * run it on every socket libcurl opens, after DNS, so a name that resolves
 * differently from one connection to the next (DNS rebinding) is judged by
 * the address actually dialled.
 */
#include "util/netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

static enum util_addr_class classify_v4(uint32_t a)
{
    uint8_t b0 = (uint8_t)(a >> 24), b1 = (uint8_t)(a >> 16);
    /* 169.254.169.254 (AWS, GCP, Azure), 100.100.100.200 (Alibaba), 192.0.0.192 (Oracle) */
    if (a == 0xA9FEA9FEu || a == 0x646464C8u || a == 0xC00000C0u)
        return UTIL_ADDR_METADATA;
    if (b0 == 127)
        return UTIL_ADDR_LOOPBACK;
    if (b0 == 169 && b1 == 254)
        return UTIL_ADDR_LINK_LOCAL;
    if (b0 == 10 || (b0 == 172 && (b1 & 0xF0) == 16) || (b0 == 192 && b1 == 168) ||
        (b0 == 100 && (b1 & 0xC0) == 64))
        return UTIL_ADDR_PRIVATE;
    if (b0 == 0 || b0 >= 224 || (b0 == 192 && b1 == 0 && (uint8_t)(a >> 8) == 0))
        return UTIL_ADDR_RESERVED; /* this network, multicast, 240/4, broadcast, 192.0.0/24 */
    return UTIL_ADDR_PUBLIC;
}

static enum util_addr_class classify_v6(const unsigned char b[16])
{
    static const unsigned char zero10[10] = {0};
    static const unsigned char metadata[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
                                               0,    0,    0,    0,    0, 0, 0x02, 0x54};
    if (memcmp(b, zero10, 10) == 0 && ((b[10] == 0xff && b[11] == 0xff) ||
                                       (b[10] == 0 && b[11] == 0 && (b[12] | b[13]))))
        return classify_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
                           (uint32_t)b[14] << 8 | b[15]); /* ::ffff:a.b.c.d, ::a.b.c.d */
    if (memcmp(b, metadata, 16) == 0)
        return UTIL_ADDR_METADATA;
    bool zero15 = true;
    for (int i = 0; i < 15; i++)
        zero15 = zero15 && b[i] == 0;
    if (zero15)
        return b[15] == 1 ? UTIL_ADDR_LOOPBACK : UTIL_ADDR_RESERVED; /* ::1, :: */
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return UTIL_ADDR_LINK_LOCAL;
    if ((b[0] & 0xfe) == 0xfc)
        return UTIL_ADDR_PRIVATE; /* unique local fc00::/7 */
    if (b[0] == 0xff || (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0))
        return UTIL_ADDR_RESERVED; /* multicast, deprecated site-local */
    if (b[0] == 0x20 && b[1] == 0x02)
        return classify_v4((uint32_t)b[2] << 24 | (uint32_t)b[3] << 16 | (uint32_t)b[4] << 8 |
                           b[5]) == UTIL_ADDR_PUBLIC
                   ? UTIL_ADDR_PUBLIC
                   : UTIL_ADDR_RESERVED; /* 6to4 wrapping a non-public IPv4 */
    if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b)
        return classify_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
                           (uint32_t)b[14] << 8 | b[15]); /* NAT64 64:ff9b::/96 */
    return UTIL_ADDR_PUBLIC;
}

enum util_addr_class util_addr_classify(const struct sockaddr *sa)
{
    if (sa && sa->sa_family == AF_INET)
        return classify_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa && sa->sa_family == AF_INET6)
        return classify_v6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
    return UTIL_ADDR_RESERVED;
}

const char *util_addr_class_name(enum util_addr_class c)
{
    switch (c) {
    case UTIL_ADDR_PUBLIC: return "public";
    case UTIL_ADDR_LOOPBACK: return "loopback";
    case UTIL_ADDR_PRIVATE: return "private";
    case UTIL_ADDR_LINK_LOCAL: return "link-local";
    case UTIL_ADDR_METADATA: return "cloud metadata";
    case UTIL_ADDR_RESERVED: return "reserved";
    }
    return "reserved";
}

bool util_addr_dialable(enum util_addr_class c, bool allow_private)
{
    return c == UTIL_ADDR_PUBLIC ||
           (allow_private && (c == UTIL_ADDR_LOOPBACK || c == UTIL_ADDR_PRIVATE));
}
