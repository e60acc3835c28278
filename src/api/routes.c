/*
 * The route table (rows in routes.def), the routes mounted where the config
 * says, and the authorize hook the router calls before any handler: the
 * permission each row carries is checked here, once, by auth_authorize().
 */
#include "api/api.h"
#include "mcp/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct http_route routes[] = {
#define ROUTE(methods, pattern, handler, perm, description) \
    {methods, pattern, handler, AUTH_PERM_##perm, description, 0},
#include "api/routes.def"
#undef ROUTE
};

void api_routes(const struct http_route **out_routes, size_t *out_n)
{
    *out_routes = routes;
    *out_n = sizeof routes / sizeof routes[0];
}

/* The mounts that come from the config (/sql, MCP, the Explorer and the docs
 * site; Swagger UI and metrics add their rows here); each row gives whether
 * it is on, its base path, the tail appended to it, and the row. */
struct config_mount {
    bool enabled;
    const char *base;           /* e.g. cfg->metrics.path */
    struct api_mount mount;
};

static size_t config_mounts(const struct vt_config *cfg, struct config_mount *out, size_t cap)
{
    size_t n = 0;
    /* The metrics name every dataset and saved query: public unless [auth]
     * is on, or as metrics.public says. */
    bool metrics_public = cfg->metrics_public_set ? cfg->metrics_public : !cfg->auth.enabled;
    if (n < cap)
        out[n++] = (struct config_mount){
            cfg->sql.enabled, "/api/v1/sql",
            {"", HTTP_POST, api_sql, AUTH_PERM_READ,
             "Read-only SQL (one SELECT) over the registered datasets; JSON, Arrow IPC, CSV or NDJSON.", false}};
    if (n < cap)
        out[n++] = (struct config_mount){
            cfg->mcp.enabled, cfg->mcp.path,
            {"", HTTP_POST, api_mcp, AUTH_PERM_READ,
             "MCP endpoint for AI agents (JSON-RPC 2.0, Streamable HTTP, stateless).", false}};
    if (n < cap)
        out[n++] = (struct config_mount){
            cfg->mcp.enabled && cfg->auth.enabled, "/.well-known/oauth-protected-resource",
            {"", HTTP_GET, api_mcp_resource, AUTH_PERM_PUBLIC,
             "OAuth 2.0 Protected Resource Metadata (RFC 9728) for MCP clients.", true}};
    /* Embedded UIs: {base} redirects to {base}/, {base}/{*} serves files. */
    const struct {
        bool on;
        const char *base;
        http_handler_fn fn;
        const char *what;
    } uis[] = {
        {cfg->explorer.enabled, cfg->explorer.path, api_explorer_asset, "Explorer web UI"},
        {cfg->docs.enabled, cfg->docs.path, api_docs_asset, "Documentation site"},
        {cfg->swagger.enabled, cfg->swagger.path, api_swagger_asset,
         "Swagger UI: explore and try every endpoint"},
    };
    for (size_t i = 0; i < sizeof uis / sizeof uis[0]; i++) {
        if (n + 2 > cap)
            break;
        out[n++] = (struct config_mount){
            uis[i].on, uis[i].base,
            {"", HTTP_GET, uis[i].fn, AUTH_PERM_PUBLIC, uis[i].what, false}};
        out[n++] = (struct config_mount){
            uis[i].on, uis[i].base,
            {"/{*}", HTTP_GET, uis[i].fn, AUTH_PERM_PUBLIC, uis[i].what, false}};
    }
    if (n < cap)
        out[n++] = (struct config_mount){
            cfg->swagger.enabled, cfg->swagger.path,
            {"/openapi.json", HTTP_GET, api_openapi, AUTH_PERM_PUBLIC,
             "The OpenAPI 3.1 document of this server, generated from its route table.", false}};
    if (n < cap)
        out[n++] = (struct config_mount){
            cfg->metrics.enabled, cfg->metrics.path,
            {"", HTTP_GET, api_metrics, metrics_public ? AUTH_PERM_PUBLIC : AUTH_PERM_READ,
             metrics_public ? "Prometheus metrics (text format 0.0.4); not under the prefix, "
                              "unauthenticated."
                            : "Prometheus metrics (text format 0.0.4); not under the prefix. "
                              "They name every dataset, so with [auth] they need a read scope "
                              "(metrics.public = true opens them).",
             true}};
    if (n < cap)
        out[n++] = (struct config_mount){
            cfg->explorer.enabled, cfg->explorer.path,
            {"/config.json", HTTP_GET, api_explorer_config, AUTH_PERM_PUBLIC,
             "The Explorer's settings: API prefix, environment badge, optional features, "
             "auth mode and sign-in ([explorer.oauth2], never a secret).",
             false}};
    return n;
}

void api_route_set_init(struct api_route_set *set)
{
    memset(set, 0, sizeof *set);
}

void api_route_set_release(struct api_route_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->owned[i])
            free((char *)set->rows[i].pattern);
    free(set->rows);
    free(set->owned);
    memset(set, 0, sizeof *set);
}

static int set_push(struct api_route_set *set, struct http_route row, bool owned)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 32;
        struct http_route *rows = realloc(set->rows, cap * sizeof *rows);
        if (!rows)
            return -1;
        set->rows = rows;
        bool *o = realloc(set->owned, cap * sizeof *o);
        if (!o)
            return -1;
        set->owned = o;
        set->cap = cap;
    }
    set->rows[set->n] = row;
    set->owned[set->n] = owned;
    set->n++;
    return 0;
}

