/*
 * Answering a request from the fast path (index_fast_answer, index.h): the
 * eq/in terms become row positions (the AND of ORs over posting lists,
 * frames and hash buckets), candidates are verified against their rows,
 * then the page of rows is decoded from the row store and handed to the
 * sink as typed cells. The work is bounded: answers that would read more
 * than FAST_MAX_BLOCKS row blocks go to DuckDB (INDEX_FAST_NO), which is
 * faster for them; answers that would wait for the disk or show more than
 * max_rows rows on a thread that must not block go elsewhere
 * (INDEX_FAST_ELSEWHERE), with nothing sent.
 */
#include "index/build_internal.h"

#include <stdlib.h>
#include <string.h>


/* Reading a row block costs ~3 us (a pread from the page cache, zstd, the
 * decode), DuckDB's query ~0.5-1 ms plus ~1 us a row: measured break-even
 * about 300 rows spread over as many blocks. Answers touching more blocks
 * go to DuckDB; clustered hits (few blocks, many rows) stay here. */
#define FAST_MAX_BLOCKS 256
/* More hits than this for one key are not read (DuckDB does better). */
#define FAST_MAX_HITS (FAST_MAX_BLOCKS * IX_BLOCK_ROWS)
/* Verifying reads each candidate's row: on a thread that must not block
 * (max_rows bounded) at most this many candidates per row answered. */
#define FAST_VERIFY_PER_ROW 4

void ix_hits_free(struct ix_hits *h)
{
    if (h->owned)
        free(h->rows);
    memset(h, 0, sizeof *h);
}

enum ix_read ix_column_lookup(const struct vt_index *ix, const struct index_column *c,
                              const struct index_key *key, size_t limit, bool nowait,
                              struct ix_hits *out, bool *out_over)
{
    memset(out, 0, sizeof *out);
    *out_over = false;
    if (c->kind == IX_EQ || c->kind == IX_EQ_DENSE)
        return ix_eq_lookup(c, ix->store, key, limit, nowait, out, out_over);
    return ix_keys_lookup(c, ix->store, key, limit, nowait, out, out_over);
}

