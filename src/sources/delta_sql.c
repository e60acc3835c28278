/*
 * Delta's column conversions for the SELECT over a snapshot (scan.c builds
 * the statement; these write one column's value expression):
 *
 *   data column       CAST to the table's type; a struct/list/map holding
 *                     column-mapped (renamed) fields is rebuilt field by field
 *                     from the physical names the probe found in the files; a
 *                     zone-less timestamp in the files becomes an instant (UTC)
 *   partition column  the text from partitionValues, CAST to its type (string
 *                     as is, binary through encode())
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sources/delta.h"
#include "sources/sources_internal.h"
#include "util/limits.h"
#include "util/strbuf.h"

static const struct source_probe_type *probe_child(const struct source_probe_type *p,
                                                  const char *name)
{
    if (!p || p->kind != SOURCE_T_STRUCT)
        return NULL;
    for (size_t i = 0; i < p->n_children; i++)
        if (p->child_names[i] && strcasecmp(p->child_names[i], name) == 0)
            return &p->children[i];
    return NULL;
}

static const char *probe_child_name(const struct source_probe_type *p, const char *name)
{
    for (size_t i = 0; p && i < p->n_children; i++)
        if (p->child_names[i] && strcasecmp(p->child_names[i], name) == 0)
            return p->child_names[i];
    return name;
}

/* A variant read from a file: the group (metadata, value) as JSON text. A
 * shredded group (typed_value) or any other shape is not readable: the
 * statement fails naming the feature when it runs. */
static void add_variant(struct strbuf *sb, const char *e, const struct source_probe_type *p)
{
    const struct source_probe_type *m = probe_child(p, "metadata");
    const struct source_probe_type *v = probe_child(p, "value");
    if (!p || p->kind != SOURCE_T_STRUCT || !m || !v || probe_child(p, "typed_value") ||
        m->duck_type_id != DUCKDB_TYPE_BLOB || v->duck_type_id != DUCKDB_TYPE_BLOB) {
        sb_adds(sb, "CAST(error('a variant column is stored shredded or in an unknown shape "
                    "(reader feature variantShredding-preview): vitrine reads unshredded "
                    "variants only') AS JSON)");
        return;
    }
    sb_addf(sb,
            "CAST(CASE WHEN (%s) IS NULL THEN NULL ELSE " SOURCE_VARIANT_FUNCTION
            "(struct_extract(%s, '%s'), struct_extract(%s, '%s')) END AS JSON)",
            e, e, probe_child_name(p, "metadata"), e, probe_child_name(p, "value"));
}

/* Converts the value `e` read from a file (shape `p`) to Delta type `t`. Only
 * types with column-mapped (renamed) fields inside need rebuilding; the rest
 * is one CAST (DuckDB casts structs by field name and fills missing fields
 * with NULL, which is what schema evolution needs). */
static void add_convert(struct strbuf *sb, const char *e, const struct delta_type *t,
                        const struct source_probe_type *p, int depth)
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
    if (t->kind == DELTA_T_PRIMITIVE && strcmp(t->name, "variant") == 0) {
        add_variant(sb, e, p);
        return;
    }
    if ((!delta_type_has_physical_names(t) && !delta_type_has_variant(t)) || !p ||
        depth > VT_DELTA_MAX_SCHEMA_DEPTH) {
        sb_addf(sb, "CAST(%s AS %s)", e, t->duck);
        return;
    }
    if (t->kind == DELTA_T_STRUCT && p->kind == SOURCE_T_STRUCT) {
        sb_addf(sb, "CASE WHEN (%s) IS NULL THEN NULL ELSE struct_pack(", e);
        for (size_t i = 0; i < t->n_fields; i++) {
            const struct delta_field *f = &t->fields[i];
            const char *phys = f->physical ? f->physical : f->name;
            const struct source_probe_type *cp = probe_child(p, phys);
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
    if (t->kind == DELTA_T_ARRAY && p->kind == SOURCE_T_LIST && p->n_children == 1) {
        char var[32];
        snprintf(var, sizeof var, "__vt_x%d", depth);
        sb_addf(sb, "list_transform(%s, lambda %s: ", e, var);
        add_convert(sb, var, t->elem, &p->children[0], depth + 1);
        sb_addc(sb, ')');
        return;
    }
    if (t->kind == DELTA_T_MAP && p->kind == SOURCE_T_MAP && p->n_children == 1) {
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

void delta_sql_convert(const void *arg, const char *ref, const struct source_probe_type *file_type,
                       struct strbuf *out)
{
    add_convert(out, ref, arg, file_type, 0);
}

void delta_sql_convert_partition(const void *arg, const char *ref,
                                 const struct source_probe_type *file_type, struct strbuf *out)
{
    (void)file_type;
    add_partition_expr(out, ref, arg);
}
