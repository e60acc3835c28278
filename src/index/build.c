/*
 * Building a fast path (index.h) in one pass over a generation's rows: each
 * chunk goes to the row store and to the builder of every candidate column;
 * at the end the structures are finished into the fast path's store, and
 * what is kept in memory is reserved against the process-wide budget.
 * Also the fast path's accessors and reporting.
 */
#include "index/build_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cand {
    struct index_column *col;
    struct ix_eq_builder *eq;       /* while the column is an equality index */
    struct ix_keys_builder *keys;   /* after it moved to the key structures */
    bool may_keys;                  /* integers and strings may move */
};

struct index_builder {
    size_t n_cols;
    struct ix_col *cols;
    struct cand *cands;             /* by column; col NULL when not a candidate */
    struct ix_sorted_builder **sorted; /* by column; NULL: no range structure */
    size_t n_rows;
    bool list_mode;
    struct index_fastpath *fp;      /* the store lives here from the start */
    struct ix_rowstore_builder *rows;
    struct ix_pages_builder *pages; /* NULL: no pre-rendered pages */
};

static atomic_size_t budget_limit = SIZE_MAX;
static atomic_size_t budget_used;
static atomic_uint_fast64_t next_id = 1;

void index_budget_set(size_t bytes)
{
    atomic_store(&budget_limit, bytes);
}

size_t index_budget(void)
{
    return atomic_load(&budget_limit);
}

size_t index_memory_used(void)
{
    return atomic_load(&budget_used);
}

bool ix_budget_reserve(size_t bytes)
{
    size_t used = atomic_load(&budget_used), limit = atomic_load(&budget_limit);
    do {
        if (bytes > limit || used > limit - bytes)
            return false;
    } while (!atomic_compare_exchange_weak(&budget_used, &used, used + bytes));
    return true;
}

void ix_budget_release(size_t bytes)
{
    atomic_fetch_sub(&budget_used, bytes);
}

bool index_type_eligible(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN: case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT:
    case DUCKDB_TYPE_INTEGER: case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_USMALLINT: case DUCKDB_TYPE_UINTEGER: case DUCKDB_TYPE_UBIGINT:
    case DUCKDB_TYPE_VARCHAR:
        return true;
    default:
        return false;
    }
}

enum index_domain index_domain_of(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN: return INDEX_DOMAIN_BOOL;
    case DUCKDB_TYPE_UTINYINT: case DUCKDB_TYPE_USMALLINT: case DUCKDB_TYPE_UINTEGER:
    case DUCKDB_TYPE_UBIGINT: return INDEX_DOMAIN_UINT;
    case DUCKDB_TYPE_VARCHAR: return INDEX_DOMAIN_STRING;
    default: return INDEX_DOMAIN_INT;
    }
}

static void column_free(struct index_column *c)
{
    if (!c)
        return;
    ix_big_free(c->slots);
    ix_big_free(c->int_keys);
    ix_big_free(c->str_off);
    ix_big_free(c->str_data);
    free(c->offsets);
    free(c->frame_key);
    free(c->frame_off);
    free(c->frame_unit);
    free(c->bucket_off);
    free(c);
}

static void cand_drop(struct cand *k)
{
    ix_eq_builder_free(k->eq);
    ix_keys_builder_free(k->keys);
    column_free(k->col);
    memset(k, 0, sizeof *k);
}

static void cols_free(struct ix_col *cols, size_t n)
{
    for (size_t i = 0; cols && i < n; i++) {
        ix_col_release(&cols[i]);
        free(cols[i].name);
        free(cols[i].key);
        if (cols[i].ltype)
            duckdb_destroy_logical_type(&cols[i].ltype);
    }
    free(cols);
}

void index_fastpath_destroy(struct index_fastpath *fp)
{
    if (!fp)
        return;
    if (fp->memory)
        ix_budget_release(fp->memory);
    if (fp->index) {
        for (size_t i = 0; i < fp->index->n_cols; i++) {
            column_free(fp->index->by_col[i]);
            if (fp->index->sorted)
                ix_sorted_free(fp->index->sorted[i]);
        }
        free(fp->index->by_col);
        free(fp->index->sorted);
        free(fp->index);
    }
    if (fp->rows) {
        ix_rowstore_release(fp->rows);
        free(fp->rows);
    }
    ix_pages_free(fp->pages);
    cols_free(fp->cols, fp->n_cols);
    ix_store_close(&fp->store);
    free(fp);
}

