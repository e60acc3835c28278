/*
 * Claims checks (RFC 7519 §4.1, RFC 8725 §3.8-3.9) and what a valid token
 * grants. iss must equal the configured issuer; aud (a string or an array)
 * must name the configured audience when one is set; exp is required; nbf and
 * iat are honoured when present; all with leeway_secs. Scopes come from
 * `scope` (space-separated, RFC 8693 / RFC 9068) and `scp` (an array, or a
 * string, as some providers send); a grant needs any one scope of its list
 * (docs/architecture.md, "Scopes"). The tenant is the value at the tenant_claim JSON
 * pointer (RFC 6901): a string, or an integer compared as its decimal text.
 * Pure functions of the claims, the rules and the time: unit-tested and
 * fuzzed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

void auth_rules_from_config(struct auth_rules *r, const struct auth_config *cfg)
{
    memset(r, 0, sizeof *r);
    r->issuer = cfg->issuer;
    r->audience = cfg->audience;
    r->leeway = cfg->leeway_secs;
    for (size_t i = 0; i < cfg->algorithms.len; i++) {
        enum auth_alg a = auth_alg_from_name(cfg->algorithms.items[i]);
        if (a != AUTH_ALG_INVALID)
            r->algs |= 1u << a;
    }
    r->read_scopes = &cfg->read_scopes;
    r->reload_scopes = &cfg->reload_scopes;
    r->tenant_claim = cfg->tenant_claim;
    r->allowed_tenants = &cfg->allowed_tenants;
}

const json_t *auth_json_pointer(const json_t *doc, const char *ptr)
{
    if (!doc || !ptr)
        return NULL;
    if (!*ptr)
        return doc;
    if (*ptr != '/')
        return NULL;
    const json_t *cur = doc;
    char tok[256];
    const char *p = ptr;
    while (*p == '/') {
        p++;
        size_t n = 0;
        while (*p && *p != '/') {
            char c = *p++;
            if (c == '~') {
                if (*p == '0')
                    c = '~';
                else if (*p == '1')
                    c = '/';
                else
                    return NULL; /* "~" must be followed by 0 or 1 */
                p++;
            }
            if (n + 1 >= sizeof tok)
                return NULL;
            tok[n++] = c;
        }
        tok[n] = '\0';
        if (json_is_object(cur)) {
            cur = json_object_get(cur, tok);
        } else if (json_is_array(cur)) {
            /* "0" or digits without a leading zero; "-" names no element */
            if (n == 0 || (n > 1 && tok[0] == '0') || n > 9)
                return NULL;
            size_t idx = 0;
            for (size_t i = 0; i < n; i++) {
                if (tok[i] < '0' || tok[i] > '9')
                    return NULL;
                idx = idx * 10 + (size_t)(tok[i] - '0');
            }
            cur = json_array_get(cur, idx);
        } else {
            return NULL;
        }
        if (!cur)
            return NULL;
    }
    return cur;
}

/* A NumericDate as whole seconds; false when not a finite number in range. */
static bool numeric_date(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d < -9.2e18 || d > 9.2e18)
            return false;
        *out = (int64_t)floor(d);
        return true;
    }
    return false;
}

/* t + leeway without overflow. */
static int64_t plus(int64_t t, int64_t leeway)
{
    return t > INT64_MAX - leeway ? INT64_MAX : t + leeway;
}

/* Whether the space-separated list s[0..n) contains any item of `want`. */
static bool words_match(const char *s, size_t n, const struct strvec *want)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && s[i] == ' ')
            i++;
        size_t start = i;
        while (i < n && s[i] != ' ')
            i++;
        size_t wl = i - start;
        if (!wl)
            continue;
        for (size_t k = 0; k < want->len; k++)
            if (strlen(want->items[k]) == wl && memcmp(want->items[k], s + start, wl) == 0)
                return true;
    }
    return false;
}

