/*
 * Quack (quack.h): one thread that loads DuckDB's `quack` extension when it
 * is installed, exposes the datasets as views and runs quack_serve; or logs
 * once that it is missing and ends. With read_only, every query a Quack
 * client sends passes the SQL gate first, as /sql's do (the rule below).
 */
#include "quack/quack.h"

#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog/catalog.h"
#include "engine/engine.h"
#include "exec/exec.h"
#include "sql/sql.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strbuf.h"

#define SYNC_PERIOD_MS 1000
#define MAX_VIEWS 4096

struct view {
    char *name;
    struct exec_pin pin;            /* the generation the view reads, held */
};

struct quack_server {
    const struct vt_config *cfg;
    duckdb_database db;
    struct cat_catalog *cat;
    struct quack_rule rule;     /* read_only */
    pthread_t thread;
    atomic_bool stop;
    struct view *views;
    size_t nviews;
};

/* --------------------------------------------------- the read-only rule */

bool quack_read_only_allows(struct quack_rule *rule, const char *q, size_t n)
{
    if (n == 0 || n > VT_MAX_SQL_BYTES || memchr(q, '\0', n))
        return false;
    char *text = malloc(n + 1);
    if (!text)
        return false;
    memcpy(text, q, n);
    text[n] = '\0';
    struct vt_error err = {0};
    /* The gate's parser runs on the rule's own connection, one check at a
     * time (DuckDB's threads call the rule concurrently). */
    pthread_mutex_lock(&rule->mu);
    enum vt_err rc = exec_sql_check(rule->catalog, rule->gate, text, &err);
    /* The gate caches its prepared statements per thread; this runs on
     * DuckDB's own threads, which quack_rule_release cannot reach, so the
     * statements on the rule's connection go now (else they outlive the
     * connection: LeakSanitizer in test_quack, 3 runs in 4). */
    sql_gate_forget(rule->gate);
    pthread_mutex_unlock(&rule->mu);
    if (rc != VT_ERR_OK)
        log_debug("quack: refused (%s): %s", vt_err_code(rc), vt_error_message(&err));
    free(text);
    return rc == VT_ERR_OK;
}

/* vt_quack_read_only(sid, query) -> BOOLEAN, the rule as a DuckDB scalar
 * function (its extra info is the rule). */
static void read_only_fn(duckdb_function_info info, duckdb_data_chunk input,
                         duckdb_vector output)
{
    struct quack_rule *rule = duckdb_scalar_function_get_extra_info(info);
    idx_t n = duckdb_data_chunk_get_size(input);
    duckdb_vector qv = duckdb_data_chunk_get_vector(input, 1);
    duckdb_string_t *qs = duckdb_vector_get_data(qv);
    uint64_t *valid = duckdb_vector_get_validity(qv);
    bool *out = duckdb_vector_get_data(output);
    for (idx_t i = 0; i < n; i++) {
        if (valid && !duckdb_validity_row_is_valid(valid, i)) {
            out[i] = false;
            continue;
        }
        uint32_t len = duckdb_string_t_length(qs[i]);
        const char *p = duckdb_string_t_data(&qs[i]);
        out[i] = quack_read_only_allows(rule, p, len);
    }
}

enum vt_err quack_rule_init(struct quack_rule *rule, duckdb_database db,
                            struct cat_catalog *cat, struct vt_error *err)
{
    memset(rule, 0, sizeof *rule);
    rule->catalog = cat;
    pthread_mutex_init(&rule->mu, NULL);
    if (eng_connect(db, &rule->gate, err) != VT_ERR_OK) {
        pthread_mutex_destroy(&rule->mu);
        return err->code;
    }
    return VT_ERR_OK;
}

void quack_rule_release(struct quack_rule *rule)
{
    if (!rule->gate)
        return;
    sql_gate_forget(rule->gate);
    duckdb_disconnect(&rule->gate);
    pthread_mutex_destroy(&rule->mu);
}

bool quack_rule_register(struct quack_rule *rule, duckdb_connection con)
{
    duckdb_scalar_function f = duckdb_create_scalar_function();
    duckdb_scalar_function_set_name(f, "vt_quack_read_only");
    duckdb_logical_type v = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_logical_type b = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
    duckdb_scalar_function_add_parameter(f, v);
    duckdb_scalar_function_add_parameter(f, v);
    duckdb_scalar_function_set_return_type(f, b);
    duckdb_scalar_function_set_function(f, read_only_fn);
    duckdb_scalar_function_set_extra_info(f, rule, NULL);
    /* Never folded at bind time: every query is judged when it comes. */
    duckdb_scalar_function_set_volatile(f);
    bool ok = duckdb_register_scalar_function(con, f) == DuckDBSuccess;
    duckdb_destroy_scalar_function(&f);
    duckdb_destroy_logical_type(&v);
    duckdb_destroy_logical_type(&b);
    return ok;
}