void index_builder_abort(struct index_builder *b)
{
    if (!b)
        return;
    for (size_t i = 0; b->cands && i < b->n_cols; i++)
        cand_drop(&b->cands[i]);
    free(b->cands);
    for (size_t i = 0; b->sorted && i < b->n_cols; i++)
        ix_sorted_builder_free(b->sorted[i]);
    free(b->sorted);
    ix_rowstore_builder_abort(b->rows);
    ix_pages_builder_abort(b->pages);
    if (b->fp) {
        b->fp->cols = b->cols;
        b->fp->n_cols = b->n_cols;
        b->cols = NULL;
        index_fastpath_destroy(b->fp);
    }
    cols_free(b->cols, b->n_cols);
    free(b);
}

static bool listed(const struct vt_dataset_config *cfg, const char *name)
{
    for (size_t k = 0; k < cfg->index_columns.len; k++)
        if (strcmp(cfg->index_columns.items[k], name) == 0)
            return true;
    return false;
}

struct index_builder *index_builder_create(size_t n_cols, const char *const *names,
                                           duckdb_logical_type *types,
                                           const struct index_build_options *opt, char *warn,
                                           size_t warnlen)
{
    const struct vt_dataset_config *cfg = opt->cfg;
    if (warn && warnlen)
        warn[0] = '\0';
    bool none = cfg->lazy || cfg->index_mode == CFG_INDEX_NONE;
    struct index_builder *b = none ? NULL : calloc(1, sizeof *b);
    if (b)
        b->cols = calloc(n_cols ? n_cols : 1, sizeof *b->cols);
    if (!b || !b->cols) {
        for (size_t i = 0; i < n_cols; i++) /* taken over even when nothing is kept */
            duckdb_destroy_logical_type(&types[i]);
        free(b);
        return NULL;
    }
    b->n_cols = n_cols;
    for (size_t i = 0; i < n_cols; i++)
        b->cols[i].ltype = types[i]; /* ours from here */
    b->list_mode = cfg->index_mode == CFG_INDEX_LIST;
    b->cands = calloc(n_cols ? n_cols : 1, sizeof *b->cands);
    b->sorted = calloc(n_cols ? n_cols : 1, sizeof *b->sorted);
    b->fp = calloc(1, sizeof *b->fp);
    if (!b->cands || !b->sorted || !b->fp) {
        index_builder_abort(b);
        return NULL;
    }
    b->fp->store.fd = -1;
    size_t n = 0;
    for (size_t i = 0; i < n_cols; i++) {
        struct ix_col *col = &b->cols[i];
        struct strbuf key;
        sb_init(&key, 0);
        sb_add_json_string(&key, names[i], strlen(names[i]));
        sb_addc(&key, ':');
        col->name = strdup(names[i]);
        if (key.overflow || !col->name) {
            sb_release(&key);
            index_builder_abort(b);
            return NULL;
        }
        col->key = sb_detach(&key, &col->key_len);
        ix_col_setup(col, types[i]);
        duckdb_type t = duckdb_get_type_id(types[i]);
        bool want, want_range;
        if (b->list_mode) {
            want = listed(cfg, names[i]);
            want_range = want && index_range_type(t);
            if (want && !index_type_eligible(t) && !want_range) {
                if (warn && warnlen)
                    snprintf(warn, warnlen,
                             "index.columns: column \"%s\" has a type that cannot be indexed "
                             "(strings, booleans, numbers, dates and timestamps can)",
                             names[i]);
            }
            want = want && index_type_eligible(t);
        } else {
            want = index_type_eligible(t);
            want_range = index_range_type(t);
        }
        if (want_range && (b->sorted[i] = ix_sorted_builder_create(i, col)) != NULL)
            n++;
        if (!want)
            continue;
        struct index_column *c = calloc(1, sizeof *c);
        if (!c)
            continue;
        c->col = i;
        c->type = t;
        c->domain = index_domain_of(t);
        c->spec_index = true;
        size_t max_keys = b->list_mode ? INDEX_LIST_MAX_KEYS : (size_t)cfg->index_max_cardinality;
        struct cand *k = &b->cands[i];
        k->col = c;
        k->may_keys = c->domain != INDEX_DOMAIN_BOOL;
        k->eq = ix_eq_builder_create(c, max_keys);
        if (!k->eq) {
            cand_drop(k);
            continue;
        }
        n++;
    }
    if (b->list_mode && warn && warnlen && !warn[0]) {
        for (size_t k = 0; k < cfg->index_columns.len; k++) {
            bool found = false;
            for (size_t i = 0; i < n_cols; i++)
                found = found || strcmp(cfg->index_columns.items[k], names[i]) == 0;
            if (!found) {
                snprintf(warn, warnlen, "index.columns: no column named \"%s\"",
                         cfg->index_columns.items[k]);
                break;
            }
        }
    }
    if (n == 0 || ix_store_open(&b->fp->store, opt->dir) != 0) {
        index_builder_abort(b);
        return NULL;
    }
    if (opt->rows) {
        b->rows = ix_rowstore_builder_create(&b->fp->store, n_cols, b->cols);
        if (!b->rows) {
            index_builder_abort(b);
            return NULL;
        }
    }
    /* (NULL: none; the types are the columns' now, still valid) */
    b->pages = ix_pages_builder_create(opt->dir, n_cols, names, types, opt->pages_bytes,
                                       opt->pages_gzip);
    return b;
}

