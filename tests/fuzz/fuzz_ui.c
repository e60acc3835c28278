/*
 * libFuzzer target for the embedded-asset helpers (src/ui/assets.c): the
 * first line of the input is a request's {*} tail, the rest an
 * Accept-Encoding value. Checks: a found asset is the one named (or its
 * index.html), a redirect only when the directory's index exists, SPA only
 * for an extension-less miss; the chosen form exists and is acceptable.
 * Build: make fuzz.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"

static const struct ui_asset assets[] = {
    {"a/b/index.html", "text/html", "t0", {{"x", 1}, {"g", 1}, {NULL, 0}, {NULL, 0}}, false, NULL},
    {"a/index.html", "text/html", "t1", {{"x", 1}, {"g", 1}, {"b", 1}, {NULL, 0}}, false, NULL},
    {"assets/x-1.js", "text/javascript", "t2", {{"x", 1}, {"g", 1}, {"b", 1}, {"z", 1}}, true, NULL},
    {"index.html", "text/html", "t3", {{"x", 1}, {NULL, 0}, {NULL, 0}, {"z", 1}}, false, "'sha256-x'"},
    {"x.png", "image/png", "t4", {{"x", 1}, {NULL, 0}, {NULL, 0}, {NULL, 0}}, false, NULL},
};
static const struct ui_bundle bundle = {"f", assets, sizeof assets / sizeof assets[0], {0}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    memcpy(in, data, size);
    in[size] = '\0';
    char *nl = memchr(in, '\n', size);
    const char *ae = NULL;
    if (nl) {
        *nl = '\0';
        ae = nl + 1;
    }
    const char *tail = in;
    size_t len = strlen(tail);

    for (int spa = 0; spa < 2; spa++) {
        const struct ui_asset *a;
        enum ui_resolve r = ui_resolve(&bundle, tail, spa, &a);
        if ((r == UI_FOUND) != (a != NULL))
            abort();
        if (r == UI_FOUND) {
            bool dir = len == 0 || tail[len - 1] == '/';
            size_t pl = strlen(a->path);
            if (dir ? (pl != len + 10 || memcmp(a->path, tail, len) ||
                       strcmp(a->path + len, "index.html"))
                    : strcmp(a->path, tail))
                abort();
        }
        if (r == UI_SPA && (!spa || strchr(strrchr(tail, '/') ? strrchr(tail, '/') : tail, '.')))
            abort();
        if (r == UI_REDIRECT_DIR) {
            char buf[600];
            if (len + 12 > sizeof buf)
                abort();
            memcpy(buf, tail, len);
            memcpy(buf + len, "/index.html", 12);
            if (!ui_bundle_find(&bundle, buf))
                abort();
        }
    }
    for (size_t i = 0; i < bundle.n; i++) {
        enum http_encoding e = ui_choose_form(&assets[i], ae, true);
        if ((int)e < 0 || e >= HTTP_ENC__COUNT || !assets[i].form[e].data)
            abort();
        if (e != HTTP_ENC_IDENTITY) {
            struct http_accept_encoding p;
            http_accept_encoding_parse(ae, &p);
            int q = p.q[e] != HTTP_Q_UNLISTED ? p.q[e] : p.star_q;
            if (q <= 0)
                abort();
        }
        if (ui_choose_form(&assets[i], ae, false) != HTTP_ENC_IDENTITY)
            abort();
    }
    char *csp = ui_csp(&assets[3], tail);
    if (!csp || !strstr(csp, "default-src 'self'"))
        abort();
    free(csp);
    free(in);
    return 0;
}
