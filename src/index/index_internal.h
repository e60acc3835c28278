/*
 * What the files of src/index share (not for other folders: index.h is the
 * contract). Three layers under the fast path object:
 *
 *   store.c    the backing file of one fast path: appended while it is built,
 *              then read with pread (RWF_NOWAIT on threads that must not
 *              wait for a disk); or a memory buffer when no directory is set
 *   rowstore.c the rows as typed cells, blocks of IX_BLOCK_ROWS rows, each
 *              block zstd-compressed into the store; the block directory in
 *              memory
 *   eqindex.c  the spec's equality index: distinct keys in memory (hash
 *              table), posting lists in the store
 *   sorted.c   range counts: a column's values sorted in the store, every
 *              IX_SORTED_STEP-th in memory
 *   keys.c     lookups on near-unique columns: monotone integer runs
 *              (frames) or hash buckets, directories in memory, the bulk in
 *              the store
 *   build.c    one pass over DuckDB chunks feeding all of them, the memory
 *              budget
 *   fast.c     answering a request (what exec used to do inline)
 *   cells.c    typed cells to JSON
 *   pages.c    pre-rendered pages: the first rows as page-body JSON, in a
 *              file of their own
 */
#ifndef VT_INDEX_INDEX_INTERNAL_H
#define VT_INDEX_INDEX_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index/index.h"

/* ------------------------------------------------------- big allocations
 * The builders' per-row arrays (a key id or value per row: megabytes) come
 * straight from mmap, not malloc: glibc serves big blocks from a thread's
 * arena once its dynamic mmap threshold has grown, and the top of a thread
 * arena is not given back by malloc_trim, which left ~13 MiB resident after
 * each build of the 1M-row bench table. NULL-safe free. */
void *ix_big_alloc(size_t bytes);
void *ix_big_calloc(size_t bytes);
void *ix_big_realloc(void *p, size_t bytes);
void ix_big_free(void *p);
/* What an allocation of n bytes takes (whole pages). */
static inline size_t ix_big_bytes(size_t n)
{
    return (n + 64 + 4095) & ~(size_t)4095;
}

/* ------------------------------------------------------------------ store */

struct ix_store {
    int fd;                     /* -1: memory */
    char *mem;                  /* memory backing (fd < 0) */
    uint64_t size;              /* bytes appended */
    size_t mem_cap;
    char *wbuf;                 /* build: pending bytes of the file */
    size_t wlen, wcap;
    bool failed;                /* a write failed: the build fails */
};

/* Opens an empty store: an unnamed file in `dir` (O_TMPFILE, or a name that
 * is unlinked at once), or memory when dir is NULL. 0, or -1 (errno). */
int ix_store_open(struct ix_store *s, const char *dir);
/* Appends len bytes; returns their offset, or UINT64_MAX on failure. */
uint64_t ix_store_append(struct ix_store *s, const void *p, size_t len);
/* Ends the build: flushes pending bytes. 0, or -1. */
int ix_store_seal(struct ix_store *s);
void ix_store_close(struct ix_store *s);

enum ix_read { IX_READ_OK = 0, IX_READ_WOULD_BLOCK = 1, IX_READ_ERROR = -1 };
/* Reads [off, off + len) into dst. nowait: IX_READ_WOULD_BLOCK instead of
 * waiting for the disk (the bytes are not in the page cache). */
enum ix_read ix_store_read(const struct ix_store *s, uint64_t off, size_t len, void *dst,
                           bool nowait);
/* Reads of a store by this thread so far (tests count what a lookup reads). */
uint64_t ix_store_reads(void);

/* ------------------------------------------------------------ row store */

#define IX_BLOCK_ROWS 16

