/*
 * Deletion vectors: the formats (Z85, the RoaringBitmapArray, the framed
 * vector file) checked against the protocol's own examples and against
 * vectors written here from the specification (Roaring buckets serialized by
 * CRoaring, the rest by hand), then hand-built tables whose files carry
 * inline, UUID-named and absolute-path vectors, a vector replaced by a newer
 * one in either action order, and the corpus table the issue names.
 */
#include <jansson.h>
#include <roaring/roaring.h>
#include <zlib.h>

#include "delta_testutil.h"

static struct tduck T;

static const char Z85[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          ".-:+=^!/*?&<>()[]{}@%$#";

/* Z85 of n bytes (padded with zeros to a multiple of 4). */
static char *z85(const unsigned char *b, size_t n)
{
    size_t groups = (n + 3) / 4;
    char *out = calloc(groups * 5 + 1, 1);
    for (size_t g = 0; g < groups; g++) {
        uint32_t v = 0;
        for (int k = 0; k < 4; k++)
            v = v << 8 | (g * 4 + k < n ? b[g * 4 + k] : 0);
        for (int k = 4; k >= 0; k--) {
            out[g * 5 + k] = Z85[v % 85];
            v /= 85;
        }
    }
    return out;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_be32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * (3 - i)));
}

/* A RoaringBitmapArray holding `pos` (sorted), as the protocol lays it out. */
static unsigned char *rba(const uint64_t *pos, size_t n, size_t *out_n)
{
    unsigned char *buf = malloc(12);
    size_t len = 12, nb = 0;
    put_le32(buf, 1681511377u);
    for (size_t i = 0; i < n;) {
        uint32_t key = (uint32_t)(pos[i] >> 32);
        roaring_bitmap_t *bm = roaring_bitmap_create();
        for (; i < n && (uint32_t)(pos[i] >> 32) == key; i++)
            roaring_bitmap_add(bm, (uint32_t)pos[i]);
        roaring_bitmap_run_optimize(bm);
        size_t sz = roaring_bitmap_portable_size_in_bytes(bm);
        buf = realloc(buf, len + 4 + sz);
        put_le32(buf + len, key);
        roaring_bitmap_portable_serialize(bm, (char *)buf + len + 4);
        len += 4 + sz;
        nb++;
        roaring_bitmap_free(bm);
    }
    put_le32(buf + 4, (uint32_t)nb);
    put_le32(buf + 8, 0);
    *out_n = len;
    return buf;
}

/* A vector file: version byte, then each vector framed (size, bytes, CRC). */
static void write_dv_file(const char *path, unsigned char *const *v, const size_t *n, size_t k,
                          long long *out_offsets)
{
    FILE *f = fopen(path, "wb");
    fputc(1, f);
    for (size_t i = 0; i < k; i++) {
        out_offsets[i] = ftell(f);
        unsigned char h[4];
        put_be32(h, (uint32_t)n[i]);
        fwrite(h, 1, 4, f);
        fwrite(v[i], 1, n[i], f);
        put_be32(h, (uint32_t)crc32(crc32(0L, Z_NULL, 0), v[i], (uInt)n[i]));
        fwrite(h, 1, 4, f);
    }
    fclose(f);
}

