/*
 * The S3 client: URL building (path or virtual-host addressing), SigV4 signing
 * through libcurl (CURLOPT_AWS_SIGV4), retries with backoff, ListObjectsV2
 * paging, GET to memory or file, HEAD, and parallel downloads. See s3.h for the
 * configuration rules; the XML side lives in s3_xml.c, and names as text
 * (s3:// locations, URI encoding, globs over keys) in s3_keys.c.
 *
 * Signing notes: curl signs the request line as we give it, so the URL we build
 * is already in SigV4 canonical form (keys percent-encoded except '/', query
 * parameters sorted by name with fully encoded values). GET/HEAD have an empty
 * body, so x-amz-content-sha256 is the SHA-256 of the empty string; curl reads
 * that header and signs it.
 */
#include "sources/s3.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/limits.h"
#include "util/log.h"
#include "util/netaddr.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

#ifndef VT_VERSION
#define VT_VERSION "dev"
#endif

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3_client {
    char *region;
    char *scheme;       /* "https" or "http" */
    char *host;         /* host[:port] of the endpoint */
    char *base_path;    /* endpoint path prefix without trailing '/', often "" */
    char *endpoint;     /* scheme://host/base_path, for messages */
    bool path_style;
    bool host_is_ip;    /* IP literal or localhost: no bucket sub-domains */
    bool allow_http;
    char *key_id;       /* NULL = unsigned requests */
    char *secret;
    char *token;
    char *sigv4;        /* "aws:amz:<region>:s3" */
    CURL *h;            /* reused by the owning thread (keep-alive) */
    bool allow_private; /* an endpoint the operator named may be loopback/private */
    int64_t deadline_ms;        /* monotonic; 0 = none (s3_client_bound) */
    const atomic_bool *cancel;  /* may be NULL */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- small helpers -------------------------------------------------------- */

static char *xstrndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* Thread-local xorshift for jitter: rand() is not thread-safe and a shared
 * seed would synchronise retries across threads, which jitter tries to avoid. */
static uint64_t jitter_rand(void)
{
    static _Thread_local uint64_t state;
    if (state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&state;
        if (state == 0)
            state = 0x9e3779b97f4a7c15ULL;
    }
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/* Full jitter: sleep a random time in [0, min(cap, base * 2^attempt)], but at
 * least what the server asked for with Retry-After (also capped), never past
 * the client's deadline. */
static void backoff_sleep(const struct s3_client *c, int attempt, long retry_after_secs)
{
    int64_t ceil_ms = VT_S3_BACKOFF_BASE_MS;
    for (int i = 0; i < attempt && ceil_ms < VT_S3_BACKOFF_MAX_MS; i++)
        ceil_ms *= 2;
    if (ceil_ms > VT_S3_BACKOFF_MAX_MS)
        ceil_ms = VT_S3_BACKOFF_MAX_MS;
    int64_t ms = (int64_t)(jitter_rand() % (uint64_t)(ceil_ms + 1));
    if (retry_after_secs > 0) {
        int64_t ra = retry_after_secs * 1000;
        if (ra > VT_S3_BACKOFF_MAX_MS)
            ra = VT_S3_BACKOFF_MAX_MS;
        if (ms < ra)
            ms = ra;
    }
    if (c->deadline_ms) {
        int64_t left = c->deadline_ms - time_mono_ms();
        if (ms > left)
            ms = left > 0 ? left : 0;
    }
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* The deadline passed or the owner cancelled: stop now. */
static bool stopped(const struct s3_client *c)
{
    return (c->cancel && atomic_load(c->cancel)) ||
           (c->deadline_ms && time_mono_ms() >= c->deadline_ms);
}

void s3_client_bound(struct s3_client *c, int64_t deadline_ms, const atomic_bool *cancel)
{
    c->deadline_ms = deadline_ms;
    c->cancel = cancel;
}

/* ---- client --------------------------------------------------------------- */

static bool dns_compatible_bucket(const char *b)
{
    size_t n = strlen(b);
    if (n < 3 || n > 63 || b[0] == '-' || b[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false; /* dots break TLS wildcard certificates; uppercase is not DNS-safe */
    }
    return true;
}

static bool host_is_ip_or_local(const char *hostport)
{
    if (hostport[0] == '[')
        return true; /* IPv6 literal */
    size_t n = strcspn(hostport, ":");
    if (n == 9 && strncasecmp(hostport, "localhost", 9) == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (!((hostport[i] >= '0' && hostport[i] <= '9') || hostport[i] == '.'))
            return false;
    return n > 0;
}

static const char *env_nonempty(const char *name)
{
    const char *v = name ? getenv(name) : NULL;
    return v && *v ? v : NULL;
}

void s3_client_destroy(struct s3_client *c)
{
    if (!c)
        return;
    if (c->h)
        curl_easy_cleanup(c->h);
    free(c->region);
    free(c->scheme);
    free(c->host);
    free(c->base_path);
    free(c->endpoint);
    /* Wipe secrets before freeing so they do not linger in freed heap. */
    if (c->secret) {
        explicit_bzero(c->secret, strlen(c->secret));
        free(c->secret);
    }
    if (c->token) {
        explicit_bzero(c->token, strlen(c->token));
        free(c->token);
    }
    free(c->key_id);
    free(c->sigv4);
    free(c);
}

const char *s3_client_region(const struct s3_client *c)
{
    return c->region;
}

const char *s3_client_endpoint(const struct s3_client *c)
{
    return c->endpoint;
}

static enum vt_err parse_endpoint(struct s3_client *c, const char *ep, struct vt_error *err)
{
    const char *rest;
    if (strncasecmp(ep, "https://", 8) == 0) {
        c->scheme = strdup("https");
        rest = ep + 8;
    } else if (strncasecmp(ep, "http://", 7) == 0) {
        if (!c->allow_http)
            return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                                "s3.endpoint %s uses plain http://; set s3.allow_http = true "
                                "to allow unencrypted connections",
                                ep);
        c->scheme = strdup("http");
        rest = ep + 7;
    } else {
        return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                            "s3.endpoint must start with https:// (or http:// with "
                            "s3.allow_http): %s",
                            ep);
    }
    size_t hl = strcspn(rest, "/?#");
    if (hl == 0)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "s3.endpoint has no host: %s", ep);
    if (rest[hl] == '?' || rest[hl] == '#')
        return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                            "s3.endpoint must not have a query or fragment: %s", ep);
    if (memchr(rest, '@', hl))
        return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                            "s3.endpoint must not carry user info; use the credential "
                            "environment variables");
    c->host = xstrndup(rest, hl);
    const char *path = rest + hl;
    size_t pl = strlen(path);
    while (pl > 0 && path[pl - 1] == '/')
        pl--;
    c->base_path = xstrndup(path, pl);
    if (!c->scheme || !c->host || !c->base_path)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    return VT_ERR_OK;
}

