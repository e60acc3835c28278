/*
 * The refresh scheduler: one thread and a timer heap, no polling. It fires
 *
 *  - scheduled refreshes: a dataset with refresh.interval is rebuilt
 *    (refresh_source "schedule") one interval after its last build ended,
 *    with jitter (refresh.jitter, +-10%) so datasets started together do not
 *    rebuild together; after a failure the retry comes sooner (backoff from
 *    SCHED_RETRY_BASE_MS, doubling, never later than the interval) while the
 *    last good generation keeps serving;
 *  - upstream cascades: when a dataset publishes, every dataset whose
 *    refresh.on_upstream_reload is set and whose depends_on names it is
 *    rebuilt (refresh_source "cascade") refresh.debounce later; another
 *    upstream publish inside that window moves the same timer instead of
 *    adding one, so a wave of upstream reloads gives one dependent build, and
 *    a dependent that was rebuilt after the upstream published anyway (a
 *    reload-all wave builds it in topological order) absorbs the cascade;
 *  - expiries (ttl): the callback the catalog registered decides what expiry
 *    means (saved queries: unregister when nothing depends on them).
 *
 * next_refresh_at of a dataset is the due time of its pending scheduled
 * refresh. Timers are keyed by dataset name and kind; one of each at most.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

#define SCHED_RETRY_BASE_MS 5000
#define SCHED_BUSY_RETRY_MS 1000

struct timer {
    int64_t due_mono_ms;
    int64_t due_wall_us;        /* for next_refresh_at */
    enum cat_timer_kind kind;
    char *name;
    int64_t trigger_wall_us;    /* cascade: when the upstream published */
};

struct cat_scheduler {
    struct cat_catalog *cat;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    struct timer *heap;         /* min-heap on due_mono_ms */
    size_t n, cap;
    cat_expire_fn expire;       /* ttl expiry: what the owner wants done */
    void *expire_ctx;
};

/* ------------------------------------------------------------------ heap */

static bool earlier(const struct timer *a, const struct timer *b)
{
    return a->due_mono_ms < b->due_mono_ms;
}

static void swap(struct timer *a, struct timer *b)
{
    struct timer t = *a;
    *a = *b;
    *b = t;
}

static void sift_up(struct cat_scheduler *s, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!earlier(&s->heap[i], &s->heap[p]))
            break;
        swap(&s->heap[i], &s->heap[p]);
        i = p;
    }
}

static void sift_down(struct cat_scheduler *s, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->n && earlier(&s->heap[l], &s->heap[m]))
            m = l;
        if (r < s->n && earlier(&s->heap[r], &s->heap[m]))
            m = r;
        if (m == i)
            return;
        swap(&s->heap[i], &s->heap[m]);
        i = m;
    }
}

static void heap_remove(struct cat_scheduler *s, size_t i)
{
    free(s->heap[i].name);
    s->heap[i] = s->heap[--s->n];
    if (i < s->n) {
        sift_down(s, i);
        sift_up(s, i);
    }
}

static ssize_t find(struct cat_scheduler *s, const char *name, enum cat_timer_kind kind)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->heap[i].kind == kind && !strcmp(s->heap[i].name, name))
            return (ssize_t)i;
    return -1;
}

/* Sets (or moves) the timer of `name`/`kind`. Called with s->mu held. */
static void arm_locked(struct cat_scheduler *s, const char *name, enum cat_timer_kind kind,
                       int64_t delay_ms, int64_t trigger_wall_us)
{
    if (delay_ms < 0)
        delay_ms = 0;
    struct timer t = {.due_mono_ms = time_mono_ms() + delay_ms,
                      .due_wall_us = time_wall_us() + delay_ms * 1000,
                      .kind = kind,
                      .trigger_wall_us = trigger_wall_us};
    ssize_t at = find(s, name, kind);
    if (at >= 0) {
        struct timer *old = &s->heap[at];
        if (kind == CAT_TIMER_CASCADE && trigger_wall_us < old->trigger_wall_us)
            t.trigger_wall_us = old->trigger_wall_us;
        t.name = old->name;
        s->heap[at] = t;
        sift_down(s, (size_t)at);
        sift_up(s, (size_t)at);
    } else {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16;
            struct timer *h = realloc(s->heap, cap * sizeof *h);
            if (!h)
                return;
            s->heap = h;
            s->cap = cap;
        }
        t.name = strdup(name);
        if (!t.name)
            return;
        s->heap[s->n++] = t;
        sift_up(s, s->n - 1);
    }
    pthread_cond_signal(&s->cv);
}

/* ---------------------------------------------------------------- firing */

static void fire(struct cat_scheduler *s, const struct timer *t)
{
    struct cat_catalog *cat = s->cat;
    struct cat_dataset *ds = cat_dataset_get(cat, t->name);
    if (!ds)
        return; /* unregistered meanwhile */
    if (t->kind == CAT_TIMER_EXPIRE) {
        if (s->expire)
            s->expire(s->expire_ctx, ds);
        cat_dataset_put(ds);
        return;
    }
    enum cat_refresh_source source =
        t->kind == CAT_TIMER_REFRESH ? CAT_REFRESH_SCHEDULE : CAT_REFRESH_CASCADE;
    pthread_mutex_lock(&ds->mu);
    if (t->kind == CAT_TIMER_REFRESH)
        ds->next_refresh_at_us = 0;
    bool absorbed = t->kind == CAT_TIMER_CASCADE && ds->current &&
                    ds->last_refresh_at_us > t->trigger_wall_us;
    pthread_mutex_unlock(&ds->mu);
    if (absorbed) {
        log_debug("dataset %s: cascade absorbed (rebuilt after its upstream)", t->name);
    } else if (!cat_build_async(cat, ds, source, NULL, false)) {
        /* Already building: try again a little later (the build in progress
         * may predate the change that triggered this one). */
        pthread_mutex_lock(&s->mu);
        if (!s->stopping)
            arm_locked(s, t->name, t->kind, SCHED_BUSY_RETRY_MS, t->trigger_wall_us);
        pthread_mutex_unlock(&s->mu);
    } else {
        log_info("dataset %s: %s refresh started", t->name, cat_refresh_source_name(source));
    }
    cat_dataset_put(ds);
}

