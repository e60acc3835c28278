/*
 * Discovery: GET /api/v1/datasets (every status entry), GET .../{name}/status,
 * GET .../{name}/schema (columns with DuckDB and logical types, indexed
 * columns, one sample row). Listing and status read the catalog under its
 * locks and answer on the HTTP thread; schema may have to wait for a lazy
 * build, so it runs on the query pool.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "util/timeutil.h"

void api_datasets_list(struct http_request *req)
{
    struct cat_status *list;
    size_t n = cat_status_list(api_app(req)->catalog, &list);
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++)
        cat_write_status(&w, &list[i]);
    jw_arr_end(&w);
    cat_status_list_free(list, n);
    http_reply_json(req, 200, &body);
}

struct cat_dataset *api_dataset_or_404(struct http_request *req)
{
    const char *name = http_req_param(req, 0);
    struct cat_dataset *ds = name ? cat_dataset_get(api_app(req)->catalog, name) : NULL;
    if (!ds) {
        struct vt_error err = {0};
        cat_unknown_name(api_app(req)->catalog, name, &err);
        http_reply_vterr(req, &err);
    }
    return ds;
}

void api_dataset_status(struct http_request *req)
{
    struct cat_status st;
    const char *name = http_req_param(req, 0);
    if (!cat_status_of(api_app(req)->catalog, name, &st)) {
        struct vt_error err = {0};
        cat_unknown_name(api_app(req)->catalog, name, &err);
        http_reply_vterr(req, &err);
        return;
    }
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    cat_write_status(&w, &st);
    cat_status_free(&st);
    http_reply_json(req, 200, &body);
}

struct cat_generation *api_generation_or_reply(struct http_request *req,
                                               struct cat_dataset **out_ds)
{
    struct cat_dataset *ds = api_dataset_or_404(req);
    if (!ds)
        return NULL;
    struct vt_error err = {0};
    struct cat_generation *gen = cat_dataset_acquire_id(ds, http_req_query(req, "generation"),
                                                        http_req_deadline(req), &err);
    if (!gen) {
        cat_dataset_put(ds);
        http_reply_vterr(req, &err);
        return NULL;
    }
    http_add_header(req, "X-Dataset-Generation", gen->id);
    *out_ds = ds;
    return gen;
}

static void schema_job(struct http_request *req)
{
    struct cat_dataset *ds;
    struct cat_generation *gen = api_generation_or_reply(req, &ds);
    if (!gen)
        return;
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    cat_write_schema(&w, cat_dataset_name(ds), gen);
    cat_generation_release(gen);
    cat_dataset_put(ds);
    http_reply_json(req, 200, &body);
}

void api_dataset_schema(struct http_request *req)
{
    http_defer(req, api_app(req)->queries, schema_job);
}
