/*
 * Embedded web UIs: static assets compiled into the binary and served under a
 * mount point (the Explorer, the docs site, Swagger UI). Nothing is read from
 * disk at run time and nothing comes from a CDN.
 *
 * A bundle is generated at build time by scripts/ui-embed.py from a folder of
 * built assets (the Makefile runs it): every file's bytes, its gzip, brotli
 * and zstd forms when smaller, content type, a strong ETag (content hash),
 * whether its name carries a content hash (immutable), and for HTML pages the
 * CSP hashes of their inline scripts. The table is sorted by path.
 *
 * Serving (ui_serve), for the routes {base} and {base}/{*} of a mount:
 *   - {base} alone redirects to {base}/ (pages use relative URLs);
 *   - "" and "dir/" name "index.html" and "dir/index.html"; "dir" redirects
 *     to "dir/" when "dir/index.html" exists;
 *   - the representation is chosen from the precompressed forms by
 *     Accept-Encoding (http_accept_encoding_parse; server.compress = false
 *     sends identity), with Vary: Accept-Encoding and a per-coding ETag;
 *   - If-None-Match gives 304; Cache-Control is a year and `immutable` for
 *     hashed names, `no-cache` (revalidate every time) for the rest;
 *   - every answer carries a Content-Security-Policy (self only, plus the
 *     page's inline-script hashes and the mount's extra connect-src origins),
 *     X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer;
 *   - an unknown file is 404 {"error","code":"not_found"}; with spa_fallback,
 *     an unknown extension-less path redirects to {base}/#/{path} so a
 *     single-page app's deep links land on its own router.
 *
 * Usage (a handler per mount, routes added in config_mounts()):
 *
 *     void api_docs_asset(struct http_request *req) {
 *         struct ui_mount m = {&ui_bundle_docs, cfg->server.prefix, cfg->server.compress,
 *                             false, NULL};
 *         ui_serve(req, &m);
 *     }
 */
#ifndef VT_UI_UI_H
#define VT_UI_UI_H

#include <stdbool.h>
#include <stddef.h>

#include "http/encoding.h"

struct http_request;

struct ui_bytes {
    const char *data;           /* NULL: this form is absent (not smaller) */
    size_t len;
};

struct ui_asset {
    const char *path;           /* "index.html", "assets/index-Bx3k9aZq.js" */
    const char *content_type;
    const char *etag;           /* opaque part (no quotes): a content hash */
    struct ui_bytes form[HTTP_ENC__COUNT]; /* indexed by enum http_encoding */
    bool immutable;             /* the name carries a content hash */
    const char *script_hashes;  /* "'sha256-…' …" for inline scripts, or NULL */
};

struct ui_bundle {
    const char *name;
    const struct ui_asset *assets; /* sorted by path (strcmp) */
    size_t n;
    size_t total[HTTP_ENC__COUNT]; /* bytes of each form, for reports */
};

/* Generated bundles (empty when the build had no assets for them). */
extern const struct ui_bundle ui_bundle_explorer;
extern const struct ui_bundle ui_bundle_docs;
extern const struct ui_bundle ui_bundle_swagger;

struct ui_mount {
    const struct ui_bundle *bundle;
    const char *prefix;         /* server.prefix ("" or "/p"), for redirects */
    bool compress;              /* server.compress */
    bool spa_fallback;
    const char *connect_src;    /* extra CSP connect-src origins, or NULL */
};

/* ------------------------------------------------ pure helpers (tested) */

/* The asset at `path` (exact), or NULL. */
const struct ui_asset *ui_bundle_find(const struct ui_bundle *b, const char *path);

enum ui_resolve {
    UI_FOUND,                   /* *out_asset is set */
    UI_REDIRECT_DIR,            /* add a trailing '/' (dir/index.html exists) */
    UI_SPA,                     /* unknown, extension-less, spa_fallback on */
    UI_MISSING,
};
/* Maps the {*} tail of a request ("" / "a/" / "a/b.js") to an asset. */
enum ui_resolve ui_resolve(const struct ui_bundle *b, const char *tail, bool spa_fallback,
                           const struct ui_asset **out_asset);

/* The form to send for an Accept-Encoding value (NULL: absent): the
 * acceptable present form with the highest q (ties: zstd, br, gzip), else
 * identity. Identity when compress is false. */
enum http_encoding ui_choose_form(const struct ui_asset *a, const char *accept_encoding,
                                  bool compress);

/* Cache-Control for the asset. */
const char *ui_cache_control(const struct ui_asset *a);

/* The Content-Security-Policy for the asset under a mount (malloc'd). */
char *ui_csp(const struct ui_asset *a, const char *connect_src);

/* ----------------------------------------------------------- serving */

/* Answers a GET/HEAD of a mount's {base} or {base}/{*} route. */
void ui_serve(struct http_request *req, const struct ui_mount *m);

#endif
