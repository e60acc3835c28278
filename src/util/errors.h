/*
 * The one table of error codes. Every failure a client can see has a stable
 * snake_case code, an HTTP status and a default message; the JSON error body is
 * {"error": "<message>", "code": "<code>"} (see DESIGN.md, "Errors").
 *
 * Functions return an enum vt_err; the detail text goes into a struct vt_error
 * where the first failure wins, so a deep callee's precise message is not
 * overwritten by a caller's vaguer one.
 */
#ifndef VT_UTIL_ERRORS_H
#define VT_UTIL_ERRORS_H

#include <stdarg.h>
#include <stddef.h>

/* X(NAME, http_status, "code", "default message") */
#define VT_ERROR_TABLE(X)                                                                  \
    X(OK, 200, "ok", "ok")                                                                 \
    /* generic request problems */                                                         \
    X(BAD_REQUEST, 400, "bad_request", "bad request")                                      \
    X(INVALID_JSON, 400, "invalid_json", "request body is not valid JSON")                 \
    X(UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type",                               \
      "request body must be sent with Content-Type: application/json")                     \
    X(BODY_TOO_LARGE, 413, "body_too_large", "request body exceeds server.max_body_bytes")   \
    X(URI_TOO_LONG, 414, "uri_too_long", "request target too long")                        \
    X(NOT_FOUND, 404, "not_found", "no such route")                                        \
    X(METHOD_NOT_ALLOWED, 405, "method_not_allowed", "method not allowed")                 \
    X(TIMEOUT, 504, "timeout", "request timed out")                                        \
    X(UNAVAILABLE, 503, "unavailable", "service unavailable")                              \
    X(SHUTTING_DOWN, 503, "shutting_down", "server is shutting down")                      \
    X(INTERNAL, 500, "internal", "internal error")                                         \
    X(OUT_OF_MEMORY, 503, "out_of_memory", "out of memory")                                \
    X(MALFORMED_REQUEST, 400, "malformed_request", "malformed HTTP request")               \
    X(NOT_IMPLEMENTED, 501, "not_implemented", "not implemented")                          \
    X(UNSUPPORTED_CONTENT_ENCODING, 415, "unsupported_content_encoding",                   \
      "request bodies must not be sent with a Content-Encoding")                           \
    X(HEADERS_TOO_LARGE, 431, "headers_too_large", "request header fields too large")      \
    X(REQUEST_HEAD_TIMEOUT, 408, "request_timeout",                                         \
      "the request head did not arrive in time")                                           \
    /* datasets */                                                                         \
    X(DATASET_NOT_FOUND, 404, "dataset_not_found", "no such dataset")                      \
    X(DATASET_NOT_READY, 503, "dataset_not_ready", "dataset is not published yet")         \
    X(DATASET_FAILED, 503, "dataset_failed", "dataset failed to build")                    \
    X(DATASET_EXISTS, 400, "dataset_exists", "a dataset with this name already exists")    \
    X(INVALID_NAME, 400, "invalid_name", "invalid dataset name")                           \
    X(SOURCE_UNAVAILABLE, 400, "source_unavailable", "source cannot be opened")            \
    X(SOURCE_EMPTY, 400, "source_empty", "source has no files or no rows")                 \
    X(SOURCE_UNSUPPORTED, 400, "source_unsupported",                                      \
      "source uses a format feature vitrine cannot read")                                  \
    X(BUILD_FAILED, 422, "build_failed", "dataset build failed")                           \
    X(BUSY, 409, "busy", "dataset is already building")                                    \
    X(INVALID_CONFIG, 400, "invalid_config", "invalid configuration")                      \
    X(NO_CONFIG_FILE, 400, "no_config_file", "server was not started from a config file")  \
    /* query language */                                                                   \
    X(INVALID_QUERY, 400, "invalid_query", "invalid query request")                        \
    X(UNKNOWN_FIELD, 400, "unknown_field", "unknown field in request")                     \
    X(UNKNOWN_COLUMN, 400, "unknown_column", "unknown column")                             \
    X(UNKNOWN_OPERATOR, 400, "unknown_operator", "unknown operator")                       \
    X(INVALID_OPERATOR, 400, "invalid_operator", "operator does not apply to this column") \
    X(INVALID_VALUE, 400, "invalid_value", "invalid predicate value")                      \
    X(INVALID_AGGREGATION, 400, "invalid_aggregation", "invalid aggregation")              \
    X(INVALID_ORDER, 400, "invalid_order", "invalid order_by")                             \
    X(INVALID_HAVING, 400, "invalid_having", "invalid having")                             \
    X(INVALID_COMBINATION, 400, "invalid_combination", "invalid combination of fields")    \
    X(LIMIT_EXCEEDED, 400, "limit_exceeded", "request exceeds a limit")                    \
    X(QUERY_FAILED, 400, "query_failed", "query could not be executed")                    \
    /* ranges and conditional requests */                                                  \
    X(RANGE_NOT_SATISFIABLE, 416, "range_not_satisfiable", "range not satisfiable")        \
    X(PRECONDITION_FAILED, 412, "precondition_failed", "precondition failed")              \
    /* auth */                                                                             \
    X(UNAUTHORIZED, 401, "unauthorized", "missing or invalid credentials")                 \
    X(FORBIDDEN, 403, "forbidden", "forbidden")                                            \
    X(ADMIN_DISABLED, 403, "admin_disabled", "admin operations are disabled: ADMIN_TOKEN is not set")

enum vt_err {
#define VT_ERR_ENUM(name, status, code, msg) VT_ERR_##name,
    VT_ERROR_TABLE(VT_ERR_ENUM)
#undef VT_ERR_ENUM
    VT_ERR__COUNT
};

int vt_err_status(enum vt_err e);
const char *vt_err_code(enum vt_err e);
const char *vt_err_default_message(enum vt_err e);

#define VT_ERROR_MSG_MAX 600

/* Detail for a failure. Zero-initialise; the first vt_error_set wins. */
struct vt_error {
    enum vt_err code;
    char msg[VT_ERROR_MSG_MAX];
};

/* Records the failure unless one is already recorded; returns `code`. */
enum vt_err vt_error_set(struct vt_error *err, enum vt_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum vt_err vt_error_setv(struct vt_error *err, enum vt_err code, const char *fmt, va_list ap);
void vt_error_clear(struct vt_error *err);
/* The message to show: the recorded detail, or the code's default. */
const char *vt_error_message(const struct vt_error *err);

#endif
