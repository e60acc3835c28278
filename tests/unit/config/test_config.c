/*
 * The configuration layer: defaults, every validation rule with the exact
 * message shape, JSON dataset bodies, TOML round trips of dataset blocks,
 * durations, name rules, the `vitrine init` template and path resolution.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "testlib.h"

/* Loads `text` as datasets.toml in /etc/vitrine; returns the error message
 * (malloc'd) or NULL when it loaded. */
static char *load_err(const char *text)
{
    struct vt_config cfg;
    struct vt_error err = {0};
    enum vt_err rc =
        config_load_text(text, strlen(text), "datasets.toml", "/etc/vitrine", &cfg, &err);
    if (rc == VT_ERR_OK) {
        config_free(&cfg);
        return NULL;
    }
    CHECK(err.code == rc);
    CHECK(cfg.datasets == NULL && cfg.server.listen == NULL); /* left empty */
    return strdup(err.msg);
}

#define CHECK_ERR(text, expected)                                                  \
    do {                                                                           \
        char *tl_m = load_err(text);                                               \
        CHECK_EQ_STR(tl_m, expected);                                              \
        free(tl_m);                                                                \
    } while (0)

#define CHECK_OK(text)                                                             \
    do {                                                                           \
        char *tl_m = load_err(text);                                               \
        if (tl_m)                                                                  \
            fprintf(stderr, "  unexpected error: %s\n", tl_m);                     \
        CHECK(tl_m == NULL);                                                       \
        free(tl_m);                                                                \
    } while (0)

static bool load(const char *text, struct vt_config *cfg)
{
    struct vt_error err = {0};
    if (config_load_text(text, strlen(text), "datasets.toml", "/etc/vitrine", cfg, &err) ==
        VT_ERR_OK)
        return true;
    fprintf(stderr, "  load failed: %s\n", err.msg);
    return false;
}

#define DS "[[dataset]]\nname = \"t\"\nsource.kind = \"parquet\"\nsource.location = \"a.parquet\"\n"

/* ---------------------------------------------------------------- defaults */

TEST(defaults)
{
    struct vt_config cfg;
    CHECK(load("", &cfg));
    struct server_config *s = &cfg.server;
    CHECK(s->backend == CFG_BACKEND_DATAFUSION && !s->backend_set);
    CHECK_EQ_STR(s->listen, "127.0.0.1");
    CHECK_EQ_INT(s->port, 8080);
    CHECK_EQ_INT(s->workers, 0);
    CHECK_EQ_STR(s->prefix, "");
    CHECK(s->compress);
    CHECK_EQ_INT(s->max_body_bytes, 1048576);
    CHECK_EQ_INT(s->max_page_size, 100000);
    CHECK_EQ_INT(s->force_lazy_above_mb, 0);
    CHECK_EQ_INT(s->request_timeout_ms, 30000);
    CHECK_EQ_INT(s->shutdown_timeout_secs, 30);
    CHECK(s->environment == NULL && s->environment_color == NULL);
    CHECK_EQ_STR(config_environment_color(s), "secondary");
    CHECK_EQ_STR(s->saved_queries_dir, "/etc/vitrine/datasets.d");
    CHECK_EQ_STR(s->memory_limit, "50%");
    CHECK(s->temp_directory == NULL);
    CHECK(s->allowed_roots.len == 0 && s->allowed_s3_endpoints.len == 0 &&
          s->allowed_credential_envs.len == 0);
    CHECK(s->startup.readiness == CFG_READINESS_ALL);
    CHECK_EQ_INT(s->startup.max_concurrent, 4);
    CHECK(!s->quack.enabled && s->quack.read_only && !s->quack.allow_other_hostname);
    CHECK_EQ_STR(s->quack.uri, "quack:localhost");
    CHECK_EQ_STR(s->quack.host, "localhost");
    CHECK_EQ_INT(s->quack.port, 9494);
    CHECK(s->quack.token == NULL);
    CHECK(!s->pgwire.enabled);
    CHECK_EQ_STR(s->pgwire.listen, "127.0.0.1");
    CHECK_EQ_INT(s->pgwire.port, 5432);
    CHECK_EQ_STR(s->pgwire.username, "vitrine");
    CHECK(!s->pgwire.password && !s->pgwire.tls_cert && !s->pgwire.tls_key);
    CHECK(cfg.swagger.enabled);
    CHECK_EQ_STR(cfg.swagger.path, "/docs");
    CHECK(!cfg.metrics.enabled);
    CHECK_EQ_STR(cfg.metrics.path, "/metrics");
    CHECK(cfg.docs.enabled);
    CHECK_EQ_STR(cfg.docs.path, "/mkdocs");
    CHECK(cfg.explorer.enabled);
    CHECK_EQ_STR(cfg.explorer.path, "/explore");
    CHECK(!cfg.explorer_oauth2.set && cfg.explorer_oauth2.pkce);
    struct auth_config *a = &cfg.auth;
    CHECK(!a->enabled && !a->anonymous_read && a->admin_token_fallback && a->start_degraded);
    CHECK_EQ_INT(a->algorithms.len, 1);
    CHECK_EQ_STR(a->algorithms.items[0], "RS256");
    CHECK_EQ_INT(a->leeway_secs, 60);
    CHECK_EQ_INT(a->jwks_refresh_secs, 3600);
    CHECK_EQ_STR(a->read_scopes.items[0], "datasets:read");
    CHECK_EQ_STR(a->reload_scopes.items[0], "datasets:reload");
    CHECK(!cfg.datafusion.pushdown_filters && !cfg.datafusion.reorder_filters &&
          !cfg.datafusion.list_files_cache);
    CHECK_EQ_INT(cfg.datafusion.list_files_cache_mb, 64);
    CHECK_EQ_INT(cfg.datafusion.list_files_cache_ttl_secs, 60);
    CHECK(!cfg.sql.enabled);
    CHECK_EQ_INT(cfg.sql.max_rows, 100000);
    CHECK(!cfg.mcp.enabled && !cfg.mcp.expose_sql);
    CHECK_EQ_STR(cfg.mcp.path, "/mcp");
    CHECK_EQ_INT(cfg.n_datasets, 0);
    CHECK_EQ_STR(cfg.dir, "/etc/vitrine");
    CHECK(cfg.path == NULL);
    config_free(&cfg);
    config_free(&cfg); /* idempotent */

    struct vt_config d;
    config_init_defaults(&d);
    CHECK_EQ_INT(d.server.port, 8080);
    CHECK(d.dir != NULL && d.server.saved_queries_dir != NULL);
    config_free(&d);
}

TEST(dataset_defaults)
{
    struct vt_config cfg;
    CHECK(load(DS, &cfg));
    CHECK_EQ_INT(cfg.n_datasets, 1);
    struct vt_dataset_config *d = &cfg.datasets[0];
    CHECK_EQ_STR(d->name, "t");
    CHECK(d->kind == CFG_SOURCE_PARQUET);
    CHECK_EQ_STR(d->location, "/etc/vitrine/a.parquet"); /* relative to the file's dir */
    CHECK(d->sql == NULL && d->depends_on.len == 0 && d->columns.len == 0);
    CHECK(!d->dict_encode && !d->lazy);
    CHECK(d->index_mode == CFG_INDEX_AUTO && d->index_columns.len == 0);
    CHECK_EQ_INT(d->index_max_cardinality, 100000);
    CHECK(d->s3.region == NULL && d->s3.endpoint == NULL);
    CHECK(d->s3.addressing_style == CFG_S3_ADDRESSING_VIRTUAL && !d->s3.allow_http);
    CHECK(d->s3.partitioning == CFG_S3_PARTITIONING_AUTO);
    CHECK(!d->refresh.set && d->refresh.interval_ms == 0 && !d->refresh.on_upstream_reload);
    CHECK_EQ_INT(d->refresh.timeout_ms, 600000);
    CHECK(d->refresh.jitter);
    CHECK_EQ_INT(d->refresh.debounce_ms, 5000);
    CHECK(!d->materialize.set && d->materialize.residency == CFG_RESIDENCY_AUTO);
    CHECK(!d->materialize.reuse_on_start);
    CHECK(d->on_start == CFG_ON_START_EAGER);
    CHECK_EQ_INT(d->line, 1);
    config_free(&cfg);
}

