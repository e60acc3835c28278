/*
 * PostgreSQL's to_char(timestamp, text) and to_timestamp(text, text), which
 * DuckDB lacks: the scalar functions behind them (registered with the other
 * functions of functions.c, eng_functions_install).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/functions_internal.h"
#include "util/limits.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

/* ------------------------------------------------- PostgreSQL date formats
 *
 * to_char(ts, fmt) and to_timestamp(text, fmt) take PostgreSQL's template
 * patterns (YYYY, MM, DD, HH24, MI, SS, MS, US, Mon, Month, Dy, Day, AM,
 * ...; FM suppresses padding, "text" is literal): both are done here
 * (DuckDB's strptime wants a constant format, which a macro cannot give). */

static const char *const month_names[] = {"January", "February", "March",     "April",
                                          "May",     "June",     "July",      "August",
                                          "September", "October", "November", "December"};
static const char *const day_names[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                        "Thursday", "Friday", "Saturday"};

/* A name in the case of the pattern that asked for it ("MONTH", "Month",
 * "month"), blank-padded to `pad` characters unless fm, cut to `cut`. */
static void add_name(struct strbuf *o, const char *name, const char *pat, size_t cut, int pad,
                     bool fm)
{
    bool upper = isupper((unsigned char)pat[0]) && isupper((unsigned char)pat[1]);
    bool lower = islower((unsigned char)pat[0]);
    size_t n = strlen(name);
    if (cut && n > cut)
        n = cut;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (upper)
            c = (char)toupper((unsigned char)c);
        else if (lower)
            c = (char)tolower((unsigned char)c);
        sb_addc(o, c);
    }
    for (int i = (int)n; !fm && i < pad; i++)
        sb_addc(o, ' ');
}

static void add_num(struct strbuf *o, int64_t v, int width, bool fm)
{
    if (fm)
        sb_addf(o, "%" PRId64, v);
    else
        sb_addf(o, "%0*" PRId64, width, v);
}

static const char *ordinal(int64_t v)
{
    int64_t t = v % 100;
    if (t >= 11 && t <= 13)
        return "th";
    switch (v % 10) {
    case 1:
        return "st";
    case 2:
        return "nd";
    case 3:
        return "rd";
    default:
        return "th";
    }
}

struct tfields {
    int64_t year, month, day, hour, minute, second, micros, days; /* days since 1970-01-01 */
};

/* ISO 8601 week-numbering year and week of `days`. */
static void iso_week(int64_t days, int64_t *out_year, int64_t *out_week)
{
    int64_t dow = ((days % 7) + 7 + 3) % 7; /* Monday = 0 (1970-01-01 was a Thursday) */
    int64_t thursday = days - dow + 3;
    int64_t y = 1970;
    /* the year of that Thursday */
    int64_t lo = thursday / 366 + 1969, hi = thursday / 365 + 1971;
    for (y = hi; y >= lo && time_days_from_civil(y, 1, 1) > thursday; y--)
        ;
    *out_year = y;
    *out_week = (thursday - time_days_from_civil(y, 1, 1)) / 7 + 1;
}

