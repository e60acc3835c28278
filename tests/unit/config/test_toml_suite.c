/*
 * Runs the public toml-test corpus (TOML 1.0.0 cases) against our parser.
 *
 * The corpus is read in place from ../shared/toml-test (relative to the repo
 * root, where unit tests run) or from $VT_TOML_TEST_DIR. Every file listed in
 * tests/files-toml-1.0.0 is a case: valid/X.toml must parse to the tagged JSON
 * in valid/X.json; invalid/X.toml must be rejected. A missing corpus is a
 * failure, not a skip: a silently skipped conformance suite proves nothing.
 *
 * jansson cannot hold NUL in object keys, so before loading an expected file
 * every \u0000 escape is rewritten to U+FDD0 (a noncharacter the corpus does
 * not use) and our strings and keys get the same mapping when compared.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "config/toml.h"
#include "testlib.h"
#include "util/strbuf.h"

#define NUL_STANDIN "\xEF\xB7\x90" /* U+FDD0 */

static char *read_all(const char *path, size_t *out_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct strbuf sb;
    sb_init(&sb, 0);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sb_add(&sb, buf, n);
    fclose(f);
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb, out_len);
}

/* Rewrites \u0000 escapes in JSON text to \ufdd0 (see the file comment). */
static char *json_nul_standin(const char *s, size_t len)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\' && i + 1 < len) {
            if (i + 5 < len && memcmp(s + i + 1, "u0000", 5) == 0) {
                sb_adds(&sb, "\\ufdd0");
                i += 5;
            } else {
                sb_add(&sb, s + i, 2);
                i++;
            }
            continue;
        }
        sb_addc(&sb, s[i]);
    }
    size_t n;
    return sb_detach(&sb, &n);
}

/* Our bytes with NUL mapped to the stand-in, for comparison and json lookup. */
static void map_nul(struct strbuf *out, const char *s, size_t len)
{
    sb_reset(out);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\0')
            sb_adds(out, NUL_STANDIN);
        else
            sb_addc(out, s[i]);
    }
    sb_adds(out, ""); /* a buffer even for an empty string */
}

/* An independent reading of the expected datetime text (RFC 3339 shapes). */
struct dt {
    int y, mo, d, h, mi, s;
    long ns;
    bool has_off;
    int off;
};

static bool parse_expected_dt(const char *s, const char *type, struct dt *o)
{
    memset(o, 0, sizeof *o);
    const char *t = s;
    if (strcmp(type, "time-local") != 0) {
        if (sscanf(s, "%4d-%2d-%2d", &o->y, &o->mo, &o->d) != 3)
            return false;
        if (strcmp(type, "date-local") == 0)
            return strlen(s) == 10;
        t = s + 11;
    }
    if (sscanf(t, "%2d:%2d:%2d", &o->h, &o->mi, &o->s) != 3)
        return false;
    t += 8;
    if (*t == '.') {
        t++;
        long ns = 0;
        int nd = 0;
        while (*t >= '0' && *t <= '9') {
            if (nd < 9) {
                ns = ns * 10 + (*t - '0');
                nd++;
            }
            t++;
        }
        while (nd++ < 9)
            ns *= 10;
        o->ns = ns;
    }
    if (strcmp(type, "datetime") == 0) {
        o->has_off = true;
        if (*t == 'Z' || *t == 'z') {
            o->off = 0;
            t++;
        } else {
            int hh, mm;
            if ((*t != '+' && *t != '-') || sscanf(t + 1, "%2d:%2d", &hh, &mm) != 2)
                return false;
            o->off = (hh * 60 + mm) * (*t == '-' ? -1 : 1);
            t += 6;
        }
    }
    return *t == '\0';
}

static const char *tag_of(enum toml_type t)
{
    switch (t) {
    case TOML_STRING: return "string";
    case TOML_INTEGER: return "integer";
    case TOML_FLOAT: return "float";
    case TOML_BOOL: return "bool";
    case TOML_OFFSET_DATETIME: return "datetime";
    case TOML_LOCAL_DATETIME: return "datetime-local";
    case TOML_LOCAL_DATE: return "date-local";
    case TOML_LOCAL_TIME: return "time-local";
    default: return "?";
    }
}