enum vt_err s3_client_create(const struct s3_config *cfg, struct s3_client **out,
                             struct vt_error *err)
{
    *out = NULL;
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK)
        return vt_error_set(err, VT_ERR_INTERNAL, "libcurl initialisation failed");
    struct s3_config none = {0};
    if (!cfg)
        cfg = &none;
    struct s3_client *c = calloc(1, sizeof *c);
    if (!c)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    enum vt_err rc = VT_ERR_OK;
    c->allow_http = cfg->allow_http;
    /* An endpoint written in the config (or allowed by it for requests) may
     * be on this machine or a private network; the default AWS endpoint and
     * whatever its names resolve to may not. */
    c->allow_private = cfg->endpoint && *cfg->endpoint;
    const char *region = cfg->region && *cfg->region ? cfg->region : NULL;
    if (!region)
        region = env_nonempty("AWS_REGION");
    if (!region)
        region = env_nonempty("AWS_DEFAULT_REGION");
    if (!region)
        region = "us-east-1";
    for (const char *p = region; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-')) {
            rc = vt_error_set(err, VT_ERR_INVALID_CONFIG, "invalid S3 region \"%s\"", region);
            goto fail;
        }
    }
    c->region = strdup(region);
    if (!c->region)
        goto oom;

    if (cfg->endpoint && *cfg->endpoint) {
        rc = parse_endpoint(c, cfg->endpoint, err);
        if (rc != VT_ERR_OK)
            goto fail;
    } else {
        char ep[128];
        snprintf(ep, sizeof ep, "https://s3.%s.amazonaws.com", c->region);
        rc = parse_endpoint(c, ep, err);
        if (rc != VT_ERR_OK)
            goto fail;
    }
    c->host_is_ip = host_is_ip_or_local(c->host);
    c->path_style = cfg->addressing_style == CFG_S3_ADDRESSING_PATH;
    {
        struct strbuf sb;
        sb_init(&sb, 0);
        sb_addf(&sb, "%s://%s%s", c->scheme, c->host, c->base_path);
        c->endpoint = sb_detach(&sb, NULL);
        if (!c->endpoint)
            goto oom;
    }

    /* Credentials: the per-dataset overrides name environment variables; the
     * secrets themselves never appear in the config. */
    const char *kid_var = cfg->access_key_id_env ? cfg->access_key_id_env : "AWS_ACCESS_KEY_ID";
    const char *sec_var =
        cfg->secret_access_key_env ? cfg->secret_access_key_env : "AWS_SECRET_ACCESS_KEY";
    const char *tok_var = cfg->session_token_env ? cfg->session_token_env : "AWS_SESSION_TOKEN";
    const char *kid = env_nonempty(kid_var), *sec = env_nonempty(sec_var),
               *tok = env_nonempty(tok_var);
    if (cfg->access_key_id_env && !kid) {
        rc = vt_error_set(err, VT_ERR_INVALID_CONFIG,
                          "s3.access_key_id_env names %s, which is not set", kid_var);
        goto fail;
    }
    if (cfg->secret_access_key_env && !sec) {
        rc = vt_error_set(err, VT_ERR_INVALID_CONFIG,
                          "s3.secret_access_key_env names %s, which is not set", sec_var);
        goto fail;
    }
    if (cfg->session_token_env && !tok) {
        rc = vt_error_set(err, VT_ERR_INVALID_CONFIG,
                          "s3.session_token_env names %s, which is not set", tok_var);
        goto fail;
    }
    if ((kid == NULL) != (sec == NULL)) {
        rc = vt_error_set(err, VT_ERR_INVALID_CONFIG,
                          "S3 credentials incomplete: %s and %s must both be set", kid_var,
                          sec_var);
        goto fail;
    }
    if (kid) {
        c->key_id = strdup(kid);
        c->secret = strdup(sec);
        c->token = tok ? strdup(tok) : NULL;
        struct strbuf sb;
        sb_init(&sb, 0);
        sb_addf(&sb, "aws:amz:%s:s3", c->region);
        c->sigv4 = sb_detach(&sb, NULL);
        if (!c->key_id || !c->secret || (tok && !c->token) || !c->sigv4)
            goto oom;
    }
    *out = c;
    return VT_ERR_OK;
oom:
    rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
fail:
    s3_client_destroy(c);
    return rc;
}

/* <scheme>://<host>/<bucket>/<key>?q or <scheme>://<bucket>.<host>/<key>?q */
static char *build_url(const struct s3_client *c, const char *bucket, const char *key,
                       const char *query)
{
    char *ekey = s3_uri_encode(key ? key : "", true);
    char *ebucket = s3_uri_encode(bucket, false);
    if (!ekey || !ebucket) {
        free(ekey);
        free(ebucket);
        return NULL;
    }
    bool virt = !c->path_style && !c->host_is_ip && dns_compatible_bucket(bucket);
    struct strbuf sb;
    sb_init(&sb, 0);
    if (virt)
        sb_addf(&sb, "%s://%s.%s%s/%s", c->scheme, ebucket, c->host, c->base_path, ekey);
    else
        sb_addf(&sb, "%s://%s%s/%s/%s", c->scheme, c->host, c->base_path, ebucket, ekey);
    if (query && *query)
        sb_addf(&sb, "?%s", query);
    free(ekey);
    free(ebucket);
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb, NULL);
}

