/*
 * The SELECT over a resolved snapshot (Delta tables and S3 parquet), and the
 * private DuckDB connection resolvers use to read checkpoints and probe the
 * columns of data files.
 *
 * Shape of the generated statement:
 *
 *   SELECT CAST(d."id" AS BIGINT) AS "id",            -- data column, cast to the table type
 *          CAST(NULL AS VARCHAR) AS "added_later",     -- in the schema, in no file yet
 *          CAST(p."__vt_p0" AS DATE) AS "day"          -- partition value of the row's file
 *   FROM read_parquet(['/t/a.parquet', ...], union_by_name = true,
 *                     hive_partitioning = false, filename = '__vt_file') AS d
 *   JOIN (VALUES ('/t/a.parquet', '2024-01-01'), ...) AS p("__vt_file", "__vt_p0")
 *     ON d."__vt_file" = p."__vt_file"
 *
 * union_by_name makes files written before a column was added yield NULL for it;
 * hive_partitioning is off because partition values come from the log, not from
 * directory names (which are escaped and may be absent).
 */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sources/delta.h"
#include "util/limits.h"
#include "util/strbuf.h"

#define FILE_COL "__vt_file"

/* ---- private DuckDB --------------------------------------------------------- */

struct delta_duck {
    duckdb_database db;
    duckdb_connection con;
};

void delta_duck_close(struct delta_duck *d)
{
    if (!d)
        return;
    if (d->con)
        duckdb_disconnect(&d->con);
    if (d->db)
        duckdb_close(&d->db);
    free(d);
}

enum vt_err delta_duck_open(struct delta_duck **out, struct vt_error *err)
{
    *out = NULL;
    struct delta_duck *d = calloc(1, sizeof *d);
    if (!d)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    duckdb_config cfg = NULL;
    char *open_err = NULL;
    if (duckdb_create_config(&cfg) != DuckDBSuccess) {
        free(d);
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot create a DuckDB config");
    }
    /* No network and no extension downloads: everything we need is built in. */
    duckdb_set_config(cfg, "autoinstall_known_extensions", "false");
    duckdb_set_config(cfg, "autoload_known_extensions", "false");
    duckdb_set_config(cfg, "threads", "2");
    duckdb_state st = duckdb_open_ext(NULL, &d->db, cfg, &open_err);
    duckdb_destroy_config(&cfg);
    if (st != DuckDBSuccess) {
        enum vt_err rc = vt_error_set(err, VT_ERR_INTERNAL, "cannot open DuckDB: %s",
                                      open_err ? open_err : "unknown error");
        duckdb_free(open_err);
        free(d);
        return rc;
    }
    if (duckdb_connect(d->db, &d->con) != DuckDBSuccess) {
        delta_duck_close(d);
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot connect to DuckDB");
    }
    duckdb_result res;
    if (duckdb_query(d->con, "SET TimeZone = 'UTC'", &res) != DuckDBSuccess) {
        duckdb_destroy_result(&res);
        delta_duck_close(d);
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot set the DuckDB time zone");
    }
    duckdb_destroy_result(&res);
    *out = d;
    return VT_ERR_OK;
}

static enum vt_err query_error(duckdb_result *res, const char *what, struct vt_error *err)
{
    const char *m = duckdb_result_error(res);
    enum vt_err rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "%s: %s", what,
                                  m ? m : "DuckDB error");
    duckdb_destroy_result(res);
    return rc;
}

enum vt_err delta_duck_each_text(struct delta_duck *d, const char *sql,
                                 enum vt_err (*fn)(void *ud, const char *text, size_t len,
                                                   struct vt_error *err),
                                 void *ud, struct vt_error *err)
{
    duckdb_result res;
    if (duckdb_query(d->con, sql, &res) != DuckDBSuccess)
        return query_error(&res, "reading a Delta checkpoint", err);
    enum vt_err rc = VT_ERR_OK;
    if (duckdb_column_type(&res, 0) != DUCKDB_TYPE_VARCHAR) {
        duckdb_destroy_result(&res);
        return vt_error_set(err, VT_ERR_INTERNAL, "checkpoint query did not return text");
    }
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
            uint32_t len = duckdb_string_t_length(data[r]);
            const char *txt = duckdb_string_t_data(&data[r]);
            rc = fn(ud, txt, len, err);
        }
        duckdb_destroy_data_chunk(&ch);
        if (rc != VT_ERR_OK)
            break;
    }
    duckdb_destroy_result(&res);
    return rc;
}

