/*
 * The service configuration: defaults, loading and validation of every block
 * of the config file ([server] and its sub-blocks, the UI mounts, [auth],
 * [datafusion], [sql], [mcp]), plus the CLI's config file resolution.
 *
 * Dataset blocks are read in config_dataset.c; typed getters and messages are
 * in config_read.c. Loading is all-or-nothing: a file with any error yields no
 * configuration, and the message names the file, line and key.
 */
#include "config/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_internal.h"
#include "util/file.h"
#include "util/limits.h"
#include "util/strbuf.h"

static const char *const backend_names[] = {"datafusion", "duckdb", NULL};
static const char *const readiness_names[] = {"all", "any", NULL};
static const char *const color_names[] = {"primary", "secondary", "success", "info",
                                          "warning", "danger", "light", "dark", NULL};
static const char *const jwt_algorithms[] = {"RS256", "RS384", "RS512", "ES256", "ES384",
                                             "ES512", "PS256", "PS384", "PS512", NULL};

#define QUACK_DEFAULT_PORT 9494

/* ---------------------------------------------------------------- lifecycle */

static char *cwd_or_dot(void)
{
    char buf[PATH_MAX];
    return strdup(getcwd(buf, sizeof buf) ? buf : ".");
}

void config_init_defaults(struct vt_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->dir = cwd_or_dot();

    struct server_config *s = &cfg->server;
    s->backend = BACKEND_DATAFUSION;
    s->listen = strdup("127.0.0.1");
    s->port = 8080;
    s->workers = 0; /* resolved to the CPU count at start */
    s->prefix = strdup("");
    s->compress = true;
    s->max_body_bytes = 1048576;
    s->max_page_size = 100000;
    s->force_lazy_above_mb = 0;
    s->request_timeout_ms = 30000;
    s->shutdown_timeout_secs = 30;
    s->saved_queries_dir = cfg->dir ? cfg_resolve_against(cfg->dir, "datasets.d") : NULL;
    s->startup.readiness = READINESS_ALL;
    s->startup.max_concurrent = 4;
    s->quack.uri = strdup("quack:localhost");
    s->quack.host = strdup("localhost");
    s->quack.port = QUACK_DEFAULT_PORT;
    s->quack.read_only = true;
    s->pgwire.listen = strdup("127.0.0.1");
    s->pgwire.port = 5432;
    s->pgwire.username = strdup("vitrine");

    cfg->swagger = (struct ui_mount_config){true, strdup("/docs")};
    cfg->metrics = (struct ui_mount_config){false, strdup("/metrics")};
    cfg->docs = (struct ui_mount_config){true, strdup("/mkdocs")};
    cfg->explorer = (struct ui_mount_config){true, strdup("/explore")};
    cfg->explorer_oauth2.pkce = true;

    struct auth_config *a = &cfg->auth;
    strvec_push(&a->algorithms, "RS256");
    a->leeway_secs = 60;
    a->jwks_refresh_secs = 3600;
    strvec_push(&a->read_scopes, "datasets:read");
    strvec_push(&a->reload_scopes, "datasets:reload");
    a->admin_token_fallback = true;
    a->start_degraded = true;

    cfg->datafusion.list_files_cache_mb = 64;
    cfg->datafusion.list_files_cache_ttl_secs = 60;
    cfg->sql.max_rows = 100000;
    cfg->mcp.path = strdup("/mcp");
}

void config_free(struct vt_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->path);
    free(cfg->dir);
    struct server_config *s = &cfg->server;
    free(s->listen);
    free(s->prefix);
    free(s->environment);
    free(s->environment_color);
    free(s->saved_queries_dir);
    free(s->memory_limit);
    free(s->temp_directory);
    free(s->quack.uri);
    free(s->quack.host);
    free(s->quack.token);
    free(s->pgwire.listen);
    free(s->pgwire.username);
    free(s->pgwire.password);
    free(s->pgwire.tls_cert);
    free(s->pgwire.tls_key);
    free(cfg->swagger.path);
    free(cfg->metrics.path);
    free(cfg->docs.path);
    free(cfg->explorer.path);
    free(cfg->explorer_oauth2.client_id);
    free(cfg->explorer_oauth2.issuer);
    strvec_free(&cfg->explorer_oauth2.scopes);
    struct auth_config *a = &cfg->auth;
    free(a->issuer);
    free(a->audience);
    strvec_free(&a->algorithms);
    strvec_free(&a->read_scopes);
    strvec_free(&a->reload_scopes);
    free(a->tenant_claim);
    strvec_free(&a->allowed_tenants);
    free(cfg->mcp.path);
    for (size_t i = 0; i < cfg->n_datasets; i++)
        config_dataset_free(&cfg->datasets[i]);
    free(cfg->datasets);
    memset(cfg, 0, sizeof *cfg);
}

