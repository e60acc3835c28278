/* Logging: text and JSON lines (every JSON line parses, whatever the message
 * holds), the request id of the calling thread on every line, access lines
 * in both forms, and the request-id token check. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/server.h"
#include "testlib.h"
#include "util/log.h"

/* Runs fn with stderr going to a pipe; returns what it wrote (malloc'd). */
static char *capture(void (*fn)(void))
{
    int p[2];
    if (pipe(p) != 0)
        return NULL;
    int saved = dup(STDERR_FILENO);
    dup2(p[1], STDERR_FILENO);
    fn();
    log_flush();
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(p[1]);
    char *out = calloc(1, 65536);
    size_t len = 0;
    ssize_t n;
    while (out && (n = read(p[0], out + len, 65535 - len)) > 0)
        len += (size_t)n;
    close(p[0]);
    return out;
}

static void emit(void)
{
    log_info("plain line");
    log_set_request_id("req-1");
    log_warn("quote \" backslash \\ newline \n tab \t bell \a utf8 caf\xc3\xa9");
    log_set_request_id(NULL);
    struct log_access_rec a = {"GET", "/api/v1/datasets/{name}/status", 404, 71, 1234,
                               "abc-9", "client-abort"};
    log_access(&a);
    struct log_access_rec b = {"POST", "/healthz", 200, 15, 250, "x", NULL};
    log_access(&b);
}

TEST(text_lines)
{
    log_set_json(false);
    log_set_level(LOG_DEBUG);
    char *out = capture(emit);
    CHECK_CONTAINS(out, " INFO  plain line\n");
    CHECK_CONTAINS(out, " WARN  quote \" backslash");
    CHECK_CONTAINS(out, "request_id=req-1\n");
    CHECK_CONTAINS(out, " INFO  GET /api/v1/datasets/{name}/status 404 71B 1ms id=abc-9 "
                        "client-abort\n");
    CHECK_CONTAINS(out, " INFO  POST /healthz 200 15B 0ms id=x\n");
    /* the plain line carries no id: it was logged outside a request */
    const char *plain = strstr(out, "plain line");
    CHECK(plain && strncmp(plain, "plain line\n", 11) == 0);
    free(out);
}

static const int64_t durations[] = {0, 499, 500, 501, 1500, 2500, 2501, 3500, 999999, 1234567};

static void emit_durations(void)
{
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        struct log_access_rec a = {"GET", "/x", 200, (uint64_t)i, durations[i], "d", NULL};
        log_access(&a);
    }
}

TEST(access_line_milliseconds_round_like_printf)
{
    /* The access line is written by hand: its milliseconds must be what
     * "%.0f" makes of dur_us / 1000.0 (half to even), and its time stamp
     * "YYYY-MM-DDTHH:MM:SS.mmmZ". */
    log_set_json(false);
    log_set_level(LOG_INFO);
    char *out = capture(emit_durations);
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, " INFO  GET /x 200 %zuB %.0fms id=d\n", i,
                 (double)durations[i] / 1000.0);
        CHECK_CONTAINS(out, want);
    }
    const char *nl = out;
    for (int line = 0; line < 3 && nl; line++, nl = strchr(nl, '\n')) {
        const char *l = line ? nl + 1 : nl;
        CHECK(strlen(l) > 24 && l[4] == '-' && l[7] == '-' && l[10] == 'T' && l[13] == ':' &&
              l[16] == ':' && l[19] == '.' && l[23] == 'Z' && l[24] == ' ');
    }
    free(out);
}

TEST(json_lines_parse)
{
    log_set_json(true);
    char *out = capture(emit);
    log_set_json(false);
    int lines = 0;
    char *save = NULL;
    json_t *warn = NULL, *access = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        CHECK(o != NULL);
        if (!o) {
            fprintf(stderr, "  not JSON: %s (%s)\n", line, e.text);
            continue;
        }
        lines++;
        CHECK(json_is_string(json_object_get(o, "time")));
        CHECK(json_is_string(json_object_get(o, "level")));
        const char *msg = json_string_value(json_object_get(o, "msg"));
        if (msg && strstr(msg, "quote"))
            warn = json_incref(o);
        if (msg && !strcmp(msg, "access") && !access)
            access = json_incref(o);
        json_decref(o);
    }
    CHECK_EQ_INT(lines, 4);
    CHECK(warn != NULL);
    if (warn) {
        CHECK_EQ_STR(json_string_value(json_object_get(warn, "msg")),
                     "quote \" backslash \\ newline \n tab \t bell \a utf8 caf\xc3\xa9");
        CHECK_EQ_STR(json_string_value(json_object_get(warn, "level")), "warn");
        CHECK_EQ_STR(json_string_value(json_object_get(warn, "request_id")), "req-1");
    }
    CHECK(access != NULL);
    if (access) {
        CHECK_EQ_STR(json_string_value(json_object_get(access, "route")),
                     "/api/v1/datasets/{name}/status");
        CHECK_EQ_INT(json_integer_value(json_object_get(access, "status")), 404);
        CHECK_EQ_INT(json_integer_value(json_object_get(access, "bytes")), 71);
        CHECK(json_real_value(json_object_get(access, "duration_ms")) == 1.234);
        CHECK_EQ_STR(json_string_value(json_object_get(access, "request_id")), "abc-9");
        CHECK_EQ_STR(json_string_value(json_object_get(access, "outcome")), "client-abort");
    }
    json_decref(warn);
    json_decref(access);
    free(out);
}

TEST(request_id_tokens)
{
    CHECK(http_request_id_ok("abc"));
    CHECK(http_request_id_ok("0f8e2a4c-9b1d-4e5f-8a7b-1c2d3e4f5a6b"));
    CHECK(http_request_id_ok("trace:span/1+2=3@x_y.z"));
    char max[65];
    memset(max, 'a', 64);
    max[64] = '\0';
    CHECK(http_request_id_ok(max));
    char over[66];
    memset(over, 'a', 65);
    over[65] = '\0';
    CHECK(!http_request_id_ok(over));
    CHECK(!http_request_id_ok(""));
    CHECK(!http_request_id_ok("a b"));
    CHECK(!http_request_id_ok("a\"b"));
    CHECK(!http_request_id_ok("a\\b"));
    CHECK(!http_request_id_ok("a\nb"));
    CHECK(!http_request_id_ok("caf\xc3\xa9"));
    CHECK(!http_request_id_ok("a;b"));
    CHECK(!http_request_id_ok("{x}"));
}

RUN_TESTS(TEST_CASE(text_lines), TEST_CASE(access_line_milliseconds_round_like_printf), TEST_CASE(json_lines_parse), TEST_CASE(request_id_tokens))
