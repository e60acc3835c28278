/*
 * Internals shared by the files of src/query/ (not part of the public API):
 * the value classes a column type falls into, value typing from JSON, the
 * ISO-8601 parser, and message helpers.
 */
#ifndef VT_QUERY_QUERY_INT_H
#define VT_QUERY_QUERY_INT_H

#include "query/query.h"

/* What a predicate value against a column of this type may be, and how it is
 * cast. One class per distinct rule, not per DuckDB type. */
enum query_class {
    QC_BOOL,
    QC_INT,     /* every integer width up to HUGEINT, signed or not */
    QC_REAL,    /* FLOAT: values are rounded to REAL */
    QC_DOUBLE,
    QC_DECIMAL, /* DECIMAL and UHUGEINT: compared with DOUBLE values only */
    QC_STRING,  /* VARCHAR */
    QC_ENUM,    /* compared as VARCHAR */
    QC_UUID,
    QC_DATE,
    QC_TIME,
    QC_TIMETZ,
    QC_TS,      /* TIMESTAMP, TIMESTAMP_S, TIMESTAMP_MS */
    QC_TS_NS,
    QC_TSTZ,
    QC_OTHER,   /* BLOB, INTERVAL, BIT, BIGNUM, TIME_NS...: null tests only */
    QC_NESTED,  /* LIST, STRUCT, MAP, ARRAY, UNION: null tests, group_by, distinct */
};

enum query_class query_class_of(duckdb_type t);
bool query_class_numeric(enum query_class c);
/* Usable by order_by, min and max. */
bool query_class_orderable(enum query_class c);
/* Accepts range/equality operators with a value. */
bool query_class_comparable(enum query_class c);
/* DuckDB's name for a type id, for messages ("INTEGER"). */
const char *query_type_name(duckdb_type t);
/* The column's type text for messages: type_sql or the type id's name. */
const char *query_column_type_label(const struct query_column *c);

/* An integer value for a numeric column of class `c`, cast as
 * query_value_from_json casts a JSON integer (BIGINT; FLOAT for REAL; a
 * DOUBLE for DECIMAL); false for any other class. */
bool query_value_int(enum query_class c, int64_t i, struct query_value *out);

/* Types one JSON value (already checked non-null) for a column of class `c`.
 * `slot` names it in messages ("predicates[0].val"); `what` names the column
 * ("column \"price\" (DOUBLE)"). Strings are copied into the arena. */
enum vt_err query_value_from_json(struct arena *a, enum query_class c, const json_t *v,
                                  const char *slot, const char *what, struct query_value *out,
                                  struct vt_error *err);

/* The paging fields of r (limit, page, page_size, offset, max_rows) from
 * the request's validated limit (-1: none), page and page_size, normalised
 * for r->mode (query_parse and query_small_parse). */
void query_paging_apply(struct query_request *r, const struct query_options *opts,
                        int64_t limit, int64_t page, int64_t page_size);

/* A parsed ISO-8601 date, date-time or time. */
struct query_iso {
    bool has_date, has_time, has_offset;
    int year, month, day, hour, minute, second;
    int nanos;       /* fraction as nanoseconds */
    int frac_digits; /* digits the client wrote */
    int offset_sec;  /* east of UTC */
};

/* Parses the whole of s[0..n). On failure returns false and sets *why to a
 * short reason ("month out of range"). */
bool query_iso_parse(const char *s, size_t n, struct query_iso *out, const char **why);

/* A name fit for an error message: quoted, cut to 64 bytes on a UTF-8
 * boundary. The struct lives until the end of the full expression, so
 * QUERY_SHOW(x) can be passed straight to a printf-style call. */
struct query_shown {
    char s[80];
};
struct query_shown query_show(const char *s, size_t n);
#define QUERY_SHOW(str) (query_show((str), strlen(str)).s)

/* The closest of `cands` to `s` by edit distance (case-insensitive), when it
 * is close enough to be a likely typo; else NULL. */
const char *query_suggest(const char *s, const char *const *cands, size_t n);

#endif
