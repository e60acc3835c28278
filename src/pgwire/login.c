/*
 * Who may open a session (the listener thread's side of authentication):
 *
 *   - server.pgwire.password: the configured user with that password (a
 *     service account; with [auth] on it bypasses scopes and tenants, which
 *     the startup log says);
 *   - with [auth] on: a bearer token as the password, decided by the same
 *     permission map as HTTP (auth_authorize, read permission: scopes,
 *     tenants, the admin token fallback); a session lives until the token's
 *     expiry; [auth] anonymous_read opens pgwire without one, as it opens
 *     HTTP reads;
 *   - neither: any client that reaches the (loopback) listener.
 *
 * Failed passwords are limited per client address: past
 * VT_PGWIRE_AUTH_MAX_FAILURES within VT_PGWIRE_AUTH_WINDOW_SECS the address is
 * refused, before any password is read, for VT_PGWIRE_AUTH_BLOCK_SECS (a few
 * guesses a minute instead of thousands a second), and the log says so once
 * instead of once per guess. Names a client sent before it authenticated are
 * logged escaped (pgw_log_name): newlines and terminal escapes cannot forge
 * log lines. One thread uses this (the listener's): no locks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "auth/auth.h"
#include "pgwire/pgwire_internal.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

#define LIMITER_ENTRIES 512

struct failures {
    char peer[64];
    int64_t window_start_ms;
    int fails;                      /* in the window */
    int64_t blocked_until_ms;
    int refused;                    /* attempts refused while blocked */
    int64_t last_ms;                /* for eviction */
};

struct pgw_login {
    char username[64];
    bool has_password;
    unsigned char password_digest[SHA256_DIGEST_LENGTH];
    const struct auth_policy *auth; /* NULL: no [auth] */
    struct failures table[LIMITER_ENTRIES];
};

static void digest(const char *pw, unsigned char out[SHA256_DIGEST_LENGTH])
{
    SHA256((const unsigned char *)pw, strlen(pw), out);
}

static bool bearer(const struct pgw_login *l)
{
    return l->auth && l->auth->bearer_enabled;
}

struct pgw_login *pgw_login_create(const struct pgwire_config *pg,
                                   const struct auth_policy *auth)
{
    struct pgw_login *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    snprintf(l->username, sizeof l->username, "%s", pg->username);
    if (pg->password) {
        l->has_password = true;
        digest(pg->password, l->password_digest);
    }
    l->auth = auth;
    return l;
}

void pgw_login_destroy(struct pgw_login *l)
{
    if (l)
        OPENSSL_cleanse(l->password_digest, sizeof l->password_digest);
    free(l);
}

bool pgw_login_needs_password(const struct pgw_login *l)
{
    return l->has_password || (bearer(l) && !l->auth->anonymous_read);
}

void pgw_login_describe(const struct pgw_login *l, const char *where)
{
    if (!l->has_password && !bearer(l))
        log_warn("pgwire: %s takes no password (server.pgwire.password unset, [auth] off): any "
                 "process that can connect reads every dataset",
                 where);
    else if (bearer(l) && l->auth->anonymous_read && !l->has_password)
        log_warn("pgwire: %s takes no password ([auth] anonymous_read opens reads to anyone); "
                 "clients that send a bearer token as the password still log in with it",
                 where);
    else if (bearer(l) && l->has_password)
        log_warn("pgwire: server.pgwire.password logs in as \"%s\" without the scopes and "
                 "tenants of [auth]; bearer tokens as passwords follow them",
                 l->username);
}

void pgw_log_name(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 5 < cap; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '\\' || *p == '"') {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = '\0';
}

/* The limiter's entry for peer (made when absent; the least recently used
 * one is reused when the table is full). */
static struct failures *entry(struct pgw_login *l, const char *peer, int64_t now, bool make)
{
    struct failures *free_slot = NULL, *oldest = &l->table[0];
    for (size_t i = 0; i < LIMITER_ENTRIES; i++) {
        struct failures *f = &l->table[i];
        if (f->peer[0] && !strcmp(f->peer, peer))
            return f;
        if (!f->peer[0] && !free_slot)
            free_slot = f;
        if (f->last_ms < oldest->last_ms)
            oldest = f;
    }
    if (!make)
        return NULL;
    struct failures *f = free_slot ? free_slot : oldest;
    memset(f, 0, sizeof *f);
    snprintf(f->peer, sizeof f->peer, "%s", peer);
    f->window_start_ms = now;
    f->last_ms = now;
    return f;
}