TEST(full_config)
{
    const char *text =
        "[server]\n"
        "backend = \"duckdb\"\nlisten = \"0.0.0.0\"\nport = 9000\nworkers = 3\n"
        "prefix = \"/v\"\ncompress = false\nmax_body_bytes = 2048\nmax_page_size = 50\n"
        "force_lazy_above_mb = 100\nrequest_timeout_ms = 0\nshutdown_timeout_secs = 5\n"
        "environment = \"prod\"\nsaved_queries_dir = \"/var/lib/vitrine/q\"\n"
        "memory_limit = \"2GB\"\ntemp_directory = \"spill\"\n"
        "[server.startup]\nreadiness = \"any\"\nmax_concurrent = 2\n"
        "[server.quack]\nenabled = true\nuri = \"quack:localhost:7000\"\ntoken = \"tok4\"\n"
        "read_only = false\n"
        "[server.pgwire]\nenabled = true\nlisten = \"0.0.0.0\"\nport = 6543\n"
        "username = \"u\"\npassword = \"p\"\ntls_cert = \"c.pem\"\ntls_key = \"/k.pem\"\n"
        "[swagger]\nenabled = false\npath = \"/sw\"\n"
        "[metrics]\nenabled = true\npath = \"/m\"\n"
        "[docs]\nenabled = false\n"
        "[explorer]\npath = \"/x\"\n"
        "[explorer.oauth2]\nclient_id = \"cid\"\nissuer = \"https://idp\"\n"
        "scopes = [\"openid\"]\npkce = false\n"
        "[auth]\nenabled = true\nissuer = \"https://idp/realm\"\naudience = \"aud\"\n"
        "algorithms = [\"ES256\", \"PS512\"]\nleeway_secs = 5\njwks_refresh_secs = 60\n"
        "read_scopes = [\"r\"]\nreload_scopes = [\"w\", \"x\"]\nanonymous_read = true\n"
        "tenant_claim = \"/tid\"\nallowed_tenants = [\"a\"]\nadmin_token_fallback = false\n"
        "start_degraded = false\n"
        "[datafusion]\npushdown_filters = true\nreorder_filters = true\nlist_files_cache = true\n"
        "list_files_cache_mb = 8\nlist_files_cache_ttl_secs = 0\n"
        "[sql]\nenabled = true\nmax_rows = 10\n"
        "[mcp]\nenabled = true\nexpose_sql = true\npath = \"/agent\"\n";
    struct vt_config cfg;
    CHECK(load(text, &cfg));
    struct server_config *s = &cfg.server;
    CHECK(s->backend == CFG_BACKEND_DUCKDB && s->backend_set);
    CHECK_EQ_STR(s->listen, "0.0.0.0");
    CHECK_EQ_INT(s->port, 9000);
    CHECK_EQ_INT(s->workers, 3);
    CHECK_EQ_STR(s->prefix, "/v");
    CHECK(!s->compress);
    CHECK_EQ_INT(s->max_body_bytes, 2048);
    CHECK_EQ_INT(s->max_page_size, 50);
    CHECK_EQ_INT(s->force_lazy_above_mb, 100);
    CHECK_EQ_INT(s->request_timeout_ms, 0);
    CHECK_EQ_INT(s->shutdown_timeout_secs, 5);
    CHECK_EQ_STR(s->environment, "prod");
    CHECK_EQ_STR(config_environment_color(s), "danger");
    CHECK_EQ_STR(s->saved_queries_dir, "/var/lib/vitrine/q");
    CHECK_EQ_STR(s->memory_limit, "2GB");
    CHECK_EQ_STR(s->temp_directory, "/etc/vitrine/spill");
    CHECK(s->startup.readiness == CFG_READINESS_ANY);
    CHECK_EQ_INT(s->startup.max_concurrent, 2);
    CHECK(s->quack.enabled && !s->quack.read_only);
    CHECK_EQ_STR(s->quack.host, "localhost");
    CHECK_EQ_INT(s->quack.port, 7000);
    CHECK_EQ_STR(s->quack.token, "tok4");
    CHECK(s->pgwire.enabled);
    CHECK_EQ_INT(s->pgwire.port, 6543);
    CHECK_EQ_STR(s->pgwire.username, "u");
    CHECK_EQ_STR(s->pgwire.password, "p");
    CHECK_EQ_STR(s->pgwire.tls_cert, "/etc/vitrine/c.pem");
    CHECK_EQ_STR(s->pgwire.tls_key, "/k.pem");
    CHECK(!cfg.swagger.enabled);
    CHECK_EQ_STR(cfg.swagger.path, "/sw");
    CHECK(cfg.metrics.enabled);
    CHECK_EQ_STR(cfg.metrics.path, "/m");
    CHECK(!cfg.docs.enabled);
    CHECK_EQ_STR(cfg.explorer.path, "/x");
    CHECK(cfg.explorer_oauth2.set && !cfg.explorer_oauth2.pkce);
    CHECK_EQ_STR(cfg.explorer_oauth2.client_id, "cid");
    CHECK_EQ_STR(cfg.explorer_oauth2.issuer, "https://idp");
    CHECK_EQ_STR(cfg.explorer_oauth2.scopes.items[0], "openid");
    struct auth_config *a = &cfg.auth;
    CHECK(a->enabled && a->anonymous_read && !a->admin_token_fallback && !a->start_degraded);
    CHECK_EQ_STR(a->issuer, "https://idp/realm");
    CHECK_EQ_STR(a->audience, "aud");
    CHECK_EQ_INT(a->algorithms.len, 2);
    CHECK_EQ_STR(a->algorithms.items[1], "PS512");
    CHECK_EQ_INT(a->leeway_secs, 5);
    CHECK_EQ_INT(a->jwks_refresh_secs, 60);
    CHECK_EQ_INT(a->read_scopes.len, 1);
    CHECK_EQ_STR(a->read_scopes.items[0], "r");
    CHECK_EQ_INT(a->reload_scopes.len, 2);
    CHECK_EQ_STR(a->tenant_claim, "/tid");
    CHECK_EQ_STR(a->allowed_tenants.items[0], "a");
    CHECK(cfg.datafusion.pushdown_filters && cfg.datafusion.reorder_filters &&
          cfg.datafusion.list_files_cache);
    CHECK_EQ_INT(cfg.datafusion.list_files_cache_mb, 8);
    CHECK_EQ_INT(cfg.datafusion.list_files_cache_ttl_secs, 0);
    CHECK(cfg.sql.enabled);
    CHECK_EQ_INT(cfg.sql.max_rows, 10);
    CHECK(cfg.mcp.enabled && cfg.mcp.expose_sql);
    CHECK_EQ_STR(cfg.mcp.path, "/agent");
    config_free(&cfg);
}

TEST(full_dataset)
{
    const char *text =
        "[[dataset]]\n"
        "name = \"trips.2024_v-1\"\n"
        "source = { kind = \"delta\", location = \"s3://bucket/trips\" }\n"
        "columns = [\"a\", \"b\"]\n"
        "dict_encode = true\n"
        "index = { mode = \"list\", columns = [\"a\"], max_cardinality = 5 }\n"
        "on_start = \"skip\"\n"
        "[dataset.s3]\n"
        "region = \"eu-west-1\"\nendpoint = \"http://127.0.0.1:9000\"\n"
        "addressing_style = \"path\"\nallow_http = true\npartitioning = \"hive\"\n"
        "access_key_id_env = \"MY_KEY\"\nsecret_access_key_env = \"MY_SECRET\"\n"
        "session_token_env = \"MY_TOKEN\"\n"
        "[dataset.refresh]\ninterval = \"1h 30m\"\ntimeout = \"2m\"\njitter = false\n"
        "debounce = \"250ms\"\n"
        "[dataset.materialize]\nresidency = \"memory\"\nsort_by = [\"a\"]\nreuse_on_start = true\n"
        "\n"
        "[[dataset]]\n"
        "name = \"q\"\n"
        "sql = \"SELECT 1 FROM \\\"trips.2024_v-1\\\"\"\n"
        "depends_on = [\"trips.2024_v-1\"]\n"
        "refresh.on_upstream_reload = true\n"
        "materialize.residency = \"lazy\"\n"
        "on_start = \"lazy\"\n";
    struct vt_config cfg;
    CHECK(load(text, &cfg));
    CHECK_EQ_INT(cfg.n_datasets, 2);
    if (cfg.n_datasets != 2) {
        config_free(&cfg);
        return;
    }
    struct vt_dataset_config *d = &cfg.datasets[0];
    CHECK(d->kind == CFG_SOURCE_DELTA);
    CHECK_EQ_STR(d->location, "s3://bucket/trips");
    CHECK_EQ_INT(d->columns.len, 2);
    CHECK(d->dict_encode && !d->lazy);
    CHECK(d->index_mode == CFG_INDEX_LIST);
    CHECK_EQ_STR(d->index_columns.items[0], "a");
    CHECK_EQ_INT(d->index_max_cardinality, 5);
    CHECK(d->on_start == CFG_ON_START_SKIP);
    CHECK_EQ_STR(d->s3.region, "eu-west-1");
    CHECK_EQ_STR(d->s3.endpoint, "http://127.0.0.1:9000");
    CHECK(d->s3.addressing_style == CFG_S3_ADDRESSING_PATH && d->s3.allow_http);
    CHECK(d->s3.partitioning == CFG_S3_PARTITIONING_HIVE);
    CHECK_EQ_STR(d->s3.access_key_id_env, "MY_KEY");
    CHECK_EQ_STR(d->s3.secret_access_key_env, "MY_SECRET");
    CHECK_EQ_STR(d->s3.session_token_env, "MY_TOKEN");
    CHECK(d->refresh.set && !d->refresh.jitter);
    CHECK_EQ_INT(d->refresh.interval_ms, 5400000);
    CHECK_EQ_INT(d->refresh.timeout_ms, 120000);
    CHECK_EQ_INT(d->refresh.debounce_ms, 250);
    CHECK(d->materialize.set && d->materialize.residency == CFG_RESIDENCY_MEMORY);
    CHECK(d->materialize.reuse_on_start);
    CHECK_EQ_STR(d->materialize.sort_by.items[0], "a");
    struct vt_dataset_config *q = &cfg.datasets[1];
    CHECK(q->kind == CFG_SOURCE_QUERY); /* inferred from sql */
    CHECK(q->location == NULL);
    CHECK_EQ_STR(q->sql, "SELECT 1 FROM \"trips.2024_v-1\"");
    CHECK_EQ_STR(q->depends_on.items[0], "trips.2024_v-1");
    CHECK(q->refresh.set && q->refresh.on_upstream_reload && q->refresh.interval_ms == 0);
    CHECK(q->materialize.residency == CFG_RESIDENCY_LAZY);
    CHECK(q->on_start == CFG_ON_START_LAZY);
    CHECK_EQ_INT(q->line, 27);
    config_free(&cfg);
}