/* How a column's cells are encoded (from its DuckDB type). */
enum ix_ck {
    IX_CK_NULL,     /* SQLNULL: always null */
    IX_CK_BOOL,     /* one byte */
    IX_CK_SINT,     /* zigzag varint of the sign-extended value */
    IX_CK_UINT,     /* varint */
    IX_CK_F32,      /* 4 bytes */
    IX_CK_F64,      /* 8 bytes */
    IX_CK_128,      /* 16 bytes: HUGEINT, UHUGEINT, UUID, DECIMAL(>18) */
    IX_CK_INTERVAL, /* three zigzag varints */
    IX_CK_BYTES,    /* varint length + bytes: VARCHAR (JSON alias too), BLOB, BIT,
                     * BIGNUM, ENUM text */
    IX_CK_JSON,     /* varint length + JSON text (nested types) */
};

struct ix_col {
    char *name;
    char *key;                  /* "\"name\":" */
    size_t key_len;
    duckdb_type type;
    duckdb_logical_type ltype;  /* owned */
    enum ix_ck ck;
    uint8_t width;              /* bytes of the physical value in a DuckDB vector */
    uint8_t scale;              /* DECIMAL */
    bool json_alias;            /* VARCHAR with the JSON alias */
    char **enum_dict;           /* ENUM: the dictionary (build only) */
    uint32_t enum_n;
};

struct ix_rowstore {
    struct ix_store *store;     /* the fast path's */
    size_t n_cols;
    const struct ix_col *cols;
    size_t n_rows;
    size_t n_blocks;
    size_t raw_blocks;          /* of n_blocks, those stored uncompressed */
    uint64_t *block_off;        /* n_blocks + 1 offsets into the store */
    size_t max_block_raw;       /* largest block before compression */
    size_t max_block_packed;
    uint64_t disk_bytes;
};

/* Per-thread decoding state: the last block read, and its row decoded last. */
struct ix_cursor {
    void *dctx;                 /* ZSTD_DCtx */
    const struct ix_rowstore *rs;
    uint64_t gen;               /* fast path id of rs (a freed store's address may come back) */
    size_t block_no;
    char *packed;
    size_t packed_cap;
    char *block;
    size_t block_len, block_cap;
    /* the decoded row of the block (its index in the block, or SIZE_MAX) */
    struct index_cell *cells;
    size_t cells_cap;
    size_t row_decoded;
};

struct ix_rowstore_builder;
struct ix_rowstore_builder *ix_rowstore_builder_create(struct ix_store *store, size_t n_cols,
                                                       const struct ix_col *cols);
int ix_rowstore_builder_add_chunk(struct ix_rowstore_builder *b, duckdb_data_chunk chunk);
/* Moves the result into rs (n_cols/cols are set by the caller). */
int ix_rowstore_builder_finish(struct ix_rowstore_builder *b, struct ix_rowstore *rs);
void ix_rowstore_builder_abort(struct ix_rowstore_builder *b);
void ix_rowstore_release(struct ix_rowstore *rs);
size_t ix_rowstore_memory(const struct ix_rowstore *rs);

/* This thread's cursor (created on first use; freed when the thread ends).
 * NULL when out of memory. */
struct ix_cursor *ix_cursor_get(void);
/* Decodes row `pos` into the cursor: *out_cells points to n_cols cells,
 * valid until the cursor's next use (the next row read by this thread).
 * gen: the fast path's id. */
enum ix_read ix_rowstore_row(const struct ix_rowstore *rs, uint64_t gen, struct ix_cursor *cur,
                             uint32_t pos, bool nowait, const struct index_cell **out_cells);
/* Whether row `pos` is in the block the cursor holds (no read needed). */
bool ix_cursor_holds(const struct ix_cursor *cur, const struct ix_rowstore *rs, uint64_t gen,
                     uint32_t pos);

/* ------------------------------------------------------ pre-rendered pages */

/* pages.c: the first rows as page-body JSON in a file of their own, and
 * the same text gzip-compressed in blocks of IX_GZ_BLOCK bytes, each a raw
 * deflate stream of its own ending in a sync flush (so any run of whole
 * blocks is a valid middle of one deflate stream), in a second file. */
