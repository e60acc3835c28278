/*
 * Delta schemaString (Spark's JSON schema) -> a tree of typed fields with their
 * DuckDB type text. The mapping is listed in delta.h. Nesting and field counts
 * are bounded (the schema comes from storage); a type we cannot represent
 * (interval, unknown names) fails with the column's name; variant becomes
 * JSON.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sources/delta.h"
#include "util/limits.h"
#include "util/strbuf.h"

static void type_free(struct delta_type *t);

static void field_release(struct delta_field *f)
{
    free(f->name);
    free(f->physical);
    if (f->type) {
        type_free(f->type);
        free(f->type);
    }
}

static void type_free(struct delta_type *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->duck);
    for (size_t i = 0; i < t->n_fields; i++)
        field_release(&t->fields[i]);
    free(t->fields);
    if (t->elem) {
        type_free(t->elem);
        free(t->elem);
    }
    if (t->key) {
        type_free(t->key);
        free(t->key);
    }
}

void delta_schema_release(struct delta_schema *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        field_release(&s->fields[i]);
    free(s->fields);
    s->fields = NULL;
    s->n = 0;
}

static const struct {
    const char *delta;
    const char *duck;
} primitives[] = {
    {"string", "VARCHAR"},     {"long", "BIGINT"},      {"integer", "INTEGER"},
    {"short", "SMALLINT"},     {"byte", "TINYINT"},     {"float", "FLOAT"},
    {"double", "DOUBLE"},      {"boolean", "BOOLEAN"},  {"binary", "BLOB"},
    {"date", "DATE"},          {"timestamp", "TIMESTAMP WITH TIME ZONE"},
    {"timestamp_ntz", "TIMESTAMP"},
    /* Served as JSON text (variant.c decodes the binary encoding). */
    {"variant", "JSON"},
};

/* "decimal(p,s)" with 1 <= p <= 38, 0 <= s <= p; plain "decimal" is (10,0). */
static bool parse_decimal(const char *s, int *p, int *sc)
{
    if (strcmp(s, "decimal") == 0) {
        *p = 10;
        *sc = 0;
        return true;
    }
    if (strncmp(s, "decimal(", 8) != 0)
        return false;
    const char *q = s + 8;
    char *end;
    while (*q == ' ')
        q++;
    long pp = strtol(q, &end, 10);
    if (end == q)
        return false;
    q = end;
    while (*q == ' ')
        q++;
    if (*q++ != ',')
        return false;
    while (*q == ' ')
        q++;
    long ss = strtol(q, &end, 10);
    if (end == q)
        return false;
    q = end;
    while (*q == ' ')
        q++;
    if (*q++ != ')' || *q)
        return false;
    if (pp < 1 || pp > 38 || ss < 0 || ss > pp)
        return false;
    *p = (int)pp;
    *sc = (int)ss;
    return true;
}

struct parse_ctx {
    struct vt_error *err;
    const char *column; /* top-level column being parsed, for messages */
};

static enum vt_err parse_type(json_t *j, int depth, struct parse_ctx *pc, struct delta_type *out);

static enum vt_err parse_field(json_t *jf, int depth, struct parse_ctx *pc,
                               struct delta_field *out)
{
    if (!json_is_object(jf))
        return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta schema: a field is not an object");
    json_t *jn = json_object_get(jf, "name");
    json_t *jt = json_object_get(jf, "type");
    if (!json_is_string(jn) || !jt)
        return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta schema: a field has no name or type");
    const char *name = json_string_value(jn);
    if (strlen(name) > VT_MAX_COLUMN_NAME_BYTES || strlen(name) == 0)
        return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta schema: field name empty or longer than %d bytes",
                            VT_MAX_COLUMN_NAME_BYTES);
    out->name = strdup(name);
    if (!out->name)
        return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    json_t *md = json_object_get(jf, "metadata");
    json_t *phys = md ? json_object_get(md, "delta.columnMapping.physicalName") : NULL;
    if (json_is_string(phys) && *json_string_value(phys)) {
        out->physical = strdup(json_string_value(phys));
        if (!out->physical)
            return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    json_t *id = md ? json_object_get(md, "delta.columnMapping.id") : NULL;
    out->id = json_is_integer(id) && json_integer_value(id) >= 0 ? json_integer_value(id) : -1;
    out->type = calloc(1, sizeof *out->type);
    if (!out->type)
        return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    const char *saved = pc->column;
    if (depth == 0)
        pc->column = out->name;
    enum vt_err rc = parse_type(jt, depth + 1, pc, out->type);
    pc->column = saved;
    return rc;
}

