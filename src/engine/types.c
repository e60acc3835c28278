/*
 * A DuckDB type's text (engine.h, eng_type_text) as DESCRIBE writes it, for
 * the types whose text is fixed or has its parameters in the C API
 * (DECIMAL's width and scale). The C API has no type-to-text: without this
 * the build asked DuckDB for it with a DESCRIBE of the probe's and the
 * table's SELECT, two more statements on the start's critical path. Nested,
 * ENUM, aliased (JSON, user types) and any other type answer false, and the
 * caller asks DESCRIBE as before. tests/unit/engine/test_types.c compares
 * every text here with DESCRIBE's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine/engine.h"

bool eng_type_text(duckdb_logical_type lt, char *out, size_t cap)
{
    if (!lt || cap == 0)
        return false;
    char *alias = duckdb_logical_type_get_alias(lt);
    if (alias) {
        duckdb_free(alias);
        return false;
    }
    const char *t = NULL;
    switch (duckdb_get_type_id(lt)) {
    case DUCKDB_TYPE_BOOLEAN: t = "BOOLEAN"; break;
    case DUCKDB_TYPE_TINYINT: t = "TINYINT"; break;
    case DUCKDB_TYPE_SMALLINT: t = "SMALLINT"; break;
    case DUCKDB_TYPE_INTEGER: t = "INTEGER"; break;
    case DUCKDB_TYPE_BIGINT: t = "BIGINT"; break;
    case DUCKDB_TYPE_HUGEINT: t = "HUGEINT"; break;
    case DUCKDB_TYPE_UTINYINT: t = "UTINYINT"; break;
    case DUCKDB_TYPE_USMALLINT: t = "USMALLINT"; break;
    case DUCKDB_TYPE_UINTEGER: t = "UINTEGER"; break;
    case DUCKDB_TYPE_UBIGINT: t = "UBIGINT"; break;
    case DUCKDB_TYPE_UHUGEINT: t = "UHUGEINT"; break;
    case DUCKDB_TYPE_FLOAT: t = "FLOAT"; break;
    case DUCKDB_TYPE_DOUBLE: t = "DOUBLE"; break;
    case DUCKDB_TYPE_DATE: t = "DATE"; break;
    case DUCKDB_TYPE_TIME: t = "TIME"; break;
    case DUCKDB_TYPE_TIME_TZ: t = "TIME WITH TIME ZONE"; break;
    case DUCKDB_TYPE_TIMESTAMP: t = "TIMESTAMP"; break;
    case DUCKDB_TYPE_TIMESTAMP_TZ: t = "TIMESTAMP WITH TIME ZONE"; break;
    case DUCKDB_TYPE_TIMESTAMP_S: t = "TIMESTAMP_S"; break;
    case DUCKDB_TYPE_TIMESTAMP_MS: t = "TIMESTAMP_MS"; break;
    case DUCKDB_TYPE_TIMESTAMP_NS: t = "TIMESTAMP_NS"; break;
    case DUCKDB_TYPE_INTERVAL: t = "INTERVAL"; break;
    case DUCKDB_TYPE_VARCHAR: t = "VARCHAR"; break;
    case DUCKDB_TYPE_BLOB: t = "BLOB"; break;
    case DUCKDB_TYPE_UUID: t = "UUID"; break;
    case DUCKDB_TYPE_DECIMAL: {
        int n = snprintf(out, cap, "DECIMAL(%u,%u)", (unsigned)duckdb_decimal_width(lt),
                         (unsigned)duckdb_decimal_scale(lt));
        return n > 0 && (size_t)n < cap;
    }
    default:
        return false;
    }
    int n = snprintf(out, cap, "%s", t);
    return n > 0 && (size_t)n < cap;
}