/* ---- one request with retries ------------------------------------------- */

enum sink_kind { SINK_MEM, SINK_FILE, SINK_NONE };

struct xfer {
    CURL *h;
    enum sink_kind kind;
    struct strbuf *mem;     /* SINK_MEM */
    size_t mem_max;
    FILE *file;             /* SINK_FILE */
    int64_t written;
    int64_t file_max;
    bool status_known;
    bool success_body;      /* 2xx: body goes to the sink, else to errbody */
    struct strbuf errbody;
    bool too_large;
    char etag[256];
    char bucket_region[64];
    int64_t content_length;
    const struct s3_client *c;
    bool refused;           /* a socket was refused by the address policy */
    enum util_addr_class refused_class;
};

/* Every socket, after DNS: the address it is about to dial must be allowed
 * (util/netaddr.h), so a name cannot rebind to cloud metadata or, unless the
 * operator named the endpoint, to this machine or a private network. */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *addr)
{
    struct xfer *x = ud;
    enum util_addr_class cls = util_addr_classify(&addr->addr);
    if (purpose != CURLSOCKTYPE_IPCXN || !util_addr_dialable(cls, x->c->allow_private)) {
        x->refused = true;
        x->refused_class = cls;
        return CURL_SOCKET_BAD;
    }
    return socket(addr->family, addr->socktype, addr->protocol);
}

/* Aborts a transfer once the owner's deadline passed or it cancelled. */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const struct xfer *x = ud;
    return stopped(x->c) ? 1 : 0;
}

/* Remote text in our messages is cut to what a reader needs and can trust:
 * an S3 error code or a region name keeps only [A-Za-z0-9.-]. */
static const char *summarize(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (const char *p = in; *p && j + 1 < cap; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '.' || *p == '-')
            out[j++] = *p;
    out[j] = '\0';
    return out;
}

/* Connect and total timeouts for one attempt, never past the deadline. */
static void set_timeouts(const struct s3_client *c, CURL *h, bool long_transfer)
{
    long connect_ms = VT_S3_CONNECT_TIMEOUT_SECS * 1000L;
    long total_ms = long_transfer ? 0 : VT_S3_REQUEST_TIMEOUT_SECS * 1000L;
    if (c->deadline_ms) {
        int64_t left = c->deadline_ms - time_mono_ms();
        long l = left > 1 ? (long)(left < 86400000 ? left : 86400000) : 1;
        connect_ms = connect_ms < l ? connect_ms : l;
        total_ms = total_ms && total_ms < l ? total_ms : l;
    }
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    if (total_ms)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total_ms);
    if (long_transfer) {
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)VT_S3_LOW_SPEED_BYTES);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)VT_S3_LOW_SPEED_SECS);
    }
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    if (!x->status_known) {
        long code = 0;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
        x->success_body = code >= 200 && code < 300;
        x->status_known = true;
    }
    if (!x->success_body) {
        /* Error bodies are small XML; keep the start, drop the rest. */
        size_t room = VT_S3_MAX_ERROR_BODY_BYTES - x->errbody.len;
        sb_add(&x->errbody, ptr, n < room ? n : room);
        return n;
    }
    switch (x->kind) {
    case SINK_MEM:
        if (x->mem->len + n > x->mem_max) {
            x->too_large = true;
            return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
        }
        if (sb_add(x->mem, ptr, n) < 0)
            return 0;
        return n;
    case SINK_FILE:
        if (x->written + (int64_t)n > x->file_max) {
            x->too_large = true;
            return 0;
        }
        if (fwrite(ptr, 1, n, x->file) != n)
            return 0;
        x->written += (int64_t)n;
        return n;
    case SINK_NONE:
        return n;
    }
    return 0;
}

static void header_value(const char *line, size_t n, char *out, size_t cap)
{
    const char *colon = memchr(line, ':', n);
    if (!colon)
        return;
    const char *v = colon + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t len = (size_t)(end - v);
    if (len >= cap)
        len = cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nitems;
    if (n > 5 && strncasecmp(buf, "etag:", 5) == 0)
        header_value(buf, n, x->etag, sizeof x->etag);
    else if (n > 20 && strncasecmp(buf, "x-amz-bucket-region:", 20) == 0)
        header_value(buf, n, x->bucket_region, sizeof x->bucket_region);
    else if (n > 15 && strncasecmp(buf, "content-length:", 15) == 0) {
        char v[32] = "";
        header_value(buf, n, v, sizeof v);
        x->content_length = strtoll(v, NULL, 10);
    }
    return n;
}

/* The body of a PUT: bytes in memory or an open file, sent from the start
 * on every attempt. */
struct upload {
    const char *mem;
    FILE *file;
    int64_t size;
    int64_t off;
};

struct req {
    const char *method;     /* GET, HEAD, PUT or DELETE */
    const char *bucket;
    const char *key;        /* "" for bucket-level requests */
    const char *query;      /* canonical query string or NULL */
    const char *range;      /* "a-b" or NULL */
    const char *if_match;
    const char *if_none_match;
    const char *content_sha256; /* PUT: hex SHA-256 of the body (signed) */
    const char *content_type;   /* PUT */
    struct upload *body;        /* PUT */
    bool long_transfer;     /* object download: no total timeout, low-speed limit */
};