static enum vt_err render_struct(struct delta_type *t, struct vt_error *err)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, "STRUCT(");
    for (size_t i = 0; i < t->n_fields; i++) {
        if (i)
            sb_adds(&sb, ", ");
        sb_add_sql_ident(&sb, t->fields[i].name);
        sb_addc(&sb, ' ');
        sb_adds(&sb, t->fields[i].type->duck);
    }
    sb_addc(&sb, ')');
    if (sb.overflow) {
        sb_release(&sb);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    t->duck = sb_detach(&sb, NULL);
    return VT_ERR_OK;
}

static enum vt_err parse_type(json_t *j, int depth, struct parse_ctx *pc, struct delta_type *out)
{
    const char *col = pc->column ? pc->column : "?";
    if (depth > VT_DELTA_MAX_SCHEMA_DEPTH)
        return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta schema: column \"%s\" is nested deeper than %d levels", col,
                            VT_DELTA_MAX_SCHEMA_DEPTH);
    if (json_is_string(j)) {
        const char *s = json_string_value(j);
        out->kind = DELTA_T_PRIMITIVE;
        out->name = strdup(s);
        if (!out->name)
            return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < sizeof primitives / sizeof primitives[0]; i++) {
            if (strcmp(s, primitives[i].delta) == 0) {
                out->duck = strdup(primitives[i].duck);
                return out->duck ? VT_ERR_OK
                                 : vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            }
        }
        int p, sc;
        if (parse_decimal(s, &p, &sc)) {
            char buf[32];
            snprintf(buf, sizeof buf, "DECIMAL(%d,%d)", p, sc);
            out->duck = strdup(buf);
            return out->duck ? VT_ERR_OK
                             : vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        char shown[64];
        snprintf(shown, sizeof shown, "%s", s);
        return vt_error_set(pc->err, VT_ERR_SOURCE_UNSUPPORTED,
                            "Delta column \"%s\" has unsupported type \"%s\"", col, shown);
    }
    if (!json_is_object(j))
        return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta schema: column \"%s\" has a malformed type", col);
    const char *kind = json_string_value(json_object_get(j, "type"));
    if (!kind)
        return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta schema: column \"%s\" has a type without \"type\"", col);
    if (strcmp(kind, "struct") == 0) {
        out->kind = DELTA_T_STRUCT;
        json_t *jfs = json_object_get(j, "fields");
        if (!json_is_array(jfs))
            return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                                "Delta schema: struct without fields in column \"%s\"", col);
        size_t n = json_array_size(jfs);
        if (n > VT_DELTA_MAX_COLUMNS)
            return vt_error_set(pc->err, VT_ERR_LIMIT_EXCEEDED,
                                "Delta schema: more than %d fields in a struct",
                                VT_DELTA_MAX_COLUMNS);
        if (n == 0)
            return vt_error_set(pc->err, VT_ERR_SOURCE_UNSUPPORTED,
                                "Delta schema: empty struct in column \"%s\"", col);
        out->fields = calloc(n, sizeof *out->fields);
        if (!out->fields)
            return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < n; i++) {
            out->n_fields = i + 1;
            enum vt_err rc = parse_field(json_array_get(jfs, i), depth, pc, &out->fields[i]);
            if (rc != VT_ERR_OK)
                return rc;
        }
        return render_struct(out, pc->err);
    }
    if (strcmp(kind, "array") == 0) {
        out->kind = DELTA_T_ARRAY;
        json_t *je = json_object_get(j, "elementType");
        if (!je)
            return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                                "Delta schema: array without elementType in column \"%s\"", col);
        out->elem = calloc(1, sizeof *out->elem);
        if (!out->elem)
            return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        enum vt_err rc = parse_type(je, depth + 1, pc, out->elem);
        if (rc != VT_ERR_OK)
            return rc;
        size_t l = strlen(out->elem->duck);
        out->duck = malloc(l + 3);
        if (!out->duck)
            return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        memcpy(out->duck, out->elem->duck, l);
        memcpy(out->duck + l, "[]", 3);
        return VT_ERR_OK;
    }
    if (strcmp(kind, "map") == 0) {
        out->kind = DELTA_T_MAP;
        json_t *jk = json_object_get(j, "keyType"), *jv = json_object_get(j, "valueType");
        if (!jk || !jv)
            return vt_error_set(pc->err, VT_ERR_SOURCE_UNAVAILABLE,
                                "Delta schema: map without keyType/valueType in column \"%s\"",
                                col);
        out->key = calloc(1, sizeof *out->key);
        out->elem = calloc(1, sizeof *out->elem);
        if (!out->key || !out->elem)
            return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        enum vt_err rc = parse_type(jk, depth + 1, pc, out->key);
        if (rc == VT_ERR_OK)
            rc = parse_type(jv, depth + 1, pc, out->elem);
        if (rc != VT_ERR_OK)
            return rc;
        struct strbuf sb;
        sb_init(&sb, 0);
        sb_addf(&sb, "MAP(%s, %s)", out->key->duck, out->elem->duck);
        if (sb.overflow) {
            sb_release(&sb);
            return vt_error_set(pc->err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        out->duck = sb_detach(&sb, NULL);
        return VT_ERR_OK;
    }
    char shown[64];
    snprintf(shown, sizeof shown, "%s", kind);
    return vt_error_set(pc->err, VT_ERR_SOURCE_UNSUPPORTED,
                        "Delta column \"%s\" has unsupported type \"%s\"", col, shown);
}

enum vt_err delta_schema_parse(const char *schema_json, size_t len, struct delta_schema *out,
                               struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loadb(schema_json, len, 0, &jerr);
    if (!root)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                            "Delta metaData.schemaString is not valid JSON: %s", jerr.text);
    enum vt_err rc = VT_ERR_OK;
    const char *kind = json_string_value(json_object_get(root, "type"));
    json_t *jfs = json_object_get(root, "fields");
    if (!kind || strcmp(kind, "struct") != 0 || !json_is_array(jfs)) {
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                          "Delta metaData.schemaString is not a struct type");
        goto done;
    }
    size_t n = json_array_size(jfs);
    if (n > VT_DELTA_MAX_COLUMNS) {
        rc = vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "Delta schema has more than %d columns",
                          VT_DELTA_MAX_COLUMNS);
        goto done;
    }
    out->fields = calloc(n ? n : 1, sizeof *out->fields);
    if (!out->fields) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    struct parse_ctx pc = {.err = err};
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        out->n = i + 1;
        rc = parse_field(json_array_get(jfs, i), 0, &pc, &out->fields[i]);
    }
    /* Column names must be unique case-insensitively (Spark and DuckDB both
     * resolve names that way). */
    for (size_t i = 0; i < out->n && rc == VT_ERR_OK; i++)
        for (size_t k = i + 1; k < out->n && rc == VT_ERR_OK; k++)
            if (strcasecmp(out->fields[i].name, out->fields[k].name) == 0)
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                  "Delta schema has duplicate column \"%s\"",
                                  out->fields[k].name);
done:
    json_decref(root);
    if (rc != VT_ERR_OK)
        delta_schema_release(out);
    return rc;
}

bool delta_type_has_physical_names(const struct delta_type *t)
{
    if (!t)
        return false;
    for (size_t i = 0; i < t->n_fields; i++)
        if (t->fields[i].physical || delta_type_has_physical_names(t->fields[i].type))
            return true;
    return delta_type_has_physical_names(t->elem) || delta_type_has_physical_names(t->key);
}

bool delta_type_has_variant(const struct delta_type *t)
{
    if (!t)
        return false;
    if (t->kind == DELTA_T_PRIMITIVE)
        return t->name && strcmp(t->name, "variant") == 0;
    for (size_t i = 0; i < t->n_fields; i++)
        if (delta_type_has_variant(t->fields[i].type))
            return true;
    return delta_type_has_variant(t->elem) || delta_type_has_variant(t->key);
}
