/*
 * libFuzzer target for the key-set parser (src/auth/jwk.c): a JWKS document
 * as the issuer's server would send it, turned into OpenSSL keys (RSA n/e,
 * EC points checked on their curve). Every key that parses is then asked to
 * verify a fixed token for each algorithm it fits (it must refuse: the
 * signature is not from it). No network.
 *
 *   make fuzz && build-fuzz/fuzz_jwks -dict=tests/fuzz/jwt.dict tests/fuzz/corpus/fuzz_jwks
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

/* {"alg":"RS256"}.{"iss":"x"}.<256 zero bytes>, built once. */
static char token[64 + 342];
static size_t token_len;

static void make_token(void)
{
    const char *hp = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.";
    size_t n = strlen(hp);
    memcpy(token, hp, n);
    memset(token + n, 'A', 342);
    token_len = n + 342;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct auth_keyset *ks = NULL;
    struct vt_error err = {0};
    if (auth_keyset_parse((const char *)data, size, &ks, &err) != VT_ERR_OK) {
        if (ks || !err.msg[0])
            abort();
        return 0;
    }
    if (!ks || ks->n == 0)
        abort();
    if (!token_len)
        make_token();
    struct auth_jwt jwt;
    const char *why;
    if (auth_jwt_parse(token, token_len, &jwt, &why) != VT_ERR_OK)
        abort();
    for (size_t i = 0; i < ks->n; i++) {
        if (!ks->keys[i].pkey)
            abort();
        for (int a = AUTH_ALG_RS256; a < AUTH_ALG__COUNT; a++) {
            jwt.alg = (enum auth_alg)a;
            if (auth_key_fits(&ks->keys[i], jwt.alg) &&
                auth_jwt_verify(&jwt, token, &ks->keys[i], &why) == VT_ERR_OK)
                abort();
        }
    }
    auth_jwt_release(&jwt);
    auth_keyset_unref(ks);
    return 0;
}
