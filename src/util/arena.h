/*
 * A bump allocator for request-lifetime allocations: everything allocated while
 * handling one request is freed at once when the request ends. Blocks grow
 * geometrically; a total cap bounds what one request can take.
 */
#ifndef VT_UTIL_ARENA_H
#define VT_UTIL_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
    struct arena_block *head;
    size_t used_total; /* bytes handed out */
    size_t max_total;  /* 0 = unbounded */
};

void arena_init(struct arena *a, size_t max_total);
void arena_release(struct arena *a);
/* Frees every block but the first one made (the smallest) and empties it:
 * the arena is as after arena_init, with that block ready for reuse. */
void arena_reset(struct arena *a);
/* 16-byte aligned; NULL on exhaustion (cap or OOM). */
void *arena_alloc(struct arena *a, size_t n);
void *arena_calloc(struct arena *a, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_sprintf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
