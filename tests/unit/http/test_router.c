/* The router: literal segments win over captures whatever the table order,
 * {*} captures the rest of the path (also empty after a trailing slash, never
 * without the slash), 405 with Allow for a path that only other methods
 * match, and the authorize hook runs before the handler with the route's
 * permission. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "http/server.h"
#include "testlib.h"

static unsigned last_perm;

static void echo(struct http_request *req, const char *who)
{
    struct strbuf b;
    sb_init(&b, 0);
    sb_addf(&b, "{\"who\":\"%s\",\"p0\":\"%s\",\"p1\":\"%s\"}", who,
            http_req_param(req, 0) ? http_req_param(req, 0) : "-",
            http_req_param(req, 1) ? http_req_param(req, 1) : "-");
    http_reply_json(req, 200, &b);
}

static void h_capture(struct http_request *req) { echo(req, "capture"); }
static void h_literal(struct http_request *req) { echo(req, "literal"); }
static void h_assets(struct http_request *req) { echo(req, "assets"); }
static void h_admin(struct http_request *req) { echo(req, "admin"); }

static bool authorize(struct http_request *req, unsigned perm)
{
    last_perm = perm;
    if (perm == 7) {
        http_reply_error(req, VT_ERR_UNAUTHORIZED, "no");
        return false;
    }
    return true;
}

static size_t fetch(int port, const char *method, const char *path, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char req[512];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                     method, path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return 0;
    }
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fd, buf + got, cap - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    return got;
}

TEST(most_specific_route_wins_and_wildcards_capture_the_rest)
{
    struct vt_config cfg;
    config_init_defaults(&cfg);
    cfg.server.port = 0;
    /* Captures first on purpose: order must not matter. */
    static const struct http_route routes[] = {
        {HTTP_GET, "/d/{name}/x", h_capture, 1, "capture"},
        {HTTP_GET, "/d/all/x", h_literal, 2, "literal"},
        {HTTP_GET, "/ui/{*}", h_assets, 3, "assets"},
        {HTTP_POST, "/d/{name}/admin", h_admin, 7, "refused by the hook"},
    };
    struct vt_error err = {0};
    struct http_server_options opts = {.cfg = &cfg, .routes = routes, .n_routes = 4,
                                       .authorize = authorize};
    struct http_server *srv = http_server_start(&opts, &err);
    CHECK(srv != NULL);
    if (!srv)
        return;
    int port = http_server_port(srv);
    char buf[4096];

    fetch(port, "GET", "/d/all/x", buf, sizeof buf);
    CHECK_CONTAINS(buf, "\"who\":\"literal\"");
    CHECK_EQ_INT(last_perm, 2);
    fetch(port, "GET", "/d/trips/x", buf, sizeof buf);
    CHECK_CONTAINS(buf, "\"who\":\"capture\",\"p0\":\"trips\"");
    CHECK_EQ_INT(last_perm, 1);

    fetch(port, "GET", "/ui/js/app.js", buf, sizeof buf);
    CHECK_CONTAINS(buf, "\"who\":\"assets\",\"p0\":\"js/app.js\"");
    fetch(port, "GET", "/ui/", buf, sizeof buf);
    CHECK_CONTAINS(buf, "\"who\":\"assets\",\"p0\":\"\"");
    fetch(port, "GET", "/ui", buf, sizeof buf);
    CHECK_CONTAINS(buf, "404");

    fetch(port, "GET", "/d/trips/admin", buf, sizeof buf);
    CHECK_CONTAINS(buf, "405");
    CHECK_CONTAINS(buf, "Allow: POST");
    fetch(port, "POST", "/d/trips/admin", buf, sizeof buf);
    CHECK_CONTAINS(buf, "401");
    CHECK(strstr(buf, "\"who\"") == NULL); /* the handler never ran */

    http_server_stop(srv, 1000, NULL);
    config_free(&cfg);
}

int main(void)
{
    static const struct tl_case cases[] = {
        TEST_CASE(most_specific_route_wins_and_wildcards_capture_the_rest)};
    return tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
}