/* ---------------------------------------------------------------- checks */

static bool is_url(const char *s)
{
    return (strncmp(s, "https://", 8) == 0 && s[8]) || (strncmp(s, "http://", 7) == 0 && s[7]);
}

/* A mount point or prefix: "/x" or "/x/y", no trailing slash, no characters
 * that would end or escape a URL path. */
static bool valid_mount(const char *s, bool allow_empty)
{
    if (!s[0])
        return allow_empty;
    size_t n = strlen(s);
    if (s[0] != '/' || s[n - 1] == '/' || strstr(s, "//"))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == '?' || c == '#' || c == '%' || c == 0x7f || c == '\\')
            return false;
    }
    return true;
}

static bool is_loopback(const char *host)
{
    return strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "[::1]") == 0 || strncmp(host, "127.", 4) == 0;
}

/* "8GB", "512 MiB", "1.5GB": what DuckDB's memory_limit accepts, checked
 * here so a typo fails at load rather than when the database opens. */
static bool valid_memory_limit(const char *s)
{
    static const char *const units[] = {"b",  "kb",  "mb",  "gb",  "tb",  "kib", "mib",
                                        "gib", "tib", "byte", "bytes", NULL};
    const char *p = s;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits++;
    }
    if (!digits)
        return false;
    while (*p == ' ')
        p++;
    if (!*p)
        return true;
    for (size_t i = 0; units[i]; i++)
        if (strcasecmp(p, units[i]) == 0)
            return true;
    return false;
}

/* quack:HOST[:PORT], quack://HOST[:PORT], IPv6 hosts in brackets. */
static bool parse_quack_uri(const char *uri, char **out_host, int *out_port, const char **why)
{
    *why = "expected quack:HOST or quack:HOST:PORT (e.g. \"quack:localhost:9494\")";
    if (strncmp(uri, "quack:", 6) != 0)
        return false;
    const char *h = uri + 6;
    if (strncmp(h, "//", 2) == 0)
        h += 2;
    const char *host_end, *port_s = NULL;
    if (*h == '[') {
        const char *close = strchr(h, ']');
        if (!close)
            return false;
        host_end = close + 1;
        if (*host_end == ':')
            port_s = host_end + 1;
        else if (*host_end)
            return false;
    } else {
        const char *colon = strchr(h, ':');
        host_end = colon ? colon : h + strlen(h);
        if (colon)
            port_s = colon + 1;
    }
    if (host_end == h)
        return false;
    for (const char *c = h; c < host_end; c++)
        if ((unsigned char)*c <= ' ' || *c == '/' || *c == '@')
            return false;
    int port = QUACK_DEFAULT_PORT;
    if (port_s) {
        char *end;
        errno = 0;
        long v = strtol(port_s, &end, 10);
        if (!*port_s || *end || errno || v < 1 || v > 65535) {
            *why = "port must be a number between 1 and 65535";
            return false;
        }
        port = (int)v;
    }
    char *host = strndup(h, (size_t)(host_end - h));
    if (!host) {
        *why = "out of memory";
        return false;
    }
    *out_host = host;
    *out_port = port;
    return true;
}

/* ---------------------------------------------------------------- blocks */