static bool scopes_match(const json_t *claims, const struct strvec *want)
{
    if (!want || want->len == 0)
        return false;
    const json_t *scope = json_object_get(claims, "scope");
    if (json_is_string(scope) &&
        words_match(json_string_value(scope), json_string_length(scope), want))
        return true;
    const json_t *scp = json_object_get(claims, "scp");
    if (json_is_string(scp))
        return words_match(json_string_value(scp), json_string_length(scp), want);
    if (json_is_array(scp)) {
        size_t i;
        const json_t *item;
        json_array_foreach(scp, i, item)
        {
            if (!json_is_string(item))
                continue;
            const char *s = json_string_value(item);
            for (size_t k = 0; k < want->len; k++)
                if (strcmp(s, want->items[k]) == 0)
                    return true;
        }
    }
    return false;
}

static const struct strvec manage_scope = {(char *[]){(char *)AUTH_MANAGE_SCOPE}, 1};

static bool tenant_allowed(const struct auth_rules *r, const json_t *claims)
{
    if (!r->allowed_tenants || r->allowed_tenants->len == 0)
        return true;
    if (!r->tenant_claim)
        return false;
    const json_t *t = auth_json_pointer(claims, r->tenant_claim);
    char num[32];
    const char *s = NULL;
    if (json_is_string(t))
        s = json_string_value(t);
    else if (json_is_integer(t)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(t));
        s = num;
    }
    return s && strvec_find(r->allowed_tenants, s) >= 0;
}

static enum vt_err bad(const char **out_reason, const char *why)
{
    *out_reason = why;
    return VT_ERR_INVALID_TOKEN;
}

enum vt_err auth_claims_check(const struct auth_rules *r, const json_t *claims, int64_t now,
                              struct auth_grant *out, const char **out_reason)
{
    memset(out, 0, sizeof *out);
    *out_reason = NULL;
    if (!json_is_object(claims))
        return bad(out_reason, "token claims are not an object");
    const json_t *iss = json_object_get(claims, "iss");
    if (!json_is_string(iss))
        return bad(out_reason, "token has no iss");
    if (!r->issuer || strcmp(json_string_value(iss), r->issuer) != 0)
        return bad(out_reason, "token issuer does not match");
    if (r->audience) {
        const json_t *aud = json_object_get(claims, "aud");
        bool ok = false;
        if (json_is_string(aud)) {
            ok = strcmp(json_string_value(aud), r->audience) == 0;
        } else if (json_is_array(aud)) {
            size_t i;
            const json_t *item;
            json_array_foreach(aud, i, item)
            {
                if (json_is_string(item) && strcmp(json_string_value(item), r->audience) == 0)
                    ok = true;
            }
        }
        if (!ok)
            return bad(out_reason, aud ? "token audience does not match" : "token has no aud");
    }
    int64_t exp, t;
    const json_t *v = json_object_get(claims, "exp");
    if (!v)
        return bad(out_reason, "token has no exp");
    if (!numeric_date(v, &exp))
        return bad(out_reason, "token exp is not a number");
    if (now > plus(exp, r->leeway))
        return bad(out_reason, "token expired");
    if ((v = json_object_get(claims, "nbf")) != NULL) {
        if (!numeric_date(v, &t))
            return bad(out_reason, "token nbf is not a number");
        if (plus(now, r->leeway) < t)
            return bad(out_reason, "token not valid yet (nbf)");
    }
    if ((v = json_object_get(claims, "iat")) != NULL) {
        if (!numeric_date(v, &t))
            return bad(out_reason, "token iat is not a number");
        if (plus(now, r->leeway) < t)
            return bad(out_reason, "token issued in the future (iat)");
    }
    out->valid_until = plus(exp, r->leeway);
    if (!tenant_allowed(r, claims)) {
        out->tenant_denied = true;
        return VT_ERR_OK;
    }
    if (scopes_match(claims, r->read_scopes))
        out->grants |= AUTH_GRANT_READ;
    if (scopes_match(claims, r->reload_scopes))
        out->grants |= AUTH_GRANT_RELOAD;
    if (scopes_match(claims, &manage_scope))
        out->grants |= AUTH_GRANT_MANAGE;
    return VT_ERR_OK;
}
