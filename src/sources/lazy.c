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
 * The values, comparisons and verdicts are lazy_stats.c's: anything not
 * understood means "may match", so pruning never changes an answer.
 *
 * Generations over kept objects (S3: sparse files of the range cache) read
 * through the storage's reader (storage_reader in sources_internal.h): the
 * build fetched the footers; each request first makes present, for the files
 * it reads, the chunks (and bloom filters) of the columns it references in
 * every row group, with the footer (measured with strace: that is exactly
 * what DuckDB's reader touches), held until the run ends. A statement over
 * the whole view (export, SQL) makes whole objects present first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/engine.h"
#include "sources/rangecache.h"
#include "sources/sources_internal.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

struct lstat {
    struct lazy_val min, max;       /* kind 0: unknown */
    int64_t nulls;              /* -1 unknown */
    int64_t off, end;           /* its chunks' bytes (all leaves); end 0: none */
    int64_t boff, bend;         /* its bloom filters' bytes; bend 0: none */
};

struct lfile {
    char *path;                 /* what DuckDB reads */
    int64_t size;
    int64_t mtime;              /* local files: what stat said at build (changed()) */
    int64_t ino, dev;
    bool local;                 /* a local file (pinned or in place), stat'ed at build */
    int64_t rows;
    size_t rg0, n_rg;           /* its row groups in lazy->rgs */
    char **pvals;               /* borrowed from the snapshot's files */
    uint64_t dv;                /* its deletion vector (dvset.c), 0 none */
    bool pinned;                /* a link of the snapshot: cannot change */
    /* A kept object of the storage's reader (the local file at `path`
     * holds what was fetched of it so far), 0 for a whole local file. */
    size_t kept;
    int64_t footer_off;
};

struct source_lazy {
    size_t n_files, n_rgs, n_cols;
    struct lfile *files;
    int64_t *rg_rows;           /* n_rgs */
    struct lstat *stats;        /* n_rgs * n_cols; partition columns have none */
    char **col_names;           /* output columns (the snapshot's schema) */
    enum lazy_class *col_class;
    int *col_partition;         /* -1, or partition index */
    size_t n_partitions;
    enum lazy_class *part_class;
    struct lazy_val *part_vals;     /* n_files * n_partitions, parsed */
    char *select_list;
    char *carrier;              /* every file column as a typed NULL (scan.h's carrier) */
    char **projection;          /* the dataset's `columns`, or NULL */
    size_t n_projection;
    char *strings;              /* arena of the stats' text (one block) */
    int64_t rows;
    size_t bytes;
    size_t footers;             /* files whose footer the build read */
    /* Where more of the kept objects comes from (S3); NULL when every file
     * is a whole local file. */
    bool remote;
    struct storage_reader *reader;
};

/* ---- building ------------------------------------------------------------------- */

static void lazy_free(struct source_lazy *lz)
{
    if (!lz)
        return;
    for (size_t i = 0; i < lz->n_files; i++) {
        free(lz->files[i].path);
    }
    free(lz->files);
    storage_reader_close(lz->reader);
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
    free(lz->carrier);
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
    int col;                    /* the output column (log statistics); -1: by leaf */
    char *leaf;
    char *min, *max;            /* NULL: none */
    int64_t nulls;
    int64_t off, len, boff, blen; /* chunk and bloom filter (len 0: none) */
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

/* Makes present, in file i's sparse file, its footer and, in every row group,
 * the chunks and bloom filters of the columns cols[0..n_cols) (all columns
 * with n_cols 0 and cols NULL). */
static enum vt_err ensure_file(const struct source_lazy *lz, size_t i, const bool *cols,
                               size_t n_cols, int64_t deadline_ms, const atomic_bool *cancel,
                               struct range_cache_lease **holds, struct vt_error *err)
{
    const struct lfile *f = &lz->files[i];
    size_t nrg = f->n_rg;
    size_t cap = 1 + nrg * lz->n_cols * 2;
    struct range_cache_span *need = calloc(cap, sizeof *need);
    if (!need)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t n = 0;
    need[n++] = (struct range_cache_span){f->footer_off, f->size - f->footer_off};
    for (size_t g = 0; g < nrg; g++)
        for (size_t c = 0; c < lz->n_cols; c++) {
            if (n_cols && (c >= n_cols || !cols[c]))
                continue;
            const struct lstat *s = &lz->stats[(f->rg0 + g) * lz->n_cols + c];
            if (s->end > s->off)
                need[n++] = (struct range_cache_span){s->off, s->end - s->off};
            if (s->bend > s->boff)
                need[n++] = (struct range_cache_span){s->boff, s->bend - s->boff};
        }
    enum vt_err rc =
        lz->reader->ops->ensure(lz->reader, f->kept, need, n, deadline_ms, cancel, holds, err);
    free(need);
    return rc;
}

static int64_t int_or(duckdb_result *res, idx_t col, idx_t row, int64_t dflt)
{
    return duckdb_value_is_null(res, col, row) ? dflt : duckdb_value_int64(res, col, row);
}

/* Where an S3 file's footer starts, from its last 8 bytes (present). */
static int64_t footer_start(const char *path, int64_t size)
{
    unsigned char last[8];
    FILE *f = fopen(path, "rb");
    bool ok = f && size >= 12 && fseeko(f, (off_t)(size - 8), SEEK_SET) == 0 &&
              fread(last, 1, 8, f) == 8;
    if (f)
        fclose(f);
    if (!ok)
        return 0;
    int64_t flen = (int64_t)last[0] | (int64_t)last[1] << 8 | (int64_t)last[2] << 16 |
                   (int64_t)last[3] << 24;
    return flen + 8 <= size ? size - 8 - flen : 0;
}

enum vt_err source_lazy_build(struct source_duck *duck, struct source_snapshot *snap,
                              const struct vt_dataset_config *ds,
                              const struct source_context *ctx,
                              const struct storage_fetch *fetched, struct storage_reader *reader,
                              const struct source_scan_column *cols, size_t n_cols,
                              const struct source_file_stats *file_stats,
                              const char *select_list, struct vt_error *err)
{
    struct source_lazy *lz = calloc(1, sizeof *lz);
    if (!lz) {
        storage_reader_close(reader);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    lz->reader = reader;
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
    bool *from_log = calloc(nf ? nf : 1, sizeof *from_log);
    struct meta_acc acc = {.snap = snap};
    if (!lz->files || !lz->col_names || !lz->col_class || !lz->col_partition ||
        !lz->part_class || !lz->part_vals || !lz->select_list || !file_cols || !sorted ||
        !from_log)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    lz->n_files = rc == VT_ERR_OK ? nf : 0;
    for (size_t i = 0; rc == VT_ERR_OK && i < nf; i++) {
        struct lfile *f = &lz->files[i];
        f->path = strdup(snap->files[i].path);
        f->size = snap->files[i].size;
        f->pvals = snap->files[i].partition_values;
        f->dv = snap->files[i].dv;
        f->pinned = snap->pin_dir && strncmp(f->path, snap->pin_dir, strlen(snap->pin_dir)) == 0;
        struct stat st;
        if (fetched && fetched[i].kept && reader) {
            /* A kept object (S3, in the range cache): the file is ours. */
            lz->remote = true;
            f->pinned = true;
            f->kept = fetched[i].kept;
            f->footer_off = footer_start(f->path, f->size);
        } else {
            /* The log's statistics stand for the footer of a local file
             * (stat'ed all the same: one changed in place is noticed). */
            from_log[i] = file_stats && file_stats[i].rows >= 0;
            if (stat(f->path, &st) == 0) {
                /* Pinned or not: a pin (hard link, kept-open file) shares the
                 * inode, so a file rewritten in place changes under it too. */
                f->mtime = (int64_t)st.st_mtime * 1000000000LL + st.st_mtim.tv_nsec;
                f->ino = (int64_t)st.st_ino;
                f->dev = (int64_t)st.st_dev;
                f->local = true;
            }
        }
        size_t pl = strlen(f->path);
        sorted[i] = f->path ? malloc(pl + 1 + sizeof(size_t)) : NULL;
        if (!f->path || !sorted[i]) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        memcpy(sorted[i], f->path, pl + 1);
        memcpy(sorted[i] + pl + 1, &i, sizeof i);
    }
    /* Every file column, typed as over all the files: a request reading only
     * files written before a column was added still finds it (NULL). */
    if (rc == VT_ERR_OK) {
        struct strbuf cs;
        sb_init(&cs, 0);
        sb_adds(&cs, "SELECT ");
        size_t added = 0;
        for (size_t c = 0; c < n_cols; c++) {
            const struct source_probe_col *pc = cols[c].partition < 0 ? cols[c].file : NULL;
            bool dup = false;
            for (size_t k = 0; k < c && pc && !dup; k++)
                dup = cols[k].partition < 0 && cols[k].file == pc;
            if (!pc || dup || !pc->type.text)
                continue;
            sb_addf(&cs, "%sCAST(NULL AS %s) AS ", added++ ? ", " : "", pc->type.text);
            sb_add_sql_ident(&cs, pc->name);
        }
        sb_adds(&cs, " LIMIT 0");
        if (cs.overflow)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        else if (added)
            lz->carrier = sb_detach(&cs, NULL);
        sb_release(&cs);
    }
    for (size_t c = 0; rc == VT_ERR_OK && c < n_cols; c++) {
        lz->col_names[c] = strdup(cols[c].name);
        lz->col_partition[c] = cols[c].partition;
        file_cols[c] = cols[c].partition < 0 && cols[c].file ? cols[c].file->name : NULL;
        const char *type = snap->n_schema > c ? snap->schema_types[c] : NULL;
        lz->col_class[c] = lazy_class_of(type);
        if (!lz->col_names[c])
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t k = 0; rc == VT_ERR_OK && k < np; k++) {
        lz->part_class[k] = lazy_class_of(snap->partition_types[k]);
        for (size_t i = 0; i < nf; i++) {
            const char *v = snap->files[i].partition_values[k];
            if (v)
                lz->part_vals[i * np + k] = lazy_parse_val(lz->part_class[k], v, strlen(v));
        }
    }
    /* The log's statistics: one row group per file (its rows), each column's
     * bounds from the log. */
    size_t nlog = 0;
    for (size_t i = 0; rc == VT_ERR_OK && i < nf; i++)
        nlog += from_log[i];
    if (nlog && nlog * (n_cols + 1) > VT_LAZY_MAX_CHUNKS) {
        /* More than the metadata kept for planning may hold: the footers'
         * own check below decides (and warns). */
        memset(from_log, 0, nf * sizeof *from_log);
        nlog = 0;
    }
    if (rc == VT_ERR_OK && nlog) {
        acc.cap = nlog * (n_cols + 1);
        acc.rows = calloc(acc.cap, sizeof *acc.rows);
        if (!acc.rows)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; rc == VT_ERR_OK && i < nf; i++) {
        if (!from_log[i])
            continue;
        const struct source_file_stats *fs = &file_stats[i];
        acc.rows[acc.n++] = (struct meta_row){.file = i, .rows = fs->rows, .col = -1,
                                              .nulls = -1};
        for (size_t c = 0; c < n_cols; c++) {
            if (cols[c].partition >= 0 || !cols[c].file)
                continue;
            struct meta_row *m = &acc.rows[acc.n++];
            *m = (struct meta_row){.file = i, .rows = fs->rows, .col = (int)c,
                                   .nulls = fs->nulls ? fs->nulls[c] : -1};
            if ((fs->mins && fs->mins[c] && !(m->min = strdup(fs->mins[c]))) ||
                (fs->maxs && fs->maxs[c] && !(m->max = strdup(fs->maxs[c]))))
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    lz->footers = nf - nlog;
    /* The footers of the other files, once. */
    if (rc == VT_ERR_OK && nf > nlog) {
        qsort(sorted, nf, sizeof *sorted, cmp_str);
        struct strbuf sql;
        sb_init(&sql, 0);
        sb_adds(&sql, "SELECT file_name, row_group_id, row_group_num_rows, path_in_schema, "
                      "stats_min_value, stats_max_value, stats_null_count, "
                      "least(coalesce(nullif(dictionary_page_offset, 0), data_page_offset), "
                      "data_page_offset), total_compressed_size, bloom_filter_offset, "
                      "bloom_filter_length FROM parquet_metadata([");
        for (size_t i = 0, k = 0; i < nf; i++) {
            if (from_log[i])
                continue;
            if (k++)
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
            if (n + acc.n > VT_LAZY_MAX_CHUNKS) {
                /* Too much to keep: local files are served without planning
                 * (a view over every file, as before issue 17); S3 ones
                 * cannot be (queries fetch what the metadata says). */
                bool remote = fetched && nf && fetched[0].kept;
                duckdb_destroy_result(&res);
                sb_release(&sql);
                for (size_t i = 0; i < nf && sorted; i++)
                    free(sorted[i]);
                free(sorted);
                free(file_cols);
                free(from_log);
                for (size_t r = 0; r < acc.n; r++) {
                    free(acc.rows[r].min);
                    free(acc.rows[r].max);
                }
                free(acc.rows);
                lazy_free(lz);
                if (remote)
                    return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED,
                                        "%s: %llu column chunks in the Parquet footers exceed "
                                        "the %d a lazy S3 dataset can plan with",
                                        ds->name, (unsigned long long)n, VT_LAZY_MAX_CHUNKS);
                log_warn("dataset %s: %llu column chunks in the Parquet footers exceed %d: served "
                         "without pruning or counts from statistics",
                         ds->name, (unsigned long long)n, VT_LAZY_MAX_CHUNKS);
                return VT_ERR_OK;
            }
            struct meta_row *grown = realloc(acc.rows, (acc.n + n + 1) * sizeof *acc.rows);
            if (!grown)
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
            else
                acc.rows = grown;
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
                *m = (struct meta_row){.col = -1};
                memcpy(&m->file, *hit + strlen(*hit) + 1, sizeof m->file);
                m->rg = duckdb_value_int64(&res, 1, r);
                m->rows = duckdb_value_int64(&res, 2, r);
                m->leaf = value_text(&res, 3, r);
                m->min = value_text(&res, 4, r);
                m->max = value_text(&res, 5, r);
                m->nulls = int_or(&res, 6, r, -1);
                m->off = int_or(&res, 7, r, 0);
                m->len = int_or(&res, 8, r, 0);
                m->boff = int_or(&res, 9, r, 0);
                m->blen = m->boff ? int_or(&res, 10, r, 0) : 0;
                if (m->boff && !m->blen)
                    m->blen = 64 * 1024; /* no length written: what a header and filter take */
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
        int c = m->col >= 0 ? m->col : m->leaf ? leaf_column(lz, file_cols, m->leaf) : -1;
        if (c < 0)
            continue;
        struct lstat *s = &lz->stats[g * n_cols + (size_t)c];
        /* The bytes of every leaf, as one span each (leaves are stored one
         * after the other). */
        if (m->len > 0) {
            if (!s->end || m->off < s->off)
                s->off = m->off;
            if (m->off + m->len > s->end)
                s->end = m->off + m->len;
        }
        if (m->blen > 0) {
            if (!s->bend || m->boff < s->boff)
                s->boff = m->boff;
            if (m->boff + m->blen > s->bend)
                s->bend = m->boff + m->blen;
        }
        if (seen[g * n_cols + (size_t)c]++) {
            s->min.kind = s->max.kind = 0; /* a nested column: no bounds */
            if (m->nulls < 0 || s->nulls < 0)
                s->nulls = -1;
            continue;
        }
        s->nulls = m->nulls;
        /* Each bound on its own: the log may know one only (a maximum a
         * writer truncated). */
        if (m->min && (m->max || m->col >= 0)) {
            size_t a = strlen(m->min);
            memcpy(sp, m->min, a + 1);
            s->min = lazy_parse_val(lz->col_class[c], sp, a);
            sp += a + 1;
        }
        if (m->max && (m->min || m->col >= 0)) {
            size_t b = strlen(m->max);
            memcpy(sp, m->max, b + 1);
            s->max = lazy_parse_val(lz->col_class[c], sp, b);
            sp += b + 1;
        }
    }
    free(seen);
    for (size_t i = 0; rc == VT_ERR_OK && i < lz->n_files; i++) {
        struct lfile *f = &lz->files[i];
        for (size_t g = 0; g < f->n_rg; g++)
            f->rows += lz->rg_rows[f->rg0 + g];
        lz->rows += f->rows - (int64_t)dvset_deleted_in(f->dv, 0, (uint64_t)f->rows);
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
    free(from_log);
    if (rc != VT_ERR_OK) {
        lazy_free(lz);
        return rc;
    }
    if (lz->remote) {
        /* The build's first look at the rows (a sample) reads the first file
         * (a parallel scan reads several of its row groups at once): present
         * it, held until the build ends. */
        if (lz->n_files && lz->files[0].n_rg)
            rc = ensure_file(lz, 0, NULL, 0, ctx ? ctx->deadline_ms : 0, ctx ? ctx->cancel : NULL,
                             &snap->holds, err);
        if (rc != VT_ERR_OK) {
            lazy_free(lz);
            return rc;
        }
    }
    lz->bytes = sizeof *lz + lz->n_files * sizeof *lz->files + lz->n_rgs * sizeof *lz->rg_rows +
                lz->n_rgs * n_cols * sizeof *lz->stats + text_bytes + strlen(lz->select_list) +
                nf * (np ? np : 1) * sizeof *lz->part_vals;
    for (size_t i = 0; i < lz->n_files; i++)
        lz->bytes += strlen(lz->files[i].path) + 1;
    snap->lazy = lz;
    log_debug("lazy metadata: %zu files (%zu footers read, %zu from the log's statistics), "
              "%zu row groups, %lld rows, %zu bytes",
              lz->n_files, lz->footers, lz->n_files - lz->footers, lz->n_rgs,
              (long long)lz->rows, lz->bytes);
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

size_t source_lazy_file_count(const struct source_lazy *lz)
{
    return lz ? lz->n_files : 0;
}

size_t source_lazy_footers_read(const struct source_lazy *lz)
{
    return lz ? lz->footers : 0;
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
/* What a predicate on partition k decides for a whole file: its one value
 * (or NULL) is every row's. */
static enum lazy_verdict part_verdict(const struct source_lazy *lz, const struct query_pred *p,
                                      int k, size_t file, size_t rg)
{
    const struct lfile *f = &lz->files[file];
    const struct lazy_val *val = &lz->part_vals[file * lz->n_partitions + (size_t)k];
    bool null = !f->pvals || !f->pvals[k];
    if (!null && !val->kind)
        return LAZY_SOME; /* a value we cannot compare */
    int64_t rows = rg == SIZE_MAX ? f->rows : lz->rg_rows[f->rg0 + rg];
    struct lazy_bounds b = {val, val, null ? rows : 0, rows};
    return lazy_pred_verdict(lz->part_class[k], p, &b);
}

static enum lazy_verdict verdict(const struct source_lazy *lz, const struct query_request *req,
                            const int *pcol, size_t file, size_t rg)
{
    const struct lfile *f = &lz->files[file];
    enum lazy_verdict acc = LAZY_ALL;
    for (size_t i = 0; i < req->npreds && acc != LAZY_NONE; i++) {
        const struct query_pred *p = &req->preds[i];
        int c = pcol[i];
        if (c < 0) {
            acc = LAZY_SOME;
            continue;
        }
        enum lazy_verdict v;
        int k = lz->col_partition[c];
        if (k >= 0) {
            v = part_verdict(lz, p, k, file, rg);
        } else if (rg != SIZE_MAX) {
            const struct lstat *s = &lz->stats[(f->rg0 + rg) * lz->n_cols + (size_t)c];
            struct lazy_bounds b = {&s->min, &s->max, s->nulls, lz->rg_rows[f->rg0 + rg]};
            v = lazy_pred_verdict(lz->col_class[c], p, &b);
        } else {
            /* The file: NONE when every row group is NONE, ALL when all are ALL. */
            bool all_none = f->n_rg > 0, all_all = f->n_rg > 0;
            for (size_t g = 0; g < f->n_rg && (all_none || all_all); g++) {
                const struct lstat *s = &lz->stats[(f->rg0 + g) * lz->n_cols + (size_t)c];
                struct lazy_bounds b = {&s->min, &s->max, s->nulls, lz->rg_rows[f->rg0 + g]};
                enum lazy_verdict one = lazy_pred_verdict(lz->col_class[c], p, &b);
                all_none = all_none && one == LAZY_NONE;
                all_all = all_all && one == LAZY_ALL;
            }
            v = f->rows == 0 || all_none ? LAZY_NONE : all_all ? LAZY_ALL : LAZY_SOME;
        }
        if (v == LAZY_NONE)
            acc = LAZY_NONE;
        else if (v == LAZY_SOME)
            acc = LAZY_SOME;
    }
    return acc;
}

/* The generation's relation over some of its files: its SELECT (with the
 * dataset's `columns` projection) from exactly them; `none` reads no row. */
static void add_relation(const struct source_lazy *lz, const char *const *paths, size_t n,
                         const char *const *pvals, const uint64_t *dvs, bool none,
                         struct strbuf *sb)
{
    sb_adds(sb, "(SELECT ");
    if (lz->n_projection) {
        for (size_t i = 0; i < lz->n_projection; i++) {
            if (i)
                sb_adds(sb, ", ");
            sb_add_sql_ident(sb, lz->projection[i]);
        }
        sb_adds(sb, " FROM (SELECT ");
    }
    sb_adds(sb, lz->select_list);
    sb_adds(sb, " FROM ");
    struct source_scan_files f = {.paths = paths, .n = n, .pvals = pvals,
                                  .n_partitions = lz->n_partitions, .dvs = dvs,
                                  .carrier = lz->carrier};
    source_scan_add_from(sb, &f);
    if (none)
        sb_adds(sb, " LIMIT 0");
    if (lz->n_projection)
        sb_adds(sb, ") AS \"src\"");
    sb_adds(sb, ") AS \"lazy\"");
}

/* A local file changed since the build (issue 21 item 4): rewritten in place
 * (size or modification time: also under a pin, which shares the inode),
 * replaced by another file (inode; a file read in place or through a
 * symbolic link), or gone. Its footers and statistics are not the file's any
 * more: counts from them and reads through them would disagree. */
static bool changed(const struct lfile *f)
{
    if (!f->local)
        return false;
    struct stat st;
    return stat(f->path, &st) != 0 || st.st_size != f->size ||
           (int64_t)st.st_mtime * 1000000000LL + st.st_mtim.tv_nsec != f->mtime ||
           (int64_t)st.st_ino != f->ino || (int64_t)st.st_dev != f->dev;
}

static enum vt_err changed_error(const struct lfile *f, struct vt_error *err)
{
    /* The path is for the log, never for the client. */
    log_info("lazy source file %s changed since its generation was built", f->path);
    return vt_error_set(err, VT_ERR_SOURCE_CHANGED,
                        "the dataset's source files changed since it was published; it is "
                        "being rebuilt, retry shortly");
}

bool source_lazy_changed(const struct source_lazy *lz, struct vt_error *err)
{
    for (size_t i = 0; lz && i < lz->n_files; i++)
        if (changed(&lz->files[i])) {
            changed_error(&lz->files[i], err);
            return true;
        }
    return false;
}

/* The columns a request reads (lazy column indexes): what it returns, filters,
 * sorts, groups and aggregates. */
static bool *referenced(const struct source_lazy *lz, const struct query_request *req,
                        struct arena *arena)
{
    bool *used = arena_calloc(arena, lz->n_cols ? lz->n_cols : 1);
    if (!used)
        return NULL;
#define MARK(idx)                                                                          \
    do {                                                                                   \
        int c_ = lazy_column(lz, req, (idx));                                              \
        if (c_ >= 0)                                                                       \
            used[c_] = true;                                                               \
    } while (0)
    for (size_t i = 0; i < req->npreds; i++)
        if (!req->preds[i].ref.is_agg)
            MARK(req->preds[i].ref.idx);
    if (req->mode != QUERY_COUNT) {
        if (req->ngroup) {
            for (size_t i = 0; i < req->ngroup; i++)
                MARK(req->group_by[i]);
            for (size_t i = 0; i < req->naggs; i++)
                if (req->aggs[i].col != QUERY_NO_COLUMN)
                    MARK(req->aggs[i].col);
        } else {
            for (size_t i = 0; i < req->ncolumns; i++)
                MARK(req->columns[i]);
            if (req->ncolumns == 0)
                for (size_t c = 0; c < lz->n_cols; c++)
                    used[c] = true;
        }
        for (size_t i = 0; i < req->norder; i++)
            if (!req->order[i].ref.is_agg)
                MARK(req->order[i].ref.idx);
    }
#undef MARK
    return used;
}

/* Fetches what a request reads of the files it reads (S3 generations). */
static enum vt_err ensure_for(const struct source_lazy *lz, const size_t *files, size_t n,
                              const bool *cols, int64_t deadline_ms, const atomic_bool *cancel,
                              struct range_cache_lease **holds, struct vt_error *err)
{
    enum vt_err rc = VT_ERR_OK;
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++)
        rc = ensure_file(lz, files[i], cols, cols ? lz->n_cols : 0, deadline_ms, cancel, holds,
                         err);
    return rc;
}

void source_lazy_plan_release(struct source_lazy_plan *plan)
{
    range_cache_release(plan->holds);
    plan->holds = NULL;
}

void source_lazy_read_release(struct range_cache_lease *holds)
{
    range_cache_release(holds);
}

enum vt_err source_lazy_read_all(const struct source_lazy *lz, int64_t deadline_ms,
                                 const atomic_bool *cancel, struct range_cache_lease **holds,
                                 struct vt_error *err)
{
    *holds = NULL;
    if (!lz || !lz->remote)
        return VT_ERR_OK;
    enum vt_err rc = VT_ERR_OK;
    for (size_t i = 0; i < lz->n_files && rc == VT_ERR_OK; i++) {
        const struct lfile *f = &lz->files[i];
        struct range_cache_span all = {0, f->size};
        rc = lz->reader->ops->ensure(lz->reader, f->kept, &all, 1, deadline_ms, cancel, holds,
                                     err);
    }
    if (rc != VT_ERR_OK) {
        range_cache_release(*holds);
        *holds = NULL;
    }
    return rc;
}

enum vt_err source_lazy_plan(const struct source_lazy *lz, const struct query_request *req,
                             struct arena *arena, int64_t deadline_ms, const atomic_bool *cancel,
                             struct source_lazy_plan *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->files = lz->n_files;
    out->row_groups = lz->n_rgs;
    int *pcol = arena_alloc(arena, (req->npreds ? req->npreds : 1) * sizeof *pcol);
    const char **paths = arena_alloc(arena, (lz->n_files ? lz->n_files : 1) * sizeof *paths);
    const char **pvals = arena_alloc(
        arena, (lz->n_files * (lz->n_partitions ? lz->n_partitions : 1) + 1) * sizeof *pvals);
    size_t *chosen = arena_alloc(arena, (lz->n_files ? lz->n_files : 1) * sizeof *chosen);
    uint64_t *dvs = arena_alloc(arena, (lz->n_files ? lz->n_files : 1) * sizeof *dvs);
    if (!pcol || !paths || !pvals || !chosen || !dvs)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    for (size_t i = 0; i < req->npreds; i++)
        pcol[i] = req->preds[i].ref.is_agg ? -1 : lazy_column(lz, req, req->preds[i].ref.idx);
    size_t n = 0;
    int64_t known = 0;
    bool all_known = true;
    for (size_t i = 0; i < lz->n_files; i++) {
        enum lazy_verdict fv = req->npreds ? verdict(lz, req, pcol, i, SIZE_MAX) : LAZY_ALL;
        if (fv == LAZY_NONE) {
            continue;
        }
        /* Row groups: what statistics decide, and what only reading can. */
        int64_t file_known = 0;
        bool file_decided = true;
        size_t read_rg = 0;
        int64_t rg_start = 0; /* the row group's first row in the file */
        for (size_t g = 0; g < lz->files[i].n_rg; g++) {
            enum lazy_verdict gv = fv == LAZY_ALL ? LAZY_ALL : verdict(lz, req, pcol, i, g);
            int64_t rg_rows = lz->rg_rows[lz->files[i].rg0 + g];
            /* Rows a deletion vector removed are not the dataset's. */
            if (gv == LAZY_ALL)
                file_known += rg_rows - (int64_t)dvset_deleted_in(lz->files[i].dv,
                                                                  (uint64_t)rg_start,
                                                                  (uint64_t)(rg_start + rg_rows));
            else if (gv == LAZY_SOME)
                file_decided = false;
            rg_start += rg_rows;
            if (gv != LAZY_NONE)
                read_rg++;
        }
        if (read_rg == 0 && lz->files[i].n_rg > 0)
            continue; /* every row group ruled out */
        if (changed(&lz->files[i]))
            return changed_error(&lz->files[i], err);
        out->row_groups_read += read_rg;
        known += file_known;
        all_known = all_known && file_decided;
        chosen[n] = i;
        paths[n] = lz->files[i].path;
        dvs[n] = lz->files[i].dv;
        for (size_t k = 0; k < lz->n_partitions; k++)
            pvals[n * lz->n_partitions + k] =
                lz->files[i].pvals ? lz->files[i].pvals[k] : NULL;
        n++;
    }
    out->files_read = n;
    /* A predicate on a partition column that every file read matches as a
     * whole needs no test per row (a date range over whole days): the
     * caller leaves it out of the statement. */
    for (size_t i = 0; i < req->npreds && n > 0; i++) {
        int c = pcol[i];
        int k = c >= 0 ? lz->col_partition[c] : -1;
        bool all = k >= 0;
        for (size_t j = 0; j < n && all; j++)
            all = part_verdict(lz, &req->preds[i], k, chosen[j], SIZE_MAX) == LAZY_ALL;
        if (all) {
            if (!out->pred_decided) {
                out->pred_decided = arena_calloc(arena, req->npreds);
                if (!out->pred_decided)
                    return vt_error_set(err, VT_ERR_OUT_OF_MEMORY,
                                        "query request too large for memory");
            }
            out->pred_decided[i] = true;
            out->n_pred_decided++;
        }
    }
    if (req->mode == QUERY_COUNT && all_known) {
        out->count_known = true;
        out->count = known;
        return VT_ERR_OK;
    }
    if (lz->remote) {
        bool *cols = referenced(lz, req, arena);
        if (!cols)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
        /* Nothing can match: DuckDB still opens the first file (LIMIT 0). */
        size_t first = 0;
        enum vt_err rc = n ? ensure_for(lz, chosen, n, cols, deadline_ms, cancel, &out->holds, err)
                           : ensure_for(lz, &first, 1, cols, deadline_ms, cancel, &out->holds,
                                        err);
        if (rc != VT_ERR_OK)
            return rc;
    }
    /* The files that can match, with the generation's own columns. */
    struct strbuf sb;
    sb_init(&sb, 0);
    if (n == 0) {
        /* Nothing can match: the first file, no row of it. */
        paths[0] = lz->files[0].path;
        dvs[0] = lz->files[0].dv;
        for (size_t k = 0; k < lz->n_partitions; k++)
            pvals[k] = lz->files[0].pvals ? lz->files[0].pvals[k] : NULL;
    }
    add_relation(lz, paths, n ? n : 1, pvals, dvs, n == 0, &sb);
    char *rel = sb.overflow ? NULL : arena_strndup(arena, sb.buf, sb.len);
    sb_release(&sb);
    if (!rel)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    out->relation = rel;
    return VT_ERR_OK;
}

char *source_lazy_first_relation(const struct source_lazy *lz)
{
    if (!lz || lz->n_files == 0)
        return NULL;
    const char *path = lz->files[0].path;
    struct strbuf sb;
    sb_init(&sb, 0);
    add_relation(lz, &path, 1, (const char *const *)lz->files[0].pvals, &lz->files[0].dv, false,
                 &sb);
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb, NULL);
}
