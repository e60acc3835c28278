/*
 * Quack: DuckDB's remote protocol (the `quack` extension), experimental,
 * served from the process database when `[server.quack] enabled = true`.
 *
 * The extension is not built into this DuckDB and the service never
 * downloads extensions (autoinstall is off: docs/architecture.md "DuckDB
 * settings"), so it runs only where an operator installed it into DuckDB's
 * extension directory. When it
 * cannot be loaded the server logs one warning naming what is missing and
 * goes on serving everything else. When it loads: once the datasets are
 * registered (and the startup builds are through), each published dataset
 * becomes a view `main."<name>"` over its current generation (re-pointed
 * within a second of a reload), `read_only` installs an authorization
 * function that puts every query behind the SQL gate (below: the spec's
 * CREATE, INSERT, UPDATE, DELETE, COPY, DROP, ALTER, LOAD and INSTALL are
 * refused, and everything else that is not one read-only SELECT over the
 * datasets), and quack_serve starts on the configured uri with the token
 * (generated and logged once when the config has none).
 *
 * The config rules (only the literal host localhost is local, other hosts
 * need allow_other_hostname, token length) are the config schema's
 * (src/config/schema.c rule_quack).
 */
#ifndef VT_QUACK_QUACK_H
#define VT_QUACK_QUACK_H

#include <duckdb.h>
#include <pthread.h>
#include <stdbool.h>

#include "config/config.h"
#include "util/errors.h"

struct cat_catalog;
struct quack_server;

/* Starts the Quack thread when cfg->server.quack.enabled (NULL otherwise, or
 * when the thread cannot start: logged). Non-blocking. */
struct quack_server *quack_start(const struct vt_config *cfg, duckdb_database db,
                                 struct cat_catalog *cat);
/* Stops serving and joins the thread (NULL-safe). */
void quack_stop(struct quack_server *q);

/* The authorization rule of read_only: DuckDB's quack extension calls the
 * function named in quack_authorization_function with each query a client
 * sends, and runs it only when that returns true. Ours is the SQL gate, run
 * by the execution layer exactly as for POST /api/v1/sql and the other SQL
 * entry points (exec_sql_check): one read-only SELECT whose tables are
 * datasets (the views above) and whose functions are on the allowlist;
 * anything else (writes, DDL, SET, ATTACH, COPY, PRAGMA, several statements,
 * files, functions off the allowlist) is refused. The gate parses with
 * DuckDB on a connection of the rule's own, one check at a time. */
struct quack_rule {
    struct cat_catalog *catalog;
    duckdb_connection gate;
    pthread_mutex_t mu;
};

enum vt_err quack_rule_init(struct quack_rule *rule, duckdb_database db,
                            struct cat_catalog *cat, struct vt_error *err);
void quack_rule_release(struct quack_rule *rule);
/* Registers the rule on `con` as the DuckDB scalar function
 * vt_quack_read_only(sid VARCHAR, query VARCHAR) -> BOOLEAN. */
bool quack_rule_register(struct quack_rule *rule, duckdb_connection con);
/* The rule itself: whether `query` (len bytes) may run. */
bool quack_read_only_allows(struct quack_rule *rule, const char *query, size_t len);

#endif
