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
#define VT_MAX_HEADER_FIELDS 256               /* header fields in one request */
#define VT_MAX_CHUNK_EXT_BYTES 4096            /* one chunk extension (ignored) */
#define VT_HTTP_LINGER_MS 2000                 /* reading what a refused client still sends
                                                * before closing (so the error is not lost
                                                * to a reset) */
#define VT_CONNECTION_TIMEOUT_SECS 120         /* idle keep-alive connection */
#define VT_MAX_CONNECTIONS 4096                /* concurrent client connections */
#define VT_CONNECTION_HEADROOM 64              /* past MAX - this, new requests get 503 */
#define VT_MAX_CONNECTIONS_PER_IP 1024         /* from one client address */
#define VT_HEADER_TIMEOUT_SECS 30              /* to send a complete header block */
#define VT_MAX_PENDING_JOBS 4096               /* worker-pool queue depth; beyond it 503 */
#define VT_MAX_CONNECTIONS_PER_CLIENT 256      /* per client address, below VT_MAX_CONNECTIONS */
#define VT_REQUEST_HEAD_TIMEOUT_SECS 10        /* the whole request head must arrive within this
                                                * of the accept or of the previous response
                                                * (slow headers; idle keep-alive) */
#define VT_STREAM_STALL_SECS 30                /* a streamed reply whose client reads nothing
                                                * for this long is cancelled */
#define VT_MAX_REQUEST_ID_BYTES 64             /* a client's X-Request-Id longer than this (or
                                                * with other than [A-Za-z0-9._:@+=/-]) is
                                                * replaced by one of ours */
#define VT_SHUTDOWN_JOIN_SECS 5                /* after the drain: how long shutdown waits for
                                                * cancelled jobs and builds before exiting anyway */

/* Query request JSON */
#define VT_MAX_JSON_DEPTH 16                   /* nesting of the request body */
#define VT_MAX_COLUMN_NAME_BYTES 256           /* any column name in a request */
#define VT_MAX_COLUMNS_IN_REQUEST 1024         /* entries of columns/group_by/order_by */
#define VT_MAX_PREDICATES 256                  /* predicates or having entries */
#define VT_MAX_AGGREGATIONS 256
#define VT_MAX_IN_LIST 10000                   /* values of one `in` predicate */
#define VT_MAX_LIKE_PATTERN_BYTES 1024         /* like/ilike pattern */
#define VT_MAX_LIKE_SEGMENTS 16                /* parts of a pattern between % signs */
#define VT_MAX_LIKE_WILD_SEGMENT_CHARS 64      /* characters of such a part containing _ */
#define VT_MAX_STRING_VALUE_BYTES (64 * 1024)  /* any other string value */
#define VT_MAX_QUERY_PARAMS 20000              /* bound values in one request, all predicates */

/* SQL (POST /api/v1/sql, saved queries, MCP sql, pgwire) */
#define VT_MAX_SQL_BYTES (256 * 1024)          /* one statement's text */
/* What one call of a built-in may be asked to do, and all calls of one
 * vector (the 2,048 rows DuckDB computes at once: it notices an interrupt
 * only between vectors). src/engine/functions.c puts a checker in front of
 * the built-ins DuckDB can neither interrupt nor account for; memory that no
 * single call controls is bounded by the allocation budget (budget.cc). At
 * these sizes one call takes ~10-100 ms and one vector ~1 s. */
#define VT_SQL_MAX_EDIT_CELLS 1000000          /* len(a) * len(b) of levenshtein, editdist3,
                                                * damerau_levenshtein, jaro(_winkler) */
#define VT_SQL_MAX_EDIT_CELLS_VECTOR 100000000
#define VT_SQL_MAX_PAD_CHARS 1000000           /* lpad/rpad length */
#define VT_SQL_MAX_PAD_CHARS_VECTOR 10000000
#define VT_SQL_MAX_BITS 1000000                /* bitstring length */
#define VT_SQL_MAX_BITS_VECTOR 10000000
#define VT_SQL_MAX_LIST_ELEMENTS 1000000       /* range/generate_series lists, list_resize,
                                                * repeat of a list */
