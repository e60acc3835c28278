/*
 * The bearer-token verifier: the issuer's keys, kept fresh by one thread, and
 * the path a token takes on a request.
 *
 * A request's token goes: size check → cache (hit: done, a hash and a
 * compare) → parse → algorithm allowed → key by kid (or the first
 * VT_AUTH_MAX_KIDLESS_TRIES fitting keys when the token names none) →
 * signature → claims → cache. This runs on the
 * HTTP thread and never blocks on the network: when a token names a kid we do
 * not know, the refresher is asked to refetch (at most once per
 * VT_AUTH_KID_REFETCH_SECS, so tokens with random kids cannot flood the
 * issuer) and the request gets 503 + Retry-After while that fetch runs;
 * afterwards a still-unknown kid is a 401. Key rotation thus works without a
 * restart, by the periodic refresh or by the first token signed with a new key.
 *
 * The refresher thread fetches discovery + JWKS every jwks_refresh_secs, and
 * after a failure retries with backoff (1 s doubling up to
 * VT_AUTH_RETRY_MAX_SECS) while the old keys keep serving. Until the first
 * keys exist (start_degraded = true and the issuer unreachable at boot),
 * bearer requests get 503 + Retry-After. A new key set that drops or changes
 * a key empties the cache: a removed key's tokens stop passing at once.
 *
 * Tokens are never logged, not even in part.
 */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "util/limits.h"
#include "util/log.h"

struct auth_bearer {
    const struct auth_config *cfg;
    struct auth_rules rules;
    struct auth_cache *cache;
    int64_t refresh_secs;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct auth_keyset *keys;   /* NULL until the first fetch succeeds */
    bool kick;                  /* an unknown kid asked for a refetch */
    bool kid_fetch_pending;     /* ... and that refetch has not finished */
    int64_t last_kick;          /* monotonic seconds */
    bool stop;
    volatile int stop_flag;     /* aborts a transfer in flight */
    bool thread_started;
    pthread_t thread;
};

static int64_t mono_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

static struct auth_bearer *bearer_new(const struct auth_config *cfg)
{
    struct auth_bearer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->cfg = cfg;
    auth_rules_from_config(&b->rules, cfg);
    b->cache = auth_cache_create();
    if (!b->cache) {
        free(b);
        return NULL;
    }
    /* A refresh period past a year is as good as never; keeps time sums small. */
    b->refresh_secs = cfg->jwks_refresh_secs < 1 ? 1
                      : cfg->jwks_refresh_secs > 366 * 86400 ? 366 * 86400
                                                             : cfg->jwks_refresh_secs;
    b->last_kick = INT64_MIN / 2;
    pthread_mutex_init(&b->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->cv, &ca);
    pthread_condattr_destroy(&ca);
    return b;
}

/* Whether every key of `old` is in `now` (same kid, same key material). */
static bool keys_kept(const struct auth_keyset *old, const struct auth_keyset *now)
{
    for (size_t i = 0; i < old->n; i++) {
        bool found = false;
        for (size_t j = 0; j < now->n && !found; j++) {
            const struct auth_key *a = &old->keys[i], *k = &now->keys[j];
            bool same_kid = (!a->kid && !k->kid) || (a->kid && k->kid && !strcmp(a->kid, k->kid));
            found = same_kid && EVP_PKEY_eq(a->pkey, k->pkey) == 1;
        }
        if (!found)
            return false;
    }
    return true;
}

static void log_keys(const char *what, const char *issuer, const struct auth_keyset *ks)
{
    char kids[512];
    size_t o = 0;
    kids[0] = '\0';
    for (size_t i = 0; i < ks->n && o + 1 < sizeof kids; i++) {
        int w = snprintf(kids + o, sizeof kids - o, "%s%s", i ? ", " : "",
                         ks->keys[i].kid ? ks->keys[i].kid : "(no kid)");
        if (w < 0)
            break;
        o += (size_t)w;
    }
    log_info("auth: %s: %zu signing key%s from %s (kid %s)%s", what, ks->n, ks->n == 1 ? "" : "s",
             issuer, kids, ks->skipped ? "; other keys skipped" : "");
}