static size_t on_read(char *buf, size_t size, size_t nitems, void *ud)
{
    struct upload *u = ud;
    size_t want = size * nitems;
    int64_t left = u->size - u->off;
    if (left <= 0)
        return 0;
    if ((int64_t)want > left)
        want = (size_t)left;
    size_t got;
    if (u->mem) {
        memcpy(buf, u->mem + u->off, want);
        got = want;
    } else {
        got = fread(buf, 1, want, u->file);
        if (got == 0)
            return CURL_READFUNC_ABORT;
    }
    u->off += (int64_t)got;
    return got;
}

static bool retryable_curl(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

static bool retryable_status(long code, const struct s3_error_doc *doc)
{
    if (code >= 500 || code == 429)
        return true;
    /* S3 asks clients to retry these even though the status is 400. */
    return code == 400 && (strcmp(doc->code, "RequestTimeout") == 0 ||
                           strcmp(doc->code, "SlowDown") == 0);
}

static void describe_target(const struct req *r, char *out, size_t cap)
{
    snprintf(out, cap, "s3://%s/%s", r->bucket, r->key ? r->key : "");
}

/* Runs one request with retries; the sink is reset before each attempt. */
static enum vt_err perform(struct s3_client *c, CURL *h, const struct req *r, struct xfer *x,
                           struct s3_outcome *oc, struct vt_error *err)
{
    char target[VT_S3_MAX_KEY_BYTES + 128];
    describe_target(r, target, sizeof target);
    char *url = build_url(c, r->bucket, r->key, r->query);
    if (!url)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    struct curl_slist *hdrs = NULL;
    char shah[96];
    snprintf(shah, sizeof shah, "x-amz-content-sha256: %s",
             r->content_sha256 ? r->content_sha256 : EMPTY_SHA256);
    hdrs = curl_slist_append(hdrs, shah);
    char inm[320], cth[160];
    if (r->if_none_match) {
        snprintf(inm, sizeof inm, "If-None-Match: %s", r->if_none_match);
        hdrs = curl_slist_append(hdrs, inm);
    }
    if (r->content_type) {
        snprintf(cth, sizeof cth, "Content-Type: %s", r->content_type);
        hdrs = curl_slist_append(hdrs, cth);
    }
    if (r->body) /* no 100-continue round trip */
        hdrs = curl_slist_append(hdrs, "Expect:");
    char *tokhdr = NULL;
    if (c->token) {
        size_t tl = strlen(c->token) + 32;
        tokhdr = malloc(tl);
        if (tokhdr) {
            snprintf(tokhdr, tl, "x-amz-security-token: %s", c->token);
            hdrs = curl_slist_append(hdrs, tokhdr);
        }
    }
    char imh[320];
    if (r->if_match) {
        snprintf(imh, sizeof imh, "If-Match: %s", r->if_match);
        hdrs = curl_slist_append(hdrs, imh);
    }
    enum vt_err rc = VT_ERR_OK;
    memset(oc, 0, sizeof *oc);
    for (int attempt = 0;; attempt++) {
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, c->allow_http ? "http,https" : "https");
        curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "https");
        curl_easy_setopt(h, CURLOPT_USERAGENT, "vitrine/" VT_VERSION);
        set_timeouts(c, h, r->long_transfer);
        curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
        curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        if (c->key_id) {
            curl_easy_setopt(h, CURLOPT_AWS_SIGV4, c->sigv4);
            curl_easy_setopt(h, CURLOPT_USERNAME, c->key_id);
            curl_easy_setopt(h, CURLOPT_PASSWORD, c->secret);
        }
        if (strcmp(r->method, "HEAD") == 0)
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        if (strcmp(r->method, "DELETE") == 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
        if (r->body) {
            r->body->off = 0;
            if (r->body->file && fseeko(r->body->file, 0, SEEK_SET) != 0) {
                rc = vt_error_set(err, VT_ERR_INTERNAL, "cannot rewind the upload of %s",
                                  target);
                break;
            }
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(h, CURLOPT_READDATA, r->body);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body->size);
        }
        if (r->range)
            curl_easy_setopt(h, CURLOPT_RANGE, r->range);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, x);

        /* Reset the sink for this attempt. */
        x->h = h;
        x->c = c;
        x->refused = false;
        x->status_known = false;
        x->success_body = false;
        x->too_large = false;
        x->etag[0] = x->bucket_region[0] = '\0';
        x->content_length = -1;
        sb_reset(&x->errbody);
        if (x->kind == SINK_MEM)
            sb_reset(x->mem);
        if (x->kind == SINK_FILE) {
            rewind(x->file);
            if (ftruncate(fileno(x->file), 0) != 0) {
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                  "cannot truncate download file: %s", strerror(errno));
                break;
            }
            x->written = 0;
        }

        CURLcode cc = curl_easy_perform(h);
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        oc->http_status = (int)code;
        bool last = attempt + 1 >= VT_S3_MAX_ATTEMPTS || stopped(c);
        if (cc != CURLE_OK) {
            if (x->too_large) {
                rc = vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "%s is larger than the %s limit",
                                  target,
                                  x->kind == SINK_MEM ? "in-memory object" : "object size");
                break;
            }
            if (x->refused) {
                /* Not retried: the same name would be refused again. */
                oc->http_status = 0;
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                  "%s %s via %s: the endpoint resolves to a %s address, which "
                                  "is not dialled%s",
                                  r->method, target, c->endpoint,
                                  util_addr_class_name(x->refused_class),
                                  c->allow_private ? ""
                                                   : " (only an s3.endpoint the config names "
                                                     "may be loopback or private)");
                break;
            }
            if (stopped(c)) {
                oc->http_status = 0;
                rc = vt_error_set(err, VT_ERR_TIMEOUT, "%s %s via %s: %s", r->method, target,
                                  c->endpoint,
                                  c->cancel && atomic_load(c->cancel)
                                      ? "cancelled"
                                      : "the build's deadline passed");
                break;
            }
            if (retryable_curl(cc) && !last) {
                log_debug("s3: %s %s: %s, retrying (attempt %d)", r->method, target,
                          curl_easy_strerror(cc), attempt + 1);
                backoff_sleep(c, attempt, 0);
                continue;
            }
            oc->http_status = 0;
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s %s via %s failed: %s%s",
                              r->method, target, c->endpoint, curl_easy_strerror(cc),
                              retryable_curl(cc) ? " (gave up after retries)" : "");
            break;
        }
        if (code == 304 && r->if_none_match) {
            oc->not_modified = true;
            break;
        }
        if (code >= 200 && code < 300) {
            if (x->kind == SINK_FILE && fflush(x->file) != 0) {
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot write %s locally: %s",
                                  target, strerror(errno));
            }
            break;
        }
        struct s3_error_doc doc;
        s3_error_parse(x->errbody.buf, x->errbody.len, &doc);
        if (retryable_status(code, &doc) && !last) {
            curl_off_t ra = 0;
            curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra);
            log_debug("s3: %s %s: HTTP %ld %s, retrying (attempt %d)", r->method, target, code,
                      doc.code, attempt + 1);
            backoff_sleep(c, attempt, (long)ra);
            continue;
        }
        /* The remote's words are not repeated: its error code (sanitized) and
         * our own reading of the status are. */
        char what[sizeof doc.code], regbuf[sizeof doc.region];
        summarize(doc.code, what, sizeof what);
        if (code == 401 || code == 403) {
            oc->access_denied = true;
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                              "access denied by S3 (HTTP %ld %s) for %s", code, what, target);
        } else if (code == 404) {
            oc->not_found = true;
            /* An object a listing named (sent with its ETag) that is gone
             * was almost always deleted meanwhile; one a Delta log names
             * (no ETag) is simply not there. */
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                              "%s not found (HTTP 404 %s)%s", target, what[0] ? what : "NoSuchKey",
                              r->key && *r->key && r->if_match
                                  ? ": deleted after it was listed? retry the reload"
                                  : "");
        } else if (code == 412 || (code == 409 && r->body && (r->if_match || r->if_none_match))) {
            oc->changed = true;
            if (r->body)
                rc = vt_error_set(err, VT_ERR_SOURCE_CHANGED,
                                  "conditional PUT of %s lost (HTTP %ld): the object changed",
                                  target, code);
            else
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                  "%s changed since it was listed (ETag mismatch); retry the "
                                  "reload",
                                  target);
        } else if (code == 301 || code == 302 || code == 307 || code == 308) {
            const char *reg = summarize(x->bucket_region[0] ? x->bucket_region : doc.region,
                                        regbuf, sizeof regbuf);
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                              "S3 redirected %s (HTTP %ld %s)%s%s%s; redirects are not followed: "
                              "check s3.region / s3.endpoint",
                              target, code, what, reg[0] ? ": the bucket is in region \"" : "",
                              reg, reg[0] ? "\"" : "");
        } else {
            rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "S3 %s %s failed: HTTP %ld %s",
                              r->method, target, code, what);
        }
        break;
    }
    curl_slist_free_all(hdrs);
    if (tokhdr) {
        explicit_bzero(tokhdr, strlen(tokhdr));
        free(tokhdr);
    }
    free(url);
    return rc;
}

