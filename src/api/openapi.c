/*
 * GET {swagger.path}/openapi.json: the OpenAPI 3.1 document of this server,
 * generated from the route table the router serves (routes.def plus the
 * config's mounts, as http_server_routes returns them), so it cannot drift
 * from what is served: every path and method, its summary (the route's
 * description), its permission and security requirements, servers honouring
 * server.prefix (a route mounted outside the prefix, the metrics, gets its
 * own servers entry).
 *
 * What the route table does not know, each handler's request body, query
 * parameters and responses, comes from one row of `docs` below, keyed by the
 * handler. A route whose handler has no row still appears (summary, generic
 * responses), and tests/unit/api/test_openapi.c fails until it gets one. The
 * schemas are components (openapi_schemas.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/openapi_schemas.h"
#include "ui/ui.h"

#ifndef VT_VERSION
#define VT_VERSION "0.0.0"
#endif

/* Body media types of a response. */
#define M_JSON 1u
#define M_PARQUET 4u
#define M_PROM 8u
#define M_ASSET 16u
#define M_ROWS 32u       /* rows in every format of the encoder table (src/encode) */

/* Response headers. */
#define H_TIMING 1u      /* Server-Timing */
#define H_REFRESHED 2u   /* X-Dataset-Refreshed-At */
#define H_PAGE 4u        /* X-Page, X-Page-Size */
#define H_RETRY 8u       /* Retry-After */
#define H_RANGE 16u      /* ETag, Content-Range (206) */
#define H_LOCATION 32u
#define H_CACHE 64u      /* ETag (weak, per generation) and Cache-Control */
#define H_TOTAL 128u     /* X-Total-Count (include_total) */

/* Parameters beyond the path's. */
#define P_FORMAT 1u      /* ?format= one of the encoder table (and Accept) */
#define P_RANGE 2u       /* Range, If-None-Match, If-Match */
#define P_ASYNC 4u       /* ?async=true|false */
#define P_Q 8u           /* ?q=<query JSON> */
#define P_COLUMNS 16u    /* ?columns=a,b */
#define P_INM 32u        /* If-None-Match */
#define P_GEN 64u        /* ?generation=<id>: read a pinned generation */

struct op_resp {
    int status;
    const char *schema;         /* component schema of the body; NULL: Error for >= 400 */
    unsigned media;             /* M_*; 0 with schema NULL and status < 400: no body */
    unsigned headers;           /* H_* */
    const char *description;    /* NULL: a standard text for the status */
};

/* Not a header: in op_resp.headers, marks a response only a cluster reader
 * (cluster.role = "reader") gives; other servers' documents leave it out. */
#define W_READER 0x10000u

/* A reader answers admin and write calls 409 not_writer, or relays them to
 * cluster.writer_url: 503 unavailable when the writer cannot be reached. */
#define R_READER_WRITES                                                                \
    {409, NULL, 0, W_READER, "This replica is a reader (not_writer): send admin and write calls to the writer."}, \
    {503, NULL, 0, H_RETRY | W_READER, "This reader relays admin calls to cluster.writer_url, which cannot be reached (unavailable)."}

#define MAX_RESP 12

struct op_doc {
    http_handler_fn handler;
    const char *tag;
    const char *request;        /* component schema of a JSON body, or NULL */
    bool request_required;
    unsigned params;            /* P_* */
    bool head;                  /* HEAD documented too (GET implies it everywhere) */
    struct op_resp resp[MAX_RESP];
};

/* Error responses a data read can give. */
#define R_DATA_ERRORS                                                                  \
    {400, NULL, 0, 0, "Invalid request: the code says which rule (invalid_query, unknown_column, ...)."}, \
    {404, NULL, 0, 0, "No such dataset."},                                             \
    {413, NULL, 0, 0, "Request body larger than server.max_body_bytes."},              \
    {415, NULL, 0, 0, "The body must be sent with Content-Type: application/json."},   \
    {503, NULL, 0, H_RETRY, "The dataset is not published yet (or failed to build), or the server is overloaded."}, \
    {504, NULL, 0, 0, "The request took longer than server.request_timeout_ms."}

/* Answers of ?generation= (P_GEN): a pin this replica cannot serve. */
#define R_GEN_ERRORS                                                                   \
    {409, NULL, 0, 0, "?generation= names a generation newer than the one loaded here (generation_not_available): retry."}, \
    {410, NULL, 0, 0, "?generation= names a generation replaced and no longer kept (generation_gone)."}

