/*
 * libcurl, loaded when first used instead of at exec. The binary does not
 * link libcurl: these definitions of the curl functions vitrine calls (S3
 * sources, OIDC key fetches, the cluster's forwarding, the watchdog's
 * self-check) open libcurl.so.4 on the first call (dlopen, RTLD_LOCAL, once)
 * and forward to it. Callers include <curl/curl.h> and call curl as usual.
 *
 * Why: libcurl's TLS and protocol stack is ~35 shared libraries (GnuTLS,
 * Kerberos, LDAP, SSH, RTMP, ...). Mapped, relocated and initialised at
 * every exec they cost ~11M instructions before main (callgrind of
 * `vitrine --version`: 41.9M -> 30.9M) on every start, which most
 * configurations (local files, no OIDC) never use. A process that does use
 * curl pays that once, at its first curl call.
 *
 * When the library cannot be loaded, curl_global_init and curl_easy_init
 * fail (CURLE_FAILED_INIT, NULL) and one error names the library and
 * dlerror()'s reason; the features that need curl then fail their own way
 * (a dataset build error, an auth error), never a crash.
 *
 * Add a function here when code starts calling one that is not listed: the
 * link fails (undefined reference) until it is.
 */
#define CURL_DISABLE_TYPECHECK 1 /* the real prototypes, not gcc's checking macros */
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "util/log.h"

#define CURL_LIBRARY "libcurl.so.4"

static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    CURLcode (*easy_perform)(CURL *);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    void (*free_)(void *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLU *(*url)(void);
    void (*url_cleanup)(CURLU *);
    CURLUcode (*url_get)(CURLU *, CURLUPart, char **, unsigned int);
    CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
} fn;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_error[512];

static void *sym(void *h, const char *name, bool *ok)
{
    void *p = dlsym(h, name);
    if (!p && *ok) {
        snprintf(load_error, sizeof load_error, "%s has no %s", CURL_LIBRARY, name);
        *ok = false;
    }
    return p;
}

static void load(void)
{
    void *h = dlopen(CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", CURL_LIBRARY,
                 why ? why : "unknown error");
        log_error("%s (S3 sources, OIDC and cluster requests need libcurl)", load_error);
        return;
    }
    bool ok = true;
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
#define LOAD(field, name) *(void **)&fn.field = sym(h, name, &ok)
    LOAD(global_init, "curl_global_init");
    LOAD(easy_init, "curl_easy_init");
    LOAD(easy_setopt, "curl_easy_setopt");
    LOAD(easy_getinfo, "curl_easy_getinfo");
    LOAD(easy_perform, "curl_easy_perform");
    LOAD(easy_cleanup, "curl_easy_cleanup");
    LOAD(easy_reset, "curl_easy_reset");
    LOAD(easy_strerror, "curl_easy_strerror");
    LOAD(free_, "curl_free");
    LOAD(slist_append, "curl_slist_append");
    LOAD(slist_free_all, "curl_slist_free_all");
    LOAD(url, "curl_url");
    LOAD(url_cleanup, "curl_url_cleanup");
    LOAD(url_get, "curl_url_get");
    LOAD(url_set, "curl_url_set");
#undef LOAD
    if (!ok) {
        log_error("%s", load_error);
        dlclose(h);
        return;
    }
    loaded = true; /* the handle stays open for the life of the process */
}

static bool ready(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

CURLcode curl_global_init(long flags)
{
    return ready() ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
    return ready() ? fn.easy_init() : NULL;
}

/* The option's number says its argument's type (CURLOPTTYPE_*, in steps of
 * 10000): read it as that type and hand it on as that type. */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
    if (!ready() || !h)
        return CURLE_BAD_FUNCTION_ARGUMENT;
    va_list ap;
    va_start(ap, opt);
    CURLcode rc;
    if (opt < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        rc = fn.easy_setopt(h, opt, v);
    } else if (opt < CURLOPTTYPE_FUNCTIONPOINT) {
        void *v = va_arg(ap, void *);
        rc = fn.easy_setopt(h, opt, v);
    } else if (opt < CURLOPTTYPE_OFF_T) {
        void (*v)(void) = va_arg(ap, void (*)(void));
        rc = fn.easy_setopt(h, opt, v);
    } else if (opt < CURLOPTTYPE_BLOB) {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = fn.easy_setopt(h, opt, v);
    } else {
        void *v = va_arg(ap, void *);
        rc = fn.easy_setopt(h, opt, v);
    }
    va_end(ap);
    return rc;
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    if (!ready() || !h)
        return CURLE_BAD_FUNCTION_ARGUMENT;
    va_list ap;
    va_start(ap, info);
    void *out = va_arg(ap, void *);
    va_end(ap);
    return fn.easy_getinfo(h, info, out);
}

CURLcode curl_easy_perform(CURL *h)
{
    return ready() ? fn.easy_perform(h) : CURLE_FAILED_INIT;
}

/* The functions below take what only a loaded libcurl hands out (a handle,
 * a string, a list, a URL): when it is not loaded they have nothing to do. */
void curl_easy_cleanup(CURL *h)
{
    if (h && ready())
        fn.easy_cleanup(h);
}

void curl_easy_reset(CURL *h)
{
    if (h && ready())
        fn.easy_reset(h);
}

const char *curl_easy_strerror(CURLcode code)
{
    return ready() ? fn.easy_strerror(code) : load_error;
}

void curl_free(void *p)
{
    if (p && ready())
        fn.free_(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
    return ready() ? fn.slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
    if (list && ready())
        fn.slist_free_all(list);
}

CURLU *curl_url(void)
{
    return ready() ? fn.url() : NULL;
}

void curl_url_cleanup(CURLU *u)
{
    if (u && ready())
        fn.url_cleanup(u);
}

CURLUcode curl_url_get(CURLU *u, CURLUPart what, char **part, unsigned int flags)
{
    if (part)
        *part = NULL;
    return u && ready() ? fn.url_get(u, what, part, flags) : CURLUE_BAD_HANDLE;
}

CURLUcode curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags)
{
    return u && ready() ? fn.url_set(u, what, part, flags) : CURLUE_BAD_HANDLE;
}
