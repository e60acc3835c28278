/*
 * The authorization policy: the spec's permission map as one function. The
 * router calls it once per request with the route's permission, before any
 * handler runs, so no handler checks credentials itself.
 *
 *   public   open: probes, metrics, static UI assets, discovery documents
 *   read     open without [auth]; with it, a bearer token carrying a scope
 *            of read_scopes, except GET/HEAD when anonymous_read is true
 *   reload   X-Admin-Token = ADMIN_TOKEN (while admin_token_fallback, when
 *            [auth] is on), or a bearer token with a scope of reload_scopes.
 *            Without [auth]: 403 admin_disabled when ADMIN_TOKEN is unset,
 *            401 when the token is missing or wrong
 *   manage   the same with the scope datasets:manage; hidden (404, as if
 *            absent) when neither ADMIN_TOKEN nor [auth] is configured
 *
 * Refusals (RFC 6750 §3): no usable credential → 401 with a Bearer challenge
 * (when [auth] is on); a token that does not verify → 401 invalid_token; a
 * valid token without the scope or with a tenant not allowed → 403
 * insufficient_scope; no signing keys yet → 503 with Retry-After.
 */
#include <string.h>
#include <strings.h>

#include "auth/auth.h"
#include "util/limits.h"

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

void auth_policy_from_config(struct auth_policy *p, const struct auth_config *cfg)
{
    p->bearer_enabled = cfg->enabled;
    p->anonymous_read = cfg->anonymous_read;
    p->admin_token_fallback = cfg->admin_token_fallback;
    p->cfg = cfg;
}

static enum vt_err admin_decision(const struct auth_policy *p, const char *presented,
                                  struct auth_decision *out)
{
    enum vt_err rc = auth_admin_check(&p->admin, presented);
    if (rc == VT_ERR_ADMIN_DISABLED)
        out->message = "admin operations are disabled: ADMIN_TOKEN is not set";
    else if (rc != VT_ERR_OK)
        out->message = "missing or invalid X-Admin-Token";
    return rc;
}

/* The token of "Authorization: Bearer <token>" (scheme case-insensitive,
 * RFC 7235 §2.1), or NULL for another scheme. `authz_len` is authz's length
 * when the caller knows it (the HTTP parser does: a 1 KB token is not
 * measured again), else 0. */
static const char *bearer_token(const char *authz, size_t authz_len, size_t *out_len)
{
    if (strncasecmp(authz, "Bearer", 6) != 0 || (authz[6] != ' ' && authz[6] != '\0'))
        return NULL;
    const char *t = authz + 6;
    while (*t == ' ')
        t++;
    size_t n = authz_len > (size_t)(t - authz) ? authz_len - (size_t)(t - authz) : strlen(t);
    while (n && t[n - 1] == ' ')
        n--;
    *out_len = n;
    return t;
}

static unsigned grant_of(enum auth_perm perm)
{
    return perm == AUTH_PERM_READ     ? AUTH_GRANT_READ
           : perm == AUTH_PERM_RELOAD ? AUTH_GRANT_RELOAD
                                      : AUTH_GRANT_MANAGE;
}

static enum vt_err bearer_decision(const struct auth_policy *p, enum auth_perm perm,
                                   const struct auth_credentials *cred, bool admin_sent,
                                   struct auth_decision *out)
{
    size_t len = 0;
    const char *tok = cred->authorization ? bearer_token(cred->authorization,
                                                         cred->authorization_len, &len)
                                          : NULL;
    if (!tok) {
        out->challenge = AUTH_CHALLENGE_BEARER;
        if (admin_sent)
            out->message = perm == AUTH_PERM_READ || !p->admin.configured ||
                                   !p->admin_token_fallback
                               ? "X-Admin-Token does not grant this route: send a bearer token"
                               : "invalid X-Admin-Token, and no bearer token";
        else if (cred->authorization && *cred->authorization)
            out->message = "the Authorization header must use the Bearer scheme";
        else
            out->message = "missing bearer token (Authorization: Bearer ...)";
        return VT_ERR_UNAUTHORIZED;
    }
    if (len == 0) {
        out->challenge = AUTH_CHALLENGE_INVALID_TOKEN;
        out->message = "empty bearer token";
        return VT_ERR_INVALID_TOKEN;
    }
    if (!p->bearer) {
        out->message = "the identity provider's signing keys are not loaded yet";
        out->retry_after = VT_AUTH_RETRY_AFTER_SECS;
        return VT_ERR_AUTH_UNAVAILABLE;
    }
    struct auth_grant g;
    const char *why = NULL;
    enum vt_err rc = auth_bearer_verify(p->bearer, tok, len, &g, &why);
    if (rc == VT_ERR_AUTH_UNAVAILABLE) {
        out->message = why;
        out->retry_after = VT_AUTH_RETRY_AFTER_SECS;
        return rc;
    }
    if (rc != VT_ERR_OK) {
        out->challenge = AUTH_CHALLENGE_INVALID_TOKEN;
        out->message = why ? why : "invalid bearer token";
        return VT_ERR_INVALID_TOKEN;
    }
    if (g.tenant_denied) {
        out->challenge = AUTH_CHALLENGE_INSUFFICIENT_SCOPE;
        out->message = "the token's tenant is not in [auth] allowed_tenants";
        return VT_ERR_INSUFFICIENT_SCOPE;
    }
    if (!(g.grants & grant_of(perm))) {
        out->challenge = AUTH_CHALLENGE_INSUFFICIENT_SCOPE;
        out->message = perm == AUTH_PERM_READ     ? "the token has no scope of [auth] read_scopes"
                       : perm == AUTH_PERM_RELOAD ? "the token has no scope of [auth] reload_scopes"
                                                  : "the token lacks the scope " AUTH_MANAGE_SCOPE;
        return VT_ERR_INSUFFICIENT_SCOPE;
    }
    return VT_ERR_OK;
}

