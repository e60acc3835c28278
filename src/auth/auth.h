/*
 * Authentication: the admin token (X-Admin-Token against $ADMIN_TOKEN) and,
 * when [auth] is enabled, bearer tokens (OIDC/OAuth2 JWTs) with scopes.
 */
#ifndef VT_AUTH_AUTH_H
#define VT_AUTH_AUTH_H

#include <stdbool.h>

#include "util/errors.h"

struct auth_admin {
    bool configured;            /* ADMIN_TOKEN was set (non-empty) at startup */
    unsigned char digest[32];   /* SHA-256 of the token; the token itself is not kept */
};

/* Reads ADMIN_TOKEN once at startup. */
void auth_admin_init(struct auth_admin *a);
/* Checks a presented X-Admin-Token value (may be NULL). Returns VT_ERR_OK,
 * VT_ERR_ADMIN_DISABLED (no ADMIN_TOKEN: 403 for every call), or
 * VT_ERR_UNAUTHORIZED (missing, empty or wrong). Constant time in the token. */
enum vt_err auth_admin_check(const struct auth_admin *a, const char *presented);

#endif
