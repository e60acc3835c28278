/*
 * TEMPORARY: a no-op metrics hook until the metrics module lands.
 */
#include "http/http_internal.h"

void http_metrics_observe(const struct http_request *req, int status, double seconds)
{
    (void)req;
    (void)status;
    (void)seconds;
}
