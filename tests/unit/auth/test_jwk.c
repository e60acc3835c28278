/* Keys and signatures (src/auth/jwk.c), the verification cache (cache.c) and
 * the verifier with fixed keys (bearer.c): keys made here with OpenSSL,
 * published as a JWKS, tokens signed here with every algorithm. */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "testlib.h"
#include "util/limits.h"

static void b64url(const unsigned char *in, size_t n, struct strbuf *out)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        char q[4] = {al[v >> 18], al[(v >> 12) & 63], al[(v >> 6) & 63], al[v & 63]};
        sb_add(out, q, 4);
    }
    if (n - i == 1) {
        unsigned v = (unsigned)in[i] << 16;
        char q[2] = {al[v >> 18], al[(v >> 12) & 63]};
        sb_add(out, q, 2);
    } else if (n - i == 2) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
        char q[3] = {al[v >> 18], al[(v >> 12) & 63], al[(v >> 6) & 63]};
        sb_add(out, q, 3);
    }
}

static void b64_bn(const BIGNUM *bn, size_t pad, struct strbuf *out)
{
    size_t n = pad ? pad : (size_t)BN_num_bytes(bn);
    unsigned char *buf = malloc(n);
    BN_bn2binpad(bn, buf, (int)n);
    b64url(buf, n, out);
    free(buf);
}

static EVP_PKEY *rsa, *rsa_other, *ec256, *ec384, *ec521;

/* One JWK object for a key. */
static void jwk(struct strbuf *out, EVP_PKEY *k, const char *kid, const char *extra)
{
    sb_addf(out, "{\"kid\":\"%s\"%s%s,", kid, extra ? "," : "", extra ? extra : "");
    if (EVP_PKEY_is_a(k, "RSA")) {
        BIGNUM *n = NULL, *e = NULL;
        EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n);
        EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &e);
        sb_adds(out, "\"kty\":\"RSA\",\"n\":\"");
        b64_bn(n, 0, out);
        sb_adds(out, "\",\"e\":\"");
        b64_bn(e, 0, out);
        sb_adds(out, "\"}");
        BN_free(n);
        BN_free(e);
    } else {
        char group[32];
        EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, NULL);
        const char *crv = !strcmp(group, "prime256v1") ? "P-256"
                          : !strcmp(group, "secp384r1") ? "P-384"
                                                        : "P-521";
        size_t coord = crv[2] == '2' ? 32 : crv[2] == '3' ? 48 : 66;
        BIGNUM *x = NULL, *y = NULL;
        EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &x);
        EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, &y);
        sb_addf(out, "\"kty\":\"EC\",\"crv\":\"%s\",\"x\":\"", crv);
        b64_bn(x, coord, out);
        sb_adds(out, "\",\"y\":\"");
        b64_bn(y, coord, out);
        sb_adds(out, "\"}");
        BN_free(x);
        BN_free(y);
    }
}

static const EVP_MD *md_of(enum auth_alg a)
{
    switch (a) {
    case AUTH_ALG_RS256: case AUTH_ALG_ES256: case AUTH_ALG_PS256: return EVP_sha256();
    case AUTH_ALG_RS384: case AUTH_ALG_ES384: case AUTH_ALG_PS384: return EVP_sha384();
    default: return EVP_sha512();
    }
}

/* A signed token: header {"alg","kid"} + claims, signed with `key` as `alg`
 * says (ES as JOSE r||s). */
