/*
 * Compact JWS parsing (RFC 7515 §7.1, RFC 7519): the first thing a bearer
 * token meets, so everything here is bounded and strict. Three base64url
 * parts, no padding, canonical trailing bits; header and claims are JSON
 * objects of bounded size and nesting with no duplicate keys; the algorithm
 * is one of the nine asymmetric ones by its exact name (so "none", "None",
 * "HS256" never get past here, RFC 8725 §3.1); `crit` is refused since we
 * implement no extension. Key-bearing headers (jku, x5u, jwk, x5c) are
 * ignored: keys come only from the configured issuer (RFC 8725 §3.10).
 * No cryptography here: jwk.c checks the signature.
 */
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "util/limits.h"
#include "util/text.h"

static const char *const alg_names[AUTH_ALG__COUNT] = {
    [AUTH_ALG_INVALID] = "invalid",
    [AUTH_ALG_RS256] = "RS256", [AUTH_ALG_RS384] = "RS384", [AUTH_ALG_RS512] = "RS512",
    [AUTH_ALG_ES256] = "ES256", [AUTH_ALG_ES384] = "ES384", [AUTH_ALG_ES512] = "ES512",
    [AUTH_ALG_PS256] = "PS256", [AUTH_ALG_PS384] = "PS384", [AUTH_ALG_PS512] = "PS512",
};

enum auth_alg auth_alg_from_name(const char *name)
{
    if (!name)
        return AUTH_ALG_INVALID;
    for (int a = AUTH_ALG_RS256; a < AUTH_ALG__COUNT; a++)
        if (strcmp(name, alg_names[a]) == 0)
            return (enum auth_alg)a;
    return AUTH_ALG_INVALID;
}

const char *auth_alg_name(enum auth_alg alg)
{
    return alg > AUTH_ALG_INVALID && alg < AUTH_ALG__COUNT ? alg_names[alg] : "invalid";
}

static int b64url_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

int auth_b64url_decode(const char *in, size_t len, unsigned char *out, size_t cap,
                       size_t *out_len)
{
    if (len % 4 == 1)
        return -1;
    size_t need = len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
    if (need > cap)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_val((unsigned char)in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0) /* unused low bits must be zero: one encoding per value */
        return -1;
    *out_len = o;
    return 0;
}

/* Decodes one base64url part holding a JSON object. */
static json_t *decode_object(const char *part, size_t len, size_t max, int max_depth,
                             const char **why)
{
    if (len == 0 || len / 4 * 3 > max + 2) {
        *why = len ? "token part too large" : "empty token part";
        return NULL;
    }
    unsigned char *buf = malloc(len / 4 * 3 + 3);
    if (!buf) {
        *why = "out of memory";
        return NULL;
    }
    size_t n = 0;
    json_t *j = NULL;
    if (auth_b64url_decode(part, len, buf, len / 4 * 3 + 3, &n) != 0) {
        *why = "token is not base64url";
    } else if (n > max) {
        *why = "token part too large";
    } else if (text_json_depth((const char *)buf, n) > (size_t)max_depth) {
        *why = "token JSON nested too deeply";
    } else {
        json_error_t e;
        j = json_loadb((const char *)buf, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
        if (!j)
            *why = "token part is not valid JSON";
        else if (!json_is_object(j)) {
            json_decref(j);
            j = NULL;
            *why = "token part is not a JSON object";
        }
    }
    free(buf);
    return j;
}

void auth_jwt_release(struct auth_jwt *jwt)
{
    if (!jwt)
        return;
    json_decref(jwt->header);
    json_decref(jwt->claims);
    free(jwt->sig);
    memset(jwt, 0, sizeof *jwt);
}

static enum vt_err fail(struct auth_jwt *jwt, const char **out_reason, const char *why)
{
    auth_jwt_release(jwt);
    *out_reason = why;
    return VT_ERR_INVALID_TOKEN;
}

enum vt_err auth_jwt_parse(const char *token, size_t len, struct auth_jwt *out,
                           const char **out_reason)
{
    memset(out, 0, sizeof *out);
    *out_reason = NULL;
    if (len == 0)
        return fail(out, out_reason, "empty token");
    if (len > VT_JWT_MAX_TOKEN_BYTES)
        return fail(out, out_reason, "token too large");
    const char *d1 = memchr(token, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
    if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)))
        return fail(out, out_reason, "not a compact JWS (three dot-separated parts)");
    size_t hlen = (size_t)(d1 - token), plen = (size_t)(d2 - d1 - 1);
    size_t slen = len - (size_t)(d2 + 1 - token);
    if (slen == 0)
        return fail(out, out_reason, "token has no signature");

    const char *why = NULL;
    out->header = decode_object(token, hlen, VT_JWT_MAX_HEADER_BYTES, VT_JWT_MAX_JSON_DEPTH, &why);
    if (!out->header)
        return fail(out, out_reason, why);
    const json_t *alg = json_object_get(out->header, "alg");
    if (!json_is_string(alg))
        return fail(out, out_reason, "token header has no alg");
    out->alg = auth_alg_from_name(json_string_value(alg));
    if (out->alg == AUTH_ALG_INVALID)
        return fail(out, out_reason, "token algorithm not accepted");
    if (json_object_get(out->header, "crit"))
        return fail(out, out_reason, "token header has crit (no extension is supported)");
    const json_t *kid = json_object_get(out->header, "kid");
    if (kid && !json_is_string(kid))
        return fail(out, out_reason, "token kid is not a string");
    out->kid = kid ? json_string_value(kid) : NULL;

    out->claims = decode_object(d1 + 1, plen, VT_JWT_MAX_TOKEN_BYTES, VT_JWT_MAX_JSON_DEPTH, &why);
    if (!out->claims)
        return fail(out, out_reason, why);

    if (slen / 4 * 3 > VT_JWT_MAX_SIG_BYTES)
        return fail(out, out_reason, "token signature too large");
    out->sig = malloc(slen / 4 * 3 + 3);
    if (!out->sig)
        return fail(out, out_reason, "out of memory");
    if (auth_b64url_decode(d2 + 1, slen, out->sig, slen / 4 * 3 + 3, &out->sig_len) != 0)
        return fail(out, out_reason, "token signature is not base64url");
    if (out->sig_len == 0)
        return fail(out, out_reason, "token has no signature");
    out->signing_len = (size_t)(d2 - token);
    return VT_ERR_OK;
}