/* ------------------------------------------------------------ the views */

/* DuckDB's messages span lines; a log line must not. */
static void one_line(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        char c = *p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p;
        if (c == ' ' && o > s && o[-1] == ' ')
            continue;
        *o++ = c;
    }
    while (o > s && o[-1] == ' ')
        o--;
    *o = '\0';
}

static bool run(duckdb_connection con, const char *sql, char *why, size_t whylen)
{
    duckdb_result r;
    bool ok = duckdb_query(con, sql, &r) == DuckDBSuccess;
    if (!ok && why) {
        snprintf(why, whylen, "%s", duckdb_result_error(&r));
        one_line(why);
    }
    duckdb_destroy_result(&r);
    return ok;
}

/* Points every dataset's view at its current generation. */
static void sync_views(struct quack_server *q, duckdb_connection con)
{
    struct cat_status *list = NULL;
    size_t n = cat_status_list(q->cat, &list);
    /* drop views of datasets that are gone */
    for (size_t v = 0; v < q->nviews;) {
        bool found = false;
        for (size_t i = 0; i < n && !found; i++)
            found = !strcmp(list[i].name, q->views[v].name);
        if (found) {
            v++;
            continue;
        }
        struct strbuf s;
        sb_init(&s, 0);
        sb_adds(&s, "DROP VIEW IF EXISTS main.");
        sb_add_sql_ident(&s, q->views[v].name);
        if (!s.overflow)
            run(con, s.buf, NULL, 0);
        sb_release(&s);
        exec_unpin(&q->views[v].pin);
        free(q->views[v].name);
        q->views[v] = q->views[--q->nviews];
    }
    for (size_t i = 0; i < n; i++) {
        if (list[i].state != CAT_PUBLISHED && list[i].columns <= 0)
            continue;
        struct exec_pin pin;
        struct vt_error ignored = {0};
        if (exec_pin(q->cat, list[i].name, 0, &pin, &ignored) != VT_ERR_OK)
            continue;
        size_t v = 0;
        while (v < q->nviews && strcmp(q->views[v].name, list[i].name) != 0)
            v++;
        if (v < q->nviews && q->views[v].pin.gen == pin.gen) {
            exec_unpin(&pin);
            continue;
        }
        if (v == q->nviews && q->nviews == MAX_VIEWS) {
            exec_unpin(&pin);
            continue;
        }
        struct strbuf s;
        sb_init(&s, 0);
        sb_adds(&s, "CREATE OR REPLACE VIEW main.");
        sb_add_sql_ident(&s, list[i].name);
        sb_addf(&s, " AS SELECT * FROM %s", pin.gen->relation);
        char why[256] = "";
        bool ok = !s.overflow && run(con, s.buf, why, sizeof why);
        sb_release(&s);
        if (!ok) {
            log_warn("quack: cannot expose dataset %s: %s", list[i].name, why);
            exec_unpin(&pin);
            continue;
        }
        if (v < q->nviews) {
            exec_unpin(&q->views[v].pin); /* the old generation may go now */
            q->views[v].pin = pin;
        } else {
            struct view *nv = realloc(q->views, (q->nviews + 1) * sizeof *nv);
            char *name = strdup(list[i].name);
            if (!nv || !name) {
                free(name);
                if (nv)
                    q->views = nv;
                exec_unpin(&pin);
                continue;
            }
            q->views = nv;
            q->views[q->nviews++] = (struct view){name, pin};
        }
    }
    cat_status_list_free(list, n);
}

