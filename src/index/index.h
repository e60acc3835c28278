/*
 * The index fast path of a resident generation: lookups by equality on
 * indexed columns, and the rows they find, answered without DuckDB (a DuckDB
 * point query costs 0.5-4 ms on a 1M-row table even prepared; this costs
 * microseconds).
 *
 * What is kept, per generation (built once, after it is published, by one
 * scan of its rows: index_builder_*):
 *
 *  - The spec's equality index ("Index behavior"): mode auto considers
 *    columns of string, boolean and 8-to-64-bit integer types and drops a
 *    column as soon as its distinct count reaches max_cardinality; mode list
 *    indexes the listed columns (of those types) whatever their cardinality;
 *    mode none keeps nothing. NULLs are not indexed; lazy generations carry
 *    no index. The distinct keys live in memory (a hash table), the posting
 *    lists (sorted row positions) in the fast path's file. A column with more
 *    than INDEX_DENSE_ROWS_PER_KEY rows per key keeps counts only: its hits
 *    are too many to beat DuckDB, so eq/in counts come from the index and
 *    rows from DuckDB.
 *
 *  - Key lookups on near-unique columns: an integer or string column that
 *    auto mode drops at max_cardinality (a unique id or token) is not part of
 *    the spec's index (the schema's "indexed" list leaves it out), but a
 *    point lookup by key is the most common request, so it still gets a
 *    structure: a column whose values never decrease in table order (an id)
 *    keeps frames of IX_FRAME_ROWS delta-packed values with the first key of
 *    each in memory (exact answers); any other keeps hash buckets (64-bit
 *    hash -> positions with a 32-bit fingerprint), whose hits are candidates
 *    verified against the row, so a collision never answers a wrong row. A
 *    string column gets one only when it looks like identifiers
 *    (INDEX_HASHED_MAX_AVG_LEN bytes a value on average, at most
 *    INDEX_HASHED_MAX_ROWS_PER_KEY rows a value). In list mode a column with
 *    more than INDEX_LIST_MAX_KEYS distinct keys takes the same structures.
 *
 *  - Range counts: a column of a type that ranges are asked of (8-to-64-bit
 *    integers, HUGEINT and UHUGEINT, DOUBLE, FLOAT, DECIMAL, DATE, TIMESTAMP in every unit,
 *    TIMESTAMPTZ: index_range_type) keeps its non-NULL values sorted, as
 *    order-preserving 64-bit keys (8 bytes a value in the file), with every
 *    IX_SORTED_STEP-th key in memory (16 KiB per 1M values). Mode auto keeps them for every such column, mode list
 *    for the listed ones, mode none for none. A count whose predicates are
 *    all comparisons on one such column (index_range_count) is then two
 *    bound searches of one 4 KiB read each instead of DuckDB's scan.
 *
 *  - The row store: every row as typed cells (the values as DuckDB holds
 *    them, not JSON text), IX_BLOCK_ROWS rows to a zstd-compressed block.
 *    Nested types (lists, structs, maps, unions) are kept as their JSON text.
 *
 *  - Pre-rendered pages: the first rows (up to index.json_pages_mb of text)
 *    as the JSON encoder writes them into a page body, in table order, in a
 *    file of their own with where each row ends. A page of a query with no
 *    predicate, every column and no sort is a byte range of that file
 *    (index_pages_range), sent with sendfile. Kept only with a directory and
 *    when every column's type has the encoder's own JSON text.
 *
 * Memory. The bulk (row blocks, posting lists, frames, buckets) is written
 * to one unnamed file per generation in the runtime directory and read with
 * pread, so it lives in the kernel's page cache, which the kernel drops under
 * memory pressure, not in the process: what stays in memory is the
 * directories (per 1M rows about 0.5 MiB of block offsets, 0.5 MiB of
 * buckets per hashed column, 0.06 MiB of frame keys per monotone column) and
 * the equality index's distinct keys. A thread that must not block
 * (the HTTP event loop's) reads with RWF_NOWAIT and hands the request to a worker
 * when the bytes are not cached. Without a directory (tests, tools) the same
 * bytes are kept in memory. The memory held by all fast paths is capped by a
 * process-wide budget (index_budget_set, server.index_memory_limit): a build
 * that does not fit drops its largest structures until it does.
 *
 * Thread safety: a finished fast path is immutable; any thread may read it
 * (each thread decodes with its own cursor).
 */
#ifndef VT_INDEX_INDEX_H
#define VT_INDEX_INDEX_H

#include <duckdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/arena.h"
#include "util/errors.h"
#include "util/strbuf.h"

/* A column with more rows per distinct key than this keeps counts only. */
#define INDEX_DENSE_ROWS_PER_KEY 256
/* Hashed keys (strings past max_cardinality), see above. */
#define INDEX_HASHED_MAX_AVG_LEN 64
#define INDEX_HASHED_MAX_ROWS_PER_KEY 4
/* List mode: past this many distinct keys a column takes the key structures
 * (frames or hash buckets) instead of a hash table of every key. */