static bool compare(const struct toml_value *v, json_t *j, char *why, size_t whylen);

static bool compare_scalar(const struct toml_value *v, json_t *j, char *why, size_t whylen)
{
    json_t *jt = json_object_get(j, "type"), *jv = json_object_get(j, "value");
    if (!json_is_object(j) || !json_is_string(jt) || !json_is_string(jv)) {
        snprintf(why, whylen, "expected a table/array in JSON, got a %s", tag_of(v->type));
        return false;
    }
    const char *type = json_string_value(jt), *val = json_string_value(jv);
    if (strcmp(type, tag_of(v->type)) != 0) {
        snprintf(why, whylen, "type %s, expected %s (%s)", tag_of(v->type), type, val);
        return false;
    }
    switch (v->type) {
    case TOML_STRING: {
        struct strbuf sb;
        sb_init(&sb, 0);
        map_nul(&sb, v->u.string.ptr, v->u.string.len);
        bool eq = sb.len == json_string_length(jv) && memcmp(sb.buf, val, sb.len) == 0;
        if (!eq)
            snprintf(why, whylen, "string \"%s\", expected \"%s\"", sb.buf, val);
        sb_release(&sb);
        return eq;
    }
    case TOML_INTEGER: {
        errno = 0;
        long long want = strtoll(val, NULL, 10);
        if (errno || want != v->u.integer) {
            snprintf(why, whylen, "integer %lld, expected %s", (long long)v->u.integer, val);
            return false;
        }
        return true;
    }
    case TOML_FLOAT: {
        double got = v->u.floating;
        bool eq;
        if (strcmp(val, "nan") == 0 || strcmp(val, "+nan") == 0 || strcmp(val, "-nan") == 0)
            eq = isnan(got);
        else if (strcmp(val, "inf") == 0 || strcmp(val, "+inf") == 0)
            eq = isinf(got) && got > 0;
        else if (strcmp(val, "-inf") == 0)
            eq = isinf(got) && got < 0;
        else
            eq = strtod(val, NULL) == got;
        if (!eq)
            snprintf(why, whylen, "float %.17g, expected %s", got, val);
        return eq;
    }
    case TOML_BOOL:
        if (strcmp(val, v->u.boolean ? "true" : "false") != 0) {
            snprintf(why, whylen, "bool %d, expected %s", v->u.boolean, val);
            return false;
        }
        return true;
    default: {
        struct dt e;
        const struct toml_datetime *d = &v->u.datetime;
        if (!parse_expected_dt(val, type, &e)) {
            snprintf(why, whylen, "cannot read expected datetime %s", val);
            return false;
        }
        bool eq = e.y == d->year && e.mo == d->month && e.d == d->day && e.h == d->hour &&
                  e.mi == d->minute && e.s == d->second && e.ns == d->nanosecond &&
                  e.has_off == d->has_offset && (!e.has_off || e.off == d->offset_minutes);
        if (!eq)
            snprintf(why, whylen,
                     "datetime %04d-%02d-%02d %02d:%02d:%02d.%09d off=%d, expected %s",
                     d->year, d->month, d->day, d->hour, d->minute, d->second, d->nanosecond,
                     d->offset_minutes, val);
        return eq;
    }
    }
}

