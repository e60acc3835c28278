/*
 * Unit tests of the Arrow IPC writer's pieces: the flatbuffer builder
 * (layout, alignment, offsets), the bitmap helpers, and the message framing
 * and body layout of hand-built arrays (slices, omitted validity, dictionary
 * resends, list views, unions, errors). A tiny flatbuffer reader below reads
 * the metadata back; the e2e tests check the same streams with a real reader.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/arrow_fb.h"
#include "encode/arrow_ipc.h"
#include "testlib.h"

/* ---------------------------------------------------------------- flatbuffer reading */

static uint32_t rd32(const uint8_t *b, uint32_t at)
{
    uint32_t v;
    memcpy(&v, b + at, 4);
    return v;
}
static uint16_t rd16(const uint8_t *b, uint32_t at)
{
    uint16_t v;
    memcpy(&v, b + at, 2);
    return v;
}
static int64_t rd64(const uint8_t *b, uint32_t at)
{
    int64_t v;
    memcpy(&v, b + at, 8);
    return v;
}

/* Position of field `slot` of the table at `t`, or 0 when absent. */
static uint32_t fld(const uint8_t *b, uint32_t t, int slot)
{
    int32_t soff;
    memcpy(&soff, b + t, 4);
    uint32_t vt = (uint32_t)((int64_t)t - soff);
    uint16_t vlen = rd16(b, vt);
    if (4 + 2 * (uint32_t)slot >= vlen)
        return 0;
    uint16_t o = rd16(b, vt + 4 + 2 * (uint32_t)slot);
    return o ? t + o : 0;
}
/* Follows the uoffset stored at `at`. */
static uint32_t deref(const uint8_t *b, uint32_t at)
{
    return at + rd32(b, at);
}

/* ---------------------------------------------------------------- builder */

TEST(fb_table_layout_and_alignment)
{
    struct arrow_fb b;
    arrow_fb_init(&b);
    arrow_fb_reset(&b);
    struct arrow_fb_table t;
    arrow_fb_table_begin(&t);
    arrow_fb_add_scalar(&t, 0, 1, 0xAB);
    arrow_fb_add_scalar(&t, 1, 8, 0x0102030405060708ull);
    arrow_fb_add_scalar(&t, 2, 2, 0xBEEF);
    arrow_fb_add_ref(&t, 3);
    arrow_fb_add_scalar(&t, 5, 4, 0xCAFEBABE); /* slot 4 left absent */
    uint32_t tab = arrow_fb_table_end(&b, &t);
    uint32_t str = arrow_fb_string(&b, "hello", 5);
    arrow_fb_patch(&b, arrow_fb_ref_at(&t, 3), str);
    arrow_fb_finish(&b, tab);
    CHECK(!arrow_fb_failed(&b));

    const uint8_t *d = arrow_fb_data(&b);
    CHECK_EQ_INT(rd32(d, 0), tab);
    CHECK_EQ_INT(tab % 4, 0);
    uint32_t f0 = fld(d, tab, 0), f1 = fld(d, tab, 1), f2 = fld(d, tab, 2), f3 = fld(d, tab, 3);
    uint32_t f5 = fld(d, tab, 5);
    CHECK_EQ_INT(fld(d, tab, 4), 0);
    CHECK_EQ_INT(fld(d, tab, 6), 0); /* beyond the vtable: absent */
    CHECK_EQ_INT(f1 % 8, 0);
    CHECK_EQ_INT(f2 % 2, 0);
    CHECK_EQ_INT(f3 % 4, 0);
    CHECK_EQ_INT(f5 % 4, 0);
    CHECK_EQ_INT(d[f0], 0xAB);
    CHECK(rd64(d, f1) == 0x0102030405060708ll);
    CHECK_EQ_INT(rd16(d, f2), 0xBEEF);
    CHECK_EQ_INT(rd32(d, f5), 0xCAFEBABEu);
    uint32_t s = deref(d, f3);
    CHECK_EQ_INT(s, str);
    CHECK_EQ_INT(s % 4, 0);
    CHECK_EQ_INT(rd32(d, s), 5);
    CHECK(memcmp(d + s + 4, "hello", 6) == 0); /* NUL-terminated */
    arrow_fb_release(&b);
}

TEST(fb_vectors_aligned)
{
    struct arrow_fb b;
    arrow_fb_init(&b);
    for (int pre = 0; pre < 8; pre++) { /* every starting misalignment */
        arrow_fb_reset(&b);
        uint32_t s = arrow_fb_string(&b, "abcdefg", (size_t)pre);
        (void)s;
        int64_t pairs[4] = {1, 2, 3, 4};
        uint32_t v = arrow_fb_vector(&b, 16, 8, 2, pairs);
        const uint8_t *d = arrow_fb_data(&b);
        CHECK_EQ_INT(v % 4, 0);
        CHECK_EQ_INT((v + 4) % 8, 0);
        CHECK_EQ_INT(rd32(d, v), 2);
        CHECK(rd64(d, v + 4) == 1 && rd64(d, v + 28) == 4);
        uint32_t ov = arrow_fb_vector(&b, 4, 4, 3, NULL);
        uint32_t target = arrow_fb_string(&b, "x", 1);
        arrow_fb_patch(&b, arrow_fb_vector_elem(ov, 2), target);
        d = arrow_fb_data(&b);
        CHECK_EQ_INT(deref(d, arrow_fb_vector_elem(ov, 2)), target);
        CHECK(!arrow_fb_failed(&b));
    }
    arrow_fb_release(&b);
}

