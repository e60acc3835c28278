/*
 * CORS origin checks (cors.h). The answer headers are written by the server
 * adapter; this file only decides.
 */
#include "http/cors.h"

#include <string.h>

bool http_cors_allowed(const struct strvec *allowed, const char *origin)
{
    if (!allowed || !origin || !*origin)
        return false;
    for (size_t i = 0; i < allowed->len; i++) {
        const char *a = allowed->items[i];
        if (strcmp(a, origin) == 0)
            return true;
        if (strcmp(a, "*") == 0 && strcmp(origin, "null") != 0)
            return true;
    }
    return false;
}
