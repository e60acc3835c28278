/*
 * Delta deletion vectors (reader feature `deletionVectors`): the rows of a
 * data file a DELETE, UPDATE or MERGE invalidated without rewriting it.
 *
 * A descriptor in an add action says where the vector is:
 *
 *   storageType "i"   inline: pathOrInlineDv is Z85 text of the serialized
 *                     vector (sizeInBytes bytes once decoded)
 *   storageType "u"   a file of the table: pathOrInlineDv is an optional
 *                     prefix (a directory) then 20 characters of Z85 holding
 *                     a UUID; the file is <prefix>/deletion_vector_<uuid>.bin
 *   storageType "p"   a file named by an absolute path (as add.path is)
 *
 * A vector file starts with a version byte (1); at `offset` each vector is
 * framed as a 4-byte big-endian length (= sizeInBytes), the serialized vector
 * and a 4-byte big-endian CRC-32 of it. The serialized vector is Delta's
 * RoaringBitmapArray: a 4-byte little-endian magic number (1681511377), an
 * 8-byte little-endian bucket count, then per bucket (ascending) its 4-byte
 * key (the high 32 bits of the row positions, top bit clear) and a 32-bit
 * Roaring bitmap in the portable format, which CRoaring reads. Delta's
 * readers also accept its older "native" layout (magic 1681511376, a 4-byte
 * count, each bitmap preceded by its size, keys by position): so do we.
 *
 * Everything here reads untrusted bytes: lengths are checked before use, and
 * tests/fuzz/fuzz_delta_dv.c drives the parsers.
 */
#include <roaring/roaring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sources/delta.h"
#include "sources/sources_internal.h"
#include "util/limits.h"
#include "util/strbuf.h"

#define DV_MAGIC_PORTABLE 1681511377u
#define DV_MAGIC_NATIVE 1681511376u

struct dv_bucket {
    uint32_t key;
    roaring_bitmap_t *bm;
};

struct delta_dv {
    struct dv_bucket *b;
    size_t n;
    uint64_t card;
    uint64_t budget;            /* positions still allowed while parsing */
};

/* ---- Z85 -------------------------------------------------------------------- */

static const char z85_chars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                ".-:+=^!/*?&<>()[]{}@%$#";

static int z85_digit(unsigned char c)
{
    static signed char table[256];
    static int ready; /* benign race: every thread writes the same bytes */
    if (!ready) {
        memset(table, -1, sizeof table);
        for (int i = 0; i < 85; i++)
            table[(unsigned char)z85_chars[i]] = (signed char)i;
        ready = 1;
    }
    return table[c];
}

bool delta_z85_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *out_n)
{
    *out_n = 0;
    if (n % 5 != 0 || n / 5 * 4 > cap)
        return false;
    for (size_t i = 0; i < n; i += 5) {
        uint64_t v = 0;
        for (size_t k = 0; k < 5; k++) {
            int d = z85_digit((unsigned char)in[i + k]);
            if (d < 0)
                return false;
            v = v * 85 + (uint64_t)d;
        }
        if (v > 0xffffffffu)
            return false;
        out[(*out_n)++] = (unsigned char)(v >> 24);
        out[(*out_n)++] = (unsigned char)(v >> 16);
        out[(*out_n)++] = (unsigned char)(v >> 8);
        out[(*out_n)++] = (unsigned char)v;
    }
    return true;
}

/* ---- the RoaringBitmapArray --------------------------------------------------- */

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

void delta_dv_free(struct delta_dv *dv)
{
    if (!dv)
        return;
    for (size_t i = 0; i < dv->n; i++)
        roaring_bitmap_free(dv->b[i].bm);
    free(dv->b);
    free(dv);
}

struct norm {
    roaring_bitmap_t *out;
    uint32_t buf[4096];
    size_t n;
    uint64_t *budget;
    bool over;
};

static bool norm_one(uint32_t v, void *arg)
{
    struct norm *nm = arg;
    if (*nm->budget == 0) {
        nm->over = true;
        return false;
    }
    (*nm->budget)--;
    nm->buf[nm->n++] = v;
    if (nm->n == sizeof nm->buf / sizeof nm->buf[0]) {
        roaring_bitmap_add_many(nm->out, nm->n, nm->buf);
        nm->n = 0;
    }
    return true;
}

