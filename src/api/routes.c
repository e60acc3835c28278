/*
 * The route table. Order matters: literal segments come before {name}
 * captures that could also match them (reload-all, persist).
 */
#include "api/api.h"

static const struct http_route routes[] = {
    {HTTP_GET, "/healthz", api_healthz},
    {HTTP_GET, "/health", api_healthz},
    {HTTP_GET, "/readyz", api_readyz},
    {HTTP_GET, "/version", api_version},
    {HTTP_GET, "/api/v1/datasets", api_datasets_list},
    {HTTP_POST, "/api/v1/datasets", api_datasets_register},
    {HTTP_POST, "/api/v1/datasets/persist", api_datasets_persist},
    {HTTP_POST, "/api/v1/datasets/reload-all", api_reload_all},
    {HTTP_POST, "/api/v1/config/reload", api_config_reload},
    {HTTP_POST, "/api/v1/datasets/{name}/reload", api_dataset_reload},
    {HTTP_GET, "/api/v1/datasets/{name}/status", api_dataset_status},
    {HTTP_GET, "/api/v1/datasets/{name}/schema", api_dataset_schema},
    {HTTP_POST, "/api/v1/datasets/{name}/query", api_dataset_query},
    {HTTP_POST, "/api/v1/datasets/{name}/query/stream", api_dataset_query_stream},
    {HTTP_POST, "/api/v1/datasets/{name}/count", api_dataset_count},
    {HTTP_GET, "/api/v1/datasets/{name}/parquet", api_dataset_parquet},
    {HTTP_GET, "/api/v1/datasets/{name}/all.parquet", api_dataset_parquet},
};

void api_routes(const struct http_route **out_routes, size_t *out_n)
{
    *out_routes = routes;
    *out_n = sizeof routes / sizeof routes[0];
}

struct app *api_app(struct http_request *req)
{
    return http_app(req);
}
