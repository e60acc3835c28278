/*
 * Which Host and Origin values the server answers (DNS rebinding;
 * docs/architecture.md "Hosts and origins"). Pure functions over header text, no I/O.
 *
 * DNS rebinding: a page on evil.example.com makes its name resolve to
 * 127.0.0.1 and then calls "its own" origin, which is our loopback listener;
 * the browser sends Host: evil.example.com (and Origin: http://evil...). A
 * server that only answers the names it is known by defeats it, whatever the
 * route. So:
 *
 *   Host      allowed when it is a loopback name or address (localhost,
 *             127.0.0.0/8, [::1]), when server.allowed_hosts names it
 *             ("name", "*.suffix" for the names under suffix, "*" for any),
 *             and, on a listener that is not loopback, when it is an IP
 *             address (a browser sending an address as Host is on that
 *             address's own origin, never rebinding) or when allowed_hosts
 *             is empty (a public listener answers whatever name it is given
 *             until the operator lists them). A loopback listener answers
 *             loopback names and the listed ones only. No Host at all
 *             (HTTP/1.0) is allowed; HTTP/1.1 requires one (framing).
 *   Origin    checked by the routes browsers may call with side effects
 *             (MCP): allowed when absent, when its host is a loopback name
 *             or address, when server.allowed_origins (or the route's own
 *             list) names it ("scheme://host[:port]" exactly, any case; "*"
 *             for any), or when it is the request's own origin (its
 *             authority equals Host) and that Host is listed by name in
 *             server.allowed_hosts (so a proxy's public name works without
 *             listing it twice, while a rebound name never is).
 *
 * Ports never decide anything: an attacker controls the port as freely as
 * the page, so Host and Origin are compared on the host part.
 */
#ifndef VT_HTTP_HOSTS_H
#define VT_HTTP_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/strvec.h"

struct http_hosts {
    const struct strvec *allowed_hosts;   /* server.allowed_hosts (borrowed) */
    const struct strvec *allowed_origins; /* server.allowed_origins (borrowed) */
    bool loopback_listener;               /* the listening socket is on loopback */
};

/* The host part of a Host value or of an Origin's authority: "[::1]:80" ->
 * "[::1]", "Example.COM.:8080" -> "example.com" (lower case, one trailing dot
 * dropped). Writes at most cap-1 bytes and a NUL. False when the value is not
 * a well-formed host[:port] (empty, bad port, stray characters, too long). */
bool http_host_name(const char *value, char *out, size_t cap);

/* True for "localhost", a dotted-quad 127.x.y.z, and a bracketed IPv6
 * loopback address ("[::1]", "[::ffff:127.0.0.1]"); `name` as returned by
 * http_host_name. */
bool http_host_is_loopback(const char *name);

/* True for an IPv4 dotted quad or a bracketed IPv6 address. */
bool http_host_is_ip(const char *name);

/* True when `pattern` (an allowed_hosts item) matches `name`. */
bool http_host_pattern_match(const char *pattern, const char *name);

/* The Host rule above; `host` is the header value, NULL when absent. */
bool http_hosts_host_ok(const struct http_hosts *h, const char *host);

/* The Origin rule above. `origin` and `host` are header values (NULL when
 * absent); `extra` is a route's own list of allowed origins (may be NULL). */
bool http_hosts_origin_ok(const struct http_hosts *h, const char *origin, const char *host,
                          const struct strvec *extra);

#endif
