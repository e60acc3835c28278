/*
 * GET/HEAD /api/v1/datasets/{name}/parquet and .../all.parquet: the whole
 * dataset as one Parquet file (the same bytes on both paths), cached per
 * generation (catalog/export.c) and sent with sendfile.
 *
 * HTTP semantics: strong ETag = the generation id, so If-None-Match gives 304
 * and If-Range makes a client that resumes a download across a reload get the
 * whole new file (200) instead of a range of it spliced onto the old one;
 * single ranges give 206, unsatisfiable ones 416, several ranges the full 200.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "http/conditional.h"
#include "http/range.h"
#include "util/timeutil.h"

#define PARQUET_CONTENT_TYPE "application/vnd.apache.parquet"

static void export_job(struct http_request *req)
{
    struct cat_dataset *ds;
    struct cat_generation *gen = api_generation_or_reply(req, &ds);
    if (!gen)
        return;
    struct vt_error err = {0};
    int fd = -1;
    uint64_t size = 0;
    if (cat_export_open(gen, http_req_deadline(req), &fd, &size, &err) != VT_ERR_OK) {
        cat_generation_release(gen);
        cat_dataset_put(ds);
        http_reply_vterr(req, &err);
        return;
    }
    char etag[HTTP_ETAG_MAX];
    http_etag_format(etag, gen->id);
    char refreshed[32];
    time_format_rfc3339(gen->published_at_us, refreshed);
    char disposition[256];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s.parquet\"",
             cat_dataset_name(ds));
    cat_generation_release(gen);
    cat_dataset_put(ds);

    http_add_header(req, "ETag", etag);
    /* Which publish these bytes are, as on query responses. */
    http_add_header(req, "X-Dataset-Refreshed-At", refreshed);
    http_add_header(req, "Accept-Ranges", "bytes");
    http_add_header(req, "Cache-Control", "no-cache");
    http_add_header(req, "Content-Disposition", disposition);

    bool is_get = http_req_method(req) == HTTP_GET;
    enum http_precond pre = http_preconditions(true, http_req_header(req, "If-Match"),
                                               http_req_header(req, "If-None-Match"), etag);
    if (pre == HTTP_PRECOND_NOT_MODIFIED) {
        close(fd);
        struct strbuf empty;
        sb_init(&empty, 0);
        http_reply_buffer(req, 304, PARQUET_CONTENT_TYPE, &empty, false);
        return;
    }
    if (pre == HTTP_PRECOND_FAILED) {
        close(fd);
        http_reply_error(req, VT_ERR_PRECONDITION_FAILED, "If-Match does not match the current generation");
        return;
    }
    const char *range = is_get ? http_req_header(req, "Range") : NULL;
    if (range && !http_if_range_allows(http_req_header(req, "If-Range"), etag))
        range = NULL;
    struct http_range r;
    enum http_range_result rr = http_range_parse(range, size, &r);
    char content_range[HTTP_CONTENT_RANGE_MAX];
    switch (rr) {
    case HTTP_RANGE_PARTIAL:
        http_content_range_format(content_range, r.start, r.end, size);
        http_add_header(req, "Content-Range", content_range);
        http_reply_file(req, 206, PARQUET_CONTENT_TYPE, fd, r.start, r.end - r.start + 1);
        return;
    case HTTP_RANGE_UNSATISFIABLE:
        close(fd);
        http_content_range_unsatisfied(content_range, size);
        http_add_header(req, "Content-Range", content_range);
        http_reply_error(req, VT_ERR_RANGE_NOT_SATISFIABLE, "range not satisfiable");
        return;
    default:
        http_reply_file(req, 200, PARQUET_CONTENT_TYPE, fd, 0, size);
        return;
    }
}

void api_dataset_parquet(struct http_request *req)
{
    /* SHORT: most downloads find the cached export (a file to open). */
    http_defer(req, api_app(req)->queries, export_job);
}
