/*
 * Lookup functions over the error table in errors.h, and the first-failure-wins
 * error buffer used across modules.
 */
#include "util/errors.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static const struct {
    int status;
    const char *code;
    const char *sqlstate;
    int rpc;
    const char *msg;
} error_rows[] = {
#define VT_ERR_ROW(name, status, code, sqlstate, rpc, msg) {status, code, sqlstate, rpc, msg},
    VT_ERROR_TABLE(VT_ERR_ROW)
#undef VT_ERR_ROW
};

int vt_err_status(enum vt_err e)
{
    return (unsigned)e < VT_ERR__COUNT ? error_rows[e].status : 500;
}

const char *vt_err_code(enum vt_err e)
{
    return (unsigned)e < VT_ERR__COUNT ? error_rows[e].code : "internal";
}

const char *vt_err_default_message(enum vt_err e)
{
    return (unsigned)e < VT_ERR__COUNT ? error_rows[e].msg : "internal error";
}

const char *vt_err_sqlstate(enum vt_err e)
{
    return (unsigned)e < VT_ERR__COUNT ? error_rows[e].sqlstate : "XX000";
}

int vt_err_rpc(enum vt_err e)
{
    return (unsigned)e < VT_ERR__COUNT ? error_rows[e].rpc : -32603;
}

/* "vtlimit-" and 16 hex digits: letters and digits only, so nothing on the
 * way (JSON escaping, pgwire's scrubbing of "vt:" names) changes it. */
static char limit_marker[32];
static pthread_once_t limit_marker_once = PTHREAD_ONCE_INIT;

static void limit_marker_init(void)
{
    unsigned char r[8] = {0};
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        /* not for 8 bytes once the pool is ready; the clock then, so the
         * marker is still not one a client can know in advance */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t t = (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec;
        for (int i = 0; i < 8; i++)
            r[i] ^= (unsigned char)(t >> (8 * i));
    }
    snprintf(limit_marker, sizeof limit_marker,
             "vtlimit-%02x%02x%02x%02x%02x%02x%02x%02x: ", r[0], r[1], r[2], r[3], r[4], r[5],
             r[6], r[7]);
}

const char *vt_limit_marker(void)
{
    pthread_once(&limit_marker_once, limit_marker_init);
    return limit_marker;
}

#define DUCKDB_RAISED "Invalid Input Error: "
#define MARKER_LEN 26 /* "vtlimit-" 16 hex digits ": " */

/* Where the process's marker starts in msg, or NULL. By hand, byte by byte:
 * the fuzz targets link this file, and libFuzzer takes the strings given to
 * strstr/memcmp (and 4- and 8-byte comparisons) into its mutations; a
 * random marker there would make their runs part from one another. */
static char *find_marker(char *msg)
{
    const char *m = vt_limit_marker();
    for (char *p = msg; *p; p++) {
        size_t k = 0;
        while (k < 8 && p[k] == m[k])
            k++;
        if (k < 8)
            continue;
        unsigned char diff = 0;
        for (k = 8; k < MARKER_LEN && p[k]; k++)
            diff |= (unsigned char)(p[k] ^ m[k]);
        if (k == MARKER_LEN && !diff)
            return p;
    }
    return NULL;
}

/* Takes the limit marker (and DuckDB's prefix just before it) out of msg;
 * true when it was there. */
static bool take_limit_marker(char *msg)
{
    char *at = find_marker(msg);
    if (!at)
        return false;
    char *from = at;
    size_t pl = strlen(DUCKDB_RAISED);
    if ((size_t)(at - msg) >= pl && !strncmp(at - pl, DUCKDB_RAISED, pl))
        from = at - pl;
    memmove(from, at + MARKER_LEN, strlen(at + MARKER_LEN) + 1);
    while ((at = find_marker(msg)) != NULL) /* a message quoting another */
        memmove(at, at + MARKER_LEN, strlen(at + MARKER_LEN) + 1);
    return true;
}

enum vt_err vt_error_setv(struct vt_error *err, enum vt_err code, const char *fmt, va_list ap)
{
    if (!err || err->code != VT_ERR_OK)
        return code;
    err->code = code;
    if (fmt)
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    else
        err->msg[0] = '\0';
    if (err->msg[0] && take_limit_marker(err->msg) &&
        (code == VT_ERR_QUERY_FAILED || code == VT_ERR_BUILD_FAILED))
        err->code = VT_ERR_LIMIT_EXCEEDED;
    return err->code;
}

enum vt_err vt_error_set(struct vt_error *err, enum vt_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum vt_err rc = vt_error_setv(err, code, fmt, ap);
    va_end(ap);
    return rc;
}

void vt_error_clear(struct vt_error *err)
{
    err->code = VT_ERR_OK;
    err->msg[0] = '\0';
}

const char *vt_error_message(const struct vt_error *err)
{
    if (err->msg[0])
        return err->msg;
    return vt_err_default_message(err->code);
}
