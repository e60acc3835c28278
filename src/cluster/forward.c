/*
 * A reader relays admin and write calls to cluster.writer_url: the same
 * method, path, body and credentials, the writer's status and body back.
 * The writer authenticates; the reader adds nothing and keeps no state.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cluster/cluster_internal.h"
#include "util/timeutil.h"

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct cluster_forward_resp *out = ud;
    size_t len = size * n;
    if (out->body.len + len > VT_CLUSTER_FORWARD_MAX_BYTES)
        return 0;
    return sb_add(&out->body, p, len) < 0 ? 0 : len;
}

static void header_copy(const char *line, size_t n, size_t skip, char *out, size_t cap)
{
    const char *v = line + skip;
    const char *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t len = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct cluster_forward_resp *out = ud;
    size_t len = size * n;
    if (len > 13 && strncasecmp(p, "content-type:", 13) == 0)
        header_copy(p, len, 13, out->content_type, sizeof out->content_type);
    else if (len > 12 && strncasecmp(p, "retry-after:", 12) == 0)
        header_copy(p, len, 12, out->retry_after, sizeof out->retry_after);
    return len;
}

enum vt_err cluster_forward(struct cluster *c, const struct cluster_forward_req *r,
                            struct cluster_forward_resp *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    sb_init(&out->body, VT_CLUSTER_FORWARD_MAX_BYTES + 1);
    const char *base = cluster_writer_url(c);
    if (!base)
        return vt_error_set(err, VT_ERR_NOT_WRITER, NULL);
    CURL *h = curl_easy_init();
    if (!h)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    struct strbuf url;
    sb_init(&url, 0);
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        bl--;
    sb_add(&url, base, bl);
    sb_adds(&url, r->path);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
    for (size_t i = 0; r->headers && r->headers[i]; i++)
        hdrs = curl_slist_append(hdrs, r->headers[i]);
    int64_t deadline = r->deadline_ms ? r->deadline_ms
                                      : time_mono_ms() + VT_CLUSTER_FORWARD_TIMEOUT_MS;
    int64_t left = deadline - time_mono_ms();
    curl_easy_setopt(h, CURLOPT_URL, url.buf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    if (r->body_len || strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body ? r->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
    CURLcode cc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    sb_release(&url);
    if (cc != CURLE_OK) {
        sb_release(&out->body);
        return vt_error_set(err, VT_ERR_UNAVAILABLE,
                            "the writer (%s) cannot be reached: %s; retry later", base,
                            curl_easy_strerror(cc));
    }
    out->status = (int)code;
    return VT_ERR_OK;
}