#define VT_SQL_MAX_LIST_ELEMENTS_VECTOR 4000000
#define VT_SQL_MAX_REPEAT_BYTES (64 * 1024 * 1024) /* repeat of a string or blob */
#define VT_SQL_MAX_REPEAT_BYTES_VECTOR (256 * 1024 * 1024)
#define VT_SQL_MAX_GROWN_BYTES (16 * 1024 * 1024) /* result of a function that multiplies
                                                  * its input's bytes: bin/to_binary x8,
                                                  * hex/to_hex x2, url_encode x3, to_base64,
                                                  * regexp_escape x2, replace (nested, 2^n;
                                                  * the levels below stay in memory: ~2x),
                                                  * json_pretty (4 x depth^2); checked
                                                  * after the call: to_json, json_quote,
                                                  * json_array, json_object (escaping),
                                                  * regexp_replace (\0 in a replacement) */
#define VT_SQL_MAX_GROWN_BYTES_VECTOR (256 * 1024 * 1024)
#define VT_SQL_MAX_JSON_BUILD_ARGS 100         /* json_array values, json_object keys and
                                                * values (one macro per count; PostgreSQL's
                                                * json_build_* take up to 100 too) */
#define VT_SQL_MAX_FORMAT_WIDTH 10000          /* printf/format widths and precisions;
                                                * to_char/to_timestamp template bytes,
                                                * strftime format bytes */
#define VT_SQL_MAX_JSON_DEPTH 1000             /* nesting of JSON given to the recursive JSON
                                                * functions (json_structure, json_contains,
                                                * json_merge_patch, engine/jsonb.c's @>) */
#define VT_SQL_MAX_JSONB_CONTAINS_STEPS 10000000 /* element comparisons of one jsonb @>
                                                  * (arrays compare element by element) */
#define VT_SQL_MAX_JSONB_CONTAINS_STEPS_VECTOR 100000000
#define VT_SQL_MAX_JSONB_SET_BYTES (64 * 1024 * 1024) /* bytes one jsonb_set/jsonb_insert
                                                      * walks beyond 8 times its document
                                                      * (each level of the path walks its
                                                      * container again) */
#define VT_SQL_MAX_COLLATE_CALLS 4              /* icu_collate_* and icu_sort_key calls in
                                                * one statement (nested, each doubles) */
#define VT_SQL_MAX_BINS 1000                   /* equi_width_bins bin_count (more per
                                                * unit of an integer range never ends) */
#define VT_SQL_MAX_BINS_VECTOR (1000 * 2048)
#define VT_SQL_MAX_MACRO_NODES 50000           /* expression nodes macro expansion adds to
                                                * a statement (bound before it can be
                                                * interrupted: ~5 us a node) */
#define VT_SQL_MAX_WINDOW_OFFSET 1000000000000LL /* lead/lag offset (a constant): rows past
                                                  * the current one; INT64_MIN crashed DuckDB */

/* PostgreSQL wire protocol (src/pgwire) */
#define VT_PGWIRE_MAX_STARTUP_BYTES 10000      /* startup packet (PostgreSQL's own limit) */
#define VT_PGWIRE_MAX_STARTUP_PARAMS 64        /* name/value pairs in it */
#define VT_PGWIRE_MAX_MESSAGE_BYTES (VT_MAX_SQL_BYTES + 64 * 1024) /* any message after it */
#define VT_PGWIRE_MAX_STATEMENTS 256           /* named prepared statements per connection */
#define VT_PGWIRE_MAX_PORTALS 64               /* open portals per connection */
#define VT_PGWIRE_MAX_PARAMS 4096              /* parameters of one statement */
#define VT_PGWIRE_MAX_ARRAY_ITEMS 65536       /* elements of one array parameter */
#define VT_PGWIRE_MAX_SESSION_BYTES (8 * 1024 * 1024) /* statement texts, portals' bound
                                                * values, names kept per connection */
#define VT_PGWIRE_MAX_SUSPENDED_BYTES (16 * 1024 * 1024) /* rows held in memory, all
                                                * portals of a connection together, for
                                                * Executes with a row limit and cursors */
#define VT_PGWIRE_MAX_SPILL_BYTES (1024LL * 1024 * 1024) /* past it, rows held in a file
                                                * under temp_directory, per connection ... */
#define VT_PGWIRE_MAX_SPILL_TOTAL_BYTES (8LL * 1024 * 1024 * 1024) /* ... and for the
                                                * whole listener */