/* ------------------------------------------------------------ the thread */

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *quack_main(void *arg)
{
    struct quack_server *q = arg;
    const struct quack_config *qc = &q->cfg->server.quack;
    duckdb_connection con;
    if (duckdb_connect(q->db, &con) != DuckDBSuccess) {
        log_warn("server.quack: cannot connect to DuckDB; Quack is not started");
        return NULL;
    }
    char why[512] = "";
    if (!run(con, "LOAD quack", why, sizeof why)) {
        log_warn("server.quack: the DuckDB extension \"quack\" is not available (%s); Quack is "
                 "not started (this build never downloads extensions: install quack into "
                 "DuckDB's extension directory to serve it); everything else keeps serving",
                 why);
        duckdb_disconnect(&con);
        return NULL;
    }
    struct vt_error rerr = {0};
    if (qc->read_only && quack_rule_init(&q->rule, q->db, q->cat, &rerr) != VT_ERR_OK) {
        log_warn("server.quack: cannot install the read-only rule (%s); Quack is not started",
                 vt_error_message(&rerr));
        duckdb_disconnect(&con);
        return NULL;
    }
    if (qc->read_only &&
        (!quack_rule_register(&q->rule, con) ||
         !run(con, "SET GLOBAL quack_authorization_function = 'vt_quack_read_only'", why,
              sizeof why))) {
        log_warn("server.quack: cannot install the read-only rule (%s); Quack is not started",
                 why);
        quack_rule_release(&q->rule);
        duckdb_disconnect(&con);
        return NULL;
    }
    /* Started after the datasets are registered and the startup builds are
     * through. */
    int64_t datasets;
    while (!atomic_load(&q->stop) && !cat_ready(q->cat, &datasets))
        sleep_ms(100);
    if (atomic_load(&q->stop)) {
        duckdb_disconnect(&con);
        return NULL;
    }
    sync_views(q, con);
    char token[65];
    bool generated = !qc->token;
    if (generated) {
        unsigned char rnd[16];
        if (RAND_bytes(rnd, sizeof rnd) != 1) {
            log_warn("server.quack: no randomness for a token; Quack is not started");
            duckdb_disconnect(&con);
            return NULL;
        }
        for (int i = 0; i < 16; i++)
            snprintf(token + 2 * i, 3, "%02x", rnd[i]);
    } else {
        snprintf(token, sizeof token, "%s", qc->token);
    }
    duckdb_prepared_statement ps = NULL;
    duckdb_result r;
    bool served = duckdb_prepare(con,
                                 "CALL quack_serve($1, token := $2, allow_other_hostname := $3)",
                                 &ps) == DuckDBSuccess;
    if (served) {
        duckdb_bind_varchar(ps, 1, qc->uri);
        duckdb_bind_varchar(ps, 2, token);
        duckdb_bind_boolean(ps, 3, qc->allow_other_hostname);
        served = duckdb_execute_prepared(ps, &r) == DuckDBSuccess;
        if (!served) {
            snprintf(why, sizeof why, "%s", duckdb_result_error(&r));
            one_line(why);
        }
        duckdb_destroy_result(&r);
    } else {
        snprintf(why, sizeof why, "%s", duckdb_prepare_error(ps));
    }
    duckdb_destroy_prepare(&ps);
    if (!served) {
        log_warn("server.quack: quack_serve(%s) failed: %s", qc->uri, why);
    } else {
        log_info("quack serving %s (%s, %zu datasets)", qc->uri,
                 qc->read_only ? "read-only" : "read-write", q->nviews);
        if (generated)
            log_info("quack token (generated, logged once): %s", token);
        while (!atomic_load(&q->stop)) {
            sleep_ms(SYNC_PERIOD_MS);
            sync_views(q, con);
        }
        duckdb_prepared_statement st = NULL;
        if (duckdb_prepare(con, "CALL quack_stop($1)", &st) == DuckDBSuccess) {
            duckdb_bind_varchar(st, 1, qc->uri);
            duckdb_execute_prepared(st, &r);
            duckdb_destroy_result(&r);
        }
        duckdb_destroy_prepare(&st);
    }
    for (size_t v = 0; v < q->nviews; v++) {
        exec_unpin(&q->views[v].pin);
        free(q->views[v].name);
    }
    q->nviews = 0;
    duckdb_disconnect(&con);
    return NULL;
}

struct quack_server *quack_start(const struct vt_config *cfg, duckdb_database db,
                                 struct cat_catalog *cat)
{
    if (!cfg->server.quack.enabled)
        return NULL;
    struct quack_server *q = calloc(1, sizeof *q);
    if (!q) {
        log_warn("server.quack: out of memory; Quack is not started");
        return NULL;
    }
    q->cfg = cfg;
    q->db = db;
    q->cat = cat;
    if (pthread_create(&q->thread, NULL, quack_main, q) != 0) {
        log_warn("server.quack: cannot start its thread; Quack is not started");
        free(q);
        return NULL;
    }
    return q;
}

void quack_stop(struct quack_server *q)
{
    if (!q)
        return;
    atomic_store(&q->stop, true);
    pthread_join(q->thread, NULL);
    quack_rule_release(&q->rule);
    free(q->views);
    free(q);
}
