/*
 * libFuzzer target for bearer-token parsing (src/auth/jwt.c) and the claims
 * checks (src/auth/claims.c): no network, no signature. The first byte picks
 * the mode:
 *   even  the rest is a token as a client would send it (split, base64url,
 *         bounded JSON, header rules);
 *   odd   the rest is "header JSON\nclaims JSON": both are base64url-encoded
 *         into a token first, so the fuzzer reaches the JSON and claim logic
 *         without having to discover base64.
 * A parsed token's claims go through auth_claims_check with scopes, audience
 * and a tenant pointer, and a pointer taken from the input is evaluated.
 * Nothing may crash, leak or read out of bounds; a parse that succeeds must
 * hold its invariants.
 *
 *   make fuzz && build-fuzz/fuzz_jwt -dict=tests/fuzz/jwt.dict tests/fuzz/corpus/fuzz_jwt
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

static size_t b64url(const uint8_t *in, size_t n, char *out)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        out[o++] = al[v >> 18];
        out[o++] = al[(v >> 12) & 63];
        out[o++] = al[(v >> 6) & 63];
        out[o++] = al[v & 63];
    }
    if (n - i >= 1) {
        unsigned v = (unsigned)in[i] << 16 | (n - i == 2 ? (unsigned)in[i + 1] << 8 : 0);
        out[o++] = al[v >> 18];
        out[o++] = al[(v >> 12) & 63];
        if (n - i == 2)
            out[o++] = al[(v >> 6) & 63];
    }
    return o;
}

static char *read_s[] = {"datasets:read", "reader"};
static char *reload_s[] = {"datasets:reload"};
static char *tenants_s[] = {"acme", "42"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    char *tok;
    size_t len;
    if (data[0] & 1) {
        const uint8_t *nl = memchr(p, '\n', n);
        size_t hl = nl ? (size_t)(nl - p) : n;
        size_t cl = nl ? n - hl - 1 : 0;
        tok = malloc(2 * n + 16);
        if (!tok)
            return 0;
        len = b64url(p, hl, tok);
        tok[len++] = '.';
        len += b64url(nl ? nl + 1 : p, cl, tok + len);
        memcpy(tok + len, ".c2ln", 5);
        len += 5;
    } else {
        tok = malloc(n ? n : 1);
        if (!tok)
            return 0;
        memcpy(tok, p, n);
        len = n;
    }
    struct auth_jwt jwt;
    const char *why = NULL;
    if (auth_jwt_parse(tok, len, &jwt, &why) == VT_ERR_OK) {
        if (!jwt.header || !jwt.claims || !jwt.sig || jwt.sig_len == 0 ||
            jwt.alg == AUTH_ALG_INVALID || jwt.signing_len >= len)
            abort();
        struct strvec rs = {read_s, 2}, ls = {reload_s, 1}, ts = {tenants_s, 2};
        struct auth_rules r = {.issuer = "https://idp", .audience = "vitrine", .leeway = 60,
                               .algs = ~0u, .read_scopes = &rs, .reload_scopes = &ls,
                               .tenant_claim = "/org/tid", .allowed_tenants = &ts};
        struct auth_grant g;
        const char *cwhy = NULL;
        if (auth_claims_check(&r, jwt.claims, 1700000000, &g, &cwhy) == VT_ERR_OK) {
            if (g.tenant_denied && g.grants)
                abort();
        } else if (!cwhy) {
            abort();
        }
        /* A pointer from the token's own text. */
        char ptr[64];
        size_t pl = len < sizeof ptr - 1 ? len : sizeof ptr - 1;
        memcpy(ptr, tok, pl);
        ptr[pl] = '\0';
        ptr[0] = '/';
        auth_json_pointer(jwt.claims, ptr);
        auth_jwt_release(&jwt);
    } else if (!why || jwt.header || jwt.claims || jwt.sig) {
        abort();
    }
    free(tok);
    return 0;
}