#define VT_PGWIRE_SPILL_READ_BYTES (256 * 1024) /* held rows read back at a time */
#define VT_PGWIRE_OUT_FLUSH_BYTES (64 * 1024)  /* output buffered before a write */
#define VT_PGWIRE_BULK_FLUSH_BYTES (256 * 1024) /* ... from a result's third chunk on */
#define VT_PGWIRE_STARTUP_TIMEOUT_SECS 10      /* startup and authentication must finish */
#define VT_PGWIRE_MAX_PASSWORD_BYTES 16384    /* a password message (bearer tokens are long) */
#define VT_PGWIRE_AUTH_MAX_FAILURES 10         /* failed passwords from one address within */
#define VT_PGWIRE_AUTH_WINDOW_SECS 60          /* this window block it ... */
#define VT_PGWIRE_AUTH_BLOCK_SECS 60           /* ... for this long */
#define VT_PGWIRE_MAX_STATEMENTS_PER_QUERY 1024 /* statements in one simple Query */
#define VT_PGWIRE_CONNECTION_HEADROOM 16       /* sockets past max_connections accepted to
                                                * answer "too many clients" / CancelRequest */

/* Streaming responses: batches queued between a DuckDB worker and the socket */
#define VT_STREAM_QUEUE_BATCHES 4
#define VT_STREAM_STALL_MS 60000               /* a client reading nothing this long is gone */

/* Status entries */
#define VT_LAST_ERROR_CHARS 500

/* Dataset names */
#define VT_MAX_DATASET_NAME_BYTES 128
#define VT_MAX_PINNED_FDS 64                   /* open files pinning one lazy generation */
#define VT_SOURCE_MAX_FILES 1000000            /* files one listing of a source may name */
#define VT_SOURCE_MAX_DEPTH 64                 /* directory levels a listing descends */
#define VT_SOURCE_MAX_ENTRIES 4000000          /* directory entries one listing looks at */
#define VT_BUILD_DEFAULT_TIMEOUT_MS (10 * 60 * 1000) /* a build without refresh.timeout */
#define VT_SOURCE_CHECK_TIMEOUT_MS 30000       /* persist's look at a source */

/* Config file */
#define VT_MAX_CONFIG_BYTES (16 * 1024 * 1024)

/* Delta log (src/sources/delta*.c). The log is input from storage we do not
 * control: every file, listing and nesting level we read has a cap. */
#define VT_DELTA_MAX_LOG_FILE_BYTES (256 * 1024 * 1024) /* one JSON commit or JSON checkpoint */
#define VT_DELTA_MAX_LAST_CHECKPOINT_BYTES (4 * 1024 * 1024) /* _last_checkpoint */
#define VT_DELTA_MAX_LOG_ENTRIES 1000000        /* names listed in _delta_log/ */
#define VT_DELTA_MAX_ACTIVE_FILES 2000000       /* add actions alive in one snapshot */
#define VT_DELTA_MAX_SCHEMA_DEPTH 32            /* nesting of struct/array/map types */
#define VT_DELTA_MAX_COLUMNS 10000              /* fields of one struct in a schema */
#define VT_DELTA_MAX_PATH_BYTES 4096            /* one decoded data file path */
#define VT_DELTA_MAX_CHECKPOINT_PARTS 100000    /* parts of a multi-part checkpoint, sidecars */
#define VT_DELTA_MAX_DV_BYTES (64 * 1024 * 1024) /* one serialized deletion vector */
#define VT_DELTA_MAX_DV_ROWS ((uint64_t)1 << 32) /* positions one vector may hold (no stated cardinality) */
#define VT_DELTA_MAX_STATS_BYTES (1024 * 1024)  /* one add.stats JSON text kept for planning */
#define VT_VARIANT_MAX_DEPTH 64                 /* nesting of one variant value */
#define VT_VARIANT_MAX_JSON_BYTES (16 * 1024 * 1024) /* JSON text of one variant value */

/* S3 client (src/sources/s3*.c) */
#define VT_S3_MAX_LIST_KEYS 1000000             /* keys gathered by one listing */
#define VT_S3_MAX_LIST_PAGE_BYTES (32 * 1024 * 1024) /* one ListObjectsV2 response body */
#define VT_S3_MAX_KEY_BYTES 1024                /* S3's own key limit (after URL decoding) */
#define VT_S3_MAX_ERROR_BODY_BYTES (64 * 1024)  /* error bodies kept for the message */
#define VT_S3_MAX_XML_DEPTH 16                  /* element nesting in listing/error XML */
#define VT_S3_MAX_ATTEMPTS 5                    /* tries per request (first + retries) */
#define VT_S3_BACKOFF_BASE_MS 100               /* first retry waits ~base, doubling */
#define VT_S3_BACKOFF_MAX_MS 4000               /* cap of one backoff sleep */
#define VT_S3_CONNECT_TIMEOUT_SECS 10
#define VT_S3_REQUEST_TIMEOUT_SECS 120          /* list/HEAD/small GET, whole request */
#define VT_S3_LOW_SPEED_BYTES 1024              /* downloads: abort below this rate ... */
#define VT_S3_LOW_SPEED_SECS 30                 /* ... sustained for this long */
#define VT_S3_DOWNLOAD_THREADS 4                /* parallel object downloads per resolve */
#define VT_S3_MAX_OBJECT_BYTES ((int64_t)64 * 1024 * 1024 * 1024) /* one downloaded object */
#define VT_S3_MAX_PUT_BYTES ((int64_t)5 * 1024 * 1024 * 1024) /* S3's limit of one PUT */
/* The byte-range cache of lazy S3 datasets (src/sources/rangecache.c): the
 * default budget when source_context.cache_max_bytes is 0. */