/* ---------------------------------------------------------------- errors */

TEST(syntax_errors_name_file_line_column)
{
    CHECK_ERR("[server]\nport 8080\n",
              "datasets.toml: line 2, column 6: expected '=' after key \"port\", found '8'");
    CHECK_ERR("[server]\nport = 1\nport = 2\n",
              "datasets.toml: line 3, column 1: duplicate key \"port\"");
}

TEST(unknown_keys_with_suggestions)
{
    CHECK_ERR("\n\n[server]\nprot = 80\n",
              "datasets.toml:4: server.prot: unknown key (did you mean \"port\"?)");
    CHECK_ERR("servr.port = 1\n", "datasets.toml:1: servr: unknown key (did you mean \"server\"?)");
    CHECK_ERR("[server]\nzzzzzz = 1\n", "datasets.toml:2: server.zzzzzz: unknown key");
    CHECK_ERR("[server.startup]\nreadyness = \"all\"\n",
              "datasets.toml:2: server.startup.readyness: unknown key (did you mean \"readiness\"?)");
    CHECK_ERR("[server.quack]\nurl = \"quack:localhost\"\n",
              "datasets.toml:2: server.quack.url: unknown key (did you mean \"uri\"?)");
    CHECK_ERR("[server.pgwire]\npasword = \"x\"\n",
              "datasets.toml:2: server.pgwire.pasword: unknown key (did you mean \"password\"?)");
    CHECK_ERR("[swagger]\npaht = \"/d\"\n",
              "datasets.toml:2: swagger.paht: unknown key (did you mean \"path\"?)");
    CHECK_ERR("[explorer.oauth2]\nclient = \"x\"\n",
              "datasets.toml:2: explorer.oauth2.client: unknown key (did you mean \"client_id\"?)");
    CHECK_ERR("[auth]\nalgorithm = [\"RS256\"]\n",
              "datasets.toml:2: auth.algorithm: unknown key (did you mean \"algorithms\"?)");
    CHECK_ERR("[datafusion]\npushdown = true\n", "datasets.toml:2: datafusion.pushdown: unknown key (did you mean \"pushdown_filters\"?)");
    CHECK_ERR("[sql]\nmax_row = 1\n",
              "datasets.toml:2: sql.max_row: unknown key (did you mean \"max_rows\"?)");
    CHECK_ERR("[mcp]\nexpose = true\n",
              "datasets.toml:2: mcp.expose: unknown key (did you mean \"expose_sql\"?)");
    CHECK_ERR("[mcp]\nxyz = true\n", "datasets.toml:2: mcp.xyz: unknown key");
    CHECK_ERR(DS "sourc.x = 1\n",
              "datasets.toml:5: dataset[0].sourc: unknown key (did you mean \"source\"?)");
    CHECK_ERR(DS "source.knd = 1\n",
              "datasets.toml:5: dataset[0].source.knd: unknown key (did you mean \"kind\"?)");
    CHECK_ERR(DS "index.mod = \"auto\"\n",
              "datasets.toml:5: dataset[0].index.mod: unknown key (did you mean \"mode\"?)");
    CHECK_ERR(DS "s3.regin = \"x\"\n",
              "datasets.toml:5: dataset[0].s3.regin: unknown key (did you mean \"region\"?)");
    CHECK_ERR(DS "refresh.intervall = \"1s\"\n",
              "datasets.toml:5: dataset[0].refresh.intervall: unknown key (did you mean \"interval\"?)");
    CHECK_ERR(DS "materialize.residence = \"auto\"\n",
              "datasets.toml:5: dataset[0].materialize.residence: unknown key (did you mean \"residency\"?)");
}

TEST(wrong_types)
{
    CHECK_ERR("server = 5\n", "datasets.toml:1: server: expected a table, got an integer");
    CHECK_ERR("[server]\nport = \"80\"\n",
              "datasets.toml:2: server.port: expected an integer, got a string");
    CHECK_ERR("[server]\nport = 80.0\n",
              "datasets.toml:2: server.port: expected an integer, got a float");
    CHECK_ERR("[server]\ncompress = \"yes\"\n",
              "datasets.toml:2: server.compress: expected a boolean (true or false), got a string");
    CHECK_ERR("[server]\nlisten = 1\n",
              "datasets.toml:2: server.listen: expected a string, got an integer");
    CHECK_ERR("[auth]\nread_scopes = \"a\"\n",
              "datasets.toml:2: auth.read_scopes: expected an array of strings, got a string");
    CHECK_ERR("[auth]\nread_scopes = [\"a\", 2]\n",
              "datasets.toml:2: auth.read_scopes[1]: expected a string, got an integer");
    CHECK_ERR(DS "columns = [\"\"]\n", "datasets.toml:5: dataset[0].columns[0]: must not be empty");
    CHECK_ERR("dataset = 1\n",
              "datasets.toml:1: dataset: expected [[dataset]] blocks (an array of tables)");
    CHECK_ERR("dataset = [1]\n", "datasets.toml:1: dataset[0]: expected a table, got integer");
    CHECK_ERR(DS "index = 1\n", "datasets.toml:5: dataset[0].index: expected a table, got an integer");
    CHECK_ERR("[server]\nstartup = []\n",
              "datasets.toml:2: server.startup: expected a table, got an array");
    CHECK_ERR("[server]\nlisten = \"\"\n", "datasets.toml:2: server.listen: must not be empty");
}

TEST(server_rules)
{
    CHECK_OK("[server]\nprefix = \"\"\n");
    CHECK_OK("[server]\nprefix = \"/api/x\"\n");
    CHECK_ERR("[server]\nprefix = \"api\"\n",
              "datasets.toml:2: server.prefix: must start with \"/\" and not end with \"/\" (or be "
              "empty), got \"api\"");
    CHECK_ERR("[server]\nprefix = \"/api/\"\n",
              "datasets.toml:2: server.prefix: must start with \"/\" and not end with \"/\" (or be "
              "empty), got \"/api/\"");
    CHECK_ERR("[server]\nprefix = \"/\"\n",
              "datasets.toml:2: server.prefix: must start with \"/\" and not end with \"/\" (or be "
              "empty), got \"/\"");
    CHECK_OK("[server]\nport = 0\n");
    CHECK_OK("[server]\nport = 65535\n");
    CHECK_ERR("[server]\nport = 65536\n",
              "datasets.toml:2: server.port: must be between 0 and 65535, got 65536");
    CHECK_ERR("[server]\nport = -1\n",
              "datasets.toml:2: server.port: must be between 0 and 65535, got -1");
    CHECK_ERR("[server]\nworkers = 0\n",
              "datasets.toml:2: server.workers: must be between 1 and 4096, got 0");
    CHECK_ERR("[server]\nmax_body_bytes = 0\n",
              "datasets.toml:2: server.max_body_bytes: must be a positive integer, got 0");
    CHECK_ERR("[server]\nmax_page_size = -5\n",
              "datasets.toml:2: server.max_page_size: must be a positive integer, got -5");
    CHECK_ERR("[server]\nforce_lazy_above_mb = -1\n",
              "datasets.toml:2: server.force_lazy_above_mb: must be at least 0, got -1");
    CHECK_ERR("[server]\nrequest_timeout_ms = -1\n",
              "datasets.toml:2: server.request_timeout_ms: must be at least 0, got -1");
    CHECK_ERR("[server]\nshutdown_timeout_secs = -1\n",
              "datasets.toml:2: server.shutdown_timeout_secs: must be at least 0, got -1");
    CHECK_ERR("[server]\nbackend = \"spark\"\n",
              "datasets.toml:2: server.backend: expected one of \"datafusion\", \"duckdb\", got \"spark\"");
    CHECK_ERR("[server]\nenvironment_color = \"red\"\n",
              "datasets.toml:2: server.environment_color: expected one of \"primary\", "
              "\"secondary\", \"success\", \"info\", \"warning\", \"danger\", \"light\", \"dark\", "
              "got \"red\"");
    CHECK_ERR("[server]\nmemory_limit = \"lots\"\n",
              "datasets.toml:2: server.memory_limit: expected a size such as \"8GB\" or "
              "\"512MiB\", got \"lots\"");
    CHECK_OK("[server]\nmemory_limit = \"512 MiB\"\n");
    CHECK_OK("[server]\nmemory_limit = \"25%\"\n");
    CHECK_OK("[server]\nmemory_limit = \"100%\"\n");
    CHECK_ERR("[server]\nmemory_limit = \"150%\"\n",
              "datasets.toml:2: server.memory_limit: expected a size such as \"8GB\" or "
              "\"512MiB\", got \"150%\"");
    CHECK_ERR("[server]\nmemory_limit = \"0%\"\n",
              "datasets.toml:2: server.memory_limit: expected a size such as \"8GB\" or "
              "\"512MiB\", got \"0%\"");
    CHECK_ERR("[server.startup]\nreadiness = \"most\"\n",
              "datasets.toml:2: server.startup.readiness: expected one of \"all\", \"any\", got \"most\"");
    CHECK_ERR("[server.startup]\nmax_concurrent = 0\n",
              "datasets.toml:2: server.startup.max_concurrent: must be between 1 and 1024, got 0");
    CHECK_ERR("[swagger]\npath = \"docs\"\n",
              "datasets.toml:2: swagger.path: must start with \"/\" and not end with \"/\", got \"docs\"");
    CHECK_ERR("[explorer]\npath = \"/docs\"\n",
              "datasets.toml:2: explorer.path: \"/docs\" is already used by swagger.path");
    CHECK_OK("[swagger]\nenabled = false\n[explorer]\npath = \"/docs\"\n");
    CHECK_ERR("[datafusion]\nlist_files_cache_mb = 0\n",
              "datasets.toml:2: datafusion.list_files_cache_mb: must be a positive integer, got 0");
    CHECK_ERR("[sql]\nmax_rows = 0\n",
              "datasets.toml:2: sql.max_rows: must be a positive integer, got 0");
}

