/*
 * Arrow IPC stream writer: turns an ArrowSchema + ArrowArray batches (the C
 * Data Interface, as DuckDB exports them) into the Arrow IPC streaming format
 * for the Arrow HTTP responses. Our own implementation of the Arrow columnar
 * format and IPC specifications (Schema.fbs, Message.fbs); see arrow_ipc.h for
 * the API and the list of types.
 *
 * Shape of the work:
 *  - create: the schema is parsed once into a "plan" (one node per field in
 *    pre-order: its physical layout and child count) and the Schema message is
 *    built and framed once.
 *  - write_batch: one walk over plan + array collects the FieldNodes and a
 *    list of buffer "ops" (mostly plain memcpy of a buffer range; bit shifting
 *    and offset rebasing only for slices), which gives the body layout; then
 *    the RecordBatch metadata is built, the output grown once to the message
 *    size, and the ops executed straight into it.
 */
#include "encode/arrow_ipc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "encode/arrow_fb.h"

/* Nesting deeper than this is refused (recursion is bounded by it). */
#define ARROW_IPC_MAX_DEPTH 64

/* flatbuffer enum values (Schema.fbs / Message.fbs) */
enum {
    T_NULL = 1, T_INT = 2, T_FLOAT = 3, T_BINARY = 4, T_UTF8 = 5, T_BOOL = 6,
    T_DECIMAL = 7, T_DATE = 8, T_TIME = 9, T_TIMESTAMP = 10, T_INTERVAL = 11,
    T_LIST = 12, T_STRUCT = 13, T_UNION = 14, T_FIXED_BINARY = 15,
    T_FIXED_LIST = 16, T_MAP = 17, T_DURATION = 18, T_LARGE_BINARY = 19,
    T_LARGE_UTF8 = 20, T_LARGE_LIST = 21, T_RUN_END = 22, T_BINARY_VIEW = 23,
    T_UTF8_VIEW = 24, T_LIST_VIEW = 25, T_LARGE_LIST_VIEW = 26,
};
enum { MH_SCHEMA = 1, MH_DICTIONARY_BATCH = 2, MH_RECORD_BATCH = 3 };
enum { METADATA_V5 = 4 };

/* Physical layouts: what buffers a node has and how its children relate. */
enum kind {
    K_NULL,      /* no buffers */
    K_FIXED,     /* validity, values of `width` bytes */
    K_BOOL,      /* validity, bit-packed values */
    K_BIN32,     /* validity, int32 offsets, data */
    K_BIN64,     /* validity, int64 offsets, data */
    K_VIEW,      /* validity, 16-byte views, variadic data buffers */
    K_LIST32,    /* validity, int32 offsets; child */
    K_LIST64,    /* validity, int64 offsets; child */
    K_LVIEW32,   /* validity, int32 offsets, int32 sizes; child */
    K_LVIEW64,   /* validity, int64 offsets, int64 sizes; child */
    K_FSL,       /* validity; child of width * length */
    K_STRUCT,    /* validity; children */
    K_SUNION,    /* type ids; children (no validity in V5) */
    K_DUNION,    /* type ids, int32 offsets; children */
};

struct plan_node {
    uint8_t kind;
    uint32_t width;     /* K_FIXED: bytes per value; K_FSL: list size */
    int32_t n_children;
    int32_t dict;       /* -1, or the dictionary this (index) node refers to */
};

struct plan {
    struct plan_node *nodes;
    size_t n, cap;
    bool has_views;     /* RecordBatch needs variadicBufferCounts */
};

/* One body buffer to write: where its bytes come from and how. */
enum op { OP_COPY, OP_BITS, OP_OFF32, OP_OFF64, OP_ZERO };
struct bufop {
    uint8_t op;
    const uint8_t *src;
    int64_t arg;  /* OP_BITS: source bit offset; OP_OFFxx: base to subtract */
    int64_t n;    /* OP_BITS: bits; OP_OFFxx: entries; else bytes */
};

struct ipc_node { int64_t length, null_count; };   /* FieldNode */
struct ipc_buf { int64_t offset, length; };        /* Buffer */

/* Per-message scratch, reused across batches. */
struct scratch {
    struct ipc_node *nodes;
    size_t n_nodes, cap_nodes;
    struct ipc_buf *bufs;
    struct bufop *ops;
    size_t n_bufs, cap_bufs;
    int64_t *variadic;
    size_t n_variadic, cap_variadic;
    int64_t body_len;
    const struct ArrowArray **dict_arrays; /* per dictionary, set by the walk */
    const struct arrow_ipc_fill *fills;    /* buffers their producer writes (this batch) */
    size_t nfills;
};

struct dict_state {
    int64_t id;
    struct plan values;
    struct strbuf last; /* the last DictionaryBatch message sent (to skip resends) */
    bool sent;
};

struct arrow_ipc_writer {
    struct plan plan;          /* the columns, in pre-order */
    int32_t n_columns;
    struct dict_state *dicts;
    size_t n_dicts, cap_dicts;
    struct strbuf schema_msg;  /* the framed Schema message */
    struct arrow_fb fb;
    struct scratch main, dict;
    struct strbuf dict_msg;    /* a DictionaryBatch being built */
    struct arrow_ipc_stats stats;
};

static inline int64_t pad8(int64_t n)
{
    return (n + (ARROW_IPC_ALIGN - 1)) & ~(int64_t)(ARROW_IPC_ALIGN - 1);
}

/* ---------------------------------------------------------------- bits */

int64_t arrow_ipc_count_nulls(const uint8_t *bitmap, int64_t bit_offset, int64_t n)
{
    if (!bitmap || n <= 0)
        return 0;
    int64_t i = bit_offset, end = bit_offset + n, set = 0;
    while (i < end && (i & 63)) {
        set += (bitmap[i >> 3] >> (i & 7)) & 1;
        i++;
    }
    for (; i + 64 <= end; i += 64) {
        uint64_t word;
        memcpy(&word, bitmap + (i >> 3), 8);
        set += __builtin_popcountll(word);
    }
    for (; i < end; i++)
        set += (bitmap[i >> 3] >> (i & 7)) & 1;
    return n - set;
}

void arrow_ipc_copy_bits(uint8_t *dst, const uint8_t *src, int64_t bit_offset, int64_t n)
{
    if (n <= 0)
        return;
    int64_t nbytes = (n + 7) / 8;
    const uint8_t *s = src + (bit_offset >> 3);
    unsigned shift = (unsigned)(bit_offset & 7);
    if (shift == 0) {
        memcpy(dst, s, (size_t)nbytes);
    } else {
        for (int64_t i = 0; i < nbytes; i++) {
            unsigned v = (unsigned)s[i] >> shift;
            /* the next source byte only when its bits are inside the range,
             * so we never read past the source bitmap */
            if (8 * i + (8 - shift) < n)
                v |= (unsigned)s[i + 1] << (8 - shift);
            dst[i] = (uint8_t)v;
        }
    }
    if (n & 7)
        dst[nbytes - 1] &= (uint8_t)((1u << (n & 7)) - 1);
}

