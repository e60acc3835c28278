/*
 * The embedded UIs' routes: the Explorer's assets and its settings document
 * ({explorer.path}/settings.json), and the docs site's pages. The serving
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

void api_docs_asset(struct http_request *req)
{
    const struct vt_config *cfg = api_app(req)->cfg;
    struct ui_mount m = {&ui_bundle_docs, cfg->server.prefix, cfg->server.compress, false, NULL};
    ui_serve(req, &m);
}

/* What the Explorer needs to know about this server: where the API is, the
 * environment badge, which optional features are on, and the public part of
 * [explorer.oauth2] (the same as {explorer.path}/config.json; never a
 * secret). Public, like the page itself. */
void api_explorer_settings(struct http_request *req)
{
    const struct vt_config *cfg = api_app(req)->cfg;
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    jw_obj_begin(&w);
    jw_kstr(&w, "prefix", cfg->server.prefix ? cfg->server.prefix : "");
    jw_kstr(&w, "environment", cfg->server.environment);
    jw_kstr(&w, "environment_color", config_environment_color(&cfg->server));
    jw_kbool(&w, "sql", cfg->sql.enabled);
    jw_key(&w, "docs");
    jw_str(&w, cfg->docs.enabled && ui_bundle_docs.n ? cfg->docs.path : NULL);
    jw_kbool(&w, "auth", cfg->auth.enabled);
    jw_key(&w, "oauth2");
    if (cfg->explorer_oauth2.set) {
        const struct oauth2_config *o = &cfg->explorer_oauth2;
        jw_obj_begin(&w);
        jw_kstr(&w, "client_id", o->client_id);
        jw_kstr(&w, "issuer", o->issuer);
        jw_key(&w, "scopes");
        jw_arr_begin(&w);
        for (size_t i = 0; i < o->scopes.len; i++)
            jw_str(&w, o->scopes.items[i]);
        jw_arr_end(&w);
        jw_kbool(&w, "pkce", o->pkce);
        jw_obj_end(&w);
    } else {
        jw_null(&w);
    }
    jw_obj_end(&w);
    http_add_header(req, "Cache-Control", "no-cache");
    http_reply_json(req, 200, &body);
}