static const struct op_doc docs[] = {
    {api_healthz, "probes", NULL, false, 0, false,
     {{200, "Health", M_JSON, 0, "Alive."}}},
    {api_readyz, "probes", NULL, false, 0, false,
     {{200, "Ready", M_JSON, 0, "Datasets are published."},
      {503, "Ready", M_JSON, H_RETRY, "Datasets are still building after start, or every dataset failed."}}},
    {api_version, "probes", NULL, false, 0, false,
     {{200, "Version", M_JSON, 0, "Build metadata."}}},
    {api_datasets_list, "datasets", NULL, false, 0, false,
     {{200, "DatasetList", M_JSON, 0, "Every dataset with its status."}}},
    {api_datasets_register, "admin", "DatasetConfig", true, 0, false,
     {{200, "Registered", M_JSON, 0, "Registered and built (in memory only)."},
      {400, NULL, 0, 0, "Name taken or invalid, source cannot be opened, or invalid field."},
      {413, NULL, 0, 0, NULL},
      {415, NULL, 0, 0, NULL},
      {504, NULL, 0, 0, "The build outlived server.request_timeout_ms, or its refresh.timeout."},
      R_READER_WRITES}},
    {api_datasets_persist, "admin", "DatasetConfig", true, 0, false,
     {{200, "Persisted", M_JSON, 0, "The [[dataset]] block was appended to the config file."},
      {400, NULL, 0, 0, "Invalid block, name taken, source cannot be opened, or the server has no config file."},
      {413, NULL, 0, 0, NULL},
      {415, NULL, 0, 0, NULL},
      R_READER_WRITES}},
    {api_reload_all, "admin", NULL, false, 0, false,
     {{202, "ReloadAll", M_JSON, 0, "Builds queued in dependency order."},
      R_READER_WRITES}},
    {api_config_reload, "admin", NULL, false, 0, false,
     {{200, "ConfigReload", M_JSON, 0, "New datasets registered; failures listed in errors."},
      {400, NULL, 0, 0, "The server was not started from a config file, or the file is invalid."},
      R_READER_WRITES}},
    {api_dataset_reload, "admin", NULL, false, 0, false,
     {{200, "Reloaded", M_JSON, 0, "Rebuilt and swapped in; in-flight queries finished on the old copy."},
      {400, NULL, 0, 0, "The source has no rows, cannot be opened or is not allowed now; the previous generation keeps serving."},
      {404, NULL, 0, 0, "No such dataset."},
      {409, NULL, 0, 0, "The dataset is already building, or this replica is a reader (not_writer)."},
      {422, NULL, 0, 0, "The build failed; the previous generation keeps serving."},
      {504, NULL, 0, 0, "The build outlived server.request_timeout_ms; it goes on and publishes when done."},
      R_READER_WRITES}},
    {api_dataset_status, "datasets", NULL, false, 0, false,
     {{200, "DatasetStatus", M_JSON, 0, "The dataset's status entry."},
      {404, NULL, 0, 0, "No such dataset."},
      {503, NULL, 0, H_RETRY | W_READER, "This reader has not read the shared catalog yet (dataset_not_ready): retry."}}},
    {api_dataset_schema, "datasets", NULL, false, P_GEN, false,
     {{200, "DatasetSchema", M_JSON, 0, "Columns, types, indexed columns and one sample row."},
      {400, NULL, 0, 0, "?generation= is not a generation id."},
      {404, NULL, 0, 0, "No such dataset."},
      R_GEN_ERRORS,
      {503, NULL, 0, H_RETRY, "Not published yet, or its build failed."}}},
    {api_dataset_query, "query", "QueryRequest", false, P_FORMAT | P_GEN, false,
     {{200, "QueryPage", M_ROWS, H_TIMING | H_REFRESHED | H_PAGE | H_TOTAL,
       "One page: JSON {data, page, page_size}, or the page in another format (?format= or "
       "Accept; X-Page and X-Page-Size say which page)."},
      R_DATA_ERRORS, R_GEN_ERRORS}},
    {api_dataset_query_get, "query", NULL, false, P_FORMAT | P_Q | P_INM | P_GEN, false,
     {{200, "QueryPage", M_ROWS, H_TIMING | H_REFRESHED | H_PAGE | H_CACHE | H_TOTAL,
       "The answer POST .../query gives for the body in ?q, with a weak ETag of the generation, "
       "the format and q (Cache-Control: no-cache: revalidate, then reuse)."},
      {304, NULL, 0, H_CACHE, "If-None-Match matched: the dataset was not reloaded since."},
      {400, NULL, 0, 0, "Invalid ?q: not JSON, or the code says which rule (invalid_query, unknown_column, ...)."},
      {404, NULL, 0, 0, "No such dataset."},
      R_GEN_ERRORS,
      {503, NULL, 0, H_RETRY, "The dataset is not published yet (or failed to build), or the server is overloaded."},
      {504, NULL, 0, 0, "The request took longer than server.request_timeout_ms."}}},
    {api_dataset_summary, "datasets", NULL, false, P_COLUMNS | P_INM, false,
     {{200, "Summary", M_JSON, H_CACHE,
       "Statistics per column, computed once per generation (the first call scans the data)."},
      {304, NULL, 0, H_CACHE, "If-None-Match matched: the dataset was not reloaded since."},
      {400, NULL, 0, 0, "columns names a column the dataset does not have, or is malformed."},
      {404, NULL, 0, 0, "No such dataset."},
      {503, NULL, 0, H_RETRY, "Not published yet, or its build failed."},
      {504, NULL, 0, 0, NULL}}},
    {api_dataset_facets, "query", "FacetsRequest", true, 0, false,
     {{200, "Facets", M_JSON, 0, "The top values of each column among the selected rows."},
      R_DATA_ERRORS}},
    {api_dataset_query_stream, "query", "QueryRequest", false, P_FORMAT | P_GEN, false,
     {{200, "QueryStream", M_ROWS, H_TIMING,
       "Every matching row, streamed (page and page_size ignored; limit honoured): an Arrow IPC "
       "stream unless ?format= or Accept asks for JSON, CSV or NDJSON; compressed per "
       "Accept-Encoding when the format is text."},
      R_DATA_ERRORS, R_GEN_ERRORS}},
    {api_dataset_count, "query", "CountRequest", false, P_GEN, false,
     {{200, "Count", M_JSON, H_TIMING | H_REFRESHED, "The number of matching rows."},
      R_DATA_ERRORS, R_GEN_ERRORS}},
    {api_dataset_parquet, "export", NULL, false, P_RANGE | P_GEN, true,
     {{200, "ParquetFile", M_PARQUET, H_RANGE, "The whole dataset as one Parquet file."},
      {206, "ParquetFile", M_PARQUET, H_RANGE, "The requested byte range."},
      {304, NULL, 0, H_RANGE, "If-None-Match matched the current generation."},
      {400, NULL, 0, 0, "?generation= is not a generation id."},
      {404, NULL, 0, 0, "No such dataset."},
      R_GEN_ERRORS,
      {412, NULL, 0, 0, "If-Match does not match the current generation."},
      {416, NULL, 0, 0, "Range not satisfiable."},
      {503, NULL, 0, H_RETRY, "Not published yet, or its build failed."}}},
    {api_queries_create, "queries", "SavedQueryRequest", true, P_ASYNC, false,
     {{200, "SavedQuery", M_JSON, 0, "Saved and built: state published, with rows."},
      {202, "SavedQuery", M_JSON, 0, "?async=true: registered, building (poll its status)."},
      {400, NULL, 0, 0, "Invalid field or name, SQL the gate refuses or DuckDB cannot bind or run (invalid_field, invalid_name, sql_*, query_failed, unknown_column, ...), or a bounded function past its limit (limit_exceeded)."},
      {409, NULL, 0, 0, "The name is taken (name_taken)."},
      {413, NULL, 0, 0, NULL},
      {415, NULL, 0, 0, NULL},
      {503, NULL, 0, H_RETRY, "A dataset it reads is not published yet, or failed."},
      {504, NULL, 0, 0, "The build did not end within server.request_timeout_ms: it was stopped and nothing was kept (use ?async=true)."}}},
    {api_queries_list, "queries", NULL, false, 0, false,
     {{200, "SavedQueryList", M_JSON, 0, "Every saved query, kinds temp and query."}}},
    {api_queries_delete, "queries", NULL, false, 0, false,
     {{200, "SavedQueryDeleted", M_JSON, 0, "Unregistered (and its file and storage removed)."},
      {403, NULL, 0, 0, "Not a saved query: config and POST /datasets datasets cannot be deleted (not_deletable)."},
      {404, NULL, 0, 0, "No such dataset."},
      {409, "HasDependents", M_JSON, 0, "Other datasets depend on it; they are listed."},
      R_READER_WRITES}},
    {api_sql, "query", "SqlRequest", true, P_FORMAT, false,
     {{200, "SqlResult", M_ROWS, H_TIMING,
       "JSON {data, max_rows, truncated}, or the rows in another format (?format= or Accept)."},
      {400, NULL, 0, 0, "Not one read-only SELECT over the datasets (sql_syntax, sql_not_read_only, sql_unknown_table, sql_forbidden_function, ...), a statement past a limit (limit_exceeded: the message names the function or construct and the limit), or one DuckDB failed to run (query_failed)."},
      {413, NULL, 0, 0, NULL},
      {415, NULL, 0, 0, NULL},
      {503, NULL, 0, H_RETRY, "A dataset it reads is not published yet."},
      {504, NULL, 0, 0, NULL}}},
    {api_mcp, "mcp", "JsonRpcRequest", true, 0, false,
     {{200, "JsonRpcResponse", M_JSON, 0, "A JSON-RPC response (tool errors are results with isError)."},
      {202, NULL, 0, 0, "A notification was accepted (no body)."},
      {400, "JsonRpcResponse", M_JSON, 0, "Not a JSON-RPC request (JSON-RPC error -32700/-32600), or an unsupported MCP-Protocol-Version."},
      {403, "JsonRpcResponse", M_JSON, 0, "An Origin the server does not allow (server.allowed_origins, mcp.allowed_origins): JSON-RPC error -32600."},
      {404, "JsonRpcResponse", M_JSON, 0, "MCP-Protocol-Version 2026-07-28: a method the server does not have (JSON-RPC error -32601)."},
      {413, NULL, 0, 0, NULL}}},
    {api_mcp_resource, "mcp", NULL, false, 0, false,
     {{200, "ProtectedResourceMetadata", M_JSON, 0, "OAuth 2.0 Protected Resource Metadata."}}},
    {api_metrics, "operations", NULL, false, 0, false,
     {{200, "Metrics", M_PROM, 0, "Prometheus text format 0.0.4."}}},
    {api_openapi, "operations", NULL, false, 0, false,
     {{200, "OpenApiDocument", M_JSON, 0, "This document."}}},
    /* UI files ({base}/{*}; the {base} route itself only redirects) */
    {api_swagger_asset, "ui", NULL, false, 0, false,
     {{200, "Asset", M_ASSET, 0, "A file of Swagger UI (\"\" is its page)."},
      {304, NULL, 0, 0, "If-None-Match matched."},
      {404, NULL, 0, 0, "No such file."},
      {412, NULL, 0, 0, "If-Match does not match."}}},
    {api_explorer_asset, "ui", NULL, false, 0, false,
     {{200, "Asset", M_ASSET, 0, "A file of the Explorer (\"\" is its page)."},
      {302, NULL, 0, H_LOCATION, "A deep link without an extension: to the page with #/<path>."},
      {304, NULL, 0, 0, "If-None-Match matched."},
      {404, NULL, 0, 0, "No such file."},
      {412, NULL, 0, 0, "If-Match does not match."}}},
    {api_docs_asset, "ui", NULL, false, 0, false,
     {{200, "Asset", M_ASSET, 0, "A page or file of the documentation site."},
      {301, NULL, 0, H_LOCATION, "A directory: to itself with a trailing slash."},
      {304, NULL, 0, 0, "If-None-Match matched."},
      {404, NULL, 0, 0, "No such file."},
      {412, NULL, 0, 0, "If-Match does not match."}}},
    {api_explorer_config, "ui", NULL, false, 0, false,
     {{200, "ExplorerSettings", M_JSON, 0, "The Explorer's settings."}}},
};