enum vt_err delta_duck_describe(struct delta_duck *d, const char *from_sql, char ***out_names,
                                char ***out_types, size_t *out_n, struct vt_error *err)
{
    *out_names = *out_types = NULL;
    *out_n = 0;
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_addf(&sql, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM %s)", from_sql);
    if (sql.overflow) {
        sb_release(&sql);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    duckdb_result res;
    duckdb_state st = duckdb_query(d->con, sql.buf, &res);
    sb_release(&sql);
    if (st != DuckDBSuccess)
        return query_error(&res, "reading the Parquet schema", err);
    idx_t n = duckdb_row_count(&res);
    char **names = calloc(n ? n : 1, sizeof *names), **types = calloc(n ? n : 1, sizeof *types);
    enum vt_err rc = VT_ERR_OK;
    if (!names || !types)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (idx_t r = 0; r < n && rc == VT_ERR_OK; r++) {
        char *a = duckdb_value_varchar(&res, 0, r), *b = duckdb_value_varchar(&res, 1, r);
        names[r] = a ? strdup(a) : NULL;
        types[r] = b ? strdup(b) : NULL;
        duckdb_free(a);
        duckdb_free(b);
        if (!names[r] || !types[r])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    duckdb_destroy_result(&res);
    if (rc != VT_ERR_OK) {
        for (idx_t r = 0; r < n && names && types; r++) {
            free(names[r]);
            free(types[r]);
        }
        free(names);
        free(types);
        return rc;
    }
    *out_names = names;
    *out_types = types;
    *out_n = n;
    return VT_ERR_OK;
}

/* ---- probe of data-file columns ------------------------------------------- */

static void probe_type_release(struct delta_probe_type *t)
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
    memset(t, 0, sizeof *t);
}

void delta_probe_release(struct delta_probe *p)
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

static int probe_from_logical(duckdb_logical_type lt, struct delta_probe_type *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > VT_DELTA_MAX_SCHEMA_DEPTH)
        return 0;
    duckdb_type id = duckdb_get_type_id(lt);
    out->duck_type_id = (int)id;
    if (id == DUCKDB_TYPE_STRUCT) {
        out->kind = DELTA_T_STRUCT;
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
            duckdb_logical_type ct = duckdb_struct_type_child_type(lt, i);
            int rc = probe_from_logical(ct, &out->children[i], depth + 1);
            duckdb_destroy_logical_type(&ct);
            if (rc < 0 || !out->child_names[i])
                return -1;
        }
    } else if (id == DUCKDB_TYPE_LIST || id == DUCKDB_TYPE_ARRAY) {
        out->kind = DELTA_T_ARRAY;
        out->children = calloc(1, sizeof *out->children);
        if (!out->children)
            return -1;
        out->n_children = 1;
        duckdb_logical_type ct = id == DUCKDB_TYPE_LIST ? duckdb_list_type_child_type(lt)
                                                        : duckdb_array_type_child_type(lt);
        int rc = probe_from_logical(ct, &out->children[0], depth + 1);
        duckdb_destroy_logical_type(&ct);
        return rc;
    } else if (id == DUCKDB_TYPE_MAP) {
        out->kind = DELTA_T_MAP;
        out->children = calloc(1, sizeof *out->children);
        out->key = calloc(1, sizeof *out->key);
        if (!out->children || !out->key)
            return -1;
        out->n_children = 1;
        duckdb_logical_type kt = duckdb_map_type_key_type(lt);
        duckdb_logical_type vt = duckdb_map_type_value_type(lt);
        int rc = probe_from_logical(kt, out->key, depth + 1);
        if (rc == 0)
            rc = probe_from_logical(vt, &out->children[0], depth + 1);
        duckdb_destroy_logical_type(&kt);
        duckdb_destroy_logical_type(&vt);
        return rc;
    } else {
        out->kind = DELTA_T_PRIMITIVE;
    }
    return 0;
}

/* The FROM item reading the files: read_parquet([...], options). */
static int add_read_parquet(struct strbuf *sb, const char *const *paths, size_t n, bool with_file)
{
    sb_adds(sb, "read_parquet([");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_adds(sb, ", ");
        delta_sql_add_path_literal(sb, paths[i]);
    }
    sb_adds(sb, "], union_by_name = true, hive_partitioning = false");
    if (with_file)
        sb_adds(sb, ", filename = '" FILE_COL "'");
    sb_addc(sb, ')');
    return sb->overflow ? -1 : 0;
}

