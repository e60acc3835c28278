/*
 * The storage interface's one decision (which implementation a location
 * names) and the listing helpers both implementations share. See
 * sources_internal.h for the operations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/sources_internal.h"

bool storage_is_s3(const char *location)
{
    return location && strncmp(location, "s3://", 5) == 0;
}

const char *storage_location_path(const char *location)
{
    if (storage_is_s3(location)) {
        const char *slash = strchr(location + 5, '/');
        return slash ? slash + 1 : location + strlen(location);
    }
    return strncmp(location, "file://", 7) == 0 ? location + 7 : location;
}

struct storage_reader *storage_take_reader(struct storage *st)
{
    return st && st->ops->take_reader ? st->ops->take_reader(st) : NULL;
}

char *storage_listing_key(struct storage *st)
{
    return st && st->ops->listing_key ? st->ops->listing_key(st) : NULL;
}

void storage_reader_close(struct storage_reader *r)
{
    if (r)
        r->ops->destroy(r);
}

enum vt_err storage_open(const struct vt_dataset_config *ds, const char *root,
                         const struct source_context *ctx, struct storage **out,
                         struct vt_error *err)
{
    *out = NULL;
    if (!root || !*root)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "dataset %s: source.location is empty",
                            ds->name ? ds->name : "?");
    enum vt_err rc = storage_is_s3(root) ? storage_s3_open(root, &ds->s3, ctx, out, err)
                                         : storage_local_open(root, ctx, out, err);
    if (rc != VT_ERR_OK)
        return rc;
    (*out)->location = ds->location ? ds->location : root;
    (*out)->ctx = ctx;
    (*out)->owner = ds->name ? ds->name : "";
    return VT_ERR_OK;
}

void storage_close(struct storage *st)
{
    if (st)
        st->ops->destroy(st);
}

const char *storage_cache_dir(const struct source_context *ctx, char *buf, size_t cap)
{
    if (ctx && ctx->cache_dir && *ctx->cache_dir)
        return ctx->cache_dir;
    snprintf(buf, cap, "%s/vitrine-s3-cache", source_temp_dir(ctx));
    return buf;
}

void storage_object_release(struct storage_object *o)
{
    if (!o)
        return;
    free(o->name);
    free(o->etag);
    memset(o, 0, sizeof *o);
}

void storage_listing_release(struct storage_listing *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        storage_object_release(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

int storage_listing_add(struct storage_listing *l, const char *name, int64_t size,
                        const char *etag)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct storage_object *p = realloc(l->items, cap * sizeof *p);
        if (!p)
            return -1;
        l->items = p;
        l->cap = cap;
    }
    struct storage_object *o = &l->items[l->n];
    o->name = strdup(name);
    o->etag = etag ? strdup(etag) : NULL;
    o->size = size;
    if (!o->name || (etag && !o->etag)) {
        storage_object_release(o);
        return -1;
    }
    l->n++;
    return 0;
}
