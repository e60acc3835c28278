/*
 * libFuzzer target for the TOML parser and the configuration loader on top of
 * it. Build and run (clang; not part of `make` or `make check`):
 *   make fuzz-toml
 *   build-fuzz/fuzz_toml -dict=tests/fuzz/toml.dict build-fuzz/corpus-toml \
 *       ../shared/toml-test/tests/valid
 *
 * Besides memory errors (ASan) and undefined behaviour (UBSan), it checks two
 * properties and traps when they fail:
 *   - a parsed tree is well formed (every table key and array item present,
 *     depth within TOML_MAX_DEPTH);
 *   - every dataset of a loaded config renders to TOML that loads back to an
 *     equal dataset (the persist round trip);
 *   - the same holds for a dataset accepted from a JSON body (when the input
 *     is JSON), the path of POST /api/v1/datasets/persist.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config/config.h"
#include "config/toml.h"

static void walk(const struct toml_value *v, int depth)
{
    if (!v || depth > TOML_MAX_DEPTH + 1)
        __builtin_trap();
    if (v->type == TOML_TABLE) {
        for (size_t i = 0; i < v->u.table.len; i++) {
            const struct toml_keyval *kv = &v->u.table.items[i];
            if (!kv->key || kv->key[kv->key_len] != '\0' || kv->line < 1)
                __builtin_trap();
            if (toml_getn(v, kv->key, kv->key_len) != kv->value) /* keys are unique */
                __builtin_trap();
            walk(kv->value, depth + 1);
        }
    } else if (v->type == TOML_ARRAY) {
        for (size_t i = 0; i < v->u.array.len; i++)
            walk(v->u.array.items[i], depth + 1);
    } else if (v->type == TOML_STRING) {
        if (!v->u.string.ptr || v->u.string.ptr[v->u.string.len] != '\0')
            __builtin_trap();
    }
}

static void round_trip(const struct vt_dataset_config *ds)
{
    char *text = config_dataset_to_toml(ds);
    if (!text)
        __builtin_trap();
    struct vt_dataset_config *back = NULL;
    size_t n = 0;
    struct vt_error err = {0};
    if (config_load_datasets_text(text, strlen(text), "rt", &back, &n, &err) != VT_ERR_OK || n != 1 ||
        !config_dataset_equal(ds, &back[0]))
        __builtin_trap();
    config_dataset_free(&back[0]);
    free(back);
    free(text);
}

static void try_json(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *j = json_loadb((const char *)data, size, JSON_ALLOW_NUL, &jerr);
    if (!j)
        return;
    struct vt_dataset_config ds;
    struct vt_error err = {0};
    if (config_dataset_from_json(j, &ds, &err) == VT_ERR_OK) {
        round_trip(&ds);
        config_dataset_free(&ds);
    } else if (!err.msg[0]) {
        __builtin_trap(); /* every refusal explains itself */
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size && data[0] == '{') {
        try_json(data, size);
        /* still valid input for the TOML parser below (as an error) */
    }
    char err[256];
    struct toml_value *root = toml_parse((const char *)data, size, err, sizeof err);
    if (!root) {
        if (strncmp(err, "line ", 5) != 0) /* every failure says where */
            __builtin_trap();
        return 0;
    }
    walk(root, 0);
    toml_free(root);

    struct vt_config cfg;
    struct vt_error verr = {0};
    if (config_load_text((const char *)data, size, "fuzz.toml", "/fuzz", &cfg, &verr) != VT_ERR_OK)
        return 0;
    for (size_t i = 0; i < cfg.n_datasets; i++)
        round_trip(&cfg.datasets[i]);
    config_free(&cfg);
    return 0;
}
