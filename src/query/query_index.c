/*
 * The glue between a validated query request and the native equality index
 * (src/index): the request's eq/in predicates become index_term lists in the
 * index's key domains, so the handler can answer the query with index_match
 * and the row store instead of DuckDB. Eligibility and value normalisation
 * are query_index_terms' (query_sql.c); this file only changes the form.
 */
#include "index/index.h"
#include "query/query_int.h"

bool query_index_match_terms(const struct query_request *req, const struct vt_index *ix,
                             struct arena *arena, const struct index_term **out_terms,
                             size_t *out_n, bool *out_empty)
{
    const struct query_index_term *qt;
    size_t n;
    *out_terms = NULL;
    *out_n = 0;
    *out_empty = false;
    if (!ix || !query_index_terms(req, arena, &qt, &n))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!index_has_column(ix, qt[i].col))
            return false;
    struct index_term *terms = arena_alloc(arena, n * sizeof *terms);
    if (!terms)
        return false;
    for (size_t i = 0; i < n; i++) {
        enum index_domain dom = index_column_domain(ix, qt[i].col);
        struct index_key *keys = arena_calloc(arena, (qt[i].nvals ? qt[i].nvals : 1) * sizeof *keys);
        if (!keys)
            return false;
        for (size_t k = 0; k < qt[i].nvals; k++) {
            const struct query_value *v = &qt[i].vals[k];
            keys[k].domain = dom;
            switch (dom) {
            case INDEX_DOMAIN_INT:
                keys[k].i = v->u.i;
                break;
            case INDEX_DOMAIN_UINT:
                /* >= 0: out-of-range values were dropped; DOUBLE only for
                 * integral values in [2^63, 2^64) */
                keys[k].u = v->kind == QUERY_VALUE_DOUBLE ? (uint64_t)v->u.d : (uint64_t)v->u.i;
                break;
            case INDEX_DOMAIN_BOOL:
                keys[k].i = v->u.b ? 1 : 0;
                break;
            case INDEX_DOMAIN_STRING:
                keys[k].s = v->u.s.ptr;
                keys[k].len = v->u.s.len;
                break;
            }
        }
        /* index_match wants n_keys >= 1; a term that no value can satisfy
         * makes the whole conjunction empty. */
        if (qt[i].nvals == 0)
            *out_empty = true;
        terms[i] = (struct index_term){qt[i].col, keys, qt[i].nvals};
    }
    *out_terms = terms;
    *out_n = n;
    return true;
}
