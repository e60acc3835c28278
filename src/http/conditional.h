/*
 * Entity tags and conditional requests (RFC 9110 §8.8.3, §13): formats our
 * strong ETag and evaluates If-Match, If-None-Match and If-Range against it.
 * Only the Parquet export carries an ETag today (it changes with the dataset
 * generation), so a client can revalidate a cached file with If-None-Match and
 * resume a download safely with If-Range.
 *
 * Order of evaluation in the server adapter (RFC 9110 §13.2.2), after routing
 * and after any check that would give a non-2xx answer anyway (404, 503, auth:
 * preconditions are ignored then):
 *
 *     switch (http_preconditions(is_get_or_head, lookup("If-Match"),
 *                                lookup("If-None-Match"), etag)) {
 *     case HTTP_PRECOND_FAILED:        412;
 *     case HTTP_PRECOND_NOT_MODIFIED:  304 with ETag (and Vary, Cache-Control
 *                                      if the 200 would have them), no body;
 *     case HTTP_PRECOND_PASS:          go on; for a GET with Range, consult
 *                                      http_if_range_allows() (then range.h).
 *     }
 *
 * If-Modified-Since and If-Unmodified-Since are not evaluated: we send no
 * Last-Modified, and RFC 9110 lets a server without a modification date
 * ignore them.
 */
#ifndef VT_HTTP_CONDITIONAL_H
#define VT_HTTP_CONDITIONAL_H

#include <stdbool.h>

/* Room for a formatted ETag, quotes and NUL included. */
#define HTTP_ETAG_MAX 96

/*
 * Writes the strong ETag "<opaque>" (with the double quotes) into `out`.
 * `opaque` must be 1..HTTP_ETAG_MAX-3 characters from etagc (visible ASCII
 * except '"'; we also refuse obs-text); -1 otherwise, 0 on success. Use
 * something that changes whenever the bytes change, e.g. the generation ULID
 * plus the size: "01J...-3f2a10".
 */
int http_etag_format(char out[HTTP_ETAG_MAX], const char *opaque);

/*
 * Whether the list `value` (an If-None-Match / If-Match field value,
 * NUL-terminated) matches `etag` (as formatted by http_etag_format).
 * "*" matches any current representation. Weak comparison ignores the W/
 * prefix on either side; strong comparison needs both tags strong and equal.
 * Malformed list members (an unquoted tag, a lower-case "w/") never match, and
 * parsing resumes at the next comma outside a quoted tag. NULL value: false.
 */
bool http_etag_list_match_weak(const char *value, const char *etag);
bool http_etag_list_match_strong(const char *value, const char *etag);

enum http_precond {
    HTTP_PRECOND_PASS,         /* serve the request normally */
    HTTP_PRECOND_NOT_MODIFIED, /* 304 Not Modified */
    HTTP_PRECOND_FAILED,       /* 412 Precondition Failed */
};

/*
 * If-Match then If-None-Match, RFC 9110 §13.2.2 steps 1 and 3. NULL headers
 * are absent. If-Match uses strong comparison; a present but unmatched (or
 * malformed) If-Match is 412. If-None-Match uses weak comparison; a match is
 * 304 for GET/HEAD and 412 for other methods.
 */
enum http_precond http_preconditions(bool get_or_head, const char *if_match,
                                     const char *if_none_match, const char *etag);

/*
 * If-Range (RFC 9110 §13.1.5): true when the Range header may be honoured,
 * false when the whole representation must be sent with 200 instead. NULL
 * (absent) is true. An entity-tag is compared strongly with `etag` (a weak
 * tag never matches). An HTTP-date is treated as not matching: a date only
 * validates against a strong Last-Modified, we send no Last-Modified (a
 * generation can be rebuilt within the same second, so a date could not be a
 * strong validator), and answering the full 200 is always correct, while a
 * wrongly honoured range would splice bytes of two different files together
 * in the client's copy.
 */
bool http_if_range_allows(const char *if_range, const char *etag);

#endif