/* Formats `t` by PostgreSQL template `f`. */
static void pg_to_char(struct strbuf *o, const struct tfields *t, const char *f, size_t n)
{
    int64_t dow = ((t->days % 7) + 7 + 4) % 7; /* Sunday = 0 */
    int64_t doy = t->days - time_days_from_civil(t->year, 1, 1) + 1;
    int64_t h12 = t->hour % 12 == 0 ? 12 : t->hour % 12;
    for (size_t i = 0; i < n;) {
        const char *p = f + i;
        size_t left = n - i;
        bool fm = false;
        if (left >= 2 && (p[0] == 'F' || p[0] == 'f') && (p[1] == 'M' || p[1] == 'm')) {
            fm = true;
            p += 2;
            left -= 2;
            i += 2;
        }
#define IS(s) (left >= sizeof(s) - 1 && strncasecmp(p, s, sizeof(s) - 1) == 0)
        size_t used = 0;
        int64_t num = -1;
        if (p[0] == '"') {
            size_t j = 1;
            while (j < left && p[j] != '"') {
                if (p[j] == '\\' && j + 1 < left)
                    j++;
                sb_addc(o, p[j]);
                j++;
            }
            i += j + (j < left);
            continue;
        } else if (IS("HH24")) {
            add_num(o, num = t->hour, 2, fm), used = 4;
        } else if (IS("HH12")) {
            add_num(o, num = h12, 2, fm), used = 4;
        } else if (IS("HH")) {
            add_num(o, num = h12, 2, fm), used = 2;
        } else if (IS("MI")) {
            add_num(o, num = t->minute, 2, fm), used = 2;
        } else if (IS("SSSSS")) {
            add_num(o, num = t->hour * 3600 + t->minute * 60 + t->second, 0, true), used = 5;
        } else if (IS("SSSS")) {
            add_num(o, num = t->hour * 3600 + t->minute * 60 + t->second, 0, true), used = 4;
        } else if (IS("SS")) {
            add_num(o, num = t->second, 2, fm), used = 2;
        } else if (IS("MS")) {
            add_num(o, num = t->micros / 1000, 3, fm), used = 2;
        } else if (IS("US")) {
            add_num(o, num = t->micros, 6, fm), used = 2;
        } else if (IS("AM") || IS("PM")) {
            sb_adds(o, t->hour < 12 ? (isupper((unsigned char)p[0]) ? "AM" : "am")
                                    : (isupper((unsigned char)p[0]) ? "PM" : "pm"));
            used = 2;
        } else if (IS("A.M.") || IS("P.M.")) {
            sb_adds(o, t->hour < 12 ? (isupper((unsigned char)p[0]) ? "A.M." : "a.m.")
                                    : (isupper((unsigned char)p[0]) ? "P.M." : "p.m."));
            used = 4;
        } else if (IS("YYYY")) {
            add_num(o, num = t->year, 4, fm), used = 4;
        } else if (IS("IYYY")) {
            int64_t iy, iw;
            iso_week(t->days, &iy, &iw);
            add_num(o, num = iy, 4, fm), used = 4;
        } else if (IS("YYY")) {
            add_num(o, num = t->year % 1000, 3, fm), used = 3;
        } else if (IS("YY")) {
            add_num(o, num = t->year % 100, 2, fm), used = 2;
        } else if (IS("Y")) {
            add_num(o, num = t->year % 10, 1, fm), used = 1;
        } else if (IS("MONTH")) {
            add_name(o, month_names[t->month - 1], p, 0, 9, fm), used = 5;
        } else if (IS("MON")) {
            add_name(o, month_names[t->month - 1], p, 3, 3, fm), used = 3;
        } else if (IS("MM")) {
            add_num(o, num = t->month, 2, fm), used = 2;
        } else if (IS("DAY")) {
            add_name(o, day_names[dow], p, 0, 9, fm), used = 3;
        } else if (IS("DY")) {
            add_name(o, day_names[dow], p, 3, 3, fm), used = 2;
        } else if (IS("DDD")) {
            add_num(o, num = doy, 3, fm), used = 3;
        } else if (IS("DD")) {
            add_num(o, num = t->day, 2, fm), used = 2;
        } else if (IS("D")) {
            add_num(o, num = dow + 1, 1, fm), used = 1;
        } else if (IS("ID")) {
            add_num(o, num = dow == 0 ? 7 : dow, 1, fm), used = 2;
        } else if (IS("IW")) {
            int64_t iy, iw;
            iso_week(t->days, &iy, &iw);
            add_num(o, num = iw, 2, fm), used = 2;
        } else if (IS("WW")) {
            add_num(o, num = (doy - 1) / 7 + 1, 2, fm), used = 2;
        } else if (IS("W")) {
            add_num(o, num = (t->day - 1) / 7 + 1, 1, fm), used = 1;
        } else if (IS("Q")) {
            add_num(o, num = (t->month - 1) / 3 + 1, 1, fm), used = 1;
        } else if (IS("CC")) {
            add_num(o, num = t->year > 0 ? (t->year - 1) / 100 + 1 : t->year / 100 - 1, 2, fm),
                used = 2;
        } else if (IS("J")) {
            add_num(o, num = t->days + 2440588, 0, true), used = 1;
        } else if (IS("TZ") || IS("OF")) {
            sb_adds(o, IS("OF") ? "+00" : (isupper((unsigned char)p[0]) ? "UTC" : "utc"));
            used = 2;
        }
#undef IS
        if (!used) {
            if (p[0] == '\\' && left > 1) {
                sb_addc(o, p[1]);
                i += 2;
            } else {
                sb_addc(o, p[0]);
                i++;
            }
            continue;
        }
        i += used;
        /* an ordinal suffix after a number: 1st, 2ND */
        if (num >= 0 && n - i >= 2 && (f[i] == 'T' || f[i] == 't') &&
            (f[i + 1] == 'H' || f[i + 1] == 'h')) {
            const char *suf = ordinal(num);
            if (f[i] == 'T')
                sb_addc(o, (char)toupper((unsigned char)suf[0])),
                    sb_addc(o, (char)toupper((unsigned char)suf[1]));
            else
                sb_adds(o, suf);
            i += 2;
        }
    }
}

