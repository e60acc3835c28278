/*
 * Lazy generations: the metadata read once when the generation is built, and
 * the per-request plan over it (issue 17).
 *
 * At build time (source_lazy_build) the Parquet footers of every file are
 * read once through DuckDB's parquet_metadata(): row groups, their row
 * counts, and per column min/max/null count and the byte range of its chunks
 * (and bloom filter). With the files' partition values (hive directories,
 * Delta partitionValues) and the SELECT's column list this is all a query
 * needs to know before reading data.
 *
 * Per request (source_lazy_plan) the predicates are held against it:
 *
 *   file        partition values are exact: eq, in, ranges, between and
 *               is_null decide a file; every predicate is also held against
 *               the file's statistics (its row groups' bounds together)
 *   row group   statistics: eq, in, ranges, between, is_null, is_not_null and
 *               neq can tell "no row matches" or "every row matches"
 *
 * A file none of whose rows can match is left out of the statement; the rest
 * are read with read_parquet over exactly them (DuckDB's own row-group
 * skipping works within). A count whose every remaining file is decided row
 * group by row group is answered from the row counts: no DuckDB at all.
 *
 * Comparisons are made in the column's domain (integers exactly; floating
 * point and decimals with a margin, since statistics print values in their
 * shortest text; dates and timestamps as microseconds; strings bytewise), and
 * anything not understood (a type, a statistic, a value) means "may match":
 * pruning can only ever skip what cannot match, never change an answer.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "engine/engine.h"
#include "sources/sources_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

enum lclass { LC_NONE, LC_BOOL, LC_INT, LC_FLOAT, LC_REAL, LC_DATE, LC_TS, LC_STR };

/* A value in a column's domain. */
struct lval {
    uint8_t kind;               /* 0 none, 1 int (i), 2 double (d), 3 string (s, n) */
    int64_t i;
    double d;
    const char *s;
    size_t n;
};

struct lstat {
    struct lval min, max;       /* kind 0: unknown */
    int64_t nulls;              /* -1 unknown */
};

struct lfile {
    char *path;                 /* what DuckDB reads */
    int64_t size;
    int64_t mtime;              /* local files read in place: seen at build */
    int64_t rows;
    size_t rg0, n_rg;           /* its row groups in lazy->rgs */
    char **pvals;               /* borrowed from the snapshot's files */
    bool pinned;                /* a link of the snapshot: cannot change */
};

struct source_lazy {
    size_t n_files, n_rgs, n_cols;
    struct lfile *files;
    int64_t *rg_rows;           /* n_rgs */
    struct lstat *stats;        /* n_rgs * n_cols; partition columns have none */
    char **col_names;           /* output columns (the snapshot's schema) */
    enum lclass *col_class;
    int *col_partition;         /* -1, or partition index */
    size_t n_partitions;
    enum lclass *part_class;
    struct lval *part_vals;     /* n_files * n_partitions, parsed */
    char *select_list;
    char **projection;          /* the dataset's `columns`, or NULL */
    size_t n_projection;
    char *strings;              /* arena of the stats' text (one block) */
    int64_t rows;
    size_t bytes;
};

/* ---- parsing ------------------------------------------------------------------ */