TEST(environment_color)
{
    struct server_config s = {0};
    CHECK_EQ_STR(config_environment_color(&s), "secondary");
    const char *cases[][2] = {
        {"production", "danger"}, {"PROD", "danger"},      {"staging", "warning"},
        {"stage", "warning"},     {"uat", "warning"},      {"development", "success"},
        {"dev", "success"},       {"local", "success"},    {"qa", "secondary"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s.environment = (char *)cases[i][0];
        CHECK_EQ_STR(config_environment_color(&s), cases[i][1]);
    }
    s.environment_color = (char *)"info";
    CHECK_EQ_STR(config_environment_color(&s), "info");
}

TEST(location_resolution)
{
    struct vt_config cfg;
    CHECK(load("[[dataset]]\nname = \"a\"\nsource.location = \"./data/*.parquet\"\n"
               "[[dataset]]\nname = \"b\"\nsource.location = \"/abs/x.parquet\"\n"
               "[[dataset]]\nname = \"c\"\nsource.location = \"s3://bucket/p/\"\n",
               &cfg));
    CHECK_EQ_STR(cfg.datasets[0].location, "/etc/vitrine/data/*.parquet");
    CHECK_EQ_STR(cfg.datasets[1].location, "/abs/x.parquet");
    CHECK_EQ_STR(cfg.datasets[2].location, "s3://bucket/p/");
    config_free(&cfg);
    struct vt_dataset_config d;
    config_dataset_defaults(&d);
    d.location = strdup("rel/x");
    CHECK_EQ_INT(config_dataset_resolve_paths(&d, "/srv/"), 0);
    CHECK_EQ_STR(d.location, "/srv/rel/x");
    CHECK_EQ_INT(config_dataset_resolve_paths(&d, NULL), 0);
    CHECK_EQ_STR(d.location, "/srv/rel/x");
    config_dataset_free(&d);
}

TEST(saved_queries_dir_resolution)
{
    struct vt_config cfg;
    CHECK(load("[server]\nsaved_queries_dir = \"q/saved\"\n", &cfg));
    CHECK_EQ_STR(cfg.server.saved_queries_dir, "/etc/vitrine/q/saved");
    config_free(&cfg);
    CHECK(load("[server]\nsaved_queries_dir = \"./q\"\n", &cfg));
    CHECK_EQ_STR(cfg.server.saved_queries_dir, "/etc/vitrine/q");
    config_free(&cfg);
    CHECK(load("[server]\nsaved_queries_dir = \"/abs/q\"\n", &cfg));
    CHECK_EQ_STR(cfg.server.saved_queries_dir, "/abs/q");
    config_free(&cfg);
}

TEST(auth_rules)
{
    CHECK_OK("[auth]\nalgorithms = [\"RS256\", \"RS384\", \"RS512\", \"ES256\", \"ES384\", "
             "\"ES512\", \"PS256\", \"PS384\", \"PS512\"]\n");
    CHECK_ERR("[auth]\nalgorithms = [\"RS256\", \"HS256\"]\n",
              "datasets.toml:2: auth.algorithms[1]: \"HS256\" is not supported: only RS256/384/512, "
              "ES256/384/512 and PS256/384/512 are accepted");
    CHECK_ERR("[auth]\nalgorithms = [\"none\"]\n",
              "datasets.toml:2: auth.algorithms[0]: \"none\" is not supported: only RS256/384/512, "
              "ES256/384/512 and PS256/384/512 are accepted");
    CHECK_ERR("[auth]\nalgorithms = []\n",
              "datasets.toml:2: auth.algorithms: must list at least one algorithm");
    CHECK_ERR("[auth]\nenabled = true\n",
              "datasets.toml:2: auth.issuer: required when auth.enabled is true");
    CHECK_ERR("[auth]\nissuer = \"idp.example.com\"\n",
              "datasets.toml:2: auth.issuer: expected an http:// or https:// URL, got \"idp.example.com\"");
    CHECK_ERR("[auth]\nissuer = \"http://idp.example.com/realm\"\n",
              "datasets.toml:2: auth.issuer: plain http is allowed only for a loopback host "
              "(127.0.0.1, ::1, localhost); use https");
    CHECK_ERR("[auth]\nissuer = \"http://127.0.0.1.evil.com/\"\n",
              "datasets.toml:2: auth.issuer: plain http is allowed only for a loopback host "
              "(127.0.0.1, ::1, localhost); use https");
    CHECK_OK("[auth]\nissuer = \"http://127.0.0.1:8080/realms/x\"\n");
    CHECK_OK("[auth]\nissuer = \"http://localhost\"\n");
    CHECK_OK("[auth]\nissuer = \"http://[::1]:9000\"\n");
    CHECK_ERR("[auth]\ntenant_claim = \"tid\"\n",
              "datasets.toml:2: auth.tenant_claim: expected a JSON pointer such as \"/tid\", got \"tid\"");
    CHECK_ERR("[auth]\nleeway_secs = -1\n",
              "datasets.toml:2: auth.leeway_secs: must be between 0 and 86400, got -1");
    CHECK_ERR("[explorer.oauth2]\nissuer = \"https://idp\"\n",
              "datasets.toml:1: explorer.oauth2.client_id: required");
    CHECK_ERR("[explorer.oauth2]\nclient_id = \"c\"\nissuer = \"idp\"\n",
              "datasets.toml:3: explorer.oauth2.issuer: expected an http:// or https:// URL, got \"idp\"");
}

TEST(pgwire_rules)
{
    CHECK_OK("[server.pgwire]\nenabled = true\n"); /* loopback: no password needed */
    CHECK_OK("[server.pgwire]\nenabled = true\nlisten = \"::1\"\n");
    CHECK_OK("[server.pgwire]\nlisten = \"0.0.0.0\"\n"); /* not enabled: nothing binds */
    CHECK_ERR("[server.pgwire]\nenabled = true\nlisten = \"0.0.0.0\"\n",
              "datasets.toml:3: server.pgwire.password: required when listening on a non-loopback "
              "address (listen = \"0.0.0.0\")");
    CHECK_ERR("[server.pgwire]\nenabled = true\nlisten = \"10.0.0.5\"\npassword = \"p\"\n",
              "datasets.toml:3: server.pgwire.tls_cert: TLS (tls_cert and tls_key) is required when "
              "listening on a non-loopback address (listen = \"10.0.0.5\")");
    CHECK_OK("[server.pgwire]\nenabled = true\nlisten = \"10.0.0.5\"\npassword = \"p\"\n"
             "tls_cert = \"c\"\ntls_key = \"k\"\n");
    CHECK_ERR("[server.pgwire]\ntls_cert = \"c.pem\"\n",
              "datasets.toml:2: server.pgwire.tls_key: required: tls_cert and tls_key go together");
    CHECK_ERR("[server.pgwire]\n\ntls_key = \"k.pem\"\n",
              "datasets.toml:3: server.pgwire.tls_cert: required: tls_cert and tls_key go together");
    CHECK_ERR("[server.pgwire]\nport = 70000\n",
              "datasets.toml:2: server.pgwire.port: must be between 0 and 65535, got 70000");
}

TEST(quack_rules)
{
    struct vt_config cfg;
    CHECK(load("[server.quack]\nuri = \"quack:localhost\"\n", &cfg));
    CHECK_EQ_STR(cfg.server.quack.host, "localhost");
    CHECK_EQ_INT(cfg.server.quack.port, 9494);
    config_free(&cfg);
    CHECK_ERR("[server.quack]\nuri = \"quack:127.0.0.1:9494\"\n",
              "datasets.toml:2: server.quack.uri: host \"127.0.0.1\" is not local (only the literal "
              "host \"localhost\" is); set server.quack.allow_other_hostname = true to serve it");
    CHECK(load("[server.quack]\nuri = \"quack:db.internal:9000\"\nallow_other_hostname = true\n",
               &cfg));
    CHECK_EQ_STR(cfg.server.quack.host, "db.internal");
    CHECK_EQ_INT(cfg.server.quack.port, 9000);
    config_free(&cfg);
    CHECK(load("[server.quack]\nuri = \"quack:[::1]:9000\"\nallow_other_hostname = true\n", &cfg));
    CHECK_EQ_STR(cfg.server.quack.host, "[::1]");
    config_free(&cfg);
    CHECK_ERR("[server.quack]\nuri = \"http://localhost\"\n",
              "datasets.toml:2: server.quack.uri: expected quack:HOST or quack:HOST:PORT (e.g. "
              "\"quack:localhost:9494\")");
    CHECK_ERR("[server.quack]\nuri = \"quack:localhost:0\"\n",
              "datasets.toml:2: server.quack.uri: port must be a number between 1 and 65535");
}

TEST(dataset_rules)
{
    CHECK_ERR("[[dataset]]\nsource.location = \"a\"\n", "datasets.toml:1: dataset[0].name: required");
    CHECK_ERR("[[dataset]]\nname = \"a b\"\nsource.location = \"a\"\n",
              "datasets.toml:2: dataset[0].name: invalid dataset name \"a b\": it may only contain "
              "the characters A-Z a-z 0-9 _ . -");
    CHECK_ERR("[[dataset]]\nname = \"reload-all\"\nsource.location = \"a\"\n",
              "datasets.toml:2: dataset[0].name: invalid dataset name \"reload-all\": it is reserved");
    CHECK_ERR(DS "\n[[dataset]]\nname = \"t\"\nsource.location = \"b\"\n",
              "datasets.toml:7: dataset[1].name: duplicate dataset name \"t\" (also dataset[0] at line 1)");
    CHECK_ERR("[[dataset]]\nname = \"t\"\nsource.kind = \"csv\"\n",
              "datasets.toml:3: dataset[0].source.kind: expected one of \"parquet\", \"delta\", "
              "\"query\", got \"csv\"");
    CHECK_ERR("[[dataset]]\nname = \"t\"\nsource.kind = \"delta\"\n",
              "datasets.toml:3: dataset[0].source.location: required for kind \"delta\"");
    CHECK_ERR("[[dataset]]\nname = \"t\"\n",
              "datasets.toml:1: dataset[0].source.location: required for kind \"parquet\"");
    CHECK_ERR("[[dataset]]\nname = \"t\"\nsource.location = \"s3://\"\n",
              "datasets.toml:3: dataset[0].source.location: an s3:// location needs a bucket name "
              "(s3://bucket/prefix)");
    CHECK_ERR("[[dataset]]\nname = \"t\"\nsource.kind = \"query\"\n",
              "datasets.toml:1: dataset[0].sql: required for kind \"query\"");
    CHECK_ERR("[[dataset]]\nname = \"t\"\nsource.kind = \"query\"\nsource.location = \"x\"\nsql = \"SELECT 1\"\n",
              "datasets.toml:4: dataset[0].source.location: not allowed for kind \"query\" (a query "
              "reads other datasets through sql)");
    CHECK_ERR(DS "sql = \"SELECT 1\"\n",
              "datasets.toml:5: dataset[0].sql: only allowed for kind \"query\"");
    CHECK_ERR(DS "depends_on = [\"x\"]\n",
              "datasets.toml:5: dataset[0].depends_on: only allowed for kind \"query\"");
    CHECK_ERR(DS "[[dataset]]\nname = \"q\"\nsql = \"SELECT 1\"\ndepends_on = [\"runtime_ds\"]\n",
              "datasets.toml:8: dataset[1].depends_on[0]: \"runtime_ds\" is not a dataset of this "
              "file (config datasets may only depend on datasets defined in the same file)");
    CHECK_ERR("[[dataset]]\nname = \"q\"\nsql = \"SELECT 1\"\ndepends_on = [\"q\"]\n",
              "datasets.toml:4: dataset[0].depends_on[0]: a dataset cannot depend on itself");
    CHECK_ERR("[[dataset]]\nname = \"a\"\nsql = \"x\"\ndepends_on = [\"b\"]\n"
              "[[dataset]]\nname = \"b\"\nsql = \"x\"\ndepends_on = [\"c\"]\n"
              "[[dataset]]\nname = \"c\"\nsql = \"x\"\ndepends_on = [\"a\"]\n",
              "datasets.toml:1: dataset[0].depends_on: dependency cycle: a -> b -> c -> a");
    CHECK_ERR(DS "index.mode = \"al\"\n",
              "datasets.toml:5: dataset[0].index.mode: expected one of \"auto\", \"list\", \"none\", got \"al\"");
    CHECK_ERR("\n" DS "\n[[dataset]]\nname = \"u\"\nsource.location = \"b\"\n[dataset.index]\nmode = \"al\"\n",
              "datasets.toml:11: dataset[1].index.mode: expected one of \"auto\", \"list\", \"none\", got \"al\"");
    CHECK_ERR(DS "index.mode = \"list\"\n",
              "datasets.toml:5: dataset[0].index.columns: required (non-empty) when index.mode is \"list\"");
    CHECK_ERR(DS "index.columns = [\"a\"]\n",
              "datasets.toml:5: dataset[0].index.columns: only used when index.mode is \"list\" (mode "
              "is \"auto\")");
    CHECK_ERR(DS "index.max_cardinality = 0\n",
              "datasets.toml:5: dataset[0].index.max_cardinality: must be a positive integer, got 0");
    CHECK_ERR(DS "lazy = true\nindex.mode = \"auto\"\n",
              "datasets.toml:6: dataset[0].index: lazy datasets carry no index (remove the index "
              "block or set index.mode = \"none\")");
    CHECK_OK(DS "lazy = true\nindex.mode = \"none\"\n");
    CHECK_ERR(DS "materialize.residency = \"disk\"\n",
              "datasets.toml:5: dataset[0].materialize.residency: expected one of \"auto\", \"memory\", "
              "\"lazy\", got \"disk\"");
    CHECK_ERR(DS "lazy = true\nmaterialize.residency = \"memory\"\n",
              "datasets.toml:6: dataset[0].materialize.residency: \"memory\" contradicts lazy = true");
    CHECK_ERR(DS "s3.addressing_style = \"host\"\n",
              "datasets.toml:5: dataset[0].s3.addressing_style: expected one of \"virtual\", \"path\", "
              "got \"host\"");
    CHECK_ERR(DS "s3.partitioning = \"dir\"\n",
              "datasets.toml:5: dataset[0].s3.partitioning: expected one of \"auto\", \"hive\", "
              "\"none\", got \"dir\"");
    CHECK_ERR(DS "s3.endpoint = \"minio:9000\"\n",
              "datasets.toml:5: dataset[0].s3.endpoint: expected an http:// or https:// URL");
    CHECK_ERR(DS "s3.endpoint = \"http://minio:9000\"\n",
              "datasets.toml:5: dataset[0].s3.endpoint: a plain http:// endpoint needs s3.allow_http = true");
    CHECK_ERR(DS "s3.access_key_id_env = \"MY KEY\"\n",
              "datasets.toml:5: dataset[0].s3.access_key_id_env: expected the name of an environment "
              "variable (letters, digits, _)");
    CHECK_ERR(DS "on_start = \"later\"\n",
              "datasets.toml:5: dataset[0].on_start: expected one of \"eager\", \"lazy\", \"skip\", got \"later\"");
    CHECK_ERR(DS "refresh.interval = \"soon\"\n",
              "datasets.toml:5: dataset[0].refresh.interval: expected a duration such as \"30s\", "
              "\"5m\" or \"1h 30m\", got \"soon\"");
    CHECK_ERR(DS "refresh.interval = \"0s\"\n",
              "datasets.toml:5: dataset[0].refresh.interval: must be at least 1s");
    CHECK_ERR(DS "refresh.interval = \"1ms\"\n",
              "datasets.toml:5: dataset[0].refresh.interval: must be at least 1s");
    CHECK_ERR(DS "refresh.interval = 30\n",
              "datasets.toml:5: dataset[0].refresh.interval: expected a string, got an integer");
    CHECK_ERR(DS "refresh.timeout = \"5\"\n",
              "datasets.toml:5: dataset[0].refresh.timeout: expected a duration such as \"30s\", "
              "\"5m\" or \"1h 30m\", got \"5\"");
    CHECK_ERR(DS "refresh.on_upstream_reload = true\n",
              "datasets.toml:5: dataset[0].refresh.on_upstream_reload: only applies to datasets of "
              "kind \"query\" (they have upstreams)");
    CHECK_OK(DS "refresh.debounce = \"0s\"\n");
}

TEST(duration_parsing)
{
    CHECK_EQ_INT(config_parse_duration_ms("30s"), 30000);
    CHECK_EQ_INT(config_parse_duration_ms("5m"), 300000);
    CHECK_EQ_INT(config_parse_duration_ms("1h 30m"), 5400000);
    CHECK_EQ_INT(config_parse_duration_ms("1h30m"), 5400000);
    CHECK_EQ_INT(config_parse_duration_ms("250ms"), 250);
    CHECK_EQ_INT(config_parse_duration_ms("2days"), 172800000);
    CHECK_EQ_INT(config_parse_duration_ms("1d"), 86400000);
    CHECK_EQ_INT(config_parse_duration_ms("1w"), 604800000);
    CHECK_EQ_INT(config_parse_duration_ms("2 hours 5 min"), -1); /* no space before a unit */
    CHECK_EQ_INT(config_parse_duration_ms("2hours 5min"), 7500000);
    CHECK_EQ_INT(config_parse_duration_ms("10sec"), 10000);
    CHECK_EQ_INT(config_parse_duration_ms("10secs"), 10000);
    CHECK_EQ_INT(config_parse_duration_ms("1500us"), 1);
    CHECK_EQ_INT(config_parse_duration_ms("999999ns"), 0);
    CHECK_EQ_INT(config_parse_duration_ms("1M"), 2630016000LL);
    CHECK_EQ_INT(config_parse_duration_ms("1y"), 31557600000LL);
    CHECK_EQ_INT(config_parse_duration_ms(" 0s "), 0);
    CHECK_EQ_INT(config_parse_duration_ms(""), -1);
    CHECK_EQ_INT(config_parse_duration_ms("   "), -1);
    CHECK_EQ_INT(config_parse_duration_ms("30"), -1);
    CHECK_EQ_INT(config_parse_duration_ms("s"), -1);
    CHECK_EQ_INT(config_parse_duration_ms("1.5h"), -1);
    CHECK_EQ_INT(config_parse_duration_ms("-5s"), -1);
    CHECK_EQ_INT(config_parse_duration_ms("5 s"), -1);
    CHECK_EQ_INT(config_parse_duration_ms("5x"), -1);
    CHECK_EQ_INT(config_parse_duration_ms("99999999999999999999s"), -1);
    CHECK_EQ_INT(config_parse_duration_ms("9999999999y"), -1);
    CHECK_EQ_INT(config_parse_duration_ms(NULL), -1);

    char out[64];
    config_format_duration(5400000, out);
    CHECK_EQ_STR(out, "1h 30m");
    config_format_duration(0, out);
    CHECK_EQ_STR(out, "0s");
    config_format_duration(90061001, out);
    CHECK_EQ_STR(out, "1d 1h 1m 1s 1ms");
    config_format_duration(250, out);
    CHECK_EQ_STR(out, "250ms");
    int64_t samples[] = {1, 999, 1000, 61000, 3600000, 86400000 * 400LL, 123456789};
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        config_format_duration(samples[i], out);
        CHECK_EQ_INT(config_parse_duration_ms(out), samples[i]);
    }
}

