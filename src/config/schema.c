/*
 * The configuration schema: one row per key of the config file and of a
 * [[dataset]] block (see config_internal.h for the row layout), with the
 * checks and cross-key rules the rows name.
 *
 * This table is the single source of the parser's key lists, the defaults,
 * persist's TOML blocks, `vitrine init`'s template and docs/configuration.md
 * (`make docs-config` regenerates it; a unit test fails when it is stale).
 * To add a key: add its struct field in config.h and one row here, in the
 * place where it should appear in the template and the docs.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_internal.h"
#include "util/limits.h"
#include "util/timeutil.h"

/* ---------------------------------------------------------------- values */

static const char *const backend_names[] = {"datafusion", "duckdb", NULL};
static const char *const readiness_names[] = {"all", "any", NULL};
static const char *const role_names[] = {"standalone", "writer", "reader", NULL};
static const char *const color_names[] = {"primary", "secondary", "success", "info",
                                          "warning", "danger", "light", "dark", NULL};
static const char *const jwt_algorithms[] = {"RS256", "RS384", "RS512", "ES256", "ES384",
                                             "ES512", "PS256", "PS384", "PS512", NULL};
const char *const cfg_kind_names[] = {"parquet", "delta", "query", NULL};
const char *const cfg_index_mode_names[] = {"auto", "list", "none", NULL};
const char *const cfg_on_start_names[] = {"eager", "lazy", "skip", NULL};
const char *const cfg_residency_names[] = {"auto", "memory", "lazy", NULL};
const char *const cfg_addressing_names[] = {"virtual", "path", NULL};
const char *const cfg_partitioning_names[] = {"auto", "hive", "none", NULL};

#define QUACK_DEFAULT_PORT 9494

const char *config_source_kind_name(enum cfg_source_kind k)
{
    return (unsigned)k < 3 ? cfg_kind_names[k] : "unknown";
}

const char *config_cluster_role_name(enum cfg_cluster_role r)
{
    return (unsigned)r < 3 ? role_names[r] : "unknown";
}

int config_cluster_role_parse(const char *s)
{
    for (int i = 0; role_names[i]; i++)
        if (strcmp(s, role_names[i]) == 0)
            return i;
    return -1;
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

static bool check_prefix(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    const char *s = *(char **)field;
    if (valid_mount(s, true))
        return true;
    return cfg_fail(b, k->name, 0, VT_ERR_INVALID_CONFIG,
                    "must start with \"/\" and not end with \"/\" (or be empty), got \"%.100s\"", s);
}

static bool check_mount(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    const char *s = *(char **)field;
    if (valid_mount(s, false))
        return true;
    return cfg_fail(b, k->name, 0, VT_ERR_INVALID_CONFIG,
                    "must start with \"/\" and not end with \"/\", got \"%.100s\"", s);
}

static bool valid_env_name(const char *s)
{
    if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(s);
}

/* Applies `ok` to a string key, or to every item of a string[] key (the
 * message then names the item, "key[i]"); `what` is the expectation, shown
 * with the value when show_value. */
static bool check_each(const struct cfg_blk *b, const struct cfg_key *k, void *field,
                       bool (*ok)(const char *), const char *what, bool show_value)
{
    const struct strvec *v = field;
    char *one = k->type == CFG_T_STRVEC ? NULL : *(char **)field;
    size_t n = k->type == CFG_T_STRVEC ? v->len : one != NULL;
    for (size_t i = 0; i < n; i++) {
        const char *s = one ? one : v->items[i];
        if (ok(s))
            continue;
        char key[96];
        if (one)
            snprintf(key, sizeof key, "%s", k->name);
        else
            snprintf(key, sizeof key, "%s[%zu]", k->name, i);
        if (show_value)
            return cfg_fail(b, key, cfg_line_of(b, k->name), VT_ERR_INVALID_CONFIG,
                            "%s, got \"%.100s\"", what, s);
        return cfg_fail(b, key, cfg_line_of(b, k->name), VT_ERR_INVALID_CONFIG, "%s", what);
    }
    return true;
}

static bool check_url(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    return check_each(b, k, field, is_url, "expected an http:// or https:// URL", true);
}

/* A server.allowed_hosts item: "*", "*.suffix" or a host name or address
 * without scheme, port or path (the port never decides: see http/hosts.h). */
static bool is_host_pattern(const char *s)
{
    if (!strcmp(s, "*"))
        return true;
    if (!strncmp(s, "*.", 2))
        s += 2;
    if (!*s)
        return false;
    if (s[0] == '[') {
        size_t n = strlen(s);
        return n > 2 && s[n - 1] == ']' && strspn(s + 1, "0123456789abcdefABCDEF:.") == n - 2;
    }
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~") ==
           strlen(s);
}

static bool check_host_pattern(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    return check_each(b, k, field, is_host_pattern,
                      "expected a host name or address without scheme or port, \"*.suffix\" "
                      "or \"*\"",
                      true);
}

/* A server.allowed_origins item: "*" or scheme://host[:port] without a path. */
static bool is_origin(const char *s)
{
    if (!strcmp(s, "*"))
        return true;
    const char *sep = strstr(s, "://");
    if (!sep || sep == s || !sep[3] || strspn(s, "abcdefghijklmnopqrstuvwxyz+-.") != (size_t)(sep - s))
        return false;
    const char *auth = sep + 3;
    size_t n = strlen(auth);
    if (n && auth[n - 1] == '/')
        n--;
    for (size_t i = 0; i < n; i++)
        if (auth[i] == '/' || auth[i] == '?' || auth[i] == '#' || auth[i] == '@' ||
            (unsigned char)auth[i] <= ' ')
            return false;
    return n > 0;
}

static bool check_origin(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    return check_each(b, k, field, is_origin,
                      "expected an origin such as \"https://app.example.com\" (scheme, host, "
                      "optional port, no path) or \"*\"",
                      true);
}

static bool check_env_name(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    return check_each(b, k, field, valid_env_name,
                      "expected the name of an environment variable (letters, digits, _)", false);
}

/* "8GB", "512 MiB", "1.5GB", "60%": what DuckDB's memory_limit accepts (a
 * percentage is ours: a share of the machine's memory, resolved at start),
 * checked here so a typo fails at load rather than when the database opens. */
static bool check_memory_limit(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    static const char *const units[] = {"b",  "kb",  "mb",  "gb",  "tb",  "kib", "mib",
                                        "gib", "tib", "byte", "bytes", "%", NULL};
    const char *s = *(char **)field, *p = s;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits++;
    }
    bool ok = digits > 0;
    while (ok && *p == ' ')
        p++;
    bool known = !*p;
    for (size_t i = 0; ok && !known && units[i]; i++)
        known = strcasecmp(p, units[i]) == 0;
    if (ok && known && *p == '%') {
        double pct = strtod(s, NULL);
        known = pct > 0 && pct <= 100;
    }
    if (ok && known)
        return true;
    return cfg_fail(b, k->name, 0, VT_ERR_INVALID_CONFIG,
                    "expected a size such as \"8GB\" or \"512MiB\", got \"%.60s\"", s);
}

static bool check_json_pointer(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    const char *s = *(char **)field;
    if (!s || s[0] == '/')
        return true;
    return cfg_fail(b, k->name, 0, VT_ERR_INVALID_CONFIG,
                    "expected a JSON pointer such as \"/tid\", got \"%.60s\"", s);
}

static bool check_algorithms(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    const struct strvec *v = field;
    if (v->len == 0)
        return cfg_fail(b, k->name, 0, VT_ERR_INVALID_CONFIG, "must list at least one algorithm");
    for (size_t i = 0; i < v->len; i++) {
        bool known = false;
        for (size_t a = 0; jwt_algorithms[a] && !known; a++)
            known = strcmp(v->items[i], jwt_algorithms[a]) == 0;
        if (known)
            continue;
        char key[48];
        snprintf(key, sizeof key, "%s[%zu]", k->name, i);
        return cfg_fail(b, key, cfg_line_of(b, k->name), VT_ERR_INVALID_CONFIG,
                        "\"%.40s\" is not supported: only RS256/384/512, ES256/384/512 and "
                        "PS256/384/512 are accepted",
                        v->items[i]);
    }
    return true;
}

/* ---------------------------------------------------------------- rules */

static bool rule_metrics_public_set(const struct cfg_blk *b, void *base)
{
    ((struct vt_config *)base)->metrics_public_set = cfg_has(b, "public");
    return true;
}

static bool rule_backend_set(const struct cfg_blk *b, void *base)
{
    ((struct vt_config *)base)->server.backend_set = cfg_has(b, "backend");
    return true;
}

