/*
 * The configuration model: every block and key of the spec's configuration
 * tables, as typed structs with the spec's defaults and the decisions of the
 * schema table (src/config/schema.c; docs/configuration.md is generated from it).
 *
 * config_load_file() reads a TOML file, validates it and fills struct
 * vt_config. Validation errors name the file, line and key, e.g.
 *   datasets.toml:12: dataset[1].index.mode: expected one of "auto", "list", "none", got "al"
 *   datasets.toml:3: server.prot: unknown key (did you mean "port"?)
 * dataset[N] counts [[dataset]] blocks from 0. TOML syntax errors read
 *   datasets.toml: line 3, column 7: expected '=' after key "port", found '8'
 *
 * The same dataset-block parser reads the JSON body of POST /api/v1/datasets
 * (config_dataset_from_json) so both paths apply identical rules.
 *
 * Strings are heap-allocated and owned by the struct; config_free() releases
 * everything. A struct vt_dataset_config can be deep-copied on its own
 * (datasets outlive config reloads).
 */
#ifndef VT_CONFIG_CONFIG_H
#define VT_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/errors.h"
#include "util/strvec.h"

enum cfg_source_kind { CFG_SOURCE_PARQUET, CFG_SOURCE_DELTA, CFG_SOURCE_QUERY };
enum cfg_index_mode { CFG_INDEX_AUTO, CFG_INDEX_LIST, CFG_INDEX_NONE };
enum cfg_on_start { CFG_ON_START_EAGER, CFG_ON_START_LAZY, CFG_ON_START_SKIP };
enum cfg_residency { CFG_RESIDENCY_AUTO, CFG_RESIDENCY_MEMORY, CFG_RESIDENCY_LAZY };
enum cfg_s3_addressing { CFG_S3_ADDRESSING_VIRTUAL, CFG_S3_ADDRESSING_PATH };
enum cfg_s3_partitioning {
    CFG_S3_PARTITIONING_AUTO, CFG_S3_PARTITIONING_HIVE, CFG_S3_PARTITIONING_NONE
};
enum cfg_readiness { CFG_READINESS_ALL, CFG_READINESS_ANY };
enum cfg_backend { CFG_BACKEND_DATAFUSION, CFG_BACKEND_DUCKDB };
enum cfg_cluster_role { CFG_ROLE_STANDALONE, CFG_ROLE_WRITER, CFG_ROLE_READER };

struct refresh_config {
    bool set;                   /* a refresh block was given */
    int64_t interval_ms;        /* 0 = no schedule */
    bool on_upstream_reload;    /* default false */
    int64_t timeout_ms;         /* default 10 minutes */
    bool jitter;                /* default true: ±10% */
    int64_t debounce_ms;        /* default 5 s */
};

struct materialize_config {
    bool set;
    enum cfg_residency residency;   /* default auto */
    struct strvec sort_by;
    bool reuse_on_start;        /* default false */
};

struct s3_config {
    char *region;               /* NULL: AWS_REGION / AWS_DEFAULT_REGION / us-east-1 */
    char *endpoint;             /* NULL: AWS */
    enum cfg_s3_addressing addressing_style; /* default virtual */
    bool allow_http;            /* default false */
    enum cfg_s3_partitioning partitioning;   /* default auto */
    /* Optional per-dataset credential overrides: names of environment variables
     * to read the key id / secret / session token from (never the secrets). */
    char *access_key_id_env;
    char *secret_access_key_env;
    char *session_token_env;
};

struct vt_dataset_config {
    char *name;
    enum cfg_source_kind kind;
    char *location;             /* parquet/delta: path, glob, dir, s3:// url; a relative
                                 * local path from a config file is resolved against the
                                 * file's directory (config_dataset_resolve_paths) */
    char *sql;                  /* kind = query */
    /* kind = delta, time travel: the table version to serve when
     * source_version_set (set by the config rules when the key is given, so a
     * zeroed struct means "the latest"), or the latest version committed at
     * or before source_timestamp (RFC 3339). */
    int64_t source_version;
    bool source_version_set;
    char *source_timestamp;
    struct strvec depends_on;   /* kind = query */
    struct strvec columns;      /* projection at load; empty = all */
    bool dict_encode;
    bool lazy;
    enum cfg_index_mode index_mode;
    struct strvec index_columns;
    int64_t index_max_cardinality; /* default 100000 */
    int64_t index_json_pages_mb;   /* pre-rendered pages, MiB of text; default 256, 0 = none */
    bool index_json_pages_gzip;    /* and their gzip blocks; default true */
    struct s3_config s3;
    struct refresh_config refresh;
    struct materialize_config materialize;
    enum cfg_on_start on_start;     /* default eager */
    int line;                   /* where the block starts in its file (0 = not from a file) */
};