TEST(fb_backward_patch_fails)
{
    struct arrow_fb b;
    arrow_fb_init(&b);
    arrow_fb_reset(&b);
    uint32_t s = arrow_fb_string(&b, "a", 1);
    uint32_t v = arrow_fb_vector(&b, 4, 4, 1, NULL);
    arrow_fb_patch(&b, arrow_fb_vector_elem(v, 0), s); /* points backward */
    CHECK(arrow_fb_failed(&b));
    arrow_fb_reset(&b);
    CHECK(!arrow_fb_failed(&b));
    arrow_fb_release(&b);
}

/* ---------------------------------------------------------------- bits */

static int naive_bit(const uint8_t *b, int64_t i)
{
    return (b[i >> 3] >> (i & 7)) & 1;
}

TEST(bitmap_count_and_copy)
{
    uint8_t src[40];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof src; i++) {
        x = x * 1103515245u + 12345u;
        src[i] = (uint8_t)(x >> 16);
    }
    for (int64_t off = 0; off < 17; off++) {
        for (int64_t n = 0; off + n <= 8 * (int64_t)sizeof src - 8 && n < 200; n += 1 + n / 8) {
            int64_t nulls = 0;
            for (int64_t i = 0; i < n; i++)
                nulls += !naive_bit(src, off + i);
            CHECK_EQ_INT(arrow_ipc_count_nulls(src, off, n), nulls);
            uint8_t dst[40];
            memset(dst, 0xEE, sizeof dst);
            arrow_ipc_copy_bits(dst, src, off, n);
            int ok = 1;
            for (int64_t i = 0; i < n; i++)
                ok &= naive_bit(dst, i) == naive_bit(src, off + i);
            for (int64_t i = n; i < (n + 7) / 8 * 8; i++)
                ok &= naive_bit(dst, i) == 0; /* unused tail bits zeroed */
            CHECK(ok);
        }
    }
    CHECK_EQ_INT(arrow_ipc_count_nulls(NULL, 3, 10), 0);
}

/* ---------------------------------------------------------------- hand-built arrays */

static struct ArrowSchema sch(const char *fmt, const char *name, int64_t flags, int64_t n,
                              struct ArrowSchema **kids)
{
    struct ArrowSchema s = {fmt, name, NULL, flags, n, kids, NULL, NULL, NULL};
    return s;
}

static struct ArrowArray arr(int64_t len, int64_t nulls, int64_t off, int64_t nbuf, const void **bufs,
                             int64_t n, struct ArrowArray **kids)
{
    struct ArrowArray a = {len, nulls, off, nbuf, n, bufs, kids, NULL, NULL, NULL};
    return a;
}

/* One parsed message of a stream. */
struct msg {
    const uint8_t *meta;   /* flatbuffer */
    uint32_t meta_len;
    uint8_t header_type;
    uint32_t header;       /* table position in meta */
    int64_t body_len;
    const uint8_t *body;
    size_t at;             /* offset in the stream */
};

/* Splits a stream into messages, checking the framing rules; returns the
 * count, -1 on a framing error. *eos tells whether the end marker closed it. */
static int parse_stream(const uint8_t *p, size_t n, struct msg *out, int max, int *eos)
{
    size_t pos = 0;
    int k = 0;
    *eos = 0;
    while (pos < n) {
        if (pos + 8 > n || rd32(p, (uint32_t)pos) != 0xFFFFFFFFu)
            return -1;
        uint32_t mlen = rd32(p, (uint32_t)pos + 4);
        if (mlen == 0) {
            *eos = 1;
            return pos + 8 == n ? k : -1;
        }
        if (mlen % 8 || k >= max || pos + 8 + mlen > n)
            return -1;
        struct msg *m = &out[k++];
        m->at = pos;
        m->meta = p + pos + 8;
        m->meta_len = mlen;
        uint32_t root = rd32(m->meta, 0);
        CHECK_EQ_INT(rd16(m->meta, fld(m->meta, root, 0)), 4); /* MetadataVersion V5 */
        m->header_type = m->meta[fld(m->meta, root, 1)];
        m->header = deref(m->meta, fld(m->meta, root, 2));
        uint32_t bl = fld(m->meta, root, 3);
        m->body_len = bl ? rd64(m->meta, bl) : 0;
        if (m->body_len % 8)
            return -1;
        m->body = m->meta + mlen;
        pos += 8 + mlen + (size_t)m->body_len;
    }
    return k;
}

struct rb {
    int64_t length;
    int n_nodes, n_bufs;
    int64_t nodes[32][2];
    int64_t bufs[64][2];
};

/* Reads a RecordBatch table and checks its buffers are 8-aligned, ordered,
 * non-overlapping and inside the body. */
