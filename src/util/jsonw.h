/*
 * A small JSON writer over struct strbuf for API bodies (status entries,
 * schemas, errors). It tracks nesting so commas are always right. Query rows
 * do not use it: they go through the specialised encoder in src/encode/.
 */
#ifndef VT_UTIL_JSONW_H
#define VT_UTIL_JSONW_H

#include <stdbool.h>
#include <stdint.h>

#include "util/strbuf.h"

#define JW_MAX_DEPTH 32

struct jw {
    struct strbuf *sb;
    int depth;
    bool need_comma[JW_MAX_DEPTH];
    bool after_key;
};

void jw_init(struct jw *w, struct strbuf *sb);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *s);          /* NULL writes null */
void jw_strn(struct jw *w, const char *s, size_t n);
void jw_int(struct jw *w, int64_t v);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
void jw_raw(struct jw *w, const char *json);       /* an already-encoded value */
void jw_rawn(struct jw *w, const char *json, size_t n);
/* key + value shorthands */
void jw_kstr(struct jw *w, const char *key, const char *s);
void jw_kint(struct jw *w, const char *key, int64_t v);
void jw_kbool(struct jw *w, const char *key, bool v);
void jw_knull(struct jw *w, const char *key);

#endif