static bool compare(const struct toml_value *v, json_t *j, char *why, size_t whylen)
{
    if (v->type == TOML_TABLE) {
        if (!json_is_object(j) || json_object_size(j) != v->u.table.len) {
            snprintf(why, whylen, "table with %zu keys, expected %s with %zu", v->u.table.len,
                     json_is_object(j) ? "object" : "non-object", json_object_size(j));
            return false;
        }
        struct strbuf key;
        sb_init(&key, 0);
        bool ok = true;
        for (size_t i = 0; ok && i < v->u.table.len; i++) {
            const struct toml_keyval *kv = &v->u.table.items[i];
            map_nul(&key, kv->key, kv->key_len);
            json_t *child = json_object_getn(j, key.buf, key.len);
            if (!child) {
                snprintf(why, whylen, "unexpected key \"%s\"", key.buf);
                ok = false;
            } else if (!compare(kv->value, child, why, whylen)) {
                size_t n = strlen(why);
                snprintf(why + n, whylen - n, " (in key \"%s\")", key.buf);
                ok = false;
            }
        }
        sb_release(&key);
        return ok;
    }
    if (v->type == TOML_ARRAY) {
        if (!json_is_array(j) || json_array_size(j) != v->u.array.len) {
            snprintf(why, whylen, "array of %zu, expected %s of %zu", v->u.array.len,
                     json_is_array(j) ? "array" : "non-array", json_array_size(j));
            return false;
        }
        for (size_t i = 0; i < v->u.array.len; i++)
            if (!compare(v->u.array.items[i], json_array_get(j, i), why, whylen))
                return false;
        return true;
    }
    return compare_scalar(v, j, why, whylen);
}

static const char *corpus_dir(void)
{
    const char *d = getenv("VT_TOML_TEST_DIR");
    if (d && *d)
        return d;
    struct stat st;
    if (stat("../shared/toml-test", &st) == 0)
        return "../shared/toml-test";
    return "/work/shared/toml-test"; /* where the shared corpus lives on these machines */
}

TEST(toml_test_corpus_1_0_0)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/files-toml-1.0.0", corpus_dir());
    size_t list_len;
    char *list = read_all(path, &list_len);
    if (!list) {
        fprintf(stderr, "  toml-test corpus not found at %s (set VT_TOML_TEST_DIR)\n", path);
        CHECK(list != NULL);
        return;
    }
    int valid_ok = 0, valid_n = 0, invalid_ok = 0, invalid_n = 0;
    char *save = NULL;
    for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t ll = strlen(line);
        if (ll < 5 || strcmp(line + ll - 5, ".toml") != 0)
            continue;
        bool valid = strncmp(line, "valid/", 6) == 0;
        snprintf(path, sizeof path, "%s/tests/%s", corpus_dir(), line);
        size_t len;
        char *text = read_all(path, &len);
        if (!text) {
            fprintf(stderr, "  FAIL %s: cannot read\n", line);
            valid ? valid_n++ : invalid_n++;
            continue;
        }
        char err[512];
        struct toml_value *root = toml_parse(text, len, err, sizeof err);
        if (!valid) {
            invalid_n++;
            if (root)
                fprintf(stderr, "  FAIL %s: accepted, should be rejected\n", line);
            else
                invalid_ok++;
        } else {
            valid_n++;
            if (!root) {
                fprintf(stderr, "  FAIL %s: %s\n", line, err);
            } else {
                snprintf(path + strlen(path) - 5, 6, ".json");
                size_t jlen;
                char *jtext = read_all(path, &jlen);
                char *mapped = jtext ? json_nul_standin(jtext, jlen) : NULL;
                json_error_t jerr;
                json_t *want = mapped ? json_loads(mapped, JSON_ALLOW_NUL, &jerr) : NULL;
                char why[1024] = "";
                if (!want)
                    fprintf(stderr, "  FAIL %s: cannot load expected JSON\n", line);
                else if (!compare(root, want, why, sizeof why))
                    fprintf(stderr, "  FAIL %s: %s\n", line, why);
                else
                    valid_ok++;
                json_decref(want);
                free(mapped);
                free(jtext);
            }
        }
        toml_free(root);
        free(text);
    }
    free(list);
    printf("toml-test 1.0.0: valid %d/%d, invalid %d/%d, total %d/%d\n", valid_ok, valid_n,
           invalid_ok, invalid_n, valid_ok + invalid_ok, valid_n + invalid_n);
    CHECK(valid_n > 0 && invalid_n > 0);
    CHECK_EQ_INT(valid_ok, valid_n);
    CHECK_EQ_INT(invalid_ok, invalid_n);
}

RUN_TESTS(TEST_CASE(toml_test_corpus_1_0_0))
