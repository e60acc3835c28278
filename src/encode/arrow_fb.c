/*
 * The front-to-back FlatBuffers builder behind the Arrow IPC metadata (see
 * arrow_fb.h for the model). Encoding rules followed here, from the
 * FlatBuffers binary format: the buffer starts with a uoffset to the root
 * table; a table starts with an soffset (table - vtable) and holds its fields
 * inline; a vtable is [u16 vtable bytes, u16 table bytes, u16 field offset...]
 * with 0 for an absent field; uoffsets are unsigned distances from the offset's
 * own position to a later object; strings and vectors start with a u32 count.
 * Everything is little-endian (this file refuses to build elsewhere).
 */
#include "encode/arrow_fb.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Arrow IPC writer assumes a little-endian host"
#endif

void arrow_fb_init(struct arrow_fb *b)
{
    sb_init(&b->sb, ARROW_FB_MAX_BYTES);
    b->failed = false;
}

void arrow_fb_release(struct arrow_fb *b)
{
    sb_release(&b->sb);
}

bool arrow_fb_failed(const struct arrow_fb *b)
{
    return b->failed || b->sb.overflow;
}

static void put(struct arrow_fb *b, const void *p, size_t n)
{
    if (!b->failed && sb_add(&b->sb, p, n) < 0)
        b->failed = true;
}

static void put_zeros(struct arrow_fb *b, size_t n)
{
    static const uint8_t zeros[16];
    while (n > 0 && !b->failed) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        put(b, zeros, k);
        n -= k;
    }
}

/* Pads with zeros until len % align == rem (align a power of two). */
static void align_to(struct arrow_fb *b, size_t align, size_t rem)
{
    size_t mis = (b->sb.len + align - rem) & (align - 1);
    if (mis)
        put_zeros(b, align - mis);
}

static void store_u32(struct arrow_fb *b, uint32_t at, uint32_t v)
{
    if (!b->failed && (size_t)at + 4 <= b->sb.len)
        memcpy(b->sb.buf + at, &v, 4);
}

void arrow_fb_reset(struct arrow_fb *b)
{
    sb_reset(&b->sb);
    b->sb.overflow = false;
    b->failed = false;
    put_zeros(b, 4); /* root uoffset, set by arrow_fb_finish */
}

void arrow_fb_table_begin(struct arrow_fb_table *t)
{
    memset(t, 0, sizeof *t);
}

void arrow_fb_add_scalar(struct arrow_fb_table *t, int slot, unsigned size, uint64_t value)
{
    if (slot < 0 || slot >= ARROW_FB_MAX_SLOTS)
        return;
    t->slot[slot].size = (uint8_t)size;
    t->slot[slot].is_ref = false;
    t->slot[slot].value = value;
    if (slot + 1 > t->nslots)
        t->nslots = slot + 1;
}

void arrow_fb_add_ref(struct arrow_fb_table *t, int slot)
{
    arrow_fb_add_scalar(t, slot, 4, 0);
    if (slot >= 0 && slot < ARROW_FB_MAX_SLOTS)
        t->slot[slot].is_ref = true;
}

uint32_t arrow_fb_table_end(struct arrow_fb *b, struct arrow_fb_table *t)
{
    /* Inline layout: soffset, then fields by decreasing size, so each field is
     * aligned when the table start is (4 mod 8 if there are 8-byte fields). */
    uint16_t field_off[ARROW_FB_MAX_SLOTS] = {0};
    size_t inline_size = 4;
    bool has8 = false;
    for (unsigned sz = 8; sz >= 1; sz /= 2) {
        for (int i = 0; i < t->nslots; i++) {
            if (t->slot[i].size == sz) {
                field_off[i] = (uint16_t)inline_size;
                inline_size += sz;
                if (sz == 8)
                    has8 = true;
            }
        }
    }

    /* vtable */
    align_to(b, 2, 0);
    uint32_t vt = (uint32_t)b->sb.len;
    uint16_t head[2] = {(uint16_t)(4 + 2 * t->nslots), (uint16_t)inline_size};
    put(b, head, sizeof head);
    put(b, field_off, 2 * (size_t)t->nslots);

    /* table */
    if (has8)
        align_to(b, 8, 4);
    else
        align_to(b, 4, 0);
    uint32_t tpos = (uint32_t)b->sb.len;
    int32_t soff = (int32_t)(tpos - vt);
    put(b, &soff, 4);
    for (unsigned sz = 8; sz >= 1; sz /= 2) {
        for (int i = 0; i < t->nslots; i++) {
            if (t->slot[i].size == sz) {
                t->slot[i].at = tpos + field_off[i];
                put(b, &t->slot[i].value, sz); /* low bytes first: little-endian */
            }
        }
    }
    return tpos;
}

uint32_t arrow_fb_string(struct arrow_fb *b, const char *s, size_t n)
{
    align_to(b, 4, 0);
    uint32_t pos = (uint32_t)b->sb.len;
    uint32_t len = (uint32_t)n;
    put(b, &len, 4);
    if (n)
        put(b, s, n);
    put_zeros(b, 1);
    return pos;
}

uint32_t arrow_fb_vector(struct arrow_fb *b, size_t elem_size, size_t align, size_t count,
                         const void *data)
{
    if (align < 4)
        align = 4;
    align_to(b, align, align - 4); /* the data after the u32 count lands aligned */
    uint32_t pos = (uint32_t)b->sb.len;
    uint32_t n = (uint32_t)count;
    put(b, &n, 4);
    if (data)
        put(b, data, elem_size * count);
    else
        put_zeros(b, elem_size * count);
    return pos;
}

void arrow_fb_patch(struct arrow_fb *b, uint32_t at, uint32_t target)
{
    if (target <= at) { /* a backward offset is a builder misuse: fail loudly */
        b->failed = true;
        return;
    }
    store_u32(b, at, target - at);
}

void arrow_fb_finish(struct arrow_fb *b, uint32_t root_table)
{
    store_u32(b, 0, root_table);
}