static enum vt_err normalize(const roaring_bitmap_t *in, uint64_t *budget,
                             roaring_bitmap_t **out, struct vt_error *err)
{
    struct norm nm = {.out = roaring_bitmap_create(), .budget = budget};
    if (!nm.out)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    roaring_iterate(in, norm_one, &nm);
    if (nm.n)
        roaring_bitmap_add_many(nm.out, nm.n, nm.buf);
    if (nm.over) {
        roaring_bitmap_free(nm.out);
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "deletion vector: more positions than its cardinality");
    }
    roaring_bitmap_run_optimize(nm.out);
    *out = nm.out;
    return VT_ERR_OK;
}

/* One 32-bit Roaring bitmap (portable format) at buf[*pos] for high word
 * `key`, at most `avail` bytes; `declared` (>= 0) is the size the native format
 * states for it. */
static enum vt_err add_bucket(struct delta_dv *dv, uint32_t key, const unsigned char *buf,
                              size_t *pos, size_t n, int64_t declared, struct vt_error *err)
{
    if ((key & 0x80000000u) || (dv->n > 0 && key <= dv->b[dv->n - 1].key))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "deletion vector: bucket keys out of order or negative");
    const char *p = (const char *)buf + *pos;
    size_t avail = n - *pos;
    if (declared >= 0 && (uint64_t)declared > avail)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "deletion vector: truncated");
    if (declared >= 0)
        avail = (size_t)declared;
    size_t size = roaring_bitmap_portable_deserialize_size(p, avail);
    roaring_bitmap_t *bm = size ? roaring_bitmap_portable_deserialize_safe(p, avail) : NULL;
    if (!bm || (declared >= 0 && size != (size_t)declared)) {
        if (bm) /* CRoaring 0.2's free is not NULL-safe */
            roaring_bitmap_free(bm);
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "deletion vector: bucket %u is not a Roaring bitmap", key);
    }
    *pos += size;
    /* CRoaring 0.2 accepts containers out of order, repeated keys and
     * unsorted arrays, on which its lookups and counts disagree: rebuild the
     * bitmap from its values (bounded by the cardinality the log states). */
    roaring_bitmap_t *clean = NULL;
    enum vt_err rc = normalize(bm, &dv->budget, &clean, err);
    roaring_bitmap_free(bm);
    if (rc != VT_ERR_OK)
        return rc;
    bm = clean;
    uint64_t card = roaring_bitmap_get_cardinality(bm);
    if (card == 0) { /* the native format's gaps */
        roaring_bitmap_free(bm);
        return VT_ERR_OK;
    }
    dv->b[dv->n].key = key;
    dv->b[dv->n].bm = bm;
    dv->n++;
    dv->card += card;
    return VT_ERR_OK;
}

enum vt_err delta_dv_parse(const unsigned char *buf, size_t n, uint64_t max_card,
                           struct delta_dv **out, struct vt_error *err)
{
    *out = NULL;
    uint32_t magic = n >= 4 ? le32(buf) : 0;
    /* The portable format (what writers use) has an 8-byte bucket count and
     * a key per bucket; the older native one a 4-byte count and a size per
     * bitmap, keys implied by position. Both little-endian. */
    bool portable = magic == DV_MAGIC_PORTABLE;
    size_t head = portable ? 12 : 8;
    if ((magic != DV_MAGIC_PORTABLE && magic != DV_MAGIC_NATIVE) || n < head)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "deletion vector: not a RoaringBitmapArray (bad magic number)");
    uint64_t nb = portable ? (uint64_t)le32(buf + 4) | (uint64_t)le32(buf + 8) << 32
                           : (uint64_t)le32(buf + 4);
    /* Each bucket takes at least 4 bytes and an 8-byte bitmap header. */
    if (nb > (n - head) / 12 || (!portable && (nb & 0x80000000u)))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "deletion vector: %llu buckets do not fit in %zu bytes",
                            (unsigned long long)nb, n);
    struct delta_dv *dv = calloc(1, sizeof *dv);
    if (!dv || !(dv->b = calloc(nb ? nb : 1, sizeof *dv->b))) {
        free(dv);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    dv->budget = max_card ? max_card : VT_DELTA_MAX_DV_ROWS;
    size_t pos = head;
    enum vt_err rc = VT_ERR_OK;
    for (uint64_t i = 0; i < nb && rc == VT_ERR_OK; i++) {
        if (n - pos < 4) {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "deletion vector: truncated");
            break;
        }
        uint32_t word = le32(buf + pos);
        pos += 4;
        rc = portable ? add_bucket(dv, word, buf, &pos, n, -1, err)
                      : add_bucket(dv, (uint32_t)i, buf, &pos, n, (int64_t)word, err);
    }
    if (rc == VT_ERR_OK && pos != n)
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "deletion vector: %zu bytes after the last bucket", n - pos);
    if (rc != VT_ERR_OK) {
        delta_dv_free(dv);
        return rc;
    }
    *out = dv;
    return VT_ERR_OK;
}