static CURL *client_handle(struct s3_client *c)
{
    if (!c->h)
        c->h = curl_easy_init();
    return c->h;
}

/* The start of every public operation: the caller's outcome (or a local
 * one) cleared, and the client's handle. NULL with err set when there is no
 * handle. */
static CURL *begin(struct s3_client *c, struct s3_outcome **outcome, struct s3_outcome *local,
                   struct vt_error *err)
{
    if (!*outcome)
        *outcome = local;
    memset(*outcome, 0, sizeof **outcome);
    CURL *h = client_handle(c);
    if (!h)
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot create a curl handle");
    return h;
}

static void xfer_init(struct xfer *x, enum sink_kind kind)
{
    memset(x, 0, sizeof *x);
    x->kind = kind;
    sb_init(&x->errbody, VT_S3_MAX_ERROR_BODY_BYTES + 1);
}

/* ---- public operations ---------------------------------------------------- */

void s3_object_release(struct s3_object *o)
{
    if (!o)
        return;
    free(o->key);
    free(o->etag);
    o->key = o->etag = NULL;
}

static int listing_take(struct s3_listing *dst, struct s3_object *o)
{
    if (dst->n == dst->cap) {
        size_t cap = dst->cap ? dst->cap * 2 : 256;
        struct s3_object *items = realloc(dst->items, cap * sizeof *items);
        if (!items)
            return -1;
        dst->items = items;
        dst->cap = cap;
    }
    dst->items[dst->n++] = *o;
    o->key = o->etag = NULL;
    return 0;
}