static void read_rb(const struct msg *m, uint32_t t, struct rb *r)
{
    const uint8_t *d = m->meta;
    r->length = rd64(d, fld(d, t, 0));
    uint32_t nv = deref(d, fld(d, t, 1)), bv = deref(d, fld(d, t, 2));
    r->n_nodes = (int)rd32(d, nv);
    r->n_bufs = (int)rd32(d, bv);
    CHECK((nv + 4) % 8 == 0 && (bv + 4) % 8 == 0);
    for (int i = 0; i < r->n_nodes && i < 32; i++) {
        r->nodes[i][0] = rd64(d, nv + 4 + 16 * (uint32_t)i);
        r->nodes[i][1] = rd64(d, nv + 12 + 16 * (uint32_t)i);
    }
    int64_t end = 0;
    for (int i = 0; i < r->n_bufs && i < 64; i++) {
        r->bufs[i][0] = rd64(d, bv + 4 + 16 * (uint32_t)i);
        r->bufs[i][1] = rd64(d, bv + 12 + 16 * (uint32_t)i);
        CHECK_EQ_INT(r->bufs[i][0] % 8, 0);
        CHECK(r->bufs[i][0] >= end);
        end = r->bufs[i][0] + r->bufs[i][1];
    }
    CHECK(end <= m->body_len);
}

static const uint8_t *buf_at(const struct msg *m, const struct rb *r, int i)
{
    return m->body + r->bufs[i][0];
}

/* Columns: a int32 (nulls), s utf8, l list<int16>, st struct<b bool>. */
struct fixture {
    struct ArrowSchema s_a, s_s, s_item, s_l, s_b, s_st, root;
    struct ArrowSchema *root_kids[4], *l_kids[1], *st_kids[1];
    struct ArrowArray a_a, a_s, a_item, a_l, a_b, a_st, batch;
    struct ArrowArray *batch_kids[4], *l_akids[1], *st_akids[1];
    const void *b_a[2], *b_s[3], *b_item[2], *b_l[2], *b_b[2], *b_st[1];
    int32_t a_vals[10];
    uint8_t a_valid[2];
    int32_t s_offs[11];
    char s_data[64];
    int16_t items[30];
    int32_t l_offs[11];
    uint8_t bools[2];
};

static void fixture_init(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    f->s_a = sch("i", "a", ARROW_FLAG_NULLABLE, 0, NULL);
    f->s_s = sch("u", "s", ARROW_FLAG_NULLABLE, 0, NULL);
    f->s_item = sch("s", "item", ARROW_FLAG_NULLABLE, 0, NULL);
    f->l_kids[0] = &f->s_item;
    f->s_l = sch("+l", "l", ARROW_FLAG_NULLABLE, 1, f->l_kids);
    f->s_b = sch("b", "b", 0, 0, NULL);
    f->st_kids[0] = &f->s_b;
    f->s_st = sch("+s", "st", ARROW_FLAG_NULLABLE, 1, f->st_kids);
    f->root_kids[0] = &f->s_a;
    f->root_kids[1] = &f->s_s;
    f->root_kids[2] = &f->s_l;
    f->root_kids[3] = &f->s_st;
    f->root = sch("+s", "", 0, 4, f->root_kids);

    /* 10 rows; a: i*10, null at rows 3 and 9 */
    for (int i = 0; i < 10; i++)
        f->a_vals[i] = i * 10;
    f->a_valid[0] = 0xF7; /* row 3 null */
    f->a_valid[1] = 0x01; /* row 8 valid, row 9 null */
    f->b_a[0] = f->a_valid;
    f->b_a[1] = f->a_vals;
    f->a_a = arr(10, 2, 0, 2, f->b_a, 0, NULL);
    /* s: "r0".."r9" */
    int pos = 0;
    for (int i = 0; i < 10; i++) {
        f->s_offs[i] = pos;
        f->s_data[pos++] = 'r';
        f->s_data[pos++] = (char)('0' + i);
    }
    f->s_offs[10] = pos;
    f->b_s[0] = NULL;
    f->b_s[1] = f->s_offs;
    f->b_s[2] = f->s_data;
    f->a_s = arr(10, 0, 0, 3, f->b_s, 0, NULL);
    /* l: row i has i % 4 items, values counting up */
    int n = 0;
    for (int i = 0; i < 10; i++) {
        f->l_offs[i] = n;
        for (int k = 0; k < i % 4; k++, n++)
            f->items[n] = (int16_t)n;
    }
    f->l_offs[10] = n;
    f->b_item[0] = NULL;
    f->b_item[1] = f->items;
    f->a_item = arr(n, 0, 0, 2, f->b_item, 0, NULL);
    f->l_akids[0] = &f->a_item;
    f->b_l[0] = NULL;
    f->b_l[1] = f->l_offs;
    f->a_l = arr(10, 0, 0, 2, f->b_l, 1, f->l_akids);
    /* st.b: alternating true/false */
    f->bools[0] = 0x55;
    f->bools[1] = 0x01;
    f->b_b[0] = NULL;
    f->b_b[1] = f->bools;
    f->a_b = arr(10, 0, 0, 2, f->b_b, 0, NULL);
    f->st_akids[0] = &f->a_b;
    f->b_st[0] = NULL;
    f->a_st = arr(10, 0, 0, 1, f->b_st, 1, f->st_akids);
    f->batch_kids[0] = &f->a_a;
    f->batch_kids[1] = &f->a_s;
    f->batch_kids[2] = &f->a_l;
    f->batch_kids[3] = &f->a_st;
    f->batch = arr(10, 0, 0, 1, f->b_st, 4, f->batch_kids);
}

