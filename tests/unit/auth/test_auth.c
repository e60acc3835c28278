/* The authorization policy (auth_authorize): the spec's permission map for
 * every permission, with and without ADMIN_TOKEN, with and without [auth]. */
#include "auth/auth.h"
#include "testlib.h"

static struct auth_policy policy(const char *token, bool bearer)
{
    struct auth_policy p = {0};
    auth_admin_set(&p.admin, token);
    p.bearer_enabled = bearer;
    return p;
}

static enum vt_err decide(const struct auth_policy *p, enum auth_perm perm, const char *presented)
{
    struct auth_credentials c = {.admin_token = presented};
    struct auth_decision d;
    enum vt_err rc = auth_authorize(p, perm, &c, &d);
    if (rc == VT_ERR_OK)
        CHECK(d.message == NULL);
    else
        CHECK(d.message != NULL && *d.message);
    /* Without [auth] there is no bearer challenge. */
    if (!p->bearer_enabled)
        CHECK_EQ_INT(d.challenge, AUTH_CHALLENGE_NONE);
    return rc;
}

TEST(public_and_read_are_open)
{
    struct auth_policy none = policy(NULL, false), tok = policy("s3cret", false);
    CHECK_EQ_INT(decide(&none, AUTH_PERM_PUBLIC, NULL), VT_ERR_OK);
    CHECK_EQ_INT(decide(&none, AUTH_PERM_READ, NULL), VT_ERR_OK);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_READ, "wrong"), VT_ERR_OK);
    struct auth_decision d;
    CHECK_EQ_INT(auth_authorize(&tok, AUTH_PERM_READ, NULL, &d), VT_ERR_OK);
}

TEST(reload_needs_the_admin_token)
{
    struct auth_policy tok = policy("s3cret", false);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_RELOAD, "s3cret"), VT_ERR_OK);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_RELOAD, NULL), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_RELOAD, ""), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_RELOAD, "s3cre"), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_RELOAD, "s3cret "), VT_ERR_UNAUTHORIZED);
}

TEST(reload_without_admin_token_is_403_admin_disabled)
{
    struct auth_policy none = policy(NULL, false), empty = policy("", false);
    CHECK_EQ_INT(decide(&none, AUTH_PERM_RELOAD, NULL), VT_ERR_ADMIN_DISABLED);
    CHECK_EQ_INT(decide(&none, AUTH_PERM_RELOAD, "anything"), VT_ERR_ADMIN_DISABLED);
    CHECK_EQ_INT(decide(&empty, AUTH_PERM_RELOAD, ""), VT_ERR_ADMIN_DISABLED);
    CHECK_EQ_INT(vt_err_status(VT_ERR_ADMIN_DISABLED), 403);
    CHECK_EQ_INT(vt_err_status(VT_ERR_UNAUTHORIZED), 401);
}

TEST(manage_is_hidden_without_admin_token_or_oidc)
{
    struct auth_policy none = policy(NULL, false);
    CHECK_EQ_INT(decide(&none, AUTH_PERM_MANAGE, NULL), VT_ERR_NOT_FOUND);
    CHECK_EQ_INT(decide(&none, AUTH_PERM_MANAGE, "x"), VT_ERR_NOT_FOUND);
    CHECK_EQ_INT(vt_err_status(VT_ERR_NOT_FOUND), 404);
}

TEST(manage_with_admin_token)
{
    struct auth_policy tok = policy("s3cret", false);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_MANAGE, "s3cret"), VT_ERR_OK);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_MANAGE, NULL), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(decide(&tok, AUTH_PERM_MANAGE, "nope"), VT_ERR_UNAUTHORIZED);
}

TEST(manage_with_oidc_only_is_visible_and_needs_a_token)
{
    /* With [auth] the route exists; without a token nothing passes. */
    struct auth_policy oidc = policy(NULL, true);
    CHECK_EQ_INT(decide(&oidc, AUTH_PERM_MANAGE, NULL), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(decide(&oidc, AUTH_PERM_MANAGE, "x"), VT_ERR_UNAUTHORIZED);
    struct auth_policy both = policy("s3cret", true);
    both.admin_token_fallback = true;
    CHECK_EQ_INT(decide(&both, AUTH_PERM_MANAGE, "s3cret"), VT_ERR_OK);
    CHECK_EQ_INT(decide(&both, AUTH_PERM_RELOAD, "s3cret"), VT_ERR_OK);
    /* admin_token_fallback = false: the admin token no longer opens them. */
    both.admin_token_fallback = false;
    CHECK_EQ_INT(decide(&both, AUTH_PERM_MANAGE, "s3cret"), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(decide(&both, AUTH_PERM_RELOAD, "s3cret"), VT_ERR_UNAUTHORIZED);
}

TEST(bearer_without_verifier_is_503)
{
    /* [auth] on but no keys to check against (a verifier not built). */
    struct auth_policy oidc = policy(NULL, true);
    struct auth_credentials c = {.authorization = "Bearer a.b.c"};
    struct auth_decision d;
    CHECK_EQ_INT(auth_authorize(&oidc, AUTH_PERM_READ, &c, &d), VT_ERR_AUTH_UNAVAILABLE);
    CHECK(d.retry_after > 0);
    CHECK_EQ_INT(vt_err_status(VT_ERR_AUTH_UNAVAILABLE), 503);
    CHECK_EQ_INT(vt_err_status(VT_ERR_INVALID_TOKEN), 401);
    CHECK_EQ_INT(vt_err_status(VT_ERR_INSUFFICIENT_SCOPE), 403);
    CHECK_EQ_STR(vt_err_code(VT_ERR_INSUFFICIENT_SCOPE), "insufficient_scope");
    CHECK_EQ_STR(vt_err_code(VT_ERR_INVALID_TOKEN), "invalid_token");
}

TEST(perm_names)
{
    CHECK_EQ_STR(auth_perm_name(AUTH_PERM_PUBLIC), "public");
    CHECK_EQ_STR(auth_perm_name(AUTH_PERM_READ), "read");
    CHECK_EQ_STR(auth_perm_name(AUTH_PERM_RELOAD), "reload");
    CHECK_EQ_STR(auth_perm_name(AUTH_PERM_MANAGE), "manage");
}

RUN_TESTS(TEST_CASE(public_and_read_are_open), TEST_CASE(reload_needs_the_admin_token),
          TEST_CASE(reload_without_admin_token_is_403_admin_disabled),
          TEST_CASE(manage_is_hidden_without_admin_token_or_oidc),
          TEST_CASE(manage_with_admin_token), TEST_CASE(manage_with_oidc_only_is_visible_and_needs_a_token),
          TEST_CASE(bearer_without_verifier_is_503),
          TEST_CASE(perm_names))
