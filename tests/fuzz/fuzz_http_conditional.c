/*
 * libFuzzer target for entity-tag lists and If-Range (src/http/conditional.c).
 * The input is split at the first NUL into a header value and our ETag.
 * Checks the relations the functions must keep: a strong match is also a weak
 * match, and If-Range never allows a range that strong comparison rejects.
 * Build: make fuzz.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/conditional.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    memcpy(buf, data, size);
    buf[size] = '\0';
    buf[size + 1] = '\0';
    const char *value = buf;
    const char *etag = buf + strlen(buf) + 1;

    char formatted[HTTP_ETAG_MAX];
    if (http_etag_format(formatted, etag) == 0) {
        /* a tag we format always matches itself, strongly */
        if (!http_etag_list_match_strong(formatted, formatted) ||
            !http_if_range_allows(formatted, formatted))
            abort();
        etag = formatted;
    }
    bool strong = http_etag_list_match_strong(value, etag);
    bool weak = http_etag_list_match_weak(value, etag);
    if (strong && !weak)
        abort();
    if (http_if_range_allows(value, etag) && !strong)
        abort();
    enum http_precond p = http_preconditions(true, NULL, value, etag);
    if ((p == HTTP_PRECOND_NOT_MODIFIED) != weak)
        abort();
    p = http_preconditions(true, value, NULL, etag);
    if ((p == HTTP_PRECOND_PASS) != strong)
        abort();
    free(buf);
    return 0;
}
