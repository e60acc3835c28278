/*
 * GET/HEAD /api/v1/datasets/{name}/parquet and .../all.parquet: the whole
 * dataset as one Parquet file (the same bytes on both paths), cached per
 * generation (catalog/export.c) and sent with sendfile.
 *
 * HTTP semantics: strong ETag = the generation id, so If-None-Match gives 304
 * and If-Range makes a client that resumes a download across a reload get the
 * whole new file (200) instead of a range of it spliced onto the old one;
 * single ranges give 206, unsatisfiable ones 416, several ranges the full 200.
 *
 * A built export is answered on the HTTP thread (api_dataset_parquet); the
 * first request of a generation, which builds it, waits on the query pool.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "http/conditional.h"
#include "http/range.h"
#include "util/timeutil.h"

#define PARQUET_CONTENT_TYPE "application/vnd.apache.parquet"

/* Answers with the open export (fd, size) of `gen`, releasing gen and ds;
 * fd is the response's (closed with it) or closed here. */
static void export_reply(struct http_request *req, struct cat_dataset *ds,
                         struct cat_generation *gen, int fd, uint64_t size)
{
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

/* On the query pool: the export may have to be built (or the generation to
 * be waited for: a lazy dataset's first build), until the request's deadline. */
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
    export_reply(req, ds, gen, fd, size);
}

void api_dataset_parquet(struct http_request *req)
{
    /* Most downloads find the current generation's export built: a lock and
     * an open(2), answered here on the HTTP thread, with no hand-off to a
     * worker and back (two thread wake-ups, which on a busy machine cost
     * more than the open). The open file keeps the generation's bytes even if
     * a reload retires it while they are sent. An unknown dataset is a 404
     * from here too; anything else (a generation not published or not kept,
     * an export still to build) is the job's, which waits and answers it. */
    struct cat_dataset *ds = api_dataset_or_404(req);
    if (!ds)
        return;
    struct vt_error err = {0};
    struct cat_generation *gen =
        cat_dataset_acquire_id(ds, http_req_query(req, "generation"), 0, &err);
    int fd;
    uint64_t size;
    if (gen && cat_export_try_open(gen, &fd, &size)) {
        http_add_header(req, "X-Dataset-Generation", gen->id);
        export_reply(req, ds, gen, fd, size);
        return;
    }
    cat_generation_release(gen);
    cat_dataset_put(ds);
    /* SHORT: a build waits on the builder pool, not on this worker's class. */
    http_defer(req, api_app(req)->queries, export_job);
}
