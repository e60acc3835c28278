/*
 * libFuzzer target for the Delta log replay: newline-delimited JSON actions as
 * found in commits and JSON checkpoints, then the protocol check, the schema
 * parse of whatever metaData survived, and the active-file listing. Build and
 * run (clang; not part of `make` or `make check`):
 *   make build-fuzz/fuzz_delta_log
 *   mkdir -p build-fuzz/corpus/fuzz_delta_log
 *   build-fuzz/fuzz_delta_log -dict=tests/fuzz/delta.dict build-fuzz/corpus/fuzz_delta_log \
 *       ../shared/delta-tables/simple_table/_delta_log
 *
 * The first byte picks commit or checkpoint mode (removes are tombstones in
 * checkpoints). Properties checked (trap on failure): the active files are
 * sorted by path with no duplicate decoded path, and every path decodes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sources/delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bool checkpoint = data[0] & 1;
    struct delta_replay r;
    delta_replay_init(&r);
    struct vt_error err = {0};
    delta_replay_text(&r, (const char *)data + 1, size - 1, checkpoint, "fuzz", &err);
    vt_error_clear(&err);
    delta_replay_check_protocol(&r, "fuzz", &err);
    if (r.schema_string) {
        struct delta_schema s;
        vt_error_clear(&err);
        if (delta_schema_parse(r.schema_string, strlen(r.schema_string), &s, &err) == VT_ERR_OK) {
            for (size_t i = 0; i < s.n; i++)
                if (!s.fields[i].name || !s.fields[i].type || !s.fields[i].type->duck)
                    __builtin_trap();
            delta_schema_release(&s);
        }
    }
    const struct delta_add **adds = NULL;
    size_t n = 0;
    vt_error_clear(&err);
    if (delta_replay_active(&r, &adds, &n, &err) == VT_ERR_OK) {
        if (n != delta_replay_active_count(&r))
            __builtin_trap();
        char cur[8192];
        for (size_t i = 0; i < n; i++) {
            if (i && strcmp(adds[i - 1]->path, adds[i]->path) > 0)
                __builtin_trap();
            if (!delta_path_decode(adds[i]->path, cur, sizeof cur))
                __builtin_trap(); /* only decodable paths are admitted */
        }
        free(adds);
    }
    delta_replay_release(&r);
    return 0;
}