TEST(name_rules)
{
    const char *why;
    CHECK(config_valid_dataset_name("trips", &why) && why == NULL);
    CHECK(config_valid_dataset_name("A-z_0.9", NULL));
    CHECK(config_valid_dataset_name("reload-all2", NULL));
    CHECK(!config_valid_dataset_name("", &why));
    CHECK_EQ_STR(why, "must not be empty");
    CHECK(!config_valid_dataset_name(NULL, &why));
    CHECK(!config_valid_dataset_name("reload-all", &why));
    CHECK_EQ_STR(why, "is reserved"); /* "it is reserved", not "it \"reload-all\" is reserved" */
    CHECK(!config_valid_dataset_name("..", &why));
    CHECK_EQ_STR(why, "would read as a step of a URL path");
    CHECK(!config_valid_dataset_name("a/b", &why));
    CHECK_EQ_STR(why, "may only contain the characters A-Z a-z 0-9 _ . -");
    CHECK(!config_valid_dataset_name("a b", NULL));
    CHECK(!config_valid_dataset_name("caf\xc3\xa9", NULL));
    CHECK(!config_valid_dataset_name("a%20", NULL));
    CHECK(!config_valid_dataset_name("..", NULL));
    CHECK(!config_valid_dataset_name(".", NULL));
    CHECK(config_valid_dataset_name("...", NULL));
    char long_name[200];
    memset(long_name, 'a', sizeof long_name);
    long_name[128] = '\0';
    CHECK(config_valid_dataset_name(long_name, NULL));
    long_name[128] = 'a';
    long_name[129] = '\0';
    CHECK(!config_valid_dataset_name(long_name, &why));
    CHECK_EQ_STR(why, "is too long (at most 128 bytes)");
}

