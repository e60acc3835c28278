/* The equality index: build from DuckDB chunks, lookups, cardinality cap,
 * list mode, NULLs, and AND-of-ORs matching. */
#include <duckdb.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "index/index.h"
#include "testlib.h"

static duckdb_database db;
static duckdb_connection con;

/* Builds an index over the rows of `sql` with the given settings. */
static struct vt_index *build(const char *sql, enum cfg_index_mode mode, const char *list_col,
                              int64_t max_card, char *warn, size_t warnlen)
{
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        fprintf(stderr, "%s\n", duckdb_result_error(&res));
        return NULL;
    }
    size_t n = duckdb_column_count(&res);
    const char *names[16];
    duckdb_type types[16];
    for (size_t i = 0; i < n; i++) {
        names[i] = duckdb_column_name(&res, i);
        types[i] = duckdb_column_type(&res, i);
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
    struct index_builder *b = index_builder_create(n, names, types, &cfg, warn, warnlen);
    struct vt_index *ix = NULL;
    if (b) {
        duckdb_data_chunk chunk;
        while ((chunk = duckdb_fetch_chunk(res)) != NULL) {
            index_builder_add_chunk(b, chunk);
            duckdb_destroy_data_chunk(&chunk);
        }
        ix = index_builder_finish(b);
    }
    duckdb_destroy_result(&res);
    return ix;
}

static struct index_key ikey(int64_t v)
{
    struct index_key k = {.domain = INDEX_DOMAIN_INT, .i = v};
    return k;
}

static struct index_key skey(const char *s)
{
    struct index_key k = {.domain = INDEX_DOMAIN_STRING, .s = s, .len = strlen(s)};
    return k;
}

TEST(sorted_keys_for_high_cardinality_integers)
{
    /* Negative keys, duplicates and NULLs past the cardinality cap; strings
     * past it get hashed sorted keys (see sorted_key_hashes_for_strings). */
    struct vt_index *ix =
        build("SELECT CASE WHEN i % 10 = 0 THEN NULL ELSE (i % 3000) - 1500 END AS k, "
              "md5(i::VARCHAR) AS s, i::UBIGINT * 1000000000000 AS u FROM range(6000) t(i)",
              CFG_INDEX_AUTO, NULL, 1000, NULL, 0);
    CHECK(ix != NULL);
    if (!ix)
        return;
    CHECK(index_column_sorted(ix, 0));
    CHECK(!index_column_hashed(ix, 0));
    CHECK(index_column_hashed(ix, 1));
    CHECK(index_column_sorted(ix, 2));
    for (int v = -1500; v < 1500; v += 7) {
        struct index_key k = ikey(v);
        size_t n;
        const uint32_t *rows = index_lookup(ix, 0, &k, &n);
        size_t expect = 0;
        for (int i = 0; i < 6000; i++)
            expect += i % 10 != 0 && (i % 3000) - 1500 == v;
        CHECK_EQ_INT(n, expect);
        for (size_t j = 0; rows && j < n; j++) {
            CHECK_EQ_INT((int)(rows[j] % 3000) - 1500, v);
            if (j)
                CHECK(rows[j] > rows[j - 1]);
        }
    }
    struct index_key absent = ikey(99999);
    size_t n;
    CHECK(index_lookup(ix, 0, &absent, &n) == NULL && n == 0);
    struct index_key u = {.domain = INDEX_DOMAIN_UINT, .u = 4321ull * 1000000000000ull};
    const uint32_t *r = index_lookup(ix, 2, &u, &n);
    CHECK(n == 1 && r && r[0] == 4321);
    /* AND of a sorted-keys term and a hash-index term. */
    uint64_t count = 0;
    struct index_key ks[] = {ikey(-1499), ikey(7), ikey(-1499)};
    struct index_term terms[] = {{0, ks, 3}};
    CHECK_EQ_INT(index_count(ix, terms, 1, &count), 0);
    size_t expect = 0;
    for (int i = 0; i < 6000; i++) {
        int v = (i % 3000) - 1500;
        expect += i % 10 != 0 && (v == -1499 || v == 7);
    }
    CHECK_EQ_INT(count, expect);
    struct index_rows rows;
    CHECK_EQ_INT(index_match(ix, terms, 1, &rows), 0);
    CHECK_EQ_INT(rows.n, expect);
    index_rows_free(&rows);
    index_destroy(ix);
}

