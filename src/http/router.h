/*
 * The router behind http_server: the route table in match order, request
 * paths split into percent-decoded segments, and matching. Pure code (no
 * sockets), so it is unit-tested and fuzzed on its own.
 *
 * Order: the table is sorted once, at start, so that a literal segment wins
 * over {x} and {x} over {*} whatever the order of the rows; rows of equal
 * shape keep their table order.
 */
#ifndef VT_HTTP_ROUTER_H
#define VT_HTTP_ROUTER_H

#include <stddef.h>

#include "http/server.h"
#include "util/arena.h"
#include "util/errors.h"

struct http_router;

/* Copies the rows (strings included). `root` rows are flagged HTTP_ROUTE_ROOT.
 * `prefix` is server.prefix ("" or "/a/b"). Fails on a malformed pattern. */
struct http_router *http_router_create(const struct http_route *routes, size_t n,
                                       const struct http_route *root, size_t n_root,
                                       const char *prefix, struct vt_error *err);
void http_router_destroy(struct http_router *r);
/* The rows in match order. */
size_t http_router_rows(const struct http_router *r, const struct http_route **out_rows);

/* A request path as decoded segments: "/a/b%2Fc/" -> ["a", "b/c", ""]. */
struct http_path {
    char **seg;
    size_t n;
};

/* Splits the path part of a request target (up to '?') and percent-decodes
 * each segment. VT_ERR_MALFORMED_REQUEST when the target does not start with
 * '/', has a bad %-escape, or decodes to a NUL byte. */
enum vt_err http_path_parse(struct arena *a, const char *target, struct http_path *out,
                            const char **out_message);

/* The next row at or after *pos whose pattern matches `path` (any method);
 * *pos moves past it. Captures go to out_params (allocated in `a`; the {*}
 * tail is the remaining segments joined with '/'). NULL when none is left. */
const struct http_route *http_router_next(const struct http_router *r, const struct http_path *path,
                                          size_t *pos, struct arena *a,
                                          const char *out_params[HTTP_MAX_PARAMS]);

#endif
