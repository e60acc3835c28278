/*
 * TEMPORARY: identity-only content coding and no-op metrics until the
 * compression module (branch httputil) and the metrics module land.
 */
#include "http/http_internal.h"

const char *http_choose_encoding(const struct vt_config *cfg, const char *accept_encoding,
                                 size_t len)
{
    (void)cfg;
    (void)accept_encoding;
    (void)len;
    return NULL;
}

int http_compress_buffer(const char *encoding, const void *data, size_t len, struct strbuf *out)
{
    (void)encoding;
    (void)data;
    (void)len;
    (void)out;
    return -1;
}

struct http_compressor *http_compressor_create(const char *encoding)
{
    (void)encoding;
    return NULL;
}

int http_compressor_write(struct http_compressor *c, const void *data, size_t len,
                          struct strbuf *out)
{
    (void)c;
    return sb_add(out, data, len);
}

int http_compressor_finish(struct http_compressor *c, struct strbuf *out)
{
    (void)c;
    (void)out;
    return 0;
}

void http_compressor_destroy(struct http_compressor *c)
{
    (void)c;
}

void http_metrics_observe(const struct http_request *req, int status, double seconds)
{
    (void)req;
    (void)status;
    (void)seconds;
}
