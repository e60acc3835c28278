/*
 * CORS origin checks (cors.h). The answer headers are written by the server
 * adapter; this file only decides.
 */
#include "http/cors.h"

#include <string.h>
#include <strings.h>

/* An allowed item against a browser's Origin: ASCII case-insensitive (browsers
 * send the host in lower case; a config may not), a trailing '/' of the item
 * ignored. */
static bool same_origin(const char *item, const char *origin)
{
    size_t n = strlen(item);
    if (n && item[n - 1] == '/')
        n--;
    return strlen(origin) == n && strncasecmp(item, origin, n) == 0;
}

bool http_cors_allowed(const struct strvec *allowed, const char *origin)
{
    if (!allowed || !origin || !*origin)
        return false;
    for (size_t i = 0; i < allowed->len; i++) {
        const char *a = allowed->items[i];
        if (same_origin(a, origin))
            return true;
        if (strcmp(a, "*") == 0 && strcmp(origin, "null") != 0)
            return true;
    }
    return false;
}
