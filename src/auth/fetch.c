/*
 * Fetching the issuer's keys: OIDC discovery (OpenID Connect Discovery 1.0
 * §4: {issuer}/.well-known/openid-configuration, whose "issuer" must be ours)
 * then the JWKS at its jwks_uri, over libcurl.
 *
 * Outbound requests are confined (docs/architecture.md, "Confined by default"): https
 * only, plain http only to a loopback host (and then only to a loopback
 * address); redirects followed by hand and only to the same scheme, host and
 * port; never to link-local addresses (cloud metadata), checked on each
 * socket after DNS; connect and total timeouts; a body cap; a stop flag that
 * aborts a transfer at shutdown. Remote error text is not echoed: messages
 * say which URL and what status.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "auth/auth.h"
#include "util/limits.h"

#ifndef VT_VERSION
#define VT_VERSION "0.0.0"
#endif

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct url_parts {
    char *scheme, *host, *port;
};

static void parts_free(struct url_parts *p)
{
    curl_free(p->scheme);
    curl_free(p->host);
    curl_free(p->port);
    memset(p, 0, sizeof *p);
}

static bool url_parse(const char *url, struct url_parts *out)
{
    memset(out, 0, sizeof *out);
    CURLU *u = curl_url();
    bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_SCHEME, &out->scheme, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, &out->host, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_PORT, &out->port, CURLU_DEFAULT_PORT) == CURLUE_OK;
    curl_url_cleanup(u);
    if (!ok)
        parts_free(out);
    return ok;
}

static bool host_is_loopback(const char *host)
{
    if (strcasecmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0 ||
        strcmp(host, "::1") == 0)
        return true;
    struct in_addr a;
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

bool auth_url_loopback_http(const char *url)
{
    struct url_parts p;
    if (!url_parse(url, &p))
        return false;
    bool ok = strcasecmp(p.scheme, "http") == 0 && host_is_loopback(p.host);
    parts_free(&p);
    return ok;
}

/* https, or http to a loopback host. */
static bool url_allowed(const char *url, bool *out_http)
{
    struct url_parts p;
    if (!url_parse(url, &p))
        return false;
    bool https = strcasecmp(p.scheme, "https") == 0;
    bool http = strcasecmp(p.scheme, "http") == 0 && host_is_loopback(p.host);
    parts_free(&p);
    *out_http = http;
    return https || http;
}

static bool same_origin(const char *a, const char *b)
{
    struct url_parts pa, pb;
    if (!url_parse(a, &pa))
        return false;
    if (!url_parse(b, &pb)) {
        parts_free(&pa);
        return false;
    }
    bool same = strcasecmp(pa.scheme, pb.scheme) == 0 && strcasecmp(pa.host, pb.host) == 0 &&
                strcmp(pa.port, pb.port) == 0;
    parts_free(&pa);
    parts_free(&pb);
    return same;
}

/* ------------------------------------------------------------ transfers */

struct xfer {
    struct strbuf *body;
    size_t cap;
    bool too_large;
    bool http;                  /* plain http: loopback addresses only */
    const volatile int *stop;
};

static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n;
    if (x->body->len + len > x->cap) {
        x->too_large = true;
        return 0;
    }
    return sb_add(x->body, data, len) == 0 ? len : 0;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const struct xfer *x = ud;
    return x->stop && *x->stop ? 1 : 0;
}

/* Link-local (169.254/16, fe80::/10: cloud metadata lives there) is never
 * dialled; plain http dials only loopback. */
static bool address_allowed(const struct sockaddr *sa, bool http)
{
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        if ((a >> 16) == 0xA9FE || a == 0)
            return false;
        return !http || (a >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(b, mapped, 12) == 0) {
            struct sockaddr_in v4 = {.sin_family = AF_INET};
            memcpy(&v4.sin_addr, b + 12, 4);
            return address_allowed((const struct sockaddr *)&v4, http);
        }
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
            return false;
        static const unsigned char loop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        return !http || memcmp(b, loop6, 16) == 0;
    }
    return false;
}

static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *addr)
{
    const struct xfer *x = ud;
    if (purpose != CURLSOCKTYPE_IPCXN || !address_allowed(&addr->addr, x->http))
        return CURL_SOCKET_BAD;
    return socket(addr->family, addr->socktype, addr->protocol);
}