uint64_t delta_dv_cardinality(const struct delta_dv *dv)
{
    return dv ? dv->card : 0;
}

/* The bucket holding high word `key`, or NULL (keys are ascending). */
static const struct dv_bucket *bucket(const struct delta_dv *dv, uint32_t key)
{
    size_t lo = 0, hi = dv->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (dv->b[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < dv->n && dv->b[lo].key == key ? &dv->b[lo] : NULL;
}

bool delta_dv_contains(const struct delta_dv *dv, uint64_t pos)
{
    if (!dv || dv->n == 0)
        return false;
    const struct dv_bucket *b =
        dv->n == 1 ? (dv->b[0].key == (uint32_t)(pos >> 32) ? &dv->b[0] : NULL)
                   : bucket(dv, (uint32_t)(pos >> 32));
    return b && roaring_bitmap_contains(b->bm, (uint32_t)pos);
}

uint64_t delta_dv_range_cardinality(const struct delta_dv *dv, uint64_t lo, uint64_t hi)
{
    uint64_t total = 0;
    for (size_t i = 0; dv && i < dv->n && lo < hi; i++) {
        uint64_t base = (uint64_t)dv->b[i].key << 32, top = base + 0x100000000ull;
        uint64_t a = lo > base ? lo : base, z = hi < top ? hi : top;
        if (a < z)
            total += roaring_bitmap_range_cardinality(dv->b[i].bm, a - base, z - base);
    }
    return total;
}

size_t delta_dv_bytes(const struct delta_dv *dv)
{
    size_t n = dv ? sizeof *dv + dv->n * sizeof *dv->b : 0;
    for (size_t i = 0; dv && i < dv->n; i++)
        n += roaring_bitmap_size_in_bytes(dv->b[i].bm);
    return n;
}

/* ---- descriptors ---------------------------------------------------------------- */

/* The positions a descriptor's vector may hold: its stated cardinality. */
static uint64_t max_card(const struct delta_dv_desc *d)
{
    return d->cardinality > 0 ? (uint64_t)d->cardinality : 0;
}

enum vt_err delta_dv_desc_check(const struct delta_dv_desc *d, struct vt_error *err)
{
    if (d->storage != 'i' && d->storage != 'u' && d->storage != 'p')
        return vt_error_set(err, VT_ERR_SOURCE_UNSUPPORTED,
                            "deletion vector storage type \"%c\" (vitrine reads i, u and p)",
                            d->storage >= 0x20 && d->storage < 0x7f ? d->storage : '?');
    if (!d->path_or_inline || d->size_in_bytes < 12 ||
        d->size_in_bytes > VT_DELTA_MAX_DV_BYTES || d->offset < -1 ||
        (d->storage == 'u' && strlen(d->path_or_inline) < 20))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "bad deletion vector descriptor");
    return VT_ERR_OK;
}

/* "u": <prefix>/deletion_vector_<uuid>.bin, relative to the table. */
static enum vt_err uuid_path(const char *s, struct strbuf *out, struct vt_error *err)
{
    size_t n = strlen(s);
    const char *z = s + n - 20;
    unsigned char u[16];
    size_t un;
    if (!delta_z85_decode(z, 20, u, sizeof u, &un) || un != 16)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "deletion vector: \"%.40s\" holds no Z85 UUID", s);
    /* The prefix is a directory name the writer chose: plain characters. */
    for (const char *p = s; p < z; p++)
        if (*p == '/' || *p == '\\' || *p == '.' || (unsigned char)*p < 0x20)
            return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                "deletion vector: bad path prefix in \"%.40s\"", s);
    if (z > s) {
        sb_add(out, s, (size_t)(z - s));
        sb_addc(out, '/');
    }
    sb_adds(out, "deletion_vector_");
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            sb_addc(out, '-');
        sb_addf(out, "%02x", u[i]);
    }
    sb_adds(out, ".bin");
    return out->overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory") : VT_ERR_OK;
}