/* The files behind a UI handler (an empty bundle: built without that UI). */
static const struct ui_bundle *bundle_of(http_handler_fn fn)
{
    if (fn == api_swagger_asset)
        return &ui_bundle_swagger;
    if (fn == api_explorer_asset)
        return &ui_bundle_explorer;
    if (fn == api_docs_asset)
        return &ui_bundle_docs;
    return NULL;
}

static const struct op_doc *find_doc(http_handler_fn fn)
{
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
        if (docs[i].handler == fn)
            return &docs[i];
    return NULL;
}

bool api_openapi_documented(const struct http_route *route)
{
    return route->description && route->description[0] && find_doc(route->handler) != NULL;
}

static const char *status_text(int status)
{
    switch (status) {
    case 200: return "OK.";
    case 202: return "Accepted.";
    case 206: return "Partial content.";
    case 301: return "Moved permanently.";
    case 302: return "Found elsewhere.";
    case 304: return "Not modified.";
    case 400: return "Invalid request.";
    case 401: return "Missing or invalid credentials.";
    case 403: return "Not allowed.";
    case 404: return "Not found.";
    case 409: return "Conflict.";
    case 412: return "Precondition failed.";
    case 413: return "Request body larger than server.max_body_bytes.";
    case 415: return "The body must be sent with Content-Type: application/json.";
    case 410: return "Gone.";
    case 414: return "The request target is longer than 8192 bytes (uri_too_long).";
    case 416: return "Range not satisfiable.";
    case 421: return "The Host header names a host this server does not answer.";
    case 422: return "Unprocessable.";
    case 431: return "The request's header fields together exceed 32 KiB (headers_too_large).";
    case 503: return "Unavailable; retry later.";
    case 504: return "The request took longer than server.request_timeout_ms.";
    }
    return "Response.";
}

/* The error codes an error response shows as examples: per handler and
 * status, else per status. Swagger UI shows a response's own examples, so
 * each status lists what it can really carry (not invalid_query for all). */
