/*
 * Quack: DuckDB's remote protocol (the `quack` extension), experimental,
 * served from the process database when `[server.quack] enabled = true`.
 *
 * The extension is not built into this DuckDB and the service never
 * downloads extensions (autoinstall is off, DESIGN.md), so it runs only
 * where an operator installed it into DuckDB's extension directory. When it
 * cannot be loaded the server logs one warning naming what is missing and
 * goes on serving everything else. When it loads: once the datasets are
 * registered (and the startup builds are through), each published dataset
 * becomes a view `main."<name>"` over its current generation (re-pointed
 * within a second of a reload), `read_only` installs an authorization
 * function refusing CREATE, INSERT, UPDATE, DELETE, COPY, DROP, ALTER, LOAD
 * and INSTALL, and quack_serve starts on the configured uri with the token
 * (generated and logged once when the config has none).
 *
 * The config rules (only the literal host localhost is local, other hosts
 * need allow_other_hostname, token length) are the config schema's
 * (src/config/schema.c rule_quack).
 */
#ifndef VT_QUACK_QUACK_H
#define VT_QUACK_QUACK_H

#include <duckdb.h>
#include <stdbool.h>

#include "config/config.h"

struct cat_catalog;
struct quack_server;

/* Starts the Quack thread when cfg->server.quack.enabled (NULL otherwise, or
 * when the thread cannot start: logged). Non-blocking. */
struct quack_server *quack_start(const struct vt_config *cfg, duckdb_database db,
                                 struct cat_catalog *cat);
/* Stops serving and joins the thread (NULL-safe). */
void quack_stop(struct quack_server *q);

/* The authorization rule of read_only (registered as DuckDB scalar function
 * vt_quack_read_only(sid, query) and named in quack_authorization_function):
 * every statement of the query text, split with PostgreSQL's lexer (so
 * comments and strings hide nothing), must not start with CREATE, INSERT,
 * UPDATE, DELETE, COPY, DROP, ALTER, LOAD, INSTALL (the spec's list) nor
 * ATTACH, DETACH, EXPORT, IMPORT, CHECKPOINT, VACUUM, TRUNCATE, MERGE, SET,
 * RESET, CALL, PRAGMA, UPDATE_EXTENSIONS, FORCE, a transaction command or a
 * prepared-statement command. */
bool quack_read_only_allows(const char *query, size_t len);

#endif
