/*
 * libFuzzer target for the S3 XML parsers: ListObjectsV2 pages and error
 * documents (both come straight off the network). Build and run (clang; not
 * part of `make` or `make check`):
 *   make build-fuzz/fuzz_s3_list_xml
 *   mkdir -p build-fuzz/corpus/fuzz_s3_list_xml
 *   build-fuzz/fuzz_s3_list_xml -dict=tests/fuzz/s3.dict build-fuzz/corpus/fuzz_s3_list_xml
 *
 * Properties checked (trap on failure): an accepted page has keys of 1 to
 * VT_S3_MAX_KEY_BYTES bytes with non-negative sizes, last_key is the last key,
 * and a rejected page leaves nothing allocated behind.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sources/s3.h"
#include "util/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct s3_list_page p;
    struct vt_error err = {0};
    if (s3_list_parse((const char *)data, size, &p, &err) == VT_ERR_OK) {
        for (size_t i = 0; i < p.objects.n; i++) {
            size_t kl = strlen(p.objects.items[i].key);
            if (kl == 0 || kl > VT_S3_MAX_KEY_BYTES || p.objects.items[i].size < 0)
                __builtin_trap();
        }
        if (p.objects.n && strcmp(p.last_key, p.objects.items[p.objects.n - 1].key) != 0)
            __builtin_trap();
        s3_list_page_release(&p);
    } else if (p.objects.n || p.objects.items || p.next_token) {
        __builtin_trap();
    }
    struct s3_error_doc d;
    if (s3_error_parse((const char *)data, size, &d))
        if (!d.code[0] || strlen(d.code) >= sizeof d.code)
            __builtin_trap();
    return 0;
}