enum vt_err delta_dv_file_name(const struct delta_dv_desc *d, char **out, struct vt_error *err)
{
    *out = NULL;
    struct strbuf sb;
    sb_init(&sb, 0);
    enum vt_err rc = d->storage == 'u' ? uuid_path(d->path_or_inline, &sb, err) : VT_ERR_OK;
    if (d->storage == 'p')
        sb_adds(&sb, d->path_or_inline);
    if (rc == VT_ERR_OK && sb.overflow)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (rc == VT_ERR_OK)
        *out = sb_detach(&sb, NULL);
    sb_release(&sb);
    return rc;
}

enum vt_err delta_dv_decode_inline(const struct delta_dv_desc *d, struct delta_dv **out,
                                   struct vt_error *err)
{
    *out = NULL;
    size_t n = strlen(d->path_or_inline);
    size_t cap = n / 5 * 4 + 4;
    unsigned char *buf = malloc(cap);
    if (!buf)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t got;
    enum vt_err rc = VT_ERR_OK;
    if (!delta_z85_decode(d->path_or_inline, n, buf, cap, &got) ||
        got < (size_t)d->size_in_bytes || got - (size_t)d->size_in_bytes >= 4)
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "inline deletion vector: bad Z85 text or size");
    else
        rc = delta_dv_parse(buf, (size_t)d->size_in_bytes, max_card(d), out, err);
    free(buf);
    return rc;
}

enum vt_err delta_dv_decode_framed(const unsigned char *p, size_t n, int64_t size_in_bytes,
                                   uint64_t max_card, struct delta_dv **out,
                                   struct vt_error *err)
{
    *out = NULL;
    if (size_in_bytes < 0 || size_in_bytes > VT_DELTA_MAX_DV_BYTES ||
        n < (size_t)size_in_bytes + 8)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "truncated");
    if (be32(p) != (uint32_t)size_in_bytes)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "stored size %u, the log says %lld",
                            be32(p), (long long)size_in_bytes);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, p + 4, (uInt)size_in_bytes);
    if ((uint32_t)crc != be32(p + 4 + size_in_bytes))
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "checksum mismatch");
    return delta_dv_parse(p + 4, (size_t)size_in_bytes, max_card, out, err);
}

enum vt_err delta_dv_load(struct storage *st, const char *name, const struct delta_dv_desc *d,
                          struct delta_dv **out, struct vt_error *err)
{
    *out = NULL;
    enum vt_err rc = delta_dv_desc_check(d, err);
    if (rc != VT_ERR_OK)
        return rc;
    if (d->storage == 'i')
        return delta_dv_decode_inline(d, out, err);
    int64_t off = d->offset < 0 ? 0 : d->offset;
    /* Near the start of the file one read covers the version byte too. */
    int64_t start = off >= 1 && off <= 64 * 1024 ? 0 : off;
    int64_t len = off - start + 4 + d->size_in_bytes + 4;
    char *buf = NULL;
    size_t got = 0;
    bool missing = false;
    struct vt_error rerr = {0};
    rc = st->ops->read(st, name, start, len, (size_t)len + 1, &buf, &got, &missing, &rerr);
    if (rc == VT_ERR_OK && missing)
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "deletion vector file %s is missing",
                          name);
    else if (rc != VT_ERR_OK)
        vt_error_set(err, rc, "deletion vector file %s: %s", name, vt_error_message(&rerr));
    if (rc == VT_ERR_OK) {
        struct vt_error perr = {0};
        const unsigned char *b = (const unsigned char *)buf;
        if (start == 0 && off >= 1 && got >= 1 && b[0] != 1)
            rc = vt_error_set(&perr, VT_ERR_SOURCE_UNSUPPORTED,
                              "format version %d (vitrine reads 1)", b[0]);
        else if ((int64_t)got < off - start)
            rc = vt_error_set(&perr, VT_ERR_SOURCE_UNAVAILABLE, "truncated");
        else
            rc = delta_dv_decode_framed(b + (off - start), got - (size_t)(off - start),
                                        d->size_in_bytes, max_card(d), out, &perr);
        if (rc != VT_ERR_OK)
            vt_error_set(err, rc, "deletion vector in %s: %s", name, vt_error_message(&perr));
    }
    free(buf);
    return rc;
}
