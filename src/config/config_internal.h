/*
 * Shared by the files of src/config/ only: typed reading of one configuration
 * block (a TOML table, or a JSON object converted to one) with messages that
 * name the file, line and dotted key, and unknown-key detection with a
 * "did you mean" suggestion.
 */
#ifndef VT_CONFIG_INTERNAL_H
#define VT_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "config/toml.h"
#include "util/errors.h"

/* Where values come from: a file (messages "file:line: key: ...") or a JSON
 * request body (messages "key: ..." naming the JSON field). */
struct cfg_ctx {
    const char *file;   /* display name; NULL for JSON */
    const char *dir;    /* directory relative paths resolve against; NULL = none */
    struct vt_error *err;
};

/* One table being read. `t` is NULL when the block is absent: every getter
 * then leaves its default in place. */
struct cfg_blk {
    struct cfg_ctx *cx;
    const struct toml_value *t;
    char path[128]; /* "server.quack", "dataset[1].index", "" for a JSON root */
    int line;       /* line of the block, for messages about the block itself */
};

/* Records "file:line: path.key: message" (or "path.key: message" for JSON)
 * with `code` and returns false. `line` <= 0 means the line of `key` in the
 * block when present, else the block's own line. */
bool cfg_fail(const struct cfg_blk *b, const char *key, int line, enum vt_err code,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A block nested in b under `key` (absent -> out->t = NULL). Fails when the
 * key holds something other than a table. */
bool cfg_sub(const struct cfg_blk *b, const char *key, struct cfg_blk *out);
/* The root block of a document or JSON object. */
void cfg_root(struct cfg_ctx *cx, const struct toml_value *t, const char *path, int line,
              struct cfg_blk *out);

/* Fails on the first key of b that is not in `allowed` (NULL-terminated). */
bool cfg_check_keys(const struct cfg_blk *b, const char *const *allowed);

bool cfg_has(const struct cfg_blk *b, const char *key);
int cfg_line_of(const struct cfg_blk *b, const char *key);

/* Getters: absent keys leave *out untouched and succeed. */
enum { CFG_NONEMPTY = 1 };
bool cfg_str(const struct cfg_blk *b, const char *key, unsigned flags, char **out);
bool cfg_bool(const struct cfg_blk *b, const char *key, bool *out);
bool cfg_int(const struct cfg_blk *b, const char *key, int64_t min, int64_t max, int64_t *out);
bool cfg_int32(const struct cfg_blk *b, const char *key, int min, int max, int *out);
/* A list of non-empty strings; a given list replaces the default. */
bool cfg_strvec(const struct cfg_blk *b, const char *key, struct strvec *out);
/* One of `names` (NULL-terminated); *out is the index. */
bool cfg_enum(const struct cfg_blk *b, const char *key, const char *const *names, int *out);
/* A humantime string; min_ms bounds it from below. */
bool cfg_duration(const struct cfg_blk *b, const char *key, int64_t min_ms, int64_t *out_ms);
/* A path: absolute as is, relative joined to cx->dir. */
bool cfg_path(const struct cfg_blk *b, const char *key, char **out);

/* Joins dir and a relative path (absolute paths are copied). malloc'd. */
char *cfg_resolve_against(const char *dir, const char *path);

/* Closest of `names` to `word` within a small edit distance, or NULL. */
const char *cfg_suggest(const char *word, const char *const *names);


/* Replaces *dst by a copy of src (NULL allowed). -1 on OOM. */
int cfg_set_str(char **dst, const char *src);

/* The dataset block reader shared by the file and JSON paths. */
bool cfg_read_dataset(const struct cfg_blk *b, struct vt_dataset_config *ds);
/* Reads root.dataset (an array of tables) into a malloc'd array; checks
 * duplicate names and, when `deps_in_file`, that depends_on names datasets of
 * the same file without cycles. */
bool cfg_read_dataset_array(const struct cfg_blk *root, bool deps_in_file,
                            struct vt_dataset_config **out, size_t *out_n);

struct strbuf;
/* Appends s as a TOML basic string, quotes included. */
void cfg_toml_quote(struct strbuf *sb, const char *s);

/* Converts a jansson object into a toml_value tree (JSON null fields dropped). */
struct toml_value *cfg_json_to_toml(const void *json, struct vt_error *err);

#endif
