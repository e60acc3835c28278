/*
 * PostgreSQL protocol 3.0 framing and message bodies (pgwire.h): pure
 * functions over byte buffers, no sockets, so the unit tests and the fuzz
 * target drive them directly. Every length a client sends is checked against
 * the bytes actually present before anything is read; a parser reads through
 * a bounds-checked reader and checks once at the end that nothing was
 * missing and nothing was left over.
 */
#include <string.h>

#include "pgwire/pgwire.h"
#include "util/limits.h"

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---------------------------------------------------------------- framing */

enum pgw_frame_rc pgw_frame_message(const unsigned char *buf, size_t len, size_t max_body,
                                    struct pgw_frame *out)
{
    if (len < 5)
        return PGW_FRAME_NEED;
    uint32_t n = be32(buf + 1);
    if (n < 4)
        return PGW_FRAME_BAD;
    if ((size_t)n - 4 > max_body)
        return PGW_FRAME_TOO_BIG;
    if (len - 1 < n)
        return PGW_FRAME_NEED;
    out->type = (char)buf[0];
    out->body = buf + 5;
    out->body_len = (size_t)n - 4;
    out->total = (size_t)n + 1;
    return PGW_FRAME_OK;
}

enum pgw_frame_rc pgw_frame_startup(const unsigned char *buf, size_t len, struct pgw_frame *out)
{
    if (len < 4)
        return PGW_FRAME_NEED;
    uint32_t n = be32(buf);
    if (n < 8)
        return PGW_FRAME_BAD;
    if (n > VT_PGWIRE_MAX_STARTUP_BYTES)
        return PGW_FRAME_TOO_BIG;
    if (len < n)
        return PGW_FRAME_NEED;
    out->type = 0;
    out->body = buf + 4;
    out->body_len = (size_t)n - 4;
    out->total = n;
    return PGW_FRAME_OK;
}

/* ---------------------------------------------------------------- reader */

void pgw_reader_init(struct pgw_reader *r, const unsigned char *body, size_t len)
{
    r->p = body;
    r->end = body + len;
    r->bad = false;
}

static bool have(struct pgw_reader *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return false;
    }
    return true;
}

uint8_t pgw_get_u8(struct pgw_reader *r)
{
    if (!have(r, 1))
        return 0;
    return *r->p++;
}

int16_t pgw_get_i16(struct pgw_reader *r)
{
    if (!have(r, 2))
        return 0;
    uint16_t v = (uint16_t)(r->p[0] << 8 | r->p[1]);
    r->p += 2;
    return (int16_t)v;
}

int32_t pgw_get_i32(struct pgw_reader *r)
{
    if (!have(r, 4))
        return 0;
    uint32_t v = be32(r->p);
    r->p += 4;
    return (int32_t)v;
}

const char *pgw_get_str(struct pgw_reader *r, size_t *out_len)
{
    if (r->bad) {
        if (out_len)
            *out_len = 0;
        return NULL;
    }
    const unsigned char *nul = memchr(r->p, 0, (size_t)(r->end - r->p));
    if (!nul) {
        r->bad = true;
        if (out_len)
            *out_len = 0;
        return NULL;
    }
    const char *s = (const char *)r->p;
    if (out_len)
        *out_len = (size_t)(nul - r->p);
    r->p = nul + 1;
    return s;
}

const unsigned char *pgw_get_bytes(struct pgw_reader *r, size_t n)
{
    if (!have(r, n))
        return NULL;
    const unsigned char *p = r->p;
    r->p += n;
    return p;
}

bool pgw_reader_done(const struct pgw_reader *r)
{
    return !r->bad && r->p == r->end;
}

static enum vt_err malformed(struct vt_error *err, const char *what)
{
    return vt_error_set(err, VT_ERR_PG_PROTOCOL, "invalid %s message format", what);
}

/* ---------------------------------------------------------------- startup */

