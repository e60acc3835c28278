/*
 * What the HTTP adapter needs from its sibling files: content-coding
 * negotiation and compression (encoding.c), and per-request metrics
 * (metrics hook). Not for other modules.
 */
#ifndef VT_HTTP_INTERNAL_H
#define VT_HTTP_INTERNAL_H

#include <stddef.h>

#include "config/config.h"
#include "http/server.h"
#include "util/strbuf.h"

/* The Content-Encoding token to use for a body of `len` bytes (SIZE_MAX when
 * unknown, i.e. streamed), or NULL for identity. */
const char *http_choose_encoding(const struct vt_config *cfg, const char *accept_encoding,
                                 size_t len);
/* One-shot compression of a whole buffer; 0 on success. */
int http_compress_buffer(const char *encoding, const void *data, size_t len, struct strbuf *out);

struct http_compressor;
struct http_compressor *http_compressor_create(const char *encoding);
int http_compressor_write(struct http_compressor *c, const void *data, size_t len,
                          struct strbuf *out);
int http_compressor_finish(struct http_compressor *c, struct strbuf *out);
void http_compressor_destroy(struct http_compressor *c);

/* Called once per completed request (route pattern, status, seconds). */
void http_metrics_observe(const struct http_request *req, int status, double seconds);

#endif