int api_route_set_mount(struct api_route_set *set, const char *base, const struct api_mount *m)
{
    size_t bl = strlen(base), tl = strlen(m->tail);
    while (bl && base[bl - 1] == '/')
        bl--; /* "/docs/" + "/{*}" -> "/docs/{*}" */
    char *pattern = malloc(bl + tl + 2);
    if (!pattern)
        return -1;
    memcpy(pattern, base, bl);
    memcpy(pattern + bl, m->tail, tl + 1);
    if (!*pattern)
        memcpy(pattern, "/", 2);
    struct http_route row = {m->methods, pattern, m->handler, m->perm, m->description,
                             m->outside_prefix ? HTTP_ROUTE_ROOT : 0};
    if (set_push(set, row, true) != 0) {
        free(pattern);
        return -1;
    }
    return 0;
}

int api_route_set_build(struct api_route_set *set, const struct vt_config *cfg)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (set_push(set, routes[i], false) != 0)
            return -1;
    struct config_mount mounts[32];
    size_t n = config_mounts(cfg, mounts, sizeof mounts / sizeof mounts[0]);
    for (size_t i = 0; i < n; i++)
        if (mounts[i].enabled && api_route_set_mount(set, mounts[i].base, &mounts[i].mount) != 0)
            return -1;
    /* RFC 9728 §3.1: the metadata's canonical URL has the endpoint's path
     * inserted after the well-known prefix (the challenge names it). */
    if (cfg->mcp.enabled && cfg->auth.enabled) {
        struct strbuf path;
        sb_init(&path, 0);
        mcp_resource_metadata_path(cfg, &path);
        struct api_mount m = {"", HTTP_GET, api_mcp_resource, AUTH_PERM_PUBLIC,
                              "OAuth 2.0 Protected Resource Metadata (RFC 9728) of the MCP "
                              "endpoint, at its path-inserted well-known URL.",
                              true};
        int rc = path.buf && strcmp(path.buf, MCP_PRM_WELL_KNOWN) != 0
                     ? api_route_set_mount(set, path.buf, &m)
                     : 0;
        sb_release(&path);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* RFC 9728 §5.1: the MCP endpoint's 401 names its protected resource
 * metadata, so an MCP client can find the issuer to sign in with (the URL
 * is src/mcp's: only host[:port] characters of the Host header pass). */
static void add_resource_metadata(struct http_request *req, struct strbuf *sb)
{
    struct strbuf url;
    sb_init(&url, 0);
    mcp_resource_metadata_url(req, api_app(req)->cfg, &url);
    sb_addf(sb, ", resource_metadata=\"%s\"", url.buf ? url.buf : "");
    sb_release(&url);
}

enum vt_err api_authorize(struct http_request *req, const struct http_route *route,
                          const char **out_message)
{
    const struct auth_policy *p = &api_app(req)->auth;
    *out_message = NULL;
    if (route->perm == AUTH_PERM_READ && !p->bearer_enabled)
        return VT_ERR_OK; /* the common case costs nothing */
    enum http_method m = http_req_method(req);
    struct auth_credentials cred = {
        .admin_token = route->perm >= AUTH_PERM_RELOAD ? http_req_header(req, "X-Admin-Token")
                                                       : NULL,
        .safe_method = m == HTTP_GET || m == HTTP_HEAD,
    };
    if (p->bearer_enabled)
        cred.authorization = http_req_header_n(req, "Authorization", &cred.authorization_len);
    struct auth_decision d;
    enum vt_err rc = auth_authorize(p, route->perm, &cred, &d);
    *out_message = d.message;
    if (rc == VT_ERR_OK || rc == VT_ERR_NOT_FOUND)
        return rc;
    unsigned methods = route->methods | (route->methods & HTTP_GET ? HTTP_HEAD : 0);
    if (!(methods & m))
        return rc; /* the router answers 405: no challenge on that */
    if (d.challenge != AUTH_CHALLENGE_NONE) {
        struct strbuf sb;
        sb_init(&sb, 8192);
        auth_challenge_format(p, route->perm, &d, &sb);
        if (route->handler == api_mcp)
            add_resource_metadata(req, &sb);
        if (sb.buf)
            http_add_header(req, "WWW-Authenticate", sb.buf);
        sb_release(&sb);
    }
    if (d.retry_after > 0) {
        char ra[24];
        snprintf(ra, sizeof ra, "%d", d.retry_after);
        http_add_header(req, "Retry-After", ra);
    }
    return rc;
}

bool api_may_read(struct http_request *req)
{
    const struct auth_policy *p = &api_app(req)->auth;
    if (!p->bearer_enabled)
        return true;
    struct auth_credentials cred = {
        .authorization = http_req_header(req, "Authorization"),
        .safe_method = true,
    };
    struct auth_decision d;
    return auth_authorize(p, AUTH_PERM_READ, &cred, &d) == VT_ERR_OK;
}

struct api_app *api_app(struct http_request *req)
{
    return http_app(req);
}

/* The MCP endpoint is a front end of its own (src/mcp); it gets what it
 * serves from here. */
void api_mcp(struct http_request *req)
{
    const struct api_app *app = api_app(req);
    struct mcp_env env = {.cfg = app->cfg, .catalog = app->catalog, .queries = app->queries};
    mcp_handle(req, &env);
}

void api_mcp_resource(struct http_request *req)
{
    mcp_protected_resource(req, api_app(req)->cfg);
}