static bool same_key(const struct index_key *a, const struct index_key *b)
{
    return a->domain == b->domain && a->i == b->i && a->u == b->u && a->len == b->len &&
           (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* How a lookup ended (beyond enum ix_read). */
enum step { STEP_OK, STEP_NO, STEP_ELSEWHERE, STEP_ERROR };

static enum step step_of(enum ix_read rd)
{
    return rd == IX_READ_OK ? STEP_OK : rd == IX_READ_WOULD_BLOCK ? STEP_ELSEWHERE : STEP_ERROR;
}

/* The rows of one term (the union over its keys), sorted. */
static enum step term_rows(const struct vt_index *ix, const struct index_term *t, bool nowait,
                           struct ix_hits *out)
{
    memset(out, 0, sizeof *out);
    const struct index_column *c = ix->by_col[t->col];
    struct ix_hits parts_small[8];
    struct ix_hits *parts = t->n_keys <= 8 ? parts_small : calloc(t->n_keys, sizeof *parts);
    if (!parts)
        return STEP_ERROR;
    enum step st = STEP_OK;
    size_t total = 0, got = 0;
    for (size_t k = 0; k < t->n_keys && st == STEP_OK; k++) {
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = same_key(&t->keys[j], &t->keys[k]);
        if (seen)
            continue;
        bool over;
        st = step_of(ix_column_lookup(ix, c, &t->keys[k], FAST_MAX_HITS, nowait, &parts[got], &over));
        if (st == STEP_OK && over)
            st = STEP_NO;
        if (st == STEP_OK) {
            total += parts[got].n;
            out->candidates = out->candidates || parts[got].candidates;
            got++;
        } else {
            ix_hits_free(&parts[got]);
        }
        if (st == STEP_OK && total > FAST_MAX_HITS)
            st = STEP_NO;
    }
    if (st == STEP_OK && got == 1) {
        *out = parts[0];
        got = 0;
    } else if (st == STEP_OK && total) {
        out->rows = malloc(total * sizeof *out->rows);
        if (!out->rows) {
            st = STEP_ERROR;
        } else {
            out->owned = true;
            for (size_t k = 0; k < got; k++) {
                if (!parts[k].n)
                    continue; /* a key without rows may have no array at all */
                memcpy(out->rows + out->n, parts[k].rows, parts[k].n * sizeof *out->rows);
                out->n += parts[k].n;
            }
            /* distinct keys have disjoint rows, except candidates of two keys
             * that share a bucket and fingerprint: sort, then drop repeats */
            qsort(out->rows, out->n, sizeof *out->rows, cmp_u32);
            size_t m = 0;
            for (size_t i = 0; i < out->n; i++)
                if (m == 0 || out->rows[i] != out->rows[m - 1])
                    out->rows[m++] = out->rows[i];
            out->n = m;
        }
    }
    for (size_t k = 0; k < got; k++)
        ix_hits_free(&parts[k]);
    if (parts != parts_small)
        free(parts);
    return st;
}

/* Rows matching every term (none of them dense), sorted. */
static enum step match(const struct vt_index *ix, const struct index_term *terms, size_t n_terms,
                       bool nowait, struct ix_hits *out, bool *out_candidates)
{
    memset(out, 0, sizeof *out);
    *out_candidates = false;
    enum step st = n_terms ? term_rows(ix, &terms[0], nowait, out) : STEP_OK;
    *out_candidates = out->candidates;
    for (size_t t = 1; t < n_terms && st == STEP_OK && out->n > 0; t++) {
        struct ix_hits next;
        st = term_rows(ix, &terms[t], nowait, &next);
        if (st != STEP_OK)
            break;
        *out_candidates = *out_candidates || next.candidates;
        uint32_t *res = malloc((out->n < next.n ? out->n : next.n) * sizeof *res + 1);
        if (!res) {
            ix_hits_free(&next);
            st = STEP_ERROR;
            break;
        }
        size_t i = 0, j = 0, k = 0;
        while (i < out->n && j < next.n) {
            if (out->rows[i] < next.rows[j])
                i++;
            else if (out->rows[i] > next.rows[j])
                j++;
            else {
                res[k++] = out->rows[i];
                i++;
                j++;
            }
        }
        ix_hits_free(out);
        ix_hits_free(&next);
        out->rows = res;
        out->n = k;
        out->owned = true;
    }
    if (st != STEP_OK)
        ix_hits_free(out);
    return st;
}

/* Whether reading these sorted positions touches more than FAST_MAX_BLOCKS
 * row blocks. */
static bool too_many_blocks(const uint32_t *rows, size_t n)
{
    if (n <= FAST_MAX_BLOCKS)
        return false;
    size_t blocks = 0;
    uint32_t last = UINT32_MAX;
    for (size_t i = 0; i < n && blocks <= FAST_MAX_BLOCKS; i++) {
        uint32_t b = rows[i] / IX_BLOCK_ROWS;
        blocks += b != last;
        last = b;
    }
    return blocks > FAST_MAX_BLOCKS;
}

static bool cell_matches(const struct index_column *c, const struct index_cell *cell,
                         const struct index_key *key)
{
    if (cell->null || key->domain != c->domain)
        return false;
    switch (c->domain) {
    case INDEX_DOMAIN_INT: return cell->v.i == key->i;
    case INDEX_DOMAIN_UINT: return cell->v.u == key->u;
    case INDEX_DOMAIN_BOOL: return cell->v.b == (key->i != 0);
    case INDEX_DOMAIN_STRING: {
        duckdb_string_t s = cell->v.s;
        size_t n = duckdb_string_t_length(s);
        return n == key->len && (n == 0 || memcmp(duckdb_string_t_data(&s), key->s, n) == 0);
    }
    }
    return false;
}

/* Whether a term is checked on the rows the others find: hash buckets give
 * candidates, dense columns keep no positions. */
static bool term_verified(const struct vt_index *ix, const struct index_term *t)
{
    enum ix_kind k = ix->by_col[t->col]->kind;
    return k == IX_HASHED || k == IX_EQ_DENSE;
}

/* Keeps the rows whose cells satisfy every verified term. */
static enum step verify(const struct index_fastpath *fp, const struct index_term *terms,
                        size_t n_terms, bool nowait, struct ix_hits *rows)
{
    struct ix_cursor *cur = ix_cursor_get();
    if (!cur)
        return STEP_ERROR;
    size_t n = 0;
    for (size_t i = 0; i < rows->n; i++) {
        const struct index_cell *cells;
        enum ix_read rd = ix_rowstore_row(fp->rows, fp->id, cur, rows->rows[i], nowait, &cells);
        if (rd != IX_READ_OK)
            return step_of(rd);
        bool all = true;
        for (size_t t = 0; t < n_terms && all; t++) {
            if (!term_verified(fp->index, &terms[t]))
                continue;
            const struct index_column *c = fp->index->by_col[terms[t].col];
            bool any = false;
            for (size_t k = 0; k < terms[t].n_keys && !any; k++)
                any = cell_matches(c, &cells[terms[t].col], &terms[t].keys[k]);
            all = any;
        }
        if (all) {
            if (!rows->owned) { /* borrowed: copy before writing */
                uint32_t *p = malloc(rows->n * sizeof *p);
                if (!p)
                    return STEP_ERROR;
                memcpy(p, rows->rows, rows->n * sizeof *p);
                rows->rows = p;
                rows->owned = true;
            }
            rows->rows[n++] = rows->rows[i];
        }
    }
    rows->n = n;
    return STEP_OK;
}

/* One term on equality-index columns: the sum of its keys' counts, read
 * from memory. False when the term needs another way. */
static bool count_from_keys(const struct vt_index *ix, const struct index_term *t, uint64_t *out)
{
    const struct index_column *c = ix->by_col[t->col];
    if (c->kind != IX_EQ && c->kind != IX_EQ_DENSE)
        return false;
    *out = 0;
    for (size_t k = 0; k < t->n_keys; k++) {
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = same_key(&t->keys[j], &t->keys[k]);
        uint32_t id = seen ? UINT32_MAX : ix_eq_find(c, &t->keys[k]);
        if (id != UINT32_MAX)
            *out += c->offsets[id + 1] - c->offsets[id];
    }
    return true;
}

/* Every block the rows need is in the page cache (the first one decoded
 * into the cursor): then the answer can start. */
static enum step blocks_ready(const struct index_fastpath *fp, struct ix_cursor *cur,
                              const uint32_t *rows, size_t n)
{
    const struct ix_rowstore *rs = fp->rows;
    char small[4096];
    char *buf = small;
    size_t cap = sizeof small;
    enum step st = STEP_OK;
    uint32_t last = UINT32_MAX;
    for (size_t i = 0; i < n && st == STEP_OK; i++) {
        uint32_t b = rows[i] / IX_BLOCK_ROWS;
        if (b == last)
            continue;
        last = b;
        if (i == 0) {
            const struct index_cell *cells;
            st = step_of(ix_rowstore_row(rs, fp->id, cur, rows[0], true, &cells));
            continue;
        }
        uint64_t off = rs->block_off[b], len = rs->block_off[b + 1] - off;
        if (len > cap) {
            char *p = realloc(buf == small ? NULL : buf, len);
            if (!p) {
                st = STEP_ERROR;
                break;
            }
            buf = p;
            cap = len;
        }
        st = step_of(ix_store_read(rs->store, off, len, buf, true));
    }
    if (buf != small)
        free(buf);
    return st;
}

/* A sink op's answer: true to go on. A capped result ends as a success; any
 * other stop leaves its code in err. */
static bool settle(enum vt_err rc, struct vt_error *err)
{
    if (rc == VT_ERR_OK)
        return true;
    if (rc == VT_ERR_RESULT_CAPPED)
        err->code = VT_ERR_OK;
    else if (err->code == VT_ERR_OK)
        err->code = rc;
    return false;
}

/* The rows the positional terms find, checked against every term when some
 * term is verified on the row cells (too many to check: another path). */
static enum step matched_rows(const struct index_fastpath *fp, const struct index_fast_query *q,
                              const struct index_term *pos_terms, size_t n_pos, bool need_verify,
                              struct ix_hits *rows)
{
    bool cand;
    enum step st = match(fp->index, pos_terms, n_pos, q->nowait, rows, &cand);
    if (st != STEP_OK || !need_verify)
        return st;
    if (q->max_rows != SIZE_MAX && rows->n > q->max_rows * FAST_VERIFY_PER_ROW)
        return STEP_ELSEWHERE;
    if (too_many_blocks(rows->rows, rows->n))
        return STEP_NO;
    return verify(fp, q->terms, q->n_terms, q->nowait, rows);
}

enum index_fast index_fast_answer(const struct index_fastpath *fp, const struct index_fast_query *q,
                                  const struct index_fast_sink *sink, struct arena *arena,
                                  struct vt_error *out_err)
{
    (void)arena;
    memset(out_err, 0, sizeof *out_err);
    const struct vt_index *ix = fp ? fp->index : NULL;
    if (!ix)
        return INDEX_FAST_NO;
    for (size_t t = 0; t < q->n_terms; t++)
        if (!index_has_column(ix, q->terms[t].col))
            return INDEX_FAST_NO;
    if (q->kind == INDEX_FAST_ROWS && (!fp->rows || !sink->row))
        return INDEX_FAST_NO;
    /* Terms that find rows, and whether some term is checked on them. */
    bool need_verify = false;
    size_t n_pos = 0;
    struct index_term pos_small[8];
    struct index_term *pos_terms =
        q->n_terms <= 8 ? pos_small : malloc(q->n_terms * sizeof *pos_terms);
    enum index_fast result = INDEX_FAST_NO;
    struct ix_hits rows = {0};
    if (!pos_terms)
        goto out;
    for (size_t t = 0; t < q->n_terms; t++) {
        need_verify = need_verify || term_verified(ix, &q->terms[t]);
        if (ix->by_col[q->terms[t].col]->kind != IX_EQ_DENSE)
            pos_terms[n_pos++] = q->terms[t];
    }
    if (q->kind == INDEX_FAST_COUNT) {
        uint64_t n = 0;
        if (q->empty) {
            n = 0;
        } else if (q->n_terms == 1 && count_from_keys(ix, &q->terms[0], &n)) {
            /* from memory */
        } else if (n_pos == 0 || (need_verify && !fp->rows)) {
            goto out; /* dense columns only, more than one term: DuckDB */
        } else {
            enum step st = matched_rows(fp, q, pos_terms, n_pos, need_verify, &rows);
            if (st != STEP_OK) {
                result = st == STEP_ELSEWHERE ? INDEX_FAST_ELSEWHERE : INDEX_FAST_NO;
                goto out;
            }
            n = rows.n;
        }
        result = INDEX_FAST_DONE;
        settle(sink->count(sink->ctx, n, out_err), out_err);
        goto out;
    }
    if (!q->empty) {
        if (n_pos == 0)
            goto out; /* dense columns only: DuckDB */
        enum step st = matched_rows(fp, q, pos_terms, n_pos, need_verify, &rows);
        if (st != STEP_OK) {
            result = st == STEP_ELSEWHERE ? INDEX_FAST_ELSEWHERE : INDEX_FAST_NO;
            goto out;
        }
    }
    /* The page over the sorted positions (table order, as the SQL path). */
    size_t from = q->offset < rows.n ? (size_t)q->offset : rows.n;
    size_t count = rows.n - from;
    if (q->limit >= 0 && (uint64_t)q->limit < count)
        count = (size_t)q->limit;
    if (count > q->max_rows) {
        result = INDEX_FAST_ELSEWHERE;
        goto out;
    }
    if (too_many_blocks(rows.rows + from, count))
        goto out;
    struct ix_cursor *cur = ix_cursor_get();
    if (!cur)
        goto out;
    if (q->nowait && count) {
        enum step st = blocks_ready(fp, cur, rows.rows + from, count);
        if (st != STEP_OK) {
            result = st == STEP_ELSEWHERE ? INDEX_FAST_ELSEWHERE : INDEX_FAST_NO;
            goto out;
        }
    }
    result = INDEX_FAST_DONE;
    if (!settle(sink->begin(sink->ctx, out_err), out_err))
        goto out;
    for (size_t i = 0; i < count; i++) {
        const struct index_cell *cells;
        /* blocks_ready saw every block in the page cache: a read that waits
         * now means the kernel dropped it in between (rare); wait for it */
        enum ix_read rd = ix_rowstore_row(fp->rows, fp->id, cur, rows.rows[from + i], false, &cells);
        if (rd != IX_READ_OK) {
            vt_error_set(out_err, VT_ERR_INTERNAL, "index row store read failed");
            break;
        }
        struct index_row row = {.fp = fp, .cells = cells, .cols = q->cols, .n = q->n_cols};
        if (!settle(sink->row(sink->ctx, &row, out_err), out_err))
            break;
        if ((i & 63) == 63 && sink->stop && !settle(sink->stop(sink->ctx, out_err), out_err))
            break;
    }
out:
    ix_hits_free(&rows);
    if (pos_terms != pos_small)
        free(pos_terms);
    return result;
}
