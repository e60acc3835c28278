/*
 * libFuzzer target for the MCP message envelope (JSON-RPC classification,
 * depth and duplicate-key bounds) and the header-value decoder (the
 * =?base64?...?= sentinel) and the list cursors: none may crash, leak or
 * read out of bounds, a decoded value never holds a NUL, and a cursor that
 * decodes encodes back to itself (one spelling per key).
 *
 *   make fuzz && build-fuzz/fuzz_mcp -max_total_time=60 build-fuzz/corpus/fuzz_mcp
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mcp_envelope env;
    enum mcp_kind k = mcp_envelope_parse((const char *)data, size, &env);
    if (k == MCP_REQUEST && (!env.method || !env.id))
        abort();
    mcp_envelope_release(&env);

    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char out[256];
    ssize_t n = mcp_header_decode(s, out, sizeof out);
    if (n >= 0 && (size_t)n != strlen(out))
        abort();
    char key[256], again[400];
    ssize_t kn = mcp_cursor_decode(s, key, sizeof key);
    if (kn >= 0) {
        if ((size_t)kn != strlen(key))
            abort();
        if (mcp_cursor_encode(key, again, sizeof again) == 0 || strcmp(again, s) != 0)
            abort();
    }
    free(s);
    return 0;
}