/* ---------------------------------------------------------------- growth */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static void scratch_release(struct scratch *s)
{
    free(s->nodes);
    free(s->bufs);
    free(s->ops);
    free(s->variadic);
    free(s->dict_arrays);
    memset(s, 0, sizeof *s);
}

static void scratch_reset(struct scratch *s)
{
    s->n_nodes = s->n_bufs = s->n_variadic = 0;
    s->body_len = 0;
    s->fills = NULL;
    s->nfills = 0;
}

/* The fill whose key `src` is, or NULL. */
static const struct arrow_ipc_fill *fill_of(const struct scratch *s, const void *src)
{
    for (size_t i = 0; i < s->nfills; i++)
        if (s->fills[i].key == src)
            return &s->fills[i];
    return NULL;
}

/* ---------------------------------------------------------------- format parsing */

/* What a format string says: the flatbuffer Type and the physical layout. */
struct type_info {
    uint8_t type;          /* T_* */
    uint8_t kind;          /* K_* */
    uint32_t width;        /* bytes per value (K_FIXED) or list size (K_FSL) */
    int32_t bit_width;     /* Int, Decimal, Time */
    bool is_signed;        /* Int */
    int16_t unit;          /* FloatingPoint precision, Date/Time/Timestamp/Duration/Interval unit */
    int32_t precision, scale;
    const char *tz;        /* Timestamp: NUL-terminated, NULL or "" for none */
    const char *type_ids;  /* Union: comma-separated ids, NULL for 0..n-1 */
    int16_t union_mode;    /* 0 sparse, 1 dense */
};

static bool parse_int(const char **p, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(*p, &end, 10);
    if (end == *p || errno || v < lo || v > hi)
        return false;
    *p = end;
    *out = v;
    return true;
}

static int16_t time_unit(char c)
{
    switch (c) {
    case 's': return 0;
    case 'm': return 1;
    case 'u': return 2;
    case 'n': return 3;
    default: return -1;
    }
}

/* Parses one C Data Interface format string. n_children is the schema's, to
 * check nested types have the children their layout needs. */
static bool parse_format(const char *f, int64_t n_children, struct type_info *ti)
{
    memset(ti, 0, sizeof *ti);
    ti->kind = K_FIXED;
    if (!f || !*f)
        return false;
    if (f[1] == '\0') {
        switch (f[0]) {
        case 'n': ti->type = T_NULL; ti->kind = K_NULL; return true;
        case 'b': ti->type = T_BOOL; ti->kind = K_BOOL; return true;
        case 'c': case 'C': case 's': case 'S': case 'i': case 'I': case 'l': case 'L': {
            static const char codes[] = "cCsSiIlL";
            int idx = (int)(strchr(codes, f[0]) - codes);
            ti->type = T_INT;
            ti->bit_width = 8 << (idx / 2);
            ti->is_signed = (idx % 2) == 0;
            ti->width = (uint32_t)ti->bit_width / 8;
            return true;
        }
        case 'e': ti->type = T_FLOAT; ti->unit = 0; ti->width = 2; return true;
        case 'f': ti->type = T_FLOAT; ti->unit = 1; ti->width = 4; return true;
        case 'g': ti->type = T_FLOAT; ti->unit = 2; ti->width = 8; return true;
        case 'z': ti->type = T_BINARY; ti->kind = K_BIN32; return true;
        case 'Z': ti->type = T_LARGE_BINARY; ti->kind = K_BIN64; return true;
        case 'u': ti->type = T_UTF8; ti->kind = K_BIN32; return true;
        case 'U': ti->type = T_LARGE_UTF8; ti->kind = K_BIN64; return true;
        default: return false;
        }
    }
    const char *p;
    int64_t v;
    switch (f[0]) {
    case 'v':
        if (strcmp(f, "vz") == 0) { ti->type = T_BINARY_VIEW; ti->kind = K_VIEW; return true; }
        if (strcmp(f, "vu") == 0) { ti->type = T_UTF8_VIEW; ti->kind = K_VIEW; return true; }
        return false;
    case 'd': { /* d:P,S[,W] */
        if (f[1] != ':')
            return false;
        p = f + 2;
        if (!parse_int(&p, 1, 76, &v) || *p != ',')
            return false;
        ti->precision = (int32_t)v;
        p++;
        if (!parse_int(&p, -76, 76, &v))
            return false;
        ti->scale = (int32_t)v;
        ti->bit_width = 128;
        if (*p == ',') {
            p++;
            if (!parse_int(&p, 32, 256, &v) || (v != 32 && v != 64 && v != 128 && v != 256))
                return false;
            ti->bit_width = (int32_t)v;
        }
        if (*p)
            return false;
        ti->type = T_DECIMAL;
        ti->width = (uint32_t)ti->bit_width / 8;
        return true;
    }
    case 'w': /* w:N fixed-size binary */
        if (f[1] != ':')
            return false;
        p = f + 2;
        if (!parse_int(&p, 1, INT32_MAX, &v) || *p)
            return false;
        ti->type = T_FIXED_BINARY;
        ti->width = (uint32_t)v;
        return true;
    case 't':
        if (f[1] == 'd' && f[3] == '\0') { /* tdD, tdm */
            ti->type = T_DATE;
            if (f[2] == 'D') { ti->unit = 0; ti->width = 4; return true; }
            if (f[2] == 'm') { ti->unit = 1; ti->width = 8; return true; }
            return false;
        }
        if (f[1] == 't' && f[3] == '\0') { /* tts ttm ttu ttn */
            ti->type = T_TIME;
            ti->unit = time_unit(f[2]);
            if (ti->unit < 0)
                return false;
            ti->width = ti->unit <= 1 ? 4 : 8;
            ti->bit_width = (int32_t)ti->width * 8;
            return true;
        }
        if (f[1] == 's' && f[2] && f[3] == ':') { /* tsX:TZ */
            ti->type = T_TIMESTAMP;
            ti->unit = time_unit(f[2]);
            if (ti->unit < 0)
                return false;
            ti->width = 8;
            ti->tz = f + 4;
            return true;
        }
        if (f[1] == 'D' && f[3] == '\0') { /* tDs tDm tDu tDn */
            ti->type = T_DURATION;
            ti->unit = time_unit(f[2]);
            ti->width = 8;
            return ti->unit >= 0;
        }
        if (f[1] == 'i' && f[3] == '\0') { /* tiM tiD tin */
            ti->type = T_INTERVAL;
            if (f[2] == 'M') { ti->unit = 0; ti->width = 4; return true; }
            if (f[2] == 'D') { ti->unit = 1; ti->width = 8; return true; }
            if (f[2] == 'n') { ti->unit = 2; ti->width = 16; return true; }
        }
        return false;
    case '+':
        if (strcmp(f, "+l") == 0) { ti->type = T_LIST; ti->kind = K_LIST32; return n_children == 1; }
        if (strcmp(f, "+L") == 0) { ti->type = T_LARGE_LIST; ti->kind = K_LIST64; return n_children == 1; }
        if (strcmp(f, "+vl") == 0) { ti->type = T_LIST_VIEW; ti->kind = K_LVIEW32; return n_children == 1; }
        if (strcmp(f, "+vL") == 0) { ti->type = T_LARGE_LIST_VIEW; ti->kind = K_LVIEW64; return n_children == 1; }
        if (strcmp(f, "+s") == 0) { ti->type = T_STRUCT; ti->kind = K_STRUCT; return true; }
        if (strcmp(f, "+m") == 0) { ti->type = T_MAP; ti->kind = K_LIST32; return n_children == 1; }
        if (f[1] == 'w' && f[2] == ':') {
            p = f + 3;
            if (!parse_int(&p, 0, INT32_MAX, &v) || *p || n_children != 1)
                return false;
            ti->type = T_FIXED_LIST;
            ti->kind = K_FSL;
            ti->width = (uint32_t)v;
            return true;
        }
        if (f[1] == 'u' && (f[2] == 'd' || f[2] == 's') && f[3] == ':') {
            ti->type = T_UNION;
            ti->kind = f[2] == 'd' ? K_DUNION : K_SUNION;
            ti->union_mode = f[2] == 'd' ? 1 : 0;
            ti->type_ids = f + 4;
            /* the id list must name one id (0..127) per child */
            int64_t count = 0;
            p = f + 4;
            while (*p) {
                if (!parse_int(&p, 0, 127, &v))
                    return false;
                count++;
                if (*p == ',')
                    p++;
                else if (*p)
                    return false;
            }
            return count == n_children;
        }
        return false; /* +r (run-end encoded) and anything unknown */
    default:
        return false;
    }
}

