/* The route table (routes.def) and the mounting of config-placed routes:
 * every row has a description and the permission the spec's map gives it;
 * routes mounted at startup (under and outside server.prefix, wildcard
 * tails) are served by a real server; the authorize hook runs once in the
 * router: 401/403 before the handler, a hidden route is a plain 404 (also
 * for the 405 check). */
#include <string.h>

#include "api/api.h"
#include "http/http_testutil.h"
#include "testlib.h"

TEST(every_route_has_a_description_and_a_permission)
{
    const struct http_route *rows;
    size_t n;
    api_routes(&rows, &n);
    CHECK(n >= 17);
    for (size_t i = 0; i < n; i++) {
        CHECK(rows[i].description != NULL && strlen(rows[i].description) > 10);
        CHECK(rows[i].pattern && rows[i].pattern[0] == '/');
        const char *p = rows[i].pattern;
        bool admin = strstr(p, "reload") || strstr(p, "persist") ||
                     (!strcmp(p, "/api/v1/datasets") && rows[i].methods == HTTP_POST);
        bool probe = !strncmp(p, "/health", 7) || !strcmp(p, "/readyz") || !strcmp(p, "/version");
        bool manage = !strncmp(p, "/api/v1/queries", 15); /* the spec's map: datasets:manage */
        enum auth_perm want = manage  ? AUTH_PERM_MANAGE
                              : admin ? AUTH_PERM_RELOAD
                              : probe ? AUTH_PERM_PUBLIC
                                      : AUTH_PERM_READ;
        if (rows[i].perm != want)
            fprintf(stderr, "  %s: permission %s, want %s\n", p, auth_perm_name(rows[i].perm),
                    auth_perm_name(want));
        CHECK_EQ_INT(rows[i].perm, want);
    }
}

static int hits;
static void hello(struct http_request *req)
{
    hits++;
    struct strbuf b;
    sb_init(&b, 0);
    sb_adds(&b, "{\"route\":\"");
    sb_adds(&b, http_req_route(req));
    sb_adds(&b, "\",\"tail\":\"");
    sb_adds(&b, http_req_param(req, 0) ? http_req_param(req, 0) : "-");
    sb_adds(&b, "\"}");
    http_reply_json(req, 200, &b);
}

static struct auth_policy test_policy;
static enum vt_err test_authorize(struct http_request *req, const struct http_route *route,
                                  const char **out_message)
{
    struct auth_credentials c = {.admin_token = http_req_header(req, "X-Admin-Token")};
    struct auth_decision d;
    enum vt_err rc = auth_authorize(&test_policy, route->perm, &c, &d);
    *out_message = d.message;
    return rc;
}

static void get(int port, const char *method, const char *path, const char *extra, char *buf,
                size_t cap)
{
    char req[512];
    snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n%s\r\n",
             method, path, extra);
    buf[0] = '\0';
    exchange(port, req, buf, cap);
}

