/*
 * The route table (routes.def) as the router's array, and the authorize hook
 * the router calls before every handler: it reads the request's credentials
 * and asks src/auth whether the route's permission is met.
 */
#include "api/api.h"

static const struct http_route routes[] = {
#define ROUTE(methods, pattern, handler, perm, summary) \
    {methods, pattern, handler, AUTH_PERM_##perm, summary},
#include "api/routes.def"
#undef ROUTE
};

void api_routes(const struct http_route **out_routes, size_t *out_n)
{
    *out_routes = routes;
    *out_n = sizeof routes / sizeof routes[0];
}

bool api_authorize(struct http_request *req, unsigned perm)
{
    struct app *app = api_app(req);
    if (!auth_needs_credentials(&app->auth, (enum auth_perm)perm))
        return true;
    struct auth_credentials cred = {
        .admin_token = http_req_header(req, "X-Admin-Token"),
        .authorization = http_req_header(req, "Authorization"),
        .read_only_method = http_req_method(req) & (HTTP_GET | HTTP_HEAD),
    };
    struct vt_error err = {0};
    if (auth_authorize(&app->auth, (enum auth_perm)perm, &cred, &err) == VT_ERR_OK)
        return true;
    http_reply_vterr(req, &err);
    return false;
}

struct app *api_app(struct http_request *req)
{
    return http_app(req);
}
