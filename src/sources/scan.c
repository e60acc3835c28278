/*
 * The SELECT over a set of local Parquet files (every resolver's output), and
 * the resolver's DuckDB connection used to read Delta checkpoints and the
 * columns of data files.
 *
 * Shape of the statement:
 *
 *   SELECT CAST(d."id" AS BIGINT) AS "id",            -- a file column (converted)
 *          CAST(NULL AS VARCHAR) AS "added_later",     -- a column in no file
 *          CAST("__vt_p0" AS DATE) AS "day"            -- partition value of the row's file
 *   FROM (SELECT *, CAST(['2024-01-01', ...] AS VARCHAR[])
 *                       [CAST(file_index AS BIGINT) + 1] AS "__vt_p0"
 *         FROM read_parquet(['/t/a.parquet', ...], union_by_name = true,
 *                           hive_partitioning = false)) AS d
 *
 * The partition value is picked from a list by DuckDB's file_index virtual
 * column (the position of the row's file in the list given; DuckDB keeps the
 * order): no join. A join of every row with a VALUES table on the file's
 * name measured 13.5 ms a query against 11 ms for this form (group by over
 * two files of 100,000 rows, vt-sql, CPU time). When every file has the same
 * partition values, as a pruned set of one partition does, the values are a
 * one-row CROSS JOIN (relation "p"); with deletion vectors that differ per
 * file, the VALUES join above carries each file's vector too:
 *
 *   ... FROM read_parquet([...], filename = '__vt_file', file_row_number = true) AS d
 *   JOIN (VALUES ('/t/a.parquet', '2024-01-01', 17), ...) AS p("__vt_file", "__vt_p0", "__vt_dv")
 *     ON d."__vt_file" = p."__vt_file" AND NOT vt_dv_deleted(p."__vt_dv", d.file_row_number)
 *
 * Partition values are named "__vt_pN" unqualified in the select list, so
 * whichever relation carries them answers.
 *
 * union_by_name makes files written before a column was added yield NULL for
 * it; hive_partitioning is off because partition values come from the
 * resolver (Delta log, our own hive parsing), not from DuckDB's reading of
 * directory names.
 */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/engine.h"
#include "sources/sources_internal.h"
#include "util/limits.h"

#define FILE_COL "__vt_file"

/* ---- the resolver's DuckDB ------------------------------------------------ */

struct source_duck {
    duckdb_database db;         /* owned when opened here (no context database) */
    duckdb_connection con;
    bool own_con;
};

duckdb_connection source_duck_connection(struct source_duck *d)
{
    return d->con;
}

void source_duck_close(struct source_duck *d)
{
    if (!d)
        return;
    if (d->own_con && d->con)
        duckdb_disconnect(&d->con);
    if (d->db)
        eng_close(&d->db);
    free(d);
}

enum vt_err source_duck_open(const struct source_context *ctx, struct source_duck **out,
                             struct vt_error *err)
{
    *out = NULL;
    struct source_duck *d = calloc(1, sizeof *d);
    if (!d)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    enum vt_err rc = VT_ERR_OK;
    if (ctx && ctx->con) {
        d->con = ctx->con;
    } else if (ctx && ctx->db) {
        d->own_con = true;
        rc = eng_connect(ctx->db, &d->con, err);
    } else {
        /* Tools and tests: a database of its own with the service's settings. */
        struct vt_config defaults;
        memset(&defaults, 0, sizeof defaults);
        d->own_con = true;
        rc = eng_open(&defaults, &d->db, err);
        if (rc == VT_ERR_OK)
            rc = source_functions_register(d->db, err);
        if (rc == VT_ERR_OK)
            rc = eng_connect(d->db, &d->con, err);
    }
    if (rc != VT_ERR_OK) {
        source_duck_close(d);
        return rc;
    }
    *out = d;
    return VT_ERR_OK;
}

/* A DuckDB failure while reading the source: the source is unavailable. */
static enum vt_err query_error(duckdb_result *res, const char *what, struct vt_error *err)
{
    char text[VT_ERROR_MSG_MAX];
    enum vt_err rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s: %s", what,
                                  eng_error_text(duckdb_result_error(res), text, sizeof text));
    duckdb_destroy_result(res);
    return rc;
}

/* The files were listed and opened, but what they hold is not readable
 * Parquet (a corrupt footer, mismatched schemas): a failed build (400 at
 * registration, 422 on reload), not a source that cannot be opened. An I/O
 * error (a file gone or unreadable since it was listed) stays unavailable. */
