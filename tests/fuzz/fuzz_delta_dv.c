/*
 * libFuzzer target for the deletion vector parsers (src/sources/delta_dv.c):
 * vectors come from storage (files of the table) and from the log (inline
 * Z85 text), so every byte is input. Build and run (clang):
 *   make build-fuzz/fuzz_delta_dv
 *   build-fuzz/fuzz_delta_dv -max_total_time=60
 *
 * The first byte picks the entry point: a RoaringBitmapArray, a framed
 * vector of a vector file (the next 4 bytes are the size the log claims),
 * an inline descriptor's Z85 text, or a 'u' descriptor's file name.
 * Properties checked (trap on failure): a parsed vector's cardinality is
 * the sum of its range cardinalities, and membership agrees with them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sources/delta.h"

static void check(const struct delta_dv *dv, const uint8_t *data, size_t size)
{
    uint64_t card = delta_dv_cardinality(dv);
    if (delta_dv_range_cardinality(dv, 0, UINT64_MAX) != card)
        __builtin_trap();
    for (size_t i = 0; i + 8 <= size && i < 64; i += 8) {
        uint64_t p;
        memcpy(&p, data + i, 8);
        p &= 0x7fffffffffffffffull;
        bool in = delta_dv_contains(dv, p);
        if (in != (delta_dv_range_cardinality(dv, p, p + 1) == 1))
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0] % 4;
    data++;
    size--;
    struct delta_dv *dv = NULL;
    struct vt_error err = {0};
    if (mode == 0) {
        if (delta_dv_parse(data, size, 1 << 20, &dv, &err) == VT_ERR_OK)
            check(dv, data, size);
    } else if (mode == 1 && size >= 4) {
        uint32_t claim;
        memcpy(&claim, data, 4);
        if (delta_dv_decode_framed(data + 4, size - 4, claim % (size + 16), 1 << 20, &dv, &err) ==
            VT_ERR_OK)
            check(dv, data, size);
    } else if (mode >= 2) {
        char *text = malloc(size + 1);
        if (!text)
            return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        struct delta_dv_desc d = {.storage = mode == 2 ? 'i' : 'u', .path_or_inline = text,
                                  .offset = -1, .size_in_bytes = (int64_t)(size / 5 * 4)};
        if (mode == 2 && delta_dv_desc_check(&d, &err) == VT_ERR_OK &&
            delta_dv_decode_inline(&d, &dv, &err) == VT_ERR_OK)
            check(dv, data, size);
        char *name = NULL;
        if (mode == 3 && delta_dv_desc_check(&d, &err) == VT_ERR_OK &&
            delta_dv_file_name(&d, &name, &err) == VT_ERR_OK &&
            (strstr(name, "..") || name[0] == '/'))
            __builtin_trap(); /* a name never leaves the table */
        free(name);
        free(text);
    }
    delta_dv_free(dv);
    return 0;
}