/* "vt:to_char"(TIMESTAMP, VARCHAR) -> VARCHAR */
void eng_pg_to_char(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector tv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector fv = duckdb_data_chunk_get_vector(in, 1);
    int64_t *ts = duckdb_vector_get_data(tv);
    duckdb_string_t *f = duckdb_vector_get_data(fv);
    uint64_t *vt = duckdb_vector_get_validity(tv), *vf = duckdb_vector_get_validity(fv);
    duckdb_vector_ensure_validity_writable(out);
    uint64_t *ov = duckdb_vector_get_validity(out);
    struct strbuf o;
    sb_init(&o, 0);
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(vt, i) || !duckdb_validity_row_is_valid(vf, i)) {
            duckdb_validity_set_row_invalid(ov, i);
            continue;
        }
        if (duckdb_string_t_length(f[i]) > VT_SQL_MAX_FORMAT_WIDTH) {
            sb_release(&o);
            eng_fn_limit(info, "to_char", "a template of %" PRIu32 " bytes is over the limit of %d",
                         duckdb_string_t_length(f[i]), VT_SQL_MAX_FORMAT_WIDTH);
            return;
        }
        duckdb_timestamp stamp = {ts[i]};
        if (!duckdb_is_finite_timestamp(stamp)) {
            duckdb_validity_set_row_invalid(ov, i);
            continue;
        }
        duckdb_timestamp_struct s = duckdb_from_timestamp(stamp);
        int64_t days = ts[i] / 86400000000LL - (ts[i] % 86400000000LL < 0);
        struct tfields t = {s.date.year, s.date.month, s.date.day, s.time.hour, s.time.min,
                            s.time.sec, s.time.micros, days};
        sb_reset(&o);
        pg_to_char(&o, &t, duckdb_string_t_data(&f[i]), duckdb_string_t_length(f[i]));
        if (o.overflow) {
            sb_release(&o);
            duckdb_scalar_function_set_error(info, "to_char: out of memory");
            return;
        }
        duckdb_vector_assign_string_element_len(out, i, o.buf ? o.buf : "", o.len);
    }
    sb_release(&o);
}

/* to_timestamp(text, template), as PostgreSQL reads it: fields by the
 * template's patterns, separators in the template skip one non-alphanumeric
 * character of the input (and spaces), text in quotes skips its length.
 * Returns false with `why` set when the text does not fit. */
struct parsed {
    int64_t year, month, day, hour, minute, second, micros, offset_min, doy;
    int pm; /* -1 none, 0 AM, 1 PM */
};

static bool read_digits(const char **s, const char *end, int max, int64_t *out)
{
    const char *p = *s;
    int64_t v = 0;
    int k = 0;
    while (p < end && k < max && isdigit((unsigned char)*p)) {
        v = v * 10 + (*p - '0');
        p++, k++;
    }
    if (!k)
        return false;
    *s = p;
    *out = v;
    return true;
}