static enum vt_err content_error(duckdb_result *res, const char *what, struct vt_error *err)
{
    if (duckdb_result_error_type(res) == DUCKDB_ERROR_IO)
        return query_error(res, what, err);
    char text[VT_ERROR_MSG_MAX];
    enum vt_err rc = vt_error_set(err, VT_ERR_BUILD_FAILED, "%s: %s", what,
                                  eng_error_text(duckdb_result_error(res), text, sizeof text));
    duckdb_destroy_result(res);
    return rc;
}

enum vt_err source_duck_each_text(struct source_duck *d, const char *sql,
                                  enum vt_err (*fn)(void *ud, const char *text, size_t len,
                                                    struct vt_error *err),
                                  void *ud, struct vt_error *err)
{
    duckdb_result res;
    if (duckdb_query(d->con, sql, &res) != DuckDBSuccess)
        return query_error(&res, "reading a Delta checkpoint", err);
    if (duckdb_column_type(&res, 0) != DUCKDB_TYPE_VARCHAR) {
        duckdb_destroy_result(&res);
        return vt_error_set(err, VT_ERR_INTERNAL, "checkpoint query did not return text");
    }
    enum vt_err rc = VT_ERR_OK;
    for (;;) {
        duckdb_data_chunk ch = duckdb_fetch_chunk(res);
        if (!ch)
            break;
        idx_t rows = duckdb_data_chunk_get_size(ch);
        duckdb_vector v = duckdb_data_chunk_get_vector(ch, 0);
        duckdb_string_t *data = (duckdb_string_t *)duckdb_vector_get_data(v);
        uint64_t *valid = duckdb_vector_get_validity(v);
        for (idx_t r = 0; r < rows && rc == VT_ERR_OK; r++) {
            if (valid && !duckdb_validity_row_is_valid(valid, r))
                continue;
            rc = fn(ud, duckdb_string_t_data(&data[r]), duckdb_string_t_length(data[r]), err);
        }
        duckdb_destroy_data_chunk(&ch);
        if (rc != VT_ERR_OK)
            break;
    }
    duckdb_destroy_result(&res);
    return rc;
}

/* ---- probe of data-file columns ------------------------------------------- */

static void probe_type_release(struct source_probe_type *t)
{
    for (size_t i = 0; i < t->n_children; i++) {
        free(t->child_names ? t->child_names[i] : NULL);
        probe_type_release(&t->children[i]);
    }
    free(t->child_names);
    free(t->children);
    if (t->key) {
        probe_type_release(t->key);
        free(t->key);
    }
    free(t->text);
    memset(t, 0, sizeof *t);
}

void source_probe_release(struct source_probe *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->cols[i].name);
        probe_type_release(&p->cols[i].type);
    }
    free(p->cols);
    p->cols = NULL;
    p->n = 0;
}

const struct source_probe_col *source_probe_find(const struct source_probe *p, const char *name)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (strcmp(p->cols[i].name, name) == 0)
            return &p->cols[i];
    for (size_t i = 0; p && i < p->n; i++)
        if (strcasecmp(p->cols[i].name, name) == 0)
            return &p->cols[i];
    return NULL;
}

static int probe_child(duckdb_logical_type ct, struct source_probe_type *out, int depth);

static int probe_from_logical(duckdb_logical_type lt, struct source_probe_type *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > VT_DELTA_MAX_SCHEMA_DEPTH)
        return 0;
    duckdb_type id = duckdb_get_type_id(lt);
    out->duck_type_id = (int)id;
    if (id == DUCKDB_TYPE_STRUCT) {
        out->kind = SOURCE_T_STRUCT;
        idx_t n = duckdb_struct_type_child_count(lt);
        out->children = calloc(n ? n : 1, sizeof *out->children);
        out->child_names = calloc(n ? n : 1, sizeof *out->child_names);
        if (!out->children || !out->child_names)
            return -1;
        for (idx_t i = 0; i < n; i++) {
            out->n_children = i + 1;
            char *nm = duckdb_struct_type_child_name(lt, i);
            out->child_names[i] = nm ? strdup(nm) : NULL;
            duckdb_free(nm);
            if (!out->child_names[i] ||
                probe_child(duckdb_struct_type_child_type(lt, i), &out->children[i], depth) < 0)
                return -1;
        }
    } else if (id == DUCKDB_TYPE_LIST || id == DUCKDB_TYPE_ARRAY) {
        out->kind = SOURCE_T_LIST;
        out->children = calloc(1, sizeof *out->children);
        if (!out->children)
            return -1;
        out->n_children = 1;
        return probe_child(id == DUCKDB_TYPE_LIST ? duckdb_list_type_child_type(lt)
                                                  : duckdb_array_type_child_type(lt),
                           &out->children[0], depth);
    } else if (id == DUCKDB_TYPE_MAP) {
        out->kind = SOURCE_T_MAP;
        out->children = calloc(1, sizeof *out->children);
        out->key = calloc(1, sizeof *out->key);
        if (!out->children || !out->key)
            return -1;
        out->n_children = 1;
        if (probe_child(duckdb_map_type_key_type(lt), out->key, depth) < 0)
            return -1;
        return probe_child(duckdb_map_type_value_type(lt), &out->children[0], depth);
    } else {
        out->kind = SOURCE_T_PRIMITIVE;
    }
    return 0;
}

