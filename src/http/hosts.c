/*
 * Host and Origin rules against DNS rebinding (see hosts.h). The server
 * adapter applies the Host rule to every request before routing; the MCP
 * transport applies the Origin rule through http_req_origin_ok().
 */
#include "http/hosts.h"

#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

/* Longest host name we look at (DNS names stop at 253). */
#define HOST_NAME_MAX_BYTES 256

static bool is_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

bool http_host_name(const char *value, char *out, size_t cap)
{
    if (!value || cap == 0)
        return false;
    const char *p = value;
    size_t n;
    if (*p == '[') {
        const char *close = strchr(p, ']');
        if (!close)
            return false;
        n = (size_t)(close - p) + 1;
        for (const char *c = p + 1; c < close; c++)
            if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') ||
                  (*c >= 'A' && *c <= 'F') || *c == ':' || *c == '.'))
                return false;
        if (n == 2)
            return false;
    } else {
        n = 0;
        while (p[n] && p[n] != ':') {
            if (!is_name_char((unsigned char)p[n]))
                return false;
            n++;
        }
        if (n == 0)
            return false;
    }
    const char *rest = p + n;
    if (*rest == ':') {
        rest++;
        size_t digits = strspn(rest, "0123456789");
        if (digits > 5 || rest[digits])
            return false;
    } else if (*rest) {
        return false;
    }
    size_t len = n;
    if (p[0] != '[' && len > 1 && p[len - 1] == '.')
        len--; /* "localhost." is localhost */
    if (len >= cap || len >= HOST_NAME_MAX_BYTES)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        out[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    out[len] = '\0';
    return true;
}

/* The address inside "[...]", NUL-terminated in buf; NULL when not bracketed. */
static const char *unbracket(const char *name, char *buf, size_t cap)
{
    size_t n = strlen(name);
    if (n < 3 || name[0] != '[' || name[n - 1] != ']' || n - 2 >= cap)
        return NULL;
    memcpy(buf, name + 1, n - 2);
    buf[n - 2] = '\0';
    return buf;
}

bool http_host_is_ip(const char *name)
{
    unsigned char addr[16];
    char buf[64];
    const char *v6 = unbracket(name, buf, sizeof buf);
    if (v6)
        return inet_pton(AF_INET6, v6, addr) == 1;
    return inet_pton(AF_INET, name, addr) == 1;
}

bool http_host_is_loopback(const char *name)
{
    if (!strcmp(name, "localhost"))
        return true;
    unsigned char a[16];
    char buf[64];
    const char *v6 = unbracket(name, buf, sizeof buf);
    if (v6) {
        if (inet_pton(AF_INET6, v6, a) != 1)
            return false;
        static const unsigned char loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        return !memcmp(a, loop, 16) || (!memcmp(a, mapped, 12) && a[12] == 127);
    }
    return inet_pton(AF_INET, name, a) == 1 && a[0] == 127;
}

bool http_host_pattern_match(const char *pattern, const char *name)
{
    if (!strcmp(pattern, "*"))
        return true;
    char pat[HOST_NAME_MAX_BYTES];
    if (!strncmp(pattern, "*.", 2)) {
        /* "*.example.com": the names under example.com, not example.com itself. */
        if (!http_host_name(pattern + 2, pat, sizeof pat))
            return false;
        size_t pn = strlen(pat), nn = strlen(name);
        return nn > pn + 1 && name[nn - pn - 1] == '.' && !strcmp(name + nn - pn, pat);
    }
    return http_host_name(pattern, pat, sizeof pat) && !strcmp(pat, name);
}

static bool any_pattern_matches(const struct strvec *v, const char *name, bool by_name_only)
{
    if (!v)
        return false;
    for (size_t i = 0; i < v->len; i++) {
        const char *p = v->items[i];
        if (by_name_only && p[0] == '*')
            continue;
        if (http_host_pattern_match(p, name))
            return true;
    }
    return false;
}

bool http_hosts_host_ok(const struct http_hosts *h, const char *host)
{
    if (!host)
        return true;
    /* The last Host value this thread found to be a loopback name (a
     * client sends the same one request after request): allowed whatever
     * the lists say, so the value alone decides; parsing it and
     * inet_pton were ~600 instructions a request. */
    static _Thread_local char loopback_last[64];
    if (loopback_last[0] && strcmp(host, loopback_last) == 0)
        return true;
    char name[HOST_NAME_MAX_BYTES];
    if (!http_host_name(host, name, sizeof name))
        return false;
    if (http_host_is_loopback(name)) {
        size_t n = strlen(host);
        if (n < sizeof loopback_last)
            memcpy(loopback_last, host, n + 1);
        return true;
    }
    if (any_pattern_matches(h->allowed_hosts, name, false))
        return true;
    if (h->loopback_listener)
        return false;
    return http_host_is_ip(name) || !h->allowed_hosts || h->allowed_hosts->len == 0;
}

/* "https://Example.com:8443/" -> "https://example.com:8443" in out; false
 * when it is not scheme://authority. *out_auth points at the authority. */
static bool origin_normalize(const char *origin, char *out, size_t cap, const char **out_auth)
{
    const char *sep = strstr(origin, "://");
    if (!sep || sep == origin)
        return false;
    size_t n = strlen(origin);
    while (n > 0 && origin[n - 1] == '/')
        n--;
    if (n >= cap || (size_t)(sep - origin) + 3 >= n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = origin[i];
        if (c == '/' && origin + i > sep + 2)
            return false; /* a path is not an origin */
        out[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    out[n] = '\0';
    *out_auth = out + (sep - origin) + 3;
    return true;
}

static bool origin_listed(const struct strvec *v, const char *norm)
{
    if (!v)
        return false;
    for (size_t i = 0; i < v->len; i++) {
        const char *item = v->items[i];
        if (!strcmp(item, "*") || !strcasecmp(item, norm))
            return true;
        char buf[HOST_NAME_MAX_BYTES + 32];
        const char *auth;
        if (origin_normalize(item, buf, sizeof buf, &auth) && !strcmp(buf, norm))
            return true;
    }
    return false;
}

bool http_hosts_origin_ok(const struct http_hosts *h, const char *origin, const char *host,
                          const struct strvec *extra)
{
    if (!origin)
        return true;
    char norm[HOST_NAME_MAX_BYTES + 32];
    const char *auth;
    if (!origin_normalize(origin, norm, sizeof norm, &auth)) /* "null", garbage */
        return origin_listed(h->allowed_origins, origin) || origin_listed(extra, origin);
    if (origin_listed(h->allowed_origins, norm) || origin_listed(extra, norm))
        return true;
    char name[HOST_NAME_MAX_BYTES];
    if (!http_host_name(auth, name, sizeof name))
        return false;
    if (http_host_is_loopback(name))
        return true;
    /* The request's own origin, when its Host is one the operator named. */
    char hname[HOST_NAME_MAX_BYTES];
    return host && !strcasecmp(auth, host) && http_host_name(host, hname, sizeof hname) &&
           any_pattern_matches(h->allowed_hosts, hname, true);
}
