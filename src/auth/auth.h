/*
 * Authentication and authorization: who may call which route.
 *
 * Every route carries the permission it needs (enum auth_perm, in the route
 * table); the router asks auth_authorize() once per request, before the
 * handler runs. Today the credentials are the admin token (X-Admin-Token
 * against $ADMIN_TOKEN); bearer tokens (OIDC/OAuth2 JWTs with scopes, when
 * [auth] is enabled) extend the same policy function.
 */
#ifndef VT_AUTH_AUTH_H
#define VT_AUTH_AUTH_H

#include <stdbool.h>

#include "util/errors.h"

/* The permission a route needs (the spec's permission map). */
enum auth_perm {
    AUTH_PERM_PUBLIC = 0,       /* probes, metrics, static UI assets */
    AUTH_PERM_READ,             /* listings, status, schema, query, count, export */
    AUTH_PERM_RELOAD,           /* reload, reload-all, registration, persist, config reload */
    AUTH_PERM_MANAGE,           /* /queries (saved queries) */
};

/* "public", "read", "reload", "manage" (for docs and the OpenAPI document). */
const char *auth_perm_name(enum auth_perm perm);

struct auth_admin {
    bool configured;            /* ADMIN_TOKEN was set (non-empty) at startup */
    unsigned char digest[32];   /* SHA-256 of the token; the token itself is not kept */
};

/* Reads ADMIN_TOKEN once at startup. */
void auth_admin_init(struct auth_admin *a);
/* Sets the admin token from a value (NULL or "" = not configured). */
void auth_admin_set(struct auth_admin *a, const char *token);
/* Checks a presented X-Admin-Token value (may be NULL). Returns VT_ERR_OK,
 * VT_ERR_ADMIN_DISABLED (no ADMIN_TOKEN: 403 for every call), or
 * VT_ERR_UNAUTHORIZED (missing, empty or wrong). Constant time in the token. */
enum vt_err auth_admin_check(const struct auth_admin *a, const char *presented);

/* What the server was configured with: the policy's inputs. */
struct auth_policy {
    struct auth_admin admin;
    bool bearer_enabled;        /* [auth] enabled (bearer tokens; not verified yet) */
};

/* What a request presents. Any field may be NULL. */
struct auth_credentials {
    const char *admin_token;    /* X-Admin-Token */
    const char *authorization;  /* Authorization (bearer tokens, issue 12) */
};

/* The decision for one request to a route needing `perm`: VT_ERR_OK to run
 * the handler, or the error to answer with (*out_message says why).
 * VT_ERR_NOT_FOUND means the route is hidden: answer exactly as if it did not
 * exist (saved-queries routes with neither ADMIN_TOKEN nor OIDC configured). */
enum vt_err auth_authorize(const struct auth_policy *p, enum auth_perm perm,
                           const struct auth_credentials *cred, const char **out_message);

#endif
