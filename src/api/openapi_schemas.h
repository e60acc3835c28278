/*
 * The reusable parts of the OpenAPI document (components: schemas and
 * security schemes), as JSON text. Private to openapi.c.
 *
 * OPENAPI_JSON(...) turns its tokens into a string literal (the preprocessor
 * escapes the quotes), so the JSON below is written as JSON, not as an
 * escaped C string. openapi.c parses it with jansson; a unit test fails if
 * it does not parse or a $ref points nowhere.
 */
#ifndef VT_API_OPENAPI_SCHEMAS_H
#define VT_API_OPENAPI_SCHEMAS_H

#define OPENAPI_JSON(...) #__VA_ARGS__

static const char openapi_components_json[] = OPENAPI_JSON({
  "schemas": {
    "Error": {
      "type": "object",
      "description": "Every error, whatever the status.",
      "required": ["error", "code"],
      "properties": {
        "error": {"type": "string", "description": "A message for people."},
        "code": {"type": "string", "description": "A stable snake_case code for programs (each response lists the ones it can carry as examples)."}
      }
    },
    "Health": {
      "type": "object", "required": ["status"],
      "properties": {"status": {"const": "ok"}}
    },
    "Ready": {
      "type": "object", "required": ["status", "datasets"],
      "properties": {
        "status": {"enum": ["ready", "not_ready"]},
        "datasets": {"type": "integer", "minimum": 0,
                     "description": "Registered datasets (0 when not ready)."},
        "reason": {"const": "shutting_down"}
      }
    },
    "Version": {
      "type": "object", "required": ["name", "version", "backend", "profile"],
      "properties": {
        "name": {"type": "string"},
        "version": {"type": "string"},
        "backend": {"enum": ["DuckDB", "DataFusion", "unknown"]},
        "profile": {"enum": ["debug", "release"]},
        "git_sha": {"type": "string"},
        "build_time": {"type": "string"},
        "target": {"type": "string"}
      }
    },
    "DatasetStatus": {
      "type": "object",
      "required": ["name", "state", "kind", "residency", "storage_bytes", "generation_id",
                   "last_refresh_at", "last_refresh_duration_ms", "next_refresh_at",
                   "refresh_source", "consecutive_failures", "last_error", "rows", "columns",
                   "lazy", "depends_on"],
      "properties": {
        "name": {"type": "string"},
        "state": {"enum": ["pending", "building", "published", "failed"]},
        "kind": {"enum": ["parquet", "delta", "query"]},
        "residency": {"enum": ["memory", "lazy"]},
        "storage_bytes": {"type": ["integer", "null"],
                          "description": "Bytes of a storage-backed (lazy) generation; null in memory."},
        "generation_id": {"type": ["string", "null"],
                          "description": "ULID of a storage-backed generation; null in memory."},
        "last_refresh_at": {"type": ["string", "null"], "format": "date-time"},
        "last_refresh_duration_ms": {"type": ["integer", "null"]},
        "next_refresh_at": {"type": ["string", "null"], "format": "date-time"},
        "refresh_source": {"enum": ["startup", "manual", "schedule", "cascade", null]},
        "consecutive_failures": {"type": "integer", "minimum": 0},
        "last_error": {"type": ["string", "null"], "maxLength": 500},
        "rows": {"type": "integer", "minimum": 0},
        "columns": {"type": "integer", "minimum": 0},
        "delta_version": {"type": ["integer", "null"], "minimum": 0,
                          "description": "The Delta table version the published generation serves (source.version / source.timestamp pin it); null for other kinds."},
        "lazy": {"type": "boolean"},
        "index": {
          "type": "object",
          "description": "The index fast path of the current generation: built after it is published (state building, then ready); memory_bytes is what it holds in memory (capped by server.index_memory_limit), disk_bytes its file in the runtime directory (read through the page cache), row_store_bytes the rows in that file, sorted_bytes the sorted values of the columns kept for range counts (integer, DOUBLE, DATE, TIMESTAMP, TIMESTAMPTZ) in that file, json_pages_bytes the pre-rendered pages (the first rows as page-body JSON, up to index.json_pages_mb) in a file of their own, also counted in disk_bytes.",
          "required": ["state", "memory_bytes", "disk_bytes", "row_store_bytes", "sorted_bytes", "json_pages_bytes"],
          "properties": {
            "state": {"enum": ["none", "building", "ready", "failed"]},
            "memory_bytes": {"type": "integer", "minimum": 0},
            "disk_bytes": {"type": "integer", "minimum": 0},
            "row_store_bytes": {"type": "integer", "minimum": 0},
            "json_pages_bytes": {"type": "integer", "minimum": 0},
            "sorted_bytes": {"type": "integer", "minimum": 0}
          }
        },
        "depends_on": {"type": "array", "items": {"type": "string"}}
      }
    },
    "DatasetList": {"type": "array", "items": {"$ref": "#/components/schemas/DatasetStatus"}},
    "DatasetSchema": {
      "type": "object", "required": ["name", "rows", "columns", "indexed", "sample"],
      "properties": {
        "name": {"type": "string"},
        "rows": {"type": "integer", "minimum": 0},
        "columns": {
          "type": "array",
          "items": {
            "type": "object", "required": ["name", "type", "logical", "nullable"],
            "properties": {
              "name": {"type": "string"},
              "type": {"type": "string", "description": "DuckDB's type name, e.g. DECIMAL(18,3)."},
              "logical": {"enum": ["bool", "int", "float", "decimal", "string", "date", "time",
                                   "timestamp", "binary", "list", "struct", "other"]},
              "nullable": {"type": "boolean"}
            }
          }
        },
        "indexed": {"type": "array", "items": {"type": "string"},
                    "description": "Columns with an equality index (eq/in answered without DuckDB)."},
        "sample": {"type": ["object", "null"], "description": "One row, or null when empty."}
      }
    },
    "Predicate": {
      "type": "object", "required": ["col", "op"], "additionalProperties": false,
      "properties": {
        "col": {"type": "string"},
        "op": {"enum": ["eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "in", "between",
                        "is_null", "is_not_null"]},
        "val": {"description": "A value; a list for in; [lo, hi] for between (inclusive); absent for is_null and is_not_null. Range operators compare ISO-8601 dates and timestamps as the column's type."}
      }
    },
    "OrderBy": {
      "type": "object", "required": ["col"], "additionalProperties": false,
      "properties": {"col": {"type": "string"}, "dir": {"enum": ["asc", "desc"], "default": "asc"}}
    },
    "Aggregation": {
      "type": "object", "required": ["op"], "additionalProperties": false,
      "properties": {
        "op": {"enum": ["count", "sum", "avg", "min", "max", "count_distinct", "median", "quantile",
                        "stddev"],
               "description": "count_distinct: non-null distinct values; median and quantile: interpolated (DuckDB quantile_cont) over numbers, dates, times and timestamps; stddev: sample standard deviation."},
        "col": {"type": "string", "description": "Omitted for a plain count."},
        "alias": {"type": "string", "description": "Default: count, or {op}_{col}."},
        "q": {"type": "number", "minimum": 0, "maximum": 1,
              "description": "quantile only (required there): 0.95 is the 95th percentile."}
      }
    },
    "GroupBy": {
      "oneOf": [
        {"type": "string", "description": "A column."},
        {"type": "object", "required": ["col"], "additionalProperties": false,
         "properties": {
           "col": {"type": "string"},
           "bucket": {"enum": ["minute", "hour", "day", "week", "month", "year"],
                      "description": "Truncate a date or timestamp (minute and hour also a time); weeks start on Monday; the result keeps the column's type."},
           "width": {"type": "number", "exclusiveMinimum": 0,
                     "description": "Bucket a number by its lower bound floor(v / width) * width."},
           "alias": {"type": "string", "description": "The output column's name (default: col)."}
         }}
      ],
      "examples": ["payment", {"col": "pickup_at", "bucket": "hour"}, {"col": "fare", "width": 5}]
    },
    "QueryRequest": {
      "type": "object", "additionalProperties": false,
      "description": "Every field is optional; {} pages through every row.",
      "properties": {
        "columns": {"type": "array", "items": {"type": "string"},
                    "description": "Projection; empty means every column. Ignored with group_by."},
        "predicates": {"type": "array", "items": {"$ref": "#/components/schemas/Predicate"},
                       "description": "Row filters, ANDed."},
        "order_by": {"type": "array", "items": {"$ref": "#/components/schemas/OrderBy"}},
        "group_by": {"type": "array", "items": {"$ref": "#/components/schemas/GroupBy"}},
        "aggregations": {"type": "array", "items": {"$ref": "#/components/schemas/Aggregation"},
                         "description": "Requires group_by."},
        "having": {"type": "array", "items": {"$ref": "#/components/schemas/Predicate"},
                   "description": "Post-aggregation filters on group_by columns or aggregation aliases."},
        "distinct": {"type": "boolean", "default": false},
        "limit": {"type": ["integer", "null"], "minimum": 0,
                  "description": "Hard cap on rows across all pages (and on the whole stream)."},
        "page": {"type": "integer", "default": 1, "description": "1-based; values below 1 become 1."},
        "page_size": {"type": "integer", "default": 1000,
                      "description": "Clamped to [1, server.max_page_size]."},
        "include_total": {"type": "boolean", "default": false,
                          "description": "Paged queries: add total (rows over all pages, capped by limit) to the answer, and X-Total-Count."}
      },
      "examples": [{"columns": ["trip_id", "fare"],
                    "predicates": [{"col": "payment", "op": "eq", "val": "card"}],
                    "order_by": [{"col": "fare", "dir": "desc"}], "page_size": 5}]
    },
    "CountRequest": {
      "type": "object", "additionalProperties": false,
      "properties": {
        "predicates": {"type": "array", "items": {"$ref": "#/components/schemas/Predicate"}}
      }
    },
    "QueryPage": {
      "type": "object", "required": ["data", "page", "page_size"],
      "properties": {
        "data": {"type": "array", "items": {"type": "object"},
                 "description": "Rows as objects, column names verbatim."},
        "page": {"type": "integer"},
        "page_size": {"type": "integer", "description": "The effective (clamped) page size."},
        "total": {"type": "integer", "minimum": 0,
                  "description": "With include_total: the rows of every page together."}
      }
    },
    "FacetsRequest": {
      "type": "object", "required": ["columns"], "additionalProperties": false,
      "properties": {
        "predicates": {"type": "array", "items": {"$ref": "#/components/schemas/Predicate"},
                       "description": "The rows to count in, as /query selects them."},
        "columns": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 32},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 10,
                  "description": "Values shown per column."}
      },
      "examples": [{"columns": ["payment", "passengers"],
                    "predicates": [{"col": "fare", "op": "gt", "val": 20}], "limit": 5}]
    },
    "Facets": {
      "type": "object", "required": ["name", "rows", "facets"],
      "properties": {
        "name": {"type": "string"},
        "rows": {"type": "integer", "minimum": 0, "description": "Rows the predicates select."},
        "facets": {
          "type": "array",
          "items": {
            "type": "object",
            "required": ["column", "values", "distinct", "other_values", "other_rows"],
            "properties": {
              "column": {"type": "string"},
              "values": {"type": "array",
                         "description": "Most frequent first; ties by value; null is a value (sorted last).",
                         "items": {"type": "object", "required": ["value", "count"],
                                   "properties": {"value": {}, "count": {"type": "integer"}}}},
              "distinct": {"type": "integer", "minimum": 0, "description": "Distinct values among the rows (null counts as one)."},
              "other_values": {"type": "integer", "minimum": 0, "description": "Values not shown."},
              "other_rows": {"type": "integer", "minimum": 0, "description": "Rows holding them."}
            }
          }
        }
      }
    },
    "HistogramBucket": {
      "type": "object", "required": ["lo", "hi", "count"],
      "properties": {"lo": {"description": "Inclusive; a value of the column's kind (a number, date or timestamp)."},
                     "hi": {"description": "Exclusive."},
                     "count": {"type": "integer", "minimum": 0}}
    },
    "ColumnSummary": {
      "type": "object",
      "required": ["name", "type", "logical", "count", "null_count", "approx_distinct", "min", "max",
                   "mean", "stddev", "top_values", "histogram"],
      "properties": {
        "name": {"type": "string"},
        "type": {"type": "string"},
        "logical": {"enum": ["bool", "int", "float", "decimal", "string", "date", "time",
                             "timestamp", "binary", "list", "struct", "other"]},
        "count": {"type": "integer", "minimum": 0, "description": "Non-null values."},
        "null_count": {"type": "integer", "minimum": 0},
        "approx_distinct": {"type": "integer", "minimum": 0,
                            "description": "Distinct non-null values (HyperLogLog; exact when top_values is given)."},
        "min": {"description": "null for types without an order, or no values."},
        "max": {},
        "mean": {"type": ["number", "null"], "description": "Numbers only."},
        "stddev": {"type": ["number", "null"], "description": "Sample standard deviation; numbers only."},
        "top_values": {"type": ["array", "null"],
                       "description": "The 10 most frequent values (most first), for columns with at most 100 distinct values; else null.",
                       "items": {"type": "object", "required": ["value", "count"],
                                 "properties": {"value": {}, "count": {"type": "integer"}}}},
        "histogram": {"type": ["object", "null"],
                      "description": "Numbers, dates, times and timestamps: equal-width buckets of a readable width (at most about 20) covering [min, max].",
                      "required": ["buckets"],
                      "properties": {"buckets": {"type": "array",
                                                 "items": {"$ref": "#/components/schemas/HistogramBucket"}}}}
      }
    },
    "Summary": {
      "type": "object", "required": ["name", "rows", "generation", "columns"],
      "properties": {
        "name": {"type": "string"},
        "rows": {"type": "integer", "minimum": 0},
        "generation": {"type": "string", "description": "The generation summarised (ULID)."},
        "columns": {"type": "array", "items": {"$ref": "#/components/schemas/ColumnSummary"}}
      }
    },
    "Count": {
      "type": "object", "required": ["count"],
      "properties": {"count": {"type": "integer", "minimum": 0}}
    },
    "QueryStream": {
      "type": "object", "required": ["data"],
      "properties": {
        "data": {"type": "array", "items": {"type": "object"},
                 "description": "Every matching row as an object, column names verbatim."}
      }
    },
    "ParquetFile": {
      "type": "string", "contentMediaType": "application/vnd.apache.parquet",
      "description": "The whole dataset as one Parquet file (or the requested byte range)."
    },
    "DatasetConfig": {
      "type": "object", "required": ["name", "source"],
      "description": "The shape of a [[dataset]] block of the config file.",
      "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"},
        "source": {
          "type": "object", "required": ["kind", "location"],
          "properties": {"kind": {"enum": ["parquet", "delta"]},
                         "location": {"type": "string",
                                      "description": "Local path, glob or directory, or s3:// prefix or glob."}}
        },
        "columns": {"type": "array", "items": {"type": "string"}},
        "dict_encode": {"type": "boolean"},
        "lazy": {"type": "boolean", "default": false},
        "index": {"type": "object",
                  "properties": {"mode": {"enum": ["auto", "list", "none"]},
                                 "columns": {"type": "array", "items": {"type": "string"}},
                                 "max_cardinality": {"type": "integer"}}},
        "s3": {"type": "object",
               "properties": {"region": {"type": "string"}, "endpoint": {"type": "string"},
                              "addressing_style": {"enum": ["virtual", "path"]},
                              "allow_http": {"type": "boolean"},
                              "partitioning": {"enum": ["auto", "hive", "none"]}}},
        "refresh": {"type": "object",
                    "properties": {"interval": {"type": "string", "examples": ["15m"]},
                                   "on_upstream_reload": {"type": "boolean"}}},
        "materialize": {"type": "object",
                        "properties": {"residency": {"enum": ["auto", "memory", "lazy"]},
                                       "sort_by": {"type": "array", "items": {"type": "string"}}}},
        "on_start": {"enum": ["eager", "lazy", "skip"]}
      }
    },
    "Registered": {
      "type": "object", "required": ["name", "rows", "columns"],
      "properties": {"name": {"type": "string"}, "rows": {"type": "integer"},
                     "columns": {"type": "integer"}}
    },
    "Persisted": {
      "type": "object", "required": ["persisted", "path"],
      "properties": {"persisted": {"type": "boolean"}, "path": {"type": "string"}}
    },
    "Reloaded": {
      "type": "object", "required": ["dataset", "rows", "elapsed_ms"],
      "properties": {"dataset": {"type": "string"}, "rows": {"type": "integer"},
                     "elapsed_ms": {"type": "integer"}}
    },
    "ReloadAll": {
      "type": "object", "required": ["enqueued", "skipped"],
      "properties": {"enqueued": {"type": "array", "items": {"type": "string"}},
                     "skipped": {"type": "array", "items": {"type": "string"}}}
    },
    "ConfigReload": {
      "type": "object", "required": ["registered", "skipped", "errors"],
      "properties": {
        "registered": {"type": "array", "items": {"type": "string"}},
        "skipped": {"type": "array", "items": {"type": "string"}},
        "errors": {"type": "array",
                   "items": {"type": "object", "required": ["dataset", "error"],
                             "properties": {"dataset": {"type": "string"},
                                            "error": {"type": "string"}}}}
      }
    },
    "SavedQueryRequest": {
      "type": "object", "required": ["name", "sql"], "additionalProperties": false,
      "description": "SQL saved as a dataset of its own. depends_on is inferred from the SQL, never given.",
      "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$",
                 "description": "Unique across all datasets (ignoring case); reload-all is reserved."},
        "sql": {"type": "string", "description": "One read-only SELECT (or WITH ... SELECT) over the datasets, checked like POST /api/v1/sql.",
                "examples": ["SELECT payment, count(*) AS n FROM trips GROUP BY payment"]},
        "kind": {"enum": ["temp", "query"], "default": "temp",
                 "description": "temp: in memory, lost on restart; query: also kept in server.saved_queries_dir."},
        "ttl": {"type": ["string", "null"], "description": "Kind temp only: unregistered after this long (\"30m\", \"2h\")."},
        "refresh": {"type": ["object", "null"],
                    "properties": {"interval": {"type": "string"}, "on_upstream_reload": {"type": "boolean"},
                                   "timeout": {"type": "string"}, "jitter": {"type": "boolean"},
                                   "debounce": {"type": "string"}}},
        "materialize": {"type": ["object", "null"],
                        "properties": {"residency": {"enum": ["auto", "memory", "lazy"]},
                                       "sort_by": {"type": "array", "items": {"type": "string"}},
                                       "reuse_on_start": {"type": "boolean"}}},
        "index": {"type": ["object", "null"], "description": "Not with residency lazy.",
                  "properties": {"mode": {"enum": ["auto", "list", "none"]},
                                 "columns": {"type": "array", "items": {"type": "string"}},
                                 "max_cardinality": {"type": "integer", "minimum": 1}}}
      }
    },
    "SavedQuery": {
      "type": "object", "required": ["name", "kind", "depends_on", "state"],
      "properties": {
        "name": {"type": "string"},
        "kind": {"enum": ["temp", "query"]},
        "depends_on": {"type": "array", "items": {"type": "string"}},
        "state": {"enum": ["pending", "building", "published", "failed"]},
        "rows": {"type": "integer", "description": "When published (the create answer)."}
      }
    },
    "SavedQueryList": {"type": "array", "items": {"$ref": "#/components/schemas/SavedQuery"}},
    "SavedQueryDeleted": {
      "type": "object", "required": ["name", "kind", "deleted"],
      "properties": {"name": {"type": "string"}, "kind": {"enum": ["temp", "query"]},
                     "deleted": {"const": true}}
    },
    "HasDependents": {
      "type": "object", "required": ["error", "code", "dependents"],
      "properties": {"error": {"type": "string"}, "code": {"const": "has_dependents"},
                     "dependents": {"type": "array", "items": {"type": "string"}}}
    },
    "SqlRequest": {
      "type": "object", "required": ["sql"], "additionalProperties": false,
      "properties": {
        "sql": {"type": "string", "description": "One read-only SELECT (or WITH ... SELECT) over the datasets, by name.",
                "examples": ["SELECT payment, count(*) AS n FROM trips GROUP BY payment"]},
        "max_rows": {"type": ["integer", "null"], "minimum": 0,
                     "description": "At most this many rows (never more than [sql] max_rows)."}
      }
    },
    "SqlResult": {
      "type": "object", "required": ["data", "max_rows", "truncated"],
      "properties": {
        "data": {"type": "array", "items": {"type": "object"}},
        "max_rows": {"type": "integer"},
        "truncated": {"type": "boolean", "description": "More rows existed past max_rows."}
      }
    },
    "JsonRpcRequest": {
      "type": "object", "required": ["jsonrpc", "method"],
      "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "method": {"type": "string", "examples": ["tools/call", "tools/list", "initialize"]},
        "params": {"type": "object"}
      },
      "examples": [{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "count_rows", "arguments": {"name": "trips"}}}]
    },
    "JsonRpcResponse": {
      "type": "object", "required": ["jsonrpc"],
      "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "result": {"type": "object"},
        "error": {"type": "object", "required": ["code", "message"],
                  "properties": {"code": {"type": "integer"}, "message": {"type": "string"},
                                 "data": {}}}
      }
    },
    "ProtectedResourceMetadata": {
      "type": "object", "required": ["resource"],
      "properties": {"resource": {"type": "string"},
                     "authorization_servers": {"type": "array", "items": {"type": "string"}},
                     "scopes_supported": {"type": "array", "items": {"type": "string"}}}
    },
    "ExplorerSettings": {
      "type": "object", "required": ["prefix", "api_base", "sql", "auth", "oauth2"],
      "properties": {"prefix": {"type": "string"}, "api_base": {"type": "string"},
                     "environment": {"type": ["string", "null"]},
                     "environment_color": {"type": ["string", "null"]},
                     "sql": {"type": "boolean"}, "docs": {"type": ["string", "null"]},
                     "auth": {"type": "object", "required": ["enabled", "anonymous_read"],
                              "properties": {"enabled": {"type": "boolean"},
                                             "anonymous_read": {"type": "boolean"}}},
                     "oauth2": {"type": ["object", "null"],
                                "description": "[explorer.oauth2]: the public client's sign-in settings (never a secret).",
                                "properties": {"client_id": {"type": "string"},
                                               "issuer": {"type": "string"},
                                               "scopes": {"type": "array", "items": {"type": "string"}},
                                               "pkce": {"type": "boolean"}}}}
    },
    "OpenApiDocument": {"type": "object", "required": ["openapi", "info", "paths"],
                        "description": "This document.",
                        "properties": {"openapi": {"type": "string"}, "info": {"type": "object"},
                                       "paths": {"type": "object"}}},
    "Metrics": {"type": "string", "description": "Prometheus text exposition format 0.0.4."},
    "Asset": {"type": "string", "description": "A file of the embedded UI."}
  },
  "headers": {
    "X-Request-Id": {
      "description": "The request id: the client's own when it sent a sane one (1-64 of [A-Za-z0-9._:@+=/-]), else the server's. Logged with the request.",
      "schema": {"type": "string"}
    },
    "Server-Timing": {
      "description": "Where the time went, in ms: queue (waiting for a worker), plan (validation, SQL, prepare), execute, encode; on a lazy dataset also lazy;desc=\"files R/N row_groups R/N\" (what partition and statistics pruning left to read). On a streamed reply: as of the first bytes.",
      "schema": {"type": "string", "examples": ["queue;dur=0.012,plan;dur=0.140,execute;dur=0.880,encode;dur=0.210"]}
    },
    "X-Dataset-Refreshed-At": {
      "description": "When the generation that answered was published (RFC 3339).",
      "schema": {"type": "string", "format": "date-time"}
    },
    "Retry-After": {"description": "Seconds to wait before trying again.",
                    "schema": {"type": "integer"}},
    "X-Page": {"description": "Pages in formats other than JSON: the page number.",
               "schema": {"type": "integer"}},
    "X-Page-Size": {"description": "Pages in formats other than JSON: the effective page size.",
                    "schema": {"type": "integer"}},
    "ETag": {"description": "The generation id of the export.", "schema": {"type": "string"}},
    "Content-Range": {"description": "bytes <start>-<end>/<total>", "schema": {"type": "string"}},
    "Location": {"description": "Where the resource is.", "schema": {"type": "string"}},
    "WeakETag": {"description": "W/\"<generation>-<hash of the request>\": send it back in If-None-Match to get 304 while the dataset is unchanged.",
                 "schema": {"type": "string"}},
    "Cache-Control": {"description": "no-cache: caches keep the answer but revalidate it (If-None-Match) before each use.",
                      "schema": {"type": "string"}},
    "X-Total-Count": {"description": "With include_total: the rows of every page together.",
                      "schema": {"type": "integer"}}
  },
  "securitySchemes": {
    "adminToken": {
      "type": "apiKey", "in": "header", "name": "X-Admin-Token",
      "description": "Equal to the ADMIN_TOKEN environment variable the server started with."
    },
    "bearer": {
      "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
      "description": "An OIDC/OAuth2 access token from [auth] issuer, with the scopes the operation lists (any one of them)."
    }
  }
});

#endif