static char *sign(EVP_PKEY *key, enum auth_alg alg, const char *kid, const char *claims)
{
    struct strbuf t, h;
    sb_init(&t, 0);
    sb_init(&h, 0);
    if (kid)
        sb_addf(&h, "{\"alg\":\"%s\",\"kid\":\"%s\",\"typ\":\"JWT\"}", auth_alg_name(alg), kid);
    else
        sb_addf(&h, "{\"alg\":\"%s\"}", auth_alg_name(alg));
    b64url((const unsigned char *)h.buf, h.len, &t);
    sb_addc(&t, '.');
    b64url((const unsigned char *)claims, strlen(claims), &t);
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    EVP_DigestSignInit(m, &pctx, md_of(alg), NULL, key);
    if (alg >= AUTH_ALG_PS256) {
        EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
        EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
    }
    size_t sl = 0;
    EVP_DigestSign(m, NULL, &sl, (const unsigned char *)t.buf, t.len);
    unsigned char *sig = malloc(sl);
    EVP_DigestSign(m, sig, &sl, (const unsigned char *)t.buf, t.len);
    EVP_MD_CTX_free(m);
    sb_addc(&t, '.');
    if (alg >= AUTH_ALG_ES256 && alg <= AUTH_ALG_ES512) {
        const unsigned char *p = sig;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)sl);
        size_t coord = alg == AUTH_ALG_ES256 ? 32 : alg == AUTH_ALG_ES384 ? 48 : 66;
        unsigned char rs[132];
        BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, (int)coord);
        BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + coord, (int)coord);
        b64url(rs, 2 * coord, &t);
        ECDSA_SIG_free(es);
    } else {
        b64url(sig, sl, &t);
    }
    free(sig);
    sb_release(&h);
    return sb_detach(&t, NULL);
}

static struct auth_keyset *keyset(void)
{
    struct strbuf s;
    sb_init(&s, 0);
    sb_adds(&s, "{\"keys\":[");
    jwk(&s, rsa, "rsa1", "\"use\":\"sig\"");
    sb_addc(&s, ',');
    jwk(&s, ec256, "ec256", "\"alg\":\"ES256\"");
    sb_addc(&s, ',');
    jwk(&s, ec384, "ec384", NULL);
    sb_addc(&s, ',');
    jwk(&s, ec521, "ec521", NULL);
    sb_adds(&s, ",{\"kty\":\"oct\",\"kid\":\"hmac\",\"k\":\"c2VjcmV0\"}"
                ",{\"kty\":\"OKP\",\"kid\":\"ed\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"}");
    sb_addc(&s, ',');
    jwk(&s, rsa_other, "enc1", "\"use\":\"enc\"");
    sb_adds(&s, "]}");
    struct auth_keyset *ks = NULL;
    struct vt_error err = {0};
    CHECK_EQ_INT(auth_keyset_parse(s.buf, s.len, &ks, &err), VT_ERR_OK);
    sb_release(&s);
    return ks;
}

static const struct auth_key *find(const struct auth_keyset *ks, const char *kid)
{
    for (size_t i = 0; i < ks->n; i++)
        if (ks->keys[i].kid && !strcmp(ks->keys[i].kid, kid))
            return &ks->keys[i];
    return NULL;
}

static enum vt_err verify(const char *tok, const struct auth_key *k)
{
    struct auth_jwt j;
    const char *why;
    enum vt_err rc = auth_jwt_parse(tok, strlen(tok), &j, &why);
    if (rc == VT_ERR_OK)
        rc = auth_jwt_verify(&j, tok, k, &why);
    auth_jwt_release(&j);
    return rc;
}

static const char *CLAIMS = "{\"iss\":\"https://idp\",\"exp\":4102444800,\"scope\":\"datasets:read\"}";

TEST(keyset_parse_skips_what_it_cannot_use)
{
    struct auth_keyset *ks = keyset();
    CHECK(ks != NULL);
    CHECK_EQ_INT(ks->n, 4);
    CHECK_EQ_INT(ks->skipped, 3);
    CHECK(find(ks, "rsa1") && find(ks, "rsa1")->kty == AUTH_KTY_RSA);
    CHECK(find(ks, "ec256") && find(ks, "ec256")->kty == AUTH_KTY_EC256 &&
          find(ks, "ec256")->alg == AUTH_ALG_ES256);
    CHECK(find(ks, "ec384") && find(ks, "ec384")->kty == AUTH_KTY_EC384);
    CHECK(find(ks, "ec521") && find(ks, "ec521")->kty == AUTH_KTY_EC521);
    CHECK(find(ks, "enc1") == NULL && find(ks, "hmac") == NULL);
    auth_keyset_unref(ks);
}