/* Probes a child type and destroys the handle DuckDB gave for it. */
static int probe_child(duckdb_logical_type ct, struct source_probe_type *out, int depth)
{
    int rc = probe_from_logical(ct, out, depth + 1);
    duckdb_destroy_logical_type(&ct);
    return rc;
}

enum vt_err source_duck_probe(struct source_duck *d, const char *const *paths, size_t n,
                              struct source_probe *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return VT_ERR_OK;
    struct strbuf from;
    sb_init(&from, 0);
    source_scan_add_read_parquet(&from, paths, n, NULL);
    struct strbuf sql;
    sb_init(&sql, 0);
    /* Column types as trees (LIMIT 0 reads only the footers) ... */
    sb_addf(&sql, "SELECT * FROM %s LIMIT 0", from.buf ? from.buf : "");
    if (from.overflow || sql.overflow) {
        sb_release(&from);
        sb_release(&sql);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    duckdb_result res;
    duckdb_state st = duckdb_query(d->con, sql.buf, &res);
    if (st != DuckDBSuccess) {
        sb_release(&from);
        sb_release(&sql);
        return content_error(&res, "reading the data files' Parquet schema", err);
    }
    idx_t nc = duckdb_column_count(&res);
    out->cols = calloc(nc ? nc : 1, sizeof *out->cols);
    enum vt_err rc = VT_ERR_OK;
    if (!out->cols)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    bool named = true; /* eng_type_text named every column's type */
    for (idx_t c = 0; c < nc && rc == VT_ERR_OK; c++) {
        out->n = c + 1;
        const char *nm = duckdb_column_name(&res, c);
        out->cols[c].name = strdup(nm ? nm : "");
        duckdb_logical_type lt = duckdb_column_logical_type(&res, c);
        int prc = probe_from_logical(lt, &out->cols[c].type, 0);
        char text[64];
        if (named && eng_type_text(lt, text, sizeof text))
            out->cols[c].type.text = strdup(text);
        else
            named = false;
        duckdb_destroy_logical_type(&lt);
        if (!out->cols[c].name || prc < 0 || (named && !out->cols[c].type.text))
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    duckdb_destroy_result(&res);
    if (named || rc != VT_ERR_OK) {
        /* every type named without a DESCRIBE (a second read of the
         * footers' schema), or failed */
        sb_release(&from);
        sb_release(&sql);
        if (rc != VT_ERR_OK)
            source_probe_release(out);
        return rc;
    }
    for (idx_t c = 0; c < out->n; c++) {
        free(out->cols[c].type.text);
        out->cols[c].type.text = NULL;
    }
    /* ... and as DuckDB writes them (the C API has no type-to-text): the
     * types eng_type_text does not name (nested, ENUM, aliased). */
    sb_reset(&sql);
    sb_addf(&sql, "SELECT column_type FROM (DESCRIBE SELECT * FROM %s)", from.buf);
    sb_release(&from);
    if (rc == VT_ERR_OK && sql.overflow)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (rc == VT_ERR_OK) {
        if (duckdb_query(d->con, sql.buf, &res) != DuckDBSuccess) {
            rc = content_error(&res, "reading the data files' Parquet schema", err);
        } else {
            if (duckdb_row_count(&res) != out->n)
                rc = vt_error_set(err, VT_ERR_INTERNAL, "DESCRIBE disagrees with the probe");
            for (idx_t r = 0; r < out->n && rc == VT_ERR_OK; r++) {
                char *t = duckdb_value_varchar(&res, 0, r);
                out->cols[r].type.text = t ? strdup(t) : NULL;
                duckdb_free(t);
                if (!out->cols[r].type.text)
                    rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            }
            duckdb_destroy_result(&res);
        }
    }
    sb_release(&sql);
    if (rc != VT_ERR_OK)
        source_probe_release(out);
    return rc;
}

/* ---- SQL text ----------------------------------------------------------------- */

static int add_read_parquet(struct strbuf *sb, const char *const *paths, size_t n,
                            const char *filename_col, bool row_numbers);

/* A path for read_parquet's list: a SQL string literal with glob
 * metacharacters (* ? [) escaped as one-character classes, because DuckDB
 * expands every list entry as a glob. */
static void add_path_literal(struct strbuf *sb, const char *path)
{
    sb_addc(sb, '\'');
    for (const char *p = path; *p; p++) {
        if (*p == '\'')
            sb_adds(sb, "''");
        else if (*p == '*' || *p == '?' || *p == '[') {
            sb_addc(sb, '[');
            sb_addc(sb, *p);
            sb_addc(sb, ']');
        } else
            sb_addc(sb, *p);
    }
    sb_addc(sb, '\'');
}

static int add_read_parquet(struct strbuf *sb, const char *const *paths, size_t n,
                            const char *filename_col, bool row_numbers)
{
    sb_adds(sb, "read_parquet([");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_adds(sb, ", ");
        add_path_literal(sb, paths[i]);
    }
    sb_adds(sb, "], union_by_name = true, hive_partitioning = false");
    if (filename_col) {
        sb_adds(sb, ", filename = ");
        sb_add_sql_string(sb, filename_col);
    }
    if (row_numbers)
        sb_adds(sb, ", file_row_number = true");
    sb_addc(sb, ')');
    return sb->overflow ? -1 : 0;
}

int source_scan_add_read_parquet(struct strbuf *sb, const char *const *paths, size_t n,
                                 const char *filename_col)
{
    return add_read_parquet(sb, paths, n, filename_col, false);
}

static void add_column_expr(struct strbuf *out, const struct source_scan_column *col)
{
    struct strbuf ref;
    sb_init(&ref, 0);
    if (col->partition >= 0) {
        sb_addf(&ref, "\"__vt_p%d\"", col->partition);
    } else if (col->file) {
        sb_adds(&ref, "d.");
        sb_add_sql_ident(&ref, col->file->name);
    } else {
        sb_addf(out, "CAST(NULL AS %s)", col->type ? col->type : "VARCHAR");
        sb_release(&ref);
        return;
    }
    const char *r = ref.buf ? ref.buf : "NULL";
    if (col->convert)
        col->convert(col->arg, r, col->file ? &col->file->type : NULL, out);
    else if (col->type)
        sb_addf(out, "CAST(%s AS %s)", r, col->type);
    else
        sb_adds(out, r);
    sb_release(&ref);
}

static void add_select_list(const struct source_scan *scan, struct strbuf *out)
{
    for (size_t c = 0; c < scan->n_columns; c++) {
        if (c)
            sb_adds(out, ", ");
        add_column_expr(out, &scan->columns[c]);
        sb_adds(out, " AS ");
        sb_add_sql_ident(out, scan->columns[c].name);
    }
    if (scan->n_columns == 0)
        sb_adds(out, "NULL AS \"__vt_empty\"");
}

/* A partition value: a SQL string, or NULL. */
static void add_value(struct strbuf *out, const char *v)
{
    if (v)
        sb_add_sql_string(out, v);
    else
        sb_adds(out, "NULL");
}

/* Each file's value of partition k picked by the row's file_index. */
static void add_partition_pick(struct strbuf *out, const struct source_scan_files *f, size_t k)
{
    sb_adds(out, ", CAST([");
    for (size_t i = 0; i < f->n; i++) {
        if (i)
            sb_adds(out, ", ");
        add_value(out, f->pvals[i * f->n_partitions + k]);
    }
    sb_addf(out, "] AS VARCHAR[])[CAST(file_index AS BIGINT) + 1] AS \"__vt_p%zu\"", k);
}

/* The files as relation "d": read_parquet over them, with the carrier's
 * columns added by name and, when one vector covers them all, its deleted
 * rows filtered out; with `picks`, each row's partition values too. */
static void add_files(struct strbuf *out, const struct source_scan_files *f, bool by_file,
                      bool row_numbers, uint64_t one_dv, bool picks)
{
    bool wrap = f->carrier || one_dv || picks;
    if (wrap)
        sb_adds(out, "(SELECT *");
    for (size_t k = 0; picks && k < f->n_partitions; k++)
        add_partition_pick(out, f, k);
    if (wrap)
        sb_adds(out, " FROM ");
    add_read_parquet(out, f->paths, f->n, by_file ? FILE_COL : NULL, row_numbers);
    if (one_dv)
        sb_addf(out, " WHERE NOT " SOURCE_DV_FUNCTION "(%llu, file_row_number)",
                (unsigned long long)one_dv);
    if (f->carrier) {
        sb_adds(out, " UNION ALL BY NAME (");
        sb_adds(out, f->carrier);
        sb_addc(out, ')');
    }
    if (wrap)
        sb_addc(out, ')');
    sb_adds(out, " AS d");
}

int source_scan_add_from(struct strbuf *out, const struct source_scan_files *f)
{
    size_t n = f->n, np = f->n_partitions;
    bool any_dv = false;
    for (size_t i = 0; f->dvs && i < n && !any_dv; i++)
        any_dv = f->dvs[i] != 0;
    /* One value per partition column and one vector across the files: no
     * per-row lookup of the file name. */
    bool same = true;
    for (size_t i = 1; i < n && same; i++) {
        for (size_t k = 0; k < np && same; k++) {
            const char *a = f->pvals[k], *b = f->pvals[i * np + k];
            same = (!a && !b) || (a && b && strcmp(a, b) == 0);
        }
        if (any_dv && f->dvs[i] != f->dvs[0])
            same = false;
    }
    if (same) {
        add_files(out, f, false, any_dv, any_dv ? f->dvs[0] : 0, false);
        if (np) {
            sb_adds(out, " CROSS JOIN (VALUES (");
            for (size_t k = 0; k < np; k++) {
                if (k)
                    sb_adds(out, ", ");
                add_value(out, f->pvals[k]);
            }
            sb_adds(out, ")) AS p(");
            for (size_t k = 0; k < np; k++)
                sb_addf(out, "%s\"__vt_p%zu\"", k ? ", " : "", k);
            sb_addc(out, ')');
        }
        return out->overflow ? -1 : 0;
    }
    if (!any_dv) {
        add_files(out, f, false, false, 0, true);
        return out->overflow ? -1 : 0;
    }
    add_files(out, f, true, any_dv, 0, false);
    sb_adds(out, " JOIN (VALUES ");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_adds(out, ", ");
        sb_addc(out, '(');
        sb_add_sql_string(out, f->paths[i]);
        for (size_t k = 0; k < np; k++) {
            sb_adds(out, ", ");
            add_value(out, f->pvals[i * np + k]);
        }
        if (any_dv)
            sb_addf(out, ", %llu", (unsigned long long)f->dvs[i]);
        sb_addc(out, ')');
    }
    sb_adds(out, ") AS p(\"" FILE_COL "\"");
    for (size_t k = 0; k < np; k++)
        sb_addf(out, ", \"__vt_p%zu\"", k);
    if (any_dv)
        sb_adds(out, ", \"__vt_dv\"");
    sb_adds(out, ") ON d.\"" FILE_COL "\" = p.\"" FILE_COL "\"");
    if (any_dv)
        sb_adds(out, " AND NOT " SOURCE_DV_FUNCTION "(p.\"__vt_dv\", d.file_row_number)");
    return out->overflow ? -1 : 0;
}

static void add_scan(const struct source_scan *scan, struct strbuf *out)
{
    sb_adds(out, "SELECT ");
    add_select_list(scan, out);
    sb_adds(out, " FROM ");
    struct source_scan_files f = {.paths = scan->paths, .n = scan->n_paths,
                                  .pvals = scan->partition_values,
                                  .n_partitions = scan->n_partitions, .dvs = scan->dvs};
    source_scan_add_from(out, &f);
}

enum vt_err source_scan_select_list(const struct source_scan *scan, char **out,
                                    struct vt_error *err)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    add_select_list(scan, &sb);
    if (sb.overflow || !(*out = sb_detach(&sb, NULL))) {
        sb_release(&sb);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return VT_ERR_OK;
}

enum vt_err source_scan_sql(const struct source_scan *scan, char **out, struct vt_error *err)
{
    *out = NULL;
    if (scan->n_paths == 0)
        return vt_error_set(err, VT_ERR_SOURCE_EMPTY, "no files to read");
    struct strbuf sql;
    sb_init(&sql, 0);
    add_scan(scan, &sql);
    if (sql.overflow || !(*out = sb_detach(&sql, NULL))) {
        sb_release(&sql);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "SELECT for the snapshot is too large");
    }
    return VT_ERR_OK;
}
