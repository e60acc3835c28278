/*
 * Every size that client input can grow has a named limit here, so a reviewer
 * can see all of them in one place. Limits that the configuration sets
 * (server.max_body_bytes, server.max_page_size) live in struct vt_config.
 */
#ifndef VT_UTIL_LIMITS_H
#define VT_UTIL_LIMITS_H

/* HTTP */
#define VT_MAX_HEADER_BYTES (32 * 1024)        /* all request headers together */
#define VT_MAX_URL_BYTES 8192                  /* request target */
#define VT_CONNECTION_TIMEOUT_SECS 120         /* idle keep-alive connection */
#define VT_MAX_CONNECTIONS 4096                /* concurrent client connections */
#define VT_MAX_PENDING_JOBS 4096               /* worker-pool queue depth; beyond it 503 */

/* Query request JSON */
#define VT_MAX_JSON_DEPTH 16                   /* nesting of the request body */
#define VT_MAX_COLUMN_NAME_BYTES 256           /* any column name in a request */
#define VT_MAX_COLUMNS_IN_REQUEST 1024         /* entries of columns/group_by/order_by */
#define VT_MAX_PREDICATES 256                  /* predicates or having entries */
#define VT_MAX_AGGREGATIONS 256
#define VT_MAX_IN_LIST 10000                   /* values of one `in` predicate */
#define VT_MAX_LIKE_PATTERN_BYTES 1024         /* like/ilike pattern */
#define VT_MAX_STRING_VALUE_BYTES (64 * 1024)  /* any other string value */
#define VT_MAX_QUERY_PARAMS 20000              /* bound values in one request, all predicates */

/* Streaming responses: batches queued between a DuckDB worker and the socket */
#define VT_STREAM_QUEUE_BATCHES 4

/* Status entries */
#define VT_LAST_ERROR_CHARS 500

/* Dataset names */
#define VT_MAX_DATASET_NAME_BYTES 128

/* Config file */
#define VT_MAX_CONFIG_BYTES (16 * 1024 * 1024)

#endif
