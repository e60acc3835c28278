/*
 * libFuzzer target for the Variant decoder (src/sources/variant.c): Delta
 * variant columns hold (metadata, value) bytes written by whoever wrote the
 * table. Build and run (clang):
 *   make build-fuzz/fuzz_variant
 *   build-fuzz/fuzz_variant -max_total_time=60
 *
 * The first byte splits the input: that many bytes (mod the size) of
 * metadata, the rest is the value. Properties checked (trap on failure): the
 * decoder stays within its input and its output cap, and what it accepts is
 * one JSON value (balanced brackets outside strings).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sources/sources_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t ml = size > 1 ? data[0] % size : 0;
    const uint8_t *meta = data + 1;
    if (ml > size - 1)
        ml = size - 1;
    const uint8_t *val = meta + ml;
    size_t vl = size - 1 - ml;
    struct strbuf sb;
    sb_init(&sb, 1 << 20);
    const char *why;
    if (source_variant_json(meta, ml, val, vl, &sb, &why) == 0) {
        if (sb.len > (1 << 20))
            __builtin_trap();
        int level = 0;
        bool in_str = false;
        for (size_t i = 0; i < sb.len; i++) {
            char c = sb.buf[i];
            if (in_str) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    in_str = false;
            } else if (c == '"') {
                in_str = true;
            } else if (c == '[' || c == '{') {
                level++;
            } else if (c == ']' || c == '}') {
                if (--level < 0)
                    __builtin_trap();
            }
        }
        if (level != 0 || in_str)
            __builtin_trap();
    }
    sb_release(&sb);
    return 0;
}