enum vt_err delta_duck_probe(struct delta_duck *d, const char *const *paths, size_t n,
                             struct delta_probe *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return VT_ERR_OK;
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "SELECT * FROM ");
    add_read_parquet(&sql, paths, n, false);
    sb_adds(&sql, " LIMIT 0");
    if (sql.overflow) {
        sb_release(&sql);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    duckdb_result res;
    duckdb_state st = duckdb_query(d->con, sql.buf, &res);
    sb_release(&sql);
    if (st != DuckDBSuccess)
        return query_error(&res, "reading the data files' Parquet schema", err);
    idx_t nc = duckdb_column_count(&res);
    out->cols = calloc(nc ? nc : 1, sizeof *out->cols);
    enum vt_err rc = VT_ERR_OK;
    if (!out->cols)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    for (idx_t c = 0; c < nc && rc == VT_ERR_OK; c++) {
        out->n = c + 1;
        const char *nm = duckdb_column_name(&res, c);
        out->cols[c].name = strdup(nm ? nm : "");
        duckdb_logical_type lt = duckdb_column_logical_type(&res, c);
        int prc = probe_from_logical(lt, &out->cols[c].type, 0);
        duckdb_destroy_logical_type(&lt);
        if (!out->cols[c].name || prc < 0)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    duckdb_destroy_result(&res);
    if (rc != VT_ERR_OK)
        delta_probe_release(out);
    return rc;
}

/* ---- SQL text ----------------------------------------------------------------- */

int delta_sql_add_path_literal(struct strbuf *sb, const char *path)
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
    return sb_addc(sb, '\'');
}

static bool type_has_physical(const struct delta_type *t)
{
    if (!t)
        return false;
    for (size_t i = 0; i < t->n_fields; i++)
        if (t->fields[i].physical || type_has_physical(t->fields[i].type))
            return true;
    return type_has_physical(t->elem) || type_has_physical(t->key);
}

static const struct delta_probe_type *probe_child(const struct delta_probe_type *p,
                                                  const char *name)
{
    if (!p || p->kind != DELTA_T_STRUCT)
        return NULL;
    for (size_t i = 0; i < p->n_children; i++)
        if (p->child_names[i] && strcasecmp(p->child_names[i], name) == 0)
            return &p->children[i];
    return NULL;
}

static const char *probe_child_name(const struct delta_probe_type *p, const char *name)
{
    for (size_t i = 0; p && i < p->n_children; i++)
        if (p->child_names[i] && strcasecmp(p->child_names[i], name) == 0)
            return p->child_names[i];
    return name;
}

/* Converts the value `e` read from a file (shape `p`) to Delta type `t`. Only
 * types with column-mapped (renamed) fields inside need rebuilding; the rest
 * is one CAST (DuckDB casts structs by field name and fills missing fields
 * with NULL, which is what schema evolution needs). */
