/*
 * Authentication and authorization: who may call which route.
 *
 * Every route carries the permission it needs (enum auth_perm, in the route
 * table); the router asks auth_authorize() once per request, before the
 * handler runs. The credentials are the admin token (X-Admin-Token against
 * $ADMIN_TOKEN) and, when [auth] is enabled, bearer tokens: OIDC/OAuth2 JWTs
 * signed by the configured issuer (RS/ES/PS 256/384/512), whose scopes grant
 * read, reload or manage.
 *
 * The bearer pieces, each testable alone:
 *   jwt.c     compact JWS → header, claims, signature (bounded, no crypto)
 *   claims.c  iss/aud/exp/nbf/iat, scopes (`scope`, `scp`), tenant (RFC 6901)
 *   jwk.c     JWKS → OpenSSL keys; signature verification
 *   fetch.c   OIDC discovery and the JWKS over libcurl (bounded, same-host)
 *   cache.c   verified tokens until exp: a repeated token costs a hash lookup
 *   bearer.c  the verifier: keys, the refresher thread, degraded start
 *   policy.c  the spec's permission map as one function
 */
#ifndef VT_AUTH_AUTH_H
#define VT_AUTH_AUTH_H

#include <jansson.h>
#include <openssl/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/errors.h"
#include "util/strbuf.h"
#include "util/strvec.h"

/* The permission a route needs (the spec's permission map). */
enum auth_perm {
    AUTH_PERM_PUBLIC = 0,       /* probes, metrics, static UI assets */
    AUTH_PERM_READ,             /* listings, status, schema, query, count, export, sql, MCP */
    AUTH_PERM_RELOAD,           /* reload, reload-all, registration, persist, config reload */
    AUTH_PERM_MANAGE,           /* /queries (saved queries) */
};

/* "public", "read", "reload", "manage" (for docs and the OpenAPI document). */
const char *auth_perm_name(enum auth_perm perm);

/* The scope that grants MANAGE (fixed by the spec). */
#define AUTH_MANAGE_SCOPE "datasets:manage"

/* ------------------------------------------------------ admin (admin.c) */

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

/* ------------------------------------------------------- JWT (jwt.c)
 * A compact JWS (RFC 7515) split and decoded: no signature check here. */

enum auth_alg {
    AUTH_ALG_INVALID = 0,       /* none, HS*, anything else */
    AUTH_ALG_RS256, AUTH_ALG_RS384, AUTH_ALG_RS512,
    AUTH_ALG_ES256, AUTH_ALG_ES384, AUTH_ALG_ES512,
    AUTH_ALG_PS256, AUTH_ALG_PS384, AUTH_ALG_PS512,
    AUTH_ALG__COUNT
};

/* The algorithm by its exact (case-sensitive) JOSE name; INVALID otherwise. */
enum auth_alg auth_alg_from_name(const char *name);
const char *auth_alg_name(enum auth_alg alg);

struct auth_jwt {
    enum auth_alg alg;
    const char *kid;            /* points into header; NULL when absent */
    json_t *header;             /* JSON object */
    json_t *claims;             /* JSON object */
    size_t signing_len;         /* the signed bytes: token[0 .. signing_len) */
    unsigned char *sig;         /* decoded signature (malloc'd) */
    size_t sig_len;
};

/* Strict base64url (RFC 4648 §5) without padding, canonical trailing bits.
 * Writes at most `cap` bytes. Returns 0, or -1 for bad input or overflow. */
int auth_b64url_decode(const char *in, size_t len, unsigned char *out, size_t cap,
                       size_t *out_len);

/* Parses a compact JWS: three base64url parts, header and claims JSON objects
 * (bounded sizes and depth, duplicate keys rejected), `alg` one of ours,
 * `crit` refused, `kid` a string when present. On failure returns
 * VT_ERR_INVALID_TOKEN with a static *out_reason and leaves *out empty. */
enum vt_err auth_jwt_parse(const char *token, size_t len, struct auth_jwt *out,
                           const char **out_reason);
void auth_jwt_release(struct auth_jwt *jwt);

/* -------------------------------------------------- claims (claims.c) */

#define AUTH_GRANT_READ 1u
#define AUTH_GRANT_RELOAD 2u
#define AUTH_GRANT_MANAGE 4u