static bool read_quack(const struct cfg_blk *server, struct quack_config *q)
{
    static const char *const keys[] = {"enabled", "uri", "token", "allow_other_hostname",
                                       "read_only", NULL};
    struct cfg_blk b;
    if (!cfg_sub(server, "quack", &b) || !cfg_check_keys(&b, keys) ||
        !cfg_bool(&b, "enabled", &q->enabled) || !cfg_str(&b, "uri", CFG_NONEMPTY, &q->uri) ||
        !cfg_str(&b, "token", CFG_NONEMPTY, &q->token) ||
        !cfg_bool(&b, "allow_other_hostname", &q->allow_other_hostname) ||
        !cfg_bool(&b, "read_only", &q->read_only))
        return false;
    char *host = NULL;
    int port;
    const char *why;
    if (!parse_quack_uri(q->uri, &host, &port, &why))
        return cfg_fail(&b, "uri", 0, VT_ERR_INVALID_CONFIG, "%s", why);
    free(q->host);
    q->host = host;
    q->port = port;
    /* Only the literal name counts as local: 127.0.0.1 may be forwarded or
     * proxied, and the spec asks for an explicit opt-in for anything else. */
    if (strcasecmp(host, "localhost") != 0 && !q->allow_other_hostname)
        return cfg_fail(&b, "uri", 0, VT_ERR_INVALID_CONFIG,
                        "host \"%s\" is not local (only the literal host \"localhost\" is); set "
                        "server.quack.allow_other_hostname = true to serve it",
                        host);
    return true;
}

static bool read_pgwire(const struct cfg_blk *server, struct pgwire_config *pg)
{
    static const char *const keys[] = {"enabled", "listen", "port", "username", "password",
                                       "tls_cert", "tls_key", NULL};
    struct cfg_blk b;
    if (!cfg_sub(server, "pgwire", &b) || !cfg_check_keys(&b, keys) ||
        !cfg_bool(&b, "enabled", &pg->enabled) ||
        !cfg_str(&b, "listen", CFG_NONEMPTY, &pg->listen) ||
        !cfg_int32(&b, "port", 0, 65535, &pg->port) ||
        !cfg_str(&b, "username", CFG_NONEMPTY, &pg->username) ||
        !cfg_str(&b, "password", CFG_NONEMPTY, &pg->password) ||
        !cfg_path(&b, "tls_cert", &pg->tls_cert) || !cfg_path(&b, "tls_key", &pg->tls_key))
        return false;
    if (!pg->tls_cert != !pg->tls_key)
        return cfg_fail(&b, pg->tls_cert ? "tls_key" : "tls_cert", cfg_line_of(&b, pg->tls_cert ? "tls_cert" : "tls_key"),
                        VT_ERR_INVALID_CONFIG, "required: tls_cert and tls_key go together");
    if (pg->enabled && !is_loopback(pg->listen)) {
        if (!pg->password)
            return cfg_fail(&b, "password", cfg_line_of(&b, "listen"), VT_ERR_INVALID_CONFIG,
                            "required when listening on a non-loopback address (listen = \"%s\")",
                            pg->listen);
        if (!pg->tls_cert)
            return cfg_fail(&b, "tls_cert", cfg_line_of(&b, "listen"), VT_ERR_INVALID_CONFIG,
                            "TLS (tls_cert and tls_key) is required when listening on a "
                            "non-loopback address (listen = \"%s\")",
                            pg->listen);
    }
    return true;
}

static bool read_startup(const struct cfg_blk *server, struct startup_config *st)
{
    static const char *const keys[] = {"readiness", "max_concurrent", NULL};
    struct cfg_blk b;
    int readiness = st->readiness;
    if (!cfg_sub(server, "startup", &b) || !cfg_check_keys(&b, keys) ||
        !cfg_enum(&b, "readiness", readiness_names, &readiness) ||
        !cfg_int32(&b, "max_concurrent", 1, 1024, &st->max_concurrent))
        return false;
    st->readiness = (enum readiness)readiness;
    return true;
}