enum vt_err auth_authorize(const struct auth_policy *p, enum auth_perm perm,
                           const struct auth_credentials *cred, struct auth_decision *out)
{
    static const struct auth_credentials none = {0};
    if (!cred)
        cred = &none;
    *out = (struct auth_decision){0};
    switch (perm) {
    case AUTH_PERM_PUBLIC:
        return VT_ERR_OK;
    case AUTH_PERM_READ:
        if (!p->bearer_enabled || (p->anonymous_read && cred->safe_method))
            return VT_ERR_OK;
        return bearer_decision(p, perm, cred, cred->admin_token && *cred->admin_token, out);
    case AUTH_PERM_RELOAD:
    case AUTH_PERM_MANAGE: {
        if (perm == AUTH_PERM_MANAGE && !p->admin.configured && !p->bearer_enabled) {
            out->message = "no such route";
            return VT_ERR_NOT_FOUND;
        }
        if (!p->bearer_enabled)
            return admin_decision(p, cred->admin_token, out);
        bool sent = cred->admin_token && *cred->admin_token;
        if (sent && p->admin_token_fallback &&
            auth_admin_check(&p->admin, cred->admin_token) == VT_ERR_OK)
            return VT_ERR_OK;
        return bearer_decision(p, perm, cred, sent, out);
    }
    }
    out->message = "unknown permission";
    return VT_ERR_FORBIDDEN;
}

/* A quoted-string value of RFC 6750's grammar: no '"' or '\'. */
static void add_quoted(struct strbuf *out, const char *s)
{
    sb_addc(out, '"');
    for (; *s; s++)
        if (*s != '"' && *s != '\\' && (unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f)
            sb_addc(out, *s);
    sb_addc(out, '"');
}

void auth_challenge_format(const struct auth_policy *p, enum auth_perm perm,
                           const struct auth_decision *d, struct strbuf *out)
{
    if (d->challenge == AUTH_CHALLENGE_NONE)
        return;
    sb_adds(out, "Bearer realm=\"vitrine\"");
    if (d->challenge == AUTH_CHALLENGE_INVALID_TOKEN)
        sb_adds(out, ", error=\"invalid_token\"");
    else if (d->challenge == AUTH_CHALLENGE_INSUFFICIENT_SCOPE)
        sb_adds(out, ", error=\"insufficient_scope\"");
    if (d->challenge != AUTH_CHALLENGE_BEARER && d->message) {
        sb_adds(out, ", error_description=");
        add_quoted(out, d->message);
    }
    const struct strvec *scopes = NULL;
    if (p->cfg)
        scopes = perm == AUTH_PERM_READ     ? &p->cfg->read_scopes
                 : perm == AUTH_PERM_RELOAD ? &p->cfg->reload_scopes
                                            : NULL;
    if (perm == AUTH_PERM_MANAGE) {
        sb_adds(out, ", scope=\"" AUTH_MANAGE_SCOPE "\"");
    } else if (scopes && scopes->len) {
        struct strbuf list;
        sb_init(&list, 4096);
        for (size_t i = 0; i < scopes->len; i++) {
            if (i)
                sb_addc(&list, ' ');
            sb_adds(&list, scopes->items[i]);
        }
        sb_adds(out, ", scope=");
        add_quoted(out, list.buf ? list.buf : "");
        sb_release(&list);
    }
}