enum vt_err pgw_parse_startup(const unsigned char *body, size_t len, struct pgw_startup *out,
                              struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    struct pgw_reader r;
    pgw_reader_init(&r, body, len);
    out->code = pgw_get_i32(&r);
    if (r.bad)
        return malformed(err, "startup packet");
    if (out->code == PGW_CANCEL_REQUEST_CODE) {
        out->pid = pgw_get_i32(&r);
        out->secret = pgw_get_i32(&r);
        return pgw_reader_done(&r) ? VT_ERR_OK : malformed(err, "cancel request");
    }
    if (out->code == PGW_SSL_REQUEST_CODE || out->code == PGW_GSSENC_REQUEST_CODE)
        return pgw_reader_done(&r) ? VT_ERR_OK : malformed(err, "encryption request");
    if ((out->code >> 16) != 3)
        return VT_ERR_OK; /* the caller refuses the version */
    /* name\0value\0 ... \0 */
    for (;;) {
        size_t nlen;
        const char *name = pgw_get_str(&r, &nlen);
        if (!name)
            return malformed(err, "startup packet");
        if (nlen == 0)
            break;
        const char *value = pgw_get_str(&r, NULL);
        if (!value)
            return malformed(err, "startup packet");
        if (out->nparams == VT_PGWIRE_MAX_STARTUP_PARAMS ||
            out->nparams == sizeof out->names / sizeof out->names[0])
            return vt_error_set(err, VT_ERR_PG_PROTOCOL,
                                "too many startup parameters (at most %d)",
                                VT_PGWIRE_MAX_STARTUP_PARAMS);
        out->names[out->nparams] = name;
        out->values[out->nparams] = value;
        out->nparams++;
    }
    return pgw_reader_done(&r) ? VT_ERR_OK : malformed(err, "startup packet");
}

/* ------------------------------------------------------- frontend messages */

enum vt_err pgw_parse_query(const unsigned char *body, size_t len, const char **out_sql,
                            size_t *out_len, struct vt_error *err)
{
    struct pgw_reader r;
    pgw_reader_init(&r, body, len);
    *out_sql = pgw_get_str(&r, out_len);
    return pgw_reader_done(&r) ? VT_ERR_OK : malformed(err, "Query");
}

enum vt_err pgw_parse_parse(const unsigned char *body, size_t len, struct pgw_parse_msg *out,
                            struct vt_error *err)
{
    struct pgw_reader r;
    pgw_reader_init(&r, body, len);
    out->name = pgw_get_str(&r, NULL);
    out->query = pgw_get_str(&r, &out->query_len);
    int16_t n = pgw_get_i16(&r);
    if (r.bad || n < 0)
        return malformed(err, "Parse");
    out->nparams = (uint16_t)n;
    if (n > VT_PGWIRE_MAX_PARAMS)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                            "a statement may have at most %d parameters", VT_PGWIRE_MAX_PARAMS);
    out->oids = pgw_get_bytes(&r, (size_t)n * 4);
    return pgw_reader_done(&r) ? VT_ERR_OK : malformed(err, "Parse");
}

