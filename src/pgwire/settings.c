/*
 * A session's settings: the table of what this server has (reported in
 * ParameterStatus, acknowledged by SET, shown by SHOW and the catalog's
 * pg_settings/current_setting), the checks of their values, the startup
 * packet's parameters and `options`, and SET, RESET and SHOW. Settings only
 * change how results are written (extra_float_digits) and bound statements
 * (statement_timeout); the rest is accepted for the clients that send them.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pgwire/pgwire_internal.h"
#include "util/timeutil.h"

enum { S_REPORT = 1, S_SET = 2 };

typedef bool (*setting_check_fn)(const char *in, char *out, size_t cap);

static bool chk_any(const char *in, char *out, size_t cap)
{
    snprintf(out, cap, "%s", in);
    return true;
}

/* application_name: printable ASCII (others become '?'), at most 63 bytes. */
static bool chk_name(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < cap && o < 63; i++)
        out[o++] = (in[i] >= 32 && in[i] < 127) ? in[i] : '?';
    out[o] = '\0';
    return true;
}

static bool chk_encoding(const char *in, char *out, size_t cap)
{
    if (!strcasecmp(in, "utf8") || !strcasecmp(in, "utf-8") || !strcasecmp(in, "unicode")) {
        snprintf(out, cap, "UTF8");
        return true;
    }
    if (!strcasecmp(in, "sql_ascii")) { /* bytes pass through unchanged either way */
        snprintf(out, cap, "SQL_ASCII");
        return true;
    }
    return false;
}

/* DateStyle: output is always ISO; the order word only matters for input,
 * which DuckDB reads in ISO anyway. */
static bool chk_datestyle(const char *in, char *out, size_t cap)
{
    const char *order = "MDY";
    char buf[128];
    snprintf(buf, sizeof buf, "%s", in);
    for (char *tok = buf; *tok;) {
        while (*tok == ' ' || *tok == ',')
            tok++;
        char *end = tok;
        while (*end && *end != ' ' && *end != ',')
            end++;
        char save = *end;
        *end = '\0';
        if (*tok) {
            if (!strcasecmp(tok, "iso")) {
            } else if (!strcasecmp(tok, "mdy") || !strcasecmp(tok, "us") ||
                       !strcasecmp(tok, "noneuropean")) {
                order = "MDY";
            } else if (!strcasecmp(tok, "dmy") || !strcasecmp(tok, "european")) {
                order = "DMY";
            } else if (!strcasecmp(tok, "ymd")) {
                order = "YMD";
            } else {
                return false; /* SQL, Postgres, German output styles */
            }
        }
        *end = save;
        tok = end;
    }
    snprintf(out, cap, "ISO, %s", order);
    return true;
}

static bool chk_interval(const char *in, char *out, size_t cap)
{
    if (strcasecmp(in, "postgres") != 0)
        return false;
    snprintf(out, cap, "postgres");
    return true;
}

static bool chk_on(const char *in, char *out, size_t cap)
{
    if (strcasecmp(in, "on") && strcasecmp(in, "true") && strcasecmp(in, "1") &&
        strcasecmp(in, "yes"))
        return false;
    snprintf(out, cap, "on");
    return true;
}

static bool chk_off(const char *in, char *out, size_t cap)
{
    if (strcasecmp(in, "off") && strcasecmp(in, "false") && strcasecmp(in, "0") &&
        strcasecmp(in, "no"))
        return false;
    snprintf(out, cap, "off");
    return true;
}

static bool chk_bool(const char *in, char *out, size_t cap)
{
    return chk_on(in, out, cap) || chk_off(in, out, cap);
}

static bool chk_hex(const char *in, char *out, size_t cap)
{
    if (strcasecmp(in, "hex") != 0)
        return false;
    snprintf(out, cap, "hex");
    return true;
}