TEST(z85_and_the_protocol_examples)
{
    /* ZeroMQ's own test vector. */
    unsigned char out[64];
    size_t n;
    CHECK(delta_z85_decode("HelloWorld", 10, out, sizeof out, &n));
    CHECK_EQ_INT(n, 8);
    static const unsigned char hello[] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
    CHECK(memcmp(out, hello, 8) == 0);
    CHECK(!delta_z85_decode("Hello", 4, out, sizeof out, &n));       /* not a multiple of 5 */
    CHECK(!delta_z85_decode("Hell~", 5, out, sizeof out, &n));       /* not in the alphabet */
    CHECK(!delta_z85_decode("#####", 5, out, sizeof out, &n));       /* over 2^32 */
    CHECK(!delta_z85_decode("HelloWorld", 10, out, 4, &n));          /* too long for out */

    /* An inline vector (rows 3, 4, 7, 11, 18, 29, as in the protocol's
     * example 3) in the portable layout writers use. */
    static const uint64_t want[] = {3, 4, 7, 11, 18, 29};
    size_t len;
    unsigned char *bytes = rba(want, 6, &len);
    char *text = z85(bytes, len);
    struct delta_dv_desc d = {.storage = 'i', .path_or_inline = text, .offset = -1,
                              .size_in_bytes = (int64_t)len, .cardinality = 6};
    struct delta_dv *dv = NULL;
    struct vt_error err = {0};
    CHECK_EQ_INT(delta_dv_decode_inline(&d, &dv, &err), VT_ERR_OK);
    CHECK_EQ_INT(delta_dv_cardinality(dv), 6);
    for (uint64_t p = 0; p < 40; p++) {
        bool in = false;
        for (size_t i = 0; i < 6; i++)
            in = in || want[i] == p;
        CHECK(delta_dv_contains(dv, p) == in);
    }
    CHECK_EQ_INT(delta_dv_range_cardinality(dv, 4, 12), 3);
    delta_dv_free(dv);
    d.size_in_bytes = (int64_t)len + 4; /* more than the text holds */
    CHECK_EQ_INT(delta_dv_decode_inline(&d, &dv, &err), VT_ERR_SOURCE_UNAVAILABLE);
    free(text);
    free(bytes);

    /* The older native layout Delta's readers accept: magic 1681511376, a
     * 4-byte count, then each bitmap (keys 0, 1, 2: the middle one empty)
     * preceded by its size. */
    roaring_bitmap_t *bms[3] = {roaring_bitmap_of(2, 5, 6), roaring_bitmap_create(),
                                roaring_bitmap_of(1, 9)};
    unsigned char nat[512];
    size_t nl = 8;
    put_le32(nat, 1681511376u);
    put_le32(nat + 4, 3);
    for (int i = 0; i < 3; i++) {
        size_t sz = roaring_bitmap_portable_size_in_bytes(bms[i]);
        put_le32(nat + nl, (uint32_t)sz);
        roaring_bitmap_portable_serialize(bms[i], (char *)nat + nl + 4);
        nl += 4 + sz;
        roaring_bitmap_free(bms[i]);
    }
    CHECK_EQ_INT(delta_dv_parse(nat, nl, 0, &dv, &err), VT_ERR_OK);
    CHECK_EQ_INT(delta_dv_cardinality(dv), 3);
    CHECK(delta_dv_contains(dv, 5) && delta_dv_contains(dv, (2ull << 32) + 9));
    CHECK(!delta_dv_contains(dv, 9) && !delta_dv_contains(dv, (1ull << 32) + 9));
    delta_dv_free(dv);

    /* "JSON Example 1": the UUID and prefix name the file. */
    struct delta_dv_desc u = {.storage = 'u', .path_or_inline = "ab^-aqEH.-t@S}K{vb[*k^",
                              .offset = 4, .size_in_bytes = 40};
    char *name = NULL;
    CHECK_EQ_INT(delta_dv_file_name(&u, &name, &err), VT_ERR_OK);
    CHECK_EQ_STR(name, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin");
    free(name);
    /* A prefix cannot climb out of the table. */
    struct delta_dv_desc bad = {.storage = 'u', .path_or_inline = "../^-aqEH.-t@S}K{vb[*k^",
                                .size_in_bytes = 40};
    CHECK_EQ_INT(delta_dv_file_name(&bad, &name, &err), VT_ERR_SOURCE_UNAVAILABLE);
    struct delta_dv_desc unk = {.storage = 'x', .path_or_inline = "a", .size_in_bytes = 40};
    CHECK_EQ_INT(delta_dv_desc_check(&unk, &err), VT_ERR_SOURCE_UNSUPPORTED);
}

TEST(bitmap_arrays_many_buckets_and_damage)
{
    /* Positions on both sides of 2^32 and a run: three buckets. */
    uint64_t pos[3000];
    size_t n = 0;
    for (uint64_t p = 100; p < 2100; p++)
        pos[n++] = p;
    pos[n++] = (1ull << 32) + 5;
    pos[n++] = (1ull << 32) + 70000;
    pos[n++] = (7ull << 32);
    size_t len;
    unsigned char *buf = rba(pos, n, &len);
    struct delta_dv *dv = NULL;
    struct vt_error err = {0};
    CHECK_EQ_INT(delta_dv_parse(buf, len, 0, &dv, &err), VT_ERR_OK);
    CHECK_EQ_INT(delta_dv_cardinality(dv), n);
    CHECK(delta_dv_contains(dv, 100) && delta_dv_contains(dv, 2099) && !delta_dv_contains(dv, 2100));
    CHECK(delta_dv_contains(dv, (1ull << 32) + 70000) && !delta_dv_contains(dv, 70000));
    CHECK(delta_dv_contains(dv, 7ull << 32) && !delta_dv_contains(dv, (6ull << 32)));
    CHECK_EQ_INT(delta_dv_range_cardinality(dv, 0, 1ull << 40), n);
    CHECK_EQ_INT(delta_dv_range_cardinality(dv, 2000, (1ull << 32) + 6), 101);
    delta_dv_free(dv);
    /* More positions than the log's cardinality: refused. */
    CHECK_EQ_INT(delta_dv_parse(buf, len, n - 1, &dv, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_EQ_INT(delta_dv_parse(buf, len, n, &dv, &err), VT_ERR_OK);
    delta_dv_free(dv);

    /* Framed in a file: the size and checksum are checked. */
    size_t fn = len + 8;
    unsigned char *framed = malloc(fn);
    put_be32(framed, (uint32_t)len);
    memcpy(framed + 4, buf, len);
    put_be32(framed + 4 + len, (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)len));
    CHECK_EQ_INT(delta_dv_decode_framed(framed, fn, (int64_t)len, 0, &dv, &err), VT_ERR_OK);
    delta_dv_free(dv);
    CHECK_EQ_INT(delta_dv_decode_framed(framed, fn, (int64_t)len - 1, 0, &dv, &err),
                 VT_ERR_SOURCE_UNAVAILABLE);
    framed[20] ^= 1;
    vt_error_clear(&err);
    CHECK_EQ_INT(delta_dv_decode_framed(framed, fn, (int64_t)len, 0, &dv, &err),
                 VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "checksum");
    free(framed);

    /* Damage: magic, truncation, trailing bytes, keys out of order. */
    unsigned char *copy = malloc(len + 1);
    memcpy(copy, buf, len);
    copy[3] ^= 0x80;
    CHECK_EQ_INT(delta_dv_parse(copy, len, 0, &dv, &err), VT_ERR_SOURCE_UNAVAILABLE);
    memcpy(copy, buf, len);
    for (size_t cut = 0; cut < len; cut += 7)
        CHECK_EQ_INT(delta_dv_parse(copy, cut, 0, &dv, &err), VT_ERR_SOURCE_UNAVAILABLE);
    copy[len] = 0;
    CHECK_EQ_INT(delta_dv_parse(copy, len + 1, 0, &dv, &err), VT_ERR_SOURCE_UNAVAILABLE);
    uint64_t two[] = {(2ull << 32), (1ull << 32)}; /* written in this order: keys 2, 1 */
    size_t l1, l2;
    unsigned char *b1 = rba(&two[0], 1, &l1), *b2 = rba(&two[1], 1, &l2);
    unsigned char *swapped = malloc(l1 + l2 - 12);
    memcpy(swapped, b1, l1);
    memcpy(swapped + l1, b2 + 12, l2 - 12);
    put_le32(swapped + 4, 2);
    CHECK_EQ_INT(delta_dv_parse(swapped, l1 + l2 - 12, 0, &dv, &err), VT_ERR_SOURCE_UNAVAILABLE);
    free(swapped);
    free(b1);
    free(b2);
    free(copy);
    free(buf);
}

/* ---- hand-built tables ------------------------------------------------------ */

static void write_text(const char *path, const char *text)
{
    td_write_file(path, text);
}

/* {"deletionVector": ...} text for the add of `file`. */
static char *dv_json(char type, const char *path_or_inline, long long offset, size_t size,
                     size_t card)
{
    json_t *d = json_object();
    char st[2] = {type, 0};
    json_object_set_new(d, "storageType", json_string(st));
    json_object_set_new(d, "pathOrInlineDv", json_string(path_or_inline));
    if (offset >= 0)
        json_object_set_new(d, "offset", json_integer(offset));
    json_object_set_new(d, "sizeInBytes", json_integer((json_int_t)size));
    json_object_set_new(d, "cardinality", json_integer((json_int_t)card));
    char *s = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    return s;
}

static char *add_line(const char *kind, const char *file, const char *dv)
{
    char *s = malloc(strlen(file) + (dv ? strlen(dv) : 0) + 200);
    sprintf(s, "{\"%s\":{\"path\":\"%s\",\"partitionValues\":{},\"size\":1,\"dataChange\":true%s%s}}\n",
            kind, file, dv ? ",\"deletionVector\":" : "", dv ? dv : "");
    return s;
}

static enum vt_err resolve_dir(const char *dir, struct source_snapshot *snap, struct vt_error *err)
{
    struct vt_dataset_config ds = {0};
    ds.name = "dv";
    ds.kind = CFG_SOURCE_DELTA;
    ds.location = (char *)dir;
    vt_error_clear(err);
    return source_delta_resolve(&ds, NULL, snap, NULL, err);
}

static char *ids_of(const struct source_snapshot *snap)
{
    td_exec(&T, "DROP TABLE IF EXISTS mine");
    if (!td_exec(&T, "CREATE TABLE mine AS %s", snap->select_sql))
        return NULL;
    return td_text(&T, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM mine");
}

static const char *PROTO = "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,"
                           "\"readerFeatures\":[\"deletionVectors\"],\"writerFeatures\":"
                           "[\"deletionVectors\"]}}\n"
                           "{\"metaData\":{\"id\":\"t\",\"format\":{\"provider\":\"parquet\"},"
                           "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[{"
                           "\\\"name\\\":\\\"id\\\",\\\"type\\\":\\\"long\\\",\\\"nullable\\\":"
                           "true,\\\"metadata\\\":{}}]}\",\"partitionColumns\":[]}}\n";

TEST(tables_with_every_kind_of_vector)
{
    char dir[64];
    strcpy(dir, "/tmp/vt-dv-test-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    td_sh("mkdir -p '%s/_delta_log' '%s/zz'", dir, dir);
    /* Three files of ten rows: ids 0-9, 10-19, 20-29 (row position = id % 10). */
    for (int f = 0; f < 3; f++)
        CHECK(td_exec(&T, "COPY (SELECT (range + %d)::BIGINT AS id FROM range(10)) TO "
                          "'%s/f%d.parquet' (FORMAT parquet, ROW_GROUP_SIZE 4)",
                      f * 10, dir, f));
    /* f0: inline {0, 9}; f1: a UUID-named file under prefix zz/ holding two
     * vectors (f1 uses the second: {1, 2, 3}); f2: an absolute path {5}. */
    uint64_t p0[] = {0, 9}, p1a[] = {4}, p1b[] = {1, 2, 3}, p2[] = {5};
    size_t n0, n1a, n1b, n2;
    unsigned char *v0 = rba(p0, 2, &n0), *v1a = rba(p1a, 1, &n1a), *v1b = rba(p1b, 3, &n1b),
                  *v2 = rba(p2, 1, &n2);
    char *in0 = z85(v0, n0);
    unsigned char uuid[16];
    for (int i = 0; i < 16; i++)
        uuid[i] = (unsigned char)(0x10 + i);
    char *zu = z85(uuid, 16);
    char upath[300], apath[300];
    snprintf(upath, sizeof upath,
             "%s/zz/deletion_vector_10111213-1415-1617-1819-1a1b1c1d1e1f.bin", dir);
    snprintf(apath, sizeof apath, "%s/elsewhere.bin", dir);
    unsigned char *two[] = {v1a, v1b};
    size_t two_n[] = {n1a, n1b};
    long long offs[2], off2[1];
    write_dv_file(upath, two, two_n, 2, offs);
    write_dv_file(apath, &v2, &n2, 1, off2);
    char uref[64], aref[400];
    snprintf(uref, sizeof uref, "zz%s", zu);
    snprintf(aref, sizeof aref, "file://%s", apath);
    char *d0 = dv_json('i', in0, -1, n0, 2), *d1 = dv_json('u', uref, offs[1], n1b, 3),
         *d2 = dv_json('p', aref, off2[0], n2, 1);
    char *a0 = add_line("add", "f0.parquet", NULL), *a1 = add_line("add", "f1.parquet", NULL),
         *a2 = add_line("add", "f2.parquet", NULL);
    char *r0 = add_line("remove", "f0.parquet", NULL), *r1 = add_line("remove", "f1.parquet", NULL),
         *r2 = add_line("remove", "f2.parquet", NULL);
    char *a0d = add_line("add", "f0.parquet", d0), *a1d = add_line("add", "f1.parquet", d1),
         *a2d = add_line("add", "f2.parquet", d2);
    struct strbuf c;
    sb_init(&c, 0);
    sb_addf(&c, "%s%s%s%s", PROTO, a0, a1, a2);
    char p[400];
    snprintf(p, sizeof p, "%s/_delta_log/%020d.json", dir, 0);
    write_text(p, c.buf);
    /* Commit 1: the DELETE. Adds before removes for f1 (the order within a
     * commit does not matter: the logical files differ). */
    sb_reset(&c);
    sb_addf(&c, "%s%s%s%s%s%s", r0, a0d, a1d, r1, r2, a2d);
    snprintf(p, sizeof p, "%s/_delta_log/%020d.json", dir, 1);
    write_text(p, c.buf);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    char *ids = ids_of(&snap);
    CHECK_EQ_STR(ids, "1,2,3,4,5,6,7,8,10,14,15,16,17,18,19,20,21,22,23,24,26,27,28,29");
    free(ids);
    size_t registered = dvset_count();
    CHECK(registered >= 3);
    td_release(&snap);
    CHECK_EQ_INT(dvset_count(), registered - 3); /* the snapshot took its vectors along */

    /* Commit 2: f1 gets a newer vector {4} (the first of the file) replacing
     * {1, 2, 3}: the rows come back, row 4 goes. */
    char *d1b = dv_json('u', uref, offs[0], n1a, 1);
    char *a1e = add_line("add", "f1.parquet", d1b);
    char *r1d = add_line("remove", "f1.parquet", d1);
    sb_reset(&c);
    sb_addf(&c, "%s%s", r1d, a1e);
    snprintf(p, sizeof p, "%s/_delta_log/%020d.json", dir, 2);
    write_text(p, c.buf);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    ids = ids_of(&snap);
    CHECK_EQ_STR(ids, "1,2,3,4,5,6,7,8,10,11,12,13,15,16,17,18,19,20,21,22,23,24,26,27,28,29");
    free(ids);
    td_release(&snap);

    /* A damaged vector file fails the build naming it and the data file. */
    FILE *f = fopen(upath, "r+b");
    fseek(f, offs[0] + 6, SEEK_SET);
    fputc(0x55, f);
    fclose(f);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "checksum");
    CHECK_CONTAINS(vt_error_message(&err), "f1.parquet");
    /* A missing one too. */
    unlink(upath);
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_SOURCE_UNAVAILABLE);
    CHECK_CONTAINS(vt_error_message(&err), "is missing");

    sb_release(&c);
    char *frees[] = {in0, zu, d0, d1, d2, a0, a1, a2, r0, r1, r2, a0d, a1d, a2d, d1b, a1e, r1d};
    for (size_t i = 0; i < sizeof frees / sizeof frees[0]; i++)
        free(frees[i]);
    free(v0);
    free(v1a);
    free(v1b);
    free(v2);
    td_sh("rm -rf '%s'", dir);
}

/* Issue 25: "table-with-dv-small must serve exactly 8 rows (values 1..8)". */
TEST(table_with_dv_small_serves_one_to_eight)
{
    char corpus[1024], dir[1200];
    if (!td_find_corpus(corpus, sizeof corpus)) {
        CHECK(false);
        return;
    }
    snprintf(dir, sizeof dir, "%s/table-with-dv-small", corpus);
    struct source_snapshot snap;
    struct vt_error err = {0};
    CHECK_EQ_INT(resolve_dir(dir, &snap, &err), VT_ERR_OK);
    td_exec(&T, "DROP TABLE IF EXISTS mine");
    CHECK(td_exec(&T, "CREATE TABLE mine AS %s", snap.select_sql));
    char *v = td_text(&T, "SELECT string_agg(value::VARCHAR, ',' ORDER BY value) FROM mine");
    CHECK_EQ_STR(v, "1,2,3,4,5,6,7,8");
    free(v);
    td_release(&snap);
}

TEST(open_duckdb)
{
    td_open(&T);
}

TEST(close_duckdb)
{
    td_close(&T);
}

RUN_TESTS(TEST_CASE(open_duckdb), TEST_CASE(z85_and_the_protocol_examples),
          TEST_CASE(bitmap_arrays_many_buckets_and_damage),
          TEST_CASE(tables_with_every_kind_of_vector),
          TEST_CASE(table_with_dv_small_serves_one_to_eight), TEST_CASE(close_duckdb))