struct startup_config {
    enum cfg_readiness readiness;   /* default all */
    int max_concurrent;         /* default 4 */
};

struct quack_config {
    bool enabled;               /* default false */
    char *uri;                  /* default quack:localhost */
    char *host;                 /* from uri: "localhost" by default */
    int port;                   /* from uri: 9494 by default */
    char *token;                /* NULL: generated and logged once */
    bool allow_other_hostname;  /* default false */
    bool read_only;             /* default true */
};

struct pgwire_config {
    bool enabled;               /* default false */
    char *listen;               /* default 127.0.0.1 */
    int port;                   /* default 5432 */
    char *username;             /* default "vitrine" */
    char *password;             /* NULL = unset */
    char *tls_cert;             /* resolved against the config file's directory */
    char *tls_key;
    int64_t max_connections;    /* default 100 */
    int64_t idle_timeout_secs;  /* default 600; 0 = none */
};

struct server_config {
    enum cfg_backend backend;       /* default datafusion (hint only: this build runs DuckDB) */
    bool backend_set;           /* the key was present */
    char *listen;               /* default 127.0.0.1 */
    int port;                   /* default 8080; 0 = an ephemeral port chosen by the OS */
    int workers;                /* default: number of CPUs (0 in the struct = resolve at start) */
    int max_queued_jobs;        /* query pool queue depth; default VT_MAX_PENDING_JOBS */
    int worker_nice;            /* nice added to the query workers and DuckDB's task
                                 * threads, not the HTTP loops; default 5 */
    int lane_nice;              /* nice added to the long and stream lanes; default 0 */
    int task_nice;              /* nice added to DuckDB's task threads; default 0 */
    bool worker_idle;           /* workers and DuckDB's task threads under SCHED_IDLE;
                                 * default false */
    char *prefix;               /* default "" */
    bool compress;              /* default true */
    int64_t max_body_bytes;     /* default 1048576 */
    int64_t max_page_size;      /* default 100000 */
    int64_t force_lazy_above_mb;/* default 0 = off */
    int64_t request_timeout_ms; /* default 30000; 0 disables */
    int64_t shutdown_timeout_secs; /* default 30 */
    int64_t drain_delay_secs;   /* default 0: after SIGTERM /readyz is 503 and everything else
                                 * is served this long before the listeners close */
    char *environment;          /* NULL = unset */
    char *environment_color;    /* NULL = inferred, see config_environment_color() */
    char *saved_queries_dir;    /* resolved absolute path; default <config_dir>/datasets.d */
    char *storage_dir;          /* storage generations of query datasets (Parquet); resolved
                                 * absolute path; default <config_dir>/storage */
    char *memory_limit;         /* DuckDB memory_limit: a size ("8GB") or a share of RAM
                                 * ("50%", the default; eng_open resolves it) */
    char *index_memory_limit;   /* memory of every index fast path together: a size or a
                                 * share of RAM ("10%"), resolved at start */
    int64_t s3_cache_mb;        /* budget of the S3 range cache of lazy datasets */
    char *temp_directory;       /* DuckDB spill directory, resolved against the config
                                 * file's directory; NULL = a private temp dir */
    char *max_temp_directory_size; /* DuckDB's cap on spilled bytes: a size or a share of the
                                 * temp directory's free space ("25%", the default) */
    /* Confinement of runtime registrations (src/sources/ enforces them).
     * Empty lists mean the defaults documented in docs/configuration.md. */
    struct strvec allowed_roots;           /* absolute paths (resolved against the
                                            * config file's directory) */
    struct strvec allowed_s3_endpoints;    /* http(s):// URLs as in s3.endpoint */
    struct strvec allowed_credential_envs; /* environment variable names */
    /* DNS rebinding (src/http/hosts.h): Host names answered besides the
     * loopback ones, and browser Origins allowed on MCP. */
    struct strvec allowed_hosts;           /* "name", "*.suffix" or "*" */
    struct strvec allowed_origins;         /* "scheme://host[:port]" or "*" */
    struct strvec cors_origins;            /* origins browsers may read answers from; "*" any */
    struct startup_config startup;
    struct quack_config quack;
    struct pgwire_config pgwire;
};

struct ui_mount_config {
    bool enabled;
    char *path;
};

