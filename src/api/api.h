/*
 * The HTTP API: the route table and the handlers behind it. Handlers validate
 * input, take what they need from the catalog, and either answer at once (on
 * the HTTP thread: probes, listings, status) or hand DuckDB work to the query
 * pool (schema, query, count, export).
 */
#ifndef VT_API_API_H
#define VT_API_API_H

#include <duckdb.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "config/config.h"
#include "engine/engine.h"
#include "http/server.h"
#include "util/jsonw.h"

struct app {
    const struct vt_config *cfg;
    duckdb_database db;
    struct cat_catalog *catalog;
    struct eng_pool *queries;   /* server.workers threads */
    const char *runtime_dir;    /* private scratch space of this process */
};

/* The routes under server.prefix, in match order. */
void api_routes(const struct http_route **out_routes, size_t *out_n);

/* Handlers (one file per group). */
void api_healthz(struct http_request *req);
void api_readyz(struct http_request *req);
void api_version(struct http_request *req);
void api_datasets_list(struct http_request *req);
void api_dataset_status(struct http_request *req);
void api_dataset_schema(struct http_request *req);

/* Helpers shared by handlers. */
struct app *api_app(struct http_request *req);
/* Writes one status entry object. */
void api_write_status(struct jw *w, const struct cat_status *st);
/* Looks up the {name} parameter; replies 404 and returns NULL when unknown. */
struct cat_dataset *api_dataset_or_404(struct http_request *req);

#endif
