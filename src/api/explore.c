/*
 * GET /api/v1/datasets/{name}/summary and POST /api/v1/datasets/{name}/facets:
 * the HTTP front end of src/explore. Both run as a job on the query pool (a
 * summary scans the whole dataset the first time a generation is asked for;
 * facets scan the selected rows), pin the dataset's current generation for
 * the job, and answer JSON.
 *
 * A summary is a function of the generation and the selected columns, so it
 * carries a weak ETag of both (the summary is cached per generation; the
 * same request after a reload is a new ETag): If-None-Match answers 304.
 */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "api/api.h"
#include "explore/explore.h"
#include "http/conditional.h"

/* W/"<generation>-<hash of what else selects the answer>" */
void api_weak_etag(const char *gen_id, const char *what, size_t what_len,
                   char out[HTTP_ETAG_MAX])
{
    char opaque[64];
    snprintf(opaque, sizeof opaque, "%s-%016llx", gen_id,
             (unsigned long long)XXH3_64bits(what, what_len));
    char strong[HTTP_ETAG_MAX];
    http_etag_format(strong, opaque);
    size_t n = strnlen(strong, sizeof opaque + 2); /* the quoted opaque: < 67 bytes */
    out[0] = 'W';
    out[1] = '/';
    memcpy(out + 2, strong, n + 1 <= HTTP_ETAG_MAX - 2 ? n + 1 : 0);
}

bool api_not_modified(struct http_request *req, const char *etag)
{
    http_add_header(req, "ETag", etag);
    http_add_header(req, "Cache-Control", "no-cache");
    if (!http_etag_list_match_weak(http_req_header(req, "If-None-Match"), etag))
        return false;
    struct strbuf empty;
    sb_init(&empty, 0);
    http_reply_buffer(req, 304, "application/json", &empty, false);
    return true;
}

/* One job for both routes: pin, run src/explore, answer. */
static void explore_job(struct http_request *req, bool summary)
{
    struct api_app *app = api_app(req);
    struct vt_error err = {0};
    struct exec_pin pin = {0};
    if (exec_pin(app->catalog, http_req_param(req, 0), http_req_deadline(req), &pin, &err)) {
        http_reply_vterr(req, &err);
        return;
    }
    struct exec_timing timing = {0};
    struct explore_ctx x = {
        .gen = pin.gen,
        .dataset = cat_dataset_name(pin.ds),
        .job = http_req_job(req),
        .arena = http_req_arena(req),
        .timing = &timing,
    };
    struct strbuf body;
    sb_init(&body, 0);
    enum vt_err rc;
    if (summary) {
        size_t n;
        const char *columns = http_req_query_n(req, "columns", &n);
        char etag[HTTP_ETAG_MAX];
        api_weak_etag(pin.gen->id, columns ? columns : "", n, etag);
        if (api_not_modified(req, etag)) {
            exec_unpin(&pin);
            return;
        }
        rc = columns && memchr(columns, '\0', n)
                 ? vt_error_set(&err, VT_ERR_INVALID_QUERY, "columns: holds a NUL byte")
                 : explore_summary(&x, columns, &body, &err);
    } else {
        json_t *in = api_json_body(req, false, &err);
        rc = in ? explore_facets(&x, in, &body, &err) : err.code;
        json_decref(in);
    }
    exec_unpin(&pin);
    if (rc != VT_ERR_OK) {
        sb_release(&body);
        http_reply_vterr(req, &err);
        return;
    }
    http_reply_json(req, 200, &body);
}

static void summary_job(struct http_request *req)
{
    explore_job(req, true);
}

static void facets_job(struct http_request *req)
{
    explore_job(req, false);
}

void api_dataset_summary(struct http_request *req)
{
    http_defer_as(req, api_app(req)->queries, summary_job, ENG_JOB_LONG);
}

void api_dataset_facets(struct http_request *req)
{
    http_defer_as(req, api_app(req)->queries, facets_job, ENG_JOB_LONG);
}