/* What a token is checked against: [auth] in the form the checks use. */
struct auth_rules {
    const char *issuer;
    const char *audience;       /* NULL: not checked */
    int64_t leeway;             /* seconds, for exp, nbf and iat */
    unsigned algs;              /* bit (1u << enum auth_alg) per accepted algorithm */
    const struct strvec *read_scopes;
    const struct strvec *reload_scopes;
    const char *tenant_claim;   /* JSON pointer; NULL: no tenant */
    const struct strvec *allowed_tenants; /* empty: any tenant */
};

/* The outcome for a valid token. */
struct auth_grant {
    unsigned grants;            /* AUTH_GRANT_* its scopes give */
    bool tenant_denied;         /* its tenant is not allowed: grants nothing */
    int64_t valid_until;        /* exp + leeway (Unix seconds) */
};

/* Fills rules from [auth] (pointers into cfg, which must outlive them). */
void auth_rules_from_config(struct auth_rules *r, const struct auth_config *cfg);
/* Checks iss, aud, exp (required), nbf, iat at time `now` and derives the
 * grant from `scope`/`scp` and the tenant. VT_ERR_OK, or VT_ERR_INVALID_TOKEN
 * with a static reason. */
enum vt_err auth_claims_check(const struct auth_rules *r, const json_t *claims, int64_t now,
                              struct auth_grant *out, const char **out_reason);
/* RFC 6901: the value at `ptr` in `doc`, or NULL (absent or malformed). */
const json_t *auth_json_pointer(const json_t *doc, const char *ptr);

/* ---------------------------------------------------- keys (jwk.c) */

enum auth_kty { AUTH_KTY_RSA = 1, AUTH_KTY_EC256, AUTH_KTY_EC384, AUTH_KTY_EC521 };

struct auth_key {
    char *kid;                  /* NULL when the JWK has none */
    enum auth_kty kty;
    enum auth_alg alg;          /* the JWK's "alg", INVALID when absent */
    EVP_PKEY *pkey;
};

/* The issuer's signing keys, shared read-only by verifying threads. */
struct auth_keyset {
    _Atomic int refs;
    size_t n;
    size_t skipped;             /* JWKs not usable for verification (other kty, use, ...) */
    struct auth_key keys[];
};

/* Parses a JWKS document ({"keys": [...]}) into OpenSSL keys (RSA n/e of
 * 2048 bits or more; EC P-256/P-384/P-521 x/y, checked on the curve). Keys
 * that are not signature keys we can use are skipped and counted; no usable
 * key at all is an error. Bounded by VT_AUTH_MAX_DOC_BYTES and
 * VT_AUTH_MAX_KEYS. */
enum vt_err auth_keyset_parse(const char *json, size_t len, struct auth_keyset **out,
                              struct vt_error *err);
struct auth_keyset *auth_keyset_ref(struct auth_keyset *ks);
void auth_keyset_unref(struct auth_keyset *ks);
/* True when `key` can check a signature made with `alg` (type, curve, the
 * JWK's own alg). */
bool auth_key_fits(const struct auth_key *key, enum auth_alg alg);
/* Verifies jwt's signature over token[0 .. signing_len) with `key`. ES
 * signatures are JOSE r||s, converted to DER for OpenSSL; PS uses PSS with
 * MGF1 of the same hash and salt length = hash length. */
enum vt_err auth_jwt_verify(const struct auth_jwt *jwt, const char *token,
                            const struct auth_key *key, const char **out_reason);

/* ------------------------------------------------- fetching (fetch.c) */

/* True for http URLs whose host is loopback (127.0.0.0/8, ::1, localhost). */
bool auth_url_loopback_http(const char *url);
/* GETs `url` (https, or http to a loopback host), following at most
 * VT_AUTH_MAX_REDIRECTS redirects to the same scheme, host and port, with
 * connect and total timeouts and a body cap. *stop (may be NULL) aborts the
 * transfer when it becomes non-zero. */
enum vt_err auth_http_get(const char *url, size_t cap, const volatile int *stop,
                          struct strbuf *out_body, struct vt_error *err);
/* OIDC discovery ({issuer}/.well-known/openid-configuration, whose issuer
 * must equal ours) then the JWKS at its jwks_uri. */
enum vt_err auth_fetch_keys(const char *issuer, const volatile int *stop,
                            struct auth_keyset **out, struct vt_error *err);