enum vt_err s3_list(struct s3_client *c, const char *bucket, const char *prefix,
                    const char *start_after, const char *delimiter, int page_size,
                    struct s3_listing *out, struct s3_outcome *outcome, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    struct s3_outcome oc_local;
    CURL *h = begin(c, &outcome, &oc_local, err);
    if (!h)
        return err->code;
    char *token = NULL;
    enum vt_err rc = VT_ERR_OK;
    struct strbuf body;
    sb_init(&body, VT_S3_MAX_LIST_PAGE_BYTES + 1);
    for (;;) {
        /* Parameters in SigV4 canonical order (sorted by name), values encoded. */
        struct strbuf q;
        sb_init(&q, 0);
        if (token) {
            char *e = s3_uri_encode(token, false);
            sb_addf(&q, "continuation-token=%s&", e ? e : "");
            free(e);
        }
        if (delimiter && *delimiter) {
            char *e = s3_uri_encode(delimiter, false);
            sb_addf(&q, "delimiter=%s&", e ? e : "");
            free(e);
        }
        sb_adds(&q, "encoding-type=url&list-type=2");
        if (page_size > 0)
            sb_addf(&q, "&max-keys=%d", page_size);
        if (prefix && *prefix) {
            char *e = s3_uri_encode(prefix, false);
            sb_addf(&q, "&prefix=%s", e ? e : "");
            free(e);
        }
        if (start_after && *start_after && !token) {
            char *e = s3_uri_encode(start_after, false);
            sb_addf(&q, "&start-after=%s", e ? e : "");
            free(e);
        }
        if (q.overflow) {
            sb_release(&q);
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        struct xfer x;
        xfer_init(&x, SINK_MEM);
        x.mem = &body;
        x.mem_max = VT_S3_MAX_LIST_PAGE_BYTES;
        struct req r = {.method = "GET", .bucket = bucket, .key = "", .query = q.buf};
        struct vt_error lerr = {0};
        rc = perform(c, h, &r, &x, outcome, &lerr);
        sb_release(&x.errbody);
        sb_release(&q);
        if (rc != VT_ERR_OK) {
            /* Name the listing, not the bucket root, in the message. */
            vt_error_set(err, rc, "listing s3://%s/%s: %s", bucket, prefix ? prefix : "",
                         vt_error_message(&lerr));
            break;
        }
        struct s3_list_page page;
        rc = s3_list_parse(body.buf ? body.buf : "", body.len, &page, err);
        if (rc != VT_ERR_OK)
            break;
        for (size_t i = 0; i < page.objects.n && rc == VT_ERR_OK; i++) {
            struct s3_object *o = &page.objects.items[i];
            size_t kl = strlen(o->key);
            if (kl > 0 && o->key[kl - 1] == '/')
                continue; /* "folder" marker objects */
            if (out->n >= VT_S3_MAX_LIST_KEYS) {
                rc = vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                                  "listing s3://%s/%s: more than %d keys", bucket,
                                  prefix ? prefix : "", VT_S3_MAX_LIST_KEYS);
                break;
            }
            if (listing_take(out, o) < 0)
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        bool more = page.is_truncated;
        free(token);
        token = NULL;
        if (more && rc == VT_ERR_OK) {
            if (!page.next_token || !*page.next_token) {
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                  "listing s3://%s/%s: truncated page without a continuation "
                                  "token",
                                  bucket, prefix ? prefix : "");
            } else {
                token = page.next_token;
                page.next_token = NULL;
            }
        }
        s3_list_page_release(&page);
        if (rc != VT_ERR_OK || !more)
            break;
    }
    free(token);
    sb_release(&body);
    if (rc != VT_ERR_OK)
        s3_listing_release(out);
    return rc;
}

enum vt_err s3_get_mem(struct s3_client *c, const char *bucket, const char *key,
                       int64_t range_off, int64_t range_len, size_t max_bytes, char **out_buf,
                       size_t *out_len, struct s3_outcome *outcome, struct vt_error *err)
{
    *out_buf = NULL;
    *out_len = 0;
    struct s3_outcome oc_local;
    CURL *h = begin(c, &outcome, &oc_local, err);
    if (!h)
        return err->code;
    struct strbuf body;
    sb_init(&body, max_bytes + 1);
    struct xfer x;
    xfer_init(&x, SINK_MEM);
    x.mem = &body;
    x.mem_max = max_bytes;
    char range[64];
    struct req r = {.method = "GET", .bucket = bucket, .key = key};
    if (range_off > 0 || range_len >= 0) {
        if (range_len >= 0)
            snprintf(range, sizeof range, "%lld-%lld", (long long)range_off,
                     (long long)(range_off + range_len - 1));
        else
            snprintf(range, sizeof range, "%lld-", (long long)range_off);
        r.range = range;
    }
    enum vt_err rc = perform(c, h, &r, &x, outcome, err);
    sb_release(&x.errbody);
    if (rc != VT_ERR_OK) {
        sb_release(&body);
        return rc;
    }
    if (sb_grow(&body, 0) < 0) { /* makes sure there is a buffer for the NUL */
        sb_release(&body);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *out_buf = sb_detach(&body, out_len);
    return VT_ERR_OK;
}

struct s3_conn {
    CURL *h;
};

struct s3_conn *s3_conn_create(void)
{
    pthread_once(&curl_once, curl_init_once);
    struct s3_conn *conn = calloc(1, sizeof *conn);
    if (conn && !(conn->h = curl_easy_init())) {
        free(conn);
        conn = NULL;
    }
    return conn;
}

void s3_conn_destroy(struct s3_conn *conn)
{
    if (!conn)
        return;
    curl_easy_cleanup(conn->h);
    free(conn);
}

enum vt_err s3_get_range(struct s3_client *c, struct s3_conn *conn, const char *bucket,
                         const char *key, int64_t off, int64_t len, const char *if_match,
                         char **out_buf, size_t *out_len, struct s3_outcome *outcome,
                         struct vt_error *err)
{
    *out_buf = NULL;
    *out_len = 0;
    struct s3_outcome oc_local;
    CURL *h = conn ? conn->h : begin(c, &outcome, &oc_local, err);
    if (!h)
        return err->code;
    if (!outcome)
        outcome = &oc_local;
    memset(outcome, 0, sizeof *outcome);
    if (len <= 0 || (uint64_t)len > VT_S3_RANGE_MAX_BYTES)
        return vt_error_set(err, VT_ERR_INTERNAL, "bad range length %lld", (long long)len);
    struct strbuf body;
    sb_init(&body, (size_t)len + 1);
    struct xfer x;
    xfer_init(&x, SINK_MEM);
    x.mem = &body;
    x.mem_max = (size_t)len;
    char range[64];
    snprintf(range, sizeof range, "%lld-%lld", (long long)off, (long long)(off + len - 1));
    struct req r = {.method = "GET", .bucket = bucket, .key = key, .range = range,
                    .if_match = if_match};
    enum vt_err rc = perform(c, h, &r, &x, outcome, err);
    sb_release(&x.errbody);
    if (rc == VT_ERR_OK && (int64_t)body.len != len)
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "s3://%s/%s: %zu bytes for a range of %lld", bucket, key, body.len,
                          (long long)len);
    if (rc != VT_ERR_OK) {
        sb_release(&body);
        return rc;
    }
    *out_buf = sb_detach(&body, out_len);
    return *out_buf ? VT_ERR_OK : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
}