#define INDEX_LIST_MAX_KEYS 100000

enum index_domain { INDEX_DOMAIN_INT, INDEX_DOMAIN_UINT, INDEX_DOMAIN_BOOL, INDEX_DOMAIN_STRING };

/* A lookup key in the column's domain (the caller converts the request value;
 * see query_index_match_terms in the query layer). */
struct index_key {
    enum index_domain domain;
    int64_t i;                  /* INT, BOOL (0/1) */
    uint64_t u;                 /* UINT */
    const char *s;              /* STRING */
    size_t len;
};

/* One conjunct: column `col` equals any of `keys` (n_keys >= 1). */
struct index_term {
    size_t col;
    const struct index_key *keys;
    size_t n_keys;
};

/* True when a column of this DuckDB type can be indexed. */
bool index_type_eligible(duckdb_type t);
enum index_domain index_domain_of(duckdb_type t);

/* ----------------------------------------------------------- typed cells
 * A cell holds the value as a DuckDB vector holds it (a one-row vector: the
 * first `width` bytes of v for fixed-size types, a duckdb_string_t for
 * VARCHAR, BLOB, BIT, BIGNUM and the text of an ENUM), so a consumer that
 * renders DuckDB vectors renders cells with the same code. A column whose
 * cells are JSON text (index_fastpath_column_json) holds the value's JSON in
 * the string. Strings point into the decoding cursor: valid until the
 * thread's next read. */
struct index_cell {
    union {
        unsigned char raw[16];
        bool b;
        int64_t i;
        uint64_t u;
        float f;
        double d;
        duckdb_hugeint h;
        duckdb_uhugeint uh;
        duckdb_interval iv;
        duckdb_string_t s;
    } v;
    bool null;
};

struct index_fastpath;

/* One row: cells[c] for every column c of the generation, and the columns to
 * show, in order (cols NULL: every column). */
struct index_row {
    const struct index_fastpath *fp;
    const struct index_cell *cells;
    const size_t *cols;
    size_t n;
};

/* Appends the row as a JSON object {"col":value,...}: the same bytes the
 * JSON encoder writes from DuckDB's chunks (json_rows.h). 0, or -1 when out
 * refused the bytes. */
int index_row_json(const struct index_row *row, struct strbuf *out);

/* The generation's columns as the fast path keeps them. */
size_t index_fastpath_columns(const struct index_fastpath *fp);
/* DuckDB's type of column `col` (borrowed for the fast path's life). */
duckdb_logical_type index_fastpath_column_type(const struct index_fastpath *fp, size_t col);
/* True when the column's cells hold JSON text, not a DuckDB value. */
bool index_fastpath_column_json(const struct index_fastpath *fp, size_t col);

/* ---------------------------------------------------------------- building */

struct index_build_options {
    const struct vt_dataset_config *cfg; /* index mode, columns, max_cardinality */
    const char *dir;            /* directory of the fast path's file; NULL: memory */
    bool rows;                  /* keep a row store (else lookups answer counts only) */
    uint64_t pages_bytes;       /* pre-rendered pages: text bytes at most (0: none) */
    bool pages_gzip;            /* and their gzip blocks */
};

struct index_builder;

/* Chooses what to keep from the generation's columns (names, and DuckDB
 * types as the scan returns them: the builder takes them over, whatever it
 * returns) per the dataset's index settings. NULL when
 * nothing is to be kept (mode none, no eligible column) or out of memory;
 * `warn` (may be empty) reports listed columns that do not exist or cannot
 * be indexed. */
struct index_builder *index_builder_create(size_t n_cols, const char *const *names,
                                           duckdb_logical_type *types,
                                           const struct index_build_options *opt, char *warn,
                                           size_t warnlen);
/* Feeds the next chunk of the scan (rows are numbered in feed order). 0, or
 * -1 (out of memory, the file cannot be written, more than 2^32-2 rows). */
int index_builder_add_chunk(struct index_builder *b, duckdb_data_chunk chunk);
/* Turns what was fed into the fast path and frees the builder. Reserves its
 * memory in the budget, dropping structures that do not fit (named in
 * `note`, which may be empty). NULL (reason in `why`) when nothing was kept. */
struct index_fastpath *index_builder_finish(struct index_builder *b, char *note, size_t notelen,
                                            char *why, size_t whylen);
void index_builder_abort(struct index_builder *b);
void index_fastpath_destroy(struct index_fastpath *fp);

/* The budget for the memory of every fast path together (bytes; SIZE_MAX:
 * none). Set once at start; index_memory_used() is what is reserved now. */