TEST(sorted_key_hashes_for_strings)
{
    /* Past max_cardinality (1000): an md5 token (unique), a code with up to 4
     * rows per value (kept), one with 5 (left to DuckDB), long
     * free text (left to DuckDB), and NULLs. */
    struct vt_index *ix = build(
        "SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE md5(i::VARCHAR) END AS tok, "
        "'c' || (i // 4) AS code4, 'c' || (i // 5) AS code5, "
        "repeat('free text ', 8) || i AS txt FROM range(6000) t(i)",
        CFG_INDEX_AUTO, NULL, 1000, NULL, 0);
    CHECK(ix != NULL);
    if (!ix)
        return;
    CHECK(index_column_hashed(ix, 0));
    CHECK(index_column_sorted(ix, 0));
    CHECK_EQ_INT(index_column_keys(ix, 0), 6000 - 546);
    CHECK(index_column_bytes(ix, 0) >= (6000 - 546) * 12);
    CHECK(index_column_hashed(ix, 1));
    CHECK(!index_has_column(ix, 2)); /* 5 rows per value */
    CHECK(!index_has_column(ix, 3)); /* 80+ bytes per value */
    /* A hit is the run of the value's hash: here exactly its rows. */
    char tok[64];
    duckdb_result res;
    CHECK(duckdb_query(con, "SELECT md5('4321')", &res) == DuckDBSuccess);
    char *v = duckdb_value_varchar(&res, 0, 0);
    snprintf(tok, sizeof tok, "%s", v);
    duckdb_free(v);
    duckdb_destroy_result(&res);
    struct index_key k = skey(tok);
    size_t n;
    const uint32_t *rows = index_lookup(ix, 0, &k, &n);
    CHECK(n == 1 && rows && rows[0] == 4321);
    struct index_key absent = skey("not a token");
    CHECK(index_lookup(ix, 0, &absent, &n) == NULL && n == 0);
    /* code4: 4 rows per value, sorted; `in` with a repeated value. */
    struct index_key ks[] = {skey("c10"), skey("c1499"), skey("c10")};
    struct index_term terms[] = {{1, ks, 3}};
    struct index_rows r;
    CHECK_EQ_INT(index_match(ix, terms, 1, &r), 0);
    CHECK_EQ_INT(r.n, 8);
    for (size_t i = 0; i < r.n; i++) {
        CHECK(r.rows[i] / 4 == 10 || r.rows[i] / 4 == 1499);
        if (i)
            CHECK(r.rows[i] > r.rows[i - 1]);
    }
    index_rows_free(&r);
    uint64_t count = 0;
    CHECK_EQ_INT(index_count(ix, terms, 1, &count), 0);
    CHECK_EQ_INT(count, 8);
    index_destroy(ix);
    /* List mode keeps its equality index for strings, whatever the count. */
    ix = build("SELECT md5(i::VARCHAR) AS tok FROM range(3000) t(i)", CFG_INDEX_LIST, "tok", 1000,
               NULL, 0);
    CHECK(ix != NULL && index_has_column(ix, 0) && !index_column_sorted(ix, 0));
    index_destroy(ix);
}