#define VT_S3_CACHE_DEFAULT_MAX_BYTES ((int64_t)4 * 1024 * 1024 * 1024)
#define VT_S3_RANGE_THREADS 4                   /* parallel ranged GETs of one fetch */
#define VT_S3_RANGE_COALESCE_BYTES (1024 * 1024) /* a gap this small is fetched, not skipped */
#define VT_S3_RANGE_MAX_BYTES (64 * 1024 * 1024) /* one ranged GET at most */
#define VT_S3_FOOTER_PROBE_BYTES (64 * 1024)    /* the tail read to find a Parquet footer */
/* Footer entries (file x row group x leaf column, ~150 bytes each) a lazy
 * generation keeps to plan requests (src/sources/lazy.c). */
#define VT_LAZY_MAX_CHUNKS 1000000

/* Bearer tokens and the issuer's documents (src/auth/). A token is client
 * input; discovery and JWKS documents come from the network. */
#define VT_JWT_MAX_TOKEN_BYTES (16 * 1024)      /* one compact JWS */
#define VT_JWT_MAX_HEADER_BYTES 4096            /* its decoded JOSE header */
#define VT_JWT_MAX_SIG_BYTES 2048               /* decoded signature (RSA 16384 bits) */
#define VT_JWT_MAX_JSON_DEPTH 10                /* nesting of header and claims */
#define VT_AUTH_MAX_DOC_BYTES (512 * 1024)      /* discovery document, JWKS */
#define VT_AUTH_MAX_DOC_DEPTH 16                /* their JSON nesting */
#define VT_AUTH_MAX_KEYS 64                     /* JWKs kept from one key set */
#define VT_AUTH_MIN_RSA_BITS 2048               /* RFC 7518 §3.3 */
#define VT_AUTH_MAX_RSA_BITS 16384
#define VT_AUTH_MAX_REDIRECTS 3                 /* same scheme, host and port only */
#define VT_AUTH_CONNECT_TIMEOUT_SECS 5
#define VT_AUTH_FETCH_TIMEOUT_SECS 15           /* one whole discovery or JWKS request */
#define VT_AUTH_KID_REFETCH_SECS 10             /* unknown kid: at most one refetch per this */
#define VT_AUTH_MAX_KIDLESS_TRIES 4             /* keys tried for a token that names no kid */
#define VT_AUTH_RETRY_MAX_SECS 60               /* backoff cap while the issuer fails */
#define VT_AUTH_RETRY_AFTER_SECS 2              /* Retry-After of a 503 for want of keys */
#define VT_AUTH_CACHE_ENTRIES 4096              /* verified tokens kept */
#define VT_AUTH_CACHE_MAX_BYTES (16 * 1024 * 1024) /* their total size */

/* The cluster (src/cluster): shared generations on S3. */
#define VT_CLUSTER_MAX_MANIFEST_BYTES (1024 * 1024)      /* one manifest.json or CURRENT */
#define VT_CLUSTER_MAX_CATALOG_BYTES (16 * 1024 * 1024)  /* the shared catalog.json */
#define VT_CLUSTER_FORWARD_TIMEOUT_MS 30000     /* a forwarded admin call without a deadline */
#define VT_CLUSTER_FORWARD_MAX_BYTES (8 * 1024 * 1024) /* the writer's answer relayed */
#define VT_CLUSTER_CAS_ATTEMPTS 8               /* compare-and-swap of CURRENT/catalog */
#define VT_CLUSTER_RETRY_MIN_MS 1000            /* a failed publish or import: first retry */
#define VT_CLUSTER_RETRY_MAX_MS 60000           /* ... doubling up to this */

#endif
