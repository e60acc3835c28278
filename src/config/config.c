/*
 * The service configuration: defaults, loading of the config file, and the
 * CLI's config file resolution.
 *
 * Every key, its default and its validation are rows of the schema table
 * (schema.c, read by schema_ops.c); dataset blocks are read in
 * config_dataset.c; typed getters and messages are in config_read.c. Loading
 * is all-or-nothing: a file with any error yields no configuration, and the
 * message names the file, line and key.
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

/* ---------------------------------------------------------------- lifecycle */

static char *cwd_or_dot(void)
{
    char buf[PATH_MAX];
    return strdup(getcwd(buf, sizeof buf) ? buf : ".");
}

/* Every key's default comes from the schema table; relative path defaults
 * (saved_queries_dir) resolve against `dir`. -1 on out of memory. */
static int init_defaults(struct vt_config *cfg, char *dir)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->dir = dir;
    int rc = dir ? cfg_apply_defaults(false, cfg, cfg->dir) : -1;
    /* Derived from server.quack.uri's default ("quack:localhost"). */
    cfg->server.quack.host = strdup("localhost");
    cfg->server.quack.port = 9494;
    return rc == 0 && cfg->server.quack.host ? 0 : -1;
}

void config_init_defaults(struct vt_config *cfg)
{
    init_defaults(cfg, cwd_or_dot());
}

void config_free(struct vt_config *cfg)
{
    if (!cfg)
        return;
    cfg_free_fields(false, cfg);
    free(cfg->path);
    free(cfg->dir);
    free(cfg->server.quack.host);
    for (size_t i = 0; i < cfg->n_datasets; i++)
        config_dataset_free(&cfg->datasets[i]);
    free(cfg->datasets);
    memset(cfg, 0, sizeof *cfg);
}

/* ---------------------------------------------------------------- loading */

static bool read_all_blocks(struct cfg_ctx *cx, const struct toml_value *doc, struct vt_config *cfg)
{
    struct cfg_blk root;
    cfg_root(cx, doc, "", 0, &root);
    return cfg_read_block(&root, "", cfg);
}

enum vt_err config_load_text(const char *text, size_t len, const char *display_name,
                             const char *dir, struct vt_config *cfg, struct vt_error *err)
{
    const char *file = display_name ? display_name : "(config)";
    if (init_defaults(cfg, dir ? strdup(dir) : cwd_or_dot()) < 0) {
        config_free(cfg);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
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
