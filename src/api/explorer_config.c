/*
 * GET {explorer.path}/config.json: what the Explorer needs before it can call
 * the API: where the API is, the environment badge, which optional features
 * are on, whether bearer tokens are required, and how to sign in
 * ([explorer.oauth2]: authorization code with PKCE in the browser). Public,
 * and never carries a secret: a browser app is a public OAuth client, so the
 * config has no client secret to give. A literal route, so it wins over the
 * Explorer's static-asset wildcard under the same path.
 *
 *   {"prefix": "<server.prefix>", "api_base": "<prefix>/api/v1",
 *    "environment": str|null, "environment_color": str, "sql": bool,
 *    "docs": "<docs.path>"|null,
 *    "auth": {"enabled": bool, "anonymous_read": bool},
 *    "oauth2": {"client_id", "issuer", "scopes": [...], "pkce": bool} | null}
 */
#include "api/api.h"
#include "ui/ui.h"

void api_explorer_config(struct http_request *req)
{
    const struct vt_config *cfg = api_app(req)->cfg;
    const struct oauth2_config *o = &cfg->explorer_oauth2;
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
    if (o->set) {
        jw_key(&w, "oauth2");
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
        jw_knull(&w, "oauth2");
    }
    jw_key(&w, "auth");
    jw_obj_begin(&w);
    jw_kbool(&w, "enabled", cfg->auth.enabled);
    jw_kbool(&w, "anonymous_read", cfg->auth.enabled && cfg->auth.anonymous_read);
    jw_obj_end(&w);
    struct strbuf base;
    sb_init(&base, 0);
    sb_adds(&base, cfg->server.prefix ? cfg->server.prefix : "");
    sb_adds(&base, "/api/v1");
    jw_kstr(&w, "api_base", base.buf);
    sb_release(&base);
    jw_obj_end(&w);
    http_add_header(req, "Cache-Control", "no-cache");
    http_reply_json(req, 200, &body);
}
