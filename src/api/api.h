/*
 * The HTTP API: the route table and the handlers behind it. Handlers validate
 * input, take what they need from the catalog, and either answer at once (on
 * the HTTP thread: probes, listings, status) or hand DuckDB work to the query
 * pool (schema, query, count, export).
 */
#ifndef VT_API_API_H
#define VT_API_API_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

#include "auth/auth.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "encode/encode.h"
#include "engine/engine.h"
#include "exec/exec.h"
#include "http/conditional.h"
#include "http/server.h"
#include "util/jsonw.h"

struct cluster;

struct api_app {
    const struct vt_config *cfg;
    struct auth_policy auth;    /* X-Admin-Token and bearer tokens ([auth]) */
    struct cat_catalog *catalog;
    struct eng_pool *queries;   /* server.workers threads */
    struct eng_pool *admin_pool;/* admin operations that wait for builds */
    const char *runtime_dir;    /* private scratch space of this process */
    struct eng_sampler *sampler;/* DuckDB memory for the metrics (NULL: metrics off) */
    int64_t started_at_us;      /* wall clock at start (process_start_time_seconds) */
    struct cluster *cluster;    /* [cluster] writer or reader; NULL standalone */
    atomic_bool draining;       /* SIGTERM seen: /readyz answers 503 */
};

/* The static rows of routes.def (under server.prefix). */
void api_routes(const struct http_route **out_routes, size_t *out_n);

/* A route whose mount point comes from the config: base + tail, e.g.
 * cfg->docs.path + "/{*}" for static assets. */
struct api_mount {
    const char *tail;           /* "", "/openapi.json", "/{*}" */
    unsigned methods;
    http_handler_fn handler;
    enum auth_perm perm;
    const char *description;
    bool outside_prefix;        /* metrics.path is not under server.prefix */
};

/* Every route the server serves: routes.def plus the config's mounts. */
struct api_route_set {
    struct http_route *rows;
    bool *owned;                /* rows[i].pattern was built here */
    size_t n, cap;
};

void api_route_set_init(struct api_route_set *set);
/* Adds routes.def and the mounts `cfg` enables. 0, or -1 out of memory. */
int api_route_set_build(struct api_route_set *set, const struct vt_config *cfg);
/* Adds one mount at `base` (a path from the config). 0, or -1. */
int api_route_set_mount(struct api_route_set *set, const char *base, const struct api_mount *m);
void api_route_set_release(struct api_route_set *set);

/* The router's authorize hook: the route's permission against the request's
 * credentials (auth_authorize with the app's policy). */
enum vt_err api_authorize(struct http_request *req, const struct http_route *route,
                          const char **out_message);
/* Whether the request's credentials would also read data (a GET of a read
 * route): a token with datasets:manage alone may save queries but must not
 * learn what they read through row counts or DuckDB's error text. */
bool api_may_read(struct http_request *req);

/* Handlers (one file per group). */
void api_healthz(struct http_request *req);
void api_readyz(struct http_request *req);
void api_version(struct http_request *req);
void api_datasets_list(struct http_request *req);
void api_dataset_status(struct http_request *req);
void api_dataset_schema(struct http_request *req);
void api_dataset_parquet(struct http_request *req);
void api_dataset_query(struct http_request *req);
void api_dataset_query_stream(struct http_request *req);
void api_dataset_count(struct http_request *req);
/* GET .../query?q=<query JSON>: the POST's answer as a URL (query.c). */
void api_dataset_query_get(struct http_request *req);
/* GET .../summary and POST .../facets (explore.c, over src/explore). */
void api_dataset_summary(struct http_request *req);
void api_dataset_facets(struct http_request *req);
/* W/"<generation id>-<xxh3 of what>": a weak ETag for an answer that is a
 * function of the generation and `what` (a query, a column list). */
void api_weak_etag(const char *gen_id, const char *what, size_t what_len,
                   char out[HTTP_ETAG_MAX]);
/* Adds ETag and Cache-Control: no-cache; answers 304 (true) when the
 * request's If-None-Match matches. */
bool api_not_modified(struct http_request *req, const char *etag);
void api_sql(struct http_request *req);
/* The MCP endpoint and its protected-resource metadata (routes.c: src/mcp
 * with what it serves from). */
void api_mcp(struct http_request *req);
void api_mcp_resource(struct http_request *req);
/* Embedded UIs (ui_mounts.c): assets through src/ui; the Explorer's
 * settings document (explorer_config.c). */
void api_explorer_asset(struct http_request *req);
void api_docs_asset(struct http_request *req);
void api_metrics(struct http_request *req);
void api_swagger_asset(struct http_request *req);

/* The OpenAPI 3.1 document ({swagger.path}/openapi.json, openapi.c),
 * generated from the routes the server serves. */
void api_openapi(struct http_request *req);
/* The document for these routes under this config (NULL with err set when
 * the components do not parse). admin_configured: ADMIN_TOKEN is set. */
json_t *api_openapi_build(const struct http_route *routes, size_t n, const struct vt_config *cfg,
                          bool admin_configured, struct vt_error *err);
/* Whether a route has a description and a documentation row (its body,
 * parameters and responses); a test requires it of every route. */
bool api_openapi_documented(const struct http_route *route);
void api_explorer_config(struct http_request *req);

void api_dataset_reload(struct http_request *req);
void api_reload_all(struct http_request *req);
void api_datasets_register(struct http_request *req);
void api_datasets_persist(struct http_request *req);
void api_config_reload(struct http_request *req);