/* ---------------------------------------------------------------- JSON */

static char *json_err(const char *body, struct vt_dataset_config *out, enum vt_err *code)
{
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr);
    CHECK(j != NULL);
    struct vt_error err = {0};
    enum vt_err rc = config_dataset_from_json(j, out, &err);
    json_decref(j);
    if (code)
        *code = rc;
    return rc == VT_ERR_OK ? NULL : strdup(err.msg);
}

#define CHECK_JSON_ERR(body, expected)                                             \
    do {                                                                           \
        struct vt_dataset_config tl_d;                                             \
        char *tl_m = json_err(body, &tl_d, NULL);                                  \
        CHECK_EQ_STR(tl_m, expected);                                              \
        if (!tl_m)                                                                 \
            config_dataset_free(&tl_d);                                            \
        free(tl_m);                                                                \
    } while (0)

TEST(json_dataset)
{
    struct vt_dataset_config d;
    char *m = json_err("{\"name\": \"trips\", \"source\": {\"kind\": \"parquet\", \"location\": "
                       "\"/data/t.parquet\"}, \"columns\": [\"a\"], \"lazy\": true, "
                       "\"index\": {\"mode\": \"none\"}, \"s3\": {\"region\": \"r\"}, "
                       "\"refresh\": {\"interval\": \"5m\"}, \"materialize\": {\"residency\": "
                       "\"lazy\", \"sort_by\": [\"a\"]}, \"on_start\": \"lazy\", \"dict_encode\": null}",
                       &d, NULL);
    CHECK(m == NULL);
    free(m);
    if (!m) {
        CHECK_EQ_STR(d.name, "trips");
        CHECK_EQ_STR(d.location, "/data/t.parquet");
        CHECK(d.lazy && d.index_mode == CFG_INDEX_NONE && !d.dict_encode);
        CHECK_EQ_STR(d.s3.region, "r");
        CHECK(d.refresh.set);
        CHECK_EQ_INT(d.refresh.interval_ms, 300000);
        CHECK(d.materialize.set && d.materialize.residency == CFG_RESIDENCY_LAZY);
        CHECK(d.on_start == CFG_ON_START_LAZY);
        CHECK_EQ_INT(d.line, 0);
        config_dataset_free(&d);
    }
    enum vt_err code;
    m = json_err("{\"name\": \"a b\", \"source\": {\"location\": \"x\"}}", &d, &code);
    CHECK_EQ_STR(m, "name: invalid dataset name \"a b\": it may only contain the characters A-Z "
                    "a-z 0-9 _ . -");
    CHECK(code == VT_ERR_INVALID_NAME);
    free(m);
    m = json_err("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"lazzy\": true}", &d, &code);
    CHECK_EQ_STR(m, "lazzy: unknown key (did you mean \"lazy\"?)");
    CHECK(code == VT_ERR_UNKNOWN_FIELD);
    free(m);
    CHECK_JSON_ERR("{\"source\": {\"location\": \"x\"}}", "name: required");
    CHECK_JSON_ERR("{\"name\": \"reload-all\", \"source\": {\"location\": \"x\"}}",
                   "name: invalid dataset name \"reload-all\": it is reserved");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"index\": {\"mode\": \"al\"}}",
                   "index.mode: expected one of \"auto\", \"list\", \"none\", got \"al\"");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"index\": 5}",
                   "index: expected an object, got an integer");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"lazy\": \"yes\"}",
                   "lazy: expected a boolean (true or false), got a string");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"index\": "
                   "{\"max_cardinality\": 1.5}}",
                   "index.max_cardinality: expected an integer, got a non-integer number");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"kind\": \"delta\"}}",
                   "source.location: required for kind \"delta\"");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"columns\": [\"a\", null]}",
                   "columns[1]: null is not allowed in a list");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"columns\": [\"a\", 3]}",
                   "columns[1]: expected a string, got an integer");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"refresh\": {\"interval\": \"x\"}}",
                   "refresh.interval: expected a duration such as \"30s\", \"5m\" or \"1h 30m\", got \"x\"");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\", \"knd\": 1}}",
                   "source.knd: unknown key (did you mean \"kind\"?)");
    CHECK_JSON_ERR("{\"name\": \"t\", \"source\": {\"location\": \"x\"}, \"s3\": {\"addressing_style\": \"p\"}}",
                   "s3.addressing_style: expected one of \"virtual\", \"path\", got \"p\"");
    CHECK_JSON_ERR("[1]", "request body must be a JSON object");
    /* Query datasets over JSON may name any upstream: the catalog checks it. */
    m = json_err("{\"name\": \"q\", \"sql\": \"SELECT 1\", \"depends_on\": [\"other\"]}", &d, NULL);
    CHECK(m == NULL);
    if (!m) {
        CHECK(d.kind == CFG_SOURCE_QUERY);
        CHECK_EQ_STR(d.depends_on.items[0], "other");
        config_dataset_free(&d);
    }
    free(m);

    json_t *nul = json_pack("{s:s%}", "name", "a\0b", (size_t)3);
    struct vt_error err = {0};
    CHECK(config_dataset_from_json(nul, &d, &err) != VT_ERR_OK);
    CHECK_EQ_STR(err.msg, "name: must not contain NUL characters");
    json_decref(nul);
}

/* ---------------------------------------------------------------- round trip */

static void check_round_trip(const struct vt_dataset_config *d)
{
    char *toml = config_dataset_to_toml(d);
    CHECK(toml != NULL);
    struct vt_dataset_config *back = NULL;
    size_t n = 0;
    struct vt_error err = {0};
    enum vt_err rc = config_load_datasets_text(toml, strlen(toml), "persist", &back, &n, &err);
    if (rc != VT_ERR_OK)
        fprintf(stderr, "  round trip failed: %s\n%s", err.msg, toml);
    CHECK(rc == VT_ERR_OK);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        if (!config_dataset_equal(d, &back[0]))
            fprintf(stderr, "  round trip differs:\n%s", toml);
        CHECK(config_dataset_equal(d, &back[0]));
        config_dataset_free(&back[0]);
    }
    free(back);
    free(toml);
}