static const struct {
    http_handler_fn handler;    /* NULL: any */
    int status;
    const char *codes;          /* space-separated, from src/util/errors.h */
} error_codes[] = {
    {api_dataset_query, 400, "invalid_query unknown_column unknown_field unknown_operator "
                             "invalid_operator invalid_value invalid_aggregation invalid_order "
                             "invalid_having invalid_combination pattern_too_complex "
                             "limit_exceeded invalid_json duplicate_key"},
    {api_dataset_query_get, 400, "invalid_query unknown_column invalid_json limit_exceeded"},
    {api_dataset_query_stream, 400, "invalid_query unknown_column invalid_value invalid_json"},
    {api_dataset_count, 400, "invalid_query unknown_column invalid_value invalid_json"},
    {api_dataset_facets, 400, "invalid_query unknown_column unknown_field invalid_value "
                              "limit_exceeded invalid_json"},
    {api_dataset_summary, 400, "unknown_column invalid_query"},
    {api_sql, 400, "sql_syntax sql_not_read_only sql_unknown_table sql_forbidden_function "
                   "limit_exceeded query_failed invalid_json"},
    {api_queries_create, 400, "invalid_field invalid_name sql_syntax sql_not_read_only "
                              "sql_unknown_table sql_forbidden_function limit_exceeded "
                              "query_failed"},
    {api_datasets_register, 400, "dataset_exists invalid_name source_unavailable source_empty "
                                 "source_not_allowed invalid_config"},
    {api_datasets_persist, 400, "dataset_exists invalid_name source_unavailable no_config_file "
                                "invalid_config"},
    {api_config_reload, 400, "no_config_file invalid_config"},
    {api_dataset_reload, 400, "source_empty source_unavailable source_not_allowed"},
    {api_dataset_reload, 409, "busy not_writer"},
    {api_queries_create, 409, "name_taken"},
    {api_queries_delete, 403, "not_deletable"},
    {NULL, 400, "bad_request invalid_json"},
    {NULL, 401, "unauthorized invalid_token"},
    {NULL, 403, "admin_disabled insufficient_scope"},
    {NULL, 404, "dataset_not_found not_found"},
    {api_dataset_query, 409, "generation_not_available"},
    {api_dataset_query_get, 409, "generation_not_available"},
    {api_dataset_query_stream, 409, "generation_not_available"},
    {api_dataset_count, 409, "generation_not_available"},
    {api_dataset_schema, 409, "generation_not_available"},
    {api_dataset_parquet, 409, "generation_not_available"},
    {api_dataset_schema, 400, "invalid_query"},
    {api_dataset_parquet, 400, "invalid_query"},
    {NULL, 409, "busy"},
    {NULL, 410, "generation_gone"},
    {NULL, 412, "precondition_failed"},
    {NULL, 413, "body_too_large"},
    {NULL, 415, "unsupported_media_type"},
    {NULL, 414, "uri_too_long"},
    {NULL, 416, "range_not_satisfiable"},
    {NULL, 421, "host_not_allowed"},
    {NULL, 422, "build_failed"},
    {NULL, 431, "headers_too_large"},
    {NULL, 503, "dataset_not_ready dataset_failed unavailable"},
    {NULL, 504, "timeout"},
};

/* {"<code>": {"summary", "value": {"error", "code"}}, ...} for a response. */
static json_t *error_examples(http_handler_fn handler, int status, const char *codes)
{
    for (size_t i = 0; i < sizeof error_codes / sizeof error_codes[0] && !codes; i++)
        if (error_codes[i].status == status && error_codes[i].handler == handler)
            codes = error_codes[i].codes;
    for (size_t i = 0; i < sizeof error_codes / sizeof error_codes[0] && !codes; i++)
        if (error_codes[i].status == status && !error_codes[i].handler)
            codes = error_codes[i].codes;
    if (!codes)
        return NULL;
    json_t *ex = json_object();
    for (const char *p = codes; *p;) {
        size_t n = strcspn(p, " ");
        for (int e = 0; e < VT_ERR__COUNT; e++) {
            const char *c = vt_err_code((enum vt_err)e);
            if (strlen(c) == n && !strncmp(c, p, n))
                json_object_set_new(
                    ex, c,
                    json_pack("{s:s,s:{s:s,s:s}}", "summary", c, "value", "error",
                              vt_err_default_message((enum vt_err)e), "code", c));
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    return ex;
}

static json_t *ref(const char *kind, const char *name)
{
    char buf[128];
    snprintf(buf, sizeof buf, "#/components/%s/%s", kind, name);
    return json_pack("{s:s}", "$ref", buf);
}

/* "/api/v1/datasets/{name}/query" -> "postApiV1DatasetsNameQuery". */
static char *operation_id(const char *method, const char *pattern)
{
    size_t cap = strlen(method) + strlen(pattern) + 8;
    char *id = malloc(cap);
    if (!id)
        return NULL;
    size_t n = 0;
    for (const char *m = method; *m; m++)
        id[n++] = (char)(*m | 0x20);
    bool up = true;
    for (const char *p = pattern; *p && n + 6 < cap; p++) {
        char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            id[n++] = up && c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
            up = false;
        } else if (c == '*') {
            memcpy(id + n, "Path", 4);
            n += 4;
            up = true;
        } else {
            up = true;
        }
    }
    if (!strcmp(pattern, "/")) {
        memcpy(id + n, "Root", 4);
        n += 4;
    }
    id[n] = '\0';
    return id;
}

/* The OpenAPI path for a route pattern: {*} becomes {path}. */
static char *openapi_path(const char *pattern)
{
    size_t n = strlen(pattern);
    char *out = malloc(n + 8);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strncmp(pattern + i, "{*}", 3)) {
            memcpy(out + o, "{path}", 6);
            o += 6;
            i += 2;
        } else {
            out[o++] = pattern[i];
        }
    }
    out[o] = '\0';
    return out;
}

