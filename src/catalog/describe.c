/*
 * The catalog as JSON: a dataset's status entry and its schema description,
 * the one form every front end shows them in (GET /datasets, /status and
 * /schema; the MCP list_datasets and describe_dataset tools).
 */
#include "catalog/catalog.h"
#include "util/jsonw.h"
#include "util/timeutil.h"

static void write_time_or_null(struct jw *w, const char *key, int64_t wall_us)
{
    if (wall_us <= 0) {
        jw_knull(w, key);
        return;
    }
    char ts[32];
    time_format_rfc3339(wall_us, ts);
    jw_kstr(w, key, ts);
}

void cat_write_status(struct jw *w, const struct cat_status *st)
{
    jw_obj_begin(w);
    jw_kstr(w, "name", st->name);
    jw_kstr(w, "state", cat_state_name(st->state));
    jw_kstr(w, "kind", config_source_kind_name(st->kind));
    jw_kstr(w, "residency", st->lazy ? "lazy" : "memory");
    if (st->storage_bytes >= 0)
        jw_kint(w, "storage_bytes", st->storage_bytes);
    else
        jw_knull(w, "storage_bytes");
    jw_kstr(w, "generation_id", st->has_generation ? st->generation_id : NULL);
    write_time_or_null(w, "last_refresh_at", st->last_refresh_at_us);
    if (st->last_refresh_duration_ms >= 0)
        jw_kint(w, "last_refresh_duration_ms", st->last_refresh_duration_ms);
    else
        jw_knull(w, "last_refresh_duration_ms");
    write_time_or_null(w, "next_refresh_at", st->next_refresh_at_us);
    jw_kstr(w, "refresh_source", cat_refresh_source_name(st->refresh_source));
    jw_kint(w, "consecutive_failures", st->consecutive_failures);
    jw_kstr(w, "last_error", st->last_error);
    jw_kint(w, "rows", st->rows);
    jw_kint(w, "columns", st->columns);
    if (st->delta_version >= 0)
        jw_kint(w, "delta_version", st->delta_version);
    else
        jw_knull(w, "delta_version");
    jw_kbool(w, "lazy", st->lazy);
    /* the index fast path: what it holds in memory, and in its file (the
     * kernel's page cache, not the process) */
    jw_key(w, "index");
    jw_obj_begin(w);
    jw_kstr(w, "state", cat_index_state_name(st->index_state));
    jw_kint(w, "memory_bytes", st->index_bytes);
    jw_kint(w, "disk_bytes", st->index_disk_bytes);
    jw_kint(w, "row_store_bytes", st->row_store_bytes);
    jw_kint(w, "sorted_bytes", st->sorted_bytes);
    jw_kint(w, "json_pages_bytes", st->json_pages_bytes);
    jw_obj_end(w);
    jw_key(w, "depends_on");
    jw_arr_begin(w);
    for (size_t i = 0; i < st->depends_on.len; i++)
        jw_str(w, st->depends_on.items[i]);
    jw_arr_end(w);
    jw_obj_end(w);
}

void cat_write_schema(struct jw *w, const char *name, const struct cat_generation *gen)
{
    jw_obj_begin(w);
    jw_kstr(w, "name", name);
    jw_kint(w, "rows", gen->rows);
    jw_key(w, "columns");
    jw_arr_begin(w);
    for (size_t i = 0; i < gen->n_cols; i++) {
        const struct cat_column *c = &gen->cols[i];
        jw_obj_begin(w);
        jw_kstr(w, "name", c->name);
        jw_kstr(w, "type", c->type_sql);
        jw_kstr(w, "logical", cat_logical_name(c->logical));
        jw_kbool(w, "nullable", c->nullable);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "indexed");
    jw_arr_begin(w);
    for (size_t i = 0; i < gen->n_cols; i++)
        if (cat_generation_is_indexed(gen, i))
            jw_str(w, gen->cols[i].name);
    jw_arr_end(w);
    jw_key(w, "sample");
    if (gen->sample_json)
        jw_raw(w, gen->sample_json);
    else
        jw_null(w);
    jw_obj_end(w);
}