/* Moves a column from the equality index to the key structures at row
 * `base + at` of the chunk (the cap was reached there). */
static int switch_to_keys(struct cand *k, duckdb_vector vec, size_t base, size_t at, size_t n)
{
    k->keys = ix_keys_builder_create(k->col);
    if (!k->keys)
        return -1;
    for (size_t r = 0; r < base + at; r++) {
        uint64_t iv = 0;
        const char *s = NULL;
        size_t len = 0;
        int rc;
        if (!ix_eq_row_key(k->eq, r, &iv, &s, &len))
            rc = ix_keys_add_null(k->keys, r);
        else if (k->col->domain == INDEX_DOMAIN_STRING)
            rc = ix_keys_add_str(k->keys, r, s, len);
        else
            rc = ix_keys_add_int(k->keys, r, iv);
        if (rc != 0)
            return -1;
    }
    ix_eq_builder_clear(k->eq);
    ix_eq_builder_free(k->eq);
    k->eq = NULL;
    return ix_keys_add_vector(k->keys, vec, base, at, n);
}

int index_builder_add_chunk(struct index_builder *b, duckdb_data_chunk chunk)
{
    size_t n = (size_t)duckdb_data_chunk_get_size(chunk);
    if (b->n_rows + n > (size_t)UINT32_MAX - 1)
        return -1; /* positions are 32-bit */
    for (size_t i = 0; i < b->n_cols; i++) {
        struct cand *k = &b->cands[i];
        if (!k->col)
            continue;
        duckdb_vector vec = duckdb_data_chunk_get_vector(chunk, (idx_t)i);
        int rc = 0;
        if (k->eq) {
            size_t full_at;
            rc = ix_eq_builder_add(k->eq, vec, b->n_rows, n, &full_at);
            if (rc == 0 && full_at != SIZE_MAX) {
                if (k->may_keys) {
                    rc = switch_to_keys(k, vec, b->n_rows, full_at, n);
                    k->col->spec_index = b->list_mode;
                } else {
                    cand_drop(k); /* auto mode past max_cardinality */
                }
            }
        } else {
            rc = ix_keys_add_vector(k->keys, vec, b->n_rows, 0, n);
        }
        if (rc != 0)
            cand_drop(k); /* out of memory: this column goes, the rest stays */
    }
    for (size_t i = 0; i < b->n_cols; i++)
        if (b->sorted[i] &&
            ix_sorted_builder_add(b->sorted[i], duckdb_data_chunk_get_vector(chunk, (idx_t)i),
                                  n) != 0) {
            ix_sorted_builder_free(b->sorted[i]); /* out of memory or range: it goes */
            b->sorted[i] = NULL;
        }
    if (b->rows && ix_rowstore_builder_add_chunk(b->rows, chunk) != 0)
        return -1;
    if (b->pages && ix_pages_builder_add_chunk(b->pages, chunk) != 0) {
        ix_pages_builder_abort(b->pages); /* the pages go, the rest stays */
        b->pages = NULL;
    }
    b->n_rows += n;
    return 0;
}

static const char *kind_name(const struct index_column *c)
{
    switch (c->kind) {
    case IX_EQ: return "equality index";
    case IX_EQ_DENSE: return "equality index, counts only";
    case IX_FRAMES: return "monotone frames";
    case IX_HASHED: return c->domain == INDEX_DOMAIN_STRING ? "key hash buckets" : "hash buckets";
    }
    return "?";
}

static bool has_positions(const struct index_column *c)
{
    return c && c->kind != IX_EQ_DENSE;
}