void index_budget_set(size_t bytes);
size_t index_budget(void);
size_t index_memory_used(void);

/* ------------------------------------------------------------- reporting */

size_t index_fastpath_memory(const struct index_fastpath *fp); /* bytes in memory */
uint64_t index_fastpath_disk(const struct index_fastpath *fp); /* bytes of its file */
uint64_t index_fastpath_row_store_bytes(const struct index_fastpath *fp);
/* Bytes of its file that hold sorted values (range counts). */
uint64_t index_fastpath_sorted_bytes(const struct index_fastpath *fp);
bool index_fastpath_has_rows(const struct index_fastpath *fp);
/* "col (N keys, structure, X MiB)" for each column kept, comma-separated. */
void index_fastpath_describe(const struct index_fastpath *fp, struct strbuf *out);

/* The lookup part, for the query layer (query_index_match_terms). */
struct vt_index;
const struct vt_index *index_fastpath_index(const struct index_fastpath *fp);
bool index_has_column(const struct vt_index *ix, size_t col);
enum index_domain index_column_domain(const struct vt_index *ix, size_t col);
size_t index_column_keys(const struct vt_index *ix, size_t col);
/* Part of the spec's equality index (the schema's "indexed" list), not a key
 * structure of a near-unique column. */
bool index_column_spec(const struct vt_index *ix, size_t col);
/* Counts only (dense). */
bool index_column_dense(const struct vt_index *ix, size_t col);
/* Hits are candidates verified against the row (hash buckets). */
bool index_column_hashed(const struct vt_index *ix, size_t col);
/* Monotone frames. */
bool index_column_frames(const struct vt_index *ix, size_t col);

/* -------------------------------------------------------------- answering */

enum index_fast_kind { INDEX_FAST_ROWS, INDEX_FAST_COUNT };

struct index_fast_query {
    enum index_fast_kind kind;
    /* The conjunction (query_index_match_terms); empty: some term can match
     * nothing, the answer is no rows. */
    const struct index_term *terms;
    size_t n_terms;
    bool empty;
    /* ROWS: the columns to show (NULL: all), and the page over the matching
     * rows in table order. */
    const size_t *cols;
    size_t n_cols;
    uint64_t offset;
    int64_t limit;              /* -1: no limit */
    /* Bounds of the work here: more than max_rows rows to show is
     * INDEX_FAST_ELSEWHERE (SIZE_MAX: no bound); nowait: never wait for the
     * disk (the caller is a thread that must not block). */
    size_t max_rows;
    bool nowait;
};

/* Where the answer goes. Ops return VT_ERR_OK to go on, anything else stops
 * (VT_ERR_RESULT_CAPPED: a success, the consumer has enough). begin is
 * called before the first row (also with no rows), then row per row, or
 * count; then the answer is complete. `stop` is polled every 64 rows (NULL:
 * never) and returns non-OK to end early. */
struct index_fast_sink {
    void *ctx;
    enum vt_err (*begin)(void *ctx, struct vt_error *err);
    enum vt_err (*row)(void *ctx, const struct index_row *row, struct vt_error *err);
    enum vt_err (*count)(void *ctx, uint64_t n, struct vt_error *err);
    enum vt_err (*stop)(void *ctx, struct vt_error *err);
};

enum index_fast {
    INDEX_FAST_NO,        /* DuckDB answers better (or the index cannot): nothing was sent */
    INDEX_FAST_DONE,      /* answered; *out_err says how it ended (VT_ERR_OK: complete) */
    INDEX_FAST_ELSEWHERE, /* it could, but not within max_rows / without waiting: nothing sent */
};

/* -------------------------------------------------------------- range counts */

/* True when a column of this DuckDB type keeps sorted values (see above). */
bool index_range_type(duckdb_type t);
/* The column keeps sorted values in this index. */
bool index_has_range(const struct vt_index *ix, size_t col);

enum index_range_op { INDEX_RANGE_GE, INDEX_RANGE_GT, INDEX_RANGE_LE, INDEX_RANGE_LT };

/* One comparison `col op value`, the value as DuckDB compares it with the
 * column (the bound the query layer casts it to):
 *  - integer columns: any int64 (unsigned columns included);
 *  - DATE: days; TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_S, TIMESTAMP_MS:
 *    microseconds since the epoch (DuckDB compares TIMESTAMP_S/MS with a
 *    TIMESTAMP bound as TIMESTAMP: no truncation of the bound);
 *    TIMESTAMP_NS: nanoseconds (a TIMESTAMP_NS bound);
 *  - DOUBLE, DECIMAL and UHUGEINT: a double (not NaN) or an integer,
 *    compared as a double with the column's values cast to DOUBLE as DuckDB
 *    casts them (a DECIMAL or UHUGEINT bound of another type is not this:
 *    the caller's to refuse);
 *  - FLOAT: a double or an integer, rounded to FLOAT here (DuckDB's
 *    CAST(? AS FLOAT)); a finite double past FLOAT's range fails that cast
 *    in DuckDB and is the caller's to refuse. */
