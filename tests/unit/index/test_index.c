/* The index fast path (src/index): which columns get which structure, the
 * answers of eq/in lookups (AND of ORs, counts, pages), verification of hash
 * candidates, the memory budget and the disk-backed store (RWF_NOWAIT when
 * the bytes are not cached). Every case runs twice: the store in memory and
 * in a file. Each test table's column 0 is the row number, so a row's cells
 * say which row it is. */
#include <duckdb.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "config/config.h"
#include "encode/json_rows.h"
#include "index/index_internal.h"
#include "testlib.h"

static duckdb_database db;
static duckdb_connection con;
static const char *store_dir; /* NULL: memory */
static uint64_t pages_bytes;  /* pre-rendered pages of the next build (0: none) */

static struct index_fastpath *build_opts(const char *sql, enum cfg_index_mode mode,
                                         const char *list_col, int64_t max_card, bool rows,
                                         char *warn, size_t warnlen, char *note, size_t notelen)
{
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        fprintf(stderr, "%s\n", duckdb_result_error(&res));
        return NULL;
    }
    size_t n = duckdb_column_count(&res);
    const char *names[64];
    duckdb_logical_type types[64];
    for (size_t i = 0; i < n; i++) {
        names[i] = duckdb_column_name(&res, i);
        types[i] = duckdb_column_logical_type(&res, i);
    }
    struct vt_dataset_config cfg;
    config_dataset_defaults(&cfg);
    cfg.index_mode = mode;
    cfg.index_max_cardinality = max_card;
    char *items[1] = {(char *)list_col};
    if (list_col) {
        cfg.index_columns.items = items;
        cfg.index_columns.len = 1;
    }
    struct index_build_options opt = {
        .cfg = &cfg, .dir = store_dir, .rows = rows, .pages_bytes = pages_bytes,
        .pages_gzip = true};
    char w[256];
    struct index_builder *b =
        index_builder_create(n, names, types, &opt, warn ? warn : w, warn ? warnlen : sizeof w);
    struct index_fastpath *fp = NULL;
    if (b) {
        duckdb_data_chunk chunk;
        while ((chunk = duckdb_fetch_chunk(res)) != NULL) {
            index_builder_add_chunk(b, chunk);
            duckdb_destroy_data_chunk(&chunk);
        }
        char why[256], nb[256];
        fp = index_builder_finish(b, note ? note : nb, note ? notelen : sizeof nb, why,
                                  sizeof why);
    }
    duckdb_destroy_result(&res);
    return fp;
}

static struct index_fastpath *build(const char *sql, enum cfg_index_mode mode,
                                    const char *list_col, int64_t max_card)
{
    return build_opts(sql, mode, list_col, max_card, true, NULL, 0, NULL, 0);
}

static struct index_key ikey(int64_t v)
{
    return (struct index_key){.domain = INDEX_DOMAIN_INT, .i = v};
}

static struct index_key ukey(uint64_t v)
{
    return (struct index_key){.domain = INDEX_DOMAIN_UINT, .u = v};
}

static struct index_key skey(const char *s)
{
    return (struct index_key){.domain = INDEX_DOMAIN_STRING, .s = s, .len = strlen(s)};
}

/* What an answer gave: the row numbers (column 0), or a count. */
struct got {
    int64_t rows[20000];
    size_t n;
    uint64_t count;
    bool counted, begun;
    struct strbuf json;
};

static enum vt_err g_begin(void *ctx, struct vt_error *err)
{
    (void)err;
    ((struct got *)ctx)->begun = true;
    return VT_ERR_OK;
}

static enum vt_err g_row(void *ctx, const struct index_row *row, struct vt_error *err)
{
    (void)err;
    struct got *g = ctx;
    if (g->n < 20000)
        g->rows[g->n] = row->cells[0].v.i;
    g->n++;
    if (g->json.len)
        sb_addc(&g->json, ',');
    index_row_json(row, &g->json);
    return VT_ERR_OK;
}

static enum vt_err g_count(void *ctx, uint64_t n, struct vt_error *err)
{
    (void)err;
    struct got *g = ctx;
    g->count = n;
    g->counted = true;
    return VT_ERR_OK;
}

static enum index_fast ask(const struct index_fastpath *fp, enum index_fast_kind kind,
                           const struct index_term *terms, size_t n_terms, struct got *g)
{
    static struct got scratch;
    if (!g)
        g = &scratch;
    sb_release(&g->json);
    memset(g, 0, sizeof *g);
    sb_init(&g->json, 0);
    struct index_fast_query q = {.kind = kind, .terms = terms, .n_terms = n_terms, .limit = -1,
                                 .max_rows = SIZE_MAX};
    struct index_fast_sink sink = {.ctx = g, .begin = g_begin, .row = g_row, .count = g_count};
    struct vt_error err;
    enum index_fast r = index_fast_answer(fp, &q, &sink, NULL, &err);
    CHECK_EQ_INT(err.code, VT_ERR_OK);
    return r;
}

static uint64_t count_of(const struct index_fastpath *fp, const struct index_term *terms,
                         size_t n_terms)
{
    struct got g = {0};
    enum index_fast r = ask(fp, INDEX_FAST_COUNT, terms, n_terms, &g);
    CHECK_EQ_INT(r, INDEX_FAST_DONE);
    sb_release(&g.json);
    return g.counted ? g.count : UINT64_MAX;
}

static bool sorted(const struct got *g)
{
    for (size_t i = 1; i < g->n; i++)
        if (g->rows[i] <= g->rows[i - 1])
            return false;
    return true;
}

static struct got g;

/* DuckDB's count for a WHERE clause (chunks, not duckdb_value_*). */
static int64_t duck_count_in(const char *table, const char *where)
{
    char sql[768];
    snprintf(sql, sizeof sql, "SELECT count(*)::BIGINT FROM %s WHERE %s", table, where);
    duckdb_result res;
    int64_t n = -1;
    if (duckdb_query(con, sql, &res) == DuckDBSuccess) {
        duckdb_data_chunk c = duckdb_fetch_chunk(res);
        if (c) {
            n = ((int64_t *)duckdb_vector_get_data(duckdb_data_chunk_get_vector(c, 0)))[0];
            duckdb_destroy_data_chunk(&c);
        }
    } else {
        fprintf(stderr, "%s: %s\n", sql, duckdb_result_error(&res));
    }
    duckdb_destroy_result(&res);
    return n;
}

static const char *op_sql(enum index_range_op op)
{
    return op == INDEX_RANGE_GE ? ">=" : op == INDEX_RANGE_GT ? ">" : op == INDEX_RANGE_LE ? "<="
                                                                                          : "<";
}

/* One comparison of the index's count with DuckDB's count of `table`;
 * false (reported) when they differ. */
static bool same_count_in(const struct index_fastpath *fp, size_t col,
                          const struct index_range_term *t, size_t n, const char *table,
                          const char *where)
{
    uint64_t got = UINT64_MAX;
    CHECK_EQ_INT(index_range_count(fp, col, t, n, false, &got), INDEX_FAST_DONE);
    int64_t want = duck_count_in(table, where);
    if ((int64_t)got == want)
        return true;
    fprintf(stderr, "%s: index %llu, DuckDB %lld\n", where, (unsigned long long)got,
            (long long)want);
    return false;
}

static bool same_count(const struct index_fastpath *fp, size_t col,
                       const struct index_range_term *t, size_t n, const char *where)
{
    return same_count_in(fp, col, t, n, "rt", where);
}