#define IX_GZ_BLOCK (64 * 1024)
struct ix_pages {
    struct ix_store store;      /* the rows' text, then n_rows uint64 row ends */
    size_t n_rows;              /* the table's first n_rows rows */
    uint64_t text_bytes;
    uint64_t ends_off;          /* where the row ends start in the store */
    struct ix_store gz;         /* compressed blocks (fd -1: none) */
    size_t n_gz;                /* whole blocks of text compressed */
    uint64_t *gz_off;           /* n_gz + 1 offsets into gz */
    uint32_t *gz_crc;           /* CRC-32 of each block's text */
};

struct ix_pages_builder;
/* NULL (no pages) without a directory, with limit 0, or when a type has no
 * JSON text of the encoder's own (json_rows_create refuses it). */
struct ix_pages_builder *ix_pages_builder_create(const char *dir, size_t n_cols,
                                                 const char *const *names,
                                                 const duckdb_logical_type *types,
                                                 uint64_t limit, bool gzip);
/* 0, or -1 (memory, the file): the caller drops the pages, not the build. */
int ix_pages_builder_add_chunk(struct ix_pages_builder *b, duckdb_data_chunk chunk);
/* The pages (NULL: none kept); frees the builder either way. */
struct ix_pages *ix_pages_builder_finish(struct ix_pages_builder *b);
void ix_pages_builder_abort(struct ix_pages_builder *b);
void ix_pages_free(struct ix_pages *p);

/* -------------------------------------------------------- lookup structures */

enum ix_kind {
    IX_EQ,          /* the equality index: distinct keys, posting lists */
    IX_EQ_DENSE,    /* the same with counts only (too many rows per key) */
    IX_FRAMES,      /* monotone integer column: exact runs */
    IX_HASHED,      /* hash buckets: candidates to verify against the row */
};

struct index_column {
    size_t col;
    enum ix_kind kind;
    enum index_domain domain;
    duckdb_type type;
    bool spec_index;            /* part of the spec's equality index ("indexed") */
    size_t n_keys;              /* distinct keys (IX_HASHED: distinct hashes) */
    /* IX_EQ / IX_EQ_DENSE: keys in memory */
    uint32_t *slots;            /* open addressing, key ids; n_slots a power of two */
    size_t n_slots;
    uint64_t *int_keys;         /* INT/UINT/BOOL bit patterns, by key id */
    uint64_t *str_off;          /* STRING: n_keys + 1 offsets into str_data */
    char *str_data;
    size_t str_len;
    uint32_t *offsets;          /* n_keys + 1: posting list bounds (positions) */
    uint64_t lists_off;         /* IX_EQ: positions (uint32) in the store */
    /* IX_FRAMES: IX_FRAME_ROWS rows a frame; first key (order-preserving
     * u64) and store offset of each frame */
    size_t n_frames;
    uint64_t *frame_key;
    uint64_t *frame_off;        /* n_frames + 1 */
    /* bit f: frame f's values rise by exactly 1 a row (an id 1..N), so its
     * rows are known from frame_key alone and a lookup reads nothing */
    uint64_t *frame_unit;
    size_t n_values;            /* rows (every row has a value) */
    /* IX_HASHED: 2^bucket_bits buckets of (position, fingerprint) entries */
    unsigned bucket_bits;
    uint32_t *bucket_off;       /* 2^bucket_bits + 1 entry indexes */
    uint64_t entries_off;       /* in the store */
    size_t n_entries;
    size_t memory;              /* bytes held in memory */
    uint64_t disk;              /* bytes in the store */
};

#define IX_FRAME_ROWS 128

/* Range counts (sorted.c): a column's non-NULL values as order-preserving
 * keys, sorted, in the store at `off`; sample[j] = key of position
 * j * IX_SORTED_STEP, in memory. */
