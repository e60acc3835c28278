/*
 * Content negotiation for response compression: parses Accept-Encoding
 * (RFC 9110 §12.5.3) and picks one of identity, gzip, br or zstd for a response.
 *
 * Typical use in the server:
 *
 *     enum http_encoding enc = http_encoding_choose(
 *         http_req_header(req, "Accept-Encoding"),
 *         cfg->server.compress, content_type, body_len_or_HTTP_BODY_LEN_UNKNOWN);
 *     if (http_encoding_should_vary(cfg->server.compress, content_type))
 *         add header "Vary: Accept-Encoding";
 *     if (http_encoding_header_value(enc))
 *         add header "Content-Encoding: <that value>", and compress the body
 *         with compress_create(enc) (src/http/compress.h);
 *
 * Vary: Accept-Encoding must be sent on every response whose encoding *could*
 * depend on Accept-Encoding, including the ones that end up identity (a small
 * body, a client that did not ask): otherwise a shared cache may store an
 * identity response and hand it out, or a gzip response to a client that cannot
 * decode it. http_encoding_should_vary() answers that question; it does not
 * depend on the body size or on the request, only on the route's content type
 * and the server setting. 304 responses must repeat the Vary header too.
 *
 * If a response carries an ETag and may be compressed, the compressed and the
 * identity bytes are different representations and need different ETags
 * (RFC 9110 §8.8.3), e.g. by appending "-gzip". The Parquet export, the one
 * route with ETags and ranges, is never compressed.
 */
#ifndef VT_HTTP_ENCODING_H
#define VT_HTTP_ENCODING_H

#include <stdbool.h>
#include <stdint.h>

/* Response content codings we produce. The order is our tie-break preference,
 * lowest first: for equal q-values zstd beats br beats gzip beats identity. */
enum http_encoding {
    HTTP_ENC_IDENTITY = 0,
    HTTP_ENC_GZIP,
    HTTP_ENC_BR,
    HTTP_ENC_ZSTD,
    HTTP_ENC__COUNT
};

/* Bodies smaller than this are sent uncompressed: the coding's framing (gzip
 * adds 18 bytes, zstd ~13) and the CPU cost outweigh any saving, and typical
 * small answers (probes, counts, status) fit in one TCP segment anyway. */
#define HTTP_COMPRESS_MIN_BYTES 1024

/* Pass as body_len when the body is streamed and its size is not known yet
 * Such bodies are eligible. */
#define HTTP_BODY_LEN_UNKNOWN UINT64_MAX

/* q-values are kept in thousandths (q=0.5 is 500); this marks "not listed". */
#define HTTP_Q_UNLISTED (-1) /* the coding is not named in the header */

/* The parsed Accept-Encoding header. */
struct http_accept_encoding {
    bool present;                /* the header was sent (even if empty) */
    int q[HTTP_ENC__COUNT];      /* per coding we know, or HTTP_Q_UNLISTED */
    int star_q;                  /* q of "*", or HTTP_Q_UNLISTED */
};

/*
 * Parses an Accept-Encoding value. `value` is NUL-terminated; NULL means the
 * header is absent. Never fails: malformed elements (bad token, bad q-value
 * such as q=2 or q=.5, stray characters) are skipped one by one and the rest
 * of the list is still used. Tokens are case-insensitive; "x-gzip" counts as
 * gzip (RFC 9110 §8.4.1.3); codings we do not produce (deflate, compress...)
 * are ignored. A coding listed twice keeps its lowest q, so an explicit q=0
 * is never undone by a later duplicate.
 *
 * If the request carried several Accept-Encoding lines, join them with ", "
 * first (RFC 9110 §5.3); http_req_header returns only the first one.
 */
void http_accept_encoding_parse(const char *value, struct http_accept_encoding *out);

/*
 * The q-value (thousandths) an Accept header value gives the media type
 * `type` (lower case, e.g. "application/json") when it names it exactly, or
 * HTTP_Q_UNLISTED (also for a NULL value). Wildcards ("*" + "/" + "*",
 * "application/" + "*") are not expanded: callers use this to see whether a
 * client asked for a specific non-default type. Same rules as Accept-Encoding:
 * case-insensitive, malformed elements skipped, the lowest q of duplicates.
 */
int http_accept_media_q(const char *value, const char *type);

/*
 * The coding to use for a response to `ae` when all four are available:
 * the highest q wins, ties go to zstd > br > gzip > identity, q=0 excludes, and
 * "*" gives its q to every coding not listed by name (identity included).
 * identity that is not named and not covered by "*" is acceptable but only as
 * a last resort (a client sending "gzip;q=0.5" wants gzip). When nothing is
 * acceptable (e.g. "identity;q=0" alone) we still answer identity rather than
 * 406, as RFC 9110 §12.5.3 allows and browsers expect. Absent or empty header:
 * identity.
 */
enum http_encoding http_accept_encoding_pick(const struct http_accept_encoding *ae);

/*
 * The whole decision for one response. `accept_encoding` as for
 * http_accept_encoding_parse. Identity when `compress_enabled` is false
 * (server.compress), when the content type is not compressible, or when
 * body_len < HTTP_COMPRESS_MIN_BYTES; otherwise http_accept_encoding_pick.
 */
enum http_encoding http_encoding_choose(const char *accept_encoding, bool compress_enabled,
                                        const char *content_type, uint64_t body_len);

/* Whether compressing this content type can pay off: any text type, JSON (also
 * "+json" and NDJSON), XML, JavaScript, SVG, CSV. Never for Arrow IPC, Parquet,
 * images, octet-stream: those are already compact or compressed. Parameters
 * such as "; charset=utf-8" and letter case are ignored. NULL: false. */
bool http_content_type_compressible(const char *content_type);

/* Whether the response must carry "Vary: Accept-Encoding" (see above). */
bool http_encoding_should_vary(bool compress_enabled, const char *content_type);

/* The Content-Encoding header value: "gzip", "br", "zstd"; NULL for identity
 * (send no Content-Encoding header at all). */
const char *http_encoding_header_value(enum http_encoding enc);

/* A name for logs and tests: "identity", "gzip", "br", "zstd". */
const char *http_encoding_name(enum http_encoding enc);

#endif