static void add_headers(json_t *resp, unsigned h)
{
    json_t *hs = json_object();
    json_object_set_new(hs, "X-Request-Id", ref("headers", "X-Request-Id"));
    if (h & H_TIMING)
        json_object_set_new(hs, "Server-Timing", ref("headers", "Server-Timing"));
    if (h & H_REFRESHED)
        json_object_set_new(hs, "X-Dataset-Refreshed-At", ref("headers", "X-Dataset-Refreshed-At"));
    if (h & H_PAGE) {
        json_object_set_new(hs, "X-Page", ref("headers", "X-Page"));
        json_object_set_new(hs, "X-Page-Size", ref("headers", "X-Page-Size"));
    }
    if (h & H_RETRY)
        json_object_set_new(hs, "Retry-After", ref("headers", "Retry-After"));
    if (h & H_RANGE) {
        json_object_set_new(hs, "ETag", ref("headers", "ETag"));
        json_object_set_new(hs, "Content-Range", ref("headers", "Content-Range"));
    }
    if (h & H_LOCATION)
        json_object_set_new(hs, "Location", ref("headers", "Location"));
    if (h & H_CACHE) {
        json_object_set_new(hs, "ETag", ref("headers", "WeakETag"));
        json_object_set_new(hs, "Cache-Control", ref("headers", "Cache-Control"));
    }
    if (h & H_TOTAL)
        json_object_set_new(hs, "X-Total-Count", ref("headers", "X-Total-Count"));
    json_object_set_new(resp, "headers", hs);
}

static json_t *response(const struct op_resp *r, http_handler_fn handler)
{
    json_t *o = json_object();
    json_object_set_new(o, "description",
                        json_string(r->description ? r->description : status_text(r->status)));
    add_headers(o, r->headers);
    const char *schema = r->schema;
    unsigned media = r->media;
    if (!schema && r->status >= 400) {
        schema = "Error";
        media = M_JSON;
    }
    if (!schema || !media)
        return o;
    json_t *content = json_object();
    if (media & M_ROWS) {
        /* The JSON document (the route's schema), then every other format
         * of the encoder table as a string of its media type. */
        const struct enc_format *const *all;
        size_t n = enc_formats(&all);
        for (size_t i = 0; i < n; i++)
            json_object_set_new(
                content, all[i]->media_type,
                all[i] == &enc_json
                    ? json_pack("{s:o}", "schema", ref("schemas", schema))
                    : json_pack("{s:{s:s,s:s,s:s}}", "schema", "type", "string",
                                "contentMediaType", all[i]->media_type, "description",
                                all[i]->description));
    }
    if (media & M_JSON) {
        json_t *mt = json_pack("{s:o}", "schema", ref("schemas", schema));
        /* A reader's own answers: not_writer, the relay's unavailable, or
         * a catalog not read yet. */
        const char *codes = !(r->headers & W_READER) ? NULL
                            : r->status == 409    ? "not_writer"
                            : handler == api_dataset_status ? "dataset_not_ready"
                                                            : "unavailable";
        json_t *ex = r->status >= 400 && !r->schema ? error_examples(handler, r->status, codes)
                                                    : NULL;
        if (ex)
            json_object_set_new(mt, "examples", ex);
        json_object_set_new(content, "application/json", mt);
    }
    if (media & M_PARQUET)
        json_object_set_new(content, "application/vnd.apache.parquet",
                            json_pack("{s:o}", "schema", ref("schemas", schema)));
    if (media & M_PROM)
        json_object_set_new(content, "text/plain; version=0.0.4",
                            json_pack("{s:o}", "schema", ref("schemas", schema)));
    if (media & M_ASSET)
        json_object_set_new(content, "*/*", json_pack("{s:o}", "schema", ref("schemas", schema)));
    json_object_set_new(o, "content", content);
    return o;
}

/* A server-specific answer (a reader's not_writer) with the status of a
 * documented one whose body has its own schema (409 HasDependents): the
 * body is either. */
static void reader_alternative(json_t *resp, const struct op_resp *r)
{
    json_t *content = json_object_get(resp, "content");
    json_t *mt = content ? json_object_get(content, "application/json") : NULL;
    json_t *schema = mt ? json_object_get(mt, "schema") : NULL;
    if (!schema || !json_object_get(schema, "$ref") ||
        !strcmp(json_string_value(json_object_get(schema, "$ref")), "#/components/schemas/Error"))
        return;
    json_object_set_new(mt, "schema", json_pack("{s:[O,o]}", "anyOf", schema,
                                                ref("schemas", "Error")));
    const char *d = json_string_value(json_object_get(resp, "description"));
    char buf[512];
    snprintf(buf, sizeof buf, "%s Or: %s", d ? d : "", r->description ? r->description : "");
    json_object_set_new(resp, "description", json_string(buf));
}

/* What any operation can answer 503 (src/http: conn.c's connection caps,
 * http_defer's full work queue, a request that arrives while the server
 * stops) added to an operation's own 503 `resp`: Error as a possible body,
 * the two codes as examples, Retry-After, a sentence. A HEAD's (no content)
 * gets the header and the sentence. */
#define EVERYWHERE_503 "unavailable shutting_down"
#define EVERYWHERE_503_TEXT                                                          \
    "Any route: the server is overloaded (unavailable: past its connection caps, or " \
    "its work queue is full), or it is shutting down (shutting_down)."

static void add_everywhere_503(json_t *resp)
{
    json_t *hs = json_object_get(resp, "headers");
    if (hs && !json_object_get(hs, "Retry-After"))
        json_object_set_new(hs, "Retry-After", ref("headers", "Retry-After"));
    const char *d = json_string_value(json_object_get(resp, "description"));
    char buf[768];
    snprintf(buf, sizeof buf, "%s %s", d ? d : "", EVERYWHERE_503_TEXT);
    json_object_set_new(resp, "description", json_string(buf));
    json_t *content = json_object_get(resp, "content");
    json_t *mt = content ? json_object_get(content, "application/json") : NULL;
    if (!mt)
        return;
    json_t *schema = json_object_get(mt, "schema");
    const char *sref = schema ? json_string_value(json_object_get(schema, "$ref")) : NULL;
    if (sref && strcmp(sref, "#/components/schemas/Error") != 0)
        json_object_set_new(mt, "schema", json_pack("{s:[O,o]}", "anyOf", schema,
                                                    ref("schemas", "Error")));
    json_t *ex = json_object_get(mt, "examples");
    if (!ex) {
        ex = json_object();
        json_object_set_new(mt, "examples", ex);
    }
    json_object_update_missing_new(ex, error_examples(NULL, 503, EVERYWHERE_503));
}

static json_t *scopes(const struct strvec *v, const char *fallback)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->len; i++)
        json_array_append_new(a, json_string(v->items[i]));
    if (!v->len)
        json_array_append_new(a, json_string(fallback));
    return a;
}

/* The security requirement of a permission, per this server's config, and
 * the 401/403 answers it adds. */