static void *sched_main(void *arg)
{
    struct cat_scheduler *s = arg;
    pthread_setname_np(pthread_self(), "scheduler");
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        if (s->n == 0) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        int64_t now = time_mono_ms();
        if (s->heap[0].due_mono_ms > now) {
            time_cond_wait(&s->cv, &s->mu, s->heap[0].due_mono_ms);
            continue;
        }
        struct timer t = s->heap[0];
        t.name = strdup(t.name);
        heap_remove(s, 0);
        pthread_mutex_unlock(&s->mu);
        if (t.name)
            fire(s, &t);
        free(t.name);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------------- API */

struct cat_scheduler *cat_scheduler_create(struct cat_catalog *cat)
{
    struct cat_scheduler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cat = cat;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->started = pthread_create(&s->thread, NULL, sched_main, s) == 0;
    return s;
}

void cat_scheduler_destroy(struct cat_scheduler *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->started)
        pthread_join(s->thread, NULL);
    for (size_t i = 0; i < s->n; i++)
        free(s->heap[i].name);
    free(s->heap);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

void cat_scheduler_on_expire(struct cat_scheduler *s, cat_expire_fn fn, void *ctx)
{
    pthread_mutex_lock(&s->mu);
    s->expire = fn;
    s->expire_ctx = ctx;
    pthread_mutex_unlock(&s->mu);
}

void cat_scheduler_arm(struct cat_scheduler *s, const char *name, enum cat_timer_kind kind,
                       int64_t delay_ms)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    if (!s->stopping)
        arm_locked(s, name, kind, delay_ms, 0);
    pthread_mutex_unlock(&s->mu);
}

void cat_scheduler_cancel(struct cat_scheduler *s, const char *name)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n;) {
        if (!strcmp(s->heap[i].name, name))
            heap_remove(s, i);
        else
            i++;
    }
    pthread_mutex_unlock(&s->mu);
}

/* A jittered interval: +-10% when refresh.jitter is on. */
static int64_t jittered(const struct refresh_config *r)
{
    int64_t iv = r->interval_ms;
    if (!r->jitter || iv < 10)
        return iv;
    uint64_t x = (uint64_t)time_wall_us() * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    int64_t span = iv / 5; /* 20%: -10% .. +10% */
    return iv - iv / 10 + (int64_t)(x % (uint64_t)(span + 1));
}

void cat_scheduler_build_finished(struct cat_scheduler *s, struct cat_dataset *ds, bool ok)
{
    if (!s)
        return;
    struct cat_catalog *cat = s->cat;
    pthread_mutex_lock(&ds->mu);
    struct refresh_config r = ds->cfg.refresh;
    int64_t failures = ds->consecutive_failures;
    int64_t published_us = ds->last_refresh_at_us;
    char *name = strdup(ds->cfg.name);
    bool registered = ds->registered;
    pthread_mutex_unlock(&ds->mu);
    if (!name)
        return;
    if (registered && r.interval_ms > 0) {
        int64_t delay = jittered(&r);
        if (!ok && failures > 0) {
            int64_t backoff = SCHED_RETRY_BASE_MS;
            for (int64_t i = 1; i < failures && backoff < delay; i++)
                backoff *= 2;
            if (backoff < delay)
                delay = backoff;
        }
        pthread_mutex_lock(&s->mu);
        if (!s->stopping) {
            arm_locked(s, name, CAT_TIMER_REFRESH, delay, 0);
            pthread_mutex_lock(&ds->mu);
            ds->next_refresh_at_us = time_wall_us() + delay * 1000;
            pthread_mutex_unlock(&ds->mu);
        }
        pthread_mutex_unlock(&s->mu);
    }
    if (ok && registered) {
        /* Dependents that asked to follow this dataset's reloads. */
        pthread_rwlock_rdlock(&cat->lock);
        for (size_t i = 0; i < cat->n; i++) {
            struct cat_dataset *d = cat->items[i];
            pthread_mutex_lock(&d->mu);
            bool follows = d != ds && d->cfg.refresh.on_upstream_reload;
            bool depends = false;
            for (size_t k = 0; follows && k < d->cfg.depends_on.len; k++)
                depends = depends || !strcmp(d->cfg.depends_on.items[k], name);
            int64_t debounce = d->cfg.refresh.debounce_ms;
            char *dname = follows && depends ? strdup(d->cfg.name) : NULL;
            pthread_mutex_unlock(&d->mu);
            if (!dname)
                continue;
            pthread_mutex_lock(&s->mu);
            if (!s->stopping)
                arm_locked(s, dname, CAT_TIMER_CASCADE, debounce, published_us);
            pthread_mutex_unlock(&s->mu);
            free(dname);
        }
        pthread_rwlock_unlock(&cat->lock);
    }
    free(name);
}