struct oauth2_config {
    bool set;
    char *client_id;
    char *issuer;
    struct strvec scopes;
    bool pkce;                  /* default true */
};

struct auth_config {
    bool enabled;               /* default false */
    char *issuer;
    char *audience;
    struct strvec algorithms;   /* default ["RS256"] */
    int64_t leeway_secs;        /* default 60 */
    int64_t jwks_refresh_secs;  /* default 3600 */
    struct strvec read_scopes;  /* default ["datasets:read"] */
    struct strvec reload_scopes;/* default ["datasets:reload"] */
    bool anonymous_read;        /* default false */
    char *tenant_claim;         /* JSON pointer */
    struct strvec allowed_tenants;
    bool admin_token_fallback;  /* default true */
    bool start_degraded;        /* default true */
};

struct datafusion_config {
    bool pushdown_filters;      /* default false */
    bool reorder_filters;       /* default false */
    bool list_files_cache;      /* default false */
    int64_t list_files_cache_mb;       /* default 64 */
    int64_t list_files_cache_ttl_secs; /* default 60 */
};

struct sql_config {
    bool enabled;               /* default false */
    int64_t max_rows;           /* default 100000 */
};

struct mcp_config {
    bool enabled;               /* default false */
    bool expose_sql;            /* default false */
    char *path;                 /* default /mcp */
    int64_t max_rows;           /* rows in one query_dataset/sql result; default 500 */
    int64_t max_bytes;          /* bytes of rows in one result; default 262144 */
    int64_t list_page_size;     /* tools/list, resources/list, list_datasets page; default 100 */
    struct strvec allowed_origins; /* Origin values allowed besides the server's own */
};

/* [cluster]: one writer and stateless readers sharing generations on S3
 * (src/cluster/cluster.h). */
struct cluster_config {
    enum cfg_cluster_role role; /* default standalone */
    char *storage;              /* s3://bucket/prefix; required for writer and reader */
    int64_t poll_interval_ms;   /* readers poll CURRENT this often; default 2000 */
    char *writer_url;           /* readers forward admin calls here; NULL: answer 409 */
    char *advertise_url;        /* the writer's URL as readers name it; NULL: host:port */
    int64_t pin_secs;           /* the previous generation stays readable this long */
    int64_t gc_grace_secs;      /* the writer deletes replaced generations after this */
    int64_t gc_interval_secs;   /* how often the writer collects */
    struct s3_config s3;        /* endpoint, region, allow_http, addressing_style, creds */
};

struct vt_config {
    char *path;                 /* absolute path of the file read; NULL when none */
    char *dir;                  /* its directory; cwd when none */
    struct server_config server;
    struct ui_mount_config swagger;  /* true, /docs */
    struct ui_mount_config metrics;  /* false, /metrics */
    bool metrics_public;             /* metrics.public: no credentials needed */
    bool metrics_public_set;         /* the key was given (unset: public unless [auth]) */
    struct ui_mount_config docs;     /* true, /mkdocs */
    struct ui_mount_config explorer; /* true, /explore */
    struct oauth2_config explorer_oauth2;
    struct auth_config auth;
    struct datafusion_config datafusion;
    struct sql_config sql;
    struct mcp_config mcp;
    struct cluster_config cluster;
    struct vt_dataset_config *datasets;
    size_t n_datasets;
};

/* Fills `cfg` with every default (no datasets). */
void config_init_defaults(struct vt_config *cfg);
/* Reads and validates `path`. On failure returns an error code and a message
 * naming file, line and key in err (and leaves cfg freed/empty). */
enum vt_err config_load_file(const char *path, struct vt_config *cfg, struct vt_error *err);
/* Same from text in memory; `display_name` is used in messages. */
enum vt_err config_load_text(const char *text, size_t len, const char *display_name,
                             const char *dir, struct vt_config *cfg, struct vt_error *err);
void config_free(struct vt_config *cfg);

/* Dataset blocks. */
void config_dataset_defaults(struct vt_dataset_config *ds);
void config_dataset_free(struct vt_dataset_config *ds);
int config_dataset_copy(struct vt_dataset_config *dst, const struct vt_dataset_config *src);
/* Parses a dataset block from a JSON object (jansson json_t *, passed as void *
 * to keep jansson out of this header) with the same rules as [[dataset]]. */
enum vt_err config_dataset_from_json(const void *json_obj, struct vt_dataset_config *out,
                                     struct vt_error *err);
