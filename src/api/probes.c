/*
 * Probes: /healthz and /health (liveness, always 200), /readyz (readiness per
 * [server.startup] readiness), /version (build metadata). They answer on the
 * HTTP thread without touching DuckDB, so they stay fast under any load.
 */
#include "api/api.h"
#include "cluster/cluster.h"

#ifndef VT_VERSION
#define VT_VERSION "0.0.0"
#endif

void api_healthz(struct http_request *req)
{
    struct strbuf body;
    sb_init(&body, 0);
    sb_adds(&body, "{\"status\":\"ok\"}");
    http_reply_json(req, 200, &body);
}

void api_readyz(struct http_request *req)
{
    int64_t datasets = 0;
    struct api_app *app = api_app(req);
    /* A reader is ready once it has loaded what the writer published; any
     * process stops being ready the moment it is told to stop (SIGTERM), so
     * the balancer takes it out while it still serves (the drain delay). */
    bool ready = cluster_role(app->cluster) == CFG_ROLE_READER
                     ? cluster_reader_ready(app->cluster, &datasets)
                     : cat_ready(app->catalog, &datasets);
    bool draining = atomic_load(&app->draining);
    if (draining)
        ready = false;
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    jw_obj_begin(&w);
    jw_kstr(&w, "status", ready ? "ready" : "not_ready");
    jw_kint(&w, "datasets", ready ? datasets : 0);
    if (draining)
        jw_kstr(&w, "reason", "shutting_down");
    jw_obj_end(&w);
    if (!ready)
        http_add_header(req, "Retry-After", "2");
    http_reply_json(req, ready ? 200 : 503, &body);
}

void api_build_info(const char **out_version, const char **out_git_sha)
{
    *out_version = VT_VERSION;
#ifdef VT_GIT_SHA
    *out_git_sha = VT_GIT_SHA;
#else
    *out_git_sha = "";
#endif
}

void api_version(struct http_request *req)
{
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    jw_obj_begin(&w);
    jw_kstr(&w, "name", "vitrine");
    jw_kstr(&w, "version", VT_VERSION);
    jw_kstr(&w, "backend", "DuckDB");
#ifdef VT_PROFILE_DEBUG
    jw_kstr(&w, "profile", "debug");
#else
    jw_kstr(&w, "profile", "release");
#endif
#ifdef VT_GIT_SHA
    jw_kstr(&w, "git_sha", VT_GIT_SHA);
#endif
#ifdef VT_BUILD_TIME
    jw_kstr(&w, "build_time", VT_BUILD_TIME);
#endif
#ifdef VT_TARGET
    jw_kstr(&w, "target", VT_TARGET);
#endif
    jw_obj_end(&w);
    http_reply_json(req, 200, &body);
}
