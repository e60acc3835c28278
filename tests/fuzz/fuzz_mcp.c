/*
 * libFuzzer target for the MCP message envelope (JSON-RPC classification,
 * depth and duplicate-key bounds) and the header-value decoder (the
 * =?base64?...?= sentinel): neither may crash, leak or read out of bounds,
 * and a decoded value never holds a NUL.
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
    free(s);
    return 0;
}
