/*
 * Cross-origin requests (CORS, the Fetch standard): whether a browser page on
 * another origin may read our answers. server.cors_origins lists the origins
 * allowed ("https://app.example.com", or "*" for any); empty, the default,
 * sends no CORS header at all, so browsers keep other origins out.
 *
 * The server adapter (server.c, dispatch) asks this module:
 *   - on every request with an allowed Origin: Access-Control-Allow-Origin
 *     (the origin itself), Vary: Origin and Access-Control-Expose-Headers;
 *   - on a preflight (OPTIONS with Access-Control-Request-Method) for a path
 *     that has routes: 204 with the methods those routes take, the request
 *     headers we read, and how long the browser may remember it.
 * No credentials mode: our credentials are headers (Authorization,
 * X-Admin-Token) a page sends explicitly, never cookies.
 * Pure functions, no allocation.
 */
#ifndef VT_HTTP_CORS_H
#define VT_HTTP_CORS_H

#include <stdbool.h>

#include "util/strvec.h"

/* The request headers a cross-origin page may send (preflight answer). */
#define HTTP_CORS_ALLOW_HEADERS                                                          \
    "Accept, Authorization, Content-Type, If-Match, If-None-Match, Range, X-Admin-Token, " \
    "X-Request-Id, MCP-Protocol-Version, Mcp-Session-Id"
/* The response headers it may read. */
#define HTTP_CORS_EXPOSE_HEADERS                                                        \
    "Content-Disposition, Content-Range, ETag, Retry-After, Server-Timing, "           \
    "WWW-Authenticate, X-Dataset-Refreshed-At, X-Page, X-Page-Size, X-Request-Id, "    \
    "X-Total-Count"
#define HTTP_CORS_MAX_AGE "600"

/* Whether the request's Origin value is allowed by `allowed` (items checked
 * at config load: "*", or scheme://host[:port]; compared without regard to
 * case or a trailing '/'). "null" (sent
 * by sandboxed pages and file: URLs) is allowed only when listed exactly. */
bool http_cors_allowed(const struct strvec *allowed, const char *origin);

#endif
