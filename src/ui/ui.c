/*
 * Serving embedded UI bundles (see ui.h): redirects, 404s, caching and
 * security headers around the pure helpers of assets.c. The bytes live in the
 * generated bundle tables and are handed to the HTTP layer without a copy.
 * Static asset routes are not a hot path, but they answer without locks,
 * allocations beyond the request arena, or compression work.
 */
#include "ui/ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/conditional.h"
#include "http/server.h"

/* {prefix}{route base}: the route pattern minus its "/{*}" tail. */
static char *mount_base(struct http_request *req, const struct ui_mount *m)
{
    const char *pat = http_req_route(req);
    size_t n = strlen(pat);
    if (n >= 4 && !strcmp(pat + n - 4, "/{*}"))
        n -= 4;
    return arena_sprintf(http_req_arena(req), "%s%.*s", m->prefix ? m->prefix : "", (int)n, pat);
}

static void redirect(struct http_request *req, int status, const char *location)
{
    http_add_header(req, "Location", location);
    http_add_header(req, "Cache-Control", "no-cache");
    http_reply_static(req, status, NULL, "", 0);
}

static void security_headers(struct http_request *req, const struct ui_asset *a,
                             const struct ui_mount *m)
{
    char *csp = ui_csp(a, m->connect_src);
    if (csp) {
        http_add_header(req, "Content-Security-Policy", csp);
        free(csp);
    }
    http_add_header(req, "X-Content-Type-Options", "nosniff");
    http_add_header(req, "Referrer-Policy", "no-referrer");
}

void ui_serve(struct http_request *req, const struct ui_mount *m)
{
    const struct ui_bundle *b = m->bundle;
    const char *tail = http_req_param(req, 0);
    struct arena *ar = http_req_arena(req);
    if (!b->n) {
        http_reply_error(req, VT_ERR_NOT_FOUND, "this build does not include this UI");
        return;
    }
    if (!tail) { /* the route {base} without a trailing slash */
        redirect(req, 301, arena_sprintf(ar, "%s/", mount_base(req, m)));
        return;
    }
    const struct ui_asset *a;
    switch (ui_resolve(b, tail, m->spa_fallback, &a)) {
    case UI_FOUND:
        break;
    case UI_REDIRECT_DIR:
        redirect(req, 301, arena_sprintf(ar, "%s/%s/", mount_base(req, m), tail));
        return;
    case UI_SPA:
        redirect(req, 302, arena_sprintf(ar, "%s/#/%s", mount_base(req, m), tail));
        return;
    case UI_MISSING:
        http_reply_error(req, VT_ERR_NOT_FOUND, "no such file");
        return;
    }

    enum http_encoding enc =
        ui_choose_form(a, http_req_header(req, "Accept-Encoding"), m->compress);
    bool varies = m->compress && (a->form[HTTP_ENC_GZIP].data ||
                                           a->form[HTTP_ENC_BR].data ||
                                           a->form[HTTP_ENC_ZSTD].data);
    const char *coding = http_encoding_header_value(enc);
    char etag[HTTP_ETAG_MAX];
    char opaque[HTTP_ETAG_MAX];
    snprintf(opaque, sizeof opaque, "%s%s%s", a->etag, coding ? "-" : "", coding ? coding : "");
    if (http_etag_format(etag, opaque) != 0)
        etag[0] = '\0';

    security_headers(req, a, m);
    http_add_header(req, "Cache-Control", ui_cache_control(a));
    if (varies)
        http_add_header(req, "Vary", "Accept-Encoding");
    if (etag[0])
        http_add_header(req, "ETag", etag);

    enum http_precond pre =
        etag[0] ? http_preconditions(true, http_req_header(req, "If-Match"),
                                     http_req_header(req, "If-None-Match"), etag)
                : HTTP_PRECOND_PASS;
    if (pre == HTTP_PRECOND_NOT_MODIFIED) {
        http_reply_static(req, 304, NULL, "", 0);
        return;
    }
    if (pre == HTTP_PRECOND_FAILED) {
        http_reply_error(req, VT_ERR_PRECONDITION_FAILED, "If-Match does not match this file");
        return;
    }
    if (coding)
        http_add_header(req, "Content-Encoding", coding);
    http_reply_static(req, 200, a->content_type, a->form[enc].data, a->form[enc].len);
}