static json_t *security(enum auth_perm perm, bool is_get, const struct vt_config *cfg,
                        bool admin_configured, bool *out_401, bool *out_403)
{
    bool bearer = cfg->auth.enabled;
    json_t *sec = json_array();
    *out_401 = *out_403 = false;
    switch (perm) {
    case AUTH_PERM_PUBLIC:
        break;
    case AUTH_PERM_READ:
        if (bearer) {
            json_array_append_new(sec, json_pack("{s:o}", "bearer",
                                                 scopes(&cfg->auth.read_scopes, "datasets:read")));
            if (cfg->auth.anonymous_read && is_get)
                json_array_append_new(sec, json_object()); /* optional */
            else
                *out_401 = *out_403 = true;
        }
        break;
    case AUTH_PERM_RELOAD:
    case AUTH_PERM_MANAGE:
        if (!bearer || cfg->auth.admin_token_fallback)
            json_array_append_new(sec, json_pack("{s:[]}", "adminToken"));
        if (bearer)
            json_array_append_new(
                sec, json_pack("{s:o}", "bearer",
                               perm == AUTH_PERM_RELOAD
                                   ? scopes(&cfg->auth.reload_scopes, "datasets:reload")
                                   : json_pack("[s]", "datasets:manage")));
        /* Without ADMIN_TOKEN the admin token cannot pass: 403
         * admin_disabled; with it, a missing or wrong one is 401. */
        *out_401 = admin_configured || bearer;
        /* manage routes are hidden (not listed) without either */
        *out_403 = (!admin_configured && perm == AUTH_PERM_RELOAD) || bearer;
        break;
    }
    return sec;
}

/* Whether some Host value gets 421 host_not_allowed on every route
 * (http/hosts.h): always, unless allowed_hosts lists "*" or the listener is
 * not loopback and allowed_hosts is empty (then any name is answered). */
static bool host_refusals(const struct vt_config *cfg)
{
    const struct strvec *h = &cfg->server.allowed_hosts;
    for (size_t i = 0; i < h->len; i++)
        if (!strcmp(h->items[i], "*"))
            return false;
    if (h->len)
        return true;
    const char *l = cfg->server.listen ? cfg->server.listen : "127.0.0.1";
    return !strncmp(l, "127.", 4) || !strcmp(l, "::1") || !strcmp(l, "localhost") ||
           !strcmp(l, "[::1]");
}

static json_t *path_param(const char *name)
{
    if (!strcmp(name, "path"))
        return json_pack("{s:s,s:s,s:b,s:s,s:{s:s}}", "name", "path", "in", "path", "required", 1,
                         "description",
                         "A file under the mount; may contain '/' (a directory ends with '/').",
                         "schema", "type", "string");
    return json_pack("{s:s,s:s,s:b,s:s,s:{s:s,s:s}}", "name", name, "in", "path", "required", 1,
                     "description", "The dataset's name.", "schema", "type", "string", "pattern",
                     "^[A-Za-z0-9_.-]+$");
}