/* Installs a new key set (b->mu held); takes the reference. */
static void install(struct auth_bearer *b, struct auth_keyset *ks)
{
    struct auth_keyset *old = b->keys;
    b->keys = ks;
    if (!old) {
        log_keys("signing keys loaded", b->cfg->issuer, ks);
        return;
    }
    bool kept = keys_kept(old, ks);
    if (!kept)
        auth_cache_clear(b->cache);
    if (!kept || !keys_kept(ks, old))
        log_keys("signing keys changed", b->cfg->issuer, ks);
    else
        log_debug("auth: signing keys refreshed, unchanged");
    auth_keyset_unref(old);
}

static void *refresher(void *arg)
{
    struct auth_bearer *b = arg;
    int failures = 0;
    pthread_mutex_lock(&b->mu);
    int64_t next = b->keys ? mono_secs() + b->refresh_secs : mono_secs();
    while (!b->stop) {
        int64_t now = mono_secs();
        if (!b->kick && now < next) {
            struct timespec ts = {.tv_sec = (time_t)next};
            pthread_cond_timedwait(&b->cv, &b->mu, &ts);
            continue;
        }
        bool kicked = b->kick;
        b->kick = false;
        pthread_mutex_unlock(&b->mu);

        struct vt_error err = {0};
        struct auth_keyset *ks = NULL;
        enum vt_err rc = auth_fetch_keys(b->cfg->issuer, &b->stop_flag, &ks, &err);

        pthread_mutex_lock(&b->mu);
        if (kicked)
            b->kid_fetch_pending = false;
        if (b->stop) {
            auth_keyset_unref(ks);
            break;
        }
        now = mono_secs();
        if (rc == VT_ERR_OK) {
            install(b, ks);
            failures = 0;
            next = now + b->refresh_secs;
        } else {
            failures++;
            int64_t wait = (int64_t)1 << (failures > 7 ? 6 : failures - 1);
            if (wait > VT_AUTH_RETRY_MAX_SECS)
                wait = VT_AUTH_RETRY_MAX_SECS;
            if (wait > b->refresh_secs)
                wait = b->refresh_secs;
            next = now + wait;
            if (!b->keys)
                log_warn("auth: cannot load the signing keys: %s; bearer tokens get 503 until "
                         "they load; retrying in %lld s",
                         vt_error_message(&err), (long long)wait);
            else
                log_warn("auth: key refresh failed: %s; the current keys stay in use; retrying "
                         "in %lld s",
                         vt_error_message(&err), (long long)wait);
        }
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

enum vt_err auth_bearer_create(const struct auth_config *cfg, struct auth_bearer **out,
                               struct vt_error *err)
{
    *out = NULL;
    if (!cfg->issuer)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "[auth] enabled needs an issuer");
    if (strncmp(cfg->issuer, "https://", 8) != 0 && !auth_url_loopback_http(cfg->issuer))
        return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                            "[auth] issuer \"%.200s\": plain http is allowed only for a loopback "
                            "host (127.0.0.1, ::1, localhost); use https",
                            cfg->issuer);
    struct auth_bearer *b = bearer_new(cfg);
    if (!b)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "auth");
    if (!cfg->start_degraded) {
        struct vt_error ferr = {0};
        struct auth_keyset *ks = NULL;
        if (auth_fetch_keys(cfg->issuer, NULL, &ks, &ferr) != VT_ERR_OK) {
            auth_bearer_destroy(b);
            return vt_error_set(err, VT_ERR_UNAVAILABLE,
                                "auth: cannot load the signing keys of %.200s: %s "
                                "([auth] start_degraded = false, so the server does not start)",
                                cfg->issuer, vt_error_message(&ferr));
        }
        install(b, ks);
    }
    if (pthread_create(&b->thread, NULL, refresher, b) != 0) {
        auth_bearer_destroy(b);
        return vt_error_set(err, VT_ERR_INTERNAL, "auth: cannot start the key refresher");
    }
    b->thread_started = true;
    *out = b;
    return VT_ERR_OK;
}

struct auth_bearer *auth_bearer_create_static(const struct auth_config *cfg,
                                              struct auth_keyset *keys)
{
    struct auth_bearer *b = bearer_new(cfg);
    if (b)
        b->keys = auth_keyset_ref(keys);
    return b;
}