static size_t fastpath_memory(const struct index_fastpath *fp)
{
    size_t m = sizeof *fp + fp->n_cols * sizeof(struct ix_col);
    for (size_t i = 0; i < fp->n_cols; i++)
        m += fp->cols[i].key_len + strlen(fp->cols[i].name) + 2;
    if (fp->index) {
        m += sizeof *fp->index + fp->n_cols * sizeof(void *);
        for (size_t i = 0; i < fp->n_cols; i++) {
            if (fp->index->by_col[i])
                m += fp->index->by_col[i]->memory;
            if (fp->index->sorted[i])
                m += fp->index->sorted[i]->memory;
        }
    }
    if (fp->rows)
        m += ix_rowstore_memory(fp->rows);
    return m;
}

/* The structure to drop first when over budget: the largest in memory (a
 * lookup structure, or *out_sorted: a column's sorted values). */
static size_t largest_column(const struct vt_index *ix, bool *out_sorted)
{
    size_t best = SIZE_MAX, bytes = 0;
    *out_sorted = false;
    for (size_t i = 0; i < ix->n_cols; i++) {
        if (ix->by_col[i] && ix->by_col[i]->memory >= bytes) {
            bytes = ix->by_col[i]->memory;
            best = i;
            *out_sorted = false;
        }
        if (ix->sorted[i] && ix->sorted[i]->memory >= bytes) {
            bytes = ix->sorted[i]->memory;
            best = i;
            *out_sorted = true;
        }
    }
    return best;
}

/* Whether something is kept: a lookup structure with positions (rows would
 * be read), or anything at all (sorted values included). */
static bool any_column(const struct vt_index *ix, bool positions)
{
    for (size_t i = 0; i < ix->n_cols; i++) {
        if (ix->by_col[i] && (!positions || has_positions(ix->by_col[i])))
            return true;
        if (!positions && ix->sorted[i])
            return true;
    }
    return false;
}

/* Frees the bytes of the row blocks in the file (no row store after all). */
static void discard_rows(struct index_fastpath *fp)
{
    if (!fp->rows)
        return;
    if (fp->store.fd >= 0 && fp->rows->n_blocks)
        fallocate(fp->store.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)fp->rows->block_off[0], (off_t)fp->rows->disk_bytes);
    ix_rowstore_release(fp->rows);
    free(fp->rows);
    fp->rows = NULL;
}

static void drop_column(struct index_fastpath *fp, size_t i)
{
    column_free(fp->index->by_col[i]);
    fp->index->by_col[i] = NULL;
}