enum vt_err auth_http_get(const char *url, size_t cap, const volatile int *stop,
                          struct strbuf *out_body, struct vt_error *err)
{
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK)
        return vt_error_set(err, VT_ERR_INTERNAL, "libcurl did not initialise");
    bool http = false;
    if (!url_allowed(url, &http))
        return vt_error_set(err, VT_ERR_BAD_REQUEST,
                            "%.300s: only https URLs (or http to a loopback host) are fetched",
                            url);
    CURL *h = curl_easy_init();
    if (!h)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "libcurl handle");
    char *cur = strdup(url);
    enum vt_err rc = VT_ERR_OK;
    for (int hop = 0; cur; hop++) {
        sb_reset(out_body);
        struct xfer x = {.body = out_body, .cap = cap, .http = http, .stop = stop};
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, cur);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, http ? "http" : "https");
        curl_easy_setopt(h, CURLOPT_USERAGENT, "vitrine/" VT_VERSION);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)VT_AUTH_CONNECT_TIMEOUT_SECS);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)VT_AUTH_FETCH_TIMEOUT_SECS);
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)cap);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
        curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
        curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &x);
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
        CURLcode cc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (cc != CURLE_OK) {
            if (x.too_large || cc == CURLE_FILESIZE_EXCEEDED)
                rc = vt_error_set(err, VT_ERR_BAD_REQUEST, "%.300s: larger than %zu bytes", cur,
                                  cap);
            else if (stop && *stop)
                rc = vt_error_set(err, VT_ERR_SHUTTING_DOWN, "%.300s: stopped", cur);
            else
                rc = vt_error_set(err, VT_ERR_UNAVAILABLE, "%.300s: %s", cur,
                                  cc == CURLE_COULDNT_CONNECT && status == 0
                                      ? "cannot connect (or address not allowed)"
                                      : curl_easy_strerror(cc));
            break;
        }
        if (status >= 300 && status < 400) {
            char *loc = NULL;
            curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc);
            if (!loc) {
                rc = vt_error_set(err, VT_ERR_UNAVAILABLE, "%.300s: HTTP %ld without Location", cur,
                                  status);
                break;
            }
            if (hop >= VT_AUTH_MAX_REDIRECTS || !same_origin(cur, loc)) {
                rc = vt_error_set(err, VT_ERR_UNAVAILABLE,
                                  "%.300s: redirect not followed (only %d, to the same scheme, "
                                  "host and port)",
                                  cur, VT_AUTH_MAX_REDIRECTS);
                break;
            }
            char *next = strdup(loc);
            free(cur);
            cur = next;
            if (!cur)
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "redirect");
            continue;
        }
        if (status != 200)
            rc = vt_error_set(err, VT_ERR_UNAVAILABLE, "%.300s: HTTP %ld", cur, status);
        break;
    }
    free(cur);
    curl_easy_cleanup(h);
    return rc;
}

/* ------------------------------------------------------------ discovery */

static json_t *load_doc(const struct strbuf *body, const char *what, const char *url,
                        struct vt_error *err)
{
    json_error_t je;
    json_t *doc = json_loadb(body->buf ? body->buf : "", body->len, JSON_REJECT_DUPLICATES, &je);
    if (!doc || !json_is_object(doc)) {
        json_decref(doc);
        vt_error_set(err, VT_ERR_BAD_REQUEST, "%s at %.300s is not a JSON object", what, url);
        return NULL;
    }
    return doc;
}

enum vt_err auth_fetch_keys(const char *issuer, const volatile int *stop,
                            struct auth_keyset **out, struct vt_error *err)
{
    *out = NULL;
    struct strbuf url, body;
    sb_init(&url, 0);
    sb_init(&body, 0);
    size_t il = strlen(issuer);
    while (il && issuer[il - 1] == '/')
        il--; /* OIDC Discovery §4: a terminating "/" is removed before appending */
    sb_add(&url, issuer, il);
    sb_adds(&url, "/.well-known/openid-configuration");
    enum vt_err rc = VT_ERR_OK;
    json_t *doc = NULL;
    if (url.overflow) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "discovery URL");
        goto out;
    }
    rc = auth_http_get(url.buf, VT_AUTH_MAX_DOC_BYTES, stop, &body, err);
    if (rc != VT_ERR_OK)
        goto out;
    doc = load_doc(&body, "the discovery document", url.buf, err);
    if (!doc) {
        rc = err->code;
        goto out;
    }
    const char *doc_iss = json_string_value(json_object_get(doc, "issuer"));
    if (!doc_iss || strcmp(doc_iss, issuer) != 0) {
        rc = vt_error_set(err, VT_ERR_BAD_REQUEST,
                          "the discovery document at %.300s names issuer \"%.200s\", not the "
                          "configured \"%.200s\"",
                          url.buf, doc_iss ? doc_iss : "", issuer);
        goto out;
    }
    const char *jwks = json_string_value(json_object_get(doc, "jwks_uri"));
    if (!jwks) {
        rc = vt_error_set(err, VT_ERR_BAD_REQUEST, "the discovery document at %.300s has no jwks_uri",
                          url.buf);
        goto out;
    }
    sb_reset(&url);
    if (sb_adds(&url, jwks) != 0) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "JWKS URL");
        goto out;
    }
    rc = auth_http_get(url.buf, VT_AUTH_MAX_DOC_BYTES, stop, &body, err);
    if (rc != VT_ERR_OK)
        goto out;
    struct vt_error perr = {0};
    rc = auth_keyset_parse(body.buf ? body.buf : "", body.len, out, &perr);
    if (rc != VT_ERR_OK)
        vt_error_set(err, rc, "%.300s: %s", url.buf, vt_error_message(&perr));
out:
    json_decref(doc);
    sb_release(&url);
    sb_release(&body);
    return rc;
}
