/*
 * The pure half of src/ui (see ui.h): lookup in a bundle's sorted table, the
 * mapping of a request's {*} tail to a file, the choice of a precompressed
 * form by Accept-Encoding, Cache-Control and the Content-Security-Policy.
 * No HTTP server here, so unit tests and the fuzz target (fuzz_ui) link it
 * alone.
 */
#include "ui/ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