enum vt_err pgw_login_admit(struct pgw_login *l, const char *peer, struct vt_error *err)
{
    int64_t now = time_mono_ms();
    struct failures *f = entry(l, peer, now, false);
    if (!f || f->blocked_until_ms <= now)
        return VT_ERR_OK;
    f->refused++;
    f->last_ms = now;
    return vt_error_set(err, VT_ERR_PG_TOO_MANY_FAILURES,
                        "too many failed password attempts from %s: try again in %lld s", peer,
                        (long long)((f->blocked_until_ms - now + 999) / 1000));
}

static void failed(struct pgw_login *l, const char *peer, const char *user, const char *why)
{
    int64_t now = time_mono_ms();
    struct failures *f = entry(l, peer, now, true);
    if (now - f->window_start_ms > (int64_t)VT_PGWIRE_AUTH_WINDOW_SECS * 1000) {
        f->window_start_ms = now;
        f->fails = 0;
    }
    f->last_ms = now;
    char name[64 * 4 + 1];
    pgw_log_name(user, name, sizeof name);
    if (++f->fails == 1) {
        log_info("pgwire: password authentication failed for user \"%s\" from %s (%s)%s", name,
                 peer, why, f->refused ? "; earlier attempts were refused while blocked" : "");
        f->refused = 0;
    }
    if (f->fails >= VT_PGWIRE_AUTH_MAX_FAILURES) {
        f->blocked_until_ms = now + (int64_t)VT_PGWIRE_AUTH_BLOCK_SECS * 1000;
        log_warn("pgwire: %d failed password attempts from %s within %d s (last for user "
                 "\"%s\"): refusing it for %d s",
                 f->fails, peer, VT_PGWIRE_AUTH_WINDOW_SECS, name, VT_PGWIRE_AUTH_BLOCK_SECS);
        f->fails = 0;
        f->window_start_ms = now;
    }
}

enum vt_err pgw_login_check(struct pgw_login *l, const char *peer, const char *user,
                            const char *password, int64_t *out_valid_until,
                            struct vt_error *err)
{
    *out_valid_until = 0;
    if (pgw_login_admit(l, peer, err) != VT_ERR_OK)
        return err->code;
    if (l->has_password && password) {
        unsigned char d[SHA256_DIGEST_LENGTH];
        digest(password, d);
        bool pw_ok = CRYPTO_memcmp(d, l->password_digest, sizeof d) == 0;
        if (pw_ok && !strcmp(user, l->username))
            return VT_ERR_OK;
    }
    const char *why = "wrong password";
    if (bearer(l) && password && *password) {
        struct strbuf h;
        sb_init(&h, VT_MAX_HEADER_BYTES);
        sb_adds(&h, "Bearer ");
        sb_adds(&h, password);
        struct auth_credentials cred = {.authorization = h.overflow ? NULL : h.buf,
                                        .safe_method = true};
        struct auth_decision d = {0};
        enum vt_err rc = auth_authorize(l->auth, AUTH_PERM_READ, &cred, &d);
        if (rc == VT_ERR_OK) {
            struct auth_grant g = {0};
            const char *reason = NULL;
            if (l->auth->bearer &&
                auth_bearer_verify(l->auth->bearer, password, strlen(password), &g, &reason) ==
                    VT_ERR_OK)
                *out_valid_until = g.valid_until;
            sb_release(&h);
            return VT_ERR_OK;
        }
        sb_release(&h);
        if (rc == VT_ERR_AUTH_UNAVAILABLE)
            return vt_error_set(err, VT_ERR_AUTH_UNAVAILABLE, "%s",
                                d.message ? d.message
                                          : "the identity provider's signing keys are not "
                                            "available yet");
        why = d.message ? d.message : "the token was refused";
    } else if (bearer(l) && !l->has_password) {
        why = "a bearer token is the password";
    }
    failed(l, peer, user, why);
    char name[64 * 4 + 1];
    pgw_log_name(user, name, sizeof name);
    return vt_error_set(err, VT_ERR_PG_PASSWORD_FAILED,
                        "password authentication failed for user \"%s\"", name);
}