static bool chk_efd(const char *in, char *out, size_t cap)
{
    char *end;
    long v = strtol(in, &end, 10);
    if (!*in || *end || v < -15 || v > 3)
        return false;
    snprintf(out, cap, "%ld", v);
    return true;
}

/* A duration in milliseconds (bare number) or with a unit: ms, s, min, h, d. */
static bool parse_ms(const char *in, int64_t *out_ms)
{
    char *end;
    double v = strtod(in, &end);
    if (end == in || v < 0)
        return false;
    while (*end == ' ')
        end++;
    double mul = !*end || !strcmp(end, "ms") ? 1
                 : !strcmp(end, "s")         ? 1000
                 : !strcmp(end, "min")       ? 60000
                 : !strcmp(end, "h")         ? 3600000
                 : !strcmp(end, "d")         ? 86400000
                                             : -1;
    if (mul < 0 || v * mul > 1e15)
        return false;
    *out_ms = (int64_t)(v * mul);
    return true;
}

static bool chk_duration(const char *in, char *out, size_t cap)
{
    int64_t ms;
    if (!parse_ms(in, &ms))
        return false;
    snprintf(out, cap, "%s", in);
    return true;
}

static bool chk_timezone(const char *in, char *out, size_t cap)
{
    size_t n = strlen(in);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)in[i]) || strchr("/_+-:. ", in[i])))
            return false;
    snprintf(out, cap, "%s", in);
    return true;
}

static bool chk_level(const char *in, char *out, size_t cap)
{
    static const char *const ok[] = {"debug5", "debug4", "debug3", "debug2", "debug1", "log",
                                     "notice", "warning", "error", "info", NULL};
    for (size_t i = 0; ok[i]; i++)
        if (!strcasecmp(in, ok[i])) {
            snprintf(out, cap, "%s", ok[i]);
            return true;
        }
    return false;
}

static bool chk_isolation(const char *in, char *out, size_t cap)
{
    static const char *const ok[] = {"read uncommitted", "read committed", "repeatable read",
                                     "serializable", NULL};
    for (size_t i = 0; ok[i]; i++)
        if (!strcasecmp(in, ok[i])) {
            snprintf(out, cap, "%s", ok[i]);
            return true;
        }
    return false;
}

struct setting {
    const char *name;
    const char *def;                /* NULL: filled per session */
    unsigned flags;
    setting_check_fn check;
    const char *desc;
};

/* The settings this server has. S_SET ones are what `SET` acknowledges
 * (harmless: they change nothing a read-only session could misuse); any
 * other SET goes to the gate, which refuses it (25006). */
