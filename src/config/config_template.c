/*
 * The commented configuration template written by `vitrine init`.
 *
 * Every block and key appears with its default value. Block headers are live
 * and settings are commented out, so the file loads as the defaults; each
 * "# key = value" line is itself valid, and uncommenting all of them (the
 * unit tests do) still gives a valid configuration with two example datasets.
 * Prose comments start with a capital letter to tell them apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"

static const char template_text[] =
    "# Configuration of vitrine. Values shown are the defaults; uncomment to change.\n"
    "# Durations use humantime: \"250ms\", \"30s\", \"5m\", \"1h 30m\", \"2days\".\n"
    "\n"
    "[server]\n"
    "# Engine hint: \"datafusion\" or \"duckdb\". This build runs DuckDB and logs a\n"
    "# warning when another engine is asked for.\n"
    "# backend = \"datafusion\"\n"
    "# listen = \"127.0.0.1\"\n"
    "# port = 8080\n"
    "# Worker threads running queries. Default: one per CPU.\n"
    "# workers = 4\n"
    "# Mount every route (probes included) under a prefix such as \"/vitrine\".\n"
    "# prefix = \"\"\n"
    "# compress = true\n"
    "# max_body_bytes = 1048576\n"
    "# max_page_size = 100000\n"
    "# Above 0: datasets whose files exceed this many MiB are served lazily.\n"
    "# force_lazy_above_mb = 0\n"
    "# request_timeout_ms = 30000\n"
    "# shutdown_timeout_secs = 30\n"
    "# Explorer navbar badge. The color is inferred from the name when omitted:\n"
    "# one of primary, secondary, success, info, warning, danger, light, dark.\n"
    "# environment = \"staging\"\n"
    "# environment_color = \"warning\"\n"
    "# Saved queries (relative paths are relative to this file's directory).\n"
    "# saved_queries_dir = \"datasets.d\"\n"
    "# DuckDB memory limit and spill directory.\n"
    "# memory_limit = \"8GB\"\n"
    "# temp_directory = \"tmp\"\n"
    "\n"
    "[server.startup]\n"
    "# Ready when \"all\" eager datasets are published, or \"any\" of them.\n"
    "# readiness = \"all\"\n"
    "# max_concurrent = 4\n"
    "\n"
    "[server.quack]\n"
    "# Experimental DuckDB Quack server.\n"
    "# enabled = false\n"
    "# uri = \"quack:localhost:9494\"\n"
    "# Generated and logged once when omitted.\n"
    "# token = \"change-me\"\n"
    "# allow_other_hostname = false\n"
    "# read_only = true\n"
    "\n"
    "[server.pgwire]\n"
    "# PostgreSQL wire protocol listener (read-only). A non-loopback listen needs\n"
    "# a password and TLS.\n"
    "# enabled = false\n"
    "# listen = \"127.0.0.1\"\n"
    "# port = 5432\n"
    "# username = \"vitrine\"\n"
    "# password = \"change-me\"\n"
    "# tls_cert = \"certs/server.pem\"\n"
    "# tls_key = \"certs/server.key\"\n"
    "\n"
    "[swagger]\n"
    "# enabled = true\n"
    "# path = \"/docs\"\n"
    "\n"
    "[metrics]\n"
    "# Prometheus text format, not under the prefix, unauthenticated.\n"
    "# enabled = false\n"
    "# path = \"/metrics\"\n"
    "\n"
    "[docs]\n"
    "# enabled = true\n"
    "# path = \"/mkdocs\"\n"
    "\n"
    "[explorer]\n"
    "# enabled = true\n"
    "# path = \"/explore\"\n"
    "\n"
    "# Sign-in for the Explorer (authorization code with PKCE).\n"
    "# [explorer.oauth2]\n"
    "# client_id = \"vitrine-explorer\"\n"
    "# issuer = \"https://idp.example.com/realms/main\"\n"
    "# scopes = [\"openid\", \"datasets:read\"]\n"
    "# pkce = true\n"
    "\n"
    "[auth]\n"
    "# Bearer-token (OIDC/OAuth2 JWT) validation. X-Admin-Token (ADMIN_TOKEN) works\n"
    "# independently unless admin_token_fallback is false.\n"
    "# enabled = false\n"
    "# issuer = \"https://idp.example.com/realms/main\"\n"
    "# audience = \"vitrine\"\n"
    "# algorithms = [\"RS256\"]\n"
    "# leeway_secs = 60\n"
    "# jwks_refresh_secs = 3600\n"
    "# read_scopes = [\"datasets:read\"]\n"
    "# reload_scopes = [\"datasets:reload\"]\n"
    "# anonymous_read = false\n"
    "# tenant_claim = \"/tid\"\n"
    "# allowed_tenants = []\n"
    "# admin_token_fallback = true\n"
    "# start_degraded = true\n"
    "\n"
    "[datafusion]\n"
    "# Options of the datafusion engine (ignored by the duckdb backend).\n"
    "# pushdown_filters = false\n"
    "# reorder_filters = false\n"
    "# list_files_cache = false\n"
    "# list_files_cache_mb = 64\n"
    "# list_files_cache_ttl_secs = 60\n"
    "\n"
    "[sql]\n"
    "# POST /api/v1/sql: read-only SQL over the registered datasets.\n"
    "# enabled = false\n"
    "# max_rows = 100000\n"
    "\n"
    "[mcp]\n"
    "# POST {prefix}/mcp: the Model Context Protocol endpoint for AI agents.\n"
    "# enabled = false\n"
    "# The sql tool also needs [sql] enabled = true.\n"
    "# expose_sql = false\n"
    "# path = \"/mcp\"\n"
    "# Caps of one query_dataset or sql result (the result says when it was cut).\n"
    "# max_rows = 500\n"
    "# max_bytes = 262144\n"
    "# Browser origins allowed to call it besides the server's own (DNS rebinding).\n"
    "# allowed_origins = []\n"
    "\n"
    "# Datasets. Names use A-Z a-z 0-9 _ . - only.\n"
    "# [[dataset]]\n"
    "# name = \"trips\"\n"
    "# Kind \"parquet\" or \"delta\"; location is a path, glob, directory or s3:// URL.\n"
    "# source.kind = \"parquet\"\n"
    "# source.location = \"data/trips/*.parquet\"\n"
    "# Projection applied at load (empty: every column).\n"
    "# columns = []\n"
    "# dict_encode = false\n"
    "# True: served from storage per query (bounded memory, no index).\n"
    "# lazy = false\n"
    "# Index mode \"auto\", \"list\" (with index.columns) or \"none\".\n"
    "# index.mode = \"auto\"\n"
    "# index.max_cardinality = 100000\n"
    "# S3 settings (credentials come from the environment).\n"
    "# s3.region = \"us-east-1\"\n"
    "# s3.endpoint = \"https://s3.us-east-1.amazonaws.com\"\n"
    "# s3.addressing_style = \"virtual\"\n"
    "# s3.allow_http = false\n"
    "# s3.partitioning = \"auto\"\n"
    "# refresh.interval = \"1h\"\n"
    "# refresh.timeout = \"10m\"\n"
    "# refresh.jitter = true\n"
    "# refresh.debounce = \"5s\"\n"
    "# Residency \"auto\", \"memory\" or \"lazy\".\n"
    "# materialize.residency = \"auto\"\n"
    "# materialize.sort_by = []\n"
    "# materialize.reuse_on_start = false\n"
    "# On start: \"eager\" builds at boot, \"lazy\" on first use, \"skip\" waits for a reload.\n"
    "# on_start = \"eager\"\n"
    "\n"
    "# A dataset defined by SQL over other datasets of this file.\n"
    "# [[dataset]]\n"
    "# name = \"trips_by_city\"\n"
    "# source.kind = \"query\"\n"
    "# sql = \"SELECT city, count(*) AS trips FROM trips GROUP BY city\"\n"
    "# depends_on = [\"trips\"]\n"
    "# refresh.on_upstream_reload = true\n";

const char *config_template_text(void)
{
    return template_text;
}

enum vt_err config_write_template(const char *path, struct vt_error *err)
{
    /* O_EXCL: `vitrine init` never overwrites an existing configuration. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: cannot create: %s", path,
                            errno == EEXIST ? "file exists" : strerror(errno));
    size_t len = sizeof template_text - 1, off = 0;
    while (off < len) {
        ssize_t w = write(fd, template_text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(path);
            return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: write failed: %s", path,
                                strerror(e));
        }
        off += (size_t)w;
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(path);
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: write failed: %s", path, strerror(e));
    }
    return VT_ERR_OK;
}
