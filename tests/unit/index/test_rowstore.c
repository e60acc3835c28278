/* The row store: round trip of cells, projection, blocks, cursor reuse. */
#include <stdio.h>
#include <string.h>

#include "index/rowstore.h"
#include "testlib.h"

static struct rowstore *make(size_t rows)
{
    const char *names[] = {"id", "name", "we\"ird"};
    struct rowstore_builder *b = rowstore_builder_create(3, names);
    for (size_t r = 0; r < rows; r++) {
        char cells[128];
        uint32_t ends[3];
        int n1 = snprintf(cells, sizeof cells, "%zu", r);
        ends[0] = (uint32_t)n1;
        int n2 = snprintf(cells + n1, sizeof cells - n1, "\"row %zu\"", r);
        ends[1] = (uint32_t)(n1 + n2);
        const char *v = r % 3 ? "null" : "[1,{\"a\":2}]";
        memcpy(cells + ends[1], v, strlen(v));
        ends[2] = ends[1] + (uint32_t)strlen(v);
        rowstore_builder_add_row(b, cells, ends);
    }
    return rowstore_builder_finish(b);
}

TEST(round_trip_all_columns)
{
    struct rowstore *rs = make(1000);
    struct rowstore_cursor *cur = rowstore_cursor_create();
    CHECK_EQ_INT(rowstore_rows(rs), 1000);
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(rowstore_write_row(rs, cur, 0, NULL, 0, &out), 0);
    CHECK_EQ_STR(out.buf, "{\"id\":0,\"name\":\"row 0\",\"we\\\"ird\":[1,{\"a\":2}]}");
    sb_reset(&out);
    CHECK_EQ_INT(rowstore_write_row(rs, cur, 999, NULL, 0, &out), 0);
    CHECK_EQ_STR(out.buf, "{\"id\":999,\"name\":\"row 999\",\"we\\\"ird\":[1,{\"a\":2}]}");
    sb_reset(&out);
    CHECK_EQ_INT(rowstore_write_row(rs, cur, 1000, NULL, 0, &out), -1);
    CHECK(rowstore_bytes(rs) > 0);
    sb_release(&out);
    rowstore_cursor_destroy(cur);
    rowstore_destroy(rs);
}

TEST(projection_and_order)
{
    struct rowstore *rs = make(40);
    struct rowstore_cursor *cur = rowstore_cursor_create();
    struct strbuf out;
    sb_init(&out, 0);
    size_t cols[] = {1, 0};
    CHECK_EQ_INT(rowstore_write_row(rs, cur, 17, cols, 2, &out), 0);
    CHECK_EQ_STR(out.buf, "{\"name\":\"row 17\",\"id\":17}");
    /* every row, in and across blocks, decodes to its own values */
    for (uint32_t r = 0; r < 40; r++) {
        sb_reset(&out);
        size_t one[] = {0};
        rowstore_write_row(rs, cur, r, one, 1, &out);
        char want[32];
        snprintf(want, sizeof want, "{\"id\":%u}", r);
        CHECK_EQ_STR(out.buf, want);
    }
    sb_release(&out);
    rowstore_cursor_destroy(cur);
    rowstore_destroy(rs);
}

TEST(empty_store)
{
    struct rowstore *rs = make(0);
    struct rowstore_cursor *cur = rowstore_cursor_create();
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(rowstore_rows(rs), 0);
    CHECK_EQ_INT(rowstore_write_row(rs, cur, 0, NULL, 0, &out), -1);
    sb_release(&out);
    rowstore_cursor_destroy(cur);
    rowstore_destroy(rs);
}

RUN_TESTS(TEST_CASE(round_trip_all_columns), TEST_CASE(projection_and_order), TEST_CASE(empty_store))
