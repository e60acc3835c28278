/*
 * What the HTTP adapter needs from outside libmicrohttpd that is not a public
 * module API: the per-request metrics hook. Not for other modules.
 */
#ifndef VT_HTTP_INTERNAL_H
#define VT_HTTP_INTERNAL_H

#include <stddef.h>

#include "config/config.h"
#include "http/server.h"
#include "util/strbuf.h"

/* Called once per completed request (route pattern, status, seconds). */
void http_metrics_observe(const struct http_request *req, int status, double seconds);

#endif
