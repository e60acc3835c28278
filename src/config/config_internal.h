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

/* Getters: absent keys leave *out untouched and succeed. CFG_NONEMPTY is
 * also a flag of the schema table (below). */
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

/* ------------------------------------------------------------ the schema
 *
 * Every configuration key is one row of cfg_schema[] (schema.c): where it
 * lives, its type, the struct field it fills, its default, its validation and
 * one line of documentation. From that one table come the parser's key lists
 * (unknown keys, "did you mean"), the defaults, freeing/copying/comparing
 * the structs, persist's TOML blocks, `vitrine init`'s template and
 * docs/configuration.md. Adding a key is one row plus its struct field.
 *
 * Rows of block "" are top-level tables; "dataset" rows describe one
 * [[dataset]] block (their offsets are into struct vt_dataset_config, every
 * other offset is into struct vt_config). A table's rows are read in table
 * order; rules run at their place in that order. */

enum cfg_type {
    CFG_T_BOOL,
    CFG_T_INT,      /* int or int64_t (by the field's size), between min and max */
    CFG_T_STR,      /* char *; with `names`, one of them (stored as the string) */
    CFG_T_PATH,     /* char *, relative paths resolved against the config file's dir */
    CFG_T_ENUM,     /* an enum field: the index of the value in `names` */
    CFG_T_STRVEC,   /* struct strvec of non-empty strings */
    CFG_T_DURATION, /* int64_t milliseconds from a humantime string, at least `min` */
    CFG_T_TABLE,    /* a sub-table: its rows have block = "<this block>.<name>" */
    CFG_T_DATASETS, /* the [[dataset]] array (rows of block "dataset") */
    CFG_T_RULE,     /* not a key: `rule` checks or derives across keys */
};

enum {
    /* CFG_NONEMPTY = 1 (strings: "" refused) */
    CFG_PATHS = 2,       /* string[]: every item is a path, resolved like CFG_T_PATH */
    CFG_SETS = 4,        /* table: the bool at `off` is set when the table is given */
    CFG_OPTIONAL = 8,    /* table: giving it turns a feature on, so the template
                          * comments its header out too */
    CFG_QUERY_ONLY = 16, /* dataset key of kind "query": in the template's query example */
    CFG_ALWAYS_WRITE = 32, /* persist writes it even when it has its default value */
    CFG_PROSE_EXAMPLE = 64, /* dataset key that does not apply to the template's example
                             * datasets (kind parquet, query): shown in prose only */
};

struct cfg_key {
    const char *block;  /* containing table: "", "server", "server.quack", "dataset.s3" */
    const char *name;   /* NULL for a rule */
    enum cfg_type type;
    size_t off, size;   /* the field (CFG_SETS tables: the "given" flag) */
    int64_t min, max;   /* CFG_T_INT bounds; CFG_T_DURATION: min in ms */
    const char *const *names; /* CFG_T_ENUM values; CFG_T_STR allowed values */
    unsigned flags;
    const char *def;    /* the default as TOML text; NULL when unset or computed */
    const char *def_doc;/* the default in words, when `def` does not say it all */
    const char *example;/* the template's value when there is no `def` */
    /* Extra validation of a given value (not run for defaults). */
    bool (*check)(const struct cfg_blk *b, const struct cfg_key *k, void *field);
    /* CFG_T_RULE: runs with the table being read and the struct it fills. */
    bool (*rule)(const struct cfg_blk *b, void *base);
    const char *doc;    /* one line; for tables, the table's description; for
                         * rules, shown in the docs' rules list (NULL: internal) */
};

extern const struct cfg_key cfg_schema[];
extern const size_t cfg_schema_len;

/* Value names of the enums (index = enum value), NULL-terminated. */
extern const char *const cfg_kind_names[];
extern const char *const cfg_index_mode_names[];
extern const char *const cfg_on_start_names[];
extern const char *const cfg_residency_names[];
extern const char *const cfg_addressing_names[];
extern const char *const cfg_partitioning_names[];

/* Whether the row describes a [[dataset]] field (block "dataset..."). */
bool cfg_key_in_dataset(const struct cfg_key *k);
/* "block.name" (or "name" at the top level) into out. */
void cfg_key_path(const struct cfg_key *k, char *out, size_t cap);

/* Reads the table `b` whose schema path is `block` into `base`: unknown keys,
 * every row in order (sub-tables recursively), rules. */
bool cfg_read_block(const struct cfg_blk *b, const char *block, void *base);
/* Applies the defaults of the rows of one root (dataset or not) to `base`;
 * paths resolve against `dir`. -1 on out of memory. */
int cfg_apply_defaults(bool dataset, void *base, const char *dir);
/* Frees / deep-copies / compares the owned fields of one root. */
void cfg_free_fields(bool dataset, void *base);
int cfg_copy_fields(bool dataset, void *dst, const void *src);
bool cfg_equal_fields(bool dataset, const void *a, const void *b);

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
