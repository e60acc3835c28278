/*
 * The authorize hook's policy: one function answers, for every route, whether
 * the presented credentials meet the route's permission (the map is in
 * auth.h). Bearer tokens extend the READ/RELOAD/MANAGE rows when [auth] is
 * enabled; the admin token rules stay as they are.
 */
#include "auth/auth.h"

const char *auth_perm_name(enum auth_perm p)
{
    switch (p) {
    case AUTH_PERM_PUBLIC: return "public";
    case AUTH_PERM_READ: return "read";
    case AUTH_PERM_RELOAD: return "reload";
    case AUTH_PERM_MANAGE: return "manage";
    }
    return "unknown";
}

void auth_init(struct auth_ctx *a, const struct auth_config *cfg)
{
    a->cfg = cfg;
    auth_admin_init(&a->admin);
}

void auth_release(struct auth_ctx *a)
{
    (void)a;
}

static enum vt_err admin_only(const struct auth_ctx *a, const struct auth_credentials *cred,
                              struct vt_error *err)
{
    enum vt_err rc = auth_admin_check(&a->admin, cred->admin_token);
    if (rc == VT_ERR_ADMIN_DISABLED)
        return vt_error_set(err, rc, "admin operations are disabled: ADMIN_TOKEN is not set");
    if (rc != VT_ERR_OK)
        return vt_error_set(err, rc, "missing or invalid X-Admin-Token");
    return VT_ERR_OK;
}

bool auth_needs_credentials(const struct auth_ctx *a, enum auth_perm perm)
{
    (void)a;
    return perm != AUTH_PERM_PUBLIC && perm != AUTH_PERM_READ;
}

enum vt_err auth_authorize(const struct auth_ctx *a, enum auth_perm perm,
                           const struct auth_credentials *cred, struct vt_error *err)
{
    switch (perm) {
    case AUTH_PERM_PUBLIC:
    case AUTH_PERM_READ:
        return VT_ERR_OK;
    case AUTH_PERM_RELOAD:
        return admin_only(a, cred, err);
    case AUTH_PERM_MANAGE:
        if (!a->admin.configured && !(a->cfg && a->cfg->enabled))
            return vt_error_set(err, VT_ERR_NOT_FOUND, "no such route");
        return admin_only(a, cred, err);
    }
    return vt_error_set(err, VT_ERR_FORBIDDEN, "unknown permission");
}
