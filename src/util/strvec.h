/*
 * An owned list of strings: every item is malloc'd and freed with the list.
 * Used by the configuration model (columns, scopes, depends_on, allowed
 * roots), the catalog and the sources. Zero-initialise, then push.
 */
#ifndef VT_UTIL_STRVEC_H
#define VT_UTIL_STRVEC_H

#include <stdbool.h>
#include <stddef.h>

struct strvec {
    char **items;
    size_t len;
};

/* 0, or -1 on out of memory (the list is unchanged). */
int strvec_push(struct strvec *v, const char *s);
/* dst becomes a deep copy of src (dst's old content is not freed). 0 / -1. */
int strvec_copy(struct strvec *dst, const struct strvec *src);
bool strvec_equal(const struct strvec *a, const struct strvec *b);
/* Index of the first item equal to s, or -1. */
long strvec_find(const struct strvec *v, const char *s);
void strvec_free(struct strvec *v);

#endif