static bool is_loopback(const char *host)
{
    return strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "[::1]") == 0 || strncmp(host, "127.", 4) == 0;
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
        long v = strtol(port_s, &end, 10);
        if (!*port_s || *end || v < 1 || v > 65535) {
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

static bool rule_quack(const struct cfg_blk *b, void *base)
{
    struct quack_config *q = &((struct vt_config *)base)->server.quack;
    char *host = NULL;
    int port;
    const char *why;
    if (!parse_quack_uri(q->uri, &host, &port, &why))
        return cfg_fail(b, "uri", 0, VT_ERR_INVALID_CONFIG, "%s", why);
    if (q->token && strlen(q->token) < 4) {
        free(host);
        return cfg_fail(b, "token", cfg_line_of(b, "token"), VT_ERR_INVALID_CONFIG,
                        "at least 4 characters (the quack extension's minimum)");
    }
    free(q->host);
    q->host = host;
    q->port = port;
    /* Only the literal name counts as local: 127.0.0.1 may be forwarded or
     * proxied, and the spec asks for an explicit opt-in for anything else. */
    if (strcasecmp(host, "localhost") != 0 && !q->allow_other_hostname)
        return cfg_fail(b, "uri", 0, VT_ERR_INVALID_CONFIG,
                        "host \"%s\" is not local (only the literal host \"localhost\" is); set "
                        "server.quack.allow_other_hostname = true to serve it",
                        host);
    return true;
}

static bool rule_pgwire(const struct cfg_blk *b, void *base)
{
    struct pgwire_config *pg = &((struct vt_config *)base)->server.pgwire;
    if (!pg->tls_cert != !pg->tls_key)
        return cfg_fail(b, pg->tls_cert ? "tls_key" : "tls_cert",
                        cfg_line_of(b, pg->tls_cert ? "tls_cert" : "tls_key"),
                        VT_ERR_INVALID_CONFIG, "required: tls_cert and tls_key go together");
    if (pg->enabled && !is_loopback(pg->listen)) {
        if (!pg->password)
            return cfg_fail(b, "password", cfg_line_of(b, "listen"), VT_ERR_INVALID_CONFIG,
                            "required when listening on a non-loopback address (listen = \"%s\")",
                            pg->listen);
        if (!pg->tls_cert)
            return cfg_fail(b, "tls_cert", cfg_line_of(b, "listen"), VT_ERR_INVALID_CONFIG,
                            "TLS (tls_cert and tls_key) is required when listening on a "
                            "non-loopback address (listen = \"%s\")",
                            pg->listen);
    }
    return true;
}

static bool rule_oauth2(const struct cfg_blk *b, void *base)
{
    const struct oauth2_config *o = &((struct vt_config *)base)->explorer_oauth2;
    if (!o->set)
        return true;
    if (!o->client_id)
        return cfg_fail(b, "client_id", 0, VT_ERR_INVALID_CONFIG, "required");
    if (!o->issuer)
        return cfg_fail(b, "issuer", 0, VT_ERR_INVALID_CONFIG, "required");
    return true;
}

static bool rule_auth(const struct cfg_blk *b, void *base)
{
    const struct auth_config *a = &((struct vt_config *)base)->auth;
    if (a->enabled && !a->issuer)
        return cfg_fail(b, "issuer", cfg_line_of(b, "enabled"), VT_ERR_INVALID_CONFIG,
                        "required when auth.enabled is true");
    if (a->issuer && strncmp(a->issuer, "http://", 7) == 0) {
        /* Keys fetched over plain http could be swapped by anyone on the path. */
        const char *h = a->issuer + 7;
        size_t n = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/?#");
        char host[256];
        snprintf(host, sizeof host, "%.*s", (int)(n < sizeof host ? n : sizeof host - 1), h);
        struct in_addr v4;
        bool loop = strcmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0 ||
                    (inet_pton(AF_INET, host, &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127);
        if (!loop)
            return cfg_fail(b, "issuer", cfg_line_of(b, "issuer"), VT_ERR_INVALID_CONFIG,
                            "plain http is allowed only for a loopback host (127.0.0.1, ::1, "
                            "localhost); use https");
    }
    return true;
}

/* Two enabled UIs on one path would shadow each other silently. */
static bool rule_mounts(const struct cfg_blk *root, void *base)
{
    const struct vt_config *cfg = base;
    const struct {
        const char *name;
        struct ui_mount_config m;
    } mounts[] = {{"swagger", cfg->swagger},
                  {"metrics", cfg->metrics},
                  {"docs", cfg->docs},
                  {"explorer", cfg->explorer},
                  {"mcp", {cfg->mcp.enabled, cfg->mcp.path}}};
    for (size_t i = 0; i < sizeof mounts / sizeof mounts[0]; i++) {
        if (!mounts[i].m.enabled)
            continue;
        for (size_t j = 0; j < i; j++) {
            if (!mounts[j].m.enabled || strcmp(mounts[i].m.path, mounts[j].m.path) != 0)
                continue;
            struct cfg_blk b;
            cfg_sub(root, mounts[i].name, &b);
            return cfg_fail(&b, "path", 0, VT_ERR_INVALID_CONFIG,
                            "\"%s\" is already used by %s.path", mounts[i].m.path,
                            mounts[j].name);
        }
    }
    return true;
}

/* [cluster]: a writer or reader needs the shared storage; the writer's
 * collection grace must outlast what readers may still read (the previous
 * generation they keep, plus one poll). */
static bool rule_cluster(const struct cfg_blk *b, void *base)
{
    const struct cluster_config *c = &((struct vt_config *)base)->cluster;
    if (c->role != CFG_ROLE_STANDALONE && !c->storage)
        return cfg_fail(b, "storage", cfg_line_of(b, "role"), VT_ERR_INVALID_CONFIG,
                        "required when role is \"%s\" (the shared generations, "
                        "\"s3://bucket/prefix\")",
                        role_names[c->role]);
    if (c->storage) {
        const char *s = c->storage;
        if (strncmp(s, "s3://", 5) != 0 || s[5] == '\0' || s[5] == '/' ||
            strpbrk(s, "*?[") != NULL)
            return cfg_fail(b, "storage", 0, VT_ERR_INVALID_CONFIG,
                            "expected \"s3://bucket\" or \"s3://bucket/prefix\" (no glob), got "
                            "\"%.100s\"",
                            s);
    }
    if (c->gc_grace_secs * 1000 < c->pin_secs * 1000 + c->poll_interval_ms)
        return cfg_fail(b, "gc_grace_secs", 0, VT_ERR_INVALID_CONFIG,
                        "must be at least pin_secs + poll_interval_ms (%lld s + %lld ms): a "
                        "reader may still read a replaced generation that long",
                        (long long)c->pin_secs, (long long)c->poll_interval_ms);
    return true;
}

static bool s3_endpoint_ok(const struct cfg_blk *b, const struct s3_config *s3,
                           const char *allow_key);

static bool rule_cluster_s3(const struct cfg_blk *b, void *base)
{
    return s3_endpoint_ok(b, &((struct vt_config *)base)->cluster.s3, "cluster.s3.allow_http");
}

static bool rule_dataset_name(const struct cfg_blk *b, void *base)
{
    const struct vt_dataset_config *ds = base;
    if (!ds->name)
        return cfg_fail(b, "name", 0, VT_ERR_INVALID_NAME, "required");
    const char *why;
    if (!config_valid_dataset_name(ds->name, &why))
        return cfg_fail(b, "name", 0, VT_ERR_INVALID_NAME, "invalid dataset name \"%.*s\": it %s",
                        VT_MAX_DATASET_NAME_BYTES, ds->name, why);
    return true;
}

static bool rule_kind_default(const struct cfg_blk *b, void *base)
{
    struct vt_dataset_config *ds = base;
    ds->kind = cfg_has(b, "sql") ? CFG_SOURCE_QUERY : CFG_SOURCE_PARQUET;
    return true;
}

static bool rule_kind_fields(const struct cfg_blk *b, void *base)
{
    const struct vt_dataset_config *ds = base;
    struct cfg_blk src;
    cfg_sub(b, "source", &src);
    const char *kn = config_source_kind_name(ds->kind);
    if (ds->kind == CFG_SOURCE_QUERY) {
        if (ds->location)
            return cfg_fail(&src, "location", 0, VT_ERR_INVALID_CONFIG,
                            "not allowed for kind \"query\" (a query reads other datasets through sql)");
        if (!ds->sql)
            return cfg_fail(b, "sql", 0, VT_ERR_INVALID_CONFIG, "required for kind \"query\"");
        for (size_t i = 0; i < ds->depends_on.len; i++) {
            const char *dep = ds->depends_on.items[i], *why;
            char k[48];
            snprintf(k, sizeof k, "depends_on[%zu]", i);
            if (!config_valid_dataset_name(dep, &why))
                return cfg_fail(b, k, cfg_line_of(b, "depends_on"), VT_ERR_INVALID_CONFIG,
                                "\"%.*s\" is not a valid dataset name: it %s",
                                VT_MAX_DATASET_NAME_BYTES, dep, why);
            if (ds->name && strcmp(dep, ds->name) == 0)
                return cfg_fail(b, k, cfg_line_of(b, "depends_on"), VT_ERR_INVALID_CONFIG,
                                "a dataset cannot depend on itself");
            for (size_t j = 0; j < i; j++)
                if (strcmp(dep, ds->depends_on.items[j]) == 0)
                    return cfg_fail(b, k, cfg_line_of(b, "depends_on"), VT_ERR_INVALID_CONFIG,
                                    "\"%s\" is listed twice", dep);
        }
        return true;
    }
    if (!ds->location)
        return cfg_fail(&src, "location", 0, VT_ERR_INVALID_CONFIG, "required for kind \"%s\"", kn);
    if (strncmp(ds->location, "s3://", 5) == 0 &&
        (ds->location[5] == '\0' || ds->location[5] == '/'))
        return cfg_fail(&src, "location", 0, VT_ERR_INVALID_CONFIG,
                        "an s3:// location needs a bucket name (s3://bucket/prefix)");
    if (ds->sql)
        return cfg_fail(b, "sql", 0, VT_ERR_INVALID_CONFIG, "only allowed for kind \"query\"");
    if (cfg_has(b, "depends_on"))
        return cfg_fail(b, "depends_on", 0, VT_ERR_INVALID_CONFIG,
                        "only allowed for kind \"query\"");
    return true;
}

static bool check_timestamp(const struct cfg_blk *b, const struct cfg_key *k, void *field)
{
    const char *s = *(char **)field;
    int64_t ms;
    if (!s || time_parse_rfc3339(s, &ms))
        return true;
    return cfg_fail(b, k->name, 0, VT_ERR_INVALID_CONFIG,
                    "expected an RFC 3339 time (2024-06-01T12:00:00Z) or a date, got \"%.60s\"",
                    s);
}

static bool rule_time_travel(const struct cfg_blk *b, void *base)
{
    struct vt_dataset_config *ds = base;
    struct cfg_blk src;
    cfg_sub(b, "source", &src);
    ds->source_version_set = ds->source_version >= 0;
    bool v = ds->source_version_set, t = ds->source_timestamp != NULL;
    if ((v || t) && ds->kind != CFG_SOURCE_DELTA)
        return cfg_fail(&src, v ? "version" : "timestamp", 0, VT_ERR_INVALID_CONFIG,
                        "only allowed for kind \"delta\"");
    if (v && t)
        return cfg_fail(&src, "timestamp", 0, VT_ERR_INVALID_CONFIG,
                        "give source.version or source.timestamp, not both");
    return true;
}

static bool rule_index_columns(const struct cfg_blk *b, void *base)
{
    const struct vt_dataset_config *ds = base;
    if (ds->index_mode == CFG_INDEX_LIST && ds->index_columns.len == 0)
        return cfg_fail(b, "columns", 0, VT_ERR_INVALID_CONFIG,
                        "required (non-empty) when index.mode is \"list\"");
    if (ds->index_mode != CFG_INDEX_LIST && ds->index_columns.len > 0)
        return cfg_fail(b, "columns", 0, VT_ERR_INVALID_CONFIG,
                        "only used when index.mode is \"list\" (mode is \"%s\")",
                        cfg_index_mode_names[ds->index_mode]);
    return true;
}

/* s3.endpoint is an http(s) URL; plain http needs allow_http. */
static bool s3_endpoint_ok(const struct cfg_blk *b, const struct s3_config *s3,
                           const char *allow_key)
{
    if (!s3->endpoint)
        return true;
    bool http = strncmp(s3->endpoint, "http://", 7) == 0;
    if (!http && strncmp(s3->endpoint, "https://", 8) != 0)
        return cfg_fail(b, "endpoint", 0, VT_ERR_INVALID_CONFIG,
                        "expected an http:// or https:// URL");
    if (http && !s3->allow_http)
        return cfg_fail(b, "endpoint", 0, VT_ERR_INVALID_CONFIG,
                        "a plain http:// endpoint needs %s = true", allow_key);
    return true;
}

static bool rule_s3_endpoint(const struct cfg_blk *b, void *base)
{
    return s3_endpoint_ok(b, &((struct vt_dataset_config *)base)->s3, "s3.allow_http");
}

static bool rule_upstream_reload(const struct cfg_blk *b, void *base)
{
    const struct vt_dataset_config *ds = base;
    if (ds->refresh.on_upstream_reload && ds->kind != CFG_SOURCE_QUERY)
        return cfg_fail(b, "on_upstream_reload", 0, VT_ERR_INVALID_CONFIG,
                        "only applies to datasets of kind \"query\" (they have upstreams)");
    return true;
}

static bool rule_lazy_memory(const struct cfg_blk *b, void *base)
{
    const struct vt_dataset_config *ds = base;
    if (ds->lazy && ds->materialize.residency == CFG_RESIDENCY_MEMORY)
        return cfg_fail(b, "residency", 0, VT_ERR_INVALID_CONFIG,
                        "\"memory\" contradicts lazy = true");
    return true;
}

static bool rule_lazy_index(const struct cfg_blk *b, void *base)
{
    const struct vt_dataset_config *ds = base;
    bool lazy = ds->lazy ||
                (ds->materialize.set && ds->materialize.residency == CFG_RESIDENCY_LAZY);
    if (lazy && cfg_has(b, "index") && ds->index_mode != CFG_INDEX_NONE)
        return cfg_fail(b, "index", 0, VT_ERR_INVALID_CONFIG,
                        "lazy datasets carry no index (remove the index block or set "
                        "index.mode = \"none\")");
    return true;
}

/* ---------------------------------------------------------------- the table */

/* The field of a row: C() in struct vt_config, D() in struct vt_dataset_config. */
#define C(m) .off = offsetof(struct vt_config, m), .size = sizeof(((struct vt_config *)0)->m)
#define D(m) .off = offsetof(struct vt_dataset_config, m), \
             .size = sizeof(((struct vt_dataset_config *)0)->m)
#define RANGE(lo, hi) .min = (lo), .max = (hi)

const struct cfg_key cfg_schema[] = {
    /* ------------------------------------------------------------ [server] */
    {"", "server", CFG_T_TABLE,
     .doc = "The HTTP service: listener, limits, time-outs, memory and the places it may read."},
    {"server", "backend", CFG_T_ENUM, C(server.backend), .names = backend_names,
     .def = "\"datafusion\"",
     .doc = "Engine hint. This build has only the DuckDB engine: any value runs DuckDB; "
            "\"datafusion\" set explicitly logs a warning (left unset, one INFO line)."},
    {"server", NULL, CFG_T_RULE, .rule = rule_backend_set},
    {"server", "listen", CFG_T_STR, C(server.listen), .flags = CFG_NONEMPTY,
     .def = "\"127.0.0.1\"", .doc = "Bind address of the HTTP listener."},
    {"server", "port", CFG_T_INT, C(server.port), RANGE(0, 65535), .def = "8080",
     .doc = "TCP port; 0 lets the system pick a free port (logged at start)."},
    {"server", "workers", CFG_T_INT, C(server.workers), RANGE(1, 4096),
     .def_doc = "one per CPU", .example = "4",
     .doc = "Worker threads running queries (each owns one DuckDB connection)."},
    {"server", "max_queued_jobs", CFG_T_INT, C(server.max_queued_jobs),
     RANGE(1, VT_MAX_PENDING_JOBS), .def = "4096",
     .doc = "Requests and PostgreSQL statements waiting for a query worker, at most, per job "
            "class (short: pages, counts, point queries; long: group bys, sorts, /sql; "
            "stream: /query/stream): past it a request of that class gets 503 unavailable "
            "(with Retry-After) at once instead of queueing, while the other classes still "
            "queue. Lower it to shed load sooner when a balancer can send it elsewhere; "
            "vitrine_engine_jobs_queued shows each class's queue."},
    {"server", "worker_nice", CFG_T_INT, C(server.worker_nice), RANGE(0, 19), .def = "5",
     .doc = "Added to the nice value of every query worker and of DuckDB's task threads, "
            "but not of the HTTP loops, which answer point lookups and counts from the "
            "index in microseconds: when the cores are busy, a loop that wakes for one runs "
            "before the workers' pages, group bys and streams (nice 5 weighs about a third "
            "of nice 0). It orders the service's own threads; in a cgroup of its own (the "
            "systemd unit, a container) it gives no CPU to other services. lane_nice and "
            "task_nice add to it. 0 runs every thread at the process's priority."},
    {"server", "lane_nice", CFG_T_INT, C(server.lane_nice), RANGE(0, 19), .def = "0",
     .doc = "Added to the nice value of the threads that run group bys, sorts, /sql and "
            "streams (the long and stream lanes), so that pages, counts and point lookups "
            "get the CPU first when the cores are busy. Linux shares a busy core by weight: "
            "nice 5 weighs about a third of nice 0. 0 runs every lane at the process's "
            "priority. Raising a thread's nice needs no privilege."},
    {"server", "task_nice", CFG_T_INT, C(server.task_nice), RANGE(0, 19), .def = "0",
     .doc = "Added to the nice value of DuckDB's own task threads, which run the parallel "
            "part of every statement beside the worker that started it."},
    {"server", "worker_idle", CFG_T_BOOL, C(server.worker_idle), .def = "false",
     .doc = "Runs every query worker and DuckDB's task threads under Linux's SCHED_IDLE "
            "policy instead of only a higher nice: a thread of the HTTP loops (or of any "
            "other process) that wakes takes their core at once. Measured in alternated "
            "runs of the mixed load with requests arriving at fixed rates, it halved the "
            "p99 of point lookups and counts and lowered that of pages, group bys and "
            "streams; but when the cores stay busy with other work (clients that send their "
            "next request the moment an answer comes, other processes on the machine) the "
            "workers get almost no CPU, and pages, group bys and streams wait seconds or "
            "time out. For a dedicated machine or cgroup whose traffic arrives at its own "
            "pace. Needs no privilege."},
    {"server", "prefix", CFG_T_STR, C(server.prefix), .def = "\"\"", .check = check_prefix,
     .doc = "Mount every route, probes included, under this path (\"/vitrine\"); starts with "
            "\"/\", does not end with one."},
    {"server", "compress", CFG_T_BOOL, C(server.compress), .def = "true",
     .doc = "Compress responses with gzip, brotli or zstd as the client's Accept-Encoding "
            "asks."},
    {"server", "max_body_bytes", CFG_T_INT, C(server.max_body_bytes), RANGE(1, INT64_MAX),
     .def = "1048576",
     .doc = "Largest request body; a larger one gets 413 before any handler runs."},
    {"server", "max_page_size", CFG_T_INT, C(server.max_page_size), RANGE(1, INT64_MAX),
     .def = "100000", .doc = "Largest page_size of /query; larger requests are clamped to it."},
    {"server", "force_lazy_above_mb", CFG_T_INT, C(server.force_lazy_above_mb),
     RANGE(0, INT64_MAX), .def = "0",
     .doc = "Above 0: datasets whose files exceed this many MiB are served lazily (from "
            "storage per query); 0 disables."},
    {"server", "request_timeout_ms", CFG_T_INT, C(server.request_timeout_ms),
     RANGE(0, INT64_MAX), .def = "30000",
     .doc = "A request still running after this many milliseconds is interrupted and answered "
            "504; 0 disables."},
    {"server", "shutdown_timeout_secs", CFG_T_INT, C(server.shutdown_timeout_secs),
     RANGE(0, INT64_MAX), .def = "30",
     .doc = "After SIGTERM or SIGINT, in-flight requests get this long to finish."},
    {"server", "drain_delay_secs", CFG_T_INT, C(server.drain_delay_secs), RANGE(0, 3600),
     .def = "0",
     .doc = "After SIGTERM, /readyz answers 503 at once while everything else is still served "
            "this long (load balancers take the replica out), then the listeners close and "
            "in-flight work gets shutdown_timeout_secs. 5-10 s behind a Kubernetes Service."},
    {"server", "environment", CFG_T_STR, C(server.environment), .flags = CFG_NONEMPTY,
     .def_doc = "unset", .example = "\"staging\"",
     .doc = "Label of the environment badge in the Explorer navbar."},
    {"server", "environment_color", CFG_T_STR, C(server.environment_color),
     .names = color_names, .def_doc = "inferred from environment", .example = "\"warning\"",
     .doc = "Badge color. When omitted: production/prod danger (red), staging/stage/uat "
            "warning (yellow), development/dev/local success (green), else secondary (grey)."},
    {"server", "saved_queries_dir", CFG_T_PATH, C(server.saved_queries_dir),
     .def = "\"datasets.d\"", .def_doc = "datasets.d beside the config file",
     .doc = "Directory of saved queries (one file per query dataset); created on first write."},
    {"server", "storage_dir", CFG_T_PATH, C(server.storage_dir), .def = "\"storage\"",
     .def_doc = "storage beside the config file",
     .doc = "Where query datasets with materialize.residency \"lazy\" (or \"auto\" above the "
            "size threshold) keep their generations as Parquet files, one folder per generation "
            "named by its ULID; created on first write."},
    {"server", "memory_limit", CFG_T_STR, C(server.memory_limit), .flags = CFG_NONEMPTY,
     .check = check_memory_limit, .def = "\"50%\"",
     .doc = "DuckDB's memory limit: a size (\"8GB\", \"512MiB\") or a share of the memory "
            "available (\"50%\" of RAM, or of the cgroup limit when lower; the value used is "
            "logged at start). Resident datasets, sorts and group-bys count against it; above "
            "it large operators spill to temp_directory. Memory DuckDB takes outside that pool "
            "(lists and strings that functions build, C++ objects) is held to a budget of this "
            "limit plus a quarter (at least 128 MiB more): a statement that would pass it fails "
            "with an out-of-memory error. The rest is left for the index, row stores and "
            "response buffers."},
    {"server", "index_memory_limit", CFG_T_STR, C(server.index_memory_limit),
     .flags = CFG_NONEMPTY, .check = check_memory_limit, .def = "\"10%\"",
     .doc = "Memory that the index fast paths of all datasets may hold together: a size "
            "(\"512MiB\") or a share of the memory available (\"10%\"). What stays in memory "
            "is the index's directories and distinct keys (about 1 MiB per million rows for "
            "key lookups); the rows and posting lists live in one file per generation in the "
            "runtime directory, read through the page cache. A build that does not fit leaves "
            "its largest structures out (logged; /status shows index.memory_bytes)."},
    {"server", "s3_cache_mb", CFG_T_INT, C(server.s3_cache_mb), RANGE(1, INT64_MAX),
     .def = "4096",
     .doc = "Budget in MiB of the local cache of S3 byte ranges that lazy datasets read "
            "(footers, the chunks queries need); least recently used objects go first, never "
            "what a running query reads."},
    {"server", "temp_directory", CFG_T_PATH, C(server.temp_directory),
     .def_doc = "a private directory under $TMPDIR, removed at exit", .example = "\"tmp\"",
     .doc = "Where DuckDB spills sorts, joins and group-bys that do not fit in memory_limit."},
    {"server", "max_temp_directory_size", CFG_T_STR, C(server.max_temp_directory_size),
     .flags = CFG_NONEMPTY, .check = check_memory_limit, .def = "\"25%\"",
     .doc = "The most DuckDB may spill to temp_directory, all statements together: a size "
            "(\"20GB\") or a share of that file system's free space at start (the value used "
            "is logged). A statement that would spill past it fails with an out-of-memory "
            "error instead of filling the disk."},
    {"server", "allowed_roots", CFG_T_STRVEC, C(server.allowed_roots), .flags = CFG_PATHS,
     .def = "[]",
     .def_doc = "empty: the config file's directory, the directory of each of its local "
                "datasets (also those a config reload adds) and the saved-queries and storage "
                "directories (the working directory when there is no config file)",
     .doc = "Every local path a build reads (symbolic links resolved, Delta data files too) "
            "must lie inside one of these directories, and so must the location a request "
            "registers or persists; datasets of the config file may also read their own "
            "location, as written or through its links. Relative entries are relative to the "
            "config file."},
    {"server", "allowed_s3_endpoints", CFG_T_STRVEC, C(server.allowed_s3_endpoints),
     .check = check_url, .def = "[]",
     .def_doc = "empty: only the endpoints named by the config file's datasets",
     .doc = "S3 endpoints (URLs as written in s3.endpoint) that runtime registrations may "
            "use. These and the config's own may be loopback or private addresses; link-local "
            "and cloud-metadata addresses are never dialled."},
    {"server", "allowed_credential_envs", CFG_T_STRVEC, C(server.allowed_credential_envs),
     .check = check_env_name, .def = "[]",
     .def_doc = "empty: the standard AWS_* variables and the names used by the config file's "
                "datasets",
     .doc = "Environment variables that runtime registrations may name in s3.*_env, besides "
            "the standard AWS_* ones and those the config file's datasets name."},
    {"server", "allowed_hosts", CFG_T_STRVEC, C(server.allowed_hosts),
     .check = check_host_pattern, .def = "[]",
     .def_doc = "empty: loopback names only on a loopback listener, any name otherwise",
     .doc = "Host names the server answers besides localhost, 127.0.0.0/8 and [::1] "
            "(\"name\", \"*.suffix\" for the names under suffix, \"*\" for any); any other "
            "Host gets 421 host_not_allowed on every route (DNS-rebinding protection). Behind a "
            "proxy that keeps the public Host, list that name. On a listener that is not "
            "loopback, IP addresses are always answered and an empty list answers any name."},
    {"server", "allowed_origins", CFG_T_STRVEC, C(server.allowed_origins),
     .check = check_origin, .def = "[]",
     .def_doc = "empty: loopback origins, and a listed host's own origin",
     .doc = "Browser origins (scheme://host[:port], or \"*\" for any) allowed to call MCP "
            "besides the loopback ones and the own origin of a host named in allowed_hosts; "
            "a request with any other Origin gets 403."},
    {"server", "cors_origins", CFG_T_STRVEC, C(server.cors_origins), .check = check_origin,
     .def = "[]", .def_doc = "empty: no cross-origin reads (no CORS headers at all)",
     .example = "[\"https://dashboards.example.com\"]",
     .doc = "Origins (scheme://host[:port], as browsers send them) whose pages may call the API "
            "from a browser (CORS): their requests get Access-Control-Allow-Origin and preflights "
            "(OPTIONS) are answered. \"*\" allows every origin. Credentials still go in headers "
            "(Authorization, X-Admin-Token); no cookies are used."},
    {"server", "startup", CFG_T_TABLE, .doc = "How startup builds run and when /readyz turns ready."},
    {"server", "quack", CFG_T_TABLE,
     .doc = "Experimental DuckDB Quack server, started after the datasets are registered."},
    {"server", "pgwire", CFG_T_TABLE,
     .doc = "PostgreSQL wire-protocol listener (read-only). A non-loopback listen needs a "
            "password and TLS."},

    /* ---------------------------------------------------- [server.startup] */
    {"server.startup", "readiness", CFG_T_ENUM, C(server.startup.readiness),
     .names = readiness_names, .def = "\"all\"",
     .doc = "Ready when \"all\" eager datasets are built (or failed), or as soon as \"any\" is "
            "published."},
    {"server.startup", "max_concurrent", CFG_T_INT, C(server.startup.max_concurrent),
     RANGE(1, 1024), .def = "4",
     .doc = "Dataset builds running at the same time (startup, reloads and registrations)."},

    /* ------------------------------------------------------ [server.quack] */
    {"server.quack", "enabled", CFG_T_BOOL, C(server.quack.enabled), .def = "false",
     .doc = "Start the Quack server."},
    {"server.quack", "uri", CFG_T_STR, C(server.quack.uri), .flags = CFG_NONEMPTY,
     .def = "\"quack:localhost\"",
     .doc = "quack:HOST or quack:HOST:PORT (default port 9494); only the literal host "
            "localhost counts as local."},
    {"server.quack", "token", CFG_T_STR, C(server.quack.token), .flags = CFG_NONEMPTY,
     .def_doc = "generated and logged once", .example = "\"change-me\"",
     .doc = "Token clients present (as TOKEN in a secret or in ATTACH options); at least 4 "
            "characters."},
    {"server.quack", "allow_other_hostname", CFG_T_BOOL, C(server.quack.allow_other_hostname),
     .def = "false", .doc = "Allow a non-local uri host (put a TLS-terminating proxy in front)."},
    {"server.quack", "read_only", CFG_T_BOOL, C(server.quack.read_only), .def = "true",
     .doc = "Every query passes the SQL gate of /api/v1/sql first: one read-only SELECT over "
            "the datasets (CREATE, INSERT, UPDATE, DELETE, COPY, DROP, ALTER, LOAD, INSTALL "
            "and anything else are refused)."},
    {"server.quack", NULL, CFG_T_RULE, .rule = rule_quack,
     .doc = "A uri host other than localhost needs allow_other_hostname = true."},

    /* ----------------------------------------------------- [server.pgwire] */
    {"server.pgwire", "enabled", CFG_T_BOOL, C(server.pgwire.enabled), .def = "false",
     .doc = "Start the PostgreSQL listener."},
    {"server.pgwire", "listen", CFG_T_STR, C(server.pgwire.listen), .flags = CFG_NONEMPTY,
     .def = "\"127.0.0.1\"", .doc = "Bind address."},
    {"server.pgwire", "port", CFG_T_INT, C(server.pgwire.port), RANGE(0, 65535), .def = "5432",
     .doc = "TCP port."},
    {"server.pgwire", "username", CFG_T_STR, C(server.pgwire.username), .flags = CFG_NONEMPTY,
     .def = "\"vitrine\"", .doc = "User name clients must present."},
    {"server.pgwire", "password", CFG_T_STR, C(server.pgwire.password), .flags = CFG_NONEMPTY,
     .def_doc = "unset", .example = "\"change-me\"",
     .doc = "Cleartext password; optional on loopback, required on any other address. With "
            "[auth] enabled a bearer token is a password too (the HTTP permission map applies)."},
    {"server.pgwire", "tls_cert", CFG_T_PATH, C(server.pgwire.tls_cert), .def_doc = "unset",
     .example = "\"certs/server.pem\"", .doc = "PEM certificate (with tls_key)."},
    {"server.pgwire", "tls_key", CFG_T_PATH, C(server.pgwire.tls_key), .def_doc = "unset",
     .example = "\"certs/server.key\"", .doc = "PKCS#8 key (with tls_cert)."},
    {"server.pgwire", "max_connections", CFG_T_INT, C(server.pgwire.max_connections),
     RANGE(1, 10000), .def = "100",
     .doc = "Client sessions at once; past it a new client gets \"too many clients\" (53300)."},
    {"server.pgwire", "idle_timeout_secs", CFG_T_INT, C(server.pgwire.idle_timeout_secs),
     RANGE(0, 604800), .def = "600",
     .doc = "A session idle (between statements) this long is closed (57P05); 0 = never."},
    {"server.pgwire", NULL, CFG_T_RULE, .rule = rule_pgwire,
     .doc = "tls_cert and tls_key go together; a non-loopback listen needs a password and TLS."},

    /* ------------------------------------------------------------ UI mounts */
    {"", "swagger", CFG_T_TABLE, .doc = "Swagger UI and openapi.json."},
    {"swagger", "enabled", CFG_T_BOOL, C(swagger.enabled), .def = "true", .doc = "Serve them."},
    {"swagger", "path", CFG_T_STR, C(swagger.path), .def = "\"/docs\"", .check = check_mount,
     .doc = "Mount point."},
    {"", "metrics", CFG_T_TABLE,
     .doc = "Prometheus metrics (text format), not under the prefix."},
    {"metrics", "enabled", CFG_T_BOOL, C(metrics.enabled), .def = "false", .doc = "Serve them."},
    {"metrics", "path", CFG_T_STR, C(metrics.path), .def = "\"/metrics\"", .check = check_mount,
     .doc = "Mount point."},
    {"metrics", "public", CFG_T_BOOL, C(metrics_public), .def = "false",
     .def_doc = "true without [auth], false with it", .example = "true",
     .doc = "Serve the metrics without credentials. They name every dataset and saved query "
            "and count their failures, so with [auth] enabled they need a bearer token with a "
            "read scope (or the admin token) unless this is set to true."},
    {"metrics", NULL, CFG_T_RULE, .rule = rule_metrics_public_set},
    {"", "docs", CFG_T_TABLE, .doc = "The embedded documentation site."},
    {"docs", "enabled", CFG_T_BOOL, C(docs.enabled), .def = "true", .doc = "Serve it."},
    {"docs", "path", CFG_T_STR, C(docs.path), .def = "\"/mkdocs\"", .check = check_mount,
     .doc = "Mount point."},
    {"", "explorer", CFG_T_TABLE, .doc = "The Explorer web UI."},
    {"explorer", "enabled", CFG_T_BOOL, C(explorer.enabled), .def = "true", .doc = "Serve it."},
    {"explorer", "path", CFG_T_STR, C(explorer.path), .def = "\"/explore\"",
     .check = check_mount, .doc = "Mount point."},
    {"explorer", "oauth2", CFG_T_TABLE, C(explorer_oauth2.set), .flags = CFG_SETS | CFG_OPTIONAL,
     .doc = "Sign-in for the Explorer (authorization code with PKCE); the bearer token is "
            "forwarded on API calls."},
    {"explorer.oauth2", "client_id", CFG_T_STR, C(explorer_oauth2.client_id),
     .flags = CFG_NONEMPTY, .def_doc = "required", .example = "\"vitrine-explorer\"",
     .doc = "OAuth2 client id of the Explorer."},
    {"explorer.oauth2", "issuer", CFG_T_STR, C(explorer_oauth2.issuer), .flags = CFG_NONEMPTY,
     .check = check_url, .def_doc = "required",
     .example = "\"https://idp.example.com/realms/main\"", .doc = "Issuer URL."},
    {"explorer.oauth2", "scopes", CFG_T_STRVEC, C(explorer_oauth2.scopes), .def = "[]",
     .example = "[\"openid\", \"datasets:read\"]", .doc = "Scopes to request."},
    {"explorer.oauth2", "pkce", CFG_T_BOOL, C(explorer_oauth2.pkce), .def = "true",
     .doc = "Use PKCE."},
    {"explorer.oauth2", NULL, CFG_T_RULE, .rule = rule_oauth2,
     .doc = "client_id and issuer are required when the table is given."},

    /* -------------------------------------------------------------- [auth] */
    {"", "auth", CFG_T_TABLE,
     .doc = "Bearer-token (OIDC/OAuth2 JWT) validation. X-Admin-Token (ADMIN_TOKEN) works "
            "beside it unless admin_token_fallback is false."},
    {"auth", "enabled", CFG_T_BOOL, C(auth.enabled), .def = "false",
     .doc = "Validate bearer tokens."},
    {"auth", "issuer", CFG_T_STR, C(auth.issuer), .flags = CFG_NONEMPTY, .check = check_url,
     .def_doc = "unset (required when enabled)",
     .example = "\"https://idp.example.com/realms/main\"",
     .doc = "Issuer URL of the identity provider."},
    {"auth", "audience", CFG_T_STR, C(auth.audience), .flags = CFG_NONEMPTY, .def_doc = "unset",
     .example = "\"vitrine\"", .doc = "Expected audience."},
    {"auth", "algorithms", CFG_T_STRVEC, C(auth.algorithms), .check = check_algorithms,
     .def = "[\"RS256\"]", .doc = "Accepted signature algorithms: RS, ES and PS variants only."},
    {"auth", "leeway_secs", CFG_T_INT, C(auth.leeway_secs), RANGE(0, 86400), .def = "60",
     .doc = "Clock leeway for exp and nbf."},
    {"auth", "jwks_refresh_secs", CFG_T_INT, C(auth.jwks_refresh_secs), RANGE(1, INT64_MAX),
     .def = "3600", .doc = "Key-set refresh period."},
    {"auth", "read_scopes", CFG_T_STRVEC, C(auth.read_scopes), .def = "[\"datasets:read\"]",
     .doc = "Scopes that permit reads (any one of them)."},
    {"auth", "reload_scopes", CFG_T_STRVEC, C(auth.reload_scopes),
     .def = "[\"datasets:reload\"]",
     .doc = "Scopes that permit reload, registration and persist (any one of them)."},
    {"auth", "anonymous_read", CFG_T_BOOL, C(auth.anonymous_read), .def = "false",
     .doc = "Keep GET routes public."},
    {"auth", "tenant_claim", CFG_T_STR, C(auth.tenant_claim), .flags = CFG_NONEMPTY,
     .check = check_json_pointer, .def_doc = "unset", .example = "\"/tid\"",
     .doc = "JSON pointer to the tenant in the token's claims."},
    {"auth", "allowed_tenants", CFG_T_STRVEC, C(auth.allowed_tenants), .def = "[]",
     .doc = "Tenants allowed; empty allows any."},
    {"auth", "admin_token_fallback", CFG_T_BOOL, C(auth.admin_token_fallback), .def = "true",
     .doc = "Keep X-Admin-Token working when bearer tokens are enabled."},
    {"auth", "start_degraded", CFG_T_BOOL, C(auth.start_degraded), .def = "true",
     .doc = "Warn and continue when the identity provider is unreachable at boot."},
    {"auth", NULL, CFG_T_RULE, .rule = rule_auth,
     .doc = "enabled = true needs an issuer; a plain http issuer must be a loopback host."},

    /* -------------------------------------------------------- [datafusion] */
    {"", "datafusion", CFG_T_TABLE,
     .doc = "Options of the datafusion engine; this DuckDB build ignores them, except the "
            "listing cache (list_files_cache*), which it applies to S3 Parquet sources."},
    {"datafusion", "pushdown_filters", CFG_T_BOOL, C(datafusion.pushdown_filters),
     .def = "false", .doc = "Evaluate row filters during Parquet decode."},
    {"datafusion", "reorder_filters", CFG_T_BOOL, C(datafusion.reorder_filters), .def = "false",
     .doc = "Reorder filters (only with pushdown_filters)."},
    {"datafusion", "list_files_cache", CFG_T_BOOL, C(datafusion.list_files_cache),
     .def = "false",
     .doc = "Cache object-store listings (not for Delta sources): a rebuild of an S3 Parquet "
            "dataset (reload, refresh) within the TTL reuses its location's listing instead of "
            "listing again, so objects added meanwhile are seen only after the TTL."},
    {"datafusion", "list_files_cache_mb", CFG_T_INT, C(datafusion.list_files_cache_mb),
     RANGE(1, INT64_MAX), .def = "64", .doc = "Listing cache budget in MiB."},
    {"datafusion", "list_files_cache_ttl_secs", CFG_T_INT,
     C(datafusion.list_files_cache_ttl_secs), RANGE(0, INT64_MAX), .def = "60",
     .doc = "Listing cache lifetime; 0 never expires."},

    /* --------------------------------------------------------------- [sql] */
    {"", "sql", CFG_T_TABLE, .doc = "POST /api/v1/sql: read-only SQL over the registered datasets."},
    {"sql", "enabled", CFG_T_BOOL, C(sql.enabled), .def = "false",
     .doc = "Serve the route (404 otherwise)."},
    {"sql", "max_rows", CFG_T_INT, C(sql.max_rows), RANGE(1, INT64_MAX), .def = "100000",
     .doc = "Most rows one statement returns."},

    /* --------------------------------------------------------------- [mcp] */
    {"", "mcp", CFG_T_TABLE, .doc = "The MCP endpoint for AI agents (JSON-RPC 2.0 over POST)."},
    {"mcp", "enabled", CFG_T_BOOL, C(mcp.enabled), .def = "false", .doc = "Serve it."},
    {"mcp", "expose_sql", CFG_T_BOOL, C(mcp.expose_sql), .def = "false",
     .doc = "Offer the sql tool (also needs sql.enabled)."},
    {"mcp", "path", CFG_T_STR, C(mcp.path), .def = "\"/mcp\"", .check = check_mount,
     .doc = "Mount point."},
    {"mcp", "max_rows", CFG_T_INT, C(mcp.max_rows), RANGE(1, 100000), .def = "500",
     .doc = "Most rows in one query_dataset or sql result (the result says when it was cut "
            "and gives the arguments for the rest)."},
    {"mcp", "max_bytes", CFG_T_INT, C(mcp.max_bytes), RANGE(1024, 67108864), .def = "262144",
     .doc = "Most bytes of rows in one result (whole rows only)."},
    {"mcp", "list_page_size", CFG_T_INT, C(mcp.list_page_size), RANGE(1, 1000), .def = "100",
     .doc = "Entries in one page of tools/list, resources/list and the list_datasets tool "
            "(the page gives a cursor for the next one)."},
    {"mcp", "allowed_origins", CFG_T_STRVEC, C(mcp.allowed_origins), .def = "[]",
     .doc = "Browser origins allowed to call MCP, added to server.allowed_origins "
            "(DNS-rebinding protection: any other Origin is 403)."},
    /* ----------------------------------------------------------- [cluster] */
    {"", "cluster", CFG_T_TABLE,
     .doc = "Scale-out: one writer builds and publishes every generation to S3, stateless "
            "readers poll it and serve the same generations (docs/operations.md, \"Scaling "
            "out\")."},
    {"cluster", "role", CFG_T_ENUM, C(cluster.role), .names = role_names,
     .def = "\"standalone\"",
     .doc = "\"standalone\" (one process, today's behaviour), \"writer\" (the only process "
            "that reads sources; publishes to storage) or \"reader\" (serves what the writer "
            "published; never reads sources). `vitrine --role` overrides it."},
    {"cluster", "storage", CFG_T_STR, C(cluster.storage), .flags = CFG_NONEMPTY,
     .def_doc = "unset (required for writer and reader)", .example = "\"s3://vitrine/prod\"",
     .doc = "Where generations are shared: {storage}/{dataset}/{generation_id}/ holds the "
            "Parquet and its manifest, {storage}/{dataset}/CURRENT names the current one."},
    {"cluster", "poll_interval_ms", CFG_T_INT, C(cluster.poll_interval_ms),
     RANGE(100, 3600000), .def = "2000",
     .doc = "Readers look at every CURRENT this often (conditional GETs, ±10% jitter): the "
            "bound of the eventual consistency."},
    {"cluster", "writer_url", CFG_T_STR, C(cluster.writer_url), .flags = CFG_NONEMPTY,
     .check = check_url, .def_doc = "unset: admin calls to a reader answer 409 naming the writer",
     .example = "\"http://vitrine-writer:8080\"",
     .doc = "Readers forward admin and write calls (reload, registration, saved queries) "
            "here and relay the answer."},
    {"cluster", "advertise_url", CFG_T_STR, C(cluster.advertise_url), .flags = CFG_NONEMPTY,
     .check = check_url, .def_doc = "http://<host name>:<port>",
     .example = "\"http://vitrine-writer:8080\"",
     .doc = "The writer's own URL, published with the shared catalog so that readers can "
            "name it in their 409 answers."},
    {"cluster", "pin_secs", CFG_T_INT, C(cluster.pin_secs), RANGE(0, 86400), .def = "300",
     .doc = "Every process keeps a replaced generation this long, so reads pinned with "
            "?generation= (multi-page reads) keep working across a swap."},
    {"cluster", "gc_grace_secs", CFG_T_INT, C(cluster.gc_grace_secs), RANGE(0, 30 * 86400),
     .def = "900",
     .doc = "The writer deletes a generation that is neither current nor previous this long "
            "after it was replaced (at least pin_secs + poll_interval_ms); a folder without a "
            "manifest only after the build timeout."},
    {"cluster", "gc_interval_secs", CFG_T_INT, C(cluster.gc_interval_secs), RANGE(1, 86400),
     .def = "60", .doc = "How often the writer collects replaced generations."},
    {"cluster", NULL, CFG_T_RULE, .rule = rule_cluster,
     .doc = "role writer or reader needs storage (s3://bucket[/prefix]); gc_grace_secs >= "
            "pin_secs + poll_interval_ms."},
    {"cluster", "s3", CFG_T_TABLE,
     .doc = "S3 settings of cluster.storage; credentials from the environment as for "
            "datasets."},
    {"cluster.s3", "region", CFG_T_STR, C(cluster.s3.region), .flags = CFG_NONEMPTY,
     .def_doc = "AWS_REGION, AWS_DEFAULT_REGION or us-east-1", .example = "\"us-east-1\"",
     .doc = "Region used for signing."},
    {"cluster.s3", "endpoint", CFG_T_STR, C(cluster.s3.endpoint), .flags = CFG_NONEMPTY,
     .def_doc = "AWS", .example = "\"https://s3.eu-west-1.amazonaws.com\"",
     .doc = "Endpoint URL of an S3-compatible store (it must honour conditional writes: "
            "If-None-Match and If-Match on PUT)."},
    {"cluster.s3", "addressing_style", CFG_T_ENUM, C(cluster.s3.addressing_style),
     .names = cfg_addressing_names, .def = "\"virtual\"",
     .doc = "Bucket in the host name (\"virtual\") or in the path (\"path\")."},
    {"cluster.s3", "allow_http", CFG_T_BOOL, C(cluster.s3.allow_http), .def = "false",
     .doc = "Allow a plain http:// endpoint."},
    {"cluster.s3", "access_key_id_env", CFG_T_STR, C(cluster.s3.access_key_id_env),
     .check = check_env_name, .def_doc = "AWS_ACCESS_KEY_ID", .example = "\"AWS_ACCESS_KEY_ID\"",
     .doc = "Name of the environment variable holding the access key id."},
    {"cluster.s3", "secret_access_key_env", CFG_T_STR, C(cluster.s3.secret_access_key_env),
     .check = check_env_name, .def_doc = "AWS_SECRET_ACCESS_KEY",
     .example = "\"AWS_SECRET_ACCESS_KEY\"",
     .doc = "Name of the environment variable holding the secret access key."},
    {"cluster.s3", "session_token_env", CFG_T_STR, C(cluster.s3.session_token_env),
     .check = check_env_name, .def_doc = "AWS_SESSION_TOKEN", .example = "\"AWS_SESSION_TOKEN\"",
     .doc = "Name of the environment variable holding the session token."},
    {"cluster.s3", NULL, CFG_T_RULE, .rule = rule_cluster_s3,
     .doc = "cluster.s3.endpoint is an http:// or https:// URL; http:// needs allow_http."},

    {"", NULL, CFG_T_RULE, .rule = rule_mounts,
     .doc = "Two enabled UIs (swagger, metrics, docs, explorer, mcp) cannot share a path."},

    /* --------------------------------------------------------- [[dataset]] */
    {"", "dataset", CFG_T_DATASETS,
     .doc = "One [[dataset]] block per dataset; POST /api/v1/datasets takes the same fields "
            "as a JSON object and applies the same rules."},
    {"dataset", "name", CFG_T_STR, D(name), .flags = CFG_ALWAYS_WRITE, .def_doc = "required",
     .example = "\"trips\"",
     .doc = "A-Z a-z 0-9 _ . - only, at most 128 bytes; unique ignoring case; \"reload-all\" "
            "is reserved."},
    {"dataset", NULL, CFG_T_RULE, .rule = rule_dataset_name},
    {"dataset", NULL, CFG_T_RULE, .rule = rule_kind_default,
     .doc = "Without source.kind, a dataset with sql is of kind \"query\", any other "
            "\"parquet\"."},
    {"dataset", "source", CFG_T_TABLE, .doc = "Where the data comes from."},
    {"dataset.source", "kind", CFG_T_ENUM, D(kind), .names = cfg_kind_names,
     .flags = CFG_ALWAYS_WRITE, .def = "\"parquet\"",
     .doc = "\"parquet\", \"delta\", or \"query\" (SQL over other datasets)."},
    {"dataset.source", "location", CFG_T_STR, D(location), .flags = CFG_NONEMPTY,
     .def_doc = "required for parquet and delta", .example = "\"data/trips/*.parquet\"",
     .doc = "A local path, glob or directory (relative to the config file), or an s3:// "
            "prefix or glob."},
    {"dataset.source", "version", CFG_T_INT, D(source_version), RANGE(0, INT64_MAX),
     .def = "-1", .flags = CFG_PROSE_EXAMPLE, .def_doc = "the latest version", .example = "12",
     .doc = "Kind delta: serve this version of the table (time travel). A reload serves "
            "the same version again."},
    {"dataset.source", "timestamp", CFG_T_STR, D(source_timestamp), .check = check_timestamp,
     .flags = CFG_PROSE_EXAMPLE,
     .def_doc = "unset", .example = "\"2024-06-01T00:00:00Z\"",
     .doc = "Kind delta: serve the latest version committed at or before this time "
            "(RFC 3339, or a date: midnight UTC); commit times are the commits' own "
            "(inCommitTimestamp, else commitInfo.timestamp)."},
    {"dataset", NULL, CFG_T_RULE, .rule = rule_time_travel,
     .doc = "source.version and source.timestamp apply to kind delta, one at a time."},
    {"dataset", "sql", CFG_T_STR, D(sql), .flags = CFG_NONEMPTY | CFG_QUERY_ONLY,
     .def_doc = "required for query",
     .example = "\"SELECT city, count(*) AS trips FROM trips GROUP BY city\"",
     .doc = "Kind query: one read-only SELECT over other datasets."},
    {"dataset", "depends_on", CFG_T_STRVEC, D(depends_on), .flags = CFG_QUERY_ONLY,
     .def = "[]", .example = "[\"trips\"]",
     .doc = "Kind query: the datasets the SQL reads (in a config file, datasets of the same "
            "file)."},
    {"dataset", NULL, CFG_T_RULE, .rule = rule_kind_fields,
     .doc = "parquet and delta need source.location and take no sql or depends_on; query "
            "needs sql and takes no location."},
    {"dataset", "columns", CFG_T_STRVEC, D(columns), .def = "[]",
     .doc = "Projection applied at load; empty keeps every column."},
    {"dataset", "dict_encode", CFG_T_BOOL, D(dict_encode), .def = "false",
     .doc = "Dictionary-encode string columns."},
    {"dataset", "lazy", CFG_T_BOOL, D(lazy), .def = "false",
     .doc = "Serve from storage per query (bounded memory, no index) instead of resident in "
            "memory."},
    {"dataset", "index", CFG_T_TABLE,
     .doc = "The equality index of resident datasets (eq and in lookups in microseconds)."},
    {"dataset.index", "mode", CFG_T_ENUM, D(index_mode), .names = cfg_index_mode_names,
     .def = "\"auto\"",
     .doc = "\"auto\" indexes string, boolean and integer columns below max_cardinality, "
            "and keeps the values of number (integer, FLOAT, DOUBLE, DECIMAL), DATE and "
            "timestamp columns sorted for range counts (a never-decreasing id's own key "
            "structure serves instead); \"list\" the listed columns; \"none\" nothing."},
    {"dataset.index", "columns", CFG_T_STRVEC, D(index_columns), .def = "[]",
     .doc = "Columns to index when mode is \"list\"."},
    {"dataset.index", "max_cardinality", CFG_T_INT, D(index_max_cardinality),
     RANGE(1, INT64_MAX), .def = "100000",
     .doc = "In auto mode, a column with this many distinct values or more is not indexed."},
    {"dataset.index", "json_pages_mb", CFG_T_INT, D(index_json_pages_mb), RANGE(0, 1 << 20),
     .def = "256",
     .doc = "Pre-rendered pages: the first rows of a resident dataset, up to this many MiB, "
            "kept as the JSON of a page body in a file in the runtime directory (read "
            "through the page cache, not held in memory). A JSON page of a query with no "
            "predicate, no column list and no sort that lies within them is sent from that "
            "file with sendfile instead of being fetched and encoded. 0 turns it off; with "
            "index.mode \"none\" there is none."},
    {"dataset.index", "json_pages_gzip", CFG_T_BOOL, D(index_json_pages_gzip), .def = "true",
     .doc = "Also keep the pre-rendered pages gzip-compressed, in 64 KiB blocks in a second "
            "file (about a third of their size), so that a client that takes gzip gets a "
            "plain page as those blocks between two small pieces compressed per request "
            "instead of the whole body compressed per request. Costs about 2 s of CPU per "
            "200 MiB of pages in the index build after each publication."},
    {"dataset.index", NULL, CFG_T_RULE, .rule = rule_index_columns,
     .doc = "index.columns is required with index.mode \"list\" and only allowed with it."},
    {"dataset", "s3", CFG_T_TABLE,
     .doc = "S3 settings of an s3:// location. Credentials come from the environment."},
    {"dataset.s3", "region", CFG_T_STR, D(s3.region), .flags = CFG_NONEMPTY,
     .def_doc = "AWS_REGION, AWS_DEFAULT_REGION or us-east-1", .example = "\"us-east-1\"",
     .doc = "Region used for signing."},
    {"dataset.s3", "endpoint", CFG_T_STR, D(s3.endpoint), .flags = CFG_NONEMPTY,
     .def_doc = "AWS", .example = "\"https://s3.us-east-1.amazonaws.com\"",
     .doc = "Endpoint URL of an S3-compatible store."},
    {"dataset.s3", "addressing_style", CFG_T_ENUM, D(s3.addressing_style),
     .names = cfg_addressing_names, .def = "\"virtual\"",
     .doc = "Bucket in the host name (\"virtual\") or in the path (\"path\")."},
    {"dataset.s3", "allow_http", CFG_T_BOOL, D(s3.allow_http), .def = "false",
     .doc = "Allow a plain http:// endpoint."},
    {"dataset.s3", "partitioning", CFG_T_ENUM, D(s3.partitioning),
     .names = cfg_partitioning_names, .def = "\"auto\"",
     .doc = "Hive-style key=value directories: detected (\"auto\"), always (\"hive\") or never "
            "(\"none\")."},
    {"dataset.s3", "access_key_id_env", CFG_T_STR, D(s3.access_key_id_env),
     .check = check_env_name, .def_doc = "AWS_ACCESS_KEY_ID", .example = "\"AWS_ACCESS_KEY_ID\"",
     .doc = "Name of the environment variable holding the access key id (never the key "
            "itself)."},
    {"dataset.s3", "secret_access_key_env", CFG_T_STR, D(s3.secret_access_key_env),
     .check = check_env_name, .def_doc = "AWS_SECRET_ACCESS_KEY",
     .example = "\"AWS_SECRET_ACCESS_KEY\"",
     .doc = "Name of the environment variable holding the secret access key."},
    {"dataset.s3", "session_token_env", CFG_T_STR, D(s3.session_token_env),
     .check = check_env_name, .def_doc = "AWS_SESSION_TOKEN", .example = "\"AWS_SESSION_TOKEN\"",
     .doc = "Name of the environment variable holding the session token."},
    {"dataset.s3", NULL, CFG_T_RULE, .rule = rule_s3_endpoint,
     .doc = "s3.endpoint is an http:// or https:// URL; http:// needs s3.allow_http = true."},
    {"dataset", "refresh", CFG_T_TABLE, D(refresh.set), .flags = CFG_SETS,
     .doc = "When the dataset rebuilds by itself."},
    {"dataset.refresh", "interval", CFG_T_DURATION, D(refresh.interval_ms), .min = 1000,
     .def_doc = "unset: no schedule", .example = "\"1h\"",
     .doc = "Rebuild this often; at least 1s (a shorter schedule would rebuild without "
            "pause)."},
    {"dataset.refresh", "on_upstream_reload", CFG_T_BOOL, D(refresh.on_upstream_reload),
     .flags = CFG_QUERY_ONLY, .def = "false", .example = "true",
     .doc = "Kind query: rebuild after a dataset it depends on is reloaded."},
    {"dataset.refresh", "timeout", CFG_T_DURATION, D(refresh.timeout_ms), .min = 1,
     .def = "\"10m\"",
     .doc = "Any build of the dataset (startup, reload, registration, schedule, a query "
            "dataset's SQL) running longer than this is cancelled: its reads stop and DuckDB "
            "is interrupted; the last good generation keeps serving."},
    {"dataset.refresh", "jitter", CFG_T_BOOL, D(refresh.jitter), .def = "true",
     .doc = "Spread scheduled builds by up to ±10% of the interval."},
    {"dataset.refresh", "debounce", CFG_T_DURATION, D(refresh.debounce_ms), .min = 0,
     .def = "\"5s\"", .doc = "Upstream reloads within this time cause one rebuild."},
    {"dataset.refresh", NULL, CFG_T_RULE, .rule = rule_upstream_reload,
     .doc = "refresh.on_upstream_reload applies to kind \"query\" only."},
    {"dataset", "materialize", CFG_T_TABLE, D(materialize.set), .flags = CFG_SETS,
     .doc = "Where a built generation lives."},
    {"dataset.materialize", "residency", CFG_T_ENUM, D(materialize.residency),
     .names = cfg_residency_names, .def = "\"auto\"",
     .doc = "\"memory\", \"lazy\" (Parquet files in storage), or \"auto\" to decide by size."},
    {"dataset.materialize", "sort_by", CFG_T_STRVEC, D(materialize.sort_by), .def = "[]",
     .doc = "Sort the stored rows by these columns (row groups prune better)."},
    {"dataset.materialize", "reuse_on_start", CFG_T_BOOL, D(materialize.reuse_on_start),
     .def = "false", .doc = "Serve the last complete stored generation at startup without a rebuild."},
    {"dataset.materialize", NULL, CFG_T_RULE, .rule = rule_lazy_memory,
     .doc = "materialize.residency \"memory\" contradicts lazy = true."},
    {"dataset", "on_start", CFG_T_ENUM, D(on_start), .names = cfg_on_start_names,
     .def = "\"eager\"",
     .doc = "\"eager\" builds at boot, \"lazy\" on first use, \"skip\" waits for a reload."},
    {"dataset", NULL, CFG_T_RULE, .rule = rule_lazy_index,
     .doc = "Lazy datasets carry no index: with lazy = true or residency \"lazy\", an index "
            "table must say mode = \"none\"."},
};

const size_t cfg_schema_len = sizeof cfg_schema / sizeof cfg_schema[0];