TEST(round_trip)
{
    struct vt_config cfg;
    const char *text =
        "[[dataset]]\nname = \"min\"\nsource.location = \"a.parquet\"\n"
        "[[dataset]]\nname = \"full\"\n"
        "source = { kind = \"delta\", location = \"s3://b/p \\\"quoted\\\" \\\\ \\t tab\" }\n"
        "columns = [\"a\", \"b\\u0001\", \"caf\xc3\xa9\"]\ndict_encode = true\n"
        "index = { mode = \"list\", columns = [\"a\"], max_cardinality = 7 }\n"
        "s3 = { region = \"r\", endpoint = \"http://e:1\", addressing_style = \"path\", "
        "allow_http = true, partitioning = \"none\", access_key_id_env = \"K\", "
        "secret_access_key_env = \"S\", session_token_env = \"T\" }\n"
        "refresh = { interval = \"1d 2h\", timeout = \"90s\", jitter = false, debounce = \"0s\" }\n"
        "materialize = { residency = \"memory\", sort_by = [\"b\"], reuse_on_start = true }\n"
        "on_start = \"skip\"\n"
        "[[dataset]]\nname = \"lz\"\nsource.location = \"x\"\nlazy = true\nindex.mode = \"none\"\n"
        "refresh = {}\nmaterialize = {}\n"
        "[[dataset]]\nname = \"q\"\nsql = \"SELECT *\\nFROM full\"\ndepends_on = [\"full\", \"min\"]\n"
        "refresh = { on_upstream_reload = true }\nmaterialize.residency = \"lazy\"\n"
        "on_start = \"lazy\"\n";
    CHECK(load(text, &cfg));
    CHECK_EQ_INT(cfg.n_datasets, 4);
    for (size_t i = 0; i < cfg.n_datasets; i++)
        check_round_trip(&cfg.datasets[i]);

    /* copy and equality */
    struct vt_dataset_config copy;
    CHECK_EQ_INT(config_dataset_copy(&copy, &cfg.datasets[1]), 0);
    CHECK(config_dataset_equal(&copy, &cfg.datasets[1]));
    CHECK(copy.name != cfg.datasets[1].name && copy.columns.items != cfg.datasets[1].columns.items);
    copy.index_max_cardinality++;
    CHECK(!config_dataset_equal(&copy, &cfg.datasets[1]));
    config_dataset_free(&copy);
    config_dataset_free(&copy); /* safe twice */
    CHECK(!config_dataset_equal(&cfg.datasets[0], &cfg.datasets[1]));

    char *toml = config_dataset_to_toml(&cfg.datasets[0]);
    CHECK_EQ_STR(toml, "[[dataset]]\nname = \"min\"\nsource = { kind = \"parquet\", location = "
                       "\"/etc/vitrine/a.parquet\" }\n");
    free(toml);
    config_free(&cfg);
}

TEST(datasets_file)
{
    struct vt_dataset_config *ds = NULL;
    size_t n = 0;
    struct vt_error err = {0};
    const char *text = "[[dataset]]\nname = \"q\"\nsql = \"SELECT 1\"\ndepends_on = [\"elsewhere\"]\n";
    CHECK(config_load_datasets_text(text, strlen(text), "q.toml", &ds, &n, &err) == VT_ERR_OK);
    CHECK_EQ_INT(n, 1);
    for (size_t i = 0; i < n; i++)
        config_dataset_free(&ds[i]);
    free(ds);
    const char *bad = "[server]\nport = 1\n";
    CHECK(config_load_datasets_text(bad, strlen(bad), "q.toml", &ds, &n, &err) != VT_ERR_OK);
    CHECK_EQ_STR(err.msg, "q.toml:1: server: unknown key");
    CHECK(ds == NULL && n == 0);
}

/* ---------------------------------------------------------------- template */

/* A "# key = value" or "# [header]" line (not prose). */
static bool is_setting_line(const char *line)
{
    if (line[0] != '#' || line[1] != ' ')
        return false;
    if (line[2] == '[')
        return true;
    size_t k = strspn(line + 2, "abcdefghijklmnopqrstuvwxyz0123456789_.");
    return k > 0 && strncmp(line + 2 + k, " = ", 3) == 0;
}

/* Uncomments every setting and header line of the template. */
static char *uncomment_all(const char *t)
{
    size_t n = strlen(t);
    char *out = malloc(n + 1), *o = out;
    const char *line = t;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        if (is_setting_line(line)) {
            line += 2;
            len -= 2;
        }
        memcpy(o, line, len);
        o += len;
        line += len;
    }
    *o = '\0';
    return out;
}

TEST(template_loads)
{
    const char *t = config_template_text();
    struct vt_config cfg, defaults;
    CHECK(load(t, &cfg));
    CHECK(load("", &defaults));
    CHECK_EQ_INT(cfg.server.port, defaults.server.port);
    CHECK_EQ_INT(cfg.n_datasets, 0);
    config_free(&cfg);
    config_free(&defaults);

    /* Every commented setting is valid too, and its value is the default
     * wherever the template says so. */
    char *all = uncomment_all(t);
    CHECK(load(all, &cfg));
    CHECK_EQ_INT(cfg.n_datasets, 2);
    CHECK_EQ_INT(cfg.server.port, 8080);
    CHECK_EQ_INT(cfg.server.max_body_bytes, 1048576);
    CHECK_EQ_INT(cfg.auth.leeway_secs, 60);
    CHECK(cfg.explorer_oauth2.set);
    if (cfg.n_datasets == 2) {
        CHECK(cfg.datasets[1].kind == CFG_SOURCE_QUERY);
        CHECK_EQ_INT(cfg.datasets[0].refresh.interval_ms, 3600000);
    }
    config_free(&cfg);
    free(all);

    /* Every block of the spec's configuration table is present. */
    const char *blocks[] = {"[server]",   "[server.startup]", "[server.quack]", "[server.pgwire]",
                            "[swagger]",  "[metrics]",        "[docs]",         "[explorer]",
                            "[explorer.oauth2]", "[auth]",    "[datafusion]",   "[sql]",
                            "[mcp]",      "[[dataset]]"};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        CHECK_CONTAINS(t, blocks[i]);
}

TEST(template_file_and_load_file)
{
    char dir[] = "/tmp/vt-config-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/datasets.toml", dir);
    struct vt_error err = {0};
    CHECK(config_write_template(path, &err) == VT_ERR_OK);
    struct vt_config cfg;
    CHECK(config_load_file(path, &cfg, &err) == VT_ERR_OK);
    CHECK_EQ_STR(cfg.path, path);
    CHECK_EQ_STR(cfg.dir, dir);
    char want[300];
    snprintf(want, sizeof want, "%s/datasets.d", dir);
    CHECK_EQ_STR(cfg.server.saved_queries_dir, want);
    config_free(&cfg);

    /* never overwrites */
    vt_error_clear(&err);
    CHECK(config_write_template(path, &err) != VT_ERR_OK);
    CHECK_CONTAINS(err.msg, "file exists");

    /* errors of load_file name the path as given */
    FILE *f = fopen(path, "w");
    fputs("[server]\nport = \"x\"\n", f);
    fclose(f);
    vt_error_clear(&err);
    CHECK(config_load_file(path, &cfg, &err) == VT_ERR_INVALID_CONFIG);
    char exp[400];
    snprintf(exp, sizeof exp, "%s:2: server.port: expected an integer, got a string", path);
    CHECK_EQ_STR(err.msg, exp);
    vt_error_clear(&err);
    CHECK(config_load_file("/nonexistent/datasets.toml", &cfg, &err) == VT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.msg, "/nonexistent/datasets.toml: cannot open: No such file or directory");
    vt_error_clear(&err);
    CHECK(config_load_file(dir, &cfg, &err) == VT_ERR_INVALID_CONFIG);
    CHECK_CONTAINS(err.msg, "not a regular file");

    /* config_resolve_path: --config, $VITRINE_CONFIG_FILE, ./datasets.toml, $HOME/datasets.toml */
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *old_env = getenv("VITRINE_CONFIG_FILE") ? strdup(getenv("VITRINE_CONFIG_FILE")) : NULL;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/empty", dir);
    mkdir(sub, 0755);
    CHECK(chdir(sub) == 0);
    setenv("HOME", dir, 1);
    unsetenv("VITRINE_CONFIG_FILE");
    char *p = config_resolve_path("cli.toml");
    CHECK_EQ_STR(p, "cli.toml");
    free(p);
    p = config_resolve_path(NULL);
    CHECK_EQ_STR(p, path); /* $HOME/datasets.toml */
    free(p);
    setenv("VITRINE_CONFIG_FILE", "/env/x.toml", 1);
    p = config_resolve_path(NULL);
    CHECK_EQ_STR(p, "/env/x.toml");
    free(p);
    unsetenv("VITRINE_CONFIG_FILE");
    f = fopen("datasets.toml", "w");
    fclose(f);
    p = config_resolve_path(NULL);
    CHECK_EQ_STR(p, "datasets.toml");
    free(p);
    unlink("datasets.toml");
    setenv("HOME", sub, 1);
    p = config_resolve_path(NULL);
    CHECK(p == NULL);
    free(p);
    CHECK(chdir(cwd) == 0);
    if (old_home)
        setenv("HOME", old_home, 1);
    if (old_env)
        setenv("VITRINE_CONFIG_FILE", old_env, 1);
    free(old_home);
    free(old_env);
    rmdir(sub);
    unlink(path);
    rmdir(dir);
}

/* ---------------------------------------------------------------- confinement */

