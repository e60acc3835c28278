/*
 * The JSON writer of jsonw.h: comma and nesting bookkeeping around strbuf.
 */
#include "util/jsonw.h"

#include <inttypes.h>
#include <string.h>

void jw_init(struct jw *w, struct strbuf *sb)
{
    memset(w, 0, sizeof *w);
    w->sb = sb;
}

/* Before any value: a comma when a sibling came before (not after a key). */
static void before_value(struct jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth > 0 && w->depth <= JW_MAX_DEPTH) {
        if (w->need_comma[w->depth - 1])
            sb_addc(w->sb, ',');
        w->need_comma[w->depth - 1] = true;
    }
}

static void open_container(struct jw *w, char c)
{
    before_value(w);
    sb_addc(w->sb, c);
    if (w->depth < JW_MAX_DEPTH)
        w->need_comma[w->depth] = false;
    w->depth++;
}

static void close_container(struct jw *w, char c)
{
    sb_addc(w->sb, c);
    if (w->depth > 0)
        w->depth--;
}

void jw_obj_begin(struct jw *w) { open_container(w, '{'); }
void jw_obj_end(struct jw *w) { close_container(w, '}'); }
void jw_arr_begin(struct jw *w) { open_container(w, '['); }
void jw_arr_end(struct jw *w) { close_container(w, ']'); }

void jw_key(struct jw *w, const char *key)
{
    before_value(w);
    sb_add_json_string(w->sb, key, strlen(key));
    sb_addc(w->sb, ':');
    w->after_key = true;
}

void jw_strn(struct jw *w, const char *s, size_t n)
{
    before_value(w);
    sb_add_json_string(w->sb, s, n);
}

void jw_str(struct jw *w, const char *s)
{
    if (!s) {
        jw_null(w);
        return;
    }
    jw_strn(w, s, strlen(s));
}

void jw_int(struct jw *w, int64_t v)
{
    before_value(w);
    sb_addf(w->sb, "%" PRId64, v);
}

void jw_bool(struct jw *w, bool v)
{
    before_value(w);
    sb_adds(w->sb, v ? "true" : "false");
}

void jw_null(struct jw *w)
{
    before_value(w);
    sb_adds(w->sb, "null");
}

void jw_raw(struct jw *w, const char *json)
{
    before_value(w);
    sb_adds(w->sb, json);
}

void jw_rawn(struct jw *w, const char *json, size_t n)
{
    before_value(w);
    sb_add(w->sb, json, n);
}

void jw_kstr(struct jw *w, const char *key, const char *s) { jw_key(w, key); jw_str(w, s); }
void jw_kint(struct jw *w, const char *key, int64_t v) { jw_key(w, key); jw_int(w, v); }
void jw_kbool(struct jw *w, const char *key, bool v) { jw_key(w, key); jw_bool(w, v); }
void jw_knull(struct jw *w, const char *key) { jw_key(w, key); jw_null(w); }