static void add_convert(struct strbuf *sb, const char *e, const struct delta_type *t,
                        const struct delta_probe_type *p, int depth)
{
    /* A Delta timestamp is an instant; files holding it as a zone-less
     * TIMESTAMP (INT96, or isAdjustedToUTC=false) store UTC wall time. Make
     * that explicit rather than depend on the session's TimeZone. */
    if (p && t->kind == DELTA_T_PRIMITIVE && strcmp(t->name, "timestamp") == 0 &&
        (p->duck_type_id == DUCKDB_TYPE_TIMESTAMP || p->duck_type_id == DUCKDB_TYPE_TIMESTAMP_S ||
         p->duck_type_id == DUCKDB_TYPE_TIMESTAMP_MS ||
         p->duck_type_id == DUCKDB_TYPE_TIMESTAMP_NS)) {
        sb_addf(sb, "timezone('UTC', CAST(%s AS TIMESTAMP))", e);
        return;
    }
    if (!type_has_physical(t) || !p || depth > VT_DELTA_MAX_SCHEMA_DEPTH) {
        sb_addf(sb, "CAST(%s AS %s)", e, t->duck);
        return;
    }
    if (t->kind == DELTA_T_STRUCT && p->kind == DELTA_T_STRUCT) {
        sb_addf(sb, "CASE WHEN (%s) IS NULL THEN NULL ELSE struct_pack(", e);
        for (size_t i = 0; i < t->n_fields; i++) {
            const struct delta_field *f = &t->fields[i];
            const char *phys = f->physical ? f->physical : f->name;
            const struct delta_probe_type *cp = probe_child(p, phys);
            if (i)
                sb_adds(sb, ", ");
            sb_add_sql_ident(sb, f->name);
            sb_adds(sb, " := ");
            if (!cp) {
                sb_addf(sb, "CAST(NULL AS %s)", f->type->duck);
                continue;
            }
            struct strbuf sub;
            sb_init(&sub, 0);
            sb_addf(&sub, "struct_extract(%s, ", e);
            sb_add_sql_string(&sub, probe_child_name(p, phys));
            sb_addc(&sub, ')');
            add_convert(sb, sub.buf ? sub.buf : "NULL", f->type, cp, depth + 1);
            sb_release(&sub);
        }
        sb_adds(sb, ") END");
        return;
    }
    if (t->kind == DELTA_T_ARRAY && p->kind == DELTA_T_ARRAY && p->n_children == 1) {
        char var[32];
        snprintf(var, sizeof var, "__vt_x%d", depth);
        sb_addf(sb, "list_transform(%s, lambda %s: ", e, var);
        add_convert(sb, var, t->elem, &p->children[0], depth + 1);
        sb_addc(sb, ')');
        return;
    }
    if (t->kind == DELTA_T_MAP && p->kind == DELTA_T_MAP && p->n_children == 1) {
        char var[32], k[48], v[48];
        snprintf(var, sizeof var, "__vt_x%d", depth);
        snprintf(k, sizeof k, "%s.key", var);
        snprintf(v, sizeof v, "%s.value", var);
        sb_addf(sb, "map_from_entries(list_transform(map_entries(%s), lambda %s: struct_pack(key := ",
                e, var);
        add_convert(sb, k, t->key, p->key, depth + 1);
        sb_adds(sb, ", value := ");
        add_convert(sb, v, t->elem, &p->children[0], depth + 1);
        sb_adds(sb, ")))");
        return;
    }
    sb_addf(sb, "CAST(%s AS %s)", e, t->duck);
}

/* Partition value text -> typed value. */
static void add_partition_expr(struct strbuf *sb, const char *e, const struct delta_type *t)
{
    if (!t || (t->kind == DELTA_T_PRIMITIVE && strcmp(t->name, "string") == 0)) {
        sb_adds(sb, e);
        return;
    }
    if (t->kind == DELTA_T_PRIMITIVE && strcmp(t->name, "binary") == 0) {
        /* The log stores binary partition values as the bytes' characters. */
        sb_addf(sb, "encode(%s)", e);
        return;
    }
    sb_addf(sb, "CAST(%s AS %s)", e, t->duck);
}

static const struct delta_probe_col *find_probe(const struct delta_probe *p, const char *name)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (strcasecmp(p->cols[i].name, name) == 0)
            return &p->cols[i];
    return NULL;
}