static enum vt_err get_file_with(struct s3_client *c, CURL *h, const char *bucket,
                                 const char *key, const char *if_match, const char *path,
                                 int64_t *out_size, struct s3_outcome *outcome,
                                 struct vt_error *err)
{
    /* A unique temporary name: two builds may fetch the same object into the
     * shared cache at once; each writes its own file and the renames race
     * harmlessly (same bytes). */
    static atomic_uint part_seq;
    size_t pl = strlen(path) + 48;
    char *part = malloc(pl);
    if (!part)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(part, pl, "%s.%ld-%u.part", path, (long)getpid(),
             atomic_fetch_add(&part_seq, 1));
    FILE *f = fopen(part, "w+bx");
    if (!f) {
        enum vt_err rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                      "cannot create %s for an S3 download: %s", part,
                                      strerror(errno));
        free(part);
        return rc;
    }
    struct xfer x;
    xfer_init(&x, SINK_FILE);
    x.file = f;
    x.file_max = VT_S3_MAX_OBJECT_BYTES;
    struct req r = {.method = "GET", .bucket = bucket, .key = key, .if_match = if_match,
                    .long_transfer = true};
    enum vt_err rc = perform(c, h, &r, &x, outcome, err);
    sb_release(&x.errbody);
    if (fclose(f) != 0 && rc == VT_ERR_OK)
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot write %s: %s", part,
                          strerror(errno));
    if (rc == VT_ERR_OK && x.content_length >= 0 && x.written != x.content_length)
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "short download of s3://%s/%s (%lld of %lld bytes)", bucket, key,
                          (long long)x.written, (long long)x.content_length);
    if (rc == VT_ERR_OK && rename(part, path) != 0)
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "cannot rename %s: %s", part,
                          strerror(errno));
    if (rc != VT_ERR_OK)
        unlink(part);
    else if (out_size)
        *out_size = x.written;
    free(part);
    return rc;
}

enum vt_err s3_get_file(struct s3_client *c, const char *bucket, const char *key,
                        const char *if_match, const char *path, int64_t *out_size,
                        struct s3_outcome *outcome, struct vt_error *err)
{
    struct s3_outcome oc_local;
    CURL *h = begin(c, &outcome, &oc_local, err);
    if (!h)
        return err->code;
    return get_file_with(c, h, bucket, key, if_match, path, out_size, outcome, err);
}

enum vt_err s3_head(struct s3_client *c, const char *bucket, const char *key,
                    struct s3_object *out, struct s3_outcome *outcome, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    struct s3_outcome oc_local;
    CURL *h = begin(c, &outcome, &oc_local, err);
    if (!h)
        return err->code;
    struct xfer x;
    xfer_init(&x, SINK_NONE);
    struct req r = {.method = "HEAD", .bucket = bucket, .key = key};
    enum vt_err rc = perform(c, h, &r, &x, outcome, err);
    sb_release(&x.errbody);
    if (rc != VT_ERR_OK)
        return rc;
    out->key = strdup(key);
    out->etag = x.etag[0] ? strdup(x.etag) : NULL;
    out->size = x.content_length;
    if (!out->key) {
        s3_object_release(out);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return VT_ERR_OK;
}

enum vt_err s3_get_if_changed(struct s3_client *c, const char *bucket, const char *key,
                              const char *if_none_match, size_t max_bytes, char **out_buf,
                              size_t *out_len, char **out_etag, struct s3_outcome *outcome,
                              struct vt_error *err)
{
    *out_buf = NULL;
    *out_len = 0;
    if (out_etag)
        *out_etag = NULL;
    struct s3_outcome oc_local;
    CURL *h = begin(c, &outcome, &oc_local, err);
    if (!h)
        return err->code;
    struct strbuf body;
    sb_init(&body, max_bytes + 1);
    struct xfer x;
    xfer_init(&x, SINK_MEM);
    x.mem = &body;
    x.mem_max = max_bytes;
    struct req r = {.method = "GET", .bucket = bucket, .key = key,
                    .if_none_match = if_none_match};
    enum vt_err rc = perform(c, h, &r, &x, outcome, err);
    sb_release(&x.errbody);
    if (rc != VT_ERR_OK || outcome->not_modified) {
        sb_release(&body);
        return rc;
    }
    if (sb_grow(&body, 0) < 0) {
        sb_release(&body);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (out_etag && x.etag[0])
        *out_etag = strdup(x.etag);
    *out_buf = sb_detach(&body, out_len);
    return VT_ERR_OK;
}

/* Hex SHA-256 of the upload's bytes (read once before the request). */
static bool upload_sha256(struct upload *u, char out[65])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return false;
    }
    bool ok = true;
    if (u->mem) {
        ok = EVP_DigestUpdate(md, u->mem, (size_t)u->size) == 1;
    } else {
        char buf[65536];
        int64_t total = 0;
        size_t n;
        rewind(u->file);
        while (ok && (n = fread(buf, 1, sizeof buf, u->file)) > 0) {
            ok = EVP_DigestUpdate(md, buf, n) == 1;
            total += (int64_t)n;
        }
        ok = ok && !ferror(u->file) && total == u->size;
    }
    unsigned char dig[32];
    unsigned int dl = 0;
    ok = ok && EVP_DigestFinal_ex(md, dig, &dl) == 1 && dl == 32;
    EVP_MD_CTX_free(md);
    for (unsigned i = 0; ok && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", dig[i]);
    return ok;
}

enum vt_err s3_put(struct s3_client *c, const char *bucket, const char *key, const void *data,
                   size_t len, const char *path, const char *content_type,
                   const char *if_match, const char *if_none_match, char **out_etag,
                   struct s3_outcome *outcome, struct vt_error *err)
{
    if (out_etag)
        *out_etag = NULL;
    struct s3_outcome oc_local;
    CURL *h = begin(c, &outcome, &oc_local, err);
    if (!h)
        return err->code;
    struct upload u = {.mem = data, .size = (int64_t)len};
    if (!data) {
        u.file = fopen(path, "rbe");
        struct stat st;
        if (!u.file || fstat(fileno(u.file), &st) != 0) {
            enum vt_err rc = vt_error_set(err, VT_ERR_INTERNAL, "cannot read %s for upload: %s",
                                          path, strerror(errno));
            if (u.file)
                fclose(u.file);
            return rc;
        }
        u.size = st.st_size;
    }
    if ((uint64_t)u.size > VT_S3_MAX_PUT_BYTES) {
        if (u.file)
            fclose(u.file);
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                            "s3://%s/%s: %lld bytes is more than one PUT may carry", bucket, key,
                            (long long)u.size);
    }
    char sha[65];
    if (!upload_sha256(&u, sha)) {
        if (u.file)
            fclose(u.file);
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot hash the upload of s3://%s/%s", bucket,
                            key);
    }
    struct xfer x;
    xfer_init(&x, SINK_NONE);
    struct req r = {.method = "PUT", .bucket = bucket, .key = key, .if_match = if_match,
                    .if_none_match = if_none_match, .content_sha256 = sha,
                    .content_type = content_type, .body = &u, .long_transfer = u.size > (1 << 20)};
    enum vt_err rc = perform(c, h, &r, &x, outcome, err);
    sb_release(&x.errbody);
    if (u.file)
        fclose(u.file);
    if (rc == VT_ERR_OK && out_etag && x.etag[0])
        *out_etag = strdup(x.etag);
    return rc;
}

