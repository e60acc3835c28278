/*
 * The issuer's keys (RFC 7517 JWKS) as OpenSSL 3 key objects, and the
 * signature check of a parsed token (RFC 7518 §3.3-3.5).
 *
 * A JWK becomes an EVP_PKEY through OSSL_PARAM and EVP_PKEY_fromdata: RSA
 * from n and e (at least VT_AUTH_MIN_RSA_BITS), EC from the curve name and the
 * uncompressed point 04||x||y (coordinates at most the curve's size),
 * checked on the curve. JWKs that are not verification keys we can use (oct,
 * OKP, use=enc, key_ops without verify, an unknown alg) are skipped: the set
 * may hold keys for other purposes.
 *
 * A key fits a token only when its type and curve match the token's alg (and
 * its own "alg" when it names one), so a kid pointing to an RSA key cannot be
 * used with ES256 nor the reverse (RFC 8725 §3.1). ES signatures arrive as
 * JOSE r||s and are re-encoded as the DER ECDSA-Sig-Value OpenSSL verifies;
 * PS uses PSS with MGF1 over the same hash and a salt as long as the hash.
 */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "util/limits.h"

/* -------------------------------------------------------------- helpers */

/* A base64url member of a JWK, decoded into a fresh buffer. */
static unsigned char *b64_member(const json_t *jwk, const char *name, size_t max, size_t *out_len)
{
    const json_t *v = json_object_get(jwk, name);
    if (!json_is_string(v))
        return NULL;
    size_t len = json_string_length(v);
    if (len == 0 || len / 4 * 3 > max + 2)
        return NULL;
    unsigned char *buf = malloc(len / 4 * 3 + 3);
    if (!buf)
        return NULL;
    if (auth_b64url_decode(json_string_value(v), len, buf, len / 4 * 3 + 3, out_len) != 0 ||
        *out_len == 0 || *out_len > max) {
        free(buf);
        return NULL;
    }
    return buf;
}

static EVP_PKEY *pkey_fromdata(const char *type, OSSL_PARAM *params)
{
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (ctx && EVP_PKEY_fromdata_init(ctx) == 1)
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
    EVP_PKEY_CTX_free(ctx);
    if (!pkey)
        return NULL;
    /* The point is on the curve / the modulus is sane. */
    EVP_PKEY_CTX *chk = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    int ok = chk ? EVP_PKEY_public_check(chk) : 0;
    EVP_PKEY_CTX_free(chk);
    if (ok != 1) {
        EVP_PKEY_free(pkey);
        return NULL;
    }
    return pkey;
}

static EVP_PKEY *rsa_key(const json_t *jwk, const char **why)
{
    size_t nlen = 0, elen = 0;
    unsigned char *n = b64_member(jwk, "n", VT_AUTH_MAX_RSA_BITS / 8 + 1, &nlen);
    unsigned char *e = b64_member(jwk, "e", 16, &elen);
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn = n ? BN_bin2bn(n, (int)nlen, NULL) : NULL;
    BIGNUM *be = e ? BN_bin2bn(e, (int)elen, NULL) : NULL;
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    *why = "RSA key needs n and e";
    if (!bn || !be)
        goto out;
    int bits = BN_num_bits(bn);
    if (bits < VT_AUTH_MIN_RSA_BITS || bits > VT_AUTH_MAX_RSA_BITS) {
        *why = "RSA key size out of range";
        goto out;
    }
    if (!BN_is_odd(be) || BN_is_one(be)) {
        *why = "RSA exponent invalid";
        goto out;
    }
    *why = "RSA key rejected";
    bld = OSSL_PARAM_BLD_new();
    if (!bld || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
        goto out;
    params = OSSL_PARAM_BLD_to_param(bld);
    if (params)
        pkey = pkey_fromdata("RSA", params);
out:
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    free(n);
    free(e);
    return pkey;
}

static const struct curve {
    const char *crv;            /* JWK name */
    const char *group;          /* OpenSSL group name */
    size_t coord;               /* bytes of x, y, r and s */
    enum auth_kty kty;
} curves[] = {
    {"P-256", "prime256v1", 32, AUTH_KTY_EC256},
    {"P-384", "secp384r1", 48, AUTH_KTY_EC384},
    {"P-521", "secp521r1", 66, AUTH_KTY_EC521},
};

static EVP_PKEY *ec_key(const json_t *jwk, enum auth_kty *out_kty, const char **why)
{
    const char *crv = json_string_value(json_object_get(jwk, "crv"));
    const struct curve *c = NULL;
    for (size_t i = 0; crv && i < sizeof curves / sizeof curves[0]; i++)
        if (strcmp(crv, curves[i].crv) == 0)
            c = &curves[i];
    if (!c) {
        *why = "EC curve not supported";
        return NULL;
    }
    size_t xl = 0, yl = 0;
    unsigned char *x = b64_member(jwk, "x", c->coord, &xl);
    unsigned char *y = b64_member(jwk, "y", c->coord, &yl);
    EVP_PKEY *pkey = NULL;
    *why = "EC key needs x and y of the curve's size";
    if (x && y) {
        /* RFC 7518 §6.2.1.2 wants full-length coordinates; some libraries
         * drop leading zero bytes, so shorter ones are left-padded. */
        unsigned char pub[1 + 2 * 66] = {0x04};
        memcpy(pub + 1 + (c->coord - xl), x, xl);
        memcpy(pub + 1 + c->coord + (c->coord - yl), y, yl);
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)c->group, 0),
            OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pub, 1 + 2 * c->coord),
            OSSL_PARAM_construct_end(),
        };
        pkey = pkey_fromdata("EC", params);
        *why = "EC key is not a point on its curve";
        *out_kty = c->kty;
    }
    free(x);
    free(y);
    return pkey;
}