/* ---------------------------------------------------------------- plan */

static int plan_push(struct plan *pl, const struct plan_node *n)
{
    if (grow((void **)&pl->nodes, &pl->cap, pl->n + 1, sizeof *pl->nodes) < 0)
        return -1;
    pl->nodes[pl->n++] = *n;
    return 0;
}

static void plan_release(struct plan *pl)
{
    free(pl->nodes);
    memset(pl, 0, sizeof *pl);
}

static enum vt_err plan_add(struct arrow_ipc_writer *w, struct plan *pl, const struct ArrowSchema *s,
                            int depth, bool in_dictionary, struct vt_error *err);

/* A dictionary-encoded field: the batch node is the index (an integer), the
 * values get their own plan, sent in DictionaryBatch messages. */
static enum vt_err plan_add_dict(struct arrow_ipc_writer *w, struct plan *pl,
                                 const struct ArrowSchema *s, int depth, struct vt_error *err)
{
    struct type_info idx;
    if (!parse_format(s->format, 0, &idx) || idx.type != T_INT)
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: dictionary index type '%s' is not an integer",
                            s->format ? s->format : "");
    if (grow((void **)&w->dicts, &w->cap_dicts, w->n_dicts + 1, sizeof *w->dicts) < 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
    size_t d = w->n_dicts++;
    memset(&w->dicts[d], 0, sizeof w->dicts[d]);
    w->dicts[d].id = (int64_t)d;
    sb_init(&w->dicts[d].last, 0);
    struct plan_node n = {K_FIXED, idx.width, 0, (int32_t)d};
    if (plan_push(pl, &n) < 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
    /* build the values plan in a local first: dicts may move while it grows */
    struct plan values = {0};
    enum vt_err rc = plan_add(w, &values, s->dictionary, depth + 1, true, err);
    w->dicts[d].values = values;
    return rc;
}

static enum vt_err plan_add(struct arrow_ipc_writer *w, struct plan *pl, const struct ArrowSchema *s,
                            int depth, bool in_dictionary, struct vt_error *err)
{
    if (depth > ARROW_IPC_MAX_DEPTH)
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: schema nested deeper than %d levels",
                            ARROW_IPC_MAX_DEPTH);
    if (s->dictionary) {
        if (in_dictionary)
            return vt_error_set(err, VT_ERR_INTERNAL,
                                "arrow: dictionary-encoded values inside a dictionary are not supported");
        return plan_add_dict(w, pl, s, depth, err);
    }
    struct type_info ti;
    if (!parse_format(s->format, s->n_children, &ti))
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: unsupported Arrow format '%s'",
                            s->format ? s->format : "(null)");
    if (s->n_children < 0 || s->n_children > INT32_MAX || (s->n_children > 0 && !s->children))
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: malformed schema children");
    bool nested = ti.kind >= K_LIST32;
    struct plan_node n = {ti.kind, ti.width, nested ? (int32_t)s->n_children : 0, -1};
    if (plan_push(pl, &n) < 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
    if (ti.kind == K_VIEW)
        pl->has_views = true;
    if (!nested)
        return VT_ERR_OK;
    for (int64_t i = 0; i < s->n_children; i++) {
        enum vt_err rc = plan_add(w, pl, s->children[i], depth + 1, in_dictionary, err);
        if (rc != VT_ERR_OK)
            return rc;
    }
    return VT_ERR_OK;
}

/* ---------------------------------------------------------------- schema message */

/* Reads an int32 of the C Data Interface metadata encoding. */
static int32_t md_i32(const char **p)
{
    int32_t v;
    memcpy(&v, *p, 4);
    *p += 4;
    return v;
}

/* custom_metadata: [KeyValue] from the C Data Interface metadata blob
 * (int32 n, then n x (int32 len, key, int32 len, value)). */
static void fb_metadata(struct arrow_fb *b, const char *md, uint32_t patch_at)
{
    const char *p = md;
    int32_t n = md_i32(&p);
    if (n < 0)
        n = 0;
    uint32_t vec = arrow_fb_vector(b, 4, 4, (size_t)n, NULL);
    arrow_fb_patch(b, patch_at, vec);
    for (int32_t i = 0; i < n; i++) {
        int32_t klen = md_i32(&p);
        const char *k = p;
        p += klen > 0 ? klen : 0;
        int32_t vlen = md_i32(&p);
        const char *v = p;
        p += vlen > 0 ? vlen : 0;
        struct arrow_fb_table t;
        arrow_fb_table_begin(&t);
        arrow_fb_add_ref(&t, 0);
        arrow_fb_add_ref(&t, 1);
        uint32_t kv = arrow_fb_table_end(b, &t);
        arrow_fb_patch(b, arrow_fb_vector_elem(vec, (size_t)i), kv);
        arrow_fb_patch(b, arrow_fb_ref_at(&t, 0),
                       arrow_fb_string(b, k, klen > 0 ? (size_t)klen : 0));
        arrow_fb_patch(b, arrow_fb_ref_at(&t, 1),
                       arrow_fb_string(b, v, vlen > 0 ? (size_t)vlen : 0));
    }
}

