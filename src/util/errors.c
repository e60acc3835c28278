/*
 * Lookup functions over the error table in errors.h, and the first-failure-wins
 * error buffer used across modules.
 */
#include "util/errors.h"

#include <stdio.h>
#include <string.h>

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

enum vt_err vt_error_setv(struct vt_error *err, enum vt_err code, const char *fmt, va_list ap)
{
    if (!err || err->code != VT_ERR_OK)
        return code;
    err->code = code;
    if (fmt)
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    else
        err->msg[0] = '\0';
    return code;
}

enum vt_err vt_error_set(struct vt_error *err, enum vt_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vt_error_setv(err, code, fmt, ap);
    va_end(ap);
    return code;
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
