/*
 * The admin token. Comparison is on SHA-256 digests with CRYPTO_memcmp, so its
 * time depends neither on where the first differing byte is nor on the
 * presented token's length; the configured token is hashed once at startup and
 * only the digest is kept in memory.
 */
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

void auth_admin_set(struct auth_admin *a, const char *token)
{
    memset(a, 0, sizeof *a);
    if (!token || !*token)
        return;
    SHA256((const unsigned char *)token, strlen(token), a->digest);
    a->configured = true;
}

void auth_admin_init(struct auth_admin *a)
{
    auth_admin_set(a, getenv("ADMIN_TOKEN"));
}

enum vt_err auth_admin_check(const struct auth_admin *a, const char *presented)
{
    if (!a->configured)
        return VT_ERR_ADMIN_DISABLED;
    if (!presented || !*presented)
        return VT_ERR_UNAUTHORIZED;
    unsigned char digest[32];
    SHA256((const unsigned char *)presented, strlen(presented), digest);
    return CRYPTO_memcmp(digest, a->digest, sizeof digest) == 0 ? VT_ERR_OK : VT_ERR_UNAUTHORIZED;
}