static const struct setting settings[] = {
    {"server_version", NULL, S_REPORT, NULL, "Server version (PostgreSQL protocol level)."},
    {"server_version_num", NULL, 0, NULL, "Server version as a number."},
    {"server_encoding", "UTF8", S_REPORT, NULL, "Server character set encoding."},
    {"client_encoding", "UTF8", S_REPORT | S_SET, chk_encoding, "Client character set."},
    {"DateStyle", "ISO, MDY", S_REPORT | S_SET, chk_datestyle, "Date display format."},
    {"IntervalStyle", "postgres", S_REPORT | S_SET, chk_interval, "Interval display format."},
    {"TimeZone", "UTC", S_REPORT | S_SET, chk_timezone,
     "Time zone name; timestamptz values are always sent in UTC (+00)."},
    {"integer_datetimes", "on", S_REPORT, NULL, "Datetimes are integer based."},
    {"standard_conforming_strings", "on", S_REPORT | S_SET, chk_on,
     "Backslashes in '...' strings are literal."},
    {"is_superuser", "off", S_REPORT, NULL, "The user is not a superuser."},
    {"session_authorization", NULL, S_REPORT, NULL, "Session user name."},
    {"application_name", "", S_REPORT | S_SET, chk_name, "Application name."},
    {"default_transaction_read_only", "on", S_REPORT | S_SET, chk_on,
     "Every transaction is read-only."},
    {"in_hot_standby", "off", S_REPORT, NULL, "Not a standby."},
    {"transaction_read_only", "on", 0, NULL, "The transaction is read-only."},
    {"extra_float_digits", "1", S_SET, chk_efd, "Float output precision."},
    {"search_path", "\"$user\", public", S_SET, chk_any, "Schema search order."},
    {"statement_timeout", "0", S_SET, chk_duration,
     "Statement time limit (server.request_timeout_ms applies as well)."},
    {"lock_timeout", "0", S_SET, chk_duration, "No locks are taken."},
    {"idle_in_transaction_session_timeout", "0", S_SET, chk_duration, "Accepted, not used."},
    {"idle_session_timeout", "0", 0, NULL, "See server.pgwire.idle_timeout_secs."},
    {"client_min_messages", "notice", S_SET, chk_level, "Message levels sent."},
    {"bytea_output", "hex", S_SET, chk_hex, "bytea output format."},
    {"transaction_isolation", "repeatable read", S_SET, chk_isolation,
     "Each statement reads one snapshot of the datasets."},
    {"default_transaction_isolation", "repeatable read", S_SET, chk_isolation,
     "Each statement reads one snapshot of the datasets."},
    {"default_transaction_deferrable", "off", S_SET, chk_bool, "Accepted, not used."},
    {"max_identifier_length", "63", 0, NULL, "Longest identifier."},
    {"max_index_keys", "32", 0, NULL, "Columns an index may have (datasets have no indexes)."},
    {"max_function_args", "100", 0, NULL, "Arguments a function may have."},
    {"block_size", "8192", 0, NULL, "Size of a disk block."},
    {"lc_collate", "C", 0, NULL, "Collation order."},
    {"lc_ctype", "C", 0, NULL, "Character classification."},
    {"lc_messages", "C", S_SET, chk_any, "Message language (messages are English)."},
    {"lc_monetary", "C", S_SET, chk_any, "Accepted, not used."},
    {"lc_numeric", "C", S_SET, chk_any, "Accepted, not used."},
    {"lc_time", "C", S_SET, chk_any, "Accepted, not used."},
    {"jit", "off", S_SET, chk_bool, "Accepted, not used."},
    {"max_connections", NULL, 0, NULL, "server.pgwire.max_connections."},
    {"row_security", "on", S_SET, chk_bool, "Accepted, not used."},
};

#define N_SETTINGS (sizeof settings / sizeof settings[0])
_Static_assert(sizeof settings / sizeof settings[0] == PGW_N_SETTINGS,
               "PGW_N_SETTINGS counts the rows of settings[]");

static int setting_index(const char *name)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (!strcasecmp(settings[i].name, name))
            return (int)i;
    return -1;
}

static void set_value(struct pgw_session *s, size_t i, const char *v)
{
    snprintf(s->values[i], PGW_VALUE_MAX, "%s", v);
    s->settings_gen++; /* the dialect folds settings into what it remembers */
}

static void report(struct pgw_session *s, size_t i)
{
    if (settings[i].flags & S_REPORT)
        pgw_write_parameter_status(s->out, settings[i].name, s->values[i]);
}

void pgw_settings_report(struct pgw_session *s)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        report(s, i);
}

/* Applies name=value (a startup parameter or -c option). */
static enum vt_err apply_setting(struct pgw_session *s, const char *name, const char *value,
                                 bool at_startup, struct vt_error *err)
{
    int i = setting_index(name);
    if (i < 0 || !(settings[i].flags & S_SET)) {
        if (at_startup)
            return VT_ERR_OK; /* PostgreSQL would know it; nothing here depends on it */
        return vt_error_set(err, VT_ERR_PG_UNKNOWN_SETTING,
                            "unrecognized configuration parameter \"%s\"", name);
    }
    char v[PGW_VALUE_MAX];
    if (!settings[i].check(value, v, sizeof v))
        return vt_error_set(err, VT_ERR_PG_INVALID_SETTING,
                            "invalid value for parameter \"%s\": \"%.100s\"", settings[i].name,
                            value);
    set_value(s, (size_t)i, v);
    return VT_ERR_OK;
}

