/*
 * What a build derives from a generation once its relation exists: the
 * sample row shown by the schema endpoint (and, as they land, the equality
 * index and other per-generation structures).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_internal.h"

static enum vt_err derive_sample(duckdb_connection con, struct cat_generation *gen,
                                 struct vt_error *err)
{
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT to_json(t)::VARCHAR FROM (SELECT * FROM %s LIMIT 1) t",
             gen->relation);
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        vt_error_set(err, VT_ERR_BUILD_FAILED, "sample row: %s", duckdb_result_error(&res));
        duckdb_destroy_result(&res);
        return VT_ERR_BUILD_FAILED;
    }
    if (duckdb_row_count(&res) > 0) {
        char *v = duckdb_value_varchar(&res, 0, 0);
        gen->sample_json = v ? strdup(v) : NULL;
        duckdb_free(v);
    }
    duckdb_destroy_result(&res);
    return VT_ERR_OK;
}

enum vt_err cat_generation_derive(struct cat_catalog *cat, duckdb_connection con,
                                  struct cat_generation *gen,
                                  const struct vt_dataset_config *cfg, struct vt_error *err)
{
    (void)cat;
    (void)cfg;
    return derive_sample(con, gen, err);
}

bool cat_generation_is_indexed(const struct cat_generation *gen, size_t col)
{
    (void)gen;
    (void)col;
    return false; /* the equality index lands with the query issue */
}