TEST(frames_for_monotone_integers)
{
    /* an id past the cardinality cap that never decreases (with repeats),
     * and unsigned ids far apart */
    struct index_fastpath *fp =
        build("SELECT i AS r, (i // 3) * 7 - 1000 AS k, i::UBIGINT * 1000000000000 AS u "
              "FROM range(6000) t(i)",
              CFG_INDEX_AUTO, NULL, 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    CHECK(index_column_frames(ix, 1));
    CHECK(index_column_frames(ix, 2));
    CHECK(!index_column_spec(ix, 1)); /* not the spec's equality index */
    CHECK_EQ_INT(index_column_keys(ix, 1), 2000);
    for (int v = -1000; v <= 12993; v += 7 * 97) {
        struct index_key k = ikey(v);
        struct index_term t = {1, &k, 1};
        CHECK_EQ_INT(ask(fp, INDEX_FAST_ROWS, &t, 1, &g), INDEX_FAST_DONE);
        CHECK_EQ_INT(g.n, 3);
        for (size_t j = 0; j < g.n; j++)
            CHECK_EQ_INT((g.rows[j] / 3) * 7 - 1000, v);
        CHECK(sorted(&g));
        CHECK_EQ_INT(count_of(fp, &t, 1), 3);
    }
    /* between keys, below the first, above the last */
    int64_t misses[] = {-999, -1001, 14000 * 7, 5};
    for (size_t i = 0; i < 4; i++) {
        struct index_key k = ikey(misses[i]);
        struct index_term t = {1, &k, 1};
        CHECK_EQ_INT(ask(fp, INDEX_FAST_ROWS, &t, 1, &g), INDEX_FAST_DONE);
        CHECK_EQ_INT(g.n, 0);
        CHECK(g.begun);
    }
    struct index_key u = ukey(4321ull * 1000000000000ull);
    struct index_term tu = {2, &u, 1};
    ask(fp, INDEX_FAST_ROWS, &tu, 1, &g);
    CHECK(g.n == 1 && g.rows[0] == 4321);
    /* `in` with a repeated key and one that is not there */
    struct index_key ks[] = {ikey(-1000), ikey(-993), ikey(-1000), ikey(12993), ikey(6)};
    struct index_term tin = {1, ks, 5};
    ask(fp, INDEX_FAST_ROWS, &tin, 1, &g);
    CHECK_EQ_INT(g.n, 9);
    CHECK(sorted(&g));
    CHECK_EQ_INT(count_of(fp, &tin, 1), 9);
    index_fastpath_destroy(fp);
}

/* A monotone column's frames answer range counts: no sorted values of its
 * own (8 bytes a row of file saved), the same counts as DuckDB's for signed
 * keys with repeats and unsigned ones far apart, bounds inside a frame, on
 * frame edges, between keys and outside. */
TEST(range_counts_from_frames)
{
    CHECK(duckdb_query(con, "CREATE OR REPLACE TABLE rf AS SELECT i AS r, "
                            "(i // 3) * 7 - 1000 AS k, i::UBIGINT * 1000000000000 AS u, (hash(i) % 100)::BIGINT AS h "
                            "FROM range(6000) t(i)",
                       NULL) == DuckDBSuccess);
    struct index_fastpath *fp = build("SELECT * FROM rf", CFG_INDEX_AUTO, NULL, 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    CHECK(index_column_frames(ix, 1) && index_column_frames(ix, 2));
    CHECK(index_has_range(ix, 1) && index_has_range(ix, 2) && index_has_range(ix, 3));
    CHECK(ix->sorted[1] == NULL && ix->sorted[2] == NULL && ix->sorted[3] != NULL);
    /* r is monotone too: only h keeps sorted values */
    CHECK_EQ_INT(index_fastpath_sorted_bytes(fp), 8 * 6000);
    static const enum index_range_op ops[] = {INDEX_RANGE_GE, INDEX_RANGE_GT, INDEX_RANGE_LE,
                                              INDEX_RANGE_LT};
    unsigned seed = 777;
    int bad = 0;
    for (int k = 0; k < 150 && bad < 5; k++) {
        struct index_range_term t[2];
        size_t n = 1 + (size_t)(rand_r(&seed) % 2);
        char where[256], whereu[256];
        int w = 0, wu = 0;
        for (size_t j = 0; j < n; j++) {
            t[j] = (struct index_range_term){.op = ops[rand_r(&seed) % 4]};
            int r = rand_r(&seed) % 12;
            t[j].i = r == 0 ? INT64_MAX : r == 1 ? INT64_MIN : r == 2 ? -1000 : r == 3 ? 12993
                     : rand_r(&seed) % 15000 - 1500;
            w += snprintf(where + w, sizeof where - (size_t)w, "%sk %s %lld", j ? " AND " : "",
                          op_sql(t[j].op), (long long)t[j].i);
        }
        bad += !same_count_in(fp, 1, t, n, "rf", where);
        for (size_t j = 0; j < n; j++) {
            if (t[j].i > -1500 && t[j].i < 15000)
                t[j].i = t[j].i * 500000000 + (rand_r(&seed) % 3 - 1);
            wu += snprintf(whereu + wu, sizeof whereu - (size_t)wu, "%su %s %lld",
                           j ? " AND " : "", op_sql(t[j].op), (long long)t[j].i);
        }
        bad += !same_count_in(fp, 2, t, n, "rf", whereu);
    }
    CHECK_EQ_INT(bad, 0);
    /* r rises by 1 a row: its unit frames answer without reading the store */
    struct index_range_term tr[2] = {{.op = INDEX_RANGE_GE, .i = 100},
                                     {.op = INDEX_RANGE_LT, .i = 4000}};
    uint64_t got = 0, before = ix_store_reads();
    CHECK_EQ_INT(index_range_count(fp, 0, tr, 2, false, &got), INDEX_FAST_DONE);
    CHECK_EQ_INT(got, 3900);
    CHECK_EQ_INT(ix_store_reads() - before, 0);
    index_fastpath_destroy(fp);
}

/* Keyset pages (index_range_rows): on a column whose values never
 * decrease in table order and are never NULL, the rows of a range are
 * consecutive, and the index names them: the first is DuckDB's min(r), the
 * count DuckDB's, and every row between the first and the last qualifies.
 * Frames (integers, repeats or not) and sorted values (a DOUBLE) alike; a
 * column that falls somewhere, or has a NULL, is refused. */
TEST(range_rows_of_never_decreasing_columns)
{
    CHECK(duckdb_query(con, "CREATE OR REPLACE TABLE kr AS SELECT i AS r, i * 3 + 5 AS id, "
                            "(i // 4) - 700 AS grp, i * 0.25 AS x, "
                            "(hash(i) % 100)::BIGINT AS h, "
                            "CASE WHEN i = 4000 THEN NULL ELSE i END AS nul, "
                            "CASE WHEN i = 3000 THEN 0 ELSE i END AS dip "
                            "FROM range(6000) t(i)",
                       NULL) == DuckDBSuccess);
    struct index_fastpath *fp = build("SELECT * FROM kr", CFG_INDEX_AUTO, NULL, 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    CHECK(ix->sorted[3] != NULL); /* x: sorted values, not frames */
    static const enum index_range_op ops[] = {INDEX_RANGE_GE, INDEX_RANGE_GT, INDEX_RANGE_LE,
                                              INDEX_RANGE_LT};
    static const char *const names[] = {"r", "id", "grp", "x"};
    unsigned seed = 4242;
    int bad = 0;
    for (int k = 0; k < 200 && bad < 5; k++) {
        size_t col = (size_t)(rand_r(&seed) % 4);
        struct index_range_term t[2];
        size_t n = 1 + (size_t)(rand_r(&seed) % 2);
        char where[256];
        int w = 0;
        for (size_t j = 0; j < n; j++) {
            t[j] = (struct index_range_term){.op = ops[rand_r(&seed) % 4]};
            int64_t v = rand_r(&seed) % 20000 - 1000;
            if (col == 3) {
                t[j].is_double = true;
                t[j].d = (double)v / 8;
                w += snprintf(where + w, sizeof where - (size_t)w, "%sx %s %.17g",
                              j ? " AND " : "", op_sql(t[j].op), t[j].d);
            } else {
                t[j].i = v;
                w += snprintf(where + w, sizeof where - (size_t)w, "%s%s %s %lld",
                              j ? " AND " : "", names[col], op_sql(t[j].op), (long long)v);
            }
        }
        uint64_t first = 99, count = 99;
        bool unique = false;
        CHECK_EQ_INT(index_range_rows(fp, col, t, n, false, &first, &count, &unique),
                     INDEX_FAST_DONE);
        CHECK(unique == (col != 2));
        char q[768];
        int64_t want = duck_count_in("kr", where);
        snprintf(q, sizeof q, "r < coalesce((SELECT min(r) FROM kr WHERE %s), 0)", where);
        int64_t want_first = want ? duck_count_in("kr", q) : 0;
        snprintf(q, sizeof q,
                 "r BETWEEN (SELECT min(r) FROM kr WHERE %s) AND (SELECT max(r) FROM kr WHERE %s)",
                 where, where);
        int64_t span = want ? duck_count_in("kr", q) : 0;
        if ((int64_t)count != want || (count && (int64_t)first != want_first) || span != want) {
            fprintf(stderr, "%s: index rows [%llu, +%llu), DuckDB [%lld, +%lld) over %lld\n",
                    where, (unsigned long long)first, (unsigned long long)count,
                    (long long)want_first, (long long)want, (long long)span);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    /* not never-decreasing: no answer */
    struct index_range_term t0 = {.op = INDEX_RANGE_GE, .i = 10};
    uint64_t first, count;
    bool unique;
    CHECK_EQ_INT(index_range_rows(fp, 4, &t0, 1, false, &first, &count, &unique), INDEX_FAST_NO);
    CHECK_EQ_INT(index_range_rows(fp, 5, &t0, 1, false, &first, &count, &unique), INDEX_FAST_NO);
    CHECK_EQ_INT(index_range_rows(fp, 6, &t0, 1, false, &first, &count, &unique), INDEX_FAST_NO);
    index_fastpath_destroy(fp);
}

/* A frame whose values rise by exactly 1 a row (an id 1..N) answers from
 * memory: a count reads nothing from the store, a row reads its row block
 * only. Frames with a gap or a repeat still read and decode their bytes. */
TEST(unit_frames_read_nothing)
{
    struct index_fastpath *fp =
        build("SELECT i AS r, i - 3000 AS neg, CASE WHEN i < 3000 THEN i ELSE i + 10 END AS gap, "
              "i // 2 AS rep FROM range(6000) t(i)",
              CFG_INDEX_AUTO, NULL, 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    for (size_t col = 0; col < 4; col++)
        CHECK(index_column_frames(ix, col));
    /* r and neg: every frame is a unit frame (neg crosses zero) */
    int64_t keys[] = {0, 1, 127, 128, 129, 255, 256, 4242, 5888, 5999};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        for (size_t col = 0; col < 2; col++) {
            int64_t v = keys[i] - (col ? 3000 : 0);
            struct index_key k = ikey(v);
            struct index_term t = {col, &k, 1};
            uint64_t before = ix_store_reads();
            CHECK_EQ_INT(count_of(fp, &t, 1), 1);
            CHECK_EQ_INT(ix_store_reads() - before, 0);
            CHECK_EQ_INT(ask(fp, INDEX_FAST_ROWS, &t, 1, &g), INDEX_FAST_DONE);
            CHECK(g.n == 1 && g.rows[0] == keys[i]);
        }
    }
    /* absent keys: below the first, past the last, far past */
    int64_t misses[] = {-1, 6000, 6001, 1 << 30};
    for (size_t i = 0; i < 4; i++) {
        struct index_key k = ikey(misses[i]);
        struct index_term t = {0, &k, 1};
        uint64_t before = ix_store_reads();
        CHECK_EQ_INT(count_of(fp, &t, 1), 0);
        CHECK_EQ_INT(ix_store_reads() - before, 0);
    }
    /* `in` over unit frames */
    struct index_key ks[] = {ikey(5), ikey(4000), ikey(5), ikey(7000)};
    struct index_term tin = {0, ks, 4};
    uint64_t before = ix_store_reads();
    CHECK_EQ_INT(count_of(fp, &tin, 1), 2);
    CHECK_EQ_INT(ix_store_reads() - before, 0);
    /* gap: the frame holding rows 2944..3071 jumps by 11 at row 3000 */
    int64_t gap_rows[] = {2944, 2999, 3000, 3071};
    for (size_t i = 0; i < 4; i++) {
        int64_t v = gap_rows[i] < 3000 ? gap_rows[i] : gap_rows[i] + 10;
        struct index_key k = ikey(v);
        struct index_term t = {2, &k, 1};
        before = ix_store_reads();
        CHECK_EQ_INT(count_of(fp, &t, 1), 1);
        CHECK(ix_store_reads() - before >= 1);
        ask(fp, INDEX_FAST_ROWS, &t, 1, &g);
        CHECK(g.n == 1 && g.rows[0] == gap_rows[i]);
    }
    struct index_key hole = ikey(3005);
    struct index_term th = {2, &hole, 1};
    CHECK_EQ_INT(count_of(fp, &th, 1), 0);
    struct index_key far = ikey(100);
    struct index_term tf = {2, &far, 1};
    before = ix_store_reads();
    CHECK_EQ_INT(count_of(fp, &tf, 1), 1);
    CHECK_EQ_INT(ix_store_reads() - before, 0);
    /* repeats: two rows a key, read from the store */
    for (int64_t v = 0; v < 3000; v += 499) {
        struct index_key k = ikey(v);
        struct index_term t = {3, &k, 1};
        before = ix_store_reads();
        ask(fp, INDEX_FAST_ROWS, &t, 1, &g);
        CHECK(g.n == 2 && g.rows[0] == 2 * v && g.rows[1] == 2 * v + 1);
        CHECK(ix_store_reads() - before >= 1);
    }
    index_fastpath_destroy(fp);
}

TEST(hash_buckets_for_unordered_keys)
{
    /* Past max_cardinality (1000): an md5 token (unique, NULLs), a code with
     * up to 4 rows per value (kept), one with 5 (left to DuckDB), long free
     * text (left to DuckDB), integers in no order (buckets, not frames). */
    struct index_fastpath *fp = build(
        "SELECT i AS r, CASE WHEN i % 11 = 0 THEN NULL ELSE md5(i::VARCHAR) END AS tok, "
        "'c' || (i // 4) AS code4, 'c' || (i // 5) AS code5, "
        "repeat('free text ', 8) || i AS txt, (i * 7919) % 6007 AS perm FROM range(6000) t(i)",
        CFG_INDEX_AUTO, NULL, 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    CHECK(index_column_hashed(ix, 1));
    CHECK_EQ_INT(index_column_keys(ix, 1), 6000 - 546);
    CHECK(index_column_hashed(ix, 2));
    CHECK(!index_has_column(ix, 3)); /* 5 rows per value */
    CHECK(!index_has_column(ix, 4)); /* 80+ bytes per value */
    CHECK(index_column_hashed(ix, 5));
    CHECK(index_column_frames(ix, 0));
    duckdb_result res;
    CHECK(duckdb_query(con, "SELECT md5('4321')", &res) == DuckDBSuccess);
    char *v = duckdb_value_varchar(&res, 0, 0);
    char tok[64];
    snprintf(tok, sizeof tok, "%s", v);
    duckdb_free(v);
    duckdb_destroy_result(&res);
    struct index_key k = skey(tok);
    struct index_term t = {1, &k, 1};
    ask(fp, INDEX_FAST_ROWS, &t, 1, &g);
    CHECK(g.n == 1 && g.rows[0] == 4321);
    CHECK_EQ_INT(count_of(fp, &t, 1), 1);
    struct index_key absent = skey("not a token");
    struct index_term ta = {1, &absent, 1};
    ask(fp, INDEX_FAST_ROWS, &ta, 1, &g);
    CHECK_EQ_INT(g.n, 0);
    /* code4: 4 rows per value; `in` with a repeated value */
    struct index_key ks[] = {skey("c10"), skey("c1499"), skey("c10")};
    struct index_term t4 = {2, ks, 3};
    ask(fp, INDEX_FAST_ROWS, &t4, 1, &g);
    CHECK_EQ_INT(g.n, 8);
    for (size_t i = 0; i < g.n; i++)
        CHECK(g.rows[i] / 4 == 10 || g.rows[i] / 4 == 1499);
    CHECK(sorted(&g));
    CHECK_EQ_INT(count_of(fp, &t4, 1), 8);
    /* unordered integers: exact after verification */
    struct index_key p = ikey((4000 * 7919) % 6007);
    struct index_term tp = {5, &p, 1};
    ask(fp, INDEX_FAST_ROWS, &tp, 1, &g);
    CHECK(g.n == 1 && g.rows[0] == 4000);
    /* AND of two verified terms */
    struct index_term both[] = {{1, &k, 1}, {5, &p, 1}};
    CHECK_EQ_INT(count_of(fp, both, 2), 0);
    index_fastpath_destroy(fp);
    /* Without a row store hash candidates cannot be verified: not kept. */
    fp = build_opts("SELECT i AS r, md5(i::VARCHAR) AS tok FROM range(3000) t(i)",
                    CFG_INDEX_AUTO, NULL, 100, false, NULL, 0, NULL, 0);
    CHECK(fp != NULL && !index_has_column(index_fastpath_index(fp), 1));
    CHECK(fp && index_column_frames(index_fastpath_index(fp), 0));
    index_fastpath_destroy(fp);
}

TEST(list_mode)
{
    /* A listed string column keeps its equality index below
     * INDEX_LIST_MAX_KEYS whatever max_cardinality says, and stays "indexed"
     * past it (key structures). */
    struct index_fastpath *fp =
        build("SELECT i AS r, md5(i::VARCHAR) AS tok FROM range(3000) t(i)", CFG_INDEX_LIST,
              "tok", 10);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    CHECK(index_has_column(ix, 1) && index_column_spec(ix, 1) && !index_column_hashed(ix, 1));
    CHECK(!index_has_column(ix, 0));
    index_fastpath_destroy(fp);
    char warn[200];
    fp = build_opts("SELECT i AS id, 'x' || i AS name FROM range(150000) t(i)", CFG_INDEX_LIST,
                    "id", 10, true, warn, sizeof warn, NULL, 0);
    CHECK(fp != NULL);
    if (!fp)
        return;
    ix = index_fastpath_index(fp);
    CHECK(index_column_frames(ix, 0) && index_column_spec(ix, 0));
    CHECK(!index_has_column(ix, 1));
    struct index_key k = ikey(142424);
    struct index_term t = {0, &k, 1};
    ask(fp, INDEX_FAST_ROWS, &t, 1, &g);
    CHECK(g.n == 1 && g.rows[0] == 142424);
    CHECK_CONTAINS(g.json.buf, "\"name\":\"x142424\"");
    CHECK_EQ_STR(warn, "");
    index_fastpath_destroy(fp);
    fp = build_opts("SELECT [1, 2] AS d", CFG_INDEX_LIST, "d", 10, true, warn, sizeof warn, NULL,
                    0);
    CHECK(fp == NULL);
    CHECK_CONTAINS(warn, "cannot be indexed");
    fp = build_opts("SELECT 1 AS a", CFG_INDEX_LIST, "zz", 10, true, warn, sizeof warn, NULL, 0);
    CHECK(fp == NULL);
    CHECK_CONTAINS(warn, "no column named \"zz\"");
    CHECK(build("SELECT 1 AS a", CFG_INDEX_NONE, NULL, 10) == NULL);
}

TEST(equality_index_and_of_ors)
{
    struct index_fastpath *fp = build(
        "SELECT i AS r, 'cat' || (i % 7) AS cat, i % 2 = 0 AS even, i * 0.5 AS d, "
        "CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 END AS m, i % 500 AS g, i::UBIGINT % 4 AS u "
        "FROM range(10000) t(i)",
        CFG_INDEX_AUTO, NULL, 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    CHECK(index_column_spec(ix, 1) && index_column_dense(ix, 1)); /* 7 keys: counts only */
    CHECK(index_column_dense(ix, 2));
    CHECK(!index_has_column(ix, 3)); /* DOUBLE is not eligible */
    CHECK(index_column_dense(ix, 4));
    CHECK(index_has_column(ix, 5) && !index_column_dense(ix, 5));
    CHECK_EQ_INT(index_column_keys(ix, 1), 7);
    struct index_key cat3 = skey("cat3");
    struct index_term tc = {1, &cat3, 1};
    CHECK_EQ_INT(count_of(fp, &tc, 1), 1429);
    /* rows of a dense column alone: DuckDB's */
    CHECK_EQ_INT(ask(fp, INDEX_FAST_ROWS, &tc, 1, &g), INDEX_FAST_NO);
    struct index_key z = ikey(0);
    struct index_term tz = {4, &z, 1};
    size_t expect = 0;
    for (int i = 0; i < 10000; i++)
        expect += i % 3 == 0 && i % 5 != 0; /* NULLs are not indexed */
    CHECK_EQ_INT(count_of(fp, &tz, 1), expect);
    /* a sparse column keeps positions; a dense term is verified on its rows */
    struct index_key g123 = ikey(123);
    struct index_key cats[] = {skey("cat1"), skey("cat2"), skey("cat1")};
    struct index_term two[] = {{5, &g123, 1}, {1, cats, 3}};
    ask(fp, INDEX_FAST_ROWS, two, 2, &g);
    expect = 0;
    for (int i = 0; i < 10000; i++)
        expect += i % 500 == 123 && (i % 7 == 1 || i % 7 == 2);
    CHECK_EQ_INT(g.n, expect);
    for (size_t i = 0; i < g.n; i++)
        CHECK(g.rows[i] % 500 == 123 && (g.rows[i] % 7 == 1 || g.rows[i] % 7 == 2));
    CHECK(sorted(&g));
    CHECK_EQ_INT(count_of(fp, two, 2), expect);
    CHECK_EQ_INT(count_of(fp, &two[1], 1), 1429 + 1429);
    /* AND of ORs over two positional columns */
    struct index_key gs[] = {ikey(1), ikey(2), ikey(1)};
    struct index_key us[] = {ukey(3)};
    struct index_term t2[] = {{5, gs, 3}, {6, us, 1}};
    ask(fp, INDEX_FAST_ROWS, t2, 2, &g);
    expect = 0;
    for (int i = 0; i < 10000; i++)
        expect += (i % 500 == 1 || i % 500 == 2) && i % 4 == 3;
    CHECK_EQ_INT(g.n, expect);
    /* a value of the wrong domain finds nothing */
    struct index_key wrong = skey("1");
    struct index_term tw = {5, &wrong, 1};
    ask(fp, INDEX_FAST_ROWS, &tw, 1, &g);
    CHECK_EQ_INT(g.n, 0);
    index_fastpath_destroy(fp);
}

/* An empty string as the first key of a column: its key store is still
 * empty, and no NULL pointer may reach memcpy/memcmp (UBSan aborts). */
TEST(empty_string_first_key)
{
    struct index_fastpath *fp =
        build("SELECT i AS r, CASE WHEN i = 0 THEN NULL WHEN i % 3 = 1 THEN '' "
              "ELSE 'x' || (i % 3) END AS s FROM range(30) t(i)",
              CFG_INDEX_AUTO, NULL, 100);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    CHECK_EQ_INT(index_column_keys(ix, 1), 3);
    struct index_key e = skey("");
    struct index_term t = {1, &e, 1};
    ask(fp, INDEX_FAST_ROWS, &t, 1, &g);
    CHECK_EQ_INT(g.n, 10);
    for (size_t i = 0; i < g.n; i++)
        CHECK_EQ_INT(g.rows[i] % 3, 1);
    index_fastpath_destroy(fp);
}

/* Paging, projection and the bounds of a thread that must not block. */
TEST(pages_and_bounds)
{
    struct index_fastpath *fp = build(
        "SELECT i AS r, i % 40 AS k, 'v' || i AS s FROM range(4000) t(i)", CFG_INDEX_AUTO, NULL,
        1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    struct index_key k = ikey(7);
    struct index_term t = {1, &k, 1};
    size_t cols[] = {2, 0};
    struct index_fast_query q = {.kind = INDEX_FAST_ROWS, .terms = &t, .n_terms = 1,
                                 .cols = cols, .n_cols = 2, .offset = 10, .limit = 3,
                                 .max_rows = SIZE_MAX};
    struct got *gp = &g;
    sb_release(&gp->json);
    memset(gp, 0, sizeof *gp);
    sb_init(&gp->json, 0);
    struct index_fast_sink sink = {.ctx = gp, .begin = g_begin, .row = g_row, .count = g_count};
    struct vt_error err;
    CHECK_EQ_INT(index_fast_answer(fp, &q, &sink, NULL, &err), INDEX_FAST_DONE);
    CHECK_EQ_STR(gp->json.buf, "{\"s\":\"v407\",\"r\":407},{\"s\":\"v447\",\"r\":447},"
                               "{\"s\":\"v487\",\"r\":487}");
    /* more rows than max_rows: elsewhere, nothing sent */
    q.limit = -1;
    q.offset = 0;
    q.max_rows = 50;
    memset(gp, 0, offsetof(struct got, json));
    CHECK_EQ_INT(index_fast_answer(fp, &q, &sink, NULL, &err), INDEX_FAST_ELSEWHERE);
    CHECK(!gp->begun);
    /* an empty conjunction answers no rows */
    q.max_rows = SIZE_MAX;
    q.empty = true;
    memset(gp, 0, offsetof(struct got, json));
    CHECK_EQ_INT(index_fast_answer(fp, &q, &sink, NULL, &err), INDEX_FAST_DONE);
    CHECK(gp->begun && gp->n == 0);
    index_fastpath_destroy(fp);
}

/* Every cell type through the row store, as JSON: the same bytes as the JSON
 * encoder of DuckDB's chunks (the schema sample uses that one). */
TEST(cells_match_the_json_encoder)
{
    const char *sql =
        "SELECT i AS r, i::TINYINT AS ti, (i * 1000)::SMALLINT AS si, (-i * 100000)::INTEGER AS ii,"
        " i * -123456789012 AS bi, i::UTINYINT AS uti, (i * 7000)::USMALLINT AS usi,"
        " (i * 400000000)::UINTEGER AS ui, (i::UBIGINT * 2000000000000000000::UBIGINT) AS ubi,"
        " (i::HUGEINT * 170141183460469231731687303715884105::HUGEINT) AS hi, i::UHUGEINT * 1e30::UHUGEINT AS uhi,"
        " CASE i WHEN 1 THEN 'nan'::DOUBLE WHEN 2 THEN 'inf'::DOUBLE ELSE i / 3.0 END AS dbl,"
        " (i / 7.0)::FLOAT AS fl, (i * 1.25)::DECIMAL(4,2) AS d4, (i * 12345.678)::DECIMAL(9,3) AS d9,"
        " (i * 1e12 + 0.5)::DECIMAL(18,1) AS d18, (i * 1e30)::DECIMAL(38,2) AS d38,"
        " DATE '2024-01-01' + i::INTEGER AS dt, TIME '12:34:56.789' + INTERVAL (i) SECOND AS tm,"
        " TIMESTAMP '2024-03-04 05:06:07.123456' + INTERVAL (i) HOUR AS ts,"
        " (TIMESTAMP '2024-03-04 05:06:07' + INTERVAL (i) DAY)::TIMESTAMP_S AS tss,"
        " (TIMESTAMP '2024-03-04 05:06:07.5' + INTERVAL (i) DAY)::TIMESTAMP_MS AS tsm,"
        " (TIMESTAMP '2024-03-04 05:06:07.123456' + INTERVAL (i) DAY)::TIMESTAMP_NS AS tsn,"
        " TIMESTAMPTZ '2024-03-04 05:06:07+00' + INTERVAL (i) MINUTE AS tz,"
        " '12:00:00+05:30'::TIMETZ AS ttz, INTERVAL (i) MONTH + INTERVAL (i * 3) DAY AS iv,"
        " false AS nothing,"
        " ('00000000-0000-0000-0000-00000000000' || i)::UUID AS uu, ('a\"b\\\\c\\n' || i) AS str,"
        " ('\\xAA\\x00' || i)::BLOB AS bl, (i % 2 = 0) AS bo,"
        " CASE WHEN i % 2 = 0 THEN NULL ELSE i END AS nul,"
        " [i, i + 1] AS li, {'a': i, 'b': 'x'} AS st, MAP {'k': i} AS mp,"
        " ('{\"j\": ' || i || '}')::JSON AS js, '1010'::BIT AS bt,"
        " ('a' || i)::ENUM('a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9') AS en"
        " FROM range(10) t(i)";
    char *fixed = strdup(sql);
    struct index_fastpath *fp = build(fixed, CFG_INDEX_LIST, "r", 1000);
    CHECK(fp != NULL);
    if (!fp) {
        free(fixed);
        return;
    }
    CHECK(index_fastpath_has_rows(fp));
    duckdb_result res;
    CHECK(duckdb_query(con, fixed, &res) == DuckDBSuccess);
    free(fixed);
    char ebuf[256];
    struct json_rows *enc = json_rows_create_for_result(&res, ebuf, sizeof ebuf);
    CHECK(enc != NULL);
    duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
    for (int64_t i = 0; enc && chunk && i < 10; i++) {
        struct strbuf want;
        sb_init(&want, 0);
        json_rows_restart(enc);
        json_rows_encode_range(enc, chunk, (uint64_t)i, 1, &want);
        struct index_key k = ikey(i);
        struct index_term t = {0, &k, 1};
        ask(fp, INDEX_FAST_ROWS, &t, 1, &g);
        CHECK_EQ_INT(g.n, 1);
        CHECK_EQ_STR(g.json.buf, want.buf);
        sb_release(&want);
    }
    CHECK(index_fastpath_column_json(fp, 32));  /* the list */
    CHECK(!index_fastpath_column_json(fp, 38)); /* the enum, as its text */
    if (chunk)
        duckdb_destroy_data_chunk(&chunk);
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
    index_fastpath_destroy(fp);
}

/* Values longer than a block's usual size and the file's write buffer. */
TEST(long_values)
{
    struct index_fastpath *fp = build(
        "SELECT i AS r, repeat(chr((65 + (i % 26))::INTEGER), (40000 + i)::INTEGER) AS s FROM range(100) t(i)",
        CFG_INDEX_LIST, "r", 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    for (int64_t i = 0; i < 100; i += 33) {
        struct index_key k = ikey(i);
        struct index_term t = {0, &k, 1};
        ask(fp, INDEX_FAST_ROWS, &t, 1, &g);
        CHECK_EQ_INT(g.n, 1);
        CHECK_EQ_INT(g.json.len, strlen("{\"r\":,\"s\":\"\"}") + (i < 10 ? 1 : 2) + 40000 + i);
    }
    index_fastpath_destroy(fp);
}

/* Blocks zstd shrinks well are stored compressed, the others as they are;
 * rows of both kinds (and a row after one of the other kind, the cursor's
 * block replaced) read back exactly. Rows 0-159 repeat one text (10 blocks
 * that compress), rows 160-319 carry md5 hex (10 that do not). */
TEST(raw_and_compressed_blocks)
{
    const char *sql = "SELECT i AS r, CASE WHEN i < 160 THEN repeat('ab', 40) ELSE md5(i::VARCHAR) "
                      "|| md5((i * 7)::VARCHAR) END AS s, i * 3 AS h FROM range(320) t(i)";
    struct index_fastpath *fp = build(sql, CFG_INDEX_LIST, "r", 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    CHECK(fp->rows != NULL);
    if (fp->rows) {
        CHECK_EQ_INT(fp->rows->n_blocks, 20);
        CHECK_EQ_INT(fp->rows->raw_blocks, 10);
    }
    duckdb_result res;
    CHECK(duckdb_query(con, sql, &res) == DuckDBSuccess);
    const int64_t ids[] = {0, 17, 170, 3, 319, 159, 160, 200, 201, 40};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        int64_t i = ids[k];
        struct index_key key = ikey(i);
        struct index_term t = {0, &key, 1};
        ask(fp, INDEX_FAST_ROWS, &t, 1, &g);
        CHECK_EQ_INT(g.n, 1);
        char *sv = duckdb_value_varchar(&res, 1, (idx_t)i);
        char want[256];
        snprintf(want, sizeof want, "{\"r\":%lld,\"s\":\"%s\",\"h\":%lld}", (long long)i,
                 sv ? sv : "", (long long)(i * 3));
        duckdb_free(sv);
        CHECK_EQ_STR(g.json.buf, want);
    }
    duckdb_destroy_result(&res);
    index_fastpath_destroy(fp);
}

/* The budget leaves the largest structures out, then everything. */
TEST(memory_budget)
{
    const char *sql = "SELECT i AS r, md5(i::VARCHAR) AS tok, i % 300 AS g FROM range(20000) t(i)";
    size_t before = index_memory_used();
    struct index_fastpath *fp = build(sql, CFG_INDEX_AUTO, NULL, 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    size_t full = index_fastpath_memory(fp);
    CHECK(full > 0);
    CHECK_EQ_INT(index_memory_used(), before + full);
    index_fastpath_destroy(fp);
    CHECK_EQ_INT(index_memory_used(), before);
    /* room for less than all: the largest column goes, named in the note */
    index_budget_set(before + full - 1);
    char note[256];
    fp = build_opts(sql, CFG_INDEX_AUTO, NULL, 1000, true, NULL, 0, note, sizeof note);
    CHECK(fp != NULL);
    CHECK_CONTAINS(note, "index_memory_limit");
    CHECK(fp && index_fastpath_memory(fp) < full);
    index_fastpath_destroy(fp);
    index_budget_set(before + 10);
    CHECK(build(sql, CFG_INDEX_AUTO, NULL, 1000) == NULL);
    index_budget_set(SIZE_MAX);
    CHECK_EQ_INT(index_memory_used(), before);
}

/* In a file the bytes live in the page cache: a thread that must not block
 * gets ELSEWHERE when they are not there, a worker reads them. */
TEST(nowait_reads_of_a_cold_file)
{
    if (!store_dir)
        return;
    struct index_fastpath *fp = build(
        "SELECT i AS r, md5(i::VARCHAR) AS tok FROM range(200000) t(i)", CFG_INDEX_AUTO, NULL,
        1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    CHECK(fp->store.fd >= 0);
    fdatasync(fp->store.fd);
    CHECK_EQ_INT(posix_fadvise(fp->store.fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    struct index_key k = ikey(123456);
    struct index_term t = {0, &k, 1};
    struct index_fast_query q = {.kind = INDEX_FAST_ROWS, .terms = &t, .n_terms = 1, .limit = -1,
                                 .max_rows = 64, .nowait = true};
    sb_release(&g.json);
    memset(&g, 0, sizeof g);
    sb_init(&g.json, 0);
    struct index_fast_sink sink = {.ctx = &g, .begin = g_begin, .row = g_row, .count = g_count};
    struct vt_error err;
    enum index_fast r = index_fast_answer(fp, &q, &sink, NULL, &err);
    /* a file system may still have it (readahead): then it answers */
    CHECK(r == INDEX_FAST_ELSEWHERE || (r == INDEX_FAST_DONE && g.n == 1));
    CHECK(r == INDEX_FAST_DONE || !g.begun);
    q.nowait = false;
    CHECK_EQ_INT(index_fast_answer(fp, &q, &sink, NULL, &err), INDEX_FAST_DONE);
    CHECK(g.n == 1 && g.rows[g.n - 1] == 123456);
    q.nowait = true; /* now cached */
    memset(&g, 0, offsetof(struct got, json));
    CHECK_EQ_INT(index_fast_answer(fp, &q, &sink, NULL, &err), INDEX_FAST_DONE);
    CHECK_EQ_INT(g.n, 1);
    CHECK(index_fastpath_disk(fp) > 200000 * 8);
    index_fastpath_destroy(fp);
}


/* Pre-rendered pages: every range is the bytes json_rows writes for those
 * rows alone (DuckDB's LIMIT/OFFSET of the same query, encoded; the strings
 * hold "},{" so a cut in the wrong place shows); a limit keeps whole rows
 * only, and ranges past what is kept are refused, not cut, unless the pages
 * hold the whole table. */
static void page_bytes(const char *sql, uint64_t first, uint64_t count, struct strbuf *out)
{
    char q[512];
    snprintf(q, sizeof q, "SELECT * FROM (%s) LIMIT %llu OFFSET %llu", sql,
             (unsigned long long)count, (unsigned long long)first);
    duckdb_result res;
    sb_reset(out);
    CHECK(duckdb_query(con, q, &res) == DuckDBSuccess);
    char e[128];
    struct json_rows *enc = json_rows_create_for_result(&res, e, sizeof e);
    CHECK(enc != NULL);
    duckdb_data_chunk c;
    while (enc && (c = duckdb_fetch_chunk(res)) != NULL) {
        CHECK_EQ_INT(json_rows_encode_chunk(enc, c, out), 0);
        duckdb_destroy_data_chunk(&c);
    }
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
}

static bool range_is(const struct index_pages_range *r, const struct strbuf *want)
{
    if (r->length != want->len)
        return false;
    char *buf = malloc(r->length ? r->length : 1);
    bool ok = buf && pread(r->fd, buf, r->length, (off_t)r->offset) == (ssize_t)r->length &&
              memcmp(buf, want->buf, r->length) == 0;
    free(buf);
    return ok;
}

/* The gzip body index_pages_gzip_frame makes around the range's blocks
 * inflates (one gzip member, CRC and size checked by zlib) to head + the
 * rows + tail. True also when the range spans no whole block (no gzip). */
static bool gzip_is(const struct index_pages_range *r, const struct strbuf *want)
{
    if (r->gz_fd < 0)
        return r->length < 2 * IX_GZ_BLOCK;
    static const char head[] = "{\"data\":[", tail[] = "],\"page\":1}";
    struct strbuf zh, zt, all, plain;
    sb_init(&zh, 0);
    sb_init(&zt, 0);
    sb_init(&all, 0);
    sb_init(&plain, 0);
    bool ok = index_pages_gzip_frame(r, head, strlen(head), tail, strlen(tail), &zh, &zt) == 0;
    char *mid = malloc(r->gz_length + 1);
    ok = ok && mid && pread(r->gz_fd, mid, r->gz_length, (off_t)r->gz_offset) ==
                          (ssize_t)r->gz_length;
    ok = ok && sb_add(&all, zh.buf, zh.len) == 0 && sb_add(&all, mid, r->gz_length) == 0 &&
         sb_add(&all, zt.buf, zt.len) == 0;
    size_t n = strlen(head) + want->len + strlen(tail);
    char *out = malloc(n + 16);
    z_stream z = {0};
    if (ok && out && inflateInit2(&z, 16 + 15) == Z_OK) {
        z.next_in = (unsigned char *)all.buf;
        z.avail_in = (uInt)all.len;
        z.next_out = (unsigned char *)out;
        z.avail_out = (uInt)(n + 16);
        ok = inflate(&z, Z_FINISH) == Z_STREAM_END && z.total_out == n && z.avail_in == 0;
        inflateEnd(&z);
        sb_add(&plain, head, strlen(head));
        sb_add(&plain, want->buf, want->len);
        sb_add(&plain, tail, strlen(tail));
        ok = ok && memcmp(out, plain.buf, n) == 0;
    } else {
        ok = false;
    }
    free(out);
    free(mid);
    sb_release(&zh);
    sb_release(&zt);
    sb_release(&all);
    sb_release(&plain);
    return ok;
}

TEST(pre_rendered_pages)
{
    if (!store_dir) { /* a file only: without a directory there are none */
        pages_bytes = 1 << 20;
        struct index_fastpath *fp = build("SELECT range AS id FROM range(100)", CFG_INDEX_AUTO,
                                          NULL, 1000);
        pages_bytes = 0;
        CHECK(fp && index_pages_rows(fp) == 0 && index_fastpath_pages_bytes(fp) == 0);
        index_fastpath_destroy(fp);
        return;
    }
    const char *sql = "SELECT i AS id, CASE WHEN i % 3 = 0 THEN NULL ELSE 'v,\"' || i || "
                      "'},{' END AS s, i * 0.5 AS d, [i, NULL] AS l FROM range(5000) t(i)";
    pages_bytes = 1 << 20;
    struct index_fastpath *fp = build(sql, CFG_INDEX_AUTO, NULL, 1000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    CHECK_EQ_INT(index_pages_rows(fp), 5000);
    struct strbuf want;
    sb_init(&want, 0);
    page_bytes(sql, 0, 5000, &want);
    CHECK_EQ_INT(fp->pages->store.size, want.len + 5000 * 8);
    CHECK(fp->pages->n_gz == want.len / IX_GZ_BLOCK && fp->pages->n_gz >= 2);
    CHECK_EQ_INT(index_fastpath_pages_bytes(fp), fp->pages->store.size + fp->pages->gz.size);
    static const uint64_t ranges[][2] = {{0, 1}, {0, 5000}, {1, 1}, {1, 4999}, {2047, 2},
                                         {2048, 2048}, {4999, 1}, {1234, 777}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        struct index_pages_range r;
        CHECK_EQ_INT(index_pages_range(fp, ranges[i][0], ranges[i][1], false, &r),
                     INDEX_FAST_DONE);
        CHECK_EQ_INT(r.rows, ranges[i][1]);
        page_bytes(sql, ranges[i][0], ranges[i][1], &want);
        CHECK(range_is(&r, &want));
        CHECK(gzip_is(&r, &want));
    }
    /* the whole table is kept: a range past its end is cut there */
    struct index_pages_range r;
    CHECK_EQ_INT(index_pages_range(fp, 4990, 100, false, &r), INDEX_FAST_DONE);
    CHECK_EQ_INT(r.rows, 10);
    page_bytes(sql, 4990, 10, &want);
    CHECK(range_is(&r, &want));
    CHECK_EQ_INT(index_pages_range(fp, 5000, 1, false, &r), INDEX_FAST_NO);
    CHECK_EQ_INT(index_pages_range(fp, 0, 0, false, &r), INDEX_FAST_NO);
    index_fastpath_destroy(fp);

    /* 40 KB: the first rows only, whole, and nothing past them */
    pages_bytes = 40000;
    fp = build(sql, CFG_INDEX_AUTO, NULL, 1000);
    pages_bytes = 0;
    CHECK(fp != NULL);
    if (!fp)
        return;
    uint64_t kept = index_pages_rows(fp);
    CHECK(kept > 100 && kept < 5000);
    page_bytes(sql, 0, kept, &want);
    CHECK(want.len <= 40000);
    CHECK_EQ_INT(index_pages_range(fp, 0, kept, false, &r), INDEX_FAST_DONE);
    CHECK(range_is(&r, &want));
    CHECK_EQ_INT(index_pages_range(fp, kept - 10, 20, false, &r), INDEX_FAST_NO);
    CHECK_EQ_INT(index_pages_range(fp, kept, 1, false, &r), INDEX_FAST_NO);
    page_bytes(sql, 0, kept + 1, &want);
    CHECK(want.len > 40000); /* the next row would not have fit */
    sb_release(&want);
    index_fastpath_destroy(fp);
}

/* Range counts from sorted values: two bound searches give DuckDB's count for
 * every bound (inside, equal, outside the data, empty ranges), NULLs never
 * counted, doubles with NaN above +inf and -0 equal to +0, unsigned columns
 * against negative bounds. */
TEST(range_counts)
{
    CHECK(duckdb_query(con, "CREATE OR REPLACE TABLE rt AS SELECT i AS r, "
                            "CASE WHEN i % 17 = 0 THEN NULL ELSE (hash(i) % 2001)::BIGINT - 1000 "
                            "END AS v, "
                            "CASE i % 9 WHEN 0 THEN 'NaN'::DOUBLE WHEN 1 THEN -0.0::DOUBLE "
                            "WHEN 2 THEN 'inf'::DOUBLE WHEN 3 THEN '-inf'::DOUBLE WHEN 4 THEN NULL "
                            "ELSE ((hash(i) % 2001)::BIGINT - 1000) / 4.0 END AS d, "
                            "(hash(i * 7) % 250)::UTINYINT AS u, "
                            "TIMESTAMP '2024-01-01' + to_microseconds((hash(i) % 100000)::BIGINT) "
                            "AS ts, 's' || i AS s FROM range(9000) t(i)",
                       NULL) == DuckDBSuccess);
    struct index_fastpath *fp = build("SELECT * FROM rt", CFG_INDEX_AUTO, NULL, 100000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    CHECK(index_has_range(ix, 1) && index_has_range(ix, 2) && index_has_range(ix, 3) &&
          index_has_range(ix, 4));
    struct strbuf d;
    sb_init(&d, 0);
    index_fastpath_describe(fp, &d);
    CHECK_CONTAINS(d.buf, "sorted values for ranges");
    sb_release(&d);
    static const enum index_range_op ops[] = {INDEX_RANGE_GE, INDEX_RANGE_GT, INDEX_RANGE_LE,
                                              INDEX_RANGE_LT};
    unsigned seed = 12345;
    int bad = 0;
    for (int k = 0; k < 400 && bad < 5; k++) {
        /* integers: one or two comparisons */
        struct index_range_term t[2];
        size_t n = 1 + (size_t)(rand_r(&seed) % 2);
        char where[256];
        int w = 0;
        for (size_t j = 0; j < n; j++) {
            t[j] = (struct index_range_term){.op = ops[rand_r(&seed) % 4]};
            int r = rand_r(&seed) % 10;
            t[j].i = r == 0 ? INT64_MAX : r == 1 ? INT64_MIN : rand_r(&seed) % 2400 - 1200;
            w += snprintf(where + w, sizeof where - (size_t)w, "%sv %s %lld", j ? " AND " : "",
                          op_sql(t[j].op), (long long)t[j].i);
        }
        bad += !same_count(fp, 1, t, n, where);
        /* the same bounds on the unsigned column */
        w = 0;
        for (size_t j = 0; j < n; j++)
            w += snprintf(where + w, sizeof where - (size_t)w, "%su %s %lld", j ? " AND " : "",
                          op_sql(t[j].op), (long long)(t[j].i / 4));
        for (size_t j = 0; j < n; j++)
            t[j].i /= 4;
        bad += !same_count(fp, 3, t, n, where);
        /* doubles, the edges included */
        static const char *const dv[] = {"'-inf'::DOUBLE", "-0.0::DOUBLE", "0.0::DOUBLE",
                                         "'inf'::DOUBLE", "1e300::DOUBLE"};
        static const double dd[] = {-1.0 / 0.0, -0.0, 0.0, 1.0 / 0.0, 1e300};
        w = 0;
        for (size_t j = 0; j < n; j++) {
            t[j].is_double = true;
            int r = rand_r(&seed) % 8;
            char lit[64];
            if (r < 5) {
                t[j].d = dd[r];
                snprintf(lit, sizeof lit, "%s", dv[r]);
            } else {
                t[j].d = (rand_r(&seed) % 2400 - 1200) / 4.0;
                snprintf(lit, sizeof lit, "%.17g", t[j].d);
            }
            w += snprintf(where + w, sizeof where - (size_t)w, "%sd %s %s", j ? " AND " : "",
                          op_sql(t[j].op), lit);
        }
        bad += !same_count(fp, 2, t, n, where);
        /* timestamps (microseconds) */
        w = 0;
        for (size_t j = 0; j < n; j++) {
            t[j].is_double = false;
            int64_t us = rand_r(&seed) % 120000 - 10000;
            t[j].i = 1704067200000000LL + us; /* 2024-01-01 */
            w += snprintf(where + w, sizeof where - (size_t)w,
                          "%sts %s TIMESTAMP '2024-01-01' + to_microseconds(%lld)",
                          j ? " AND " : "", op_sql(t[j].op), (long long)us);
        }
        bad += !same_count(fp, 4, t, n, where);
    }
    CHECK_EQ_INT(bad, 0);
    /* a column without sorted values (a string) is not answered */
    uint64_t got;
    struct index_range_term t0 = {.op = INDEX_RANGE_GE};
    CHECK_EQ_INT(index_range_count(fp, 5, &t0, 1, false, &got), INDEX_FAST_NO);
    index_fastpath_destroy(fp);
    /* mode list keeps them for a listed column only; none keeps nothing */
    fp = build("SELECT * FROM rt", CFG_INDEX_LIST, "ts", 100000);
    CHECK(fp != NULL);
    ix = index_fastpath_index(fp);
    CHECK(fp && index_has_range(ix, 4) && !index_has_range(ix, 1) && !index_has_column(ix, 4));
    index_fastpath_destroy(fp);
    CHECK(build("SELECT * FROM rt", CFG_INDEX_NONE, NULL, 100000) == NULL);
}

/* A DECIMAL's double image is DuckDB's CAST(... AS DOUBLE), bit for bit, for
 * every storage width and scale: small values, values past 2^53 (DuckDB
 * splits them into integer part and fraction) and 128-bit ones (its own
 * int128 -> double). */
TEST(decimal_images_match_duckdb)
{
    static const struct {
        int w, sc;
    } types[] = {{4, 0},   {4, 1},   {4, 4},   {9, 3},   {9, 9},   {18, 0},  {18, 2},
                 {18, 4},  {18, 9},  {18, 15}, {18, 16}, {18, 17}, {18, 18}, {38, 0},
                 {38, 2},  {38, 10}, {38, 17}, {38, 18}, {38, 22}, {38, 23}, {38, 30},
                 {38, 38}};
    int bad = 0, n = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0] && bad < 5; ti++) {
        int w = types[ti].w, sc = types[ti].sc;
        {
            /* raw integers: small, random up to the width, around 2^53 */
            char sql[1024];
            /* the decimal from its text: r / 10^sc */
            snprintf(sql, sizeof sql,
                     "SELECT v, v::DOUBLE FROM (SELECT CASE i %% 3 WHEN 0 THEN "
                     "(hash(i) %% 20001)::HUGEINT - 10000 WHEN 1 THEN "
                     "((hash(i) >> 1)::HUGEINT * (hash(i * 7) >> (hash(i) %% 64))::HUGEINT) %% "
                     "(10::HUGEINT ** %d)::HUGEINT ELSE 9007199254740992::HUGEINT + i %% 9 - 4 "
                     "END * (CASE WHEN i %% 2 = 0 THEN 1 ELSE -1 END) AS r FROM range(1500) t(i)), "
                     "LATERAL (SELECT abs(r)::VARCHAR AS a), LATERAL (SELECT TRY_CAST("
                     "(CASE WHEN r < 0 THEN '-' ELSE '' END) || lpad(a, %d + 1, '0')[1:-%d-1] || "
                     "'.' || lpad(a, %d + 1, '0')[-%d:] AS DECIMAL(%d,%d)) AS v) "
                     "WHERE v IS NOT NULL",
                     w, sc, sc, sc, sc > 0 ? sc : 1, w, sc);
            if (sc == 0)
                snprintf(sql, sizeof sql,
                         "SELECT v, v::DOUBLE FROM (SELECT TRY_CAST(CASE i %% 2 WHEN 0 THEN "
                         "(hash(i) %% 20001)::HUGEINT - 10000 ELSE "
                         "((hash(i) >> 1)::HUGEINT * (hash(i * 7) >> (hash(i) %% 64))::HUGEINT) "
                         "%% (10::HUGEINT ** %d)::HUGEINT END AS DECIMAL(%d,0)) AS v "
                         "FROM range(1500) t(i)) WHERE v IS NOT NULL",
                         w, w);
            duckdb_result res;
            if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
                fprintf(stderr, "%s\n", duckdb_result_error(&res));
                duckdb_destroy_result(&res);
                bad++;
                continue;
            }
            duckdb_data_chunk c;
            while ((c = duckdb_fetch_chunk(res)) != NULL) {
                duckdb_vector v0 = duckdb_data_chunk_get_vector(c, 0);
                const double *want = duckdb_vector_get_data(duckdb_data_chunk_get_vector(c, 1));
                const void *raw = duckdb_vector_get_data(v0);
                for (idx_t r = 0; r < duckdb_data_chunk_get_size(c); r++) {
                    const duckdb_hugeint *h = raw;
                    double got = w == 4    ? ix_decimal_double(((const int16_t *)raw)[r], sc)
                                 : w == 9  ? ix_decimal_double(((const int32_t *)raw)[r], sc)
                                 : w == 18 ? ix_decimal_double(((const int64_t *)raw)[r], sc)
                                           : ix_decimal128_double(h[r], sc);
                    n++;
                    if (memcmp(&got, &want[r], sizeof got) != 0 && bad++ < 5)
                        fprintf(stderr, "DECIMAL(%d,%d): DuckDB %.17g, ours %.17g\n", w, sc,
                                want[r], got);
                }
                duckdb_destroy_data_chunk(&c);
            }
            duckdb_destroy_result(&res);
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 20000);
}

/* Range counts on TIMESTAMP_S/MS/NS, DECIMAL (every storage width) and FLOAT
 * columns equal DuckDB's for the bounds the query layer sends them: a
 * TIMESTAMP bound (compared as TIMESTAMP) against TIMESTAMP_S/MS, a
 * TIMESTAMP_NS one against TIMESTAMP_NS, DOUBLE against DECIMAL, FLOAT
 * against FLOAT (NaN above +inf, -0 equal to +0, ties on the values). */
TEST(range_counts_more_types)
{
    CHECK(duckdb_query(
              con,
              "CREATE OR REPLACE TABLE rm AS SELECT i AS r, "
              "CASE WHEN i % 13 = 0 THEN NULL WHEN i % 97 = 0 THEN 'infinity'::TIMESTAMP_S "
              "WHEN i % 89 = 0 THEN '-infinity'::TIMESTAMP_S ELSE (TIMESTAMP '2024-01-01' + "
              "to_seconds((hash(i) % 5000)::BIGINT))::TIMESTAMP_S END AS ts_s, "
              "CASE WHEN i % 11 = 0 THEN NULL WHEN i % 97 = 0 THEN 'infinity'::TIMESTAMP_MS "
              "ELSE (TIMESTAMP '2024-01-01' + "
              "to_milliseconds((hash(i) % 5000000)::BIGINT))::TIMESTAMP_MS END AS ts_ms, "
              "CASE WHEN i % 7 = 0 THEN NULL ELSE make_timestamp_ns(1704067200000000000 + "
              "(hash(i) % 5000000000)::BIGINT) END AS ts_ns, "
              "CAST(CAST((hash(i) % 2001)::BIGINT - 1000 AS DECIMAL(18,0)) * 0.1 AS DECIMAL(4,1)) "
              "AS d4, "
              "CAST(CAST((hash(i * 3) % 2000001)::BIGINT - 1000000 AS DECIMAL(18,0)) * 0.001 AS "
              "DECIMAL(9,3)) AS d9, "
              "CASE WHEN i % 5 = 0 THEN NULL ELSE CAST(CAST(CASE WHEN i % 2 = 0 THEN "
              "(hash(i * 5) % 20001)::BIGINT - 10000 ELSE (hash(i * 5) % 1999999999999999999)"
              "::BIGINT - 999999999999999999 END AS DECIMAL(18,0)) * 0.0001 AS DECIMAL(18,4)) END "
              "AS d18, "
              "CAST(CAST((hash(i * 11) >> (hash(i) % 40))::HUGEINT * 1000003 - 500000 AS "
              "DECIMAL(38,0)) * 0.0000000001 AS DECIMAL(38,10)) AS d38, "
              "CASE i % 10 WHEN 0 THEN 'NaN'::FLOAT WHEN 1 THEN -0.0::FLOAT WHEN 2 THEN "
              "'inf'::FLOAT WHEN 3 THEN '-inf'::FLOAT WHEN 4 THEN NULL WHEN 5 THEN "
              "(16777216 + i % 3)::FLOAT ELSE (((hash(i) % 2001)::BIGINT - 1000) / 8.0)::FLOAT "
              "END AS flt FROM range(8000) t(i)",
              NULL) == DuckDBSuccess);
    struct index_fastpath *fp = build("SELECT * FROM rm", CFG_INDEX_AUTO, NULL, 100000);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);
    for (size_t c = 1; c <= 8; c++)
        CHECK(index_has_range(ix, c));
    /* bounds: values of the table (ties), their neighbours, and others */
    double img[8][64];
    {
        duckdb_result res;
        CHECK(duckdb_query(con, "SELECT d4::DOUBLE, d9::DOUBLE, d18::DOUBLE, d38::DOUBLE, "
                                "flt::DOUBLE FROM rm WHERE r % 125 = 1 LIMIT 64",
                           &res) == DuckDBSuccess);
        duckdb_data_chunk ch = duckdb_fetch_chunk(res);
        CHECK(ch && duckdb_data_chunk_get_size(ch) == 64);
        for (size_t c = 0; ch && c < 5; c++) {
            duckdb_vector v = duckdb_data_chunk_get_vector(ch, c);
            uint64_t *valid = duckdb_vector_get_validity(v);
            for (size_t k = 0; k < 64; k++)
                img[c][k] = !valid || duckdb_validity_row_is_valid(valid, k)
                                ? ((const double *)duckdb_vector_get_data(v))[k]
                                : 0.5;
        }
        if (ch)
            duckdb_destroy_data_chunk(&ch);
        duckdb_destroy_result(&res);
    }
    static const enum index_range_op ops[] = {INDEX_RANGE_GE, INDEX_RANGE_GT, INDEX_RANGE_LE,
                                              INDEX_RANGE_LT};
    static const char *const names[] = {"ts_s", "ts_ms", "ts_ns", "d4", "d9", "d18", "d38", "flt"};
    unsigned seed = 4242;
    int bad = 0;
    for (int k = 0; k < 40 && bad < 5; k++) {
        /* one DuckDB query a round: a count for each column */
        char where[8][512];
        uint64_t got[8];
        for (size_t c = 1; c <= 8; c++) {
            struct index_range_term t[2];
            size_t n = 1 + (size_t)(rand_r(&seed) % 2);
            int w = 0;
            for (size_t j = 0; j < n; j++) {
                t[j] = (struct index_range_term){.op = ops[rand_r(&seed) % 4]};
                int r = rand_r(&seed) % 10;
                char lit[128];
                if (c <= 2) {
                    /* microseconds: on the second (ms), off it, outside */
                    int64_t us = (int64_t)(rand_r(&seed) % 5200000) * (c == 1 ? 1000 : 1) -
                                 100000 * (c == 1 ? 1000 : 1);
                    if (r < 4)
                        us -= us % (c == 1 ? 1000000 : 1000);
                    else if (r == 4)
                        us += 1;
                    t[j].i = 1704067200000000LL + us;
                    snprintf(lit, sizeof lit, "make_timestamp(%lld)", (long long)t[j].i);
                } else if (c == 3) {
                    int64_t ns = (int64_t)(rand_r(&seed) % 520000) * 10000 +
                                 (r < 5 ? rand_r(&seed) % 10000 : 0) - 100000000;
                    t[j].i = 1704067200000000000LL + ns;
                    snprintf(lit, sizeof lit, "make_timestamp_ns(%lld)", (long long)t[j].i);
                } else {
                    t[j].is_double = true;
                    double d = img[c - 4][rand_r(&seed) % 64];
                    if (r == 0)
                        d = nextafter(d, 1e300);
                    else if (r == 1)
                        d = nextafter(d, -1e300);
                    else if (r == 2)
                        d = (rand_r(&seed) % 4000 - 2000) / 7.0;
                    else if (r == 3)
                        d = rand_r(&seed) % 2 ? 0.1 : -0.0;
                    else if (r == 4 && c == 8)
                        d = rand_r(&seed) % 2 ? 16777217.0 : 1.0 / 0.0;
                    t[j].d = d;
                    if (r == 5 && c == 8) { /* an integer against FLOAT: cast to FLOAT */
                        t[j].is_double = false;
                        t[j].i = 16777215 + rand_r(&seed) % 5;
                        snprintf(lit, sizeof lit, "CAST(%lld AS FLOAT)", (long long)t[j].i);
                    } else if (isinf(d)) {
                        snprintf(lit, sizeof lit, "CAST('%sinf'::DOUBLE AS %s)", d < 0 ? "-" : "",
                                 c == 8 ? "FLOAT" : "DOUBLE");
                    } else {
                        /* from text: a bare 0.054599999999999996 is a DECIMAL
                         * literal, and its DOUBLE is not always the same */
                        snprintf(lit, sizeof lit, "CAST('%.17g'::DOUBLE AS %s)", d,
                                 c == 8 ? "FLOAT" : "DOUBLE");
                    }
                }
                w += snprintf(where[c - 1] + w, sizeof where[0] - (size_t)w, "%s%s %s %s",
                              j ? " AND " : "", names[c - 1], op_sql(t[j].op), lit);
            }
            got[c - 1] = UINT64_MAX;
            CHECK_EQ_INT(index_range_count(fp, c, t, n, false, &got[c - 1]), INDEX_FAST_DONE);
        }
        struct strbuf q;
        sb_init(&q, 0);
        for (size_t c = 0; c < 8; c++)
            sb_addf(&q, "%scount(*) FILTER (WHERE %s)::BIGINT", c ? ", " : "SELECT ", where[c]);
        sb_adds(&q, " FROM rm");
        duckdb_result res;
        duckdb_data_chunk ch = NULL;
        if (duckdb_query(con, q.buf, &res) == DuckDBSuccess)
            ch = duckdb_fetch_chunk(res);
        else
            fprintf(stderr, "%s\n", duckdb_result_error(&res));
        CHECK(ch != NULL);
        for (size_t c = 0; ch && c < 8; c++) {
            duckdb_vector v = duckdb_data_chunk_get_vector(ch, c);
            int64_t want = ((int64_t *)duckdb_vector_get_data(v))[0];
            if ((int64_t)got[c] != want && bad++ < 5)
                fprintf(stderr, "%s: index %llu, DuckDB %lld\n", where[c],
                        (unsigned long long)got[c], (long long)want);
        }
        if (ch)
            duckdb_destroy_data_chunk(&ch);
        duckdb_destroy_result(&res);
        sb_release(&q);
    }
    CHECK_EQ_INT(bad, 0);
    index_fastpath_destroy(fp);
}

int main(void)
{
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
    static const struct tl_case cases[] = {
        TEST_CASE(frames_for_monotone_integers), TEST_CASE(range_counts_from_frames),
        TEST_CASE(unit_frames_read_nothing),
        TEST_CASE(hash_buckets_for_unordered_keys),
        TEST_CASE(list_mode), TEST_CASE(equality_index_and_of_ors),
        TEST_CASE(empty_string_first_key), TEST_CASE(pages_and_bounds),
        TEST_CASE(cells_match_the_json_encoder), TEST_CASE(long_values), TEST_CASE(raw_and_compressed_blocks),
        TEST_CASE(memory_budget),
        TEST_CASE(nowait_reads_of_a_cold_file), TEST_CASE(range_counts),
        TEST_CASE(decimal_images_match_duckdb), TEST_CASE(range_counts_more_types),
        TEST_CASE(pre_rendered_pages), TEST_CASE(range_rows_of_never_decreasing_columns)};
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    char dir[] = "/tmp/vt-test-index-XXXXXX";
    store_dir = mkdtemp(dir);
    if (store_dir)
        rc |= tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    if (store_dir)
        rmdir(store_dir);
    sb_release(&g.json);
    index_thread_release();
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