enum vt_err pgw_parse_bind(const unsigned char *body, size_t len, struct pgw_bind_msg *out,
                           struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    struct pgw_reader r;
    pgw_reader_init(&r, body, len);
    out->portal = pgw_get_str(&r, NULL);
    out->statement = pgw_get_str(&r, NULL);
    int16_t nf = pgw_get_i16(&r);
    if (r.bad || nf < 0)
        return malformed(err, "Bind");
    out->nformats = (uint16_t)nf;
    out->formats = pgw_get_bytes(&r, (size_t)nf * 2);
    int16_t np = pgw_get_i16(&r);
    if (r.bad || np < 0)
        return malformed(err, "Bind");
    if (np > VT_PGWIRE_MAX_PARAMS)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                            "a statement may have at most %d parameters", VT_PGWIRE_MAX_PARAMS);
    out->nparams = (uint16_t)np;
    if (nf > 1 && nf != np)
        return vt_error_set(err, VT_ERR_PG_PROTOCOL,
                            "bind message has %d parameter formats but %d parameters", nf, np);
    for (int i = 0; i < nf && !r.bad; i++) {
        int16_t f = (int16_t)(out->formats[2 * i] << 8 | out->formats[2 * i + 1]);
        if (f != 0 && f != 1)
            return vt_error_set(err, VT_ERR_PG_PROTOCOL, "unsupported format code: %d", f);
    }
    out->values = r.p;
    for (int i = 0; i < np; i++) {
        int32_t vl = pgw_get_i32(&r);
        if (r.bad)
            return malformed(err, "Bind");
        if (vl < -1)
            return malformed(err, "Bind");
        if (vl > 0 && !pgw_get_bytes(&r, (size_t)vl))
            return malformed(err, "Bind");
    }
    int16_t nr = pgw_get_i16(&r);
    if (r.bad || nr < 0)
        return malformed(err, "Bind");
    out->nresult_formats = (uint16_t)nr;
    out->result_formats = pgw_get_bytes(&r, (size_t)nr * 2);
    for (int i = 0; i < nr && !r.bad; i++) {
        int16_t f = (int16_t)(out->result_formats[2 * i] << 8 | out->result_formats[2 * i + 1]);
        if (f != 0 && f != 1)
            return vt_error_set(err, VT_ERR_PG_PROTOCOL, "unsupported format code: %d", f);
    }
    return pgw_reader_done(&r) ? VT_ERR_OK : malformed(err, "Bind");
}

void pgw_bind_values(const struct pgw_bind_msg *msg, struct pgw_value *out)
{
    const unsigned char *p = msg->values;
    for (size_t i = 0; i < msg->nparams; i++) {
        int32_t vl = (int32_t)be32(p);
        p += 4;
        int16_t f = 0;
        if (msg->nformats == 1)
            f = (int16_t)(msg->formats[0] << 8 | msg->formats[1]);
        else if (msg->nformats > 1)
            f = (int16_t)(msg->formats[2 * i] << 8 | msg->formats[2 * i + 1]);
        out[i].format = f;
        out[i].len = vl;
        out[i].data = vl >= 0 ? p : NULL;
        if (vl > 0)
            p += vl;
    }
}

int16_t pgw_bind_result_format(const struct pgw_bind_msg *msg, size_t i)
{
    if (msg->nresult_formats == 0)
        return 0;
    size_t k = msg->nresult_formats == 1 ? 0 : i;
    if (k >= msg->nresult_formats)
        return 0;
    return (int16_t)(msg->result_formats[2 * k] << 8 | msg->result_formats[2 * k + 1]);
}

enum vt_err pgw_parse_target(const unsigned char *body, size_t len, struct pgw_target_msg *out,
                             struct vt_error *err)
{
    struct pgw_reader r;
    pgw_reader_init(&r, body, len);
    out->kind = (char)pgw_get_u8(&r);
    out->name = pgw_get_str(&r, NULL);
    if (!pgw_reader_done(&r))
        return malformed(err, "Describe/Close");
    if (out->kind != 'S' && out->kind != 'P')
        return vt_error_set(err, VT_ERR_PG_PROTOCOL, "invalid Describe/Close message subtype %d",
                            (unsigned char)out->kind);
    return VT_ERR_OK;
}

enum vt_err pgw_parse_execute(const unsigned char *body, size_t len, struct pgw_execute_msg *out,
                              struct vt_error *err)
{
    struct pgw_reader r;
    pgw_reader_init(&r, body, len);
    out->portal = pgw_get_str(&r, NULL);
    out->max_rows = pgw_get_i32(&r);
    return pgw_reader_done(&r) ? VT_ERR_OK : malformed(err, "Execute");
}

enum vt_err pgw_parse_password(const unsigned char *body, size_t len, const char **out_pw,
                               struct vt_error *err)
{
    struct pgw_reader r;
    pgw_reader_init(&r, body, len);
    *out_pw = pgw_get_str(&r, NULL);
    return pgw_reader_done(&r) ? VT_ERR_OK : malformed(err, "password");
}

/* -------------------------------------------------------- backend messages */