/* ----------------------------------------------- the cache (cache.c)
 * Verified tokens, keyed by a seeded 64-bit hash and compared in full, kept
 * until their valid_until; bounded in entries and bytes. Thread-safe. */

struct auth_cache;
struct auth_cache *auth_cache_create(void);
void auth_cache_destroy(struct auth_cache *c);
bool auth_cache_get(struct auth_cache *c, const char *token, size_t len, int64_t now,
                    struct auth_grant *out);
void auth_cache_put(struct auth_cache *c, const char *token, size_t len, int64_t now,
                    const struct auth_grant *g);
void auth_cache_clear(struct auth_cache *c);

/* ------------------------------------------------ the verifier (bearer.c) */

struct auth_bearer;

/* Builds the verifier for [auth] (cfg must outlive it). With start_degraded
 * false the keys are fetched here and a failure is an error (startup fails);
 * otherwise the refresher thread fetches them at once and retries while the
 * issuer is unreachable. The thread refreshes every jwks_refresh_secs. */
enum vt_err auth_bearer_create(const struct auth_config *cfg, struct auth_bearer **out,
                               struct vt_error *err);
/* A verifier with fixed keys and no thread (tests); takes a reference. */
struct auth_bearer *auth_bearer_create_static(const struct auth_config *cfg,
                                              struct auth_keyset *keys);
void auth_bearer_destroy(struct auth_bearer *b);
/* Verifies a token (cached): VT_ERR_OK with the grant; VT_ERR_INVALID_TOKEN
 * (401); VT_ERR_AUTH_UNAVAILABLE (503 + Retry-After: no keys yet, or keys
 * being refetched for the token's unknown kid). */
enum vt_err auth_bearer_verify(struct auth_bearer *b, const char *token, size_t len,
                               struct auth_grant *out, const char **out_reason);
/* Whether keys are loaded (for logs and tests). */
bool auth_bearer_has_keys(struct auth_bearer *b);

/* ------------------------------------------------ the policy (policy.c) */

/* What the server was configured with: the policy's inputs. */
struct auth_policy {
    struct auth_admin admin;
    bool bearer_enabled;        /* [auth] enabled */
    bool anonymous_read;        /* [auth] anonymous_read: GET/HEAD reads are open */
    bool admin_token_fallback;  /* [auth] admin_token_fallback */
    struct auth_bearer *bearer; /* the verifier (NULL: bearer tokens never pass) */
    const struct auth_config *cfg; /* scopes for challenges; may be NULL */
};

/* Fills the bearer fields from [auth] (bearer stays NULL). */
void auth_policy_from_config(struct auth_policy *p, const struct auth_config *cfg);

/* What a request presents. Any field may be NULL. */
struct auth_credentials {
    const char *admin_token;    /* X-Admin-Token */
    const char *authorization;  /* Authorization */
    bool safe_method;           /* GET or HEAD (anonymous_read opens only these) */
    size_t authorization_len;   /* Authorization's length when known (0: measured here) */
};

/* The WWW-Authenticate challenge a refusal carries (RFC 6750). */
enum auth_challenge {
    AUTH_CHALLENGE_NONE = 0,
    AUTH_CHALLENGE_BEARER,            /* no bearer token was sent */
    AUTH_CHALLENGE_INVALID_TOKEN,     /* error="invalid_token" */
    AUTH_CHALLENGE_INSUFFICIENT_SCOPE /* error="insufficient_scope" (403) */
};

struct auth_decision {
    const char *message;        /* why (static text; never the token) */
    enum auth_challenge challenge;
    int retry_after;            /* > 0: Retry-After seconds (503) */
};

/* The decision for one request to a route needing `perm`: VT_ERR_OK to run
 * the handler, or the error to answer with. VT_ERR_NOT_FOUND means the route
 * is hidden: answer exactly as if it did not exist (saved-queries routes with
 * neither ADMIN_TOKEN nor OIDC configured). */
enum vt_err auth_authorize(const struct auth_policy *p, enum auth_perm perm,
                           const struct auth_credentials *cred, struct auth_decision *out);
/* Appends the WWW-Authenticate value for a refusal of a `perm` route:
 * Bearer realm="vitrine"[, error=...][, scope="..."]. Nothing for
 * AUTH_CHALLENGE_NONE. */
void auth_challenge_format(const struct auth_policy *p, enum auth_perm perm,
                           const struct auth_decision *d, struct strbuf *out);

#endif
