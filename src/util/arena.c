/*
 * Bump allocator (see arena.h). Blocks are malloc'd, linked, and freed
 * together; an allocation larger than the next block size gets its own block.
 */
#include "util/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
    struct arena_block *next;
    size_t size;
    _Alignas(16) unsigned char data[];
};

void arena_init(struct arena *a, size_t max_total)
{
    a->head = NULL;
    a->used_total = 0;
    a->max_total = max_total;
    a->next = a->limit = NULL;
}

void arena_release(struct arena *a)
{
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_total = 0;
    a->next = a->limit = NULL;
}

void arena_reset(struct arena *a)
{
    struct arena_block *b = a->head;
    while (b && b->next) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = b;
    a->used_total = 0;
    a->next = b ? b->data : NULL;
    a->limit = b ? b->data + b->size : NULL;
}

void *arena_alloc_slow(struct arena *a, size_t n)
{
    if (n == 0)
        n = 1;
    if (n > SIZE_MAX - 15)
        return NULL;
    n = (n + 15) & ~(size_t)15;
    if (a->max_total && (n > a->max_total || a->used_total > a->max_total - n))
        return NULL;
    struct arena_block *b = a->head;
    if (!b || (size_t)(a->limit - a->next) < n) {
        size_t size = b ? b->size * 2 : 4096;
        if (size > 1 << 20)
            size = 1 << 20;
        if (size < n)
            size = n;
        b = malloc(sizeof *b + size);
        if (!b)
            return NULL;
        b->size = size;
        b->next = a->head;
        a->head = b;
        a->next = b->data;
        a->limit = b->data + size;
    }
    void *p = a->next;
    a->next += n;
    a->used_total += n;
    return p;
}

void *arena_calloc(struct arena *a, size_t n)
{
    void *p = arena_alloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_sprintf(struct arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n < 0 ? NULL : arena_alloc(a, (size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}