static bool md_present(const char *md)
{
    if (!md)
        return false;
    int32_t n;
    memcpy(&n, md, 4);
    return n > 0;
}

/* The Type table for ti (after the Field table that refers to it). */
static uint32_t fb_type(struct arrow_fb *b, const struct type_info *ti, int64_t flags)
{
    struct arrow_fb_table t;
    arrow_fb_table_begin(&t);
    switch (ti->type) {
    case T_INT:
        arrow_fb_add_scalar(&t, 0, 4, (uint32_t)ti->bit_width);
        arrow_fb_add_scalar(&t, 1, 1, ti->is_signed);
        break;
    case T_FLOAT:
    case T_DATE:
    case T_INTERVAL:
    case T_DURATION:
        arrow_fb_add_scalar(&t, 0, 2, (uint16_t)ti->unit);
        break;
    case T_DECIMAL:
        arrow_fb_add_scalar(&t, 0, 4, (uint32_t)ti->precision);
        arrow_fb_add_scalar(&t, 1, 4, (uint32_t)ti->scale);
        arrow_fb_add_scalar(&t, 2, 4, (uint32_t)ti->bit_width);
        break;
    case T_TIME:
        arrow_fb_add_scalar(&t, 0, 2, (uint16_t)ti->unit);
        arrow_fb_add_scalar(&t, 1, 4, (uint32_t)ti->bit_width);
        break;
    case T_TIMESTAMP:
        arrow_fb_add_scalar(&t, 0, 2, (uint16_t)ti->unit);
        if (ti->tz && *ti->tz)
            arrow_fb_add_ref(&t, 1);
        break;
    case T_FIXED_BINARY:
    case T_FIXED_LIST:
        arrow_fb_add_scalar(&t, 0, 4, ti->width);
        break;
    case T_MAP:
        arrow_fb_add_scalar(&t, 0, 1, (flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0);
        break;
    case T_UNION:
        arrow_fb_add_scalar(&t, 0, 2, (uint16_t)ti->union_mode);
        arrow_fb_add_ref(&t, 1);
        break;
    default:
        break; /* the other types are empty tables */
    }
    uint32_t pos = arrow_fb_table_end(b, &t);
    if (ti->type == T_TIMESTAMP && ti->tz && *ti->tz)
        arrow_fb_patch(b, arrow_fb_ref_at(&t, 1), arrow_fb_string(b, ti->tz, strlen(ti->tz)));
    if (ti->type == T_UNION) { /* parse_format checked: one id (0..127) per child */
        int32_t ids[128];
        const char *p = ti->type_ids;
        int64_t n = 0, v;
        while (*p && n < 128 && parse_int(&p, 0, 127, &v)) {
            ids[n++] = (int32_t)v;
            if (*p == ',')
                p++;
        }
        arrow_fb_patch(b, arrow_fb_ref_at(&t, 1), arrow_fb_vector(b, 4, 4, (size_t)n, ids));
    }
    return pos;
}

/* One Field table and everything under it; `patch_at` is the offset slot
 * that must point to it. `next_dict` numbers dictionaries in pre-order, the
 * same order plan_add assigns them. */
static void fb_field(struct arrow_fb *b, const struct ArrowSchema *s, uint32_t patch_at,
                     int64_t *next_dict)
{
    const struct ArrowSchema *vs = s->dictionary ? s->dictionary : s; /* the value type */
    struct type_info ti;
    parse_format(vs->format, vs->n_children, &ti); /* validated by plan_add */
    bool nested = ti.kind >= K_LIST32;
    int64_t nch = nested ? vs->n_children : 0;

    struct arrow_fb_table t;
    arrow_fb_table_begin(&t);
    if (s->name)
        arrow_fb_add_ref(&t, 0);
    arrow_fb_add_scalar(&t, 1, 1, (s->flags & ARROW_FLAG_NULLABLE) != 0);
    arrow_fb_add_scalar(&t, 2, 1, ti.type);
    arrow_fb_add_ref(&t, 3);
    if (s->dictionary)
        arrow_fb_add_ref(&t, 4);
    arrow_fb_add_ref(&t, 5); /* children, written even when empty (readers expect it) */
    /* extension types carry their name on the field's metadata; for a
     * dictionary, on the index schema (the field) */
    if (md_present(s->metadata))
        arrow_fb_add_ref(&t, 6);
    uint32_t field = arrow_fb_table_end(b, &t);
    arrow_fb_patch(b, patch_at, field);

    if (s->name)
        arrow_fb_patch(b, arrow_fb_ref_at(&t, 0), arrow_fb_string(b, s->name, strlen(s->name)));
    arrow_fb_patch(b, arrow_fb_ref_at(&t, 3), fb_type(b, &ti, vs->flags));

    if (s->dictionary) {
        struct type_info idx;
        parse_format(s->format, 0, &idx);
        struct arrow_fb_table d;
        arrow_fb_table_begin(&d);
        arrow_fb_add_scalar(&d, 0, 8, (uint64_t)(*next_dict)++);
        arrow_fb_add_ref(&d, 1);
        arrow_fb_add_scalar(&d, 2, 1, (s->flags & ARROW_FLAG_DICTIONARY_ORDERED) != 0);
        uint32_t dpos = arrow_fb_table_end(b, &d);
        arrow_fb_patch(b, arrow_fb_ref_at(&t, 4), dpos);
        struct arrow_fb_table it;
        arrow_fb_table_begin(&it);
        arrow_fb_add_scalar(&it, 0, 4, (uint32_t)idx.bit_width);
        arrow_fb_add_scalar(&it, 1, 1, idx.is_signed);
        arrow_fb_patch(b, arrow_fb_ref_at(&d, 1), arrow_fb_table_end(b, &it));
    }

    uint32_t vec = arrow_fb_vector(b, 4, 4, (size_t)nch, NULL);
    arrow_fb_patch(b, arrow_fb_ref_at(&t, 5), vec);
    for (int64_t i = 0; i < nch; i++)
        fb_field(b, vs->children[i], arrow_fb_vector_elem(vec, (size_t)i), next_dict);

    if (md_present(s->metadata))
        fb_metadata(b, s->metadata, arrow_fb_ref_at(&t, 6));
}

/* Appends prefix + metadata (padded) for a message with `body_len` body bytes;
 * returns a pointer to where the body goes (out is grown for all of it). */
static uint8_t *frame_begin(struct strbuf *out, const struct arrow_fb *b, int64_t body_len)
{
    size_t meta = arrow_fb_size(b);
    size_t padded = (meta + 7) & ~(size_t)7;
    if (padded > INT32_MAX || body_len < 0)
        return NULL;
    size_t total = 8 + padded + (size_t)body_len;
    if (sb_grow(out, total) < 0)
        return NULL;
    uint8_t *p = (uint8_t *)out->buf + out->len;
    uint32_t cont = 0xFFFFFFFFu;
    int32_t len = (int32_t)padded;
    memcpy(p, &cont, 4);
    memcpy(p + 4, &len, 4);
    memcpy(p + 8, arrow_fb_data(b), meta);
    memset(p + 8 + meta, 0, padded - meta);
    return p + 8 + padded;
}

static void frame_end(struct strbuf *out, const uint8_t *end)
{
    out->len = (size_t)(end - (const uint8_t *)out->buf);
    out->buf[out->len] = '\0'; /* strbuf keeps a NUL after len; sb_grow left room */
}

/* The Message table with header type `mh`; returns the header's offset slot. */
static uint32_t fb_message(struct arrow_fb *b, uint8_t mh, int64_t body_len)
{
    arrow_fb_reset(b);
    struct arrow_fb_table m;
    arrow_fb_table_begin(&m);
    arrow_fb_add_scalar(&m, 0, 2, METADATA_V5);
    arrow_fb_add_scalar(&m, 1, 1, mh);
    arrow_fb_add_ref(&m, 2);
    arrow_fb_add_scalar(&m, 3, 8, (uint64_t)body_len);
    uint32_t root = arrow_fb_table_end(b, &m);
    arrow_fb_finish(b, root);
    return arrow_fb_ref_at(&m, 2);
}

static enum vt_err build_schema_message(struct arrow_ipc_writer *w, const struct ArrowSchema *schema,
                                        struct vt_error *err)
{
    struct arrow_fb *b = &w->fb;
    uint32_t header_at = fb_message(b, MH_SCHEMA, 0);
    struct arrow_fb_table s;
    arrow_fb_table_begin(&s);
    arrow_fb_add_scalar(&s, 0, 2, 0); /* Little endian */
    arrow_fb_add_ref(&s, 1);
    if (md_present(schema->metadata))
        arrow_fb_add_ref(&s, 2);
    uint32_t spos = arrow_fb_table_end(b, &s);
    arrow_fb_patch(b, header_at, spos);
    uint32_t vec = arrow_fb_vector(b, 4, 4, (size_t)schema->n_children, NULL);
    arrow_fb_patch(b, arrow_fb_ref_at(&s, 1), vec);
    int64_t next_dict = 0;
    for (int64_t i = 0; i < schema->n_children; i++)
        fb_field(b, schema->children[i], arrow_fb_vector_elem(vec, (size_t)i), &next_dict);
    if (md_present(schema->metadata))
        fb_metadata(b, schema->metadata, arrow_fb_ref_at(&s, 2));
    if (arrow_fb_failed(b))
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: schema metadata too large");
    sb_init(&w->schema_msg, 0);
    uint8_t *end = frame_begin(&w->schema_msg, b, 0);
    if (!end)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
    frame_end(&w->schema_msg, end);
    return VT_ERR_OK;
}

/* ---------------------------------------------------------------- create / destroy */

struct arrow_ipc_writer *arrow_ipc_writer_create(const struct ArrowSchema *schema,
                                                 struct vt_error *err)
{
    if (!schema || !schema->format || strcmp(schema->format, "+s") != 0 || schema->n_children < 0 ||
        (schema->n_children > 0 && !schema->children)) {
        vt_error_set(err, VT_ERR_INTERNAL, "arrow: the top-level schema must be a struct");
        return NULL;
    }
    struct arrow_ipc_writer *w = calloc(1, sizeof *w);
    if (!w) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
        return NULL;
    }
    arrow_fb_init(&w->fb);
    sb_init(&w->dict_msg, 0);
    w->n_columns = (int32_t)schema->n_children;
    enum vt_err rc = VT_ERR_OK;
    for (int64_t i = 0; i < schema->n_children && rc == VT_ERR_OK; i++)
        rc = plan_add(w, &w->plan, schema->children[i], 1, false, err);
    if (rc == VT_ERR_OK && w->n_dicts) {
        w->main.dict_arrays = calloc(w->n_dicts, sizeof *w->main.dict_arrays);
        if (!w->main.dict_arrays)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
    }
    if (rc == VT_ERR_OK)
        rc = build_schema_message(w, schema, err);
    if (rc != VT_ERR_OK) {
        arrow_ipc_writer_destroy(w);
        return NULL;
    }
    return w;
}