/* A fraction of up to `width` digits as a count of 10^-width units ("5"
 * for MS is 500 ms). *out is 0 when there is no digit. */
static bool read_fraction(const char **s, const char *end, int width, int64_t *out)
{
    const char *b = *s;
    *out = 0;
    if (!read_digits(s, end, width, out))
        return false;
    for (long k = (long)(*s - b); k < width; k++)
        *out *= 10;
    return true;
}

static int read_name(const char **s, const char *end, const char *const *names, size_t count,
                     size_t prefix)
{
    for (size_t k = 0; k < count; k++) {
        size_t n = prefix ? prefix : strlen(names[k]);
        if ((size_t)(end - *s) >= n && strncasecmp(*s, names[k], n) == 0) {
            *s += n;
            return (int)k;
        }
    }
    return -1;
}

static bool pg_parse(const char *in, size_t inlen, const char *f, size_t n, struct parsed *t,
                     char *why, size_t cap)
{
    const char *s = in, *end = in + inlen;
    memset(t, 0, sizeof *t);
    t->year = 1, t->month = 1, t->day = 1, t->pm = -1;
    for (size_t i = 0; i < n;) {
        const char *p = f + i;
        size_t left = n - i;
#define IS(x) (left >= sizeof(x) - 1 && strncasecmp(p, x, sizeof(x) - 1) == 0)
        while (s < end && *s == ' ' && p[0] != ' ')
            s++;
        bool ok = true;
        size_t used = 0;
        if (IS("FM")) {
            i += 2;
            continue;
        } else if (p[0] == '"') {
            size_t j = 1;
            while (j < left && p[j] != '"') {
                if (s < end)
                    s++;
                j++;
            }
            i += j + (j < left);
            continue;
        } else if (IS("HH24")) {
            ok = read_digits(&s, end, 2, &t->hour), used = 4;
        } else if (IS("HH12")) {
            ok = read_digits(&s, end, 2, &t->hour), used = 4;
        } else if (IS("HH")) {
            ok = read_digits(&s, end, 2, &t->hour), used = 2;
        } else if (IS("MI")) {
            ok = read_digits(&s, end, 2, &t->minute), used = 2;
        } else if (IS("SS")) {
            ok = read_digits(&s, end, 2, &t->second), used = 2;
        } else if (IS("MS")) {
            int64_t v;
            ok = read_fraction(&s, end, 3, &v), used = 2;
            t->micros += v * 1000;
        } else if (IS("US")) {
            int64_t v;
            ok = read_fraction(&s, end, 6, &v), used = 2;
            t->micros += v;
        } else if (IS("AM") || IS("PM") || IS("A.M.") || IS("P.M.")) {
            used = p[1] == '.' ? 4 : 2;
            if (end - s >= 4 && (strncasecmp(s, "a.m.", 4) == 0 || strncasecmp(s, "p.m.", 4) == 0))
                t->pm = tolower((unsigned char)*s) == 'p', s += 4;
            else if (end - s >= 2 && (strncasecmp(s, "am", 2) == 0 || strncasecmp(s, "pm", 2) == 0))
                t->pm = tolower((unsigned char)*s) == 'p', s += 2;
            else
                ok = false;
        } else if (IS("YYYY")) {
            ok = read_digits(&s, end, 4, &t->year), used = 4;
        } else if (IS("YY")) {
            ok = read_digits(&s, end, 2, &t->year), used = 2;
            t->year += t->year < 70 ? 2000 : 1900;
        } else if (IS("MONTH")) {
            int k = read_name(&s, end, month_names, 12, 0);
            ok = k >= 0, t->month = k + 1, used = 5;
        } else if (IS("MON")) {
            int k = read_name(&s, end, month_names, 12, 3);
            ok = k >= 0, t->month = k + 1, used = 3;
        } else if (IS("MM")) {
            ok = read_digits(&s, end, 2, &t->month), used = 2;
        } else if (IS("DAY")) {
            ok = read_name(&s, end, day_names, 7, 0) >= 0, used = 3;
        } else if (IS("DY")) {
            ok = read_name(&s, end, day_names, 7, 3) >= 0, used = 2;
        } else if (IS("DDD")) {
            ok = read_digits(&s, end, 3, &t->doy), used = 3;
        } else if (IS("DD")) {
            ok = read_digits(&s, end, 2, &t->day), used = 2;
        } else if (IS("OF") || IS("TZH")) {
            int sign = 1;
            if (s < end && (*s == '+' || *s == '-'))
                sign = *s == '-' ? -1 : 1, s++;
            int64_t h = 0, m = 0;
            ok = read_digits(&s, end, 2, &h);
            if (ok && s < end && *s == ':')
                s++;
            if (ok && s < end && isdigit((unsigned char)*s))
                read_digits(&s, end, 2, &m);
            t->offset_min = sign * (h * 60 + m);
            used = 2 + (p[1] == 'Z' || p[1] == 'z');
        }
#undef IS
        if (!ok) {
            snprintf(why, cap, "the text does not match the template at \"%.*s\"",
                     (int)(end - s > 20 ? 20 : end - s), s);
            return false;
        }
        if (used) {
            i += used;
            continue;
        }
        /* a separator or literal character of the template */
        if (s < end && (!isalnum((unsigned char)*s) || *s == p[0]))
            s++;
        i++;
    }
    while (s < end && *s == ' ')
        s++;
    if (s != end) {
        snprintf(why, cap, "text left over after the template: \"%.*s\"",
                 (int)(end - s > 20 ? 20 : end - s), s);
        return false;
    }
    if (t->pm == 1 && t->hour < 12)
        t->hour += 12;
    else if (t->pm == 0 && t->hour == 12)
        t->hour = 0;
    if (t->month < 1 || t->month > 12 || t->day < 1 || t->day > 31 || t->hour > 24 ||
        t->minute > 59 || t->second > 60) {
        snprintf(why, cap, "a date or time field is out of range");
        return false;
    }
    return true;
}