/* Whether a JWK is meant for signature verification. */
static bool for_verification(const json_t *jwk)
{
    const json_t *use = json_object_get(jwk, "use");
    if (use && !(json_is_string(use) && strcmp(json_string_value(use), "sig") == 0))
        return false;
    const json_t *ops = json_object_get(jwk, "key_ops");
    if (ops) {
        if (!json_is_array(ops))
            return false;
        bool verify = false;
        size_t i;
        const json_t *op;
        json_array_foreach(ops, i, op)
        {
            if (json_is_string(op) && strcmp(json_string_value(op), "verify") == 0)
                verify = true;
        }
        return verify;
    }
    return true;
}

/* ------------------------------------------------------------- key sets */

struct auth_keyset *auth_keyset_ref(struct auth_keyset *ks)
{
    if (ks)
        atomic_fetch_add_explicit(&ks->refs, 1, memory_order_relaxed);
    return ks;
}

void auth_keyset_unref(struct auth_keyset *ks)
{
    if (!ks || atomic_fetch_sub_explicit(&ks->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < ks->n; i++) {
        free(ks->keys[i].kid);
        EVP_PKEY_free(ks->keys[i].pkey);
    }
    free(ks);
}

static int json_depth(const json_t *j, int limit)
{
    if (limit < 0)
        return 1;
    int d = 0;
    if (json_is_object(j)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)j, k, v)
        {
            int c = json_depth(v, limit - 1);
            if (c > d)
                d = c;
        }
        return d + 1;
    }
    if (json_is_array(j)) {
        size_t i;
        const json_t *v;
        json_array_foreach(j, i, v)
        {
            int c = json_depth(v, limit - 1);
            if (c > d)
                d = c;
        }
        return d + 1;
    }
    return 0;
}

enum vt_err auth_keyset_parse(const char *json, size_t len, struct auth_keyset **out,
                              struct vt_error *err)
{
    *out = NULL;
    if (len > VT_AUTH_MAX_DOC_BYTES)
        return vt_error_set(err, VT_ERR_BAD_REQUEST, "JWKS larger than %d bytes",
                            VT_AUTH_MAX_DOC_BYTES);
    json_error_t je;
    /* jansson's own depth limit (2048) is far above ours: check after, but
     * bounded by the byte cap above. */
    json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return vt_error_set(err, VT_ERR_BAD_REQUEST, "JWKS is not valid JSON (line %d)", je.line);
    enum vt_err rc = VT_ERR_OK;
    const json_t *keys = json_object_get(doc, "keys");
    if (json_depth(doc, VT_AUTH_MAX_DOC_DEPTH) > VT_AUTH_MAX_DOC_DEPTH) {
        rc = vt_error_set(err, VT_ERR_BAD_REQUEST, "JWKS nested too deeply");
        goto done;
    }
    if (!json_is_array(keys)) {
        rc = vt_error_set(err, VT_ERR_BAD_REQUEST, "JWKS has no \"keys\" array");
        goto done;
    }
    size_t cap = json_array_size(keys);
    if (cap > VT_AUTH_MAX_KEYS)
        cap = VT_AUTH_MAX_KEYS;
    struct auth_keyset *ks = calloc(1, sizeof *ks + cap * sizeof ks->keys[0]);
    if (!ks) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "JWKS");
        goto done;
    }
    atomic_init(&ks->refs, 1);
    const char *last_why = "no keys";
    size_t i;
    const json_t *jwk;
    json_array_foreach(keys, i, jwk)
    {
        if (ks->n == cap) {
            ks->skipped += json_array_size(keys) - i;
            break;
        }
        const char *kty = json_string_value(json_object_get(jwk, "kty"));
        const json_t *kid = json_object_get(jwk, "kid");
        const json_t *alg = json_object_get(jwk, "alg");
        struct auth_key k = {0};
        const char *why = "unsupported key type";
        if (!json_is_object(jwk) || !kty || !for_verification(jwk) ||
            (kid && !json_is_string(kid)) || (alg && !json_is_string(alg))) {
            why = "not a signature verification key";
        } else if (alg && (k.alg = auth_alg_from_name(json_string_value(alg))) == AUTH_ALG_INVALID) {
            why = "key algorithm not supported";
        } else if (strcmp(kty, "RSA") == 0) {
            k.kty = AUTH_KTY_RSA;
            k.pkey = rsa_key(jwk, &why);
        } else if (strcmp(kty, "EC") == 0) {
            k.pkey = ec_key(jwk, &k.kty, &why);
        }
        if (!k.pkey) {
            ERR_clear_error();
            ks->skipped++;
            last_why = why;
            continue;
        }
        if (kid && !(k.kid = strdup(json_string_value(kid)))) {
            EVP_PKEY_free(k.pkey);
            ks->skipped++;
            continue;
        }
        ks->keys[ks->n++] = k;
    }
    if (ks->n == 0) {
        auth_keyset_unref(ks);
        rc = vt_error_set(err, VT_ERR_BAD_REQUEST, "JWKS has no usable signing key (%s)", last_why);
        goto done;
    }
    *out = ks;
