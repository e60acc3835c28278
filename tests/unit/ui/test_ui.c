/*
 * Embedded UI bundles (src/ui/ui.c): lookup in the sorted table, mapping of
 * request tails to files (index pages, directory redirects, the SPA
 * fallback), the choice of a precompressed form, Cache-Control and the CSP.
 * The generated bundles are checked against their source files by
 * tests/e2e/test_ui_assets.py.
 */
#include <stdlib.h>

#include "testlib.h"
#include "ui/ui.h"

#define FORMS(id, gz, br, zs)                                                    \
    {{"x", 1}, {gz ? "g" : NULL, gz ? 1 : 0}, {br ? "b" : NULL, br ? 1 : 0},     \
     {zs ? "z" : NULL, zs ? 1 : 0}}

static const struct ui_asset assets[] = {
    {"a/index.html", "text/html", "t1", FORMS(1, 1, 1, 0), false, NULL},
    {"assets/app-Bx3k9aZq.js", "text/javascript", "t2", FORMS(2, 1, 1, 1), true, NULL},
    {"font.woff2", "font/woff2", "t3", FORMS(3, 0, 0, 0), false, NULL},
    {"index.html", "text/html", "t4", FORMS(4, 1, 1, 1), false, "'sha256-abc='"},
    {"logo.svg", "image/svg+xml", "t5", FORMS(5, 1, 0, 0), false, NULL},
};
static const struct ui_bundle bundle = {"t", assets, sizeof assets / sizeof assets[0], {0}};
static const struct ui_bundle empty = {"e", NULL, 0, {0}};

TEST(find)
{
    for (size_t i = 0; i < bundle.n; i++)
        CHECK(ui_bundle_find(&bundle, assets[i].path) == &assets[i]);
    CHECK(ui_bundle_find(&bundle, "") == NULL);
    CHECK(ui_bundle_find(&bundle, "a") == NULL);
    CHECK(ui_bundle_find(&bundle, "index.htm") == NULL);
    CHECK(ui_bundle_find(&bundle, "zzz") == NULL);
    CHECK(ui_bundle_find(&bundle, "INDEX.HTML") == NULL); /* exact, case-sensitive */
    CHECK(ui_bundle_find(&empty, "index.html") == NULL);
}

TEST(resolve)
{
    const struct ui_asset *a;
    CHECK_EQ_INT(ui_resolve(&bundle, "", false, &a), UI_FOUND);
    CHECK_EQ_STR(a->path, "index.html");
    CHECK_EQ_INT(ui_resolve(&bundle, "a/", false, &a), UI_FOUND);
    CHECK_EQ_STR(a->path, "a/index.html");
    CHECK_EQ_INT(ui_resolve(&bundle, "a", false, &a), UI_REDIRECT_DIR);
    CHECK(a == NULL);
    CHECK_EQ_INT(ui_resolve(&bundle, "logo.svg", false, &a), UI_FOUND);
    CHECK_EQ_STR(a->path, "logo.svg");
    CHECK_EQ_INT(ui_resolve(&bundle, "b/", false, &a), UI_MISSING);
    CHECK_EQ_INT(ui_resolve(&bundle, "missing.js", false, &a), UI_MISSING);
    CHECK_EQ_INT(ui_resolve(&bundle, "datasets/trips", false, &a), UI_MISSING);
    /* the SPA fallback takes extension-less paths only: a missing script stays 404 */
    CHECK_EQ_INT(ui_resolve(&bundle, "datasets/trips", true, &a), UI_SPA);
    CHECK_EQ_INT(ui_resolve(&bundle, "datasets", true, &a), UI_SPA);
    CHECK_EQ_INT(ui_resolve(&bundle, "assets/missing.js", true, &a), UI_MISSING);
    CHECK_EQ_INT(ui_resolve(&bundle, "v1.2/x", true, &a), UI_SPA); /* dot in a directory */
    CHECK_EQ_INT(ui_resolve(&empty, "", true, &a), UI_MISSING);
    /* a tail longer than any path is simply missing */
    char longp[1200];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    CHECK_EQ_INT(ui_resolve(&bundle, longp, false, &a), UI_MISSING);
    longp[sizeof longp - 2] = '/';
    CHECK_EQ_INT(ui_resolve(&bundle, longp, false, &a), UI_MISSING);
}

TEST(choose_form)
{
    const struct ui_asset *all = &assets[3], *gz_only = &assets[4], *none = &assets[2];
    const struct ui_asset *no_zstd = &assets[0];
    CHECK_EQ_INT(ui_choose_form(all, NULL, true), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(ui_choose_form(all, "", true), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(ui_choose_form(all, "gzip, deflate, br, zstd", true), HTTP_ENC_ZSTD);
    CHECK_EQ_INT(ui_choose_form(all, "gzip, deflate, br, zstd", false), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(ui_choose_form(no_zstd, "gzip, deflate, br, zstd", true), HTTP_ENC_BR);
    CHECK_EQ_INT(ui_choose_form(gz_only, "gzip, br", true), HTTP_ENC_GZIP);
    CHECK_EQ_INT(ui_choose_form(none, "gzip, br", true), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(ui_choose_form(all, "gzip;q=1, br;q=0.5", true), HTTP_ENC_GZIP);
    CHECK_EQ_INT(ui_choose_form(all, "br;q=0, gzip;q=0", true), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(ui_choose_form(all, "*", true), HTTP_ENC_ZSTD);
    CHECK_EQ_INT(ui_choose_form(all, "*;q=0.5, zstd;q=0", true), HTTP_ENC_BR);
    CHECK_EQ_INT(ui_choose_form(all, "identity;q=1, gzip;q=0.2", true), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(ui_choose_form(all, "x-gzip", true), HTTP_ENC_GZIP);
    CHECK_EQ_INT(ui_choose_form(all, "GZIP;Q=0.9, bogus;;=, br;q=2", true), HTTP_ENC_GZIP);
}

TEST(cache_control)
{
    CHECK_EQ_STR(ui_cache_control(&assets[1]), "public, max-age=31536000, immutable");
    CHECK_EQ_STR(ui_cache_control(&assets[3]), "no-cache");
}

TEST(csp)
{
    char *c = ui_csp(&assets[3], NULL);
    CHECK_CONTAINS(c, "default-src 'self'");
    CHECK_CONTAINS(c, "script-src 'self' 'sha256-abc=';");
    CHECK_CONTAINS(c, "connect-src 'self';");
    CHECK_CONTAINS(c, "object-src 'none'");
    CHECK_CONTAINS(c, "frame-ancestors 'none'");
    CHECK(!strstr(c, "unsafe-eval"));
    CHECK(!strstr(c, "script-src 'self' 'unsafe-inline'"));
    free(c);
    c = ui_csp(&assets[0], "https://idp.example:8443");
    CHECK_CONTAINS(c, "script-src 'self';");
    CHECK_CONTAINS(c, "connect-src 'self' https://idp.example:8443;");
    free(c);
    c = ui_csp(NULL, NULL);
    CHECK_CONTAINS(c, "script-src 'self';");
    free(c);
}

RUN_TESTS(TEST_CASE(find), TEST_CASE(resolve), TEST_CASE(choose_form), TEST_CASE(cache_control),
          TEST_CASE(csp))