TEST(mounted_routes_and_the_authorize_hook)
{
    struct vt_config cfg;
    config_init_defaults(&cfg);
    cfg.server.port = 0;
    free(cfg.server.prefix);
    cfg.server.prefix = strdup("/p");
    auth_admin_set(&test_policy.admin, NULL);

    struct api_route_set set;
    api_route_set_init(&set);
    CHECK_EQ_INT(api_route_set_build(&set, &cfg), 0);
    size_t base = set.n;
    /* As the UI and metrics features will: paths from the config. */
    struct api_mount assets = {"/{*}", HTTP_GET, hello, AUTH_PERM_PUBLIC, "test assets", false};
    struct api_mount metrics = {"", HTTP_GET, hello, AUTH_PERM_PUBLIC, "test metrics", true};
    struct api_mount manage = {"", HTTP_GET | HTTP_DELETE, hello, AUTH_PERM_MANAGE,
                               "test manage", false};
    struct api_mount reload = {"/go", HTTP_POST, hello, AUTH_PERM_RELOAD, "test reload", false};
    CHECK_EQ_INT(api_route_set_mount(&set, "/ui/", &assets), 0);
    CHECK_EQ_INT(api_route_set_mount(&set, "/metrics", &metrics), 0);
    CHECK_EQ_INT(api_route_set_mount(&set, "/q", &manage), 0);
    CHECK_EQ_INT(api_route_set_mount(&set, "/r", &reload), 0);
    CHECK_EQ_INT(set.n, base + 4);
    CHECK_EQ_STR(set.rows[base].pattern, "/ui/{*}");
    CHECK(set.rows[base + 1].flags & HTTP_ROUTE_ROOT);

    struct http_server_options opts = {.cfg = &cfg, .routes = set.rows, .n_routes = set.n,
                                       .authorize = test_authorize};
    struct vt_error err = {0};
    struct http_server *srv = http_server_start(&opts, &err);
    api_route_set_release(&set); /* the server copied the table */
    CHECK(srv != NULL);
    if (!srv)
        return;
    int port = http_server_port(srv);
    char buf[4096];

    get(port, "GET", "/p/ui/css/site.css", "", buf, sizeof buf);
    CHECK_CONTAINS(buf, "200 OK");
    CHECK_CONTAINS(buf, "\"route\":\"/ui/{*}\",\"tail\":\"css/site.css\"");
    get(port, "GET", "/metrics", "", buf, sizeof buf);
    CHECK_CONTAINS(buf, "\"route\":\"/metrics\"");
    get(port, "GET", "/p/metrics", "", buf, sizeof buf);
    CHECK_CONTAINS(buf, "404");

    /* Hidden manage route: 404 not_found for any method, never 405 or 401. */
    hits = 0;
    get(port, "GET", "/p/q", "", buf, sizeof buf);
    CHECK_CONTAINS(buf, "404 Not Found");
    CHECK_CONTAINS(buf, "\"code\":\"not_found\"");
    get(port, "POST", "/p/q", "Content-Length: 0\r\n", buf, sizeof buf);
    CHECK_CONTAINS(buf, "404 Not Found");
    /* Reload without ADMIN_TOKEN: 403 admin_disabled, handler not run. */
    get(port, "POST", "/p/r/go", "Content-Length: 0\r\n", buf, sizeof buf);
    CHECK_CONTAINS(buf, "403 Forbidden");
    CHECK_CONTAINS(buf, "admin_disabled");
    CHECK_EQ_INT(hits, 0);

    /* With a token: the manage route exists; 401 without it, 405 for PUT. */
    auth_admin_set(&test_policy.admin, "tok");
    get(port, "GET", "/p/q", "", buf, sizeof buf);
    CHECK_CONTAINS(buf, "401 Unauthorized");
    get(port, "PUT", "/p/q", "Content-Length: 0\r\n", buf, sizeof buf);
    CHECK_CONTAINS(buf, "405 Method Not Allowed");
    CHECK_CONTAINS(buf, "Allow: GET, HEAD, DELETE");
    get(port, "GET", "/p/q", "X-Admin-Token: tok\r\n", buf, sizeof buf);
    CHECK_CONTAINS(buf, "200 OK");
    get(port, "POST", "/p/r/go", "X-Admin-Token: nope\r\nContent-Length: 0\r\n", buf, sizeof buf);
    CHECK_CONTAINS(buf, "401 Unauthorized");
    get(port, "POST", "/p/r/go", "X-Admin-Token: tok\r\nContent-Length: 0\r\n", buf, sizeof buf);
    CHECK_CONTAINS(buf, "200 OK");
    CHECK_EQ_INT(hits, 2);

    const struct http_route *rows;
    size_t n = http_server_routes(srv, &rows);
    CHECK_EQ_INT(n, base + 4);
    CHECK(http_server_stop(srv, 1000, NULL));
    config_free(&cfg);
}

RUN_TESTS(TEST_CASE(every_route_has_a_description_and_a_permission),
          TEST_CASE(mounted_routes_and_the_authorize_hook))
