/*
 * The deleted-row sets SQL statements consult: every deletion vector a
 * snapshot loaded is registered here under a number, and the SELECT over the
 * snapshot's files keeps a row only when
 *
 *     NOT vt_dv_deleted(<the file's number>, file_row_number)
 *
 * (scan.c writes it; number 0 means "no vector"). The numbers are never
 * reused, so a statement cannot meet another snapshot's vector; the
 * snapshot that registered a vector removes it on release, after the last
 * statement over its files (a lazy generation's view) is gone.
 *
 * vt_dv_deleted is a DuckDB scalar function registered on the process
 * database (source_functions_register, from main.c) and on the databases
 * tools and tests open through source_duck_open. DuckDB calls it from its own
 * threads: lookups take a read lock once per chunk.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sources/delta.h"
#include "sources/sources_internal.h"

struct dv_node {
    struct dv_node *next;
    uint64_t id;
    struct delta_dv *dv;
};

static struct {
    pthread_rwlock_t lock;
    struct dv_node **buckets;
    size_t n_buckets, n;
    uint64_t next_id;
} reg = {.lock = PTHREAD_RWLOCK_INITIALIZER, .next_id = 1};

static size_t slot(uint64_t id, size_t nb)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (nb - 1);
}

uint64_t dvset_add(struct delta_dv *dv)
{
    struct dv_node *nd = calloc(1, sizeof *nd);
    if (!nd)
        return 0;
    pthread_rwlock_wrlock(&reg.lock);
    if (reg.n >= reg.n_buckets) {
        size_t nb = reg.n_buckets ? reg.n_buckets * 2 : 256;
        struct dv_node **b = calloc(nb, sizeof *b);
        if (!b) {
            pthread_rwlock_unlock(&reg.lock);
            free(nd);
            return 0;
        }
        for (size_t i = 0; i < reg.n_buckets; i++)
            for (struct dv_node *p = reg.buckets[i], *next; p; p = next) {
                next = p->next;
                size_t s = slot(p->id, nb);
                p->next = b[s];
                b[s] = p;
            }
        free(reg.buckets);
        reg.buckets = b;
        reg.n_buckets = nb;
    }
    nd->id = reg.next_id++;
    nd->dv = dv;
    size_t s = slot(nd->id, reg.n_buckets);
    nd->next = reg.buckets[s];
    reg.buckets[s] = nd;
    reg.n++;
    uint64_t id = nd->id;
    pthread_rwlock_unlock(&reg.lock);
    return id;
}

void dvset_remove(uint64_t id)
{
    if (!id)
        return;
    struct dv_node *gone = NULL;
    pthread_rwlock_wrlock(&reg.lock);
    if (reg.n_buckets) {
        struct dv_node **pp = &reg.buckets[slot(id, reg.n_buckets)];
        for (; *pp; pp = &(*pp)->next)
            if ((*pp)->id == id) {
                gone = *pp;
                *pp = gone->next;
                reg.n--;
                break;
            }
    }
    pthread_rwlock_unlock(&reg.lock);
    if (gone) {
        delta_dv_free(gone->dv);
        free(gone);
    }
}

/* Under the read lock. */
static const struct delta_dv *lookup(uint64_t id)
{
    if (!reg.n_buckets)
        return NULL;
    for (struct dv_node *p = reg.buckets[slot(id, reg.n_buckets)]; p; p = p->next)
        if (p->id == id)
            return p->dv;
    return NULL;
}

uint64_t dvset_deleted_in(uint64_t id, uint64_t lo, uint64_t hi)
{
    if (!id)
        return 0;
    pthread_rwlock_rdlock(&reg.lock);
    const struct delta_dv *dv = lookup(id);
    uint64_t n = dv ? delta_dv_range_cardinality(dv, lo, hi) : 0;
    pthread_rwlock_unlock(&reg.lock);
    return n;
}

size_t dvset_count(void)
{
    pthread_rwlock_rdlock(&reg.lock);
    size_t n = reg.n;
    pthread_rwlock_unlock(&reg.lock);
    return n;
}

/* vt_dv_deleted(BIGINT id, BIGINT position) -> BOOLEAN */
static void dv_deleted_fn(duckdb_function_info info, duckdb_data_chunk input,
                          duckdb_vector output)
{
    idx_t n = duckdb_data_chunk_get_size(input);
    duckdb_vector iv = duckdb_data_chunk_get_vector(input, 0);
    duckdb_vector pv = duckdb_data_chunk_get_vector(input, 1);
    const int64_t *ids = duckdb_vector_get_data(iv);
    const int64_t *pos = duckdb_vector_get_data(pv);
    uint64_t *ivalid = duckdb_vector_get_validity(iv);
    uint64_t *pvalid = duckdb_vector_get_validity(pv);
    bool *out = duckdb_vector_get_data(output);
    pthread_rwlock_rdlock(&reg.lock);
    int64_t last = 0;
    const struct delta_dv *dv = NULL;
    bool bad = false;
    for (idx_t i = 0; i < n; i++) {
        /* No vector (0), or a NULL the statement never passes: kept. */
        if (ids[i] == 0 || !duckdb_validity_row_is_valid(ivalid, i) ||
            !duckdb_validity_row_is_valid(pvalid, i)) {
            out[i] = false;
            continue;
        }
        if (ids[i] != last) {
            last = ids[i];
            dv = lookup((uint64_t)ids[i]);
            if (!dv) {
                bad = true;
                break;
            }
        }
        out[i] = pos[i] >= 0 && delta_dv_contains(dv, (uint64_t)pos[i]);
    }
    pthread_rwlock_unlock(&reg.lock);
    if (bad)
        duckdb_scalar_function_set_error(info, "a deletion vector of this dataset's snapshot "
                                               "was released; reload the dataset");
}

enum vt_err source_functions_register(duckdb_database db, struct vt_error *err)
{
    duckdb_connection con;
    if (duckdb_connect(db, &con) != DuckDBSuccess)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot connect to DuckDB");
    duckdb_scalar_function f = duckdb_create_scalar_function();
    duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
    duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
    duckdb_scalar_function_set_name(f, SOURCE_DV_FUNCTION);
    duckdb_scalar_function_add_parameter(f, bigint);
    duckdb_scalar_function_add_parameter(f, bigint);
    duckdb_scalar_function_set_return_type(f, boolean);
    duckdb_scalar_function_set_function(f, dv_deleted_fn);
    duckdb_state st = duckdb_register_scalar_function(con, f);
    duckdb_destroy_logical_type(&bigint);
    duckdb_destroy_logical_type(&boolean);
    duckdb_destroy_scalar_function(&f);
    enum vt_err rc = st == DuckDBSuccess
                         ? source_variant_register(con, err)
                         : vt_error_set(err, VT_ERR_INTERNAL, "cannot register %s",
                                        SOURCE_DV_FUNCTION);
    duckdb_disconnect(&con);
    return rc;
}