TEST(stream_schema_batch_eos_framing)
{
    struct fixture f;
    fixture_init(&f);
    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&f.root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(arrow_ipc_write_schema(w, &out, &err), VT_ERR_OK);
    CHECK_EQ_INT(out.len % 8, 0);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &out, &err), VT_ERR_OK);
    CHECK_EQ_INT(arrow_ipc_write_eos(&out), 0);

    struct msg m[4];
    int eos;
    int n = parse_stream((const uint8_t *)out.buf, out.len, m, 4, &eos);
    CHECK_EQ_INT(n, 2);
    CHECK(eos);
    CHECK(memcmp(out.buf + out.len - 8, "\xFF\xFF\xFF\xFF\0\0\0\0", 8) == 0);
    if (n != 2) {
        sb_release(&out);
        arrow_ipc_writer_destroy(w);
        return;
    }
    /* schema: 4 fields, names, nullability, list child, Int{32, signed} */
    CHECK_EQ_INT(m[0].header_type, 1);
    CHECK_EQ_INT(m[0].body_len, 0);
    const uint8_t *d = m[0].meta;
    uint32_t fields = deref(d, fld(d, m[0].header, 1));
    CHECK_EQ_INT(rd32(d, fields), 4);
    uint32_t fa = deref(d, fields + 4), fl = deref(d, fields + 12), fst = deref(d, fields + 16);
    CHECK_EQ_STR((const char *)d + deref(d, fld(d, fa, 0)) + 4, "a");
    CHECK_EQ_INT(d[fld(d, fa, 1)], 1);         /* nullable */
    CHECK_EQ_INT(d[fld(d, fa, 2)], 2);         /* Type.Int */
    uint32_t it = deref(d, fld(d, fa, 3));
    CHECK_EQ_INT(rd32(d, fld(d, it, 0)), 32);
    CHECK_EQ_INT(d[fld(d, it, 1)], 1);
    CHECK_EQ_INT(d[fld(d, fl, 2)], 12);        /* Type.List */
    uint32_t lk = deref(d, fld(d, fl, 5));
    CHECK_EQ_INT(rd32(d, lk), 1);
    uint32_t item = deref(d, lk + 4);
    CHECK_EQ_STR((const char *)d + deref(d, fld(d, item, 0)) + 4, "item");
    CHECK_EQ_INT(d[fld(d, item, 2)], 2);
    uint32_t sk = deref(d, fld(d, fst, 5));
    uint32_t fb_ = deref(d, sk + 4);
    CHECK_EQ_INT(d[fld(d, fb_, 1)], 0);        /* b is not nullable */
    CHECK_EQ_INT(d[fld(d, fb_, 2)], 6);        /* Type.Bool */

    /* record batch: nodes a, s, l, item, st, b; buffers 2+3+2+2+1+2 */
    CHECK_EQ_INT(m[1].header_type, 3);
    struct rb r;
    read_rb(&m[1], m[1].header, &r);
    CHECK_EQ_INT(r.length, 10);
    CHECK_EQ_INT(r.n_nodes, 6);
    CHECK_EQ_INT(r.n_bufs, 12);
    CHECK(r.nodes[0][0] == 10 && r.nodes[0][1] == 2);
    CHECK(r.nodes[3][0] == f.l_offs[10] && r.nodes[3][1] == 0);
    CHECK_EQ_INT(r.bufs[0][1], 2);             /* a validity: 2 bytes */
    CHECK(memcmp(buf_at(&m[1], &r, 0), f.a_valid, 2) == 0);
    CHECK(memcmp(buf_at(&m[1], &r, 1), f.a_vals, 40) == 0);
    CHECK_EQ_INT(r.bufs[2][1], 0);             /* s has no nulls: no validity */
    CHECK(memcmp(buf_at(&m[1], &r, 3), f.s_offs, 44) == 0);
    CHECK(memcmp(buf_at(&m[1], &r, 4), "r0r1", 4) == 0);
    /* padding after every buffer is zeroed */
    const uint8_t *pad = buf_at(&m[1], &r, 4) + r.bufs[4][1];
    CHECK(pad[0] == 0 && pad[1] == 0 && pad[3] == 0);

    struct arrow_ipc_stats st;
    arrow_ipc_writer_stats(w, &st);
    CHECK_EQ_INT(st.batches, 1);
    CHECK_EQ_INT(st.rows, 10);
    CHECK_EQ_INT(st.bytes, out.len - 8);
    sb_release(&out);
    arrow_ipc_writer_destroy(w);
}

