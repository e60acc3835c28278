/*
 * The authorization policy: the spec's permission map as one function. The
 * router calls it once per request with the route's permission, before any
 * handler runs, so no handler checks credentials itself.
 *
 *   public, read  open (bearer scopes for reads come with [auth], issue 12)
 *   reload        X-Admin-Token = ADMIN_TOKEN; 403 admin_disabled when
 *                 ADMIN_TOKEN is unset, 401 when missing or wrong
 *   manage        X-Admin-Token = ADMIN_TOKEN; hidden (404, as if absent)
 *                 when neither ADMIN_TOKEN nor OIDC is configured
 */
#include "auth/auth.h"

const char *auth_perm_name(enum auth_perm perm)
{
    switch (perm) {
    case AUTH_PERM_PUBLIC: return "public";
    case AUTH_PERM_READ: return "read";
    case AUTH_PERM_RELOAD: return "reload";
    case AUTH_PERM_MANAGE: return "manage";
    }
    return "unknown";
}

static enum vt_err admin_decision(const struct auth_policy *p, const char *presented,
                                  const char **out_message)
{
    enum vt_err rc = auth_admin_check(&p->admin, presented);
    if (rc == VT_ERR_ADMIN_DISABLED)
        *out_message = "admin operations are disabled: ADMIN_TOKEN is not set";
    else if (rc != VT_ERR_OK)
        *out_message = "missing or invalid X-Admin-Token";
    return rc;
}

enum vt_err auth_authorize(const struct auth_policy *p, enum auth_perm perm,
                           const struct auth_credentials *cred, const char **out_message)
{
    static const struct auth_credentials none = {0};
    if (!cred)
        cred = &none;
    *out_message = NULL;
    switch (perm) {
    case AUTH_PERM_PUBLIC:
    case AUTH_PERM_READ:
        return VT_ERR_OK;
    case AUTH_PERM_RELOAD:
        return admin_decision(p, cred->admin_token, out_message);
    case AUTH_PERM_MANAGE:
        if (!p->admin.configured && !p->bearer_enabled) {
            *out_message = "no such route";
            return VT_ERR_NOT_FOUND;
        }
        if (!p->admin.configured) {
            /* Only bearer tokens could grant it, and they are not verified
             * yet: nothing presented can pass. */
            *out_message = "missing or invalid credentials";
            return VT_ERR_UNAUTHORIZED;
        }
        return admin_decision(p, cred->admin_token, out_message);
    }
    *out_message = "unknown permission";
    return VT_ERR_FORBIDDEN;
}
