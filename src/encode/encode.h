/*
 * The output formats of query results: each format is one encoder (a row of
 * the table in encode.c, its code in a file of its own), and every route
 * that returns rows (/query, /query/stream, /api/v1/sql) offers the formats
 * of the table through one negotiation (`format=` or Accept; src/api).
 *
 *   format   file          media type                      rows from
 *   json     enc_json.c    application/json                chunks, JSON row objects
 *   arrow    enc_arrow.c   application/vnd.apache.arrow.stream   chunks
 *   csv      enc_csv.c     text/csv                        chunks (text columns)
 *   ndjson   enc_ndjson.c  application/x-ndjson            chunks, JSON row objects
 *
 * An encoder turns one result into bytes appended to a strbuf: begin (the
 * head: a CSV header line, an Arrow schema, a JSON document's opening), any
 * number of chunk (DuckDB data chunks) or row (JSON row objects, the index
 * fast path's form; only for encoders that set it), then end (the tail).
 * release frees the state whatever happened. The caller owns the buffer and
 * moves the bytes on (buffered or streamed); an encoder never blocks.
 *
 * A format that wraps its rows in a document (JSON: {"data":[...], ...})
 * writes the route's trailer, its other top-level fields, at end; the other
 * formats carry such facts in HTTP headers (X-Page, X-Page-Size) and ignore
 * it.
 *
 * text_columns: the encoder reads every column as DuckDB's own text form of
 * the value (a cast to VARCHAR, what DuckDB's COPY ... (FORMAT csv) writes):
 * the execution layer casts the result's columns before they reach it
 * (exec_request.text_columns).
 */
#ifndef VT_ENCODE_ENCODE_H
#define VT_ENCODE_ENCODE_H

#include <duckdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/errors.h"
#include "util/strbuf.h"

struct enc_format {
    const char *name;           /* the `format=` value: "csv" */
    const char *media_type;     /* what Accept names it by: "text/csv" */
    const char *content_type;   /* the Content-Type of a reply */
    const char *extension;      /* of a file holding it: "csv" */
    const char *description;    /* one line, for the OpenAPI document */
    bool compressible;          /* text: worth compressing per Accept-Encoding */
    bool text_columns;          /* reads every column as VARCHAR (above) */
    bool document;              /* rows inside a document that takes the trailer */
    /* The head. `res` is the result whose chunks follow (its column names
     * and types), or NULL when rows come as JSON objects through row (then
     * only for formats that set row). Returns the encoder's state, or NULL
     * with err set. */
    void *(*begin)(duckdb_result *res, struct strbuf *out, struct vt_error *err);
    /* Every row of a chunk. */
    enum vt_err (*chunk)(void *st, duckdb_data_chunk chunk, struct strbuf *out,
                         struct vt_error *err);
    /* One row as a JSON object (len bytes); NULL: chunks only. */
    enum vt_err (*row)(void *st, const char *obj, size_t len, struct strbuf *out,
                       struct vt_error *err);
    /* The tail; `trailer` is the document's other top-level fields
     * ("\"page\":1,\"page_size\":10"; NULL: none), written by documents only.
     * NULL: the format has no tail. */
    enum vt_err (*end)(void *st, const char *trailer, struct strbuf *out, struct vt_error *err);
    void (*release)(void *st);  /* NULL-safe */
    /* Optional, both or neither: one chunk encoded by two threads (a large
     * result's sink, src/api/http_sink.c). fork makes a second state for the
     * same result whose rows continue those of `st` (JSON: each after a
     * comma; st must have written a row before the fork's first); range
     * writes rows [from, from + count) of a chunk with either state. The two
     * states may run at the same time on different chunk ranges; the caller
     * puts their bytes in row order. */
    void *(*fork)(void *st, duckdb_result *res, struct vt_error *err);
    enum vt_err (*range)(void *st, duckdb_data_chunk chunk, uint64_t from, uint64_t count,
                         struct strbuf *out, struct vt_error *err);
};

extern const struct enc_format enc_json, enc_arrow, enc_csv, enc_ndjson;

/* The table, in the order negotiation breaks ties in. */
size_t enc_formats(const struct enc_format *const **out);
/* The format named `name` (case-insensitive), or NULL. */
const struct enc_format *enc_format_named(const char *name);

#endif