size_t pgw_msg_begin(struct strbuf *out, char type)
{
    size_t start = out->len;
    static const char zero[4] = {0};
    sb_addc(out, type);
    sb_add(out, zero, 4);
    return start;
}

void pgw_msg_end(struct strbuf *out, size_t start)
{
    if (out->overflow || out->len < start + 5)
        return;
    uint32_t n = (uint32_t)(out->len - start - 1);
    unsigned char *p = (unsigned char *)out->buf + start + 1;
    p[0] = (unsigned char)(n >> 24);
    p[1] = (unsigned char)(n >> 16);
    p[2] = (unsigned char)(n >> 8);
    p[3] = (unsigned char)n;
}

void pgw_put_u8(struct strbuf *out, uint8_t v)
{
    sb_addc(out, (char)v);
}

void pgw_put_i16(struct strbuf *out, int16_t v)
{
    unsigned char b[2] = {(unsigned char)((uint16_t)v >> 8), (unsigned char)v};
    sb_add(out, b, 2);
}

void pgw_put_i32(struct strbuf *out, int32_t v)
{
    uint32_t u = (uint32_t)v;
    unsigned char b[4] = {(unsigned char)(u >> 24), (unsigned char)(u >> 16),
                          (unsigned char)(u >> 8), (unsigned char)u};
    sb_add(out, b, 4);
}

void pgw_put_str(struct strbuf *out, const char *s)
{
    sb_add(out, s, strlen(s) + 1);
}

void pgw_write_auth(struct strbuf *out, int32_t code)
{
    size_t m = pgw_msg_begin(out, 'R');
    pgw_put_i32(out, code);
    pgw_msg_end(out, m);
}

void pgw_write_parameter_status(struct strbuf *out, const char *name, const char *value)
{
    size_t m = pgw_msg_begin(out, 'S');
    pgw_put_str(out, name);
    pgw_put_str(out, value);
    pgw_msg_end(out, m);
}

void pgw_write_backend_key(struct strbuf *out, int32_t pid, int32_t secret)
{
    size_t m = pgw_msg_begin(out, 'K');
    pgw_put_i32(out, pid);
    pgw_put_i32(out, secret);
    pgw_msg_end(out, m);
}

void pgw_write_ready(struct strbuf *out, char status)
{
    size_t m = pgw_msg_begin(out, 'Z');
    pgw_put_u8(out, (uint8_t)status);
    pgw_msg_end(out, m);
}

void pgw_write_command_complete(struct strbuf *out, const char *tag)
{
    size_t m = pgw_msg_begin(out, 'C');
    pgw_put_str(out, tag);
    pgw_msg_end(out, m);
}

void pgw_write_empty(struct strbuf *out, char type)
{
    size_t m = pgw_msg_begin(out, type);
    pgw_msg_end(out, m);
}

/* A message text must not hold a NUL (it would end the field): DuckDB's
 * messages never do, but a client's statement name echoed back might. */
static void put_field(struct strbuf *out, char code, const char *text)
{
    pgw_put_u8(out, (uint8_t)code);
    pgw_put_str(out, text);
}

void pgw_write_error(struct strbuf *out, char type, const char *severity, const char *sqlstate,
                     const char *message, const char *detail, const char *hint)
{
    size_t m = pgw_msg_begin(out, type);
    put_field(out, 'S', severity);
    put_field(out, 'V', severity);
    put_field(out, 'C', sqlstate);
    put_field(out, 'M', message);
    if (detail && *detail)
        put_field(out, 'D', detail);
    if (hint && *hint)
        put_field(out, 'H', hint);
    pgw_put_u8(out, 0);
    pgw_msg_end(out, m);
}

void pgw_write_negotiate_version(struct strbuf *out, int32_t newest_minor,
                                 const char *const *unknown, size_t n_unknown)
{
    size_t m = pgw_msg_begin(out, 'v');
    pgw_put_i32(out, newest_minor);
    pgw_put_i32(out, (int32_t)n_unknown);
    for (size_t i = 0; i < n_unknown; i++)
        pgw_put_str(out, unknown[i]);
    pgw_msg_end(out, m);
}