struct index_range_term {
    enum index_range_op op;
    bool is_double;
    int64_t i;
    double d;
};

/* Counts the rows whose value in `col` satisfies every term (their AND;
 * NULLs never do; a DOUBLE NaN is above every number, as in DuckDB).
 * INDEX_FAST_DONE with *out set; INDEX_FAST_NO when the column keeps no
 * sorted values (or the file cannot be read); INDEX_FAST_ELSEWHERE when
 * nowait and the bytes are not in the page cache. */
enum index_fast index_range_count(const struct index_fastpath *fp, size_t col,
                                  const struct index_range_term *terms, size_t n_terms,
                                  bool nowait, uint64_t *out);

/* The rows whose value in `col` satisfies every term, as rows [*first,
 * *first + *count) of the table, when `col` keeps sorted values or frames
 * and its values never decrease in table order with none NULL (an id, a
 * load time in a table sorted by it), so that those rows are consecutive. INDEX_FAST_DONE (count 0 when no value can match);
 * INDEX_FAST_NO for any other column (or an unreadable file);
 * INDEX_FAST_ELSEWHERE when nowait and the bytes are not in the page cache.
 * *unique: every value differs (a sort by the column ascending is then
 * table order too). */
enum index_fast index_range_rows(const struct index_fastpath *fp, size_t col,
                                 const struct index_range_term *terms, size_t n_terms,
                                 bool nowait, uint64_t *first, uint64_t *count, bool *unique);

/* -------------------------------------------------------- pre-rendered pages */

/* Where rows [first, first + count) are, as a page body's rows: `length`
 * bytes of file `fd` from `offset`, `{...},{...}` with no comma before the
 * first or after the last. The fd belongs to the fast path (dup it to keep
 * it past the fast path's life). */
struct index_pages_range {
    int fd;
    uint64_t offset, length;
    uint64_t rows;
    /* The same rows gzip-compressed, for index_pages_gzip_frame: the whole
     * pre-compressed blocks inside the range are gz_length bytes of file
     * gz_fd from gz_offset (raw deflate, each block ending in a sync flush),
     * holding the text [gz_text_from, gz_text_to) of the pages, the blocks'
     * CRC-32s at gz_crcs (the fast path's, valid while it is). gz_fd -1:
     * none (the range spans no whole block, or the pages keep no gzip
     * blocks). */
    int gz_fd;
    uint64_t gz_offset, gz_length;
    uint64_t gz_text_from, gz_text_to;
    const uint32_t *gz_crcs;
    /* Taken with nowait: for a thread that must not wait (an HTTP loop).
     * Such a thread sends the text as it is, with sendfile; framing gzip
     * reads and compresses up to two blocks of text (~1 ms), which is a
     * worker's job. */
    bool nowait;
};

/* INDEX_FAST_DONE with *out set (when the pages hold the whole table, a
 * range past its end is cut there: out->rows says how many); INDEX_FAST_NO
 * when the pages do not hold all of those rows (or there are none); INDEX_FAST_ELSEWHERE when nowait
 * and the row ends are not in the page cache. */
enum index_fast index_pages_range(const struct index_fastpath *fp, uint64_t first, uint64_t count,
                                  bool nowait, struct index_pages_range *out);
/* A gzip body of `head` + the range's rows + `tail` (RFC 1952, one member)
 * whose middle is the range's pre-compressed blocks, as they are in gz_fd:
 * out_head gets the gzip header and the deflated head and rows before the
 * first block, out_tail the deflated rows after the last block and `tail`,
 * the final block and the trailer (CRC-32 from the blocks' own, size).
 * Compresses at most two blocks' worth of text per call. 0, or -1 (no
 * blocks, memory, the file). */
int index_pages_gzip_frame(const struct index_pages_range *r, const char *head, size_t head_len,
                           const char *tail, size_t tail_len, struct strbuf *out_head,
                           struct strbuf *out_tail);
/* Rows the pages hold (the table's first ones); 0: no pages. */
uint64_t index_pages_rows(const struct index_fastpath *fp);
/* Bytes of the pages' files (the text and the gzip blocks). */
uint64_t index_fastpath_pages_bytes(const struct index_fastpath *fp);

/* Frees the calling thread's decoding cursor (a thread that ends frees it by
 * itself; one that goes on, such as main in tests, may call this). */
void index_thread_release(void);

/* Answers a query from the fast path. `arena` holds temporaries. */
enum index_fast index_fast_answer(const struct index_fastpath *fp, const struct index_fast_query *q,
                                  const struct index_fast_sink *sink, struct arena *arena,
                                  struct vt_error *out_err);

#endif