TEST(auto_mode_indexes_low_cardinality_columns)
{
    struct vt_index *ix = build("SELECT i::INTEGER AS id, 'cat' || (i % 7) AS cat, i % 2 = 0 AS even, "
                                "i * 0.5 AS d, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 END AS m, "
                                "i % 500 AS g FROM range(10000) t(i)",
                                CFG_INDEX_AUTO, NULL, 1000, NULL, 0);
    CHECK(ix != NULL);
    if (!ix)
        return;
    /* 10000 distinct >= 1000: out of the equality index, into sorted keys */
    CHECK(index_column_sorted(ix, 0));
    CHECK_EQ_INT(index_column_keys(ix, 0), 10000);
    CHECK(index_has_column(ix, 1));
    CHECK(index_has_column(ix, 2));
    CHECK(!index_has_column(ix, 3));  /* DOUBLE is not eligible */
    CHECK(index_has_column(ix, 4));
    CHECK(index_has_column(ix, 5));
    CHECK_EQ_INT(index_column_keys(ix, 1), 7);
    /* 7 keys over 10000 rows: dense, counts only */
    CHECK(index_column_dense(ix, 1));
    CHECK(!index_column_dense(ix, 5));
    CHECK(index_has_positions(ix));
    size_t n;
    struct index_key k = skey("cat3");
    CHECK(index_lookup(ix, 1, &k, &n) == NULL);
    CHECK(n == 1428 || n == 1429);
    struct index_key t = {.domain = INDEX_DOMAIN_BOOL, .i = 1};
    index_lookup(ix, 2, &t, &n);
    CHECK_EQ_INT(n, 5000);
    /* NULLs are not indexed: m = 0 only where i%3==0 and i%5!=0. */
    struct index_key z = ikey(0);
    index_lookup(ix, 4, &z, &n);
    size_t expect = 0;
    for (int i = 0; i < 10000; i++)
        expect += i % 3 == 0 && i % 5 != 0;
    CHECK_EQ_INT(n, expect);
    /* a sparse column keeps sorted positions */
    struct index_key g = ikey(123);
    const uint32_t *rows = index_lookup(ix, 5, &g, &n);
    CHECK_EQ_INT(n, 20);
    for (size_t i = 0; rows && i < n; i++) {
        CHECK_EQ_INT(rows[i] % 500, 123);
        if (i)
            CHECK(rows[i] > rows[i - 1]);
    }
    struct index_key missing = skey("nope");
    CHECK(index_lookup(ix, 1, &missing, &n) == NULL && n == 0);
    CHECK(ix->bytes > 0);
    /* counts of one term come from a dense column; positions do not */
    struct index_key in_keys[] = {skey("cat1"), skey("cat2"), skey("cat1")};
    struct index_term dense_term[] = {{1, in_keys, 3}};
    uint64_t cnt;
    CHECK_EQ_INT(index_count(ix, dense_term, 1, &cnt), 0);
    CHECK_EQ_INT(cnt, 1429 + 1429);
    struct index_rows out;
    CHECK_EQ_INT(index_match(ix, dense_term, 1, &out), INDEX_NEEDS_POSITIONS);
    struct index_term two[] = {{5, &g, 1}, {1, in_keys, 1}};
    CHECK_EQ_INT(index_count(ix, two, 2, &cnt), INDEX_NEEDS_POSITIONS);
    index_destroy(ix);
}

TEST(list_mode_ignores_cardinality)
{
    char warn[200];
    struct vt_index *ix = build("SELECT i AS id, 'x' || i AS name FROM range(50000) t(i)",
                                CFG_INDEX_LIST,
                                "id", 10, warn, sizeof warn);
    CHECK(ix != NULL);
    if (!ix)
        return;
    CHECK(index_has_column(ix, 0));
    CHECK(!index_has_column(ix, 1));
    size_t n;
    struct index_key k = ikey(4242);
    const uint32_t *rows = index_lookup(ix, 0, &k, &n);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(rows[0], 4242);
    CHECK_EQ_STR(warn, "");
    index_destroy(ix);
}

TEST(list_mode_warns_on_bad_columns)
{
    char warn[200];
    struct vt_index *ix = build("SELECT 1.5 AS d", CFG_INDEX_LIST, "d", 10, warn, sizeof warn);
    CHECK(ix == NULL);
    CHECK_CONTAINS(warn, "cannot be indexed");
    ix = build("SELECT 1 AS a", CFG_INDEX_LIST, "zz", 10, warn, sizeof warn);
    CHECK(ix == NULL);
    CHECK_CONTAINS(warn, "no column named \"zz\"");
}