void auth_bearer_destroy(struct auth_bearer *b)
{
    if (!b)
        return;
    if (b->thread_started) {
        pthread_mutex_lock(&b->mu);
        b->stop = true;
        b->stop_flag = 1;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
        pthread_join(b->thread, NULL);
    }
    auth_keyset_unref(b->keys);
    auth_cache_destroy(b->cache);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

bool auth_bearer_has_keys(struct auth_bearer *b)
{
    pthread_mutex_lock(&b->mu);
    bool has = b->keys != NULL;
    pthread_mutex_unlock(&b->mu);
    return has;
}

/* A kid we do not know: ask for a refetch when allowed (503 meanwhile), else
 * 401. */
static enum vt_err unknown_kid(struct auth_bearer *b, const char **out_reason)
{
    enum vt_err rc;
    pthread_mutex_lock(&b->mu);
    int64_t now = mono_secs();
    if (b->kid_fetch_pending) {
        rc = VT_ERR_AUTH_UNAVAILABLE;
    } else if (b->thread_started && now - b->last_kick >= VT_AUTH_KID_REFETCH_SECS) {
        b->last_kick = now;
        b->kick = true;
        b->kid_fetch_pending = true;
        pthread_cond_signal(&b->cv);
        rc = VT_ERR_AUTH_UNAVAILABLE;
    } else {
        rc = VT_ERR_INVALID_TOKEN;
    }
    pthread_mutex_unlock(&b->mu);
    *out_reason = rc == VT_ERR_AUTH_UNAVAILABLE
                      ? "the token's signing key (kid) is not known yet: keys are being refreshed"
                      : "the token's signing key (kid) is not one of the issuer's keys";
    return rc;
}

enum vt_err auth_bearer_verify(struct auth_bearer *b, const char *token, size_t len,
                               struct auth_grant *out, const char **out_reason)
{
    *out_reason = NULL;
    memset(out, 0, sizeof *out);
    if (len > VT_JWT_MAX_TOKEN_BYTES) {
        *out_reason = "token too large";
        return VT_ERR_INVALID_TOKEN;
    }
    int64_t now = (int64_t)time(NULL);
    if (auth_cache_get(b->cache, token, len, now, out))
        return VT_ERR_OK;

    pthread_mutex_lock(&b->mu);
    struct auth_keyset *ks = auth_keyset_ref(b->keys);
    pthread_mutex_unlock(&b->mu);
    if (!ks) {
        *out_reason = "the identity provider's signing keys are not loaded yet";
        return VT_ERR_AUTH_UNAVAILABLE;
    }
    struct auth_jwt jwt;
    enum vt_err rc = auth_jwt_parse(token, len, &jwt, out_reason);
    if (rc != VT_ERR_OK)
        goto out;
    if (!(b->rules.algs & (1u << jwt.alg))) {
        *out_reason = "token algorithm not accepted ([auth] algorithms)";
        rc = VT_ERR_INVALID_TOKEN;
        goto out;
    }
    rc = VT_ERR_INVALID_TOKEN;
    *out_reason = "no signing key fits the token's algorithm";
    bool kid_known = false;
    int tries = 0; /* a token without kid costs at most a few signature checks */
    for (size_t i = 0; i < ks->n && tries < VT_AUTH_MAX_KIDLESS_TRIES; i++) {
        const struct auth_key *k = &ks->keys[i];
        if (jwt.kid) {
            if (!k->kid || strcmp(k->kid, jwt.kid) != 0)
                continue;
            kid_known = true;
        }
        if (!auth_key_fits(k, jwt.alg))
            continue;
        tries++;
        rc = auth_jwt_verify(&jwt, token, k, out_reason);
        if (rc == VT_ERR_OK)
            break;
    }
    if (jwt.kid && !kid_known) {
        rc = unknown_kid(b, out_reason);
        goto out;
    }
    if (rc != VT_ERR_OK)
        goto out;
    rc = auth_claims_check(&b->rules, jwt.claims, now, out, out_reason);
    if (rc == VT_ERR_OK)
        auth_cache_put(b->cache, token, len, now, out);
out:
    auth_jwt_release(&jwt);
    auth_keyset_unref(ks);
    return rc;
}