void api_queries_create(struct http_request *req);
void api_queries_list(struct http_request *req);
void api_queries_delete(struct http_request *req);
/* The build's version and git commit ("" when unknown), as /version says. */
void api_build_info(const char **out_version, const char **out_git_sha);

/* On a cluster reader: answers an admin or write call (409 not_writer, or
 * relayed to cluster.writer_url) and returns true; false elsewhere. */
bool api_writer_only(struct http_request *req);
/* SIGHUP: registers the config file's datasets that are not registered yet
 * (what POST /api/v1/config/reload does), logging the outcome. */
void api_config_reload_signal(struct api_app *app);

/* Helpers shared by handlers. */
/* The JSON object of the request body (415 / 400 invalid_json / 400
 * limit_exceeded on failure). An empty body is {} when empty_is_object. */
json_t *api_json_body(struct http_request *req, bool empty_is_object, struct vt_error *err);
/* The body as the query lookup shape (query_small_scan), without a tree:
 * true when it is one and sent as JSON (api_json_body would load it);
 * false: call api_json_body. `out` borrows the request's body. */
bool api_small_query(struct http_request *req, struct query_small *out);
/* The JSON object in the query parameter `key` (GET /query?q=...), URL-
 * decoded; absent or empty is {}. 400 invalid_json / limit_exceeded as for
 * bodies. */
json_t *api_json_query_param(struct http_request *req, const char *key, struct vt_error *err);
struct api_app *api_app(struct http_request *req);
/* Looks up the {name} parameter; replies 404 and returns NULL when unknown. */
struct cat_dataset *api_dataset_or_404(struct http_request *req);
/* The {name} dataset and its current generation (waiting for a lazy build up
 * to the request deadline); replies 404/503 and returns NULL otherwise. */
struct cat_generation *api_generation_or_reply(struct http_request *req,
                                               struct cat_dataset **out_ds);

/* ------------------------------------------------ HTTP sinks (http_sink.c)
 * The replies of the execution driver: rows in one format of the encoder
 * table (src/encode), or {"count":n}. Buffered while small, streamed past
 * 256 KiB. */
enum api_reply {
    API_REPLY_PAGE,     /* /query: a page; JSON {"data":[...],"page","page_size"},
                         * the other formats X-Page/X-Page-Size headers */
    API_REPLY_STREAM,   /* /query/stream: the whole result (JSON {"data":[...]}) */
    API_REPLY_SQL,      /* /sql: JSON {"data":[...],"max_rows","truncated"} */
    API_REPLY_COUNT,    /* /count: {"count":n} */
};

struct api_sink {
    struct exec_sink sink;          /* hand &sink to exec */
    struct http_request *req;
    enum api_reply kind;
    const struct enc_format *fmt;   /* NULL for counts */
    void *enc;                      /* the encoder's state */
    struct strbuf buf;              /* the body until it spills */
    struct http_stream *stream;     /* after it spilled */
    uint64_t rows;                  /* JSON rows from the index fast path */
    /* Where the time went (the plan points here); sent as Server-Timing
     * with the reply, or with the first bytes of a stream. */
    struct exec_timing timing;
    /* "include_total": the JSON tail's "total" (and X-Total-Count) */
    bool has_total;
    int64_t total;
    /* A large result's chunks are encoded by two threads (formats with
     * fork/range): the result (for the second encoder), the helper thread
     * once started, and whether it could not be. */
    duckdb_result *res;
    struct sink_helper *helper;
    bool helper_failed;
    /* A page sent from the pre-rendered pages (json_file): our dup of the
     * file to send (when file_open: the text, or its gzip blocks), the
     * range, and where the document's head ends in buf (the trailer
     * follows it there). */
    bool file_open, file_gzip;
    int file_fd;
    struct index_pages_range file_range;
    size_t file_head;
};

/* fmt: the negotiated format (ignored for counts). */
void api_sink_init(struct api_sink *a, struct http_request *req, enum api_reply kind,
                   const struct enc_format *fmt);
void api_sink_release(struct api_sink *a);
/* The request's total row count: X-Total-Count, and "total" in a JSON page. */
void api_sink_set_total(struct api_sink *a, int64_t total);
/* The one negotiation of every route that returns rows: ?format=NAME (a
 * name of the encoder table; INVALID_QUERY listing them otherwise), else the
 * format whose media type the Accept header names with the highest q > 0,
 * else the route's default (JSON; Arrow for streams). */
enum vt_err api_negotiate(struct http_request *req, enum api_reply kind,
                          const struct enc_format **out, struct vt_error *err);

/* ------------------------------------------- HTTP requests over the driver
 * (query.c) An HTTP request the execution driver runs: the call and its
 * sink live in the request's arena and are released with the request. */
struct api_call {
    struct exec_call call;
    struct api_sink sink;
    struct http_request *req;
};

/* A zeroed call for `req` (NULL out of memory: the 500 is replied), whose
 * release hook is registered. Init c->sink (api_sink_init*), then start. */
struct api_call *api_call_new(struct http_request *req);
/* Fills in what every HTTP request gives the driver (the catalog, the sink,
 * the arena, Server-Timing, the request deadline, the query pool as the
 * queue) and starts the call; the sink replies. */
void api_call_start(struct api_call *c, struct exec_request *rq);

#endif