done:
    json_decref(doc);
    return rc;
}

/* -------------------------------------------------------- verification */

static const EVP_MD *alg_md(enum auth_alg alg)
{
    switch (alg) {
    case AUTH_ALG_RS256:
    case AUTH_ALG_ES256:
    case AUTH_ALG_PS256:
        return EVP_sha256();
    case AUTH_ALG_RS384:
    case AUTH_ALG_ES384:
    case AUTH_ALG_PS384:
        return EVP_sha384();
    case AUTH_ALG_RS512:
    case AUTH_ALG_ES512:
    case AUTH_ALG_PS512:
        return EVP_sha512();
    default:
        return NULL;
    }
}

static enum auth_kty alg_kty(enum auth_alg alg)
{
    switch (alg) {
    case AUTH_ALG_ES256:
        return AUTH_KTY_EC256;
    case AUTH_ALG_ES384:
        return AUTH_KTY_EC384;
    case AUTH_ALG_ES512:
        return AUTH_KTY_EC521;
    default:
        return AUTH_KTY_RSA;
    }
}

bool auth_key_fits(const struct auth_key *key, enum auth_alg alg)
{
    if (alg == AUTH_ALG_INVALID || !key->pkey)
        return false;
    if (key->alg != AUTH_ALG_INVALID && key->alg != alg)
        return false;
    return key->kty == alg_kty(alg);
}

/* JOSE r||s (two big-endian integers of the curve's size) → DER. */
static unsigned char *es_to_der(const unsigned char *sig, size_t len, size_t coord, int *out_len)
{
    if (len != 2 * coord)
        return NULL;
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, (int)coord, NULL);
    BIGNUM *s = BN_bin2bn(sig + coord, (int)coord, NULL);
    unsigned char *der = NULL;
    if (!es || !r || !s || ECDSA_SIG_set0(es, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(es);
        return NULL;
    }
    int n = i2d_ECDSA_SIG(es, &der);
    ECDSA_SIG_free(es); /* frees r and s */
    if (n <= 0)
        return NULL;
    *out_len = n;
    return der;
}

enum vt_err auth_jwt_verify(const struct auth_jwt *jwt, const char *token,
                            const struct auth_key *key, const char **out_reason)
{
    *out_reason = NULL;
    if (!auth_key_fits(key, jwt->alg)) {
        *out_reason = "the signing key does not fit the token's algorithm";
        return VT_ERR_INVALID_TOKEN;
    }
    const EVP_MD *md = alg_md(jwt->alg);
    const unsigned char *sig = jwt->sig;
    size_t sig_len = jwt->sig_len;
    unsigned char *der = NULL;
    if (key->kty != AUTH_KTY_RSA) {
        size_t coord = key->kty == AUTH_KTY_EC256 ? 32 : key->kty == AUTH_KTY_EC384 ? 48 : 66;
        int dl = 0;
        der = es_to_der(jwt->sig, jwt->sig_len, coord, &dl);
        if (!der) {
            *out_reason = "token signature has the wrong length";
            return VT_ERR_INVALID_TOKEN;
        }
        sig = der;
        sig_len = (size_t)dl;
    } else if (sig_len != (size_t)EVP_PKEY_get_size(key->pkey)) {
        *out_reason = "token signature has the wrong length";
        return VT_ERR_INVALID_TOKEN;
    }
    int ok = 0;
    EVP_MD_CTX *mctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    if (mctx && EVP_DigestVerifyInit(mctx, &pctx, md, NULL, key->pkey) == 1) {
        bool pss = jwt->alg >= AUTH_ALG_PS256 && jwt->alg <= AUTH_ALG_PS512;
        bool set = !pss || (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
                            EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, md) == 1 &&
                            EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1);
        if (set)
            ok = EVP_DigestVerify(mctx, sig, sig_len, (const unsigned char *)token,
                                  jwt->signing_len) == 1;
    }
    EVP_MD_CTX_free(mctx);
    OPENSSL_free(der);
    if (!ok) {
        ERR_clear_error(); /* leave no error behind on this thread (curl reads the queue) */
        *out_reason = "token signature does not verify";
        return VT_ERR_INVALID_TOKEN;
    }
    return VT_ERR_OK;
}