/* The `options` startup parameter: "-c name=value" and "--name=value". */
static enum vt_err apply_options(struct pgw_session *s, const char *opts, struct vt_error *err)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", opts);
    char *p = buf;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char *tok = p;
        while (*p && *p != ' ')
            p++;
        if (*p)
            *p++ = '\0';
        if (!strcmp(tok, "-c")) {
            while (*p == ' ')
                p++;
            tok = p;
            while (*p && *p != ' ')
                p++;
            if (*p)
                *p++ = '\0';
        } else if (!strncmp(tok, "--", 2)) {
            tok += 2;
        } else {
            continue;
        }
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        for (char *c = tok; *c; c++)
            if (*c == '-')
                *c = '_';
        if (apply_setting(s, tok, eq + 1, true, err) != VT_ERR_OK)
            return err->code;
    }
    return VT_ERR_OK;
}

enum vt_err pgw_settings_init(struct pgw_session *s, const char *const *names,
                              const char *const *values, size_t n, struct vt_error *err)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const char *d = settings[i].def;
        if (!strcmp(settings[i].name, "server_version"))
            d = s->server_version;
        else if (!strcmp(settings[i].name, "server_version_num"))
            d = "150000";
        else if (!strcmp(settings[i].name, "session_authorization"))
            d = s->user;
        else if (!d)
            d = "";
        set_value(s, i, d);
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(names[i], "user") || !strcmp(names[i], "database") ||
            !strncmp(names[i], "_pq_.", 5))
            continue;
        if (!strcmp(names[i], "replication")) {
            if (chk_off(values[i], (char[8]){0}, 8))
                continue;
            return vt_error_set(err, VT_ERR_NOT_IMPLEMENTED,
                                "replication connections are not supported");
        }
        enum vt_err rc = !strcmp(names[i], "options")
                             ? apply_options(s, values[i], err)
                             : apply_setting(s, names[i], values[i], true, err);
        if (rc != VT_ERR_OK)
            return rc;
    }
    memcpy(s->startup, s->values, sizeof s->values);
    return VT_ERR_OK;
}

bool pgw_setting_settable(const char *name)
{
    int i = setting_index(name);
    return i >= 0 && (settings[i].flags & S_SET);
}

enum vt_err pgw_setting_set(struct pgw_session *s, const struct pgw_stmt *st, struct vt_error *err)
{
    int i = setting_index(st->name);
    if (i < 0 || !(settings[i].flags & S_SET))
        return vt_error_set(err, VT_ERR_SQL_NOT_READ_ONLY, "SET %s is not allowed", st->name);
    if (st->is_default) {
        memcpy(s->values[i], s->startup[i], PGW_VALUE_MAX);
    } else {
        char v[PGW_VALUE_MAX];
        if (!settings[i].check(st->value, v, sizeof v))
            return vt_error_set(err, VT_ERR_PG_INVALID_SETTING,
                                "invalid value for parameter \"%s\": \"%.100s\"",
                                settings[i].name, st->value);
        set_value(s, (size_t)i, v);
    }
    report(s, (size_t)i);
    return VT_ERR_OK;
}

enum vt_err pgw_setting_reset(struct pgw_session *s, const char *name, struct vt_error *err)
{
    size_t from = 0, to = N_SETTINGS;
    if (name) {
        int i = setting_index(name);
        if (i < 0)
            return vt_error_set(err, VT_ERR_PG_UNKNOWN_SETTING,
                                "unrecognized configuration parameter \"%s\"", name);
        if (!(settings[i].flags & S_SET))
            return vt_error_set(err, VT_ERR_SQL_NOT_READ_ONLY,
                                "parameter \"%s\" cannot be changed", settings[i].name);
        from = (size_t)i;
        to = from + 1;
    }
    for (size_t i = from; i < to; i++) {
        if (strcmp(s->values[i], s->startup[i]) != 0) {
            memcpy(s->values[i], s->startup[i], PGW_VALUE_MAX);
            report(s, i);
        }
    }
    return VT_ERR_OK;
}

