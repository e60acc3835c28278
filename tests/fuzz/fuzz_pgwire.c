/*
 * libFuzzer target for the PostgreSQL listener's pure parsers
 * (src/pgwire/proto.c, lexer.c): the startup packet, the message stream
 * (framing, then every frontend body: Query, Parse, Bind and its values,
 * Describe/Close, Execute, PasswordMessage), and the SQL lexer (statement
 * splitting, session statements and COPY options, the normalizer). None may
 * crash, leak or read out of bounds, and their answers hold invariants
 * checked here: frames stay inside the input, split statements are ordered
 * non-empty slices of the text, a normalized text is never longer than
 * twice the input. Also the Bind value decoders (src/pgwire/params.c:
 * text and binary values of every parameter type, PostgreSQL array
 * literals) and the date/time template translation (lexer.c).
 *
 * The first input byte picks the parser; the rest is its input.
 *   make fuzz && build-fuzz/fuzz_pgwire -dict=tests/fuzz/pgwire.dict DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pgwire/pgwire.h"
#include "query/query.h"
#include "util/arena.h"
#include "util/limits.h"

/* The parameter types a Bind value may declare (0: unknown). */
static const uint32_t param_oids[] = {
    0, 16, 17, 18, 19, 20, 21, 23, 25, 26, 114, 700, 701, 1042, 1043, 1082, 1083, 1114, 1184,
    1186, 1266, 1700, 2950, 3802, 1000, 1001, 1005, 1007, 1009, 1015, 1016, 1021, 1022, 1028,
    1115, 1182, 1185, 1231, 2951, 199, 3807, 705, 2249};

static bool count_item(void *ctx, const char *s, size_t n, bool is_null)
{
    if (!s || s[n] != '\0' || (is_null && n != 4)) /* an item may hold NUL bytes */
        abort();
    ++*(size_t *)ctx;
    return true;
}

static void values(const unsigned char *data, size_t size)
{
    if (size < 2)
        return;
    uint32_t oid = param_oids[data[0] % (sizeof param_oids / sizeof param_oids[0])];
    int16_t format = data[1] & 1;
    data += 2;
    size -= 2;
    /* a copy of exactly `size` bytes: reads past it are caught */
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy)
        return;
    memcpy(copy, data, size);
    struct pgw_value v = {.data = copy, .len = (int32_t)size, .format = format};
    struct arena a;
    arena_init(&a, VT_PGWIRE_MAX_SESSION_BYTES);
    struct query_value out;
    struct vt_error err = {0};
    pgw_param_decode(&v, oid, &a, &out, &err);
    if (format == 0)
        pgw_param_decode_untyped_array(&v, &a, &out, &err);
    size_t items = 0;
    pgw_array_parse((const char *)copy, size, count_item, &items, &err);
    char fmt[256];
    if (pgw_datetime_format((const char *)copy, size, fmt, sizeof fmt) &&
        strlen(fmt) >= sizeof fmt)
        abort();
    arena_release(&a);
    free(copy);
}

static void bodies(const unsigned char *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        struct pgw_frame f;
        enum pgw_frame_rc rc = pgw_frame_message(data + off, size - off,
                                                 VT_PGWIRE_MAX_MESSAGE_BYTES, &f);
        if (rc != PGW_FRAME_OK)
            return;
        if (f.body < data || f.body + f.body_len > data + size || f.total != f.body_len + 5)
            abort();
        off += f.total;
        struct vt_error err = {0};
        switch (f.type) {
        case 'Q': {
            const char *sql;
            size_t n;
            if (pgw_parse_query(f.body, f.body_len, &sql, &n, &err) == VT_ERR_OK &&
                strlen(sql) != n)
                abort();
            break;
        }
        case 'P': {
            struct pgw_parse_msg m;
            if (pgw_parse_parse(f.body, f.body_len, &m, &err) == VT_ERR_OK &&
                (m.oids + 4 * (size_t)m.nparams > f.body + f.body_len))
                abort();
            break;
        }
        case 'B': {
            struct pgw_bind_msg m;
            if (pgw_parse_bind(f.body, f.body_len, &m, &err) != VT_ERR_OK)
                break;
            struct pgw_value *v = calloc(m.nparams ? m.nparams : 1, sizeof *v);
            if (!v)
                break;
            pgw_bind_values(&m, v);
            for (size_t i = 0; i < m.nparams; i++) {
                if (v[i].len < -1 || (v[i].format != 0 && v[i].format != 1))
                    abort();
                if (v[i].len > 0 && (v[i].data < f.body ||
                                     v[i].data + v[i].len > f.body + f.body_len))
                    abort();
            }
            for (size_t i = 0; i < (size_t)m.nresult_formats + 2; i++) {
                int16_t rf = pgw_bind_result_format(&m, i);
                if (rf != 0 && rf != 1)
                    abort();
            }
            free(v);
            break;
        }
        case 'D': case 'C': {
            struct pgw_target_msg m;
            if (pgw_parse_target(f.body, f.body_len, &m, &err) == VT_ERR_OK && m.kind != 'S' &&
                m.kind != 'P')
                abort();
            break;
        }
        case 'E': {
            struct pgw_execute_msg m;
            pgw_parse_execute(f.body, f.body_len, &m, &err);
            break;
        }
        case 'p': {
            const char *pw;
            pgw_parse_password(f.body, f.body_len, &pw, &err);
            break;
        }
        default:
            break;
        }
    }
}

static void sql_text(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return;
    memcpy(s, data, size);
    s[size] = '\0';
    struct pgw_span sp[32];
    size_t n = pgw_split(s, size, sp, 32);
    size_t last = 0;
    for (size_t i = 0; i < n && i < 32; i++) {
        if (sp[i].len == 0 || sp[i].pos < last || sp[i].pos + sp[i].len > size)
            abort();
        last = sp[i].pos + sp[i].len;
        struct pgw_stmt st;
        struct vt_error err = {0};
        if (pgw_stmt_read(s + sp[i].pos, sp[i].len, &st, &err) == VT_ERR_OK &&
            st.kind == PGW_STMT_COPY_OUT && !st.query)
            abort();
        pgw_stmt_release(&st);
    }
    /* The rewrite grows a text at most 5 bytes for one: a lone `?` (jsonb's
     * key-exists operator) becomes " &~= ", its stand-in between spaces. */
    char *norm = pgw_normalize(s, size);
    if (norm && strlen(norm) > 5 * size + 2)
        abort();
    free(norm);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0] % 4;
    data++;
    size--;
    if (mode == 0) {
        struct pgw_frame f;
        if (pgw_frame_startup(data, size, &f) == PGW_FRAME_OK) {
            if (f.total > size || f.body_len + 4 != f.total)
                abort();
            struct pgw_startup st;
            struct vt_error err = {0};
            if (pgw_parse_startup(f.body, f.body_len, &st, &err) == VT_ERR_OK)
                for (size_t i = 0; i < st.nparams; i++)
                    if (!st.names[i] || !st.values[i])
                        abort();
        }
    } else if (mode == 1) {
        bodies(data, size);
    } else if (mode == 2) {
        sql_text(data, size);
    } else {
        values(data, size);
    }
    return 0;
}