/* "vt:to_timestamp"(VARCHAR, VARCHAR) -> TIMESTAMP WITH TIME ZONE */
void eng_pg_to_timestamp(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector sv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector fv = duckdb_data_chunk_get_vector(in, 1);
    duckdb_string_t *s = duckdb_vector_get_data(sv), *f = duckdb_vector_get_data(fv);
    uint64_t *vs = duckdb_vector_get_validity(sv), *vf = duckdb_vector_get_validity(fv);
    int64_t *o = duckdb_vector_get_data(out);
    duckdb_vector_ensure_validity_writable(out);
    uint64_t *ov = duckdb_vector_get_validity(out);
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(vs, i) || !duckdb_validity_row_is_valid(vf, i)) {
            duckdb_validity_set_row_invalid(ov, i);
            continue;
        }
        if (duckdb_string_t_length(f[i]) > VT_SQL_MAX_FORMAT_WIDTH ||
            duckdb_string_t_length(s[i]) > VT_SQL_MAX_FORMAT_WIDTH) {
            eng_fn_limit(info, "to_timestamp", "text or template over the limit of %d bytes",
                 VT_SQL_MAX_FORMAT_WIDTH);
            return;
        }
        struct parsed t;
        char why[128];
        if (!pg_parse(duckdb_string_t_data(&s[i]), duckdb_string_t_length(s[i]), duckdb_string_t_data(&f[i]),
                      duckdb_string_t_length(f[i]), &t, why, sizeof why)) {
            eng_fn_fail(info, "to_timestamp", "%s", why);
            return;
        }
        int64_t days = t.doy ? time_days_from_civil(t.year, 1, 1) + t.doy - 1
                             : time_days_from_civil(t.year, (int)t.month, (int)t.day);
        o[i] = ((days * 24 + t.hour) * 60 + t.minute - t.offset_min) * 60000000LL +
               t.second * 1000000LL + t.micros;
    }
}