size_t pgw_settings_catalog(const struct pgw_session *s, struct pgw_cat_setting *out)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        out[i] = (struct pgw_cat_setting){settings[i].name, s->values[i], settings[i].desc};
    return N_SETTINGS;
}

const char *pgw_session_setting(const struct pgw_session *s, const char *name)
{
    int i = setting_index(name);
    return i < 0 ? NULL : s->values[i];
}

struct pgw_format pgw_session_format(const struct pgw_session *s)
{
    int i = setting_index("extra_float_digits");
    return (struct pgw_format){.extra_float_digits = (int)strtol(s->values[i], NULL, 10)};
}

int64_t pgw_statement_deadline(const struct pgw_session *s)
{
    int64_t t = s->cfg.request_timeout_ms;
    int64_t st = 0;
    if (parse_ms(s->values[setting_index("statement_timeout")], &st) && st > 0 &&
        (t <= 0 || st < t))
        t = st;
    return t > 0 ? time_mono_ms() + t : 0;
}

/* ------------------------------------------------------------------ SHOW */

/* A RowDescription of n text columns. */
static void text_columns(struct strbuf *out, size_t n, const char *const *names)
{
    size_t m = pgw_msg_begin(out, 'T');
    pgw_put_i16(out, (int16_t)n);
    for (size_t i = 0; i < n; i++) {
        pgw_put_str(out, names[i]);
        pgw_put_i32(out, 0);
        pgw_put_i16(out, 0);
        pgw_put_i32(out, PGW_OID_TEXT);
        pgw_put_i16(out, -1);
        pgw_put_i32(out, -1);
        pgw_put_i16(out, 0);
    }
    pgw_msg_end(out, m);
}

static void text_row(struct strbuf *out, size_t n, const char *const *values)
{
    size_t m = pgw_msg_begin(out, 'D');
    pgw_put_i16(out, (int16_t)n);
    for (size_t c = 0; c < n; c++) {
        pgw_put_i32(out, (int32_t)strlen(values[c]));
        sb_adds(out, values[c]);
    }
    pgw_msg_end(out, m);
}

void pgw_show_describe(struct pgw_session *s, const struct pgw_stmt *st)
{
    static const char *const all[] = {"name", "setting", "description"};
    int i = setting_index(st->name);
    const char *one = i < 0 ? st->name : settings[i].name;
    text_columns(s->out, st->all ? 3 : 1, st->all ? all : &one);
}

/* SHOW name / SHOW ALL: rows (with a RowDescription unless described). */
bool pgw_show(struct pgw_session *s, const struct pgw_stmt *st, bool describe)
{
    if (st->all) {
        if (describe)
            pgw_show_describe(s, st);
        for (size_t i = 0; i < N_SETTINGS; i++) {
            const char *v[3] = {settings[i].name, s->values[i], settings[i].desc};
            text_row(s->out, 3, v);
        }
        pgw_write_command_complete(s->out, "SHOW");
        return true;
    }
    int i = setting_index(st->name);
    if (i < 0) {
        struct vt_error err = {0};
        vt_error_set(&err, VT_ERR_PG_UNKNOWN_SETTING, "unrecognized configuration parameter \"%s\"",
                     st->name);
        pgw_fail(s, &err);
        return false;
    }
    if (describe)
        pgw_show_describe(s, st);
    const char *v = s->values[i];
    text_row(s->out, 1, &v);
    pgw_write_command_complete(s->out, "SHOW");
    return true;
}
