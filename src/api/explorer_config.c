/*
 * GET {explorer.path}/config.json: how the Explorer signs in, from
 * [explorer.oauth2] (authorization code with PKCE in the browser):
 *
 *   {"client_id": "...", "issuer": "...", "scopes": [...], "pkce": true}
 *
 * Mounted only when [explorer.oauth2] is given. Public, and never carries a
 * secret: a browser app is a public OAuth client, so the config has no client
 * secret to give. A literal route, so it wins over the Explorer's
 * static-asset wildcard under the same path. The rest of what the page needs
 * (API prefix, whether [auth] is on) is in {explorer.path}/settings.json.
 */
#include "api/api.h"

void api_explorer_config(struct http_request *req)
{
    const struct oauth2_config *o = &api_app(req)->cfg->explorer_oauth2;
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
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
    http_add_header(req, "Cache-Control", "no-cache");
    http_reply_json(req, 200, &body);
}
