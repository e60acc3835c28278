/*
 * MCP: the Model Context Protocol endpoint for AI agents, POST {prefix}/mcp
 * (spec "MCP endpoint", docs/architecture.md "MCP"). A front end over the execution
 * layer: it parses one JSON-RPC 2.0 message, runs the tool through the same
 * code as the HTTP endpoints (exec: same validation, generation pinning,
 * limits), and answers with one JSON document (Streamable HTTP, JSON
 * responses only, never SSE).
 *
 * Stateless: nothing is kept between requests, so any replica answers any
 * request. Both protocol eras are served on the one endpoint:
 *  - modern (2026-07-28): every request carries its version and capabilities
 *    in params._meta; `server/discover`; the MCP-Protocol-Version, Mcp-Method
 *    and Mcp-Name headers must match the body (400, -32020 HeaderMismatch);
 *    every result has resultType, lists have ttlMs and cacheScope;
 *  - legacy (2025-11-25, 2025-06-18, 2025-03-26): `initialize` echoes a
 *    supported version (else our newest legacy one) and returns no session
 *    id; a client's Mcp-Session-Id is accepted and ignored; `ping`.
 * An unsupported version (header or _meta) is 400 with -32022
 * UnsupportedProtocolVersion listing every version we speak, which is what a
 * modern client retries from and what the 2026-07-28 revision requires.
 *
 * Tools: list_datasets, describe_dataset, count_rows, query_dataset, and sql
 * (listed and callable only when [mcp] expose_sql and [sql] enabled: one
 * statement through the SQL gate, capped like query results by the smaller
 * of [mcp] and [sql] max_rows and by max_bytes). Results carry structuredContent matching the tool's
 * outputSchema and the same JSON as a text item; query results are capped by
 * [mcp] max_rows and max_bytes and say so (truncated, caps, and the request
 * that fetches what follows). Tool failures are results with isError; an
 * unknown tool is a protocol error (-32602).
 *
 * Resources: each published dataset as vitrine://datasets/<name> (its
 * schema and a few sample rows, application/json).
 */
#ifndef VT_MCP_MCP_H
#define VT_MCP_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "config/config.h"
#include "http/server.h"
#include "util/strbuf.h"

struct cat_catalog;

#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"

/* What the endpoint serves from: the configuration, the catalog and the
 * query pool the execution driver queues its jobs on (copied per request;
 * the pointers live as long as the server). */
struct mcp_env {
    const struct vt_config *cfg;
    struct cat_catalog *catalog;
    struct eng_pool *queries;
};

/* Answers POST {prefix}{mcp.path} (the API's route handler calls it). */
void mcp_handle(struct http_request *req, const struct mcp_env *env);

/* Authorization discovery (RFC 9728), when bearer auth is on. The endpoint
 * is a protected resource whose identifier is its URL, scheme://host{prefix}
 * {mcp.path} (the Host the client used; https when X-Forwarded-Proto says
 * so). Its metadata is served at the well-known URL with that path inserted
 * (MCP_PRM_WELL_KNOWN{prefix}{mcp.path}, which the 401 challenges of the
 * endpoint name in resource_metadata) and, for clients that fall back to it,
 * at MCP_PRM_WELL_KNOWN itself: the resource, the configured issuer as its
 * one authorization server, the read scopes, bearer tokens in the header. */
#define MCP_PRM_WELL_KNOWN "/.well-known/oauth-protected-resource"
void mcp_protected_resource(struct http_request *req, const struct vt_config *cfg);
/* The pieces, appended to `out`: the resource identifier, the metadata's
 * path (for the route) and its URL (for WWW-Authenticate). */
void mcp_resource_url(struct http_request *req, const struct vt_config *cfg, struct strbuf *out);
void mcp_resource_metadata_path(const struct vt_config *cfg, struct strbuf *out);
void mcp_resource_metadata_url(struct http_request *req, const struct vt_config *cfg,
                               struct strbuf *out);

/* ---- the message envelope (envelope.c; pure, fuzzed) ---- */

enum mcp_kind {
    MCP_REQUEST,      /* method + id: answer it */
    MCP_NOTIFICATION, /* method, no id: 202 */
    MCP_RESPONSE,     /* result or error with an id: 202 (we send no requests) */
    MCP_INVALID,      /* -32600 Invalid Request (out->id set when it was valid) */
    MCP_BATCH,        /* a JSON array: batches are not supported (-32600) */
    MCP_PARSE_ERROR,  /* not JSON (or a key twice in an object): -32700 */
};

struct mcp_envelope {
    json_t *msg;               /* owned; NULL after a parse error */
    json_t *id;                /* borrowed from msg; NULL when absent or invalid */
    const char *method;        /* borrowed */
    json_t *params;            /* borrowed; may be NULL */
    const char *meta_version;  /* params._meta protocolVersion (modern era), or NULL */
};

/* Parses and classifies one message (bounded depth, unique keys). Release
 * `out` in every case. */
enum mcp_kind mcp_envelope_parse(const char *body, size_t len, struct mcp_envelope *out);
void mcp_envelope_release(struct mcp_envelope *e);

/* The value of an Mcp-Name / Mcp-Param header: as is, or decoded from the
 * =?base64?...?= sentinel. The length written to out (NUL-terminated), or
 * -1 when malformed, holding a NUL, or longer than cap - 1. */
ssize_t mcp_header_decode(const char *value, char *out, size_t cap);

/* List cursors (tools/list, resources/list, list_datasets): opaque to
 * clients; ours are "v1." and the base64url (no padding) of the key after
 * which the next page starts. encode: the length written to out
 * (NUL-terminated), 0 when cap is too small. decode: the key's length
 * (NUL-terminated in out), or -1 when the cursor is not one of ours, holds
 * a NUL or does not fit. */
size_t mcp_cursor_encode(const char *key, char *out, size_t cap);
ssize_t mcp_cursor_decode(const char *cursor, char *out, size_t cap);

#endif