struct index_fastpath *index_builder_finish(struct index_builder *b, char *note, size_t notelen,
                                            char *why, size_t whylen)
{
    if (note && notelen)
        note[0] = '\0';
    why[0] = '\0';
    struct index_fastpath *fp = b->fp;
    struct strbuf notes;
    sb_init(&notes, 1024);
    fp->index = calloc(1, sizeof *fp->index);
    if (fp->index) {
        fp->index->by_col = calloc(b->n_cols ? b->n_cols : 1, sizeof *fp->index->by_col);
        fp->index->sorted = calloc(b->n_cols ? b->n_cols : 1, sizeof *fp->index->sorted);
    }
    if (!fp->index || !fp->index->by_col || !fp->index->sorted) {
        snprintf(why, whylen, "out of memory");
        goto fail;
    }
    fp->n_rows = b->n_rows;
    fp->index->n_rows = b->n_rows;
    fp->index->n_cols = b->n_cols;
    fp->index->store = &fp->store;
    /* The last row block first: blocks are contiguous in the store. */
    if (b->rows) {
        fp->rows = calloc(1, sizeof *fp->rows);
        if (!fp->rows || ix_rowstore_builder_finish(b->rows, fp->rows) != 0) {
            free(fp->rows);
            fp->rows = NULL;
        }
        b->rows = NULL;
    }
    for (size_t i = 0; i < b->n_cols; i++) {
        struct cand *k = &b->cands[i];
        if (!k->col)
            continue;
        int rc = k->eq ? ix_eq_builder_finish(k->eq, b->n_rows, &fp->store)
                       : ix_keys_builder_finish(k->keys, b->n_rows, &fp->store, !b->list_mode);
        if (rc == 0) {
            fp->index->by_col[i] = k->col;
            k->col = NULL;
        }
        cand_drop(k);
    }
    for (size_t i = 0; i < b->n_cols; i++) {
        if (!b->sorted[i])
            continue;
        /* a monotone column's frames are its sorted values already */
        if (!fp->index->by_col[i] || fp->index->by_col[i]->kind != IX_FRAMES)
            fp->index->sorted[i] = ix_sorted_builder_finish(b->sorted[i], &fp->store);
        ix_sorted_builder_free(b->sorted[i]);
        b->sorted[i] = NULL;
    }
    fp->cols = b->cols;
    fp->n_cols = b->n_cols;
    b->cols = NULL;
    if (fp->rows) {
        fp->rows->n_cols = fp->n_cols;
        fp->rows->cols = fp->cols;
    }
    /* Hash buckets answer candidates: without rows to verify them, nothing. */
    for (size_t i = 0; i < fp->n_cols && !fp->rows; i++)
        if (fp->index->by_col[i] && fp->index->by_col[i]->kind == IX_HASHED)
            drop_column(fp, i);
    if (!any_column(fp->index, true))
        discard_rows(fp); /* counts only: rows would never be read */
    if (ix_store_seal(&fp->store) != 0) {
        snprintf(why, whylen, "cannot write the index file");
        goto fail;
    }
    if (b->pages) {
        fp->pages = ix_pages_builder_finish(b->pages);
        b->pages = NULL;
    }
    /* The budget: drop the largest structures until the rest fits. */
    for (;;) {
        size_t m = fastpath_memory(fp);
        if (!any_column(fp->index, false)) {
            if (!why[0])
                snprintf(why, whylen, "no column qualifies");
            goto fail;
        }
        if (ix_budget_reserve(m)) {
            fp->memory = m;
            break;
        }
        bool sorted;
        size_t i = largest_column(fp->index, &sorted);
        if (sorted) {
            sb_addf(&notes, "%s%s sorted values (%.1f MiB)", notes.len ? ", " : "",
                    fp->cols[i].name, fp->index->sorted[i]->memory / 1048576.0);
            ix_sorted_free(fp->index->sorted[i]);
            fp->index->sorted[i] = NULL;
        } else {
            sb_addf(&notes, "%s%s (%.1f MiB)", notes.len ? ", " : "", fp->cols[i].name,
                    fp->index->by_col[i]->memory / 1048576.0);
            drop_column(fp, i);
        }
        snprintf(why, whylen, "over server.index_memory_limit (%zu bytes left)",
                 index_budget() - index_memory_used());
        if (!any_column(fp->index, true))
            discard_rows(fp);
    }
    fp->disk = fp->store.size + index_fastpath_pages_bytes(fp);
    fp->id = atomic_fetch_add(&next_id, 1);
    if (notes.len && note && notelen)
        snprintf(note, notelen, "left out over server.index_memory_limit: %s", notes.buf);
    sb_release(&notes);
    free(b->cands);
    free(b->sorted);
    free(b);
    why[0] = '\0';
    return fp;
fail:
    sb_release(&notes);
    if (!fp->cols) {
        fp->cols = b->cols;
        fp->n_cols = b->n_cols;
        b->cols = NULL;
    }
    b->fp = NULL;
    index_fastpath_destroy(fp);
    index_builder_abort(b);
    return NULL;
}

/* ------------------------------------------------------------ accessors */

size_t index_fastpath_memory(const struct index_fastpath *fp)
{
    return fp ? fp->memory : 0;
}

uint64_t index_fastpath_disk(const struct index_fastpath *fp)
{
    return fp ? fp->disk : 0;
}

uint64_t index_fastpath_row_store_bytes(const struct index_fastpath *fp)
{
    return fp && fp->rows ? fp->rows->disk_bytes : 0;
}

uint64_t index_fastpath_sorted_bytes(const struct index_fastpath *fp)
{
    uint64_t n = 0;
    for (size_t i = 0; fp && fp->index && i < fp->n_cols; i++)
        if (fp->index->sorted[i])
            n += fp->index->sorted[i]->disk;
    return n;
}

bool index_fastpath_has_rows(const struct index_fastpath *fp)
{
    return fp && fp->rows;
}

const struct vt_index *index_fastpath_index(const struct index_fastpath *fp)
{
    return fp ? fp->index : NULL;
}

bool index_has_column(const struct vt_index *ix, size_t col)
{
    return ix && col < ix->n_cols && ix->by_col[col] != NULL;
}

enum index_domain index_column_domain(const struct vt_index *ix, size_t col)
{
    return ix->by_col[col]->domain;
}

size_t index_column_keys(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) ? ix->by_col[col]->n_keys : 0;
}

bool index_column_spec(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) && ix->by_col[col]->spec_index;
}