#define IX_SORTED_STEP 512
struct ix_sorted {
    size_t col;
    duckdb_type type;
    size_t n;                   /* values (rows that are not NULL) */
    bool monotone;              /* no NULL, and the keys never decrease in table
                                 * order: the rows of a range are consecutive */
    bool unique;                /* monotone and every key differs */
    uint64_t off;
    uint64_t *sample;
    size_t n_sample;
    size_t memory;
    uint64_t disk;
};

/* A DECIMAL's integer (and scale) as the double DuckDB 1.4 casts it to
 * (sorted.c: not always the correctly rounded quotient). */
double ix_decimal_double(int64_t v, unsigned scale);
double ix_decimal128_double(duckdb_hugeint v, unsigned scale);

struct vt_index {
    size_t n_rows;
    size_t n_cols;
    struct index_column **by_col;   /* NULL where nothing is kept */
    struct ix_sorted **sorted;      /* by column; NULL where no range structure */
    const struct ix_store *store;
};

/* Hashes as the structures use them. */
uint64_t ix_hash_int(uint64_t v);
uint64_t ix_hash_str(const char *s, size_t len);
/* Integers in an order-preserving unsigned form (INT: sign bit flipped). */
static inline uint64_t ix_sort_key(enum index_domain d, uint64_t v)
{
    return d == INDEX_DOMAIN_INT ? v ^ ((uint64_t)1 << 63) : v;
}

/* A key's rows, read into memory (owned) or borrowed; candidates says that
 * they must be checked against the row (IX_HASHED). */
struct ix_hits {
    uint32_t *rows;
    size_t n;
    bool owned;
    bool candidates;
};

/* Rows of one key: IX_READ_OK (hits set; dense columns: rows NULL, n the
 * count), IX_READ_WOULD_BLOCK, IX_READ_ERROR. limit: more hits than this are
 * not read (hits->n is set, rows NULL, *out_over = true). */
enum ix_read ix_column_lookup(const struct vt_index *ix, const struct index_column *c,
                              const struct index_key *key, size_t limit, bool nowait,
                              struct ix_hits *out, bool *out_over);
void ix_hits_free(struct ix_hits *h);

/* Builders of the lookup structures (build.c drives them). */
struct ix_eq_builder;
struct ix_keys_builder;

/* ---------------------------------------------------------------- budget */

/* The process-wide budget of memory held by fast paths
 * (server.index_memory_limit): reserve before publishing, release when a
 * fast path is freed. */
bool ix_budget_reserve(size_t bytes);
void ix_budget_release(size_t bytes);

/* ------------------------------------------------------------ fast path */

struct index_fastpath {
    uint64_t id;                /* unique per process (cursor caches) */
    size_t n_rows;
    size_t n_cols;
    struct ix_col *cols;
    struct ix_store store;
    struct vt_index *index;     /* NULL: none */
    struct ix_rowstore *rows;   /* NULL: none */
    struct ix_pages *pages;     /* NULL: none */
    size_t memory;              /* reserved against the budget */
    uint64_t disk;
};

/* Varints (rowstore.c, keys.c). */
static inline size_t ix_put_varint(unsigned char *o, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        o[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    o[n++] = (unsigned char)v;
    return n;
}

static inline const unsigned char *ix_get_varint(const unsigned char *p, const unsigned char *end,
                                                 uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; p < end && shift < 64; shift += 7) {
        unsigned char b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return p;
        }
    }
    return NULL;
}

static inline uint64_t ix_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t ix_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Bisection over ascending keys a[lo, hi): the first position whose key is
 * >= x (ix_lower_bound) or > x (ix_upper_bound); hi when there is none.
 * The frames' first keys (keys.c) and the range counts' samples and runs
 * (sorted.c) are searched this way. */
static inline size_t ix_lower_bound(const uint64_t *a, size_t lo, size_t hi, uint64_t x)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline size_t ix_upper_bound(const uint64_t *a, size_t lo, size_t hi, uint64_t x)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
