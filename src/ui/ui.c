/*
 * Serving embedded UI bundles (see ui.h): path resolution, the choice of a
 * precompressed form, caching and security headers. The bytes live in the
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

const struct ui_asset *ui_bundle_find(const struct ui_bundle *b, const char *path)
{
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(path, b->assets[mid].path);
        if (c == 0)
            return &b->assets[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* Looks up `dir` + "index.html" (dir is "" or ends with '/'). */
static const struct ui_asset *find_index(const struct ui_bundle *b, const char *dir, size_t len)
{
    static const char idx[] = "index.html";
    char buf[512];
    if (len + sizeof idx > sizeof buf)
        return NULL;
    memcpy(buf, dir, len);
    memcpy(buf + len, idx, sizeof idx);
    return ui_bundle_find(b, buf);
}

enum ui_resolve ui_resolve(const struct ui_bundle *b, const char *tail, bool spa_fallback,
                           const struct ui_asset **out_asset)
{
    *out_asset = NULL;
    size_t len = strlen(tail);
    if (len == 0 || tail[len - 1] == '/') {
        *out_asset = find_index(b, tail, len);
    } else {
        *out_asset = ui_bundle_find(b, tail);
        if (!*out_asset) {
            char dir[512];
            if (len + 1 < sizeof dir) {
                memcpy(dir, tail, len);
                dir[len] = '/';
                if (find_index(b, dir, len + 1))
                    return UI_REDIRECT_DIR;
            }
        }
    }
    if (*out_asset)
        return UI_FOUND;
    const char *last = strrchr(tail, '/');
    last = last ? last + 1 : tail;
    if (spa_fallback && b->n && !strchr(last, '.'))
        return UI_SPA;
    return UI_MISSING;
}

enum http_encoding ui_choose_form(const struct ui_asset *a, const char *accept_encoding,
                                  bool compress)
{
    if (!compress || !accept_encoding)
        return HTTP_ENC_IDENTITY;
    struct http_accept_encoding ae;
    http_accept_encoding_parse(accept_encoding, &ae);
    /* Highest q among the forms we hold; ties go to the later coding of the
     * enum (zstd > br > gzip), as in http_accept_encoding_pick. */
    enum http_encoding best = HTTP_ENC_IDENTITY;
    int best_q = 0;
    for (int e = HTTP_ENC_GZIP; e < HTTP_ENC__COUNT; e++) {
        if (!a->form[e].data)
            continue;
        int q = ae.q[e] != HTTP_Q_UNLISTED ? ae.q[e] : ae.star_q;
        if (q > 0 && q >= best_q) {
            best = (enum http_encoding)e;
            best_q = q;
        }
    }
    if (best == HTTP_ENC_IDENTITY)
        return best;
    /* identity named with a higher q than every coding wins (rare, allowed). */
    int qi = ae.q[HTTP_ENC_IDENTITY];
    if (qi != HTTP_Q_UNLISTED && qi > best_q)
        return HTTP_ENC_IDENTITY;
    return best;
}

const char *ui_cache_control(const struct ui_asset *a)
{
    return a->immutable ? "public, max-age=31536000, immutable" : "no-cache";
}

char *ui_csp(const struct ui_asset *a, const char *connect_src)
{
    const char *hashes = a && a->script_hashes ? a->script_hashes : "";
    const char *extra = connect_src ? connect_src : "";
    const char *fmt = "default-src 'self'; script-src 'self'%s%s; style-src 'self' "
                      "'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
                      "connect-src 'self'%s%s; worker-src 'self'; object-src 'none'; "
                      "base-uri 'self'; form-action 'self'; frame-ancestors 'none'";
    int n = snprintf(NULL, 0, fmt, *hashes ? " " : "", hashes, *extra ? " " : "", extra);
    char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (out)
        snprintf(out, (size_t)n + 1, fmt, *hashes ? " " : "", hashes, *extra ? " " : "", extra);
    return out;
}

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
