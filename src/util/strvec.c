/*
 * Owned string lists (see strvec.h). Lists are short (columns, scopes,
 * dataset names), so linear search and a realloc per push are fine.
 */
#include "util/strvec.h"

#include <stdlib.h>
#include <string.h>

void strvec_free(struct strvec *v)
{
    for (size_t i = 0; i < v->len; i++)
        free(v->items[i]);
    free(v->items);
    v->items = NULL;
    v->len = 0;
}

int strvec_push(struct strvec *v, const char *s)
{
    char *copy = strdup(s);
    if (!copy)
        return -1;
    char **items = realloc(v->items, (v->len + 1) * sizeof *items);
    if (!items) {
        free(copy);
        return -1;
    }
    v->items = items;
    v->items[v->len++] = copy;
    return 0;
}

int strvec_copy(struct strvec *dst, const struct strvec *src)
{
    dst->items = NULL;
    dst->len = 0;
    for (size_t i = 0; i < src->len; i++) {
        if (strvec_push(dst, src->items[i]) < 0) {
            strvec_free(dst);
            return -1;
        }
    }
    return 0;
}

bool strvec_equal(const struct strvec *a, const struct strvec *b)
{
    if (a->len != b->len)
        return false;
    for (size_t i = 0; i < a->len; i++)
        if (strcmp(a->items[i], b->items[i]) != 0)
            return false;
    return true;
}

long strvec_find(const struct strvec *v, const char *s)
{
    for (size_t i = 0; i < v->len; i++)
        if (strcmp(v->items[i], s) == 0)
            return (long)i;
    return -1;
}
