/*
 * What kind of address a socket is about to dial, for the outbound
 * connections the service makes on behalf of its configuration (S3, and any
 * other fetch that must not reach cloud metadata or the host's own services
 * when a request chose the destination).
 */
#ifndef VT_UTIL_NETADDR_H
#define VT_UTIL_NETADDR_H

#include <stdbool.h>
#include <sys/socket.h>

enum util_addr_class {
    UTIL_ADDR_PUBLIC,
    UTIL_ADDR_LOOPBACK,         /* 127/8, ::1 */
    UTIL_ADDR_PRIVATE,          /* 10/8, 172.16/12, 192.168/16, 100.64/10 (CGNAT), fc00::/7 */
    UTIL_ADDR_LINK_LOCAL,       /* 169.254/16, fe80::/10 */
    UTIL_ADDR_METADATA,         /* cloud instance metadata: 169.254.169.254, fd00:ec2::254,
                                 * 100.100.100.200, 192.0.0.192 */
    UTIL_ADDR_RESERVED,         /* unspecified, multicast, broadcast, 0/8, 240/4, other
                                 * special-purpose ranges; unknown families */
};

/* The class of an IPv4 or IPv6 socket address (IPv4-mapped and IPv4-
 * compatible IPv6 addresses are classed by their IPv4 address). */
enum util_addr_class util_addr_classify(const struct sockaddr *sa);
const char *util_addr_class_name(enum util_addr_class c);
/* Link-local, metadata and reserved addresses are never dialled; loopback and
 * private ones only when `allow_private`. */
bool util_addr_dialable(enum util_addr_class c, bool allow_private);

#endif