TEST(sliced_batch_is_rebased)
{
    struct fixture f;
    fixture_init(&f);
    /* the window rows 3..8 of the batch, and the list column additionally
     * offset by 1 through its own offset (so it shows rows 4..9) */
    f.batch.offset = 3;
    f.batch.length = 6;
    f.a_l.offset = 1;
    f.a_l.length = 9;
    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&f.root, &err);
    struct strbuf out;
    sb_init(&out, 0);
    sb_adds(&out, "abc"); /* the stream need not start aligned in memory (UBSan checks) */
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &out, &err), VT_ERR_OK);
    /* parse an aligned copy: the reader side may assume alignment */
    uint8_t *copy = malloc(out.len);
    memcpy(copy, out.buf + 3, out.len - 3);
    struct msg m[2];
    int eos;
    CHECK_EQ_INT(parse_stream(copy, out.len - 3, m, 2, &eos), 1);
    struct rb r;
    read_rb(&m[0], m[0].header, &r);
    CHECK_EQ_INT(r.length, 6);
    /* a: rows 3..8 -> one null (row 3), bitmap shifted by 3 */
    CHECK(r.nodes[0][0] == 6 && r.nodes[0][1] == 1);
    CHECK_EQ_INT(buf_at(&m[0], &r, 0)[0], 0x3E); /* 0xF7,0x01 >> 3 over 6 bits */
    CHECK(memcmp(buf_at(&m[0], &r, 1), f.a_vals + 3, 24) == 0);
    /* s: offsets rebased to 0, data from "r3" */
    const int32_t *so = (const int32_t *)(const void *)buf_at(&m[0], &r, 3);
    CHECK(so[0] == 0 && so[6] == 12);
    CHECK(memcmp(buf_at(&m[0], &r, 4), "r3r4r5r6r7r8", 12) == 0);
    /* l: rows 4..9 -> item counts 0,1,2,3,0,1 = 7 items from offset l_offs[4] */
    const int32_t *lo = (const int32_t *)(const void *)buf_at(&m[0], &r, 6);
    CHECK(lo[0] == 0 && lo[1] == 0 && lo[2] == 1 && lo[6] == 7);
    CHECK(r.nodes[3][0] == 7);
    CHECK(memcmp(buf_at(&m[0], &r, 8), f.items + f.l_offs[4], 14) == 0);
    /* st.b: the bools of rows 3..8, shifted down to bit 0 */
    const uint8_t *bb = buf_at(&m[0], &r, 11);
    int ok = 1;
    for (int i = 0; i < 6; i++)
        ok &= ((bb[0] >> i) & 1) == (((f.bools[(i + 3) / 8]) >> ((i + 3) % 8)) & 1);
    CHECK(ok);
    free(copy);
    sb_release(&out);
    arrow_ipc_writer_destroy(w);
}

/* A producer's fill (arrow_ipc_write_batch_fill) writes the string column's
 * data: the stream is byte for byte the one the writer's copy gives, the
 * fill is asked for exactly the referenced bytes, and a slice that starts
 * inside the filled data is refused (the fill writes from its start). */
struct fill_probe {
    const char *data;
    size_t calls, asked;
};

static void probe_fill(void *ctx, uint8_t *dst, size_t len)
{
    struct fill_probe *p = ctx;
    p->calls++;
    p->asked = len;
    memcpy(dst, p->data, len);
}

TEST(filled_buffer_is_the_copied_bytes)
{
    struct fixture f;
    fixture_init(&f);
    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&f.root, &err);
    struct strbuf copied, filled;
    sb_init(&copied, 0);
    sb_init(&filled, 0);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &copied, &err), VT_ERR_OK);
    char key; /* the data buffer's stand-in: never read */
    struct fill_probe probe = {f.s_data, 0, 0};
    struct arrow_ipc_fill fill = {&key, probe_fill, &probe};
    f.b_s[2] = &key;
    CHECK_EQ_INT(arrow_ipc_write_batch_fill(w, &f.batch, &fill, 1, &filled, &err), VT_ERR_OK);
    CHECK_EQ_INT(probe.calls, 1);
    CHECK_EQ_INT(probe.asked, 20); /* "r0".."r9" */
    CHECK_EQ_INT(filled.len, copied.len);
    CHECK(filled.len == copied.len && memcmp(filled.buf, copied.buf, copied.len) == 0);
    /* a window from row 3: the data would start at offset 6 of the fill */
    f.batch.offset = 3;
    f.batch.length = 6;
    size_t before = filled.len;
    probe.calls = 0;
    CHECK_EQ_INT(arrow_ipc_write_batch_fill(w, &f.batch, &fill, 1, &filled, &err),
                 VT_ERR_INTERNAL);
    CHECK_CONTAINS(vt_error_message(&err), "sliced");
    CHECK_EQ_INT(probe.calls, 0);
    CHECK_EQ_INT(filled.len, before);
    sb_release(&copied);
    sb_release(&filled);
    arrow_ipc_writer_destroy(w);
}

