/*
 * The embedded UIs' routes: the Explorer's assets (its settings document,
 * {explorer.path}/config.json, is explorer_config.c), Swagger UI's and the
 * docs site's pages. The serving
 * itself is src/ui; this file only fills each mount from the config.
 */
#include <string.h>

#include "api/api.h"
#include "ui/ui.h"

/* "https://idp.example/realms/x" -> "https://idp.example" (the CSP
 * connect-src source the PKCE flow fetches from), in the request arena. */
static const char *url_origin(struct http_request *req, const char *url)
{
    if (!url)
        return NULL;
    const char *p = strstr(url, "://");
    if (!p)
        return NULL;
    size_t n = (size_t)(p + 3 - url);
    n += strcspn(url + n, "/?#");
    for (size_t i = 0; i < n; i++) /* never break out of the CSP header */
        if (url[i] == ';' || url[i] == ',' || url[i] == ' ' || url[i] == '\'' ||
            (unsigned char)url[i] < 0x21 || (unsigned char)url[i] > 0x7e)
            return NULL;
    return arena_strndup(http_req_arena(req), url, n);
}

void api_explorer_asset(struct http_request *req)
{
    const struct vt_config *cfg = api_app(req)->cfg;
    struct ui_mount m = {&ui_bundle_explorer, cfg->server.prefix, cfg->server.compress, true,
                         cfg->explorer_oauth2.set
                             ? url_origin(req, cfg->explorer_oauth2.issuer)
                             : NULL};
    ui_serve(req, &m);
}

/* Swagger UI at swagger.path; its openapi.json is api_openapi (openapi.c). */
void api_swagger_asset(struct http_request *req)
{
    const struct vt_config *cfg = api_app(req)->cfg;
    struct ui_mount m = {&ui_bundle_swagger, cfg->server.prefix, cfg->server.compress, false,
                         NULL};
    ui_serve(req, &m);
}

void api_docs_asset(struct http_request *req)
{
    const struct vt_config *cfg = api_app(req)->cfg;
    struct ui_mount m = {&ui_bundle_docs, cfg->server.prefix, cfg->server.compress, false, NULL};
    ui_serve(req, &m);
}