static json_t *operation(const struct http_route *r, const char *method, const struct op_doc *d,
                         const struct vt_config *cfg, bool admin_configured)
{
    json_t *op = json_object();
    char *id = operation_id(method, r->pattern);
    json_object_set_new(op, "operationId", json_string(id ? id : method));
    free(id);
    json_object_set_new(op, "summary", json_string(r->description ? r->description : ""));
    json_object_set_new(op, "tags", json_pack("[s]", d ? d->tag : "other"));
    json_object_set_new(op, "x-vitrine-permission", json_string(auth_perm_name(r->perm)));

    json_t *params = json_array();
    for (const char *p = strchr(r->pattern, '{'); p; p = strchr(p + 1, '{')) {
        const char *e = strchr(p, '}');
        if (!e)
            break;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(e - p - 1), p + 1);
        json_array_append_new(params, path_param(!strcmp(name, "*") ? "path" : name));
    }
    if (d && (d->params & P_FORMAT)) {
        const struct enc_format *const *all;
        size_t n = enc_formats(&all);
        json_t *names = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(names, json_string(all[i]->name));
        json_array_append_new(
            params, json_pack("{s:s,s:s,s:s,s:{s:s,s:o}}", "name", "format", "in", "query",
                              "description",
                              "The format of the rows. Without it, the format whose media type "
                              "Accept names with the highest q (application/json, "
                              "application/vnd.apache.arrow.stream, text/csv, "
                              "application/x-ndjson), else JSON (Arrow for /query/stream).",
                              "schema", "type", "string", "enum", names));
    }
    if (d && (d->params & P_ASYNC))
        json_array_append_new(
            params, json_pack("{s:s,s:s,s:s,s:{s:s,s:b}}", "name", "async", "in", "query",
                              "description",
                              "true: answer 202 at once while the dataset builds; false "
                              "(default): wait for the build.",
                              "schema", "type", "boolean", "default", 0));
    if (d && (d->params & P_Q))
        json_array_append_new(
            params, json_pack("{s:s,s:s,s:s,s:{s:s},s:s}", "name", "q", "in", "query",
                              "description",
                              "The query request of POST .../query as URL-encoded JSON "
                              "(absent: {}, the first page of every row).",
                              "schema", "type", "string", "example",
                              "{\"columns\":[\"trip_id\",\"fare\"],\"page_size\":5}"));
    if (d && (d->params & P_COLUMNS))
        json_array_append_new(
            params, json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", "columns", "in", "query",
                              "description",
                              "The columns to describe, comma-separated (or a JSON array of "
                              "names); absent: every column.",
                              "schema", "type", "string"));
    if (d && (d->params & P_GEN))
        json_array_append_new(
            params, json_pack("{s:s,s:s,s:s,s:{s:s,s:s}}", "name", "generation", "in", "query",
                              "description",
                              "Read this generation of the dataset (an X-Dataset-Generation "
                              "value) instead of the current one: the current or the previous "
                              "one while it is kept; 409 when it is newer than this replica's, "
                              "410 when it was dropped.",
                              "schema", "type", "string", "pattern", "^[0-9A-HJKMNP-TV-Z]{26}$"));
    if (d && (d->params & P_INM))
        json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", "If-None-Match",
                                                "in", "header", "description",
                                                "An ETag from an earlier answer: 304 when the "
                                                "dataset was not reloaded since.",
                                                "schema", "type", "string"));
    if (d && (d->params & P_RANGE)) {
        json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", "Range", "in",
                                                "header", "description",
                                                "bytes=<start>-<end>, bytes=<start>- or bytes=-<n>",
                                                "schema", "type", "string"));
        json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", "If-None-Match",
                                                "in", "header", "description",
                                                "An ETag from an earlier answer: 304 when unchanged.",
                                                "schema", "type", "string"));
        json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", "If-Match", "in",
                                                "header", "description",
                                                "An ETag: 412 when the dataset was reloaded since.",
                                                "schema", "type", "string"));
    }
    json_array_append_new(params,
                          json_pack("{s:s,s:s,s:s,s:{s:s,s:i}}", "name", "X-Request-Id", "in",
                                    "header", "description",
                                    "Your id for the request (echoed and logged when it is 1-64 "
                                    "of [A-Za-z0-9._:@+=/-]).",
                                    "schema", "type", "string", "maxLength", 64));
    json_object_set_new(op, "parameters", params);

    if (d && d->request && strcmp(method, "get") != 0 && strcmp(method, "head") != 0)
        json_object_set_new(
            op, "requestBody",
            json_pack("{s:b,s:{s:{s:o}}}", "required", d->request_required, "content",
                      "application/json", "schema", ref("schemas", d->request)));

    bool r401, r403;
    json_t *sec = security(r->perm, !strcmp(method, "get") || !strcmp(method, "head"), cfg,
                           admin_configured, &r401, &r403);
    json_object_set_new(op, "security", sec);

    json_t *responses = json_object();
    char code[8];
    const struct ui_bundle *bundle = bundle_of(r->handler);
    if (bundle && !bundle->n) {
        struct op_resp none = {404, NULL, 0, 0, "This build does not include this UI."};
        json_object_set_new(responses, "404", response(&none, r->handler));
    } else if (bundle && !strstr(r->pattern, "{*}")) {
        /* A UI's mount point only redirects to {base}/. */
        struct op_resp moved = {301, NULL, 0, H_LOCATION, "To the UI's page: {base}/."};
        json_object_set_new(responses, "301", response(&moved, r->handler));
    } else if (d) {
        bool reader = cfg->cluster.role == CFG_ROLE_READER;
        for (size_t i = 0; i < MAX_RESP && d->resp[i].status; i++) {
            bool head = !strcmp(method, "head");
            if (head && (d->resp[i].status == 206 || d->resp[i].status == 416))
                continue; /* Range applies to GET only (RFC 9110): HEAD answers 200 */
            if ((d->resp[i].headers & W_READER) && !reader)
                continue;
            snprintf(code, sizeof code, "%d", d->resp[i].status);
            if ((d->resp[i].headers & W_READER) && json_object_get(responses, code)) {
                reader_alternative(json_object_get(responses, code), &d->resp[i]);
                continue;
            }
            json_t *resp = response(&d->resp[i], r->handler);
            if (!strcmp(method, "head"))
                json_object_del(resp, "content");
            json_object_set_new(responses, code, resp);
        }
    } else {
        struct op_resp ok = {200, NULL, 0, 0, "OK (this route has no documented schema yet)."};
        json_object_set_new(responses, "200", response(&ok, r->handler));
    }
    if (r401) {
        struct op_resp e = {401, NULL, 0, 0, "Missing or invalid credentials."};
        json_object_set_new(responses, "401", response(&e, r->handler));
    }
    if (r403) {
        struct op_resp e = {403, NULL, 0, 0,
                            "Not allowed: ADMIN_TOKEN unset (admin_disabled), or a token without "
                            "the scope (insufficient_scope)."};
        json_object_set_new(responses, "403", response(&e, r->handler));
    }
    /* Answered before any route is chosen (src/http/wire.c), on every one. */
    json_object_set_new(responses, "414", ref("responses", "UriTooLong"));
    json_object_set_new(responses, "431", ref("responses", "HeadersTooLarge"));
    json_t *r503 = json_object_get(responses, "503");
    if (r503)
        add_everywhere_503(r503);
    else
        json_object_set_new(responses, "503", ref("responses", "Unavailable"));
    if (host_refusals(cfg)) {
        struct op_resp e = {421, NULL, 0, 0,
                            "The Host header names a host the server does not answer "
                            "(server.allowed_hosts; DNS-rebinding protection): on every route."};
        json_object_set_new(responses, "421", response(&e, r->handler));
    }
    json_object_set_new(op, "responses", responses);
    return op;
}

/* Marks every "#/components/<kind>/<name>" that `v` refers to in `used`
 * (an object of kind -> {name: true}); returns how many were new. */
static int mark_refs(json_t *v, json_t *used)
{
    int fresh = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            if (!strcmp(k, "$ref") && json_is_string(x)) {
                const char *s = json_string_value(x);
                static const char pre[] = "#/components/";
                if (strncmp(s, pre, sizeof pre - 1) != 0)
                    continue;
                const char *kind = s + sizeof pre - 1, *slash = strchr(kind, '/');
                if (!slash)
                    continue;
                char kbuf[64];
                snprintf(kbuf, sizeof kbuf, "%.*s", (int)(slash - kind), kind);
                json_t *set = json_object_get(used, kbuf);
                if (!set) {
                    set = json_object();
                    json_object_set_new(used, kbuf, set);
                }
                if (!json_object_get(set, slash + 1)) {
                    json_object_set_new(set, slash + 1, json_true());
                    fresh++;
                }
            } else {
                fresh += mark_refs(x, used);
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            fresh += mark_refs(x, used);
    }
    return fresh;
}

/* Drops the components this server's document never refers to (the MCP
 * schemas without [mcp], the bearer scheme without [auth], ...): a document
 * lists what this server serves, and linters flag unused components. */
