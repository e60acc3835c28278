/*
 * Authentication and authorization: the admin token (X-Admin-Token against
 * $ADMIN_TOKEN) and, when [auth] is enabled, bearer tokens (OIDC/OAuth2 JWTs)
 * with scopes. The router asks one question per request, auth_authorize():
 * may these credentials use a route that needs this permission? Front ends
 * that are not HTTP routes (the MCP tools, which run behind the /mcp route)
 * ask the same question with the same credentials.
 *
 * The permission map (spec "Authentication", DESIGN.md "Permissions"):
 *   PUBLIC  probes, /metrics, static UI assets: always allowed
 *   READ    listing, status, schema, query, count, stream, export, /sql, MCP:
 *           allowed while bearer auth is off
 *   RELOAD  reload, reload-all, registration, persist, config reload:
 *           X-Admin-Token = ADMIN_TOKEN (403 admin_disabled when ADMIN_TOKEN
 *           is unset, 401 when the header is missing or wrong)
 *   MANAGE  /api/v1/queries: X-Admin-Token; hidden (404, as if the route did
 *           not exist) when neither ADMIN_TOKEN nor [auth] is configured
 */
#ifndef VT_AUTH_AUTH_H
#define VT_AUTH_AUTH_H

#include <stdbool.h>

#include "config/config.h"
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

/* What a route needs: the permission column of the route table. */
enum auth_perm { AUTH_PERM_PUBLIC, AUTH_PERM_READ, AUTH_PERM_RELOAD, AUTH_PERM_MANAGE };

const char *auth_perm_name(enum auth_perm p);

/* Everything authorization decides on, once per process. */
struct auth_ctx {
    const struct auth_config *cfg;  /* [auth] */
    struct auth_admin admin;
};

void auth_init(struct auth_ctx *a, const struct auth_config *cfg);
void auth_release(struct auth_ctx *a);

/* What a request presented. */
struct auth_credentials {
    const char *admin_token;        /* X-Admin-Token, or NULL */
    const char *authorization;      /* Authorization header, or NULL */
    bool read_only_method;          /* GET or HEAD (anonymous_read opens only those) */
};

/* False when the permission is met whatever the request presents (public
 * routes; reads while bearer auth is off): the caller may skip reading the
 * credentials and auth_authorize. */
bool auth_needs_credentials(const struct auth_ctx *a, enum auth_perm perm);

/* VT_ERR_OK when allowed; otherwise the error to answer with (message in
 * err): UNAUTHORIZED (401), ADMIN_DISABLED or FORBIDDEN (403), or NOT_FOUND
 * for a route that must look absent. */
enum vt_err auth_authorize(const struct auth_ctx *a, enum auth_perm perm,
                           const struct auth_credentials *cred, struct vt_error *err);

#endif
