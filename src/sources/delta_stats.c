/*
 * Per-file statistics of a Delta log (add.stats, issue 25 item 4): the JSON
 * text {"numRecords", "minValues", "maxValues", "nullCount"} turned into what
 * a lazy generation plans with (lazy.c), so a Delta table's files need no
 * footer read for counts and pruning. The text comes from the table's log,
 * so this is input: tests/fuzz/fuzz_delta_stats.c and
 * tests/unit/sources/test_delta_stats.c.
 *
 * Values come out as the text lazy_parse_val reads (canonical forms), or as
 * "unknown" whenever a writer may have weakened them:
 *   strings     writers keep a prefix (Spark and delta-rs: 32 characters): a
 *               prefix is still a lower bound, but not an upper one, so a
 *               maximum of 32 characters or more is dropped
 *   timestamps  written in milliseconds (Spark) with a zone offset; the
 *               maximum is widened to the end of its last written digit;
 *               a TIMESTAMP WITH TIME ZONE value without a zone (or a
 *               timestamp_ntz one with a zone) is not understood
 *   numbers     a JSON number of the wrong kind (a fraction for an integer
 *               column) is not understood
 * Anything not understood is unknown, which only ever means "may match".
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/delta.h"
#include "sources/sources_internal.h"
#include "util/timeutil.h"

/* Characters (UTF-8 code points) of a string. */
static size_t code_points(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* Canonical text of a timestamp bound (what lazy_parse_val reads). */
static char *ts_text(int64_t us)
{
    int64_t days = us >= 0 ? us / 86400000000LL : -((-us + 86400000000LL - 1) / 86400000000LL);
    int64_t rem = us - days * 86400000000LL;
    int64_t y;
    int m, d;
    time_civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999)
        return NULL;
    char buf[128];
    snprintf(buf, sizeof buf, "%04lld-%02d-%02d %02lld:%02lld:%02lld.%06lld", (long long)y, m,
             d, (long long)(rem / 3600000000LL), (long long)(rem / 60000000LL % 60),
             (long long)(rem / 1000000LL % 60), (long long)(rem % 1000000LL));
    return strdup(buf);
}

/* One bound of a column as canonical text, or NULL (unknown). */
static char *bound_text(const json_t *v, const char *type, enum lazy_class c, bool is_max)
{
    char buf[64];
    switch (c) {
    case LAZY_C_INT:
        if (!json_is_integer(v))
            return NULL;
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        return strdup(buf);
    case LAZY_C_FLOAT:
    case LAZY_C_REAL:
        if (json_is_integer(v))
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v))
            snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        else
            return NULL;
        return strdup(buf);
    case LAZY_C_BOOL:
        return json_is_boolean(v) ? strdup(json_is_true(v) ? "true" : "false") : NULL;
    case LAZY_C_DATE: {
        if (!json_is_string(v) || json_string_length(v) != 10)
            return NULL;
        struct lazy_val x = lazy_parse_val(c, json_string_value(v), 10);
        return x.kind ? strdup(json_string_value(v)) : NULL;
    }
    case LAZY_C_TS: {
        if (!json_is_string(v))
            return NULL;
        bool with_tz = type && strstr(type, "TIME ZONE") != NULL;
        struct lazy_ts t;
        if (!lazy_parse_timestamp(json_string_value(v), json_string_length(v), &t))
            return NULL;
        if (t.zoned != with_tz && json_string_length(v) != 10)
            return NULL; /* a zone where none belongs, or none where one does */
        int64_t us = t.us;
        int digits = t.digits;
        if (is_max) {
            int64_t widen = 1;
            for (int i = digits; i < 6; i++)
                widen *= 10;
            us += widen - 1; /* the last written digit's whole span */
        }
        return ts_text(us);
    }
    case LAZY_C_STR: {
        if (!json_is_string(v))
            return NULL;
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (memchr(s, '\0', n) || (is_max && code_points(s, n) >= 32))
            return NULL;
        return strdup(s);
    }
    case LAZY_C_NONE:
        break;
    }
    return NULL;
}

bool delta_stats_parse(const char *text, size_t len, const char *const *keys,
                       const char *const *types, size_t n, int64_t *num_records, char **mins,
                       char **maxs, int64_t *nulls)
{
    for (size_t c = 0; c < n; c++) {
        mins[c] = maxs[c] = NULL;
        nulls[c] = -1;
    }
    *num_records = -1;
    if (!text)
        return false;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    const json_t *nr = root ? json_object_get(root, "numRecords") : NULL;
    if (!json_is_integer(nr) || json_integer_value(nr) < 0) {
        json_decref(root);
        return false;
    }
    *num_records = json_integer_value(nr);
    const json_t *lo = json_object_get(root, "minValues");
    const json_t *hi = json_object_get(root, "maxValues");
    const json_t *nc = json_object_get(root, "nullCount");
    for (size_t c = 0; c < n; c++) {
        if (!keys[c])
            continue;
        enum lazy_class cls = lazy_class_of(types[c]);
        const json_t *k = json_object_get(nc, keys[c]);
        if (json_is_integer(k) && json_integer_value(k) >= 0 &&
            json_integer_value(k) <= *num_records)
            nulls[c] = json_integer_value(k);
        const json_t *a = json_object_get(lo, keys[c]);
        const json_t *b = json_object_get(hi, keys[c]);
        if (a && b && cls != LAZY_C_NONE) {
            mins[c] = bound_text(a, types[c], cls, false);
            maxs[c] = bound_text(b, types[c], cls, true);
        }
    }
    json_decref(root);
    return true;
}

void delta_stats_free(struct source_file_stats *fs, size_t n, size_t n_cols)
{
    for (size_t i = 0; fs && i < n; i++) {
        for (size_t c = 0; c < n_cols; c++) {
            free(fs[i].mins ? fs[i].mins[c] : NULL);
            free(fs[i].maxs ? fs[i].maxs[c] : NULL);
        }
        free(fs[i].mins);
        free(fs[i].maxs);
        free(fs[i].nulls);
    }
    free(fs);
}

struct source_file_stats *delta_stats_for_files(const struct delta_add *const *adds, size_t n,
                                                const char *const *keys,
                                                const char *const *types, size_t n_cols)
{
    struct source_file_stats *fs = calloc(n ? n : 1, sizeof *fs);
    if (!fs)
        return NULL;
    size_t cap = n_cols ? n_cols : 1;
    for (size_t i = 0; i < n; i++) {
        fs[i].rows = -1;
        if (!adds[i]->stats)
            continue;
        fs[i].mins = calloc(cap, sizeof *fs[i].mins);
        fs[i].maxs = calloc(cap, sizeof *fs[i].maxs);
        fs[i].nulls = calloc(cap, sizeof *fs[i].nulls);
        if (!fs[i].mins || !fs[i].maxs || !fs[i].nulls) {
            delta_stats_free(fs, n, n_cols);
            return NULL;
        }
        delta_stats_parse(adds[i]->stats, strlen(adds[i]->stats), keys, types, n_cols,
                          &fs[i].rows, fs[i].mins, fs[i].maxs, fs[i].nulls);
    }
    return fs;
}