static void prune_components(json_t *doc)
{
    json_t *components = json_object_get(doc, "components");
    json_t *used = json_object();
    mark_refs(json_object_get(doc, "paths"), used);
    /* Components refer to components: mark until nothing new. */
    for (int round = 0; round < 16; round++) {
        int fresh = 0;
        const char *kind;
        json_t *set;
        json_object_foreach(used, kind, set) {
            json_t *all = json_object_get(components, kind);
            const char *name;
            json_t *t;
            json_object_foreach(set, name, t)
                fresh += mark_refs(json_object_get(all, name), used);
        }
        if (!fresh)
            break;
    }
    static const char *const kinds[] = {"schemas", "headers"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        json_t *all = json_object_get(components, kinds[k]);
        json_t *set = json_object_get(used, kinds[k]);
        const char *name;
        json_t *t;
        void *tmp;
        json_object_foreach_safe(all, tmp, name, t) {
            if (!set || !json_object_get(set, name))
                json_object_del(all, name);
        }
    }
    /* Security schemes are named by operations' security requirements. */
    json_t *schemes = json_object_get(components, "securitySchemes");
    const char *name;
    json_t *t;
    void *tmp;
    json_object_foreach_safe(schemes, tmp, name, t) {
        bool found = false;
        const char *path;
        json_t *item;
        json_object_foreach(json_object_get(doc, "paths"), path, item) {
            const char *method;
            json_t *op;
            json_object_foreach(item, method, op) {
                size_t i;
                json_t *req;
                json_array_foreach(json_object_get(op, "security"), i, req)
                    found = found || json_object_get(req, name) != NULL;
            }
        }
        if (!found)
            json_object_del(schemes, name);
    }
    json_decref(used);
}

json_t *api_openapi_build(const struct http_route *routes, size_t n, const struct vt_config *cfg,
                          bool admin_configured, struct vt_error *err)
{
    json_error_t jerr;
    json_t *components = json_loads(openapi_components_json, 0, &jerr);
    if (!components) {
        vt_error_set(err, VT_ERR_INTERNAL, "openapi components: %s (line %d)", jerr.text,
                     jerr.line);
        return NULL;
    }
    /* The answers every operation refers to (operation()). */
    static const struct op_resp everywhere[] = {{414, NULL, 0, 0, NULL},
                                                {431, NULL, 0, 0, NULL},
                                                {503, NULL, 0, H_RETRY, EVERYWHERE_503_TEXT}};
    json_t *shared = json_object();
    json_object_set_new(shared, "UriTooLong", response(&everywhere[0], NULL));
    json_object_set_new(shared, "HeadersTooLarge", response(&everywhere[1], NULL));
    json_t *unavailable = response(&everywhere[2], NULL);
    json_t *ucontent = json_object_get(unavailable, "content");
    json_object_set_new(json_object_get(ucontent, "application/json"), "examples",
                        error_examples(NULL, 503, EVERYWHERE_503));
    json_object_set_new(shared, "Unavailable", unavailable);
    json_object_set_new(components, "responses", shared);
    const char *prefix = cfg->server.prefix && cfg->server.prefix[0] ? cfg->server.prefix : "";
    json_t *doc = json_object();
    json_object_set_new(doc, "openapi", json_string("3.1.0"));
    json_object_set_new(
        doc, "info",
        json_pack("{s:s,s:s,s:s,s:{s:s,s:s}}", "title", "vitrine", "version", VT_VERSION,
                  "description",
                  "Parquet files and Delta tables published as a typed HTTP API: discovery, "
                  "schemas, structured queries, counts, JSON, Arrow IPC, CSV and NDJSON results, Parquet "
                  "export with Range, hot reload. Every error is {\"error\", \"code\"}. "
                  "Generated from the server's own route table.",
                  "license", "name", "Proprietary", "identifier", "LicenseRef-vitrine"));
    json_object_set_new(doc, "servers",
                        json_pack("[{s:s,s:s}]", "url", prefix[0] ? prefix : "/", "description",
                                  "This server (server.prefix)"));
    json_t *paths = json_object();
    for (size_t i = 0; i < n; i++) {
        const struct http_route *r = &routes[i];
        /* Saved-queries routes are hidden (404) without ADMIN_TOKEN and
         * [auth]: the document does not reveal them either. */
        if (r->perm == AUTH_PERM_MANAGE && !admin_configured && !cfg->auth.enabled)
            continue;
        char *key = openapi_path(r->pattern);
        if (!key)
            continue;
        json_t *item = json_object_get(paths, key);
        if (!item) {
            item = json_object();
            json_object_set_new(paths, key, item);
            if ((r->flags & HTTP_ROUTE_ROOT) && prefix[0])
                json_object_set_new(item, "servers",
                                    json_pack("[{s:s,s:s}]", "url", "/", "description",
                                              "Mounted outside server.prefix"));
        }
        free(key);
        const struct op_doc *d = find_doc(r->handler);
        static const struct {
            unsigned bit;
            const char *name;
        } methods[] = {{HTTP_GET, "get"}, {HTTP_POST, "post"}, {HTTP_PUT, "put"},
                       {HTTP_DELETE, "delete"}, {HTTP_PATCH, "patch"}};
        for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
            if (!(r->methods & methods[m].bit))
                continue;
            json_object_set_new(item, methods[m].name,
                                operation(r, methods[m].name, d, cfg, admin_configured));
            if (methods[m].bit == HTTP_GET && d && d->head)
                json_object_set_new(item, "head", operation(r, "head", d, cfg, admin_configured));
        }
    }
    json_object_set_new(doc, "paths", paths);
    json_t *tags = json_pack(
        "[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},"
        "{s:s,s:s}]",
        "name", "probes", "description", "Liveness, readiness, version.", "name", "datasets",
        "description", "Discovery: datasets, status, schemas.", "name", "query", "description",
        "Structured queries, counts, Arrow streams, SQL.", "name", "export", "description",
        "Whole-dataset Parquet export.", "name", "admin", "description",
        "Reload and registration (admin token or reload scope).", "name", "queries",
        "description", "Saved queries: SQL saved as datasets (admin token or datasets:manage).",
        "name", "mcp", "description",
        "Model Context Protocol endpoint for AI agents.", "name", "operations", "description",
        "Metrics and this document.", "name", "ui", "description", "Embedded web UIs.");
    json_object_set_new(doc, "tags", tags);
    json_object_set_new(doc, "components", components);
    prune_components(doc);
    return doc;
}

void api_openapi(struct http_request *req)
{
    struct api_app *app = api_app(req);
    const struct http_route *routes;
    size_t n = http_server_routes(http_req_server(req), &routes);
    struct vt_error err = {0};
    json_t *doc = api_openapi_build(routes, n, app->cfg, app->auth.admin.configured, &err);
    if (!doc) {
        http_reply_vterr(req, &err);
        return;
    }
    char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (!text) {
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return;
    }
    struct strbuf body;
    sb_init(&body, 0);
    sb_adds(&body, text);
    free(text);
    http_add_header(req, "Cache-Control", "no-cache");
    http_reply_json(req, 200, &body);
}