TEST(allowed_lists)
{
    struct vt_config cfg;
    CHECK(load("[server]\nallowed_roots = [\"data\", \"/srv/shared\", \"./x/\"]\n"
               "allowed_s3_endpoints = [\"https://minio.internal:9000\", \"http://127.0.0.1:9000\"]\n"
               "allowed_credential_envs = [\"MINIO_KEY\", \"MINIO_SECRET\"]\n",
               &cfg));
    CHECK_EQ_INT(cfg.server.allowed_roots.len, 3);
    if (cfg.server.allowed_roots.len == 3) {
        CHECK_EQ_STR(cfg.server.allowed_roots.items[0], "/etc/vitrine/data");
        CHECK_EQ_STR(cfg.server.allowed_roots.items[1], "/srv/shared");
        CHECK_EQ_STR(cfg.server.allowed_roots.items[2], "/etc/vitrine/x/");
    }
    CHECK_EQ_INT(cfg.server.allowed_s3_endpoints.len, 2);
    CHECK_EQ_STR(cfg.server.allowed_credential_envs.items[1], "MINIO_SECRET");
    config_free(&cfg);
    CHECK_ERR("[server]\nallowed_roots = \"/data\"\n",
              "datasets.toml:2: server.allowed_roots: expected an array of strings, got a string");
    CHECK_ERR("[server]\nallowed_roots = [\"\"]\n",
              "datasets.toml:2: server.allowed_roots[0]: must not be empty");
    CHECK_ERR("[server]\nallowed_s3_endpoints = [\"https://ok\", \"minio:9000\"]\n",
              "datasets.toml:2: server.allowed_s3_endpoints[1]: expected an http:// or https:// "
              "URL, got \"minio:9000\"");
    CHECK_ERR("[server]\nallowed_credential_envs = [\"MY KEY\"]\n",
              "datasets.toml:2: server.allowed_credential_envs[0]: expected the name of an "
              "environment variable (letters, digits, _)");
    CHECK_ERR("[server]\nallowed_root = []\n",
              "datasets.toml:2: server.allowed_root: unknown key (did you mean \"allowed_roots\"?)");
}

/* ---------------------------------------------------------------- the schema */

/* Every row is consistent with its field and its type, so a new row that
 * names the wrong field or forgets a default is caught here. */
TEST(schema_rows_are_consistent)
{
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        char path[128];
        cfg_key_path(k, path, sizeof path);
        bool ok = true;
        switch (k->type) {
        case CFG_T_BOOL: ok = k->size == sizeof(bool); break;
        case CFG_T_INT: ok = (k->size == sizeof(int) || k->size == sizeof(int64_t)) && k->min <= k->max; break;
        case CFG_T_STR:
        case CFG_T_PATH: ok = k->size == sizeof(char *); break;
        case CFG_T_ENUM: ok = k->size == sizeof(int) && k->names; break;
        case CFG_T_STRVEC: ok = k->size == sizeof(struct strvec); break;
        case CFG_T_DURATION: ok = k->size == sizeof(int64_t); break;
        case CFG_T_TABLE: ok = k->name && (!(k->flags & CFG_SETS) || k->size == sizeof(bool)); break;
        case CFG_T_RULE: ok = k->rule && !k->name; break;
        default: break;
        }
        if (k->type != CFG_T_TABLE && k->type != CFG_T_RULE && k->type != CFG_T_DATASETS)
            ok = ok && k->name && k->doc && (k->def || k->example) && (k->def || k->def_doc);
        if (!ok)
            fprintf(stderr, "  schema row %zu (%s) is inconsistent\n", i, path);
        CHECK(ok);
        /* The block of every row exists as a table row (or is the root). */
        if (k->block[0]) {
            bool found = false;
            for (size_t j = 0; j < cfg_schema_len && !found; j++) {
                char p[128];
                cfg_key_path(&cfg_schema[j], p, sizeof p);
                found = (cfg_schema[j].type == CFG_T_TABLE || cfg_schema[j].type == CFG_T_DATASETS) &&
                        strcmp(p, k->block) == 0;
            }
            if (!found)
                fprintf(stderr, "  schema row %s: no table row for block %s\n", path, k->block);
            CHECK(found);
        }
        /* cfg_read_block lists at most 63 keys per table. */
        size_t in_block = 0;
        for (size_t j = 0; j < cfg_schema_len; j++)
            in_block += cfg_schema[j].name && strcmp(cfg_schema[j].block, k->block) == 0;
        CHECK(in_block < 64);
        /* No key twice. */
        for (size_t j = 0; j < i && k->name; j++)
            if (cfg_schema[j].name && strcmp(cfg_schema[j].block, k->block) == 0)
                CHECK(strcmp(cfg_schema[j].name, k->name) != 0);
    }
}

/* Each default and each example in the table is a valid value of its key:
 * a file setting every key to it loads. (The template test does this too;
 * this one names the key that fails.) */
TEST(schema_defaults_are_valid)
{
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (!k->name || k->type == CFG_T_TABLE || k->type == CFG_T_DATASETS)
            continue;
        const char *vals[] = {k->def, k->example};
        for (size_t v = 0; v < 2; v++) {
            if (!vals[v])
                continue;
            char text[1024];
            if (cfg_key_in_dataset(k)) {
                if (strcmp(k->name, "name") == 0 || strcmp(k->block, "dataset.source") == 0)
                    continue; /* exercised by every other case */
                /* A depends_on example names "trips". */
                const char *base =
                    (k->flags & CFG_QUERY_ONLY)
                        ? "[[dataset]]\nname = \"trips\"\nsource.location = \"x\"\n"
                          "[[dataset]]\nname = \"q\"\nsource.kind = \"query\"\n"
                        : "[[dataset]]\nname = \"q\"\nsource.location = \"x\"\n";
                char key[128];
                cfg_key_path(k, key, sizeof key);
                snprintf(text, sizeof text, "%s%s%s = %s\n", base,
                         (k->flags & CFG_QUERY_ONLY) && strcmp(k->name, "sql") != 0
                             ? "sql = \"SELECT 1\"\n" : "",
                         key + strlen("dataset."), vals[v]);
            } else {
                /* Keys that only go with another get it. */
                char extra[200] = "";
                if (strcmp(k->block, "explorer.oauth2") == 0)
                    snprintf(extra, sizeof extra, "%s%s",
                             strcmp(k->name, "client_id") ? "client_id = \"c\"\n" : "",
                             strcmp(k->name, "issuer") ? "issuer = \"https://i\"\n" : "");
                if (strcmp(k->name, "tls_cert") == 0)
                    snprintf(extra, sizeof extra, "tls_key = \"k\"\n");
                if (strcmp(k->name, "tls_key") == 0)
                    snprintf(extra, sizeof extra, "tls_cert = \"c\"\n");
                snprintf(text, sizeof text, "[%s]\n%s = %s\n%s", k->block, k->name, vals[v],
                         extra);
            }
            char *m = load_err(text);
            if (m)
                fprintf(stderr, "  %s.%s = %s: %s\n", k->block, k->name, vals[v], m);
            CHECK(m == NULL);
            free(m);
        }
    }
}

TEST(every_key_in_template_and_reference)
{
    const char *t = config_template_text();
    char *md = config_reference_markdown();
    CHECK(md != NULL);
    for (size_t i = 0; i < cfg_schema_len && md; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (!k->name || k->type == CFG_T_DATASETS)
            continue;
        char path[128], want[200];
        cfg_key_path(k, path, sizeof path);
        bool ds = cfg_key_in_dataset(k);
        const char *rel = ds ? path + strlen("dataset.") : path;
        if (k->type == CFG_T_TABLE && !ds) {
            snprintf(want, sizeof want, "[%s]\n", path);
            CHECK_CONTAINS(t, want);
            snprintf(want, sizeof want, "## `[%s]`", path);
            CHECK_CONTAINS(md, want);
            continue;
        }
        if (k->type != CFG_T_TABLE) {
            /* Template: "# key = " under its table header, or the dotted key
             * inside a [[dataset]] example. */
            snprintf(want, sizeof want, "\n# %s%s = ",
                     k->flags & CFG_PROSE_EXAMPLE ? "Example: " : "", ds ? rel : k->name);
            CHECK_CONTAINS(t, want);
        }
        snprintf(want, sizeof want, "| `%s` |", rel);
        CHECK_CONTAINS(md, want);
    }
    /* Rules with a description are listed in the reference. */
    for (size_t i = 0; i < cfg_schema_len && md; i++)
        if (cfg_schema[i].type == CFG_T_RULE && cfg_schema[i].doc)
            CHECK_CONTAINS(md, cfg_schema[i].doc);
    free(md);
}

/* docs/configuration.md is generated from the table; a change to the table
 * must come with `make docs-config`. */
TEST(reference_file_is_up_to_date)
{
    const char *src = getenv("VT_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/configuration.md", src && *src ? src : ".");
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    char *md = config_reference_markdown();
    bool same = md && strcmp(md, buf) == 0;
    if (!same)
        fprintf(stderr, "  %s is stale: run `make docs-config` and commit it\n", path);
    CHECK(same);
    free(md);
}

RUN_TESTS(TEST_CASE(defaults), TEST_CASE(dataset_defaults), TEST_CASE(full_config),
          TEST_CASE(full_dataset), TEST_CASE(syntax_errors_name_file_line_column),
          TEST_CASE(unknown_keys_with_suggestions), TEST_CASE(wrong_types), TEST_CASE(server_rules),
          TEST_CASE(environment_color), TEST_CASE(location_resolution),
          TEST_CASE(saved_queries_dir_resolution),
          TEST_CASE(auth_rules), TEST_CASE(pgwire_rules), TEST_CASE(quack_rules),
          TEST_CASE(dataset_rules), TEST_CASE(duration_parsing), TEST_CASE(name_rules),
          TEST_CASE(json_dataset), TEST_CASE(round_trip), TEST_CASE(datasets_file),
          TEST_CASE(template_loads), TEST_CASE(template_file_and_load_file),
          TEST_CASE(allowed_lists), TEST_CASE(schema_rows_are_consistent),
          TEST_CASE(schema_defaults_are_valid), TEST_CASE(every_key_in_template_and_reference),
          TEST_CASE(reference_file_is_up_to_date))
