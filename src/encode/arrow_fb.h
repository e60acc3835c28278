/*
 * A minimal FlatBuffers builder: just what the Arrow IPC metadata
 * (Schema.fbs / Message.fbs) needs — tables with scalar and offset fields,
 * strings, vectors of structs and of offsets. No reflection, no generated code.
 *
 * Unlike the reference builders, this one writes front to back: a table is
 * written first with placeholder offset slots, and the objects it refers to
 * are appended after it and patched in (FlatBuffers offsets must point
 * forward, which this order satisfies by construction). Positions are byte
 * offsets from the start of the buffer, which is also the flatbuffer's start,
 * so alignment is relative to it.
 *
 * Errors (allocation, cap) are sticky: every call after a failure is a no-op
 * and arrow_fb_failed() reports it once at the end.
 */
#ifndef VT_ENCODE_ARROW_FB_H
#define VT_ENCODE_ARROW_FB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"

/* Metadata of one message never needs more than this (a schema of thousands
 * of nested fields is far below it). */
#define ARROW_FB_MAX_BYTES (64u * 1024 * 1024)
/* The largest table in Schema.fbs/Message.fbs has 7 fields (Field). */
#define ARROW_FB_MAX_SLOTS 8

struct arrow_fb {
    struct strbuf sb;
    bool failed;
};

/* One table being described before it is written: set the fields you need
 * (slot = the field's index in the .fbs table, union fields take two: the
 * `_type` byte then the offset), then arrow_fb_table_end writes it. */
struct arrow_fb_table {
    struct {
        uint8_t size;   /* 0 = absent; 1, 2, 4, 8 = scalar width; 4 with is_ref = offset */
        bool is_ref;
        uint64_t value; /* scalar bits, little-endian */
        uint32_t at;    /* after table_end: absolute position of this field */
    } slot[ARROW_FB_MAX_SLOTS];
    int nslots; /* highest slot index set + 1 */
};

void arrow_fb_init(struct arrow_fb *b);
void arrow_fb_release(struct arrow_fb *b);
/* Empties the buffer (keeps its memory) and reserves the root offset. */
void arrow_fb_reset(struct arrow_fb *b);
bool arrow_fb_failed(const struct arrow_fb *b);
/* The finished bytes; valid until the next builder call. */
static inline const uint8_t *arrow_fb_data(const struct arrow_fb *b)
{
    return (const uint8_t *)b->sb.buf;
}
static inline size_t arrow_fb_size(const struct arrow_fb *b)
{
    return b->sb.len;
}

void arrow_fb_table_begin(struct arrow_fb_table *t);
void arrow_fb_add_scalar(struct arrow_fb_table *t, int slot, unsigned size, uint64_t value);
void arrow_fb_add_ref(struct arrow_fb_table *t, int slot);
/* Writes the vtable and the table; returns the table's position. Scalars are
 * laid out largest first so each is naturally aligned. */
uint32_t arrow_fb_table_end(struct arrow_fb *b, struct arrow_fb_table *t);
/* Position of offset slot `slot` of a written table (to patch). */
static inline uint32_t arrow_fb_ref_at(const struct arrow_fb_table *t, int slot)
{
    return t->slot[slot].at;
}

/* A string (length, bytes, NUL); returns its position. */
uint32_t arrow_fb_string(struct arrow_fb *b, const char *s, size_t n);
/* A vector of `count` elements of `elem_size` bytes whose data is aligned to
 * `align` (a power of two, at least 4). `data` NULL leaves zeros (for offset
 * vectors patched later). Returns the vector's position (its length field). */
uint32_t arrow_fb_vector(struct arrow_fb *b, size_t elem_size, size_t align, size_t count,
                         const void *data);
/* Points the offset stored at `at` to the object at `target` (> at). */
void arrow_fb_patch(struct arrow_fb *b, uint32_t at, uint32_t target);
/* Element i of an offset vector written with arrow_fb_vector(b, 4, 4, n, NULL). */
static inline uint32_t arrow_fb_vector_elem(uint32_t vec, size_t i)
{
    return vec + 4 + (uint32_t)(4 * i);
}
/* Sets the root table (the buffer's first four bytes). */
void arrow_fb_finish(struct arrow_fb *b, uint32_t root_table);

#endif