void arrow_ipc_writer_destroy(struct arrow_ipc_writer *w)
{
    if (!w)
        return;
    plan_release(&w->plan);
    for (size_t i = 0; i < w->n_dicts; i++) {
        plan_release(&w->dicts[i].values);
        sb_release(&w->dicts[i].last);
    }
    free(w->dicts);
    sb_release(&w->schema_msg);
    sb_release(&w->dict_msg);
    arrow_fb_release(&w->fb);
    scratch_release(&w->main);
    scratch_release(&w->dict);
    free(w);
}

void arrow_ipc_writer_stats(const struct arrow_ipc_writer *w, struct arrow_ipc_stats *out_stats)
{
    *out_stats = w->stats;
}

enum vt_err arrow_ipc_write_schema(struct arrow_ipc_writer *w, struct strbuf *out,
                                   struct vt_error *err)
{
    if (sb_add(out, w->schema_msg.buf, w->schema_msg.len) < 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: output buffer full");
    w->stats.bytes += w->schema_msg.len;
    return VT_ERR_OK;
}

int arrow_ipc_write_eos(struct strbuf *out)
{
    static const uint8_t eos[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
    return sb_add(out, eos, sizeof eos);
}

/* ---------------------------------------------------------------- batch walk */

static int add_buf(struct scratch *s, uint8_t op, const void *src, int64_t arg, int64_t n,
                   int64_t out_len)
{
    if (s->n_bufs == s->cap_bufs) { /* bufs and ops grow together */
        size_t c = s->cap_bufs ? s->cap_bufs * 2 : 64;
        void *nb = realloc(s->bufs, c * sizeof *s->bufs);
        if (!nb)
            return -1;
        s->bufs = nb;
        void *no = realloc(s->ops, c * sizeof *s->ops);
        if (!no)
            return -1;
        s->ops = no;
        s->cap_bufs = c;
    }
    s->bufs[s->n_bufs] = (struct ipc_buf){s->body_len, out_len};
    s->ops[s->n_bufs] = (struct bufop){op, (const uint8_t *)src, arg, n};
    s->n_bufs++;
    s->body_len += pad8(out_len);
    return 0;
}

static int add_node(struct scratch *s, int64_t length, int64_t null_count)
{
    if (grow((void **)&s->nodes, &s->cap_nodes, s->n_nodes + 1, sizeof *s->nodes) < 0)
        return -1;
    s->nodes[s->n_nodes++] = (struct ipc_node){length, null_count};
    return 0;
}

/* Node + validity buffer for the range [phys, phys + len) of a. The validity
 * buffer is omitted (length 0) when there are no nulls in the range. */
static int add_node_validity(struct scratch *s, const struct ArrowArray *a, int64_t phys, int64_t len)
{
    const uint8_t *bits = a->n_buffers > 0 ? (const uint8_t *)a->buffers[0] : NULL;
    int64_t nulls;
    if (!bits || len == 0)
        nulls = 0;
    else if (phys == a->offset && len == a->length && a->null_count >= 0)
        nulls = a->null_count;
    else
        nulls = arrow_ipc_count_nulls(bits, phys, len);
    if (add_node(s, len, nulls) < 0)
        return -1;
    if (nulls == 0)
        return add_buf(s, OP_COPY, NULL, 0, 0, 0);
    if ((phys & 7) == 0)
        return add_buf(s, OP_COPY, bits + phys / 8, 0, (len + 7) / 8, (len + 7) / 8);
    return add_buf(s, OP_BITS, bits, phys, len, (len + 7) / 8);
}

struct walk {
    struct scratch *s;
    const struct plan_node *nodes;
    size_t n_nodes;
    struct vt_error *err;
};

static int bad(struct walk *wk, const char *what)
{
    vt_error_set(wk->err, VT_ERR_INTERNAL, "arrow: array does not match the schema (%s)", what);
    return -1;
}

static int oom(struct walk *wk)
{
    vt_error_set(wk->err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
    return -1;
}

/* Offsets [phys, phys + len] of a variable-size layout: adds the offsets
 * buffer (rebased to start at 0 when the slice does not) and returns the
 * referenced range of the data/child in *o0, *o1. */
static int add_offsets(struct walk *wk, const void *buf, bool wide, int64_t phys, int64_t len,
                       int64_t *o0, int64_t *o1)
{
    size_t w = wide ? 8 : 4;
    if (len == 0) {
        *o0 = *o1 = 0;
        return add_buf(wk->s, OP_ZERO, NULL, 0, (int64_t)w, (int64_t)w) < 0 ? oom(wk) : 0;
    }
    if (!buf)
        return bad(wk, "missing offsets buffer");
    const uint8_t *ob = (const uint8_t *)buf;
    if (wide) {
        memcpy(o0, ob + 8 * phys, 8);
        memcpy(o1, ob + 8 * (phys + len), 8);
    } else {
        int32_t a, z;
        memcpy(&a, ob + 4 * phys, 4);
        memcpy(&z, ob + 4 * (phys + len), 4);
        *o0 = a;
        *o1 = z;
    }
    if (*o0 < 0 || *o1 < *o0)
        return bad(wk, "decreasing offsets");
    const uint8_t *src = (const uint8_t *)buf + (size_t)phys * w;
    int rc = *o0 == 0 ? add_buf(wk->s, OP_COPY, src, 0, (len + 1) * (int64_t)w, (len + 1) * (int64_t)w)
                      : add_buf(wk->s, wide ? OP_OFF64 : OP_OFF32, src, *o0, len + 1,
                                (len + 1) * (int64_t)w);
    return rc < 0 ? oom(wk) : 0;
}

/* Collects the nodes and buffers of plan node `idx` for the logical range
 * [start, start + len) of array a (a->offset is added here). Returns the index
 * of the next plan node (after this subtree), or -1. */
static int64_t walk(struct walk *wk, size_t idx, const struct ArrowArray *a, int64_t start, int64_t len)
{
    if (idx >= wk->n_nodes)
        return bad(wk, "more arrays than fields");
    const struct plan_node *pn = &wk->nodes[idx];
    struct scratch *s = wk->s;
    if (!a || start < 0 || len < 0 || a->offset < 0 || start + len > a->length)
        return bad(wk, "child array shorter than its parent");
    int64_t phys = a->offset + start;
    int64_t nch = pn->n_children;
    if (a->n_children < nch || (nch > 0 && !a->children))
        return bad(wk, "missing child arrays");
    size_t need_bufs = 0;
    switch (pn->kind) {
    case K_NULL: need_bufs = 0; break;
    case K_SUNION: case K_STRUCT: case K_FSL: need_bufs = 1; break;
    case K_FIXED: case K_BOOL: case K_LIST32: case K_LIST64: case K_DUNION: need_bufs = 2; break;
    case K_BIN32: case K_BIN64: case K_LVIEW32: case K_LVIEW64: case K_VIEW: need_bufs = 3; break;
    }
    if (a->n_buffers < (int64_t)need_bufs || (need_bufs && !a->buffers))
        return bad(wk, "missing buffers");
    const void *const *b = (const void *const *)a->buffers;

    switch (pn->kind) {
    case K_NULL:
        if (add_node(s, len, len) < 0)
            return oom(wk);
        return (int64_t)idx + 1;
    case K_FIXED:
        if (add_node_validity(s, a, phys, len) < 0)
            return oom(wk);
        if (len && !b[1])
            return bad(wk, "missing values buffer");
        if (add_buf(s, OP_COPY, len ? (const uint8_t *)b[1] + phys * (int64_t)pn->width : NULL, 0,
                    len * (int64_t)pn->width, len * (int64_t)pn->width) < 0)
            return oom(wk);
        if (pn->dict >= 0) {
            if (!a->dictionary)
                return bad(wk, "dictionary-encoded field without a dictionary");
            s->dict_arrays[pn->dict] = a->dictionary;
        }
        return (int64_t)idx + 1;
    case K_BOOL: {
        if (add_node_validity(s, a, phys, len) < 0)
            return oom(wk);
        if (len && !b[1])
            return bad(wk, "missing values buffer");
        int64_t nb = (len + 7) / 8;
        int rc = (phys & 7) == 0 ? add_buf(s, OP_COPY, len ? (const uint8_t *)b[1] + phys / 8 : NULL, 0, nb, nb)
                                 : add_buf(s, OP_BITS, b[1], phys, len, nb);
        if (rc < 0)
            return oom(wk);
        return (int64_t)idx + 1;
    }
    case K_BIN32:
    case K_BIN64: {
        if (add_node_validity(s, a, phys, len) < 0)
            return oom(wk);
        int64_t o0, o1;
        if (add_offsets(wk, b[1], pn->kind == K_BIN64, phys, len, &o0, &o1) < 0)
            return -1;
        if (o1 > o0 && !b[2])
            return bad(wk, "missing data buffer");
        /* a producer's fill writes its data from the start (arrow_ipc.h) */
        if (o0 != 0 && s->nfills && fill_of(s, b[2]))
            return bad(wk, "a filled data buffer sliced");
        if (add_buf(s, OP_COPY, o1 > o0 ? (const uint8_t *)b[2] + o0 : NULL, 0, o1 - o0, o1 - o0) < 0)
            return oom(wk);
        return (int64_t)idx + 1;
    }
    case K_VIEW: {
        /* C Data: validity, views, data buffers..., int64 sizes of the data
         * buffers. Views point into whole buffers, so those go out whole. */
        int64_t nvar = a->n_buffers - 3;
        const int64_t *sizes = (const int64_t *)b[a->n_buffers - 1];
        if (nvar > 0 && !sizes)
            return bad(wk, "missing variadic buffer sizes");
        if (add_node_validity(s, a, phys, len) < 0)
            return oom(wk);
        if (len && !b[1])
            return bad(wk, "missing views buffer");
        if (add_buf(s, OP_COPY, len ? (const uint8_t *)b[1] + phys * 16 : NULL, 0, len * 16, len * 16) < 0)
            return oom(wk);
        for (int64_t i = 0; i < nvar; i++) {
            if (sizes[i] < 0 || (sizes[i] > 0 && !b[2 + i]))
                return bad(wk, "bad variadic buffer");
            if (add_buf(s, OP_COPY, b[2 + i], 0, sizes[i], sizes[i]) < 0)
                return oom(wk);
        }
        if (grow((void **)&s->variadic, &s->cap_variadic, s->n_variadic + 1, sizeof *s->variadic) < 0)
            return oom(wk);
        s->variadic[s->n_variadic++] = nvar;
        return (int64_t)idx + 1;
    }
    case K_LIST32:
    case K_LIST64: {
        if (add_node_validity(s, a, phys, len) < 0)
            return oom(wk);
        int64_t o0, o1;
        if (add_offsets(wk, b[1], pn->kind == K_LIST64, phys, len, &o0, &o1) < 0)
            return -1;
        return walk(wk, idx + 1, a->children[0], o0, o1 - o0);
    }
    case K_LVIEW32:
    case K_LVIEW64: {
        /* offsets/sizes index the child directly: copy the slice of both and
         * write the child whole */
        int64_t w = pn->kind == K_LVIEW64 ? 8 : 4;
        if (add_node_validity(s, a, phys, len) < 0)
            return oom(wk);
        if (len && (!b[1] || !b[2]))
            return bad(wk, "missing list-view buffers");
        if (add_buf(s, OP_COPY, len ? (const uint8_t *)b[1] + phys * w : NULL, 0, len * w, len * w) < 0 ||
            add_buf(s, OP_COPY, len ? (const uint8_t *)b[2] + phys * w : NULL, 0, len * w, len * w) < 0)
            return oom(wk);
        const struct ArrowArray *c = a->children[0];
        return walk(wk, idx + 1, c, 0, c ? c->length : 0);
    }
    case K_FSL: {
        if (add_node_validity(s, a, phys, len) < 0)
            return oom(wk);
        int64_t w = pn->width;
        return walk(wk, idx + 1, a->children[0], phys * w, len * w);
    }
    case K_STRUCT: {
        if (add_node_validity(s, a, phys, len) < 0)
            return oom(wk);
        int64_t next = (int64_t)idx + 1;
        for (int64_t i = 0; i < nch && next >= 0; i++)
            next = walk(wk, (size_t)next, a->children[i], phys, len);
        return next;
    }
    case K_SUNION:
    case K_DUNION: {
        /* V5 unions have no validity buffer and no null count of their own */
        if (add_node(s, len, 0) < 0)
            return oom(wk);
        if (len && !b[0])
            return bad(wk, "missing union type ids");
        if (add_buf(s, OP_COPY, len ? (const uint8_t *)b[0] + phys : NULL, 0, len, len) < 0)
            return oom(wk);
        bool dense = pn->kind == K_DUNION;
        if (dense) {
            if (len && !b[1])
                return bad(wk, "missing union offsets");
            if (add_buf(s, OP_COPY, len ? (const uint8_t *)b[1] + phys * 4 : NULL, 0, len * 4, len * 4) < 0)
                return oom(wk);
        }
        int64_t next = (int64_t)idx + 1;
        for (int64_t i = 0; i < nch && next >= 0; i++) {
            const struct ArrowArray *c = a->children[i];
            /* sparse children are aligned with the union; dense children are
             * addressed by absolute offsets, so they go out whole */
            next = dense ? walk(wk, (size_t)next, c, 0, c ? c->length : 0)
                         : walk(wk, (size_t)next, c, phys, len);
        }
        return next;
    }
    }
    return bad(wk, "unknown layout");
}

/* Executes the buffer ops into the body (zero padding between buffers). */
static uint8_t *write_body(uint8_t *dst, const struct scratch *s)
{
    uint8_t *base = dst;
    for (size_t i = 0; i < s->n_bufs; i++) {
        const struct bufop *op = &s->ops[i];
        uint8_t *p = base + s->bufs[i].offset;
        int64_t len = s->bufs[i].length;
        switch (op->op) {
        case OP_COPY:
            if (len) {
                const struct arrow_ipc_fill *f = s->nfills ? fill_of(s, op->src) : NULL;
                if (f)
                    f->write(f->ctx, p, (size_t)len);
                else
                    memcpy(p, op->src, (size_t)len);
            }
            break;
        case OP_BITS:
            arrow_ipc_copy_bits(p, op->src, op->arg, op->n);
            break;
        case OP_OFF32: {
            /* memcpy per value: `out` may hold other bytes before the stream,
             * so p need not be 4-aligned in memory (compiles to plain moves) */
            int32_t base_off = (int32_t)op->arg;
            for (int64_t k = 0; k < op->n; k++) {
                int32_t v;
                memcpy(&v, op->src + 4 * k, 4);
                v -= base_off;
                memcpy(p + 4 * k, &v, 4);
            }
            break;
        }
        case OP_OFF64: {
            for (int64_t k = 0; k < op->n; k++) {
                int64_t v;
                memcpy(&v, op->src + 8 * k, 8);
                v -= op->arg;
                memcpy(p + 8 * k, &v, 8);
            }
            break;
        }
        case OP_ZERO:
            memset(p, 0, (size_t)len);
            break;
        }
        int64_t padded = pad8(len);
        if (padded > len)
            memset(p + len, 0, (size_t)(padded - len));
    }
    return base + s->body_len;
}

/* The RecordBatch table (length, nodes, buffers, variadic counts) for s. */
static uint32_t fb_record_batch(struct arrow_fb *b, const struct scratch *s, int64_t length,
                                bool has_views)
{
    struct arrow_fb_table r;
    arrow_fb_table_begin(&r);
    arrow_fb_add_scalar(&r, 0, 8, (uint64_t)length);
    arrow_fb_add_ref(&r, 1);
    arrow_fb_add_ref(&r, 2);
    if (has_views)
        arrow_fb_add_ref(&r, 4);
    uint32_t pos = arrow_fb_table_end(b, &r);
    arrow_fb_patch(b, arrow_fb_ref_at(&r, 1),
                   arrow_fb_vector(b, sizeof(struct ipc_node), 8, s->n_nodes, s->nodes));
    arrow_fb_patch(b, arrow_fb_ref_at(&r, 2),
                   arrow_fb_vector(b, sizeof(struct ipc_buf), 8, s->n_bufs, s->bufs));
    if (has_views)
        arrow_fb_patch(b, arrow_fb_ref_at(&r, 4),
                       arrow_fb_vector(b, 8, 8, s->n_variadic, s->variadic));
    return pos;
}

/* Frames the message in w->fb with the body of s into out. */
static enum vt_err emit(struct strbuf *out, const struct arrow_fb *b, const struct scratch *s,
                        struct vt_error *err)
{
    if (arrow_fb_failed(b))
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: message metadata too large");
    uint8_t *body = frame_begin(out, b, s->body_len);
    if (!body)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: output buffer full");
    frame_end(out, write_body(body, s));
    return VT_ERR_OK;
}

/* Sends dictionary d (array `dict`) unless it equals the last one sent. */
static enum vt_err write_dictionary(struct arrow_ipc_writer *w, size_t d, const struct ArrowArray *dict,
                                    struct strbuf *out, struct vt_error *err)
{
    struct dict_state *ds = &w->dicts[d];
    struct scratch *s = &w->dict;
    scratch_reset(s);
    struct walk wk = {s, ds->values.nodes, ds->values.n, err};
    if (walk(&wk, 0, dict, 0, dict->length) < 0)
        return err->code ? err->code : VT_ERR_INTERNAL;

    struct arrow_fb *b = &w->fb;
    uint32_t header_at = fb_message(b, MH_DICTIONARY_BATCH, s->body_len);
    struct arrow_fb_table t;
    arrow_fb_table_begin(&t);
    arrow_fb_add_scalar(&t, 0, 8, (uint64_t)ds->id);
    arrow_fb_add_ref(&t, 1);
    arrow_fb_add_scalar(&t, 2, 1, 0); /* isDelta = false: a replacement */
    uint32_t tpos = arrow_fb_table_end(b, &t);
    arrow_fb_patch(b, header_at, tpos);
    arrow_fb_patch(b, arrow_fb_ref_at(&t, 1), fb_record_batch(b, s, dict->length, ds->values.has_views));

    sb_reset(&w->dict_msg);
    w->dict_msg.overflow = false;
    enum vt_err rc = emit(&w->dict_msg, b, s, err);
    if (rc != VT_ERR_OK)
        return rc;
    if (ds->sent && ds->last.len == w->dict_msg.len &&
        memcmp(ds->last.buf, w->dict_msg.buf, w->dict_msg.len) == 0)
        return VT_ERR_OK; /* unchanged (DuckDB ENUMs send the same dictionary every chunk) */
    if (sb_add(out, w->dict_msg.buf, w->dict_msg.len) < 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: output buffer full");
    w->stats.bytes += w->dict_msg.len;
    w->stats.dictionaries++;
    /* keep this message as the last one sent (swap buffers, no copy) */
    struct strbuf tmp = ds->last;
    ds->last = w->dict_msg;
    w->dict_msg = tmp;
    ds->sent = true;
    return VT_ERR_OK;
}

enum vt_err arrow_ipc_write_batch(struct arrow_ipc_writer *w, const struct ArrowArray *batch,
                                  struct strbuf *out, struct vt_error *err)
{
    return arrow_ipc_write_batch_fill(w, batch, NULL, 0, out, err);
}

enum vt_err arrow_ipc_write_batch_fill(struct arrow_ipc_writer *w, const struct ArrowArray *batch,
                                       const struct arrow_ipc_fill *fills, size_t nfills,
                                       struct strbuf *out, struct vt_error *err)
{
    if (!batch || batch->length < 0 || batch->offset < 0 || batch->n_children != w->n_columns ||
        (w->n_columns > 0 && !batch->children))
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: batch does not match the schema (columns)");
    struct scratch *s = &w->main;
    scratch_reset(s);
    s->fills = fills;
    s->nfills = fills ? nfills : 0;
    if (w->n_dicts)
        memset(s->dict_arrays, 0, w->n_dicts * sizeof *s->dict_arrays);
    struct walk wk = {s, w->plan.nodes, w->plan.n, err};
    int64_t next = 0;
    /* the top-level struct's offset slices every column */
    for (int32_t c = 0; c < w->n_columns && next >= 0; c++)
        next = walk(&wk, (size_t)next, batch->children[c], batch->offset, batch->length);
    if (next < 0)
        return err->code ? err->code : VT_ERR_INTERNAL;
    if ((size_t)next != w->plan.n)
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: batch does not match the schema (fields)");

    size_t mark = out->len;
    for (size_t d = 0; d < w->n_dicts; d++) {
        if (!s->dict_arrays[d])
            continue;
        enum vt_err rc = write_dictionary(w, d, s->dict_arrays[d], out, err);
        if (rc != VT_ERR_OK) {
            out->len = mark; /* nothing of this batch stays in out */
            if (out->buf)
                out->buf[mark] = '\0';
            return rc;
        }
    }

    struct arrow_fb *b = &w->fb;
    uint32_t header_at = fb_message(b, MH_RECORD_BATCH, s->body_len);
    arrow_fb_patch(b, header_at, fb_record_batch(b, s, batch->length, w->plan.has_views));
    size_t before = out->len;
    enum vt_err rc = emit(out, b, s, err);
    if (rc != VT_ERR_OK) {
        out->len = mark;
        if (out->buf)
            out->buf[mark] = '\0';
        for (size_t d = 0; d < w->n_dicts; d++)
            w->dicts[d].sent = false; /* what was sent was rolled back: resend */
        return rc;
    }
    w->stats.bytes += out->len - before;
    w->stats.batches++;
    w->stats.rows += (uint64_t)batch->length;
    return VT_ERR_OK;
}