static enum lclass class_of(const char *type)
{
    if (!type)
        return LC_NONE;
    static const char *const ints[] = {"TINYINT",  "SMALLINT",  "INTEGER",  "BIGINT",
                                       "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (strcmp(type, ints[i]) == 0)
            return LC_INT;
    if (strcmp(type, "BOOLEAN") == 0)
        return LC_BOOL;
    if (strcmp(type, "FLOAT") == 0)
        return LC_REAL;
    if (strcmp(type, "DOUBLE") == 0 || strncmp(type, "DECIMAL", 7) == 0)
        return LC_FLOAT;
    if (strcmp(type, "DATE") == 0)
        return LC_DATE;
    if (strncmp(type, "TIMESTAMP", 9) == 0)
        return LC_TS;
    if (strcmp(type, "VARCHAR") == 0)
        return LC_STR;
    return LC_NONE;
}

static bool digits_n(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DD[ HH:MM:SS[.f...]][+00]" -> microseconds since the epoch (UTC).
 * Four-digit years only: anything else is "not understood". */
static bool parse_ts(const char *s, size_t n, int64_t *out)
{
    int y, mo, d, h = 0, mi = 0, se = 0;
    if (n < 10 || !digits_n(s, 4, &y) || s[4] != '-' || !digits_n(s + 5, 2, &mo) ||
        s[7] != '-' || !digits_n(s + 8, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    int64_t us = 0;
    size_t p = 10;
    if (p < n && (s[p] == ' ' || s[p] == 'T')) {
        if (p + 9 > n || !digits_n(s + p + 1, 2, &h) || s[p + 3] != ':' ||
            !digits_n(s + p + 4, 2, &mi) || s[p + 6] != ':' || !digits_n(s + p + 7, 2, &se))
            return false;
        p += 9;
        if (p < n && s[p] == '.') {
            int64_t scale = 100000;
            for (p++; p < n && s[p] >= '0' && s[p] <= '9'; p++, scale /= 10)
                us += scale > 0 ? (s[p] - '0') * scale : 0;
        }
    }
    if (p < n && !(n - p == 3 && s[p] == '+' && s[p + 1] == '0' && s[p + 2] == '0') &&
        !(n - p == 1 && s[p] == 'Z'))
        return false; /* another zone: not understood */
    *out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 * 1000000LL + se * 1000000LL + us;
    return true;
}

/* Text of a statistic or partition value -> a value of the class. */
static struct lval parse_val(enum lclass c, const char *s, size_t n)
{
    struct lval v = {0};
    char buf[64];
    switch (c) {
    case LC_INT:
    case LC_FLOAT:
    case LC_REAL:
        if (n == 0 || n >= sizeof buf)
            return v;
        memcpy(buf, s, n);
        buf[n] = '\0';
        char *end;
        if (c == LC_INT) {
            errno = 0;
            long long x = strtoll(buf, &end, 10);
            if (*end || errno)
                return v;
            v.kind = 1;
            v.i = x;
        } else {
            double x = strtod(buf, &end);
            if (*end || isnan(x))
                return v;
            v.kind = 2;
            v.d = x;
        }
        return v;
    case LC_BOOL:
        if (n == 4 && strncasecmp(s, "true", 4) == 0)
            v = (struct lval){.kind = 1, .i = 1};
        else if (n == 5 && strncasecmp(s, "false", 5) == 0)
            v = (struct lval){.kind = 1, .i = 0};
        return v;
    case LC_DATE:
    case LC_TS: {
        int64_t us;
        if (parse_ts(s, n, &us))
            v = (struct lval){.kind = 1, .i = us};
        return v;
    }
    case LC_STR:
        v = (struct lval){.kind = 3, .s = s, .n = n};
        return v;
    case LC_NONE:
        break;
    }
    return v;
}

/* A request value -> the column's domain (kind 0 when not comparable). */
static struct lval request_val(enum lclass c, const struct query_value *q)
{
    struct lval v = {0};
    switch (c) {
    case LC_INT:
    case LC_FLOAT:
    case LC_REAL:
        if (q->kind == QUERY_VALUE_INT64)
            v = (struct lval){.kind = 1, .i = q->u.i};
        else if (q->kind == QUERY_VALUE_DOUBLE && !isnan(q->u.d))
            v = (struct lval){.kind = 2, .d = q->u.d};
        break;
    case LC_BOOL:
        if (q->kind == QUERY_VALUE_BOOL)
            v = (struct lval){.kind = 1, .i = q->u.b};
        break;
    case LC_DATE:
    case LC_TS:
        if (q->kind == QUERY_VALUE_VARCHAR)
            v = parse_val(LC_TS, q->u.s.ptr, q->u.s.len);
        break;
    case LC_STR:
        if (q->kind == QUERY_VALUE_VARCHAR)
            v = (struct lval){.kind = 3, .s = q->u.s.ptr, .n = q->u.s.len};
        break;
    case LC_NONE:
        break;
    }
    return v;
}

/* a <=> b in the column's domain: -1, 0, 1, or 2 when not comparable. The
 * margin of floating-point classes makes "equal" wide: values within it may
 * be equal, so they never decide a file away. */
static int cmp(enum lclass c, const struct lval *a, const struct lval *b)
{
    if (!a->kind || !b->kind)
        return 2;
    if (a->kind == 3 || b->kind == 3) {
        if (a->kind != 3 || b->kind != 3)
            return 2;
        size_t n = a->n < b->n ? a->n : b->n;
        int r = memcmp(a->s, b->s, n);
        if (r)
            return r < 0 ? -1 : 1;
        return a->n < b->n ? -1 : a->n > b->n ? 1 : 0;
    }
    if (a->kind == 1 && b->kind == 1)
        return a->i < b->i ? -1 : a->i > b->i ? 1 : 0;
    long double x = a->kind == 1 ? (long double)a->i : a->d;
    long double y = b->kind == 1 ? (long double)b->i : b->d;
    long double margin = (fabsl(x) + fabsl(y)) * (c == LC_REAL ? 1e-6L : 1e-12L);
    if (x < y - margin)
        return -1;
    if (x > y + margin)
        return 1;
    return 0;
}

/* ---- verdicts ------------------------------------------------------------------- */

enum verdict { V_SOME, V_NONE, V_ALL };

struct bounds {
    const struct lval *min, *max;
    int64_t nulls, rows;        /* nulls -1 unknown */
};

static enum verdict cmp_verdict(enum lclass c, enum query_op op, const struct lval *v,
                                const struct bounds *b)
{
    int lo = cmp(c, v, b->min), hi = cmp(c, v, b->max); /* v vs min, v vs max */
    bool nonull = b->nulls == 0;
    switch (op) {
    case QUERY_OP_EQ:
        if (lo == -1 || hi == 1)
            return V_NONE;
        if (lo == 0 && hi == 0 && nonull && c != LC_FLOAT && c != LC_REAL)
            return V_ALL;
        return V_SOME;
    case QUERY_OP_NEQ:
        if (lo == 0 && hi == 0 && c != LC_FLOAT && c != LC_REAL)
            return V_NONE; /* only v (and NULLs, which never match) */
        if ((lo == -1 || hi == 1) && nonull)
            return V_ALL;
        return V_SOME;
    case QUERY_OP_GT: /* col > v */
        if (hi == 1 || hi == 0)
            return hi == 0 && (c == LC_FLOAT || c == LC_REAL) ? V_SOME : V_NONE;
        if (lo == -1 && nonull)
            return V_ALL;
        return V_SOME;
    case QUERY_OP_GTE:
        if (hi == 1)
            return V_NONE;
        if ((lo == -1 || (lo == 0 && c != LC_FLOAT && c != LC_REAL)) && nonull)
            return V_ALL;
        return V_SOME;
    case QUERY_OP_LT: /* col < v */
        if (lo == -1 || lo == 0)
            return lo == 0 && (c == LC_FLOAT || c == LC_REAL) ? V_SOME : V_NONE;
        if (hi == 1 && nonull)
            return V_ALL;
        return V_SOME;
    case QUERY_OP_LTE:
        if (lo == -1)
            return V_NONE;
        if ((hi == 1 || (hi == 0 && c != LC_FLOAT && c != LC_REAL)) && nonull)
            return V_ALL;
        return V_SOME;
    default:
        return V_SOME;
    }
}

static enum verdict pred_verdict(enum lclass c, const struct query_pred *p,
                                 const struct bounds *b)
{
    if (b->rows == 0)
        return V_NONE;
    bool all_null = b->nulls >= 0 && b->nulls == b->rows;
    switch (p->op) {
    case QUERY_OP_IS_NULL:
        if (b->nulls == 0)
            return V_NONE;
        return all_null ? V_ALL : V_SOME;
    case QUERY_OP_IS_NOT_NULL:
        if (all_null)
            return V_NONE;
        return b->nulls == 0 ? V_ALL : V_SOME;
    case QUERY_OP_LIKE:
    case QUERY_OP_ILIKE:
        return all_null ? V_NONE : V_SOME;
    default:
        break;
    }
    if (all_null)
        return V_NONE; /* comparisons never match NULL */
    if (c == LC_NONE)
        return V_SOME;
    if (p->op == QUERY_OP_IN) {
        enum verdict acc = V_NONE;
        const struct query_value *items = p->vals;
        size_t n = p->nvals;
        if (n == 1 && items[0].kind == QUERY_VALUE_LIST) {
            items = items[0].u.list.items;
            n = items ? p->vals[0].u.list.n : 0;
        }
        for (size_t i = 0; i < n && acc != V_ALL; i++) {
            struct lval v = request_val(c, &items[i]);
            if (!v.kind)
                return V_SOME;
            enum verdict one = cmp_verdict(c, QUERY_OP_EQ, &v, b);
            if (one != V_NONE)
                acc = one;
        }
        return acc;
    }
    if (p->op == QUERY_OP_BETWEEN && p->nvals == 2) {
        struct lval lo = request_val(c, &p->vals[0]), hi = request_val(c, &p->vals[1]);
        if (!lo.kind || !hi.kind)
            return V_SOME;
        enum verdict a = cmp_verdict(c, QUERY_OP_GTE, &lo, b);
        enum verdict z = cmp_verdict(c, QUERY_OP_LTE, &hi, b);
        if (a == V_NONE || z == V_NONE)
            return V_NONE;
        return a == V_ALL && z == V_ALL ? V_ALL : V_SOME;
    }
    if (p->nvals != 1)
        return V_SOME;
    struct lval v = request_val(c, &p->vals[0]);
    if (!v.kind)
        return V_SOME;
    return cmp_verdict(c, p->op, &v, b);
}

/* ---- building ------------------------------------------------------------------- */

static void lazy_free(struct source_lazy *lz)
{
    if (!lz)
        return;
    for (size_t i = 0; i < lz->n_files; i++)
        free(lz->files[i].path);
    free(lz->files);
    free(lz->rg_rows);
    free(lz->stats);
    for (size_t c = 0; c < lz->n_cols; c++)
        free(lz->col_names ? lz->col_names[c] : NULL);
    free(lz->col_names);
    free(lz->col_class);
    free(lz->col_partition);
    free(lz->part_class);
    free(lz->part_vals);
    free(lz->select_list);
    for (size_t i = 0; i < lz->n_projection; i++)
        free(lz->projection[i]);
    free(lz->projection);
    free(lz->strings);
    free(lz);
}

void source_lazy_destroy(struct source_lazy *lz)
{
    lazy_free(lz);
}

struct meta_row {
    size_t file;
    int64_t rg, rows;
    char *leaf;
    char *min, *max;            /* NULL: none */
    int64_t nulls;
};

struct meta_acc {
    struct meta_row *rows;
    size_t n, cap;
    const struct source_snapshot *snap;
    char **sorted;              /* paths sorted, with their index after the NUL */
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *value_text(duckdb_result *res, idx_t col, idx_t row)
{
    if (duckdb_value_is_null(res, col, row))
        return NULL;
    char *v = duckdb_value_varchar(res, col, row);
    char *copy = v ? strdup(v) : NULL;
    duckdb_free(v);
    return copy;
}

/* The output column a leaf path of the files belongs to ("s, a" -> "s"). */
static int leaf_column(const struct source_lazy *lz, const char *const *file_cols,
                       const char *leaf)
{
    int best = -1;
    size_t best_len = 0;
    for (size_t c = 0; c < lz->n_cols; c++) {
        const char *f = file_cols[c];
        if (!f)
            continue;
        size_t n = strlen(f);
        if (strncmp(leaf, f, n) == 0 && (leaf[n] == '\0' || strncmp(leaf + n, ", ", 2) == 0) &&
            n >= best_len) {
            best = (int)c;
            best_len = n;
        }
    }
    return best;
}

enum vt_err source_lazy_build(struct source_duck *duck, struct source_snapshot *snap,
                              const struct vt_dataset_config *ds,
                              const struct source_scan_column *cols, size_t n_cols,
                              const char *select_list, struct vt_error *err)
{
    struct source_lazy *lz = calloc(1, sizeof *lz);
    if (!lz)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    enum vt_err rc = VT_ERR_OK;
    size_t nf = snap->n_files, np = snap->n_partitions;
    lz->n_cols = n_cols;
    lz->n_partitions = np;
    lz->files = calloc(nf ? nf : 1, sizeof *lz->files);
    lz->col_names = calloc(n_cols ? n_cols : 1, sizeof *lz->col_names);
    lz->col_class = calloc(n_cols ? n_cols : 1, sizeof *lz->col_class);
    lz->col_partition = calloc(n_cols ? n_cols : 1, sizeof *lz->col_partition);
    lz->part_class = calloc(np ? np : 1, sizeof *lz->part_class);
    lz->part_vals = calloc(nf * (np ? np : 1) + 1, sizeof *lz->part_vals);
    lz->select_list = strdup(select_list);
    const char **file_cols = calloc(n_cols ? n_cols : 1, sizeof *file_cols);
    char **sorted = calloc(nf ? nf : 1, sizeof *sorted);
    struct meta_acc acc = {.snap = snap};
    if (!lz->files || !lz->col_names || !lz->col_class || !lz->col_partition ||
        !lz->part_class || !lz->part_vals || !lz->select_list || !file_cols || !sorted)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    lz->n_files = rc == VT_ERR_OK ? nf : 0;
    for (size_t i = 0; rc == VT_ERR_OK && i < nf; i++) {
        struct lfile *f = &lz->files[i];
        f->path = strdup(snap->files[i].path);
        f->size = snap->files[i].size;
        f->pvals = snap->files[i].partition_values;
        f->pinned = snap->pin_dir && strncmp(f->path, snap->pin_dir, strlen(snap->pin_dir)) == 0;
        struct stat st;
        if (!f->pinned && stat(f->path, &st) == 0)
            f->mtime = (int64_t)st.st_mtime * 1000000000LL + st.st_mtim.tv_nsec;
        size_t pl = strlen(f->path);
        sorted[i] = f->path ? malloc(pl + 1 + sizeof(size_t)) : NULL;
        if (!f->path || !sorted[i]) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        memcpy(sorted[i], f->path, pl + 1);
        memcpy(sorted[i] + pl + 1, &i, sizeof i);
    }
    for (size_t c = 0; rc == VT_ERR_OK && c < n_cols; c++) {
        lz->col_names[c] = strdup(cols[c].name);
        lz->col_partition[c] = cols[c].partition;
        file_cols[c] = cols[c].partition < 0 && cols[c].file ? cols[c].file->name : NULL;
        const char *type = snap->n_schema > c ? snap->schema_types[c] : NULL;
        lz->col_class[c] = class_of(type);
        if (!lz->col_names[c])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t k = 0; rc == VT_ERR_OK && k < np; k++) {
        lz->part_class[k] = class_of(snap->partition_types[k]);
        for (size_t i = 0; i < nf; i++) {
            const char *v = snap->files[i].partition_values[k];
            if (v)
                lz->part_vals[i * np + k] = parse_val(lz->part_class[k], v, strlen(v));
        }
    }
    /* The footers, once. */
    if (rc == VT_ERR_OK && nf) {
        qsort(sorted, nf, sizeof *sorted, cmp_str);
        struct strbuf sql;
        sb_init(&sql, 0);
        sb_adds(&sql, "SELECT file_name, row_group_id, row_group_num_rows, path_in_schema, "
                      "stats_min_value, stats_max_value, stats_null_count "
                      "FROM parquet_metadata([");
        for (size_t i = 0; i < nf; i++) {
            if (i)
                sb_addc(&sql, ',');
            sb_add_sql_string(&sql, lz->files[i].path);
        }
        sb_adds(&sql, "])");
        duckdb_result res;
        if (sql.overflow) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        } else if (duckdb_query(source_duck_connection(duck), sql.buf, &res) != DuckDBSuccess) {
            char text[VT_ERROR_MSG_MAX];
            rc = vt_error_set(err, VT_ERR_BUILD_FAILED, "reading the Parquet footers: %s",
                              eng_error_text(duckdb_result_error(&res), text, sizeof text));
            duckdb_destroy_result(&res);
        } else {
            idx_t n = duckdb_row_count(&res);
            acc.rows = calloc(n ? n : 1, sizeof *acc.rows);
            if (!acc.rows)
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            for (idx_t r = 0; rc == VT_ERR_OK && r < n; r++) {
                char *fname = value_text(&res, 0, r);
                char *key = fname;
                char **hit = fname ? bsearch(&key, sorted, nf, sizeof *sorted, cmp_str) : NULL;
                free(fname);
                if (!hit) {
                    rc = vt_error_set(err, VT_ERR_INTERNAL, "footer of an unknown file");
                    break;
                }
                struct meta_row *m = &acc.rows[acc.n++];
                memcpy(&m->file, *hit + strlen(*hit) + 1, sizeof m->file);
                m->rg = duckdb_value_int64(&res, 1, r);
                m->rows = duckdb_value_int64(&res, 2, r);
                m->leaf = value_text(&res, 3, r);
                m->min = value_text(&res, 4, r);
                m->max = value_text(&res, 5, r);
                m->nulls = duckdb_value_is_null(&res, 6, r) ? -1 : duckdb_value_int64(&res, 6, r);
            }
            duckdb_destroy_result(&res);
        }
        sb_release(&sql);
    }
    /* Row groups per file (ids are 0..n-1 in each), then their statistics. */
    for (size_t r = 0; rc == VT_ERR_OK && r < acc.n; r++) {
        struct lfile *f = &lz->files[acc.rows[r].file];
        if ((size_t)acc.rows[r].rg + 1 > f->n_rg)
            f->n_rg = (size_t)acc.rows[r].rg + 1;
    }
    size_t total_rg = 0;
    for (size_t i = 0; i < lz->n_files; i++) {
        lz->files[i].rg0 = total_rg;
        total_rg += lz->files[i].n_rg;
    }
    lz->n_rgs = total_rg;
    size_t text_bytes = 0;
    for (size_t r = 0; r < acc.n; r++)
        text_bytes += (acc.rows[r].min ? strlen(acc.rows[r].min) + 1 : 0) +
                      (acc.rows[r].max ? strlen(acc.rows[r].max) + 1 : 0);
    if (rc == VT_ERR_OK) {
        lz->rg_rows = calloc(total_rg ? total_rg : 1, sizeof *lz->rg_rows);
        lz->stats = calloc(total_rg * (n_cols ? n_cols : 1) + 1, sizeof *lz->stats);
        lz->strings = malloc(text_bytes + 1);
        if (!lz->rg_rows || !lz->stats || !lz->strings)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    /* Unknown until a leaf says otherwise; a column with several leaves
     * (nested) keeps no bounds, only what every leaf agrees on is kept. */
    for (size_t g = 0; rc == VT_ERR_OK && g < total_rg * n_cols; g++)
        lz->stats[g].nulls = -1;
    char *sp = lz->strings;
    unsigned char *seen = rc == VT_ERR_OK ? calloc(total_rg * (n_cols ? n_cols : 1) + 1, 1) : NULL;
    if (rc == VT_ERR_OK && !seen)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t r = 0; rc == VT_ERR_OK && r < acc.n; r++) {
        const struct meta_row *m = &acc.rows[r];
        struct lfile *f = &lz->files[m->file];
        size_t g = f->rg0 + (size_t)m->rg;
        lz->rg_rows[g] = m->rows;
        int c = m->leaf ? leaf_column(lz, file_cols, m->leaf) : -1;
        if (c < 0)
            continue;
        struct lstat *s = &lz->stats[g * n_cols + (size_t)c];
        if (seen[g * n_cols + (size_t)c]++) {
            s->min.kind = s->max.kind = 0; /* a nested column: no bounds */
            if (m->nulls < 0 || s->nulls < 0)
                s->nulls = -1;
            continue;
        }
        s->nulls = m->nulls;
        if (m->min && m->max) {
            size_t a = strlen(m->min), b = strlen(m->max);
            memcpy(sp, m->min, a + 1);
            s->min = parse_val(lz->col_class[c], sp, a);
            sp += a + 1;
            memcpy(sp, m->max, b + 1);
            s->max = parse_val(lz->col_class[c], sp, b);
            sp += b + 1;
        }
    }
    free(seen);
    for (size_t i = 0; rc == VT_ERR_OK && i < lz->n_files; i++) {
        struct lfile *f = &lz->files[i];
        for (size_t g = 0; g < f->n_rg; g++)
            f->rows += lz->rg_rows[f->rg0 + g];
        lz->rows += f->rows;
    }
    if (rc == VT_ERR_OK && ds->columns.len) {
        lz->projection = calloc(ds->columns.len, sizeof *lz->projection);
        for (size_t i = 0; lz->projection && i < ds->columns.len; i++)
            if ((lz->projection[i] = strdup(ds->columns.items[i])))
                lz->n_projection = i + 1;
        if (lz->n_projection != ds->columns.len)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t r = 0; r < acc.n; r++) {
        free(acc.rows[r].leaf);
        free(acc.rows[r].min);
        free(acc.rows[r].max);
    }
    free(acc.rows);
    for (size_t i = 0; i < nf && sorted; i++)
        free(sorted[i]);
    free(sorted);
    free(file_cols);
    if (rc != VT_ERR_OK) {
        lazy_free(lz);
        return rc;
    }
    lz->bytes = sizeof *lz + lz->n_files * sizeof *lz->files + lz->n_rgs * sizeof *lz->rg_rows +
                lz->n_rgs * n_cols * sizeof *lz->stats + text_bytes + strlen(lz->select_list) +
                nf * (np ? np : 1) * sizeof *lz->part_vals;
    for (size_t i = 0; i < lz->n_files; i++)
        lz->bytes += strlen(lz->files[i].path) + 1;
    snap->lazy = lz;
    log_debug("lazy metadata: %zu files, %zu row groups, %lld rows, %zu bytes", lz->n_files,
              lz->n_rgs, (long long)lz->rows, lz->bytes);
    return VT_ERR_OK;
}

int64_t source_lazy_rows(const struct source_lazy *lz)
{
    return lz ? lz->rows : -1;
}

size_t source_lazy_bytes(const struct source_lazy *lz)
{
    return lz ? lz->bytes : 0;
}

/* ---- per request ---------------------------------------------------------------- */

/* The lazy column of a schema column (by name: the dataset's `columns` may
 * reorder or leave out source columns). */
static int lazy_column(const struct source_lazy *lz, const struct query_request *req,
                       size_t idx)
{
    if (idx >= req->schema->n)
        return -1;
    const char *name = req->schema->cols[idx].name;
    for (size_t c = 0; c < lz->n_cols; c++)
        if (strcmp(lz->col_names[c], name) == 0)
            return (int)c;
    return -1;
}

/* The verdict of every predicate together on one file (rg = SIZE_MAX: the
 * file's row groups taken together) or one row group. */
static enum verdict verdict(const struct source_lazy *lz, const struct query_request *req,
                            const int *pcol, size_t file, size_t rg)
{
    const struct lfile *f = &lz->files[file];
    enum verdict acc = V_ALL;
    for (size_t i = 0; i < req->npreds && acc != V_NONE; i++) {
        const struct query_pred *p = &req->preds[i];
        int c = pcol[i];
        if (c < 0) {
            acc = V_SOME;
            continue;
        }
        enum verdict v;
        int k = lz->col_partition[c];
        if (k >= 0) {
            const struct lval *val = &lz->part_vals[file * lz->n_partitions + (size_t)k];
            bool null = !f->pvals || !f->pvals[k];
            if (!null && !val->kind) {
                v = V_SOME; /* a value we cannot compare */
            } else {
                int64_t rows = rg == SIZE_MAX ? f->rows : lz->rg_rows[f->rg0 + rg];
                struct bounds b = {val, val, null ? rows : 0, rows};
                v = pred_verdict(lz->part_class[k], p, &b);
            }
        } else if (rg != SIZE_MAX) {
            const struct lstat *s = &lz->stats[(f->rg0 + rg) * lz->n_cols + (size_t)c];
            struct bounds b = {&s->min, &s->max, s->nulls, lz->rg_rows[f->rg0 + rg]};
            v = pred_verdict(lz->col_class[c], p, &b);
        } else {
            /* The file: NONE when every row group is NONE, ALL when all are ALL. */
            bool all_none = f->n_rg > 0, all_all = f->n_rg > 0;
            for (size_t g = 0; g < f->n_rg && (all_none || all_all); g++) {
                const struct lstat *s = &lz->stats[(f->rg0 + g) * lz->n_cols + (size_t)c];
                struct bounds b = {&s->min, &s->max, s->nulls, lz->rg_rows[f->rg0 + g]};
                enum verdict one = pred_verdict(lz->col_class[c], p, &b);
                all_none = all_none && one == V_NONE;
                all_all = all_all && one == V_ALL;
            }
            v = f->rows == 0 || all_none ? V_NONE : all_all ? V_ALL : V_SOME;
        }
        if (v == V_NONE)
            acc = V_NONE;
        else if (v == V_SOME)
            acc = V_SOME;
    }
    return acc;
}

/* A local file read in place (it could not be pinned) changed since the
 * build: its rows are not the generation's any more. */
static bool changed(const struct lfile *f)
{
    if (f->pinned || !f->mtime)
        return false;
    struct stat st;
    return stat(f->path, &st) != 0 || st.st_size != f->size ||
           (int64_t)st.st_mtime * 1000000000LL + st.st_mtim.tv_nsec != f->mtime;
}

enum vt_err source_lazy_plan(const struct source_lazy *lz, const struct query_request *req,
                             struct arena *arena, struct source_lazy_plan *out,
                             struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->files = lz->n_files;
    out->row_groups = lz->n_rgs;
    int *pcol = arena_alloc(arena, (req->npreds ? req->npreds : 1) * sizeof *pcol);
    const char **paths = arena_alloc(arena, (lz->n_files ? lz->n_files : 1) * sizeof *paths);
    const char **pvals = arena_alloc(
        arena, (lz->n_files * (lz->n_partitions ? lz->n_partitions : 1) + 1) * sizeof *pvals);
    if (!pcol || !paths || !pvals)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    for (size_t i = 0; i < req->npreds; i++)
        pcol[i] = req->preds[i].ref.is_agg ? -1 : lazy_column(lz, req, req->preds[i].ref.idx);
    size_t n = 0;
    int64_t known = 0;
    bool all_known = true;
    for (size_t i = 0; i < lz->n_files; i++) {
        enum verdict fv = req->npreds ? verdict(lz, req, pcol, i, SIZE_MAX) : V_ALL;
        if (fv == V_NONE) {
            continue;
        }
        /* Row groups: what statistics decide, and what only reading can. */
        int64_t file_known = 0;
        bool file_decided = true;
        size_t read_rg = 0;
        for (size_t g = 0; g < lz->files[i].n_rg; g++) {
            enum verdict gv = fv == V_ALL ? V_ALL : verdict(lz, req, pcol, i, g);
            if (gv == V_ALL)
                file_known += lz->rg_rows[lz->files[i].rg0 + g];
            else if (gv == V_SOME)
                file_decided = false;
            if (gv != V_NONE)
                read_rg++;
        }
        if (read_rg == 0 && lz->files[i].n_rg > 0)
            continue; /* every row group ruled out */
        if (changed(&lz->files[i]))
            return vt_error_set(err, VT_ERR_SOURCE_CHANGED,
                                "%s changed under the published generation; reload the "
                                "dataset",
                                lz->files[i].path);
        out->row_groups_read += read_rg;
        known += file_known;
        all_known = all_known && file_decided;
        paths[n] = lz->files[i].path;
        for (size_t k = 0; k < lz->n_partitions; k++)
            pvals[n * lz->n_partitions + k] =
                lz->files[i].pvals ? lz->files[i].pvals[k] : NULL;
        n++;
    }
    out->files_read = n;
    if (req->mode == QUERY_COUNT && all_known) {
        out->count_known = true;
        out->count = known;
        return VT_ERR_OK;
    }
    /* The files that can match, with the generation's own columns. */
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, "(SELECT ");
    if (lz->n_projection) {
        for (size_t i = 0; i < lz->n_projection; i++) {
            if (i)
                sb_adds(&sb, ", ");
            sb_add_sql_ident(&sb, lz->projection[i]);
        }
        sb_adds(&sb, " FROM (SELECT ");
    }
    sb_adds(&sb, lz->select_list);
    sb_adds(&sb, " FROM ");
    if (n == 0) {
        /* Nothing can match: the first file, no row of it. */
        paths[0] = lz->files[0].path;
        for (size_t k = 0; k < lz->n_partitions; k++)
            pvals[k] = lz->files[0].pvals ? lz->files[0].pvals[k] : NULL;
        source_scan_add_from(&sb, paths, 1, pvals, lz->n_partitions);
        sb_adds(&sb, " LIMIT 0");
    } else {
        source_scan_add_from(&sb, paths, n, pvals, lz->n_partitions);
    }
    if (lz->n_projection)
        sb_adds(&sb, ") AS \"src\"");
    sb_adds(&sb, ") AS \"lazy\"");
    char *rel = sb.overflow ? NULL : arena_strndup(arena, sb.buf, sb.len);
    sb_release(&sb);
    if (!rel)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    out->relation = rel;
    return VT_ERR_OK;
}
