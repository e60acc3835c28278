/* The permission map of auth_authorize (auth.h) with and without
 * ADMIN_TOKEN, and the route table: every route has a summary and a
 * permission. */
#include <stdlib.h>

#include "api/api.h"
#include "auth/auth.h"
#include "testlib.h"

static enum vt_err ask(const struct auth_ctx *a, enum auth_perm p, const char *token)
{
    struct auth_credentials c = {.admin_token = token, .read_only_method = false};
    struct vt_error err = {0};
    return auth_authorize(a, p, &c, &err);
}

TEST(without_admin_token)
{
    unsetenv("ADMIN_TOKEN");
    struct auth_config cfg = {0};
    struct auth_ctx a;
    auth_init(&a, &cfg);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_PUBLIC, NULL), VT_ERR_OK);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_READ, NULL), VT_ERR_OK);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_RELOAD, NULL), VT_ERR_ADMIN_DISABLED);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_RELOAD, "x"), VT_ERR_ADMIN_DISABLED);
    /* Saved-queries routes are hidden when nothing could ever unlock them. */
    CHECK_EQ_INT(ask(&a, AUTH_PERM_MANAGE, NULL), VT_ERR_NOT_FOUND);
    /* ... but exist (and refuse) once bearer auth is configured. */
    cfg.enabled = true;
    CHECK_EQ_INT(ask(&a, AUTH_PERM_MANAGE, NULL), VT_ERR_ADMIN_DISABLED);
    auth_release(&a);
}

TEST(with_admin_token)
{
    setenv("ADMIN_TOKEN", "s3cret", 1);
    struct auth_config cfg = {0};
    struct auth_ctx a;
    auth_init(&a, &cfg);
    unsetenv("ADMIN_TOKEN");
    CHECK_EQ_INT(ask(&a, AUTH_PERM_RELOAD, NULL), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_RELOAD, ""), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_RELOAD, "s3cre"), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_RELOAD, "s3cret"), VT_ERR_OK);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_MANAGE, NULL), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(ask(&a, AUTH_PERM_MANAGE, "s3cret"), VT_ERR_OK);
    auth_release(&a);
}

TEST(every_route_has_a_summary_and_a_permission)
{
    const struct http_route *routes;
    size_t n;
    api_routes(&routes, &n);
    CHECK(n >= 17);
    for (size_t i = 0; i < n; i++) {
        CHECK(routes[i].summary && strlen(routes[i].summary) > 10);
        CHECK(routes[i].perm <= AUTH_PERM_MANAGE);
        CHECK(strcmp(auth_perm_name((enum auth_perm)routes[i].perm), "unknown") != 0);
        /* Probes are public; everything under /api/v1 needs at least READ. */
        if (!strncmp(routes[i].pattern, "/api/", 5))
            CHECK(routes[i].perm != AUTH_PERM_PUBLIC);
    }
}

int main(void)
{
    static const struct tl_case cases[] = {TEST_CASE(without_admin_token),
                                           TEST_CASE(with_admin_token),
                                           TEST_CASE(every_route_has_a_summary_and_a_permission)};
    return tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
}