enum vt_err s3_delete(struct s3_client *c, const char *bucket, const char *key,
                      struct s3_outcome *outcome, struct vt_error *err)
{
    struct s3_outcome oc_local;
    CURL *h = begin(c, &outcome, &oc_local, err);
    if (!h)
        return err->code;
    struct xfer x;
    xfer_init(&x, SINK_NONE);
    struct req r = {.method = "DELETE", .bucket = bucket, .key = key};
    enum vt_err rc = perform(c, h, &r, &x, outcome, err);
    sb_release(&x.errbody);
    if (rc != VT_ERR_OK && outcome->not_found) {
        vt_error_clear(err);
        rc = VT_ERR_OK;
    }
    return rc;
}

/* ---- parallel downloads --------------------------------------------------- */

struct dl_shared {
    struct s3_client *c;
    const struct s3_download *jobs;
    size_t n;
    atomic_size_t next;
    atomic_bool failed;
    pthread_mutex_t mu;
    struct vt_error *err;
    struct s3_outcome *outcome;
    enum vt_err rc;
};

static void *dl_worker(void *arg)
{
    struct dl_shared *s = arg;
    CURL *h = curl_easy_init();
    if (!h) {
        pthread_mutex_lock(&s->mu);
        if (s->rc == VT_ERR_OK)
            s->rc = vt_error_set(s->err, VT_ERR_OUT_OF_MEMORY, "cannot create a curl handle");
        pthread_mutex_unlock(&s->mu);
        atomic_store(&s->failed, true);
        return NULL;
    }
    for (;;) {
        if (atomic_load(&s->failed))
            break;
        size_t i = atomic_fetch_add(&s->next, 1);
        if (i >= s->n)
            break;
        const struct s3_download *j = &s->jobs[i];
        struct vt_error lerr = {0};
        struct s3_outcome oc;
        enum vt_err rc = get_file_with(s->c, h, j->bucket, j->key, j->if_match, j->path, NULL,
                                       &oc, &lerr);
        if (rc != VT_ERR_OK) {
            pthread_mutex_lock(&s->mu);
            if (s->rc == VT_ERR_OK) {
                s->rc = vt_error_set(s->err, rc, "%s", vt_error_message(&lerr));
                *s->outcome = oc;
            }
            pthread_mutex_unlock(&s->mu);
            atomic_store(&s->failed, true);
            break;
        }
    }
    curl_easy_cleanup(h);
    return NULL;
}

enum vt_err s3_download_many(struct s3_client *c, const struct s3_download *jobs, size_t n,
                             struct s3_outcome *outcome, struct vt_error *err)
{
    struct s3_outcome oc_local;
    if (!outcome)
        outcome = &oc_local;
    memset(outcome, 0, sizeof *outcome);
    if (n == 0)
        return VT_ERR_OK;
    if (n == 1)
        return s3_get_file(c, jobs[0].bucket, jobs[0].key, jobs[0].if_match, jobs[0].path, NULL,
                           outcome, err);
    struct dl_shared s = {.c = c, .jobs = jobs, .n = n, .err = err, .outcome = outcome};
    atomic_init(&s.next, 0);
    atomic_init(&s.failed, false);
    pthread_mutex_init(&s.mu, NULL);
    size_t nt = n < VT_S3_DOWNLOAD_THREADS ? n : VT_S3_DOWNLOAD_THREADS;
    pthread_t th[VT_S3_DOWNLOAD_THREADS];
    size_t started = 0;
    for (size_t i = 0; i < nt; i++) {
        if (pthread_create(&th[i], NULL, dl_worker, &s) != 0)
            break;
        started++;
    }
    if (started == 0)
        dl_worker(&s); /* no threads available: do it here */
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&s.mu);
    return s.rc;
}
