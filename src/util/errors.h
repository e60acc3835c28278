/*
 * The one table of error codes. Every failure a client can see has a stable
 * snake_case code, an HTTP status and a default message; the JSON error body is
 * {"error": "<message>", "code": "<code>"} (docs/architecture.md, "Errors").
 *
 * Functions return an enum vt_err; the detail text goes into a struct vt_error
 * where the first failure wins, so a deep callee's precise message is not
 * overwritten by a caller's vaguer one.
 *
 * Each front end maps the one code to its own form from this table: HTTP uses
 * the status and the JSON body; the PostgreSQL listener sends the SQLSTATE in
 * its ErrorResponse; MCP answers a tool call whose code has rpc = 0 with a
 * result carrying isError (the model can act on the message) and any other
 * failure as a JSON-RPC error with that rpc code (-32700 parse error, -32600
 * invalid request, -32601 method not found, -32603 internal error).
 */
#ifndef VT_UTIL_ERRORS_H
#define VT_UTIL_ERRORS_H

#include <stdarg.h>
#include <stddef.h>

/* X(NAME, http_status, "code", "sqlstate", rpc, "default message") */
#define VT_ERROR_TABLE(X)                                                                  \
    X(OK, 200, "ok", "00000", 0, "ok")                                                                 \
    /* generic request problems */                                                         \
    X(BAD_REQUEST, 400, "bad_request", "08P01", -32600, "bad request")                                      \
    X(INVALID_JSON, 400, "invalid_json", "22P02", -32700, "request body is not valid JSON")                 \
    X(DUPLICATE_KEY, 400, "duplicate_key", "22P02", -32600, "a key appears twice in one JSON object") \
    X(UNSUPPORTED_CONTENT_ENCODING, 415, "unsupported_content_encoding", "08P01", -32600,          \
      "request bodies must not be compressed (Content-Encoding is not supported)")          \
    X(UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type", "08P01", -32600,                               \
      "request body must be sent with Content-Type: application/json")                     \
    X(BODY_TOO_LARGE, 413, "body_too_large", "54000", -32600, "request body exceeds server.max_body_bytes")   \
    X(URI_TOO_LONG, 414, "uri_too_long", "54000", -32600, "request target too long")                        \
    X(NOT_IMPLEMENTED, 501, "not_implemented", "0A000", -32600, "not implemented")             \
    X(NOT_FOUND, 404, "not_found", "42883", -32601, "no such route")                                        \
    X(METHOD_NOT_ALLOWED, 405, "method_not_allowed", "42883", -32601, "method not allowed")                 \
    X(TIMEOUT, 504, "timeout", "57014", 0, "request timed out")                                        \
    X(UNAVAILABLE, 503, "unavailable", "53300", 0, "service unavailable")                              \
    X(SHUTTING_DOWN, 503, "shutting_down", "57P01", 0, "server is shutting down")                      \
    X(INTERNAL, 500, "internal", "XX000", -32603, "internal error")                                         \
    X(OUT_OF_MEMORY, 503, "out_of_memory", "53200", 0, "out of memory")                                \
    X(MALFORMED_REQUEST, 400, "malformed_request", "08P01", -32600, "malformed HTTP request") \
    X(HEADERS_TOO_LARGE, 431, "headers_too_large", "54000", -32600,                        \
      "request header fields too large")                                                   \
    X(REQUEST_HEAD_TIMEOUT, 408, "request_timeout", "57014", -32600,                       \
      "the request head did not arrive in time")                                           \
    X(HTTP_VERSION_NOT_SUPPORTED, 505, "http_version_not_supported", "08P01", -32600,      \
      "HTTP version not supported (1.0 and 1.1 are)")                                       \
    X(HOST_NOT_ALLOWED, 421, "host_not_allowed", "08004", -32600,                          \
      "this server does not answer for that Host (server.allowed_hosts)")                  \
    /* datasets */                                                                         \
    X(DATASET_NOT_FOUND, 404, "dataset_not_found", "42P01", 0, "no such dataset")                      \
    X(DATASET_NOT_READY, 503, "dataset_not_ready", "55000", 0, "dataset is not published yet")         \
    X(DATASET_FAILED, 503, "dataset_failed", "55000", 0, "dataset failed to build")                    \
    X(DATASET_EXISTS, 400, "dataset_exists", "42P07", 0, "a dataset with this name already exists")    \
    X(INVALID_NAME, 400, "invalid_name", "42602", 0, "invalid dataset name")                           \
    X(SOURCE_UNAVAILABLE, 400, "source_unavailable", "58030", 0, "source cannot be opened")            \
    X(SOURCE_EMPTY, 400, "source_empty", "58030", 0, "source has no files or no rows")                 \
    X(SOURCE_UNSUPPORTED, 400, "source_unsupported", "0A000", 0,                                      \
      "source uses a format feature vitrine cannot read")                                  \
    X(SOURCE_NOT_ALLOWED, 400, "source_not_allowed", "42501", 0,                                      \
      "source is outside what the server's configuration allows")                          \
    X(SOURCE_CHANGED, 503, "source_changed", "55000", 0,                                              \
      "the source changed under the published generation; reload the dataset")            \
    X(BUILD_FAILED, 422, "build_failed", "XX000", 0, "dataset build failed")                           \
    X(BUSY, 409, "busy", "55006", 0, "dataset is already building")                                    \
    X(GENERATION_NOT_AVAILABLE, 409, "generation_not_available", "55000", 0,                \
      "this replica does not have that generation yet; retry")                             \
    X(GENERATION_GONE, 410, "generation_gone", "55000", 0,                                  \
      "that generation was replaced and collected; restart the read")                      \
    X(NOT_WRITER, 409, "not_writer", "25006", 0,                                            \
      "this replica is a reader; send admin and write calls to the writer")                \
    X(PUBLISH_FAILED, 503, "publish_failed", "58030", 0,                                    \
      "the generation could not be published to the shared storage")                       \
    X(INVALID_CONFIG, 400, "invalid_config", "F0000", 0, "invalid configuration")                      \
    X(NO_CONFIG_FILE, 400, "no_config_file", "F0000", 0, "server was not started from a config file")  \
    /* saved queries (POST/DELETE /api/v1/queries) */                                   \
    X(NAME_TAKEN, 409, "name_taken", "42P07", 0, "a dataset with this name already exists")    \
    X(INVALID_FIELD, 400, "invalid_field", "22023", 0, "invalid field in request")         \
    X(DEPENDENCY_CYCLE, 400, "dependency_cycle", "42P17", 0, "datasets would depend on each other") \
    X(HAS_DEPENDENTS, 409, "has_dependents", "2BP01", 0, "other datasets depend on this one") \
    X(NOT_DELETABLE, 403, "not_deletable", "42501", 0,                                     \
      "only datasets created through POST /api/v1/queries can be deleted")                \
    /* query language */                                                                   \
    X(INVALID_QUERY, 400, "invalid_query", "42601", 0, "invalid query request")                        \
    X(UNKNOWN_FIELD, 400, "unknown_field", "42601", 0, "unknown field in request")                     \
    X(UNKNOWN_COLUMN, 400, "unknown_column", "42703", 0, "unknown column")                             \
    X(UNKNOWN_OPERATOR, 400, "unknown_operator", "42883", 0, "unknown operator")                       \
    X(INVALID_OPERATOR, 400, "invalid_operator", "42883", 0, "operator does not apply to this column") \
    X(INVALID_VALUE, 400, "invalid_value", "22023", 0, "invalid predicate value")                      \
    X(INVALID_AGGREGATION, 400, "invalid_aggregation", "42803", 0, "invalid aggregation")              \
    X(INVALID_ORDER, 400, "invalid_order", "42601", 0, "invalid order_by")                             \
    X(INVALID_HAVING, 400, "invalid_having", "42803", 0, "invalid having")                             \
    X(INVALID_COMBINATION, 400, "invalid_combination", "42601", 0, "invalid combination of fields")    \
    X(PATTERN_TOO_COMPLEX, 400, "pattern_too_complex", "54001", 0,                        \
      "like pattern too complex")                                                          \
    X(SQL_SYNTAX, 400, "sql_syntax", "42601", 0, "SQL syntax error")                        \
    X(SQL_NOT_READ_ONLY, 400, "sql_not_read_only", "25006", 0,                           \
      "only one read-only SELECT statement is allowed")                                    \
    X(SQL_UNKNOWN_TABLE, 400, "sql_unknown_table", "42P01", 0, "unknown table")            \
    X(SQL_FORBIDDEN_FUNCTION, 400, "sql_forbidden_function", "42501", 0,                   \
      "function not allowed")                                                              \
    X(LIMIT_EXCEEDED, 400, "limit_exceeded", "54000", 0, "request exceeds a limit")                    \
    X(QUERY_FAILED, 400, "query_failed", "22000", 0, "query could not be executed")                    \
    /* ranges and conditional requests */                                                  \
    X(RANGE_NOT_SATISFIABLE, 416, "range_not_satisfiable", "22003", 0, "range not satisfiable")        \
    X(PRECONDITION_FAILED, 412, "precondition_failed", "55000", 0, "precondition failed")              \
    /* not an error: a conditional GET's answer (the HTTP sinks send an empty 304) */           \
    X(NOT_MODIFIED, 304, "not_modified", "00000", 0, "not modified")                                   \
    /* auth */                                                                             \
    X(UNAUTHORIZED, 401, "unauthorized", "28000", 0, "missing or invalid credentials")                 \
    X(FORBIDDEN, 403, "forbidden", "42501", 0, "forbidden")                                            \
    X(ADMIN_DISABLED, 403, "admin_disabled", "42501", 0, "admin operations are disabled: ADMIN_TOKEN is not set") \
    X(INVALID_TOKEN, 401, "invalid_token", "28000", 0, "invalid bearer token")                    \
    X(INSUFFICIENT_SCOPE, 403, "insufficient_scope", "42501", 0,                           \
      "the token lacks a scope this route needs")                                          \
    X(AUTH_UNAVAILABLE, 503, "auth_unavailable", "57P03", 0,                               \
      "the identity provider's signing keys are not available yet")                       \
    /* PostgreSQL wire protocol (src/pgwire): the SQLSTATE is what clients see */          \
    X(PG_PROTOCOL, 400, "protocol_violation", "08P01", -32600, "protocol violation")       \
    X(PG_PASSWORD_FAILED, 401, "password_failed", "28P01", 0, "password authentication failed") \
    X(PG_CANCELLED, 499, "cancelled", "57014", 0, "canceling statement due to user request") \
    X(PG_TOO_MANY_FAILURES, 429, "too_many_failures", "28000", 0,                          \
      "too many failed password attempts from this address")                               \
    X(PG_TOKEN_EXPIRED, 401, "token_expired", "28000", 0,                                  \
      "the bearer token this session logged in with has expired")                          \
    X(PG_IDLE_TIMEOUT, 408, "idle_timeout", "57P05", 0,                                    \
      "terminating connection due to idle-session timeout")                                \
    X(PG_UNKNOWN_SETTING, 400, "unknown_setting", "42704", 0,                               \
      "unrecognized configuration parameter")                                              \
    X(PG_INVALID_SETTING, 400, "invalid_setting", "22023", 0, "invalid value for parameter") \
    X(PG_NO_STATEMENT, 400, "no_statement", "26000", 0, "prepared statement does not exist") \
    X(PG_NO_PORTAL, 400, "no_portal", "34000", 0, "portal does not exist")                 \
    X(PG_DUPLICATE_STATEMENT, 400, "duplicate_statement", "42P05", 0,                      \
      "prepared statement already exists")                                                 \
    X(PG_DUPLICATE_CURSOR, 400, "duplicate_cursor", "42P03", 0, "cursor already exists")  \
    X(PG_NO_TRANSACTION, 400, "no_active_transaction", "25P01", 0,                         \
      "this can only be used in transaction blocks")                                       \
    X(PG_TX_ABORTED, 400, "transaction_aborted", "25P02", 0,                               \
      "current transaction is aborted, commands ignored until end of transaction block")   \
    X(PG_INVALID_TEXT, 400, "invalid_text_representation", "22P02", 0,                     \
      "invalid input syntax")                                                              \
    X(PG_RESULT_CHANGED, 400, "result_changed", "0A000", 0,                                \
      "cached plan must not change result type")                                           \
    /* never sent: the consumer of a result went away (client closed, stalled) */             \
    X(CLIENT_GONE, 499, "client_gone", "08006", 0, "the client went away")           \
    /* never sent: a sink took all the rows it wants (exec ends the run normally) */ \
    X(RESULT_CAPPED, 200, "result_capped", "00000", 0, "the result was capped")

enum vt_err {
#define VT_ERR_ENUM(name, status, code, sqlstate, rpc, msg) VT_ERR_##name,
    VT_ERROR_TABLE(VT_ERR_ENUM)
#undef VT_ERR_ENUM
    VT_ERR__COUNT
};

int vt_err_status(enum vt_err e);
const char *vt_err_code(enum vt_err e);
const char *vt_err_default_message(enum vt_err e);
/* The five-character SQLSTATE for the PostgreSQL listener. */
const char *vt_err_sqlstate(enum vt_err e);
/* 0: a tool error (MCP result with isError); else the JSON-RPC error code. */
int vt_err_rpc(enum vt_err e);

#define VT_ERROR_MSG_MAX 600

/* Detail for a failure. Zero-initialise; the first vt_error_set wins. */
struct vt_error {
    enum vt_err code;
    char msg[VT_ERROR_MSG_MAX];
};

/* The limits the engine enforces inside a statement (its bounded SQL
 * functions, engine/functions.c and jsonb.c) can only fail the statement
 * through DuckDB, which reports them as any other failure ("Invalid Input
 * Error: ..."). The engine puts this marker before such a message; the
 * recording below knows it again wherever the message arrives. It holds 64
 * random bits drawn once per process and never leaves it (the recording
 * takes it out of every message), so no text a client writes, in a literal
 * or in its data, can carry it: a message that has it was raised by the
 * engine. */
const char *vt_limit_marker(void);

/* Records the failure unless one is already recorded; returns the code
 * recorded (or `code` when one was already).
 *
 * A message carrying vt_limit_marker() loses the marker (and DuckDB's
 * "Invalid Input Error: " in front of it), and a QUERY_FAILED or
 * BUILD_FAILED that carries it is recorded as LIMIT_EXCEEDED: every path
 * that reports a failed statement (HTTP /sql, saved queries, MCP, the
 * PostgreSQL listener) answers limit_exceeded for it. */
enum vt_err vt_error_set(struct vt_error *err, enum vt_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum vt_err vt_error_setv(struct vt_error *err, enum vt_err code, const char *fmt, va_list ap);
void vt_error_clear(struct vt_error *err);
/* The message to show: the recorded detail, or the code's default. */
const char *vt_error_message(const struct vt_error *err);

#endif