/* Renders a dataset as a [[dataset]] TOML block (for persist). Caller frees.
 * The block parses back to a dataset equal to `ds` (config_dataset_equal). */
char *config_dataset_to_toml(const struct vt_dataset_config *ds);
/* Field-by-field equality (the source `line` is ignored). */
bool config_dataset_equal(const struct vt_dataset_config *a, const struct vt_dataset_config *b);
/* Reads text holding only [[dataset]] blocks (a file of the saved-queries
 * directory). Same rules as in a config file, except that depends_on may name
 * datasets defined elsewhere. On success *out is a malloc'd array of *out_n
 * datasets; free each with config_dataset_free, then the array. */
enum vt_err config_load_datasets_text(const char *text, size_t len, const char *display_name,
                                      struct vt_dataset_config **out, size_t *out_n,
                                      struct vt_error *err);

/* Resolves a relative local source.location against `dir` (the config
 * file's directory); s3:// and absolute locations are left alone. */
int config_dataset_resolve_paths(struct vt_dataset_config *ds, const char *dir);

/* The directories local sources may be read from (the source policy's
 * roots): server.allowed_roots, or by default the config file's directory
 * (the working directory without one), the saved-queries and storage
 * directories and the directory of every local dataset of the config file
 * (config_location_root). Appends them as written, each once; 0, or -1 out of
 * memory. */
int config_source_roots(const struct vt_config *cfg, struct strvec *out);
/* The directory of a local location, as written: the location itself when
 * it is a directory, else the part before the last '/' that precedes any
 * glob character ("/d/x/y*.parquet" gives /d/x, "/d/a.parquet" gives /d).
 * NULL (nothing to add) for S3 and other URLs, relative paths and "/".
 * Caller frees. */
char *config_location_root(const char *location);
/* The local directories this configuration reads and writes: the source
 * roots above, the saved-queries, storage and temp directories (also when
 * allowed_roots leaves them out), and the directory of every local source of
 * the config's datasets (a glob's fixed part; a linked file's target
 * directory), which the source policy lets them read. So DuckDB, confined to
 * these plus the runtime directory (eng_confine), can open every path the
 * source policy allows. Appends to `out` (lexical and real path of each,
 * once); 0, or -1 out of memory. */
int config_file_dirs(const struct vt_config *cfg, struct strvec *out);

/* Name rules shared by every registration path: non-empty, at most
 * VT_MAX_DATASET_NAME_BYTES, only A-Z a-z 0-9 _ . -, not "reload-all". */
bool config_valid_dataset_name(const char *name, const char **out_reason);

/* server.environment_color, inferred from the environment name when unset. */
const char *config_environment_color(const struct server_config *server);

/* Humantime durations ("30s", "5m", "1h 30m", "250ms", "2days"). -1 if invalid.
 * Units: ns, us, ms, s, m, h, d, w, M (30.44 days), y (365.25 days), with their
 * long forms (sec, secs, second(s), min(s), minute(s), hr(s), hour(s), day(s),
 * week(s), month(s), year(s)); parts add up and may be separated by spaces. */
int64_t config_parse_duration_ms(const char *s);
/* The inverse for display and persistence: 5400000 -> "1h 30m", 0 -> "0s".
 * `out` needs 64 bytes. */
void config_format_duration(int64_t ms, char out[64]);

/* A size as server.memory_limit takes it ("8GB", "512 MiB", "1.5GB", a bare
 * number of bytes) in bytes, or a percentage of `available`. UINT64_MAX when
 * it does not parse (or a percentage of an unknown amount). */
uint64_t config_parse_size_bytes(const char *s, uint64_t available);

/* Resolves which config file to use: --config, $VITRINE_CONFIG_FILE,
 * ./datasets.toml, $HOME/datasets.toml. Returns a malloc'd path or NULL. */
char *config_resolve_path(const char *cli_path);

/* Writes the commented template of `vitrine init` to `path` (fails if it exists). */
enum vt_err config_write_template(const char *path, struct vt_error *err);
/* The template text itself (static storage), rendered from the schema table. */
const char *config_template_text(void);
/* docs/configuration.md: the reference of every key, rendered from the same
 * table (malloc'd; tools/vt-config-ref.c writes it, `make docs-config`). */
char *config_reference_markdown(void);

const char *config_source_kind_name(enum cfg_source_kind k);
/* "standalone", "writer", "reader". */
const char *config_cluster_role_name(enum cfg_cluster_role r);
/* Parses a role name (--role); -1 when unknown. */
int config_cluster_role_parse(const char *s);

#endif