TEST(keyset_parse_rejects_bad_documents)
{
    const char *bad[] = {
        "", "[]", "{}", "{\"keys\":{}}", "{\"keys\":[]}", "{\"keys\":[1,2]}",
        "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}", /* 17-bit modulus */
        "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AAAA\",\"y\":\"AAAA\"}]}",
        "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","
        "\"y\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}", /* not on the curve */
        "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"secp256k1\",\"x\":\"AA\",\"y\":\"AA\"}]}",
        "{\"keys\":[],\"keys\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct auth_keyset *ks = (struct auth_keyset *)1;
        struct vt_error err = {0};
        CHECK(auth_keyset_parse(bad[i], strlen(bad[i]), &ks, &err) != VT_ERR_OK);
        CHECK(ks == NULL);
        CHECK(err.msg[0] != '\0');
    }
}

TEST(every_algorithm_verifies)
{
    struct auth_keyset *ks = keyset();
    struct {
        enum auth_alg alg;
        EVP_PKEY *key;
        const char *kid;
    } cases[] = {
        {AUTH_ALG_RS256, rsa, "rsa1"},   {AUTH_ALG_RS384, rsa, "rsa1"},
        {AUTH_ALG_RS512, rsa, "rsa1"},   {AUTH_ALG_PS256, rsa, "rsa1"},
        {AUTH_ALG_PS384, rsa, "rsa1"},   {AUTH_ALG_PS512, rsa, "rsa1"},
        {AUTH_ALG_ES256, ec256, "ec256"}, {AUTH_ALG_ES384, ec384, "ec384"},
        {AUTH_ALG_ES512, ec521, "ec521"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = sign(cases[i].key, cases[i].alg, cases[i].kid, CLAIMS);
        CHECK_EQ_INT(verify(t, find(ks, cases[i].kid)), VT_ERR_OK);
        /* Tampered payload: another valid payload under this signature. */
        char *t2 = sign(cases[i].key, cases[i].alg, cases[i].kid,
                        "{\"iss\":\"https://idp\",\"exp\":4102444800,\"scope\":\"datasets:manage\"}");
        struct strbuf sp;
        sb_init(&sp, 0);
        sb_add(&sp, t, (size_t)(strchr(t, '.') - t));
        sb_add(&sp, strchr(t2, '.'), (size_t)(strrchr(t2, '.') - strchr(t2, '.')));
        sb_adds(&sp, strrchr(t, '.'));
        CHECK_EQ_INT(verify(sp.buf, find(ks, cases[i].kid)), VT_ERR_INVALID_TOKEN);
        /* Signature truncated by one character, and stripped. */
        sb_reset(&sp);
        sb_add(&sp, t, strlen(t) - 1);
        CHECK_EQ_INT(verify(sp.buf, find(ks, cases[i].kid)), VT_ERR_INVALID_TOKEN);
        sb_reset(&sp);
        sb_add(&sp, t, (size_t)(strrchr(t, '.') - t) + 1);
        CHECK_EQ_INT(verify(sp.buf, find(ks, cases[i].kid)), VT_ERR_INVALID_TOKEN);
        sb_release(&sp);
        free(t2);
        free(t);
    }
    auth_keyset_unref(ks);
}

TEST(key_type_confusion)
{
    struct auth_keyset *ks = keyset();
    /* An RSA signature labelled ES256, checked against the RSA key. */
    char *t = sign(rsa, AUTH_ALG_RS256, "rsa1", CLAIMS);
    struct auth_jwt j;
    const char *why;
    CHECK_EQ_INT(auth_jwt_parse(t, strlen(t), &j, &why), VT_ERR_OK);
    j.alg = AUTH_ALG_ES256;
    CHECK_EQ_INT(auth_jwt_verify(&j, t, find(ks, "rsa1"), &why), VT_ERR_INVALID_TOKEN);
    /* ... and labelled PS256: wrong padding. */
    j.alg = AUTH_ALG_PS256;
    CHECK_EQ_INT(auth_jwt_verify(&j, t, find(ks, "rsa1"), &why), VT_ERR_INVALID_TOKEN);
    auth_jwt_release(&j);
    free(t);
    /* An EC key for an RS token; a P-256 key for ES384; the ES256-only key
     * (its JWK says alg ES256) cannot serve ES384 even if the curve fit. */
    CHECK(!auth_key_fits(find(ks, "ec256"), AUTH_ALG_RS256));
    CHECK(!auth_key_fits(find(ks, "ec256"), AUTH_ALG_ES384));
    CHECK(!auth_key_fits(find(ks, "rsa1"), AUTH_ALG_ES256));
    CHECK(!auth_key_fits(find(ks, "ec384"), AUTH_ALG_ES512));
    CHECK(auth_key_fits(find(ks, "rsa1"), AUTH_ALG_PS512));
    t = sign(ec256, AUTH_ALG_ES256, "ec256", CLAIMS);
    CHECK_EQ_INT(verify(t, find(ks, "ec384")), VT_ERR_INVALID_TOKEN);
    CHECK_EQ_INT(verify(t, find(ks, "rsa1")), VT_ERR_INVALID_TOKEN);
    free(t);
    /* A signature from another RSA key. */
    t = sign(rsa_other, AUTH_ALG_RS256, "rsa1", CLAIMS);
    CHECK_EQ_INT(verify(t, find(ks, "rsa1")), VT_ERR_INVALID_TOKEN);
    free(t);
    auth_keyset_unref(ks);
}

/* ------------------------------------------------------- cache, verifier */

TEST(cache_hits_until_valid_until)
{
    struct auth_cache *c = auth_cache_create();
    struct auth_grant g = {.grants = AUTH_GRANT_READ, .valid_until = 1000}, out;
    auth_cache_put(c, "tok-a", 5, 900, &g);
    CHECK(auth_cache_get(c, "tok-a", 5, 1000, &out) && out.grants == AUTH_GRANT_READ);
    CHECK(!auth_cache_get(c, "tok-a", 4, 900, &out)); /* a prefix is another token */
    CHECK(!auth_cache_get(c, "tok-b", 5, 900, &out));
    CHECK(!auth_cache_get(c, "tok-a", 5, 1001, &out)); /* expired, and dropped */
    CHECK(!auth_cache_get(c, "tok-a", 5, 900, &out));
    auth_cache_put(c, "tok-x", 5, 2000, &g); /* already expired: not stored */
    CHECK(!auth_cache_get(c, "tok-x", 5, 900, &out));
    /* Many entries: bounded, and the newest are found. */
    char name[32];
    struct auth_grant g2 = {.grants = AUTH_GRANT_RELOAD, .valid_until = 5000};
    for (int i = 0; i < 3 * VT_AUTH_CACHE_ENTRIES; i++) {
        int n = snprintf(name, sizeof name, "token-%d", i);
        auth_cache_put(c, name, (size_t)n, 10, &g2);
    }
    int found = 0;
    for (int i = 0; i < 3 * VT_AUTH_CACHE_ENTRIES; i++) {
        int n = snprintf(name, sizeof name, "token-%d", i);
        found += auth_cache_get(c, name, (size_t)n, 10, &out);
    }
    CHECK(found <= VT_AUTH_CACHE_ENTRIES && found > VT_AUTH_CACHE_ENTRIES / 2);
    int n = snprintf(name, sizeof name, "token-%d", 3 * VT_AUTH_CACHE_ENTRIES - 1);
    CHECK(auth_cache_get(c, name, (size_t)n, 10, &out));
    CHECK(auth_cache_get(c, name, (size_t)n, 10, &out)); /* (the thread's slot) */
    auth_cache_clear(c);
    CHECK(!auth_cache_get(c, name, (size_t)n, 10, &out));
    auth_cache_destroy(c);
}

/* The thread's last-token slot in front of the shards answers only for the
 * same cache, since its last clear, the same bytes, and before valid_until. */
TEST(cache_thread_slot)
{
    struct auth_cache *c = auth_cache_create(), *other = auth_cache_create();
    char tok[1300];
    memset(tok, 'k', sizeof tok);
    struct auth_grant g = {.grants = AUTH_GRANT_READ, .valid_until = 1000}, out;
    auth_cache_put(c, tok, sizeof tok, 900, &g);
    for (int i = 0; i < 3; i++) /* the first from the shards, then the slot */
        CHECK(auth_cache_get(c, tok, sizeof tok, 1000, &out) && out.grants == AUTH_GRANT_READ);
    CHECK(!auth_cache_get(other, tok, sizeof tok, 900, &out)); /* another cache */
    for (size_t at = 0; at < sizeof tok; at += 97) { /* one byte differs, anywhere */
        tok[at] = 'j';
        CHECK(!auth_cache_get(c, tok, sizeof tok, 900, &out));
        tok[at] = 'k';
        CHECK(auth_cache_get(c, tok, sizeof tok, 900, &out));
    }
    CHECK(!auth_cache_get(c, tok, sizeof tok - 1, 900, &out)); /* a prefix */
    CHECK(!auth_cache_get(c, tok, sizeof tok, 1001, &out));    /* expired */
    CHECK(!auth_cache_get(c, tok, sizeof tok, 900, &out));     /* and dropped */
    auth_cache_put(c, tok, sizeof tok, 900, &g);
    CHECK(auth_cache_get(c, tok, sizeof tok, 900, &out));
    CHECK(auth_cache_get(c, tok, sizeof tok, 900, &out));
    auth_cache_clear(c); /* keys rotated: the slot no longer answers */
    CHECK(!auth_cache_get(c, tok, sizeof tok, 900, &out));
    auth_cache_destroy(other);
    auth_cache_destroy(c);
}

static struct auth_config cfg;

TEST(verifier_with_fixed_keys)
{
    struct auth_keyset *ks = keyset();
    struct auth_bearer *b = auth_bearer_create_static(&cfg, ks);
    auth_keyset_unref(ks);
    struct auth_grant g;
    const char *why;
    char *t = sign(rsa, AUTH_ALG_RS256, "rsa1", CLAIMS);
    for (int i = 0; i < 3; i++) { /* the second and third come from the cache */
        CHECK_EQ_INT(auth_bearer_verify(b, t, strlen(t), &g, &why), VT_ERR_OK);
        CHECK_EQ_INT(g.grants, AUTH_GRANT_READ);
    }
    free(t);
    /* ES256 is not in algorithms = ["RS256", "PS256"]. */
    t = sign(ec256, AUTH_ALG_ES256, "ec256", CLAIMS);
    CHECK_EQ_INT(auth_bearer_verify(b, t, strlen(t), &g, &why), VT_ERR_INVALID_TOKEN);
    free(t);
    /* No kid: every fitting key is tried. */
    t = sign(rsa, AUTH_ALG_PS256, NULL, CLAIMS);
    CHECK_EQ_INT(auth_bearer_verify(b, t, strlen(t), &g, &why), VT_ERR_OK);
    free(t);
    /* An unknown kid with no refresher running is a plain 401. */
    t = sign(rsa, AUTH_ALG_RS256, "nope", CLAIMS);
    CHECK_EQ_INT(auth_bearer_verify(b, t, strlen(t), &g, &why), VT_ERR_INVALID_TOKEN);
    free(t);
    /* kid of an EC key on an RS256 token. */
    t = sign(rsa, AUTH_ALG_RS256, "ec256", CLAIMS);
    CHECK_EQ_INT(auth_bearer_verify(b, t, strlen(t), &g, &why), VT_ERR_INVALID_TOKEN);
    free(t);
    /* Expired, wrong issuer. */
    t = sign(rsa, AUTH_ALG_RS256, "rsa1", "{\"iss\":\"https://idp\",\"exp\":1000}");
    CHECK_EQ_INT(auth_bearer_verify(b, t, strlen(t), &g, &why), VT_ERR_INVALID_TOKEN);
    free(t);
    t = sign(rsa, AUTH_ALG_RS256, "rsa1", "{\"iss\":\"https://evil\",\"exp\":4102444800}");
    CHECK_EQ_INT(auth_bearer_verify(b, t, strlen(t), &g, &why), VT_ERR_INVALID_TOKEN);
    free(t);
    auth_bearer_destroy(b);
}

TEST(policy_with_bearer)
{
    struct auth_keyset *ks = keyset();
    struct auth_policy p = {0};
    auth_admin_set(&p.admin, "adm");
    auth_policy_from_config(&p, &cfg);
    p.bearer = auth_bearer_create_static(&cfg, ks);
    auth_keyset_unref(ks);
    char *reader = sign(rsa, AUTH_ALG_RS256, "rsa1", CLAIMS);
    char *reloader = sign(rsa, AUTH_ALG_RS256, "rsa1",
                          "{\"iss\":\"https://idp\",\"exp\":4102444800,\"scope\":\"datasets:reload\"}");
    char *manager = sign(rsa, AUTH_ALG_RS256, "rsa1",
                         "{\"iss\":\"https://idp\",\"exp\":4102444800,\"scp\":[\"datasets:manage\"]}");
    char hr[4096], hl[4096], hm[4096];
    snprintf(hr, sizeof hr, "Bearer %s", reader);
    snprintf(hl, sizeof hl, "bearer  %s", reloader);
    snprintf(hm, sizeof hm, "BEARER %s", manager);
    struct {
        enum auth_perm perm;
        const char *admin, *authz;
        bool get;
        enum vt_err want;
        enum auth_challenge ch;
    } cases[] = {
        {AUTH_PERM_PUBLIC, NULL, NULL, true, VT_ERR_OK, 0},
        {AUTH_PERM_READ, NULL, NULL, true, VT_ERR_UNAUTHORIZED, AUTH_CHALLENGE_BEARER},
        {AUTH_PERM_READ, NULL, "Basic YTpi", true, VT_ERR_UNAUTHORIZED, AUTH_CHALLENGE_BEARER},
        {AUTH_PERM_READ, NULL, "Bearer", true, VT_ERR_INVALID_TOKEN, AUTH_CHALLENGE_INVALID_TOKEN},
        {AUTH_PERM_READ, NULL, "Bearer x.y.z", false, VT_ERR_INVALID_TOKEN,
         AUTH_CHALLENGE_INVALID_TOKEN},
        {AUTH_PERM_READ, NULL, hr, false, VT_ERR_OK, 0},
        {AUTH_PERM_READ, NULL, hl, false, VT_ERR_INSUFFICIENT_SCOPE,
         AUTH_CHALLENGE_INSUFFICIENT_SCOPE},
        {AUTH_PERM_READ, "adm", NULL, true, VT_ERR_UNAUTHORIZED, AUTH_CHALLENGE_BEARER},
        {AUTH_PERM_RELOAD, NULL, hl, false, VT_ERR_OK, 0},
        {AUTH_PERM_RELOAD, NULL, hr, false, VT_ERR_INSUFFICIENT_SCOPE,
         AUTH_CHALLENGE_INSUFFICIENT_SCOPE},
        {AUTH_PERM_RELOAD, "adm", NULL, false, VT_ERR_OK, 0},
        {AUTH_PERM_RELOAD, "bad", NULL, false, VT_ERR_UNAUTHORIZED, AUTH_CHALLENGE_BEARER},
        {AUTH_PERM_RELOAD, "bad", hl, false, VT_ERR_OK, 0},
        {AUTH_PERM_MANAGE, NULL, hm, false, VT_ERR_OK, 0},
        {AUTH_PERM_MANAGE, NULL, hl, false, VT_ERR_INSUFFICIENT_SCOPE,
         AUTH_CHALLENGE_INSUFFICIENT_SCOPE},
        {AUTH_PERM_MANAGE, "adm", NULL, false, VT_ERR_OK, 0},
        {AUTH_PERM_MANAGE, NULL, NULL, false, VT_ERR_UNAUTHORIZED, AUTH_CHALLENGE_BEARER},
    };
    for (size_t k = 0; k < 2 * sizeof cases / sizeof cases[0]; k++) {
        /* each case with the header's length unknown, then known (HTTP's) */
        size_t i = k / 2;
        struct auth_credentials c = {cases[i].admin, cases[i].authz, cases[i].get,
                                     k % 2 && cases[i].authz ? strlen(cases[i].authz) : 0};
        struct auth_decision d;
        enum vt_err rc = auth_authorize(&p, cases[i].perm, &c, &d);
        if (rc != cases[i].want)
            fprintf(stderr, "  case %zu: %s\n", i, d.message ? d.message : "-");
        CHECK_EQ_INT(rc, cases[i].want);
        CHECK_EQ_INT(d.challenge, cases[i].ch);
        CHECK(rc == VT_ERR_OK ? d.message == NULL : d.message != NULL);
    }
    /* The challenges. */
    struct auth_credentials none = {0}, bad = {NULL, "Bearer a.b.c", false, 0},
                            lacks = {NULL, hl, false, 0};
    struct auth_decision d;
    struct strbuf sb;
    sb_init(&sb, 0);
    auth_authorize(&p, AUTH_PERM_READ, &none, &d);
    auth_challenge_format(&p, AUTH_PERM_READ, &d, &sb);
    CHECK_EQ_STR(sb.buf, "Bearer realm=\"vitrine\", scope=\"datasets:read reader\"");
    sb_reset(&sb);
    auth_authorize(&p, AUTH_PERM_READ, &bad, &d);
    auth_challenge_format(&p, AUTH_PERM_READ, &d, &sb);
    CHECK_CONTAINS(sb.buf, "Bearer realm=\"vitrine\", error=\"invalid_token\", error_description=\"");
    sb_reset(&sb);
    auth_authorize(&p, AUTH_PERM_MANAGE, &lacks, &d);
    auth_challenge_format(&p, AUTH_PERM_MANAGE, &d, &sb);
    CHECK_CONTAINS(sb.buf, "error=\"insufficient_scope\"");
    CHECK_CONTAINS(sb.buf, "scope=\"datasets:manage\"");
    sb_release(&sb);
    /* anonymous_read opens GET/HEAD reads only; fallback off ignores the admin token. */
    p.anonymous_read = true;
    p.admin_token_fallback = false;
    struct auth_credentials get = {.safe_method = true}, post = {0}, admin = {"adm", NULL, false, 0};
    CHECK_EQ_INT(auth_authorize(&p, AUTH_PERM_READ, &get, &d), VT_ERR_OK);
    CHECK_EQ_INT(auth_authorize(&p, AUTH_PERM_READ, &post, &d), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_authorize(&p, AUTH_PERM_RELOAD, &get, &d), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_authorize(&p, AUTH_PERM_RELOAD, &admin, &d), VT_ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_authorize(&p, AUTH_PERM_MANAGE, &admin, &d), VT_ERR_UNAUTHORIZED);
    free(reader);
    free(reloader);
    free(manager);
    auth_bearer_destroy(p.bearer);
}

int main(void)
{
    rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    rsa_other = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    ec256 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    ec384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    ec521 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-521");
    cfg.issuer = "https://idp";
    strvec_push(&cfg.algorithms, "RS256");
    strvec_push(&cfg.algorithms, "PS256");
    strvec_push(&cfg.read_scopes, "datasets:read");
    strvec_push(&cfg.read_scopes, "reader");
    strvec_push(&cfg.reload_scopes, "datasets:reload");
    cfg.enabled = true;
    cfg.leeway_secs = 60;
    cfg.jwks_refresh_secs = 3600;
    cfg.admin_token_fallback = true;
    struct tl_case cases[] = {
        TEST_CASE(keyset_parse_skips_what_it_cannot_use),
        TEST_CASE(keyset_parse_rejects_bad_documents),
        TEST_CASE(every_algorithm_verifies),
        TEST_CASE(key_type_confusion),
        TEST_CASE(cache_hits_until_valid_until), TEST_CASE(cache_thread_slot),
        TEST_CASE(verifier_with_fixed_keys),
        TEST_CASE(policy_with_bearer),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    strvec_free(&cfg.algorithms);
    strvec_free(&cfg.read_scopes);
    strvec_free(&cfg.reload_scopes);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(rsa_other);
    EVP_PKEY_free(ec256);
    EVP_PKEY_free(ec384);
    EVP_PKEY_free(ec521);
    return rc;
}