enum vt_err delta_sql_build(const struct delta_sql_input *in, struct strbuf *out,
                            struct vt_error *err)
{
    bool join = in->n_partitions > 0;
    sb_adds(out, "SELECT ");
    for (size_t c = 0; c < in->n_columns; c++) {
        const struct delta_sql_column *col = &in->columns[c];
        if (c)
            sb_adds(out, ", ");
        if (col->partition_index >= 0) {
            char e[48];
            snprintf(e, sizeof e, "p.\"__vt_p%d\"", col->partition_index);
            add_partition_expr(out, e, col->partition_type);
        } else if (col->field) {
            const char *phys = col->field->physical ? col->field->physical : col->field->name;
            const struct delta_probe_col *pc = find_probe(in->probe, phys);
            if (!pc) {
                sb_addf(out, "CAST(NULL AS %s)", col->field->type->duck);
            } else {
                struct strbuf e;
                sb_init(&e, 0);
                sb_adds(&e, "d.");
                sb_add_sql_ident(&e, pc->name);
                add_convert(out, e.buf ? e.buf : "NULL", col->field->type, &pc->type, 0);
                sb_release(&e);
            }
        } else {
            const struct delta_probe_col *pc = find_probe(in->probe, col->name);
            if (pc) {
                sb_adds(out, "d.");
                sb_add_sql_ident(out, pc->name);
            } else {
                sb_addf(out, "CAST(NULL AS %s)", col->duck_type ? col->duck_type : "VARCHAR");
            }
        }
        sb_adds(out, " AS ");
        sb_add_sql_ident(out, col->name);
    }
    if (in->n_columns == 0)
        sb_adds(out, "NULL AS \"__vt_empty\"");
    sb_adds(out, " FROM ");
    add_read_parquet(out, in->paths, in->n_paths, join);
    sb_adds(out, " AS d");
    if (join) {
        sb_adds(out, " JOIN (VALUES ");
        for (size_t i = 0; i < in->n_paths; i++) {
            if (i)
                sb_adds(out, ", ");
            sb_addc(out, '(');
            sb_add_sql_string(out, in->paths[i]);
            for (size_t k = 0; k < in->n_partitions; k++) {
                const char *v = in->partition_values[i * in->n_partitions + k];
                sb_adds(out, ", ");
                if (v)
                    sb_add_sql_string(out, v);
                else
                    sb_adds(out, "NULL");
            }
            sb_addc(out, ')');
        }
        sb_adds(out, ") AS p(\"" FILE_COL "\"");
        for (size_t k = 0; k < in->n_partitions; k++)
            sb_addf(out, ", \"__vt_p%zu\"", k);
        sb_adds(out, ") ON d.\"" FILE_COL "\" = p.\"" FILE_COL "\"");
    }
    if (out->overflow)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "SELECT for the snapshot is too large");
    return VT_ERR_OK;
}

enum vt_err source_prebuilt_select_sql(const struct source_snapshot *snap,
                                       const struct strvec *columns, struct strbuf *out,
                                       struct vt_error *err)
{
    if (!snap->select_sql)
        return vt_error_set(err, VT_ERR_INTERNAL, "snapshot has no prebuilt SELECT");
    if (!columns || columns->len == 0) {
        sb_adds(out, snap->select_sql);
        return out->overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory")
                             : VT_ERR_OK;
    }
    sb_adds(out, "SELECT ");
    for (size_t i = 0; i < columns->len; i++) {
        const char *want = columns->items[i];
        const char *found = NULL;
        for (size_t k = 0; k < snap->n_schema; k++)
            if (strcmp(snap->schema_names[k], want) == 0)
                found = snap->schema_names[k];
        for (size_t k = 0; !found && k < snap->n_schema; k++)
            if (strcasecmp(snap->schema_names[k], want) == 0)
                found = snap->schema_names[k];
        if (!found)
            return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                                "columns: \"%s\" is not a column of the source", want);
        if (i)
            sb_adds(out, ", ");
        sb_add_sql_ident(out, found);
    }
    sb_adds(out, " FROM (");
    sb_adds(out, snap->select_sql);
    sb_adds(out, ") AS src");
    return out->overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory") : VT_ERR_OK;
}

static void free_strv(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void delta_snapshot_release(struct source_snapshot *snap)
{
    if (!snap)
        return;
    for (size_t i = 0; snap->files && i < snap->n_files; i++) {
        free(snap->files[i].path);
        free_strv(snap->files[i].partition_values, snap->n_partitions);
    }
    free(snap->files);
    free_strv(snap->partition_columns, snap->n_partitions);
    free_strv(snap->partition_types, snap->n_partitions);
    free_strv(snap->schema_names, snap->n_schema);
    free_strv(snap->schema_types, snap->n_schema);
    free(snap->version);
    free_strv(snap->temp_files, snap->n_temp_files);
    free(snap->select_sql);
    enum cfg_source_kind kind = snap->kind;
    memset(snap, 0, sizeof *snap);
    snap->kind = kind;
}

void delta_snapshot_discard(struct source_snapshot *snap)
{
    if (!snap)
        return;
    for (size_t i = 0; snap->temp_files && i < snap->n_temp_files; i++)
        if (snap->temp_files[i])
            unlink(snap->temp_files[i]);
    delta_snapshot_release(snap);
}

enum vt_err delta_sql_build_string(const struct delta_sql_input *in, char **out,
                                   struct vt_error *err)
{
    *out = NULL;
    struct strbuf sql;
    sb_init(&sql, 0);
    enum vt_err rc = delta_sql_build(in, &sql, err);
    if (rc == VT_ERR_OK && !(*out = sb_detach(&sql, NULL)))
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    sb_release(&sql);
    return rc;
}
