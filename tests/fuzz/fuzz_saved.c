/*
 * libFuzzer target for the POST /api/v1/queries body (src/saved): any bytes
 * the JSON reader accepts go through saved_parse_request. Build and run
 * (clang; not part of `make` or `make check`):
 *   make build-fuzz/fuzz_saved
 *   build-fuzz/fuzz_saved -dict=tests/fuzz/saved.dict tests/fuzz/corpus/fuzz_saved
 *
 * Besides memory errors (ASan) and undefined behaviour (UBSan), it checks
 * properties and traps when they fail:
 *   - an accepted request is a dataset of kind query with a valid name, SQL
 *     within VT_MAX_SQL_BYTES, no depends_on, a ttl only for kind temp and
 *     no index beside residency "lazy";
 *   - a refused one says why with a code of the request family (never OK,
 *     never an internal error);
 *   - an accepted request renders to the TOML of its file and reads back
 *     equal (the saved-queries directory round trip).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "saved/saved.h"
#include "util/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!body)
        return 0;
    struct saved_request r;
    struct vt_error err = {0};
    enum vt_err rc = saved_parse_request(body, &r, &err);
    json_decref(body);
    if (rc != VT_ERR_OK) {
        if (err.code != rc || !err.msg[0] ||
            (rc != VT_ERR_INVALID_FIELD && rc != VT_ERR_UNKNOWN_FIELD && rc != VT_ERR_INVALID_NAME &&
             rc != VT_ERR_LIMIT_EXCEEDED && rc != VT_ERR_OUT_OF_MEMORY))
            __builtin_trap();
        return 0;
    }
    if (r.ds.kind != CFG_SOURCE_QUERY || !r.ds.sql || !*r.ds.sql ||
        strlen(r.ds.sql) > VT_MAX_SQL_BYTES || !config_valid_dataset_name(r.ds.name, NULL) ||
        r.ds.depends_on.len != 0 || (r.persist && r.ttl_ms != 0) || r.ttl_ms < 0)
        __builtin_trap();
    bool lazy = r.ds.materialize.residency == CFG_RESIDENCY_LAZY;
    if (lazy && r.ds.index_mode != CFG_INDEX_AUTO)
        __builtin_trap(); /* an index object was accepted beside lazy */
    char *toml = config_dataset_to_toml(&r.ds);
    if (toml) {
        struct vt_dataset_config *back = NULL;
        size_t n = 0;
        struct vt_error e2 = {0};
        if (config_load_datasets_text(toml, strlen(toml), "fuzz", &back, &n, &e2) != VT_ERR_OK ||
            n != 1 || !config_dataset_equal(&r.ds, &back[0]))
            __builtin_trap();
        for (size_t i = 0; i < n; i++)
            config_dataset_free(&back[i]);
        free(back);
        free(toml);
    }
    saved_request_release(&r);
    return 0;
}