TEST(unknown_null_count_is_computed)
{
    struct fixture f;
    fixture_init(&f);
    f.a_a.null_count = -1;
    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&f.root, &err);
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &out, &err), VT_ERR_OK);
    struct msg m[1];
    int eos;
    CHECK_EQ_INT(parse_stream((const uint8_t *)out.buf, out.len, m, 1, &eos), 1);
    struct rb r;
    read_rb(&m[0], m[0].header, &r);
    CHECK_EQ_INT(r.nodes[0][1], 2);
    sb_release(&out);
    arrow_ipc_writer_destroy(w);
}

TEST(errors_leave_output_untouched)
{
    struct fixture f;
    fixture_init(&f);
    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&f.root, &err);
    struct strbuf out;
    sb_init(&out, 0);
    sb_adds(&out, "prefix");
    /* wrong column count */
    f.batch.n_children = 3;
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &out, &err), VT_ERR_INTERNAL);
    CHECK_EQ_INT(out.len, 6);
    f.batch.n_children = 4;
    /* a list without its child array */
    vt_error_clear(&err);
    f.a_l.n_children = 0;
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &out, &err), VT_ERR_INTERNAL);
    CHECK_CONTAINS(vt_error_message(&err), "does not match");
    CHECK_EQ_INT(out.len, 6);
    f.a_l.n_children = 1;
    /* a child shorter than the parent's window */
    vt_error_clear(&err);
    f.a_s.length = 5;
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &out, &err), VT_ERR_INTERNAL);
    f.a_s.length = 10;
    /* output cap */
    vt_error_clear(&err);
    struct strbuf small;
    sb_init(&small, 64);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &small, &err), VT_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(small.len, 0);
    sb_release(&small);
    /* and a good batch still works after all that */
    vt_error_clear(&err);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &out, &err), VT_ERR_OK);
    CHECK_EQ_INT(memcmp(out.buf, "prefix", 6), 0);
    sb_release(&out);
    arrow_ipc_writer_destroy(w);
}

TEST(unsupported_formats_rejected)
{
    static const char *bad[] = {"+r", "x", "d:99,2", "w:0", "+w:x", "tsx:", "+ud:0,1", "d:5,2,100", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ArrowSchema c = sch(bad[i], "c", 0, 0, NULL);
        struct ArrowSchema *kids[1] = {&c};
        struct ArrowSchema root = sch("+s", "", 0, 1, kids);
        struct vt_error err = {0};
        struct arrow_ipc_writer *w = arrow_ipc_writer_create(&root, &err);
        CHECK(w == NULL);
        CHECK_CONTAINS(vt_error_message(&err), "arrow:");
        arrow_ipc_writer_destroy(w);
    }
    struct ArrowSchema notstruct = sch("i", "", 0, 0, NULL);
    struct vt_error err = {0};
    CHECK(arrow_ipc_writer_create(&notstruct, &err) == NULL);
}

TEST(dictionary_sent_when_changed)
{
    struct ArrowSchema vals = sch("u", NULL, 0, 0, NULL);
    struct ArrowSchema col = sch("C", "c", ARROW_FLAG_NULLABLE, 0, NULL);
    col.dictionary = &vals;
    struct ArrowSchema *kids[1] = {&col};
    struct ArrowSchema root = sch("+s", "", 0, 1, kids);

    int32_t offs[3] = {0, 3, 8};
    const void *dbufs[3] = {NULL, offs, "redgreen"};
    struct ArrowArray dict = arr(2, 0, 0, 3, dbufs, 0, NULL);
    uint8_t idx[4] = {0, 1, 1, 0};
    const void *ibufs[2] = {NULL, idx};
    struct ArrowArray c = arr(4, 0, 0, 2, ibufs, 0, NULL);
    c.dictionary = &dict;
    struct ArrowArray *ck[1] = {&c};
    const void *none[1] = {NULL};
    struct ArrowArray batch = arr(4, 0, 0, 1, none, 1, ck);

    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    struct strbuf out;
    sb_init(&out, 0);
    arrow_ipc_write_schema(w, &out, &err);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &batch, &out, &err), VT_ERR_OK);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &batch, &out, &err), VT_ERR_OK); /* same dictionary */
    int32_t offs2[3] = {0, 3, 7};
    const void *dbufs2[3] = {NULL, offs2, "redblue"};
    struct ArrowArray dict2 = arr(2, 0, 0, 3, dbufs2, 0, NULL);
    c.dictionary = &dict2;
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &batch, &out, &err), VT_ERR_OK); /* changed */
    arrow_ipc_write_eos(&out);

    struct msg m[8];
    int eos;
    int n = parse_stream((const uint8_t *)out.buf, out.len, m, 8, &eos);
    CHECK_EQ_INT(n, 6);
    int kinds[6] = {1, 2, 3, 3, 2, 3};
    for (int i = 0; i < n && i < 6; i++)
        CHECK_EQ_INT(m[i].header_type, kinds[i]);
    if (n == 6) {
        /* schema: field c has type Utf8 and a DictionaryEncoding{id 0, Int{8, unsigned}} */
        const uint8_t *d = m[0].meta;
        uint32_t fields = deref(d, fld(d, m[0].header, 1));
        uint32_t fc = deref(d, fields + 4);
        CHECK_EQ_INT(d[fld(d, fc, 2)], 5);
        uint32_t enc = deref(d, fld(d, fc, 4));
        CHECK(rd64(d, fld(d, enc, 0)) == 0);
        uint32_t itype = deref(d, fld(d, enc, 1));
        CHECK_EQ_INT(rd32(d, fld(d, itype, 0)), 8);
        CHECK_EQ_INT(d[fld(d, itype, 1)], 0);
        /* the second dictionary batch holds "redblue" */
        const uint8_t *dm = m[4].meta;
        uint32_t rbt = deref(dm, fld(dm, m[4].header, 1));
        struct rb r;
        read_rb(&m[4], rbt, &r);
        CHECK_EQ_INT(r.length, 2);
        CHECK(memcmp(buf_at(&m[4], &r, 2), "redblue", 7) == 0);
    }
    struct arrow_ipc_stats st;
    arrow_ipc_writer_stats(w, &st);
    CHECK_EQ_INT(st.dictionaries, 2);
    sb_release(&out);
    arrow_ipc_writer_destroy(w);
}