bool index_column_dense(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) && ix->by_col[col]->kind == IX_EQ_DENSE;
}

bool index_column_hashed(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) && ix->by_col[col]->kind == IX_HASHED;
}

bool index_column_frames(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) && ix->by_col[col]->kind == IX_FRAMES;
}

void index_fastpath_describe(const struct index_fastpath *fp, struct strbuf *out)
{
    size_t start = out->len;
    for (size_t i = 0; fp->index && i < fp->n_cols; i++) {
        const struct index_column *c = fp->index->by_col[i];
        if (!c)
            continue;
        sb_addf(out, "%s%s (%zu keys, %s, %.2f MiB in memory, %.1f MiB on disk)",
                out->len > start ? ", " : "", fp->cols[i].name, c->n_keys, kind_name(c),
                c->memory / 1048576.0, c->disk / 1048576.0);
    }
    for (size_t i = 0; fp->index && i < fp->n_cols; i++) {
        const struct ix_sorted *c = fp->index->sorted[i];
        if (!c)
            continue;
        sb_addf(out, "%s%s (%zu values, sorted values for ranges, %.2f MiB in memory, %.1f MiB on "
                "disk)", out->len > start ? ", " : "", fp->cols[i].name, c->n,
                c->memory / 1048576.0, c->disk / 1048576.0);
    }
}

bool index_has_range(const struct vt_index *ix, size_t col)
{
    return ix && col < ix->n_cols &&
           (ix->sorted[col] != NULL || (ix->by_col[col] && ix->by_col[col]->kind == IX_FRAMES));
}

/* Values of range column `col` (sorted values or frames) whose keys lie in
 * [lo, hi]. */
static enum ix_read range_keys_count(const struct vt_index *ix, size_t col, uint64_t lo,
                                     uint64_t hi, bool nowait, uint64_t *out)
{
    const struct ix_sorted *sc = ix->sorted[col];
    return sc ? ix_sorted_count(sc, ix->store, lo, hi, nowait, out)
              : ix_frames_count(ix->by_col[col], ix->store, lo, hi, nowait, out);
}

static duckdb_type range_type(const struct vt_index *ix, size_t col)
{
    return ix->sorted[col] ? ix->sorted[col]->type : ix->by_col[col]->type;
}

static enum index_fast fast_of(enum ix_read rd)
{
    return rd == IX_READ_OK ? INDEX_FAST_DONE
           : rd == IX_READ_WOULD_BLOCK ? INDEX_FAST_ELSEWHERE : INDEX_FAST_NO;
}

enum index_fast index_range_rows(const struct index_fastpath *fp, size_t col,
                                 const struct index_range_term *terms, size_t n_terms,
                                 bool nowait, uint64_t *first, uint64_t *count, bool *unique)
{
    const struct vt_index *ix = fp ? fp->index : NULL;
    *first = *count = 0;
    *unique = false;
    if (!index_has_range(ix, col))
        return INDEX_FAST_NO;
    /* a column with frames never decreases (keys.c); one with sorted
     * values says whether it does */
    const struct ix_sorted *sc = ix->sorted[col];
    if (sc && !sc->monotone)
        return INDEX_FAST_NO;
    *unique = sc ? sc->unique : ix->by_col[col]->n_keys == ix->by_col[col]->n_values;
    uint64_t lo, hi;
    if (!ix_range_keys(range_type(ix, col), terms, n_terms, &lo, &hi))
        return INDEX_FAST_DONE; /* no value can match: no rows */
    /* the values never decrease in table order: the rows below lo come
     * first, then the matching ones */
    enum ix_read rd = range_keys_count(ix, col, lo, hi, nowait, count);
    if (rd == IX_READ_OK && lo > 0)
        rd = range_keys_count(ix, col, 0, lo - 1, nowait, first);
    if (rd != IX_READ_OK)
        *first = *count = 0;
    return fast_of(rd);
}

enum index_fast index_range_count(const struct index_fastpath *fp, size_t col,
                                  const struct index_range_term *terms, size_t n_terms,
                                  bool nowait, uint64_t *out)
{
    const struct vt_index *ix = fp ? fp->index : NULL;
    *out = 0;
    if (!index_has_range(ix, col))
        return INDEX_FAST_NO;
    uint64_t lo, hi;
    if (!ix_range_keys(range_type(ix, col), terms, n_terms, &lo, &hi))
        return INDEX_FAST_DONE;
    return fast_of(range_keys_count(ix, col, lo, hi, nowait, out));
}
