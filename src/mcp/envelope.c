/*
 * The JSON-RPC envelope of one MCP message and the header-value decoding of
 * the Streamable HTTP transport, kept apart from the handler so they are
 * pure functions (tested and fuzzed on their own: tests/fuzz/fuzz_mcp.c).
 */
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "util/limits.h"

static bool too_deep(const json_t *v, int depth)
{
    if (depth > VT_MAX_JSON_DEPTH)
        return true;
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x) if (too_deep(x, depth + 1)) return true;
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x) if (too_deep(x, depth + 1)) return true;
    }
    return false;
}

enum mcp_kind mcp_envelope_parse(const char *body, size_t len, struct mcp_envelope *out)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *msg = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!msg)
        return MCP_PARSE_ERROR;
    out->msg = msg;
    if (json_is_array(msg))
        return MCP_BATCH;
    json_t *id = json_object_get(msg, "id");
    bool valid_id = !id || json_is_string(id) || json_is_integer(id);
    out->id = valid_id ? id : NULL;
    json_t *jv = json_object_get(msg, "jsonrpc");
    if (!json_is_object(msg) || !json_is_string(jv) || strcmp(json_string_value(jv), "2.0") != 0 ||
        !valid_id || too_deep(msg, 1))
        return MCP_INVALID;
    json_t *method = json_object_get(msg, "method");
    if (!method) {
        bool response = id && (json_object_get(msg, "result") || json_object_get(msg, "error"));
        return response ? MCP_RESPONSE : MCP_INVALID;
    }
    json_t *params = json_object_get(msg, "params");
    if (!json_is_string(method) || (params && !json_is_object(params)))
        return MCP_INVALID;
    out->method = json_string_value(method);
    out->params = params;
    json_t *meta = params ? json_object_get(params, "_meta") : NULL;
    json_t *mv = json_is_object(meta) ? json_object_get(meta, MCP_META_VERSION) : NULL;
    if (mv)
        out->meta_version = json_is_string(mv) ? json_string_value(mv) : "";
    return id ? MCP_REQUEST : MCP_NOTIFICATION;
}

void mcp_envelope_release(struct mcp_envelope *e)
{
    json_decref(e->msg);
    memset(e, 0, sizeof *e);
}

static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Decodes bl bytes of base64 in `alphabet` into out (NUL-terminated).
 * padding: '=' may end the text. canonical: the bits left over must be
 * zero (one spelling per value). -1 on a byte outside the alphabet, data
 * after padding, a NUL in the value (it must never shorten what is
 * compared) or no room. */
static ssize_t b64_decode(const char *b, size_t bl, const char *alphabet, bool padding,
                          bool canonical, char *out, size_t cap)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t k = 0;
    bool padded = false;
    for (size_t i = 0; i < bl; i++) {
        if (padding && b[i] == '=') {
            padded = true;
            continue;
        }
        const char *q = padded || !b[i] ? NULL : memchr(alphabet, b[i], 64);
        if (!q)
            return -1;
        acc = acc << 6 | (uint32_t)(q - alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (k + 1 >= cap)
                return -1;
            out[k++] = (char)(acc >> bits & 0xFF);
        }
    }
    if (canonical && bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return -1;
    if (k + 1 > cap || memchr(out, '\0', k))
        return -1;
    out[k] = '\0';
    return (ssize_t)k;
}

ssize_t mcp_header_decode(const char *v, char *out, size_t cap)
{
    size_t n = strlen(v);
    if (n < 11 || strncmp(v, "=?base64?", 9) != 0 || strcmp(v + n - 2, "?=") != 0) {
        if (n + 1 > cap)
            return -1;
        memcpy(out, v, n + 1);
        return (ssize_t)n;
    }
    return b64_decode(v + 9, n - 11, b64std, true, false, out, cap);
}

size_t mcp_cursor_encode(const char *key, char *out, size_t cap)
{
    size_t n = strlen(key), need = 3 + (n * 4 + 2) / 3 + 1;
    if (cap < need)
        return 0;
    memcpy(out, "v1.", 3);
    size_t k = 3;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = acc << 8 | (unsigned char)key[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[k++] = b64url[acc >> bits & 63];
        }
    }
    if (bits > 0)
        out[k++] = b64url[acc << (6 - bits) & 63];
    out[k] = '\0';
    return k;
}

ssize_t mcp_cursor_decode(const char *cursor, char *out, size_t cap)
{
    if (strncmp(cursor, "v1.", 3) != 0)
        return -1;
    size_t bl = strlen(cursor + 3);
    if (bl % 4 == 1)
        return -1; /* no whole byte ends there */
    return b64_decode(cursor + 3, bl, b64url, false, true, out, cap);
}
