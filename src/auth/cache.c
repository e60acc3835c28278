/*
 * The verification cache: a token verified once is not verified again until
 * it expires, so a client repeating its token pays a hash and a compare, not
 * a signature check (~50 µs for RS256 here) per request.
 *
 * Keyed by a seeded XXH3 of the token's length and last KEY_TAIL bytes (the
 * end of its signature: as good as random, and hashing a 1 KB token whole
 * was half the cost of a hit), and compared in full on a hit: a hash
 * collision can only cost a miss, never let a different token pass. Only
 * tokens that verified are stored (what they grant, until exp + leeway), so
 * filling the cache takes tokens the issuer signed.
 *
 * Sixteen shards, each its own mutex and a set-associative table (4 ways per
 * set); a new entry replaces an expired way or the oldest one of its set.
 * Bounded in entries (VT_AUTH_CACHE_ENTRIES) and bytes (VT_AUTH_CACHE_MAX_BYTES);
 * a token that would pass the byte budget is simply not cached.
 *
 * In front of the shards, each thread keeps the last token it found there
 * (a client repeats its token on every request of a connection, and a
 * connection stays on one thread): a hit there is a length and a full
 * compare, no hash and no lock. The slot names the cache by an epoch drawn
 * from a process-wide counter at creation and at every clear, so a cleared
 * cache (keys rotated or revoked) or another cache never answers from it;
 * expiry is checked on every hit as in the shards.
 */
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "auth/auth.h"
#include "util/limits.h"

#define SHARDS 16
#define WAYS 4
#define SETS (VT_AUTH_CACHE_ENTRIES / SHARDS / WAYS)
#define KEY_TAIL 32
/* Tokens up to this long use the thread's slot (the rest only the shards). */
#define SLOT_TOKEN_MAX 4096

struct entry {
    uint64_t hash;
    char *token;                /* NULL: empty way */
    size_t len;
    uint64_t stamp;             /* insertion order within the shard */
    struct auth_grant grant;
};

struct shard {
    pthread_mutex_t mu;
    size_t bytes;
    uint64_t clock;
    struct entry e[SETS][WAYS];
};

struct auth_cache {
    uint64_t seed;
    _Atomic uint64_t epoch;     /* this cache, since its last clear */
    struct shard shards[SHARDS];
};

/* Never 0 (an empty slot's epoch). */
static _Atomic uint64_t next_epoch = 1;

/* The thread's last token found in a cache. */
struct slot {
    uint64_t epoch;             /* 0: empty */
    size_t len;
    struct auth_grant grant;
    char token[SLOT_TOKEN_MAX];
};
static _Thread_local struct slot last;

struct auth_cache *auth_cache_create(void)
{
    struct auth_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (RAND_bytes((unsigned char *)&c->seed, sizeof c->seed) != 1)
        c->seed = (uint64_t)(uintptr_t)c ^ 0x9e3779b97f4a7c15ull;
    c->epoch = atomic_fetch_add(&next_epoch, 1);
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_init(&c->shards[i].mu, NULL);
    return c;
}

static void entry_clear(struct shard *s, struct entry *e)
{
    if (e->token) {
        s->bytes -= e->len;
        free(e->token);
    }
    memset(e, 0, sizeof *e);
}

void auth_cache_clear(struct auth_cache *c)
{
    if (!c)
        return;
    /* first: no thread's slot answers for this cache from here on */
    atomic_store(&c->epoch, atomic_fetch_add(&next_epoch, 1));
    for (int i = 0; i < SHARDS; i++) {
        struct shard *s = &c->shards[i];
        pthread_mutex_lock(&s->mu);
        for (int j = 0; j < SETS; j++)
            for (int w = 0; w < WAYS; w++)
                entry_clear(s, &s->e[j][w]);
        pthread_mutex_unlock(&s->mu);
    }
    /* and again: a thread that read the first new epoch may have found a
     * shard not yet cleared and put its token in its slot under it */
    atomic_store(&c->epoch, atomic_fetch_add(&next_epoch, 1));
}

void auth_cache_destroy(struct auth_cache *c)
{
    if (!c)
        return;
    auth_cache_clear(c);
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_destroy(&c->shards[i].mu);
    free(c);
}

static uint64_t key_hash(const struct auth_cache *c, const char *token, size_t len)
{
    size_t n = len < KEY_TAIL ? len : KEY_TAIL;
    return XXH3_64bits_withSeed(token + len - n, n, c->seed ^ (uint64_t)len);
}

static struct shard *locate(struct auth_cache *c, uint64_t h, struct entry **out_set)
{
    struct shard *s = &c->shards[h % SHARDS];
    *out_set = s->e[(h / SHARDS) % SETS];
    return s;
}

bool auth_cache_get(struct auth_cache *c, const char *token, size_t len, int64_t now,
                    struct auth_grant *out)
{
    uint64_t epoch = atomic_load(&c->epoch);
    if (last.epoch == epoch && last.len == len && memcmp(last.token, token, len) == 0) {
        if (now <= last.grant.valid_until) {
            *out = last.grant;
            return true;
        }
        last.epoch = 0; /* expired: the shards drop it below */
    }
    uint64_t h = key_hash(c, token, len);
    struct entry *set;
    struct shard *s = locate(c, h, &set);
    bool hit = false;
    pthread_mutex_lock(&s->mu);
    for (int w = 0; w < WAYS; w++) {
        struct entry *e = &set[w];
        if (e->token && e->hash == h && e->len == len && memcmp(e->token, token, len) == 0) {
            if (now <= e->grant.valid_until) {
                *out = e->grant;
                hit = true;
                if (len <= SLOT_TOKEN_MAX) {
                    last.epoch = epoch;
                    last.len = len;
                    last.grant = e->grant;
                    memcpy(last.token, token, len);
                }
            } else {
                entry_clear(s, e);
            }
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return hit;
}

void auth_cache_put(struct auth_cache *c, const char *token, size_t len, int64_t now,
                    const struct auth_grant *g)
{
    if (now > g->valid_until || len > VT_JWT_MAX_TOKEN_BYTES)
        return;
    uint64_t h = key_hash(c, token, len);
    struct entry *set;
    struct shard *s = locate(c, h, &set);
    char *copy = malloc(len);
    if (!copy)
        return;
    memcpy(copy, token, len);
    pthread_mutex_lock(&s->mu);
    struct entry *victim = NULL;
    for (int w = 0; w < WAYS && !victim; w++) {
        struct entry *e = &set[w];
        if (e->token && e->hash == h && e->len == len && memcmp(e->token, token, len) == 0)
            victim = e; /* already there (two threads verified it at once) */
    }
    for (int w = 0; w < WAYS && !victim; w++)
        if (!set[w].token || now > set[w].grant.valid_until)
            victim = &set[w];
    if (!victim) {
        victim = &set[0];
        for (int w = 1; w < WAYS; w++)
            if (set[w].stamp < victim->stamp)
                victim = &set[w];
    }
    entry_clear(s, victim);
    if (s->bytes + len > VT_AUTH_CACHE_MAX_BYTES / SHARDS) {
        pthread_mutex_unlock(&s->mu);
        free(copy);
        return;
    }
    victim->hash = h;
    victim->token = copy;
    victim->len = len;
    victim->stamp = ++s->clock;
    victim->grant = *g;
    s->bytes += len;
    pthread_mutex_unlock(&s->mu);
}
