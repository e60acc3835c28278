/*
 * The HTTP side of the cluster's roles: on a reader, admin and write routes
 * (reload, registration, persist, config reload, saved queries) are answered
 * 409 not_writer naming the writer, or relayed to cluster.writer_url when it
 * is set (the writer authenticates the call; the reader relays its answer).
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "cluster/cluster.h"

static void forward_job(struct http_request *req)
{
    struct api_app *app = api_app(req);
    const struct vt_config *cfg = app->cfg;
    struct strbuf path;
    sb_init(&path, 0);
    sb_adds(&path, cfg->server.prefix ? cfg->server.prefix : "");
    sb_adds(&path, http_req_path(req));
    const char *async = http_req_query(req, "async");
    /* The one query parameter of these routes (a boolean: letters only). */
    if (async && strspn(async, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01") ==
                     strlen(async))
        sb_addf(&path, "?async=%s", async);
    static const char *const pass[] = {"Content-Type", "X-Admin-Token", "Authorization",
                                       "X-Request-Id", "Accept", NULL};
    char lines[5][2048];
    const char *headers[6] = {0};
    size_t nh = 0;
    for (size_t i = 0; pass[i]; i++) {
        const char *v = http_req_header(req, pass[i]);
        if (!v)
            continue;
        snprintf(lines[nh], sizeof lines[nh], "%s: %s", pass[i], v);
        headers[nh] = lines[nh];
        nh++;
    }
    if (!http_req_header(req, "X-Request-Id")) {
        snprintf(lines[nh], sizeof lines[nh], "X-Request-Id: %s", http_req_id(req));
        headers[nh] = lines[nh];
        nh++;
    }
    size_t blen = 0;
    const char *body = http_req_body(req, &blen);
    struct cluster_forward_req fr = {
        .method = http_req_method(req) == HTTP_DELETE ? "DELETE" : "POST",
        .path = path.buf,
        .headers = headers,
        .body = body,
        .body_len = blen,
        .deadline_ms = http_req_deadline(req),
    };
    struct cluster_forward_resp out;
    struct vt_error err = {0};
    enum vt_err rc = path.overflow ? vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL)
                                   : cluster_forward(app->cluster, &fr, &out, &err);
    sb_release(&path);
    if (rc != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    if (out.retry_after[0])
        http_add_header(req, "Retry-After", out.retry_after);
    http_add_header(req, "X-Forwarded-To-Writer", "true");
    http_reply_buffer(req, out.status, out.content_type[0] ? out.content_type : "application/json",
                      &out.body, false);
}

bool api_writer_only(struct http_request *req)
{
    struct api_app *app = api_app(req);
    if (cluster_role(app->cluster) != CFG_ROLE_READER)
        return false;
    if (cluster_writer_url(app->cluster)) {
        http_defer(req, app->admin_pool, forward_job);
        return true;
    }
    char writer[512];
    cluster_writer_name(app->cluster, writer, sizeof writer);
    char msg[700];
    snprintf(msg, sizeof msg,
             "this replica is a reader: send admin and write calls to the writer (%s)", writer);
    http_reply_error(req, VT_ERR_NOT_WRITER, msg);
    return true;
}
