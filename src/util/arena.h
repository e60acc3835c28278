/*
 * A bump allocator for request-lifetime allocations: everything allocated while
 * handling one request is freed at once when the request ends. Blocks grow
 * geometrically; a total cap bounds what one request can take.
 */
#ifndef VT_UTIL_ARENA_H
#define VT_UTIL_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct arena_block;

struct arena {
    struct arena_block *head;
    size_t used_total; /* bytes handed out */
    size_t max_total;  /* 0 = unbounded */
    /* The head block's free room [next, limit): the inline fast path of
     * arena_alloc bumps `next` without a call (a point lookup makes ~30
     * allocations; each call was ~40 instructions). */
    unsigned char *next, *limit;
};

void arena_init(struct arena *a, size_t max_total);
void arena_release(struct arena *a);
/* Frees every block but the first one made (the smallest) and empties it:
 * the arena is as after arena_init, with that block ready for reuse. */
void arena_reset(struct arena *a);
/* The out-of-line part of arena_alloc: a new block, or a refusal. */
void *arena_alloc_slow(struct arena *a, size_t n);

/* 16-byte aligned; NULL on exhaustion (cap or OOM). */
static inline void *arena_alloc(struct arena *a, size_t n)
{
    if (n - 1 < SIZE_MAX - 16) { /* 1..SIZE_MAX-16: rounding up cannot wrap */
        size_t r = (n + 15) & ~(size_t)15;
        if (r <= (size_t)(a->limit - a->next) &&
            (!a->max_total || r <= a->max_total - a->used_total)) {
            void *p = a->next;
            a->next += r;
            a->used_total += r;
            return p;
        }
    }
    return arena_alloc_slow(a, n);
}
void *arena_calloc(struct arena *a, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_sprintf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