TEST(list_view_and_unions)
{
    /* +vl list view of int32 (sliced by 1), +us sparse and +ud dense unions */
    struct ArrowSchema item = sch("i", "l", ARROW_FLAG_NULLABLE, 0, NULL);
    struct ArrowSchema *lk[1] = {&item};
    struct ArrowSchema lv = sch("+vl", "lv", ARROW_FLAG_NULLABLE, 1, lk);
    struct ArrowSchema un = sch("i", "n", ARROW_FLAG_NULLABLE, 0, NULL);
    struct ArrowSchema us_ = sch("u", "s", ARROW_FLAG_NULLABLE, 0, NULL);
    struct ArrowSchema *uk[2] = {&un, &us_};
    struct ArrowSchema su = sch("+us:0,1", "su", 0, 2, uk);
    struct ArrowSchema du = sch("+ud:5,7", "du", 0, 2, uk);
    struct ArrowSchema *rk[3] = {&lv, &su, &du};
    struct ArrowSchema root = sch("+s", "", 0, 3, rk);

    int32_t items[5] = {1, 2, 3, 4, 5};
    const void *ib[2] = {NULL, items};
    struct ArrowArray ia = arr(5, 0, 0, 2, ib, 0, NULL);
    struct ArrowArray *iak[1] = {&ia};
    int32_t lvo[4] = {0, 3, 1, 4}, lvs[4] = {2, 2, 0, 1};
    const void *lvb[3] = {NULL, lvo, lvs};
    struct ArrowArray lva = arr(3, 0, 1, 3, lvb, 1, iak);

    int32_t nv[4] = {10, 0, 30, 0};
    const void *nb[2] = {NULL, nv};
    struct ArrowArray na = arr(4, 0, 0, 2, nb, 0, NULL);
    int32_t so[5] = {0, 0, 1, 1, 2};
    const void *sb2[3] = {NULL, so, "xy"};
    struct ArrowArray sa = arr(4, 0, 0, 3, sb2, 0, NULL);
    struct ArrowArray *suk[2] = {&na, &sa};
    int8_t stypes[4] = {0, 1, 0, 1};
    const void *sub[1] = {stypes};
    struct ArrowArray sua = arr(3, 0, 1, 1, sub, 2, suk);

    int8_t dtypes[4] = {5, 7, 5, 7};
    int32_t doffs[4] = {0, 0, 1, 1};
    const void *dub[2] = {dtypes, doffs};
    struct ArrowArray dn = arr(2, 0, 0, 2, nb, 0, NULL);
    int32_t dso[3] = {0, 1, 2};
    const void *dsb[3] = {NULL, dso, "pq"};
    struct ArrowArray ds = arr(2, 0, 0, 3, dsb, 0, NULL);
    struct ArrowArray *duk[2] = {&dn, &ds};
    struct ArrowArray dua = arr(3, 0, 1, 2, dub, 2, duk);

    struct ArrowArray *bk[3] = {&lva, &sua, &dua};
    const void *none[1] = {NULL};
    struct ArrowArray batch = arr(3, 0, 0, 1, none, 3, bk);

    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(arrow_ipc_write_schema(w, &out, &err), VT_ERR_OK);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &batch, &out, &err), VT_ERR_OK);
    struct msg m[2];
    int eos;
    CHECK_EQ_INT(parse_stream((const uint8_t *)out.buf, out.len, m, 2, &eos), 2);
    const uint8_t *d = m[0].meta;
    uint32_t fields = deref(d, fld(d, m[0].header, 1));
    CHECK_EQ_INT(d[fld(d, deref(d, fields + 4), 2)], 25);  /* ListView */
    uint32_t fdu = deref(d, fields + 12);
    CHECK_EQ_INT(d[fld(d, fdu, 2)], 14);                   /* Union */
    uint32_t ut = deref(d, fld(d, fdu, 3));
    CHECK_EQ_INT(rd16(d, fld(d, ut, 0)), 1);               /* Dense */
    uint32_t ids = deref(d, fld(d, ut, 1));
    CHECK(rd32(d, ids) == 2 && rd32(d, ids + 4) == 5 && rd32(d, ids + 8) == 7);

    struct rb r;
    read_rb(&m[1], m[1].header, &r);
    /* nodes: lv, item, su, su.n, su.s, du, du.n, du.s */
    CHECK_EQ_INT(r.n_nodes, 8);
    /* buffers: lv 3, item 2, su 1, n 2, s 3, du 2, n 2, s 3 = 18 */
    CHECK_EQ_INT(r.n_bufs, 18);
    if (r.n_nodes == 8 && r.n_bufs == 18) {
        CHECK(memcmp(buf_at(&m[1], &r, 1), lvo + 1, 12) == 0);   /* offsets slice, not rebased */
        CHECK(memcmp(buf_at(&m[1], &r, 2), lvs + 1, 12) == 0);
        CHECK_EQ_INT(r.nodes[1][0], 5);                          /* child whole */
        CHECK(r.nodes[2][0] == 3 && r.nodes[2][1] == 0);         /* sparse union node */
        CHECK(memcmp(buf_at(&m[1], &r, 5), stypes + 1, 3) == 0);
        CHECK_EQ_INT(r.nodes[3][0], 3);                          /* sparse child sliced with it */
        CHECK(memcmp(buf_at(&m[1], &r, 7), nv + 1, 12) == 0);
        CHECK(memcmp(buf_at(&m[1], &r, 11), dtypes + 1, 3) == 0);
        CHECK(memcmp(buf_at(&m[1], &r, 12), doffs + 1, 12) == 0);
        CHECK_EQ_INT(r.nodes[6][0], 2);                          /* dense children whole */
    }
    sb_release(&out);
    arrow_ipc_writer_destroy(w);
}