static bool read_server(const struct cfg_blk *root, struct server_config *s)
{
    static const char *const keys[] = {
        "backend", "listen", "port", "workers", "prefix", "compress", "max_body_bytes",
        "max_page_size", "force_lazy_above_mb", "request_timeout_ms", "shutdown_timeout_secs",
        "environment", "environment_color", "saved_queries_dir", "memory_limit",
        "temp_directory", "startup", "quack", "pgwire", NULL};
    struct cfg_blk b;
    int backend = s->backend;
    if (!cfg_sub(root, "server", &b) || !cfg_check_keys(&b, keys) ||
        !cfg_enum(&b, "backend", backend_names, &backend) ||
        !cfg_str(&b, "listen", CFG_NONEMPTY, &s->listen) ||
        !cfg_int32(&b, "port", 0, 65535, &s->port) ||
        !cfg_int32(&b, "workers", 1, 4096, &s->workers) || !cfg_str(&b, "prefix", 0, &s->prefix) ||
        !cfg_bool(&b, "compress", &s->compress) ||
        !cfg_int(&b, "max_body_bytes", 1, INT64_MAX, &s->max_body_bytes) ||
        !cfg_int(&b, "max_page_size", 1, INT64_MAX, &s->max_page_size) ||
        !cfg_int(&b, "force_lazy_above_mb", 0, INT64_MAX, &s->force_lazy_above_mb) ||
        !cfg_int(&b, "request_timeout_ms", 0, INT64_MAX, &s->request_timeout_ms) ||
        !cfg_int(&b, "shutdown_timeout_secs", 0, INT64_MAX, &s->shutdown_timeout_secs) ||
        !cfg_str(&b, "environment", CFG_NONEMPTY, &s->environment))
        return false;
    s->backend = (enum backend)backend;
    s->backend_set = cfg_has(&b, "backend");
    if (!valid_mount(s->prefix, true))
        return cfg_fail(&b, "prefix", 0, VT_ERR_INVALID_CONFIG,
                        "must start with \"/\" and not end with \"/\" (or be empty), got \"%.100s\"",
                        s->prefix);
    int color = -1;
    if (!cfg_enum(&b, "environment_color", color_names, &color))
        return false;
    if (color >= 0 && cfg_set_str(&s->environment_color, color_names[color]) < 0)
        return cfg_fail(&b, "environment_color", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (!cfg_path(&b, "saved_queries_dir", &s->saved_queries_dir) ||
        !cfg_str(&b, "memory_limit", CFG_NONEMPTY, &s->memory_limit) ||
        !cfg_path(&b, "temp_directory", &s->temp_directory))
        return false;
    if (s->memory_limit && !valid_memory_limit(s->memory_limit))
        return cfg_fail(&b, "memory_limit", 0, VT_ERR_INVALID_CONFIG,
                        "expected a size such as \"8GB\" or \"512MiB\", got \"%.60s\"",
                        s->memory_limit);
    return read_startup(&b, &s->startup) && read_quack(&b, &s->quack) &&
           read_pgwire(&b, &s->pgwire);
}

static bool read_mount(const struct cfg_blk *root, const char *name, struct ui_mount_config *m,
                       struct cfg_blk *out_blk, const char *const *keys)
{
    if (!cfg_sub(root, name, out_blk) || !cfg_check_keys(out_blk, keys) ||
        !cfg_bool(out_blk, "enabled", &m->enabled) || !cfg_str(out_blk, "path", 0, &m->path))
        return false;
    if (!valid_mount(m->path, false))
        return cfg_fail(out_blk, "path", 0, VT_ERR_INVALID_CONFIG,
                        "must start with \"/\" and not end with \"/\", got \"%.100s\"", m->path);
    return true;
}

static bool read_oauth2(const struct cfg_blk *explorer, struct oauth2_config *o)
{
    static const char *const keys[] = {"client_id", "issuer", "scopes", "pkce", NULL};
    struct cfg_blk b;
    if (!cfg_sub(explorer, "oauth2", &b) || !cfg_check_keys(&b, keys))
        return false;
    if (!b.t)
        return true;
    o->set = true;
    if (!cfg_str(&b, "client_id", CFG_NONEMPTY, &o->client_id) ||
        !cfg_str(&b, "issuer", CFG_NONEMPTY, &o->issuer) || !cfg_strvec(&b, "scopes", &o->scopes) ||
        !cfg_bool(&b, "pkce", &o->pkce))
        return false;
    if (!o->client_id)
        return cfg_fail(&b, "client_id", 0, VT_ERR_INVALID_CONFIG, "required");
    if (!o->issuer)
        return cfg_fail(&b, "issuer", 0, VT_ERR_INVALID_CONFIG, "required");
    if (!is_url(o->issuer))
        return cfg_fail(&b, "issuer", 0, VT_ERR_INVALID_CONFIG,
                        "expected an http:// or https:// URL, got \"%.100s\"", o->issuer);
    return true;
}

static bool read_auth(const struct cfg_blk *root, struct auth_config *a)
{
    static const char *const keys[] = {
        "enabled", "issuer", "audience", "algorithms", "leeway_secs", "jwks_refresh_secs",
        "read_scopes", "reload_scopes", "anonymous_read", "tenant_claim", "allowed_tenants",
        "admin_token_fallback", "start_degraded", NULL};
    struct cfg_blk b;
    if (!cfg_sub(root, "auth", &b) || !cfg_check_keys(&b, keys) ||
        !cfg_bool(&b, "enabled", &a->enabled) || !cfg_str(&b, "issuer", CFG_NONEMPTY, &a->issuer) ||
        !cfg_str(&b, "audience", CFG_NONEMPTY, &a->audience) ||
        !cfg_strvec(&b, "algorithms", &a->algorithms) ||
        !cfg_int(&b, "leeway_secs", 0, 86400, &a->leeway_secs) ||
        !cfg_int(&b, "jwks_refresh_secs", 1, INT64_MAX, &a->jwks_refresh_secs) ||
        !cfg_strvec(&b, "read_scopes", &a->read_scopes) ||
        !cfg_strvec(&b, "reload_scopes", &a->reload_scopes) ||
        !cfg_bool(&b, "anonymous_read", &a->anonymous_read) ||
        !cfg_str(&b, "tenant_claim", CFG_NONEMPTY, &a->tenant_claim) ||
        !cfg_strvec(&b, "allowed_tenants", &a->allowed_tenants) ||
        !cfg_bool(&b, "admin_token_fallback", &a->admin_token_fallback) ||
        !cfg_bool(&b, "start_degraded", &a->start_degraded))
        return false;
    if (cfg_has(&b, "algorithms") && a->algorithms.len == 0)
        return cfg_fail(&b, "algorithms", 0, VT_ERR_INVALID_CONFIG, "must list at least one algorithm");
    for (size_t i = 0; i < a->algorithms.len; i++) {
        bool known = false;
        for (size_t k = 0; jwt_algorithms[k] && !known; k++)
            known = strcmp(a->algorithms.items[i], jwt_algorithms[k]) == 0;
        if (!known) {
            char key[48];
            snprintf(key, sizeof key, "algorithms[%zu]", i);
            return cfg_fail(&b, key, cfg_line_of(&b, "algorithms"), VT_ERR_INVALID_CONFIG,
                            "\"%.40s\" is not supported: only RS256/384/512, ES256/384/512 and "
                            "PS256/384/512 are accepted",
                            a->algorithms.items[i]);
        }
    }
    if (a->issuer && !is_url(a->issuer))
        return cfg_fail(&b, "issuer", 0, VT_ERR_INVALID_CONFIG,
                        "expected an http:// or https:// URL, got \"%.100s\"", a->issuer);
    if (a->enabled && !a->issuer)
        return cfg_fail(&b, "issuer", cfg_line_of(&b, "enabled"), VT_ERR_INVALID_CONFIG,
                        "required when auth.enabled is true");
    if (a->tenant_claim && a->tenant_claim[0] != '/')
        return cfg_fail(&b, "tenant_claim", 0, VT_ERR_INVALID_CONFIG,
                        "expected a JSON pointer such as \"/tid\", got \"%.60s\"", a->tenant_claim);
    return true;
}

static bool read_datafusion(const struct cfg_blk *root, struct datafusion_config *d)
{
    static const char *const keys[] = {"pushdown_filters", "reorder_filters", "list_files_cache",
                                       "list_files_cache_mb", "list_files_cache_ttl_secs", NULL};
    struct cfg_blk b;
    return cfg_sub(root, "datafusion", &b) && cfg_check_keys(&b, keys) &&
           cfg_bool(&b, "pushdown_filters", &d->pushdown_filters) &&
           cfg_bool(&b, "reorder_filters", &d->reorder_filters) &&
           cfg_bool(&b, "list_files_cache", &d->list_files_cache) &&
           cfg_int(&b, "list_files_cache_mb", 1, INT64_MAX, &d->list_files_cache_mb) &&
           cfg_int(&b, "list_files_cache_ttl_secs", 0, INT64_MAX, &d->list_files_cache_ttl_secs);
}

static bool read_sql(const struct cfg_blk *root, struct sql_config *q)
{
    static const char *const keys[] = {"enabled", "max_rows", NULL};
    struct cfg_blk b;
    return cfg_sub(root, "sql", &b) && cfg_check_keys(&b, keys) &&
           cfg_bool(&b, "enabled", &q->enabled) &&
           cfg_int(&b, "max_rows", 1, INT64_MAX, &q->max_rows);
}

static bool read_mcp(const struct cfg_blk *root, struct mcp_config *m)
{
    static const char *const keys[] = {"enabled", "expose_sql", "path", NULL};
    struct cfg_blk b;
    if (!cfg_sub(root, "mcp", &b) || !cfg_check_keys(&b, keys) ||
        !cfg_bool(&b, "enabled", &m->enabled) || !cfg_bool(&b, "expose_sql", &m->expose_sql) ||
        !cfg_str(&b, "path", 0, &m->path))
        return false;
    if (!valid_mount(m->path, false))
        return cfg_fail(&b, "path", 0, VT_ERR_INVALID_CONFIG,
                        "must start with \"/\" and not end with \"/\", got \"%.100s\"", m->path);
    return true;
}

/* Two enabled UIs on one path would shadow each other silently. */
static bool check_mounts(struct vt_config *cfg, const struct cfg_blk *blks)
{
    const struct {
        const char *name;
        const struct ui_mount_config *m;
    } mounts[] = {{"swagger", &cfg->swagger}, {"metrics", &cfg->metrics}, {"docs", &cfg->docs},
                  {"explorer", &cfg->explorer}};
    const struct ui_mount_config mcp = {cfg->mcp.enabled, cfg->mcp.path};
    for (size_t i = 0; i < 5; i++) {
        const struct ui_mount_config *a = i < 4 ? mounts[i].m : &mcp;
        if (!a->enabled)
            continue;
        for (size_t j = 0; j < i; j++) {
            const struct ui_mount_config *b = mounts[j].m;
            if (b->enabled && strcmp(a->path, b->path) == 0)
                return cfg_fail(&blks[i], "path", 0, VT_ERR_INVALID_CONFIG,
                                "\"%s\" is already used by %s.path", a->path, mounts[j].name);
        }
    }
    return true;
}

/* ---------------------------------------------------------------- loading */

static bool read_all_blocks(struct cfg_ctx *cx, const struct toml_value *doc, struct vt_config *cfg)
{
    static const char *const top_keys[] = {"server", "swagger", "metrics", "docs", "explorer",
                                           "auth", "datafusion", "sql", "mcp", "dataset", NULL};
    static const char *const mount_keys[] = {"enabled", "path", NULL};
    static const char *const explorer_keys[] = {"enabled", "path", "oauth2", NULL};
    struct cfg_blk root;
    cfg_root(cx, doc, "", 0, &root);
    struct cfg_blk mounts[5];
    if (!cfg_check_keys(&root, top_keys) || !read_server(&root, &cfg->server) ||
        !read_mount(&root, "swagger", &cfg->swagger, &mounts[0], mount_keys) ||
        !read_mount(&root, "metrics", &cfg->metrics, &mounts[1], mount_keys) ||
        !read_mount(&root, "docs", &cfg->docs, &mounts[2], mount_keys) ||
        !read_mount(&root, "explorer", &cfg->explorer, &mounts[3], explorer_keys) ||
        !read_oauth2(&mounts[3], &cfg->explorer_oauth2) || !read_auth(&root, &cfg->auth) ||
        !read_datafusion(&root, &cfg->datafusion) || !read_sql(&root, &cfg->sql) ||
        !read_mcp(&root, &cfg->mcp) || !cfg_sub(&root, "mcp", &mounts[4]) ||
        !check_mounts(cfg, mounts))
        return false;
    if (!cfg_read_dataset_array(&root, true, &cfg->datasets, &cfg->n_datasets))
        return false;
    for (size_t i = 0; i < cfg->n_datasets; i++)
        if (config_dataset_resolve_paths(&cfg->datasets[i], cfg->dir) < 0)
            return cfg_fail(&root, "dataset", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
    return true;
}

enum vt_err config_load_text(const char *text, size_t len, const char *display_name,
                             const char *dir, struct vt_config *cfg, struct vt_error *err)
{
    config_init_defaults(cfg);
    const char *file = display_name ? display_name : "(config)";
    if (dir && cfg_set_str(&cfg->dir, dir) < 0) {
        config_free(cfg);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!cfg->dir || !cfg->server.saved_queries_dir) {
        config_free(cfg);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(cfg->server.saved_queries_dir);
    cfg->server.saved_queries_dir = cfg_resolve_against(cfg->dir, "datasets.d");
    if (len > VT_MAX_CONFIG_BYTES) {
        config_free(cfg);
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: larger than the %d-byte limit", file,
                            VT_MAX_CONFIG_BYTES);
    }
    char perr[300];
    struct toml_value *doc = toml_parse(text, len, perr, sizeof perr);
    if (!doc) {
        config_free(cfg);
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: %s", file, perr);
    }
    struct vt_error local = {0};
    struct cfg_ctx cx = {.file = file, .dir = cfg->dir, .err = err ? err : &local};
    bool ok = read_all_blocks(&cx, doc, cfg);
    toml_free(doc);
    if (!ok) {
        enum vt_err code = cx.err->code;
        config_free(cfg);
        return code ? code : VT_ERR_INVALID_CONFIG;
    }
    return VT_ERR_OK;
}

enum vt_err config_load_file(const char *path, struct vt_config *cfg, struct vt_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    char *text = NULL;
    size_t len = 0;
    enum vt_err rc = util_read_file(path, VT_MAX_CONFIG_BYTES, VT_ERR_INVALID_CONFIG, &text, &len, err);
    if (rc != VT_ERR_OK)
        return rc;
    char *abs = realpath(path, NULL);
    char *dir = abs ? strdup(abs) : NULL;
    if (!abs || !dir) {
        free(abs);
        free(dir);
        free(text);
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: cannot resolve path", path);
    }
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    rc = config_load_text(text, len, path, dir, cfg, err);
    free(text);
    free(dir);
    if (rc != VT_ERR_OK) {
        free(abs);
        return rc;
    }
    cfg->path = abs;
    return VT_ERR_OK;
}

/* ---------------------------------------------------------------- misc */

const char *config_environment_color(const struct server_config *server)
{
    if (server->environment_color)
        return server->environment_color;
    const char *e = server->environment;
    if (!e)
        return "secondary";
    if (!strcasecmp(e, "production") || !strcasecmp(e, "prod"))
        return "danger";
    if (!strcasecmp(e, "staging") || !strcasecmp(e, "stage") || !strcasecmp(e, "uat"))
        return "warning";
    if (!strcasecmp(e, "development") || !strcasecmp(e, "dev") || !strcasecmp(e, "local"))
        return "success";
    return "secondary";
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

char *config_resolve_path(const char *cli_path)
{
    if (cli_path && *cli_path)
        return strdup(cli_path); /* explicit: used even if missing, so the error names it */
    const char *env = getenv("VITRINE_CONFIG_FILE");
    if (env && *env)
        return strdup(env);
    if (is_file("datasets.toml"))
        return strdup("datasets.toml");
    const char *home = getenv("HOME");
    if (home && *home) {
        char *p = cfg_resolve_against(home, "datasets.toml");
        if (p && is_file(p))
            return p;
        free(p);
    }
    return NULL;
}
