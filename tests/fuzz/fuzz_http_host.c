/*
 * libFuzzer target for the Host and Origin rules (src/http/hosts.c). The
 * input is split at NULs into a Host value, an Origin value and a pattern.
 * Checks what the rules promise: a loopback listener with no lists answers
 * only loopback names; a name http_host_name returns is lower case, has no
 * port and fits; a listed pattern never makes a host fail; "*" allows all.
 * Build: make fuzz.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/hosts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 3);
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = buf[size + 2] = '\0';
    const char *host = buf;
    const char *origin = host + strlen(host) + 1;
    const char *pattern = origin + strlen(origin) + 1;

    char name[300];
    bool named = http_host_name(host, name, sizeof name);
    if (named) {
        size_t n = strlen(name);
        if (n == 0 || n >= sizeof name)
            abort();
        for (size_t i = 0; i < n; i++)
            if ((name[i] >= 'A' && name[i] <= 'Z') || (name[0] != '[' && name[i] == ':'))
                abort();
    }
    struct strvec none = {0};
    struct http_hosts h = {.allowed_hosts = &none, .allowed_origins = &none,
                           .loopback_listener = true};
    if (http_hosts_host_ok(&h, host) && !(named && http_host_is_loopback(name)))
        abort();
    struct strvec one = {0};
    strvec_push(&one, pattern);
    h.allowed_hosts = &one;
    if (named && http_host_pattern_match(pattern, name) && !http_hosts_host_ok(&h, host))
        abort();
    (void)http_hosts_origin_ok(&h, origin, host, &one);
    struct strvec any = {0};
    strvec_push(&any, "*");
    h.allowed_hosts = &any;
    h.allowed_origins = &any;
    if ((named && !http_hosts_host_ok(&h, host)) || !http_hosts_origin_ok(&h, origin, host, NULL))
        abort();
    strvec_free(&one);
    strvec_free(&any);
    free(buf);
    return 0;
}