TEST(mode_none_builds_nothing)
{
    CHECK(build("SELECT 1 AS a", CFG_INDEX_NONE, NULL, 10, NULL, 0) == NULL);
}

TEST(match_and_of_ors)
{
    struct vt_index *ix = build("SELECT i % 10 AS a, 'k' || (i % 3) AS b, i::UBIGINT % 4 AS u "
                                "FROM range(600) t(i)",
                                CFG_INDEX_AUTO, NULL, 1000, NULL, 0);
    CHECK(ix != NULL);
    if (!ix)
        return;
    struct index_key a_keys[] = {ikey(1), ikey(2), ikey(1)};
    struct index_key b_keys[] = {skey("k0")};
    struct index_term terms[] = {{0, a_keys, 3}, {1, b_keys, 1}};
    struct index_rows out;
    CHECK_EQ_INT(index_match(ix, terms, 2, &out), 0);
    size_t expect = 0;
    for (int i = 0; i < 600; i++)
        expect += (i % 10 == 1 || i % 10 == 2) && i % 3 == 0;
    CHECK(!index_column_dense(ix, 0) && !index_column_dense(ix, 1) && !index_column_dense(ix, 2));
    CHECK_EQ_INT(out.n, expect);
    for (size_t i = 0; i < out.n; i++) {
        uint32_t r = out.rows[i];
        CHECK((r % 10 == 1 || r % 10 == 2) && r % 3 == 0);
        if (i)
            CHECK(out.rows[i] > out.rows[i - 1]);
    }
    index_rows_free(&out);
    struct index_key u = {.domain = INDEX_DOMAIN_UINT, .u = 3};
    struct index_term t2[] = {{2, &u, 1}};
    CHECK_EQ_INT(index_match(ix, t2, 1, &out), 0);
    CHECK_EQ_INT(out.n, 150);
    CHECK(out.owned == NULL); /* a single key borrows the posting list */
    index_rows_free(&out);
    /* Wrong domain finds nothing. */
    struct index_key wrong = skey("1");
    struct index_term t3[] = {{0, &wrong, 1}};
    CHECK_EQ_INT(index_match(ix, t3, 1, &out), 0);
    CHECK_EQ_INT(out.n, 0);
    index_destroy(ix);
}

/* An empty string as the first key of a column: its key store is still
 * empty, and no NULL pointer may reach memcpy/memcmp (UBSan aborts). */
TEST(empty_string_first_key)
{
    struct vt_index *ix = build("SELECT CASE WHEN i = 0 THEN NULL WHEN i % 3 = 1 THEN '' "
                                "ELSE 'x' || (i % 3) END AS s FROM range(30) t(i)",
                                CFG_INDEX_AUTO, NULL, 100, NULL, 0);
    CHECK(ix != NULL);
    if (!ix)
        return;
    CHECK(index_has_column(ix, 0));
    CHECK_EQ_INT(index_column_keys(ix, 0), 3);
    size_t n;
    struct index_key e = skey("");
    const uint32_t *rows = index_lookup(ix, 0, &e, &n);
    CHECK_EQ_INT(n, 10);
    for (size_t i = 0; rows && i < n; i++)
        CHECK_EQ_INT(rows[i] % 3, 1);
    struct index_key x = skey("x2");
    index_lookup(ix, 0, &x, &n);
    CHECK_EQ_INT(n, 10);
    index_destroy(ix);
}

int main(void)
{
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
    static const struct tl_case cases[] = {
        TEST_CASE(sorted_keys_for_high_cardinality_integers), TEST_CASE(sorted_key_hashes_for_strings),
        TEST_CASE(auto_mode_indexes_low_cardinality_columns), TEST_CASE(list_mode_ignores_cardinality),
        TEST_CASE(list_mode_warns_on_bad_columns), TEST_CASE(mode_none_builds_nothing),
        TEST_CASE(match_and_of_ors), TEST_CASE(empty_string_first_key)};
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