TEST(views_carry_variadic_counts)
{
    struct ArrowSchema v = sch("vu", "v", ARROW_FLAG_NULLABLE, 0, NULL);
    struct ArrowSchema *rk[1] = {&v};
    struct ArrowSchema root = sch("+s", "", 0, 1, rk);
    uint8_t views[2][16] = {{0}};
    views[0][0] = 2;
    memcpy(views[0] + 4, "hi", 2);
    views[1][0] = 20; /* long: prefix, buffer 1, offset 3 */
    memcpy(views[1] + 4, "abcd", 4);
    views[1][8] = 1;
    views[1][12] = 3;
    int64_t sizes[2] = {4, 23};
    const void *b[5] = {NULL, views, "zzzz", "xyzabcdefghijklmnopqrstuvw", sizes};
    struct ArrowArray va = arr(2, 0, 0, 5, b, 0, NULL);
    struct ArrowArray *bk[1] = {&va};
    const void *none[1] = {NULL};
    struct ArrowArray batch = arr(2, 0, 0, 1, none, 1, bk);
    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&root, &err);
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &batch, &out, &err), VT_ERR_OK);
    struct msg m[1];
    int eos;
    CHECK_EQ_INT(parse_stream((const uint8_t *)out.buf, out.len, m, 1, &eos), 1);
    struct rb r;
    read_rb(&m[0], m[0].header, &r);
    CHECK_EQ_INT(r.n_bufs, 4);
    CHECK_EQ_INT(r.bufs[3][1], 23);
    uint32_t vc = fld(m[0].meta, m[0].header, 4);
    CHECK(vc != 0);
    if (vc) {
        uint32_t vec = deref(m[0].meta, vc);
        CHECK_EQ_INT(rd32(m[0].meta, vec), 1);
        CHECK(rd64(m[0].meta, vec + 4) == 2);
    }
    sb_release(&out);
    arrow_ipc_writer_destroy(w);
}

TEST(empty_schema_and_zero_rows)
{
    struct fixture f;
    fixture_init(&f);
    f.batch.length = 0;
    struct vt_error err = {0};
    struct arrow_ipc_writer *w = arrow_ipc_writer_create(&f.root, &err);
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(arrow_ipc_write_batch(w, &f.batch, &out, &err), VT_ERR_OK);
    struct msg m[1];
    int eos;
    CHECK_EQ_INT(parse_stream((const uint8_t *)out.buf, out.len, m, 1, &eos), 1);
    struct rb r;
    read_rb(&m[0], m[0].header, &r);
    CHECK_EQ_INT(r.length, 0);
    CHECK_EQ_INT(r.bufs[3][1], 4); /* an offsets buffer still holds its single 0 */
    sb_release(&out);
    arrow_ipc_writer_destroy(w);
}

RUN_TESTS(TEST_CASE(fb_table_layout_and_alignment), TEST_CASE(fb_vectors_aligned),
          TEST_CASE(fb_backward_patch_fails), TEST_CASE(bitmap_count_and_copy),
          TEST_CASE(stream_schema_batch_eos_framing), TEST_CASE(sliced_batch_is_rebased),
          TEST_CASE(unknown_null_count_is_computed), TEST_CASE(filled_buffer_is_the_copied_bytes),
          TEST_CASE(errors_leave_output_untouched),
          TEST_CASE(unsupported_formats_rejected), TEST_CASE(dictionary_sent_when_changed),
          TEST_CASE(list_view_and_unions), TEST_CASE(views_carry_variadic_counts),
          TEST_CASE(empty_schema_and_zero_rows))
