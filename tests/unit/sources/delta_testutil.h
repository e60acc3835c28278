/*
 * Helpers shared by the Delta tests: a DuckDB connection for independent
 * readings, small query helpers, and the comparison of a resolved snapshot's
 * rows with an independently computed row set (as text, multiset equality).
 */
#ifndef VT_TEST_DELTA_TESTUTIL_H
#define VT_TEST_DELTA_TESTUTIL_H

#include <duckdb.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/delta.h"
#include "sources/source.h"
#include "sources/sources_internal.h"
#include "testlib.h"
#include "util/strbuf.h"

struct tduck {
    duckdb_database db;
    duckdb_connection con;
};

static inline void td_open(struct tduck *t)
{
    duckdb_open(NULL, &t->db);
    struct vt_error err = {0};
    source_functions_register(t->db, &err); /* snapshots' SELECTs call them */
    duckdb_connect(t->db, &t->con);
    duckdb_result r;
    duckdb_query(t->con, "SET TimeZone = 'UTC'", &r);
    duckdb_destroy_result(&r);
}

/* The shared Delta corpus: $VT_DELTA_CORPUS, else shared/delta-tables in the
 * directory above the repository (or the one above that, for worktrees one
 * level deeper), found from the working directory (the repository: make runs
 * the tests there). A symbolic link anywhere on the way is fine. */
static inline bool td_find_corpus(char *out, size_t cap)
{
    const char *env = getenv("VT_DELTA_CORPUS");
    const char *cands[] = {env && *env ? env : NULL, "../shared/delta-tables",
                           "../../shared/delta-tables"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        struct stat st;
        if (cands[i] && stat(cands[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            char real[PATH_MAX];
            const char *use = realpath(cands[i], real) ? real : cands[i];
            if (strlen(use) >= cap)
                return false;
            memcpy(out, use, strlen(use) + 1);
            return true;
        }
    }
    fprintf(stderr, "  Delta corpus not found ($VT_DELTA_CORPUS, ../shared/delta-tables, "
                    "../../shared/delta-tables)\n");
    return false;
}

static inline void td_close(struct tduck *t)
{
    duckdb_disconnect(&t->con);
    duckdb_close(&t->db);
}

static inline bool td_exec(struct tduck *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool td_exec(struct tduck *t, const char *fmt, ...)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&sb, fmt, ap);
    va_end(ap);
    duckdb_result r;
    bool ok = duckdb_query(t->con, sb.buf, &r) == DuckDBSuccess;
    if (!ok)
        fprintf(stderr, "  SQL failed: %s\n  in: %.600s\n", duckdb_result_error(&r), sb.buf);
    duckdb_destroy_result(&r);
    sb_release(&sb);
    return ok;
}

/* First column of the first row as text (malloc'd), NULL on error/NULL. */
static inline char *td_text(struct tduck *t, const char *sql)
{
    duckdb_result r;
    if (duckdb_query(t->con, sql, &r) != DuckDBSuccess) {
        fprintf(stderr, "  SQL failed: %s\n  in: %.600s\n", duckdb_result_error(&r), sql);
        duckdb_destroy_result(&r);
        return NULL;
    }
    char *v = NULL;
    if (duckdb_row_count(&r) > 0 && !duckdb_value_is_null(&r, 0, 0)) {
        char *d = duckdb_value_varchar(&r, 0, 0);
        v = strdup(d);
        duckdb_free(d);
    }
    duckdb_destroy_result(&r);
    return v;
}

static inline long long td_int(struct tduck *t, const char *sql)
{
    char *v = td_text(t, sql);
    long long n = v ? atoll(v) : -1;
    free(v);
    return n;
}

/* Runs a shell command (test fixtures only). */
static inline int td_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int td_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

static inline void td_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Loads the snapshot's SELECT into table `mine`, then checks that it holds the
 * same multiset of rows as table `indep` after casting indep's columns to the
 * snapshot's types, except `deleted` rows of indep (what deletion vectors
 * remove: indep reads every physical row). `indep_name(logical)` may map a
 * column to its name in indep (column mapping); NULL = same name. Returns the
 * row count of mine. */
static inline long long td_compare_deleted(struct tduck *t, const struct source_snapshot *snap,
                                           const char *(*indep_name)(const char *logical),
                                           long long deleted)
{
    if (!td_exec(t, "DROP TABLE IF EXISTS mine") ||
        !td_exec(t, "CREATE TABLE mine AS %s", snap->select_sql)) {
        CHECK(!"snapshot SELECT failed");
        return -1;
    }
    struct strbuf m, i;
    sb_init(&m, 0);
    sb_init(&i, 0);
    for (size_t c = 0; c < snap->n_schema; c++) {
        const char *name = snap->schema_names[c];
        const char *iname = indep_name ? indep_name(name) : name;
        if (c) {
            sb_adds(&m, ", ");
            sb_adds(&i, ", ");
        }
        sb_adds(&m, "CAST(");
        sb_add_sql_ident(&m, name);
        sb_adds(&m, " AS VARCHAR)");
        /* Is the column in indep at all? (absent from every file: NULL) */
        struct strbuf q;
        sb_init(&q, 0);
        sb_adds(&q, "SELECT count(*) FROM (DESCRIBE indep) WHERE lower(column_name) = lower(");
        sb_add_sql_string(&q, iname);
        sb_adds(&q, ")");
        bool present = td_int(t, q.buf) > 0;
        sb_release(&q);
        if (present) {
            sb_adds(&i, "CAST(CAST(");
            sb_add_sql_ident(&i, iname);
            sb_addf(&i, " AS %s) AS VARCHAR)", snap->schema_types[c]);
        } else {
            sb_adds(&i, "NULL::VARCHAR");
        }
    }
    struct strbuf q;
    sb_init(&q, 0);
    sb_addf(&q, "SELECT count(*) FROM (SELECT %s FROM mine EXCEPT ALL SELECT %s FROM indep)", m.buf,
            i.buf);
    long long only_mine = td_int(t, q.buf);
    sb_reset(&q);
    sb_addf(&q, "SELECT count(*) FROM (SELECT %s FROM indep EXCEPT ALL SELECT %s FROM mine)", i.buf,
            m.buf);
    long long only_indep = td_int(t, q.buf);
    long long n_mine = td_int(t, "SELECT count(*) FROM mine");
    long long n_indep = td_int(t, "SELECT count(*) FROM indep");
    if (only_mine != 0 || only_indep != deleted || n_mine != n_indep - deleted)
        fprintf(stderr, "  rows differ: mine %lld, indep %lld, only-mine %lld, only-indep %lld"
                        " (deleted %lld)\n",
                n_mine, n_indep, only_mine, only_indep, deleted);
    CHECK_EQ_INT(only_mine, 0);
    CHECK_EQ_INT(only_indep, deleted);
    CHECK_EQ_INT(n_mine, n_indep - deleted);
    sb_release(&q);
    sb_release(&m);
    sb_release(&i);
    return n_mine;
}

static inline long long td_compare(struct tduck *t, const struct source_snapshot *snap,
                                   const char *(*indep_name)(const char *logical))
{
    return td_compare_deleted(t, snap, indep_name, 0);
}

static inline void td_release(struct source_snapshot *snap)
{
    for (size_t k = 0; k < snap->n_temp_files; k++)
        unlink(snap->temp_files[k]);
    source_snapshot_release(snap);
}

#endif
