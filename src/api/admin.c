/*
 * Admin endpoints (permission "reload" in routes.def; the router checks the
 * X-Admin-Token before any of these runs): reload one dataset, reload-all, register a
 * dataset at runtime, persist a dataset block into the config file, re-read
 * the config file. Operations that wait for a build run on the admin pool, so
 * they never hold a query worker; a build that outlives the request deadline
 * keeps going and publishes when done (the client got 504).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "util/file.h"
#include "util/limits.h"
#include "util/log.h"

/* A build failure as the client sees it: problems with the source are 400s
 * (the spec's rule for registration), anything else keeps its code. */
static void reply_build_failure(struct http_request *req, const struct vt_error *err,
                                bool source_errors_are_400)
{
    struct vt_error e = *err;
    if (source_errors_are_400 && e.code == VT_ERR_BUILD_FAILED)
        e.code = VT_ERR_SOURCE_UNAVAILABLE;
    if (e.code == VT_ERR_OK)
        e.code = VT_ERR_INTERNAL;
    http_reply_vterr(req, &e);
}

/* ----------------------------------------------------------------- reload */

static void reload_job(struct http_request *req)
{
    struct api_app *app = api_app(req);
    const char *name = http_req_param(req, 0);
    struct vt_error err = {0};
    struct cat_build_result *r = NULL;
    if (cat_reload(app->catalog, name, CAT_REFRESH_MANUAL, &r, &err) != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    if (!cat_build_result_wait(r, http_req_deadline(req))) {
        cat_build_result_put(r);
        http_reply_error(req, VT_ERR_TIMEOUT, "request timed out");
        return;
    }
    if (!r->ok) {
        reply_build_failure(req, &r->err, false);
    } else {
        struct strbuf body;
        sb_init(&body, 0);
        struct jw w;
        jw_init(&w, &body);
        jw_obj_begin(&w);
        jw_kstr(&w, "dataset", name);
        jw_kint(&w, "rows", r->rows);
        jw_kint(&w, "elapsed_ms", r->elapsed_ms);
        jw_obj_end(&w);
        http_reply_json(req, 200, &body);
    }
    cat_build_result_put(r);
}

void api_dataset_reload(struct http_request *req)
{
    if (api_writer_only(req))
        return;
    if (!cat_has_dataset(api_app(req)->catalog, http_req_param(req, 0))) {
        api_dataset_or_404(req);
        return;
    }
    http_defer(req, api_app(req)->admin_pool, reload_job);
}

void api_reload_all(struct http_request *req)
{
    if (api_writer_only(req))
        return;
    struct strvec enqueued, skipped;
    cat_reload_all(api_app(req)->catalog, &enqueued, &skipped);
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    jw_obj_begin(&w);
    jw_key(&w, "enqueued");
    jw_arr_begin(&w);
    for (size_t i = 0; i < enqueued.len; i++)
        jw_str(&w, enqueued.items[i]);
    jw_arr_end(&w);
    jw_key(&w, "skipped");
    jw_arr_begin(&w);
    for (size_t i = 0; i < skipped.len; i++)
        jw_str(&w, skipped.items[i]);
    jw_arr_end(&w);
    jw_obj_end(&w);
    strvec_free(&enqueued);
    strvec_free(&skipped);
    http_reply_json(req, 202, &body);
}

/* ----------------------------------------------------------- registration */

/* Parses the config-shaped body; relative local paths are resolved against
 * the config file's directory, as they are for [[dataset]] blocks. */
static bool dataset_from_body(struct http_request *req, struct vt_dataset_config *out)
{
    struct vt_error err = {0};
    json_t *body = api_json_body(req, false, &err);
    if (!body) {
        http_reply_vterr(req, &err);
        return false;
    }
    enum vt_err rc = config_dataset_from_json(body, out, &err);
    json_decref(body);
    if (rc != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return false;
    }
    config_dataset_resolve_paths(out, api_app(req)->cfg->dir);
    return true;
}

static void register_job(struct http_request *req)
{
    struct api_app *app = api_app(req);
    struct vt_dataset_config ds;
    if (!dataset_from_body(req, &ds))
        return;
    struct vt_error err = {0};
    struct cat_build_result *r = NULL;
    if (cat_register_dataset(app->catalog, &ds, false, &r, &err) != VT_ERR_OK) {
        config_dataset_free(&ds);
        http_reply_vterr(req, &err);
        return;
    }
    if (!cat_build_result_wait(r, http_req_deadline(req))) {
        http_reply_error(req, VT_ERR_TIMEOUT, "request timed out");
    } else if (!r->ok) {
        reply_build_failure(req, &r->err, true);
    } else {
        struct strbuf body;
        sb_init(&body, 0);
        struct jw w;
        jw_init(&w, &body);
        jw_obj_begin(&w);
        jw_kstr(&w, "name", ds.name);
        jw_kint(&w, "rows", r->rows);
        jw_kint(&w, "columns", r->columns);
        jw_obj_end(&w);
        http_reply_json(req, 200, &body);
    }
    cat_build_result_put(r);
    config_dataset_free(&ds);
}

void api_datasets_register(struct http_request *req)
{
    if (api_writer_only(req))
        return;
    http_defer(req, api_app(req)->admin_pool, register_job);
}

/* ---------------------------------------------------------------- persist */

static pthread_mutex_t persist_mu = PTHREAD_MUTEX_INITIALIZER;

static void persist_job(struct http_request *req)
{
    struct api_app *app = api_app(req);
    const char *path = app->cfg->path;
    struct vt_dataset_config ds;
    if (!dataset_from_body(req, &ds))
        return;
    struct vt_error err = {0};
    /* Validated as registration validates (POST /datasets): the parser and
     * name rules above, a name not taken ignoring case by another spelling,
     * and a source that can be opened; a block that would only fail at the
     * next config reload or restart is refused now. The same name as a live
     * dataset is fine: register, then persist, is how a runtime dataset is
     * kept. */
    char taken[VT_MAX_DATASET_NAME_BYTES + 1] = "";
    if (cat_name_taken(app->catalog, ds.name, taken, sizeof taken) && strcmp(taken, ds.name) != 0)
        vt_error_set(&err, VT_ERR_DATASET_EXISTS,
                     "a dataset named \"%s\" already exists (dataset names are unique ignoring "
                     "case)",
                     taken);
    else
        cat_check_source(app->catalog, &ds, &err);
    if (err.code != VT_ERR_OK) {
        config_dataset_free(&ds);
        http_reply_vterr(req, &err);
        return;
    }
    pthread_mutex_lock(&persist_mu);
    size_t len = 0;
    char *old = NULL;
    util_read_file(path, VT_MAX_CONFIG_BYTES, VT_ERR_INTERNAL, &old, &len, &err);
    char *block = old ? config_dataset_to_toml(&ds) : NULL;
    struct strbuf text;
    sb_init(&text, VT_MAX_CONFIG_BYTES);
    if (old && block) {
        sb_add(&text, old, len);
        if (len > 0 && old[len - 1] != '\n')
            sb_addc(&text, '\n');
        sb_addc(&text, '\n');
        sb_adds(&text, block);
        if (text.overflow)
            vt_error_set(&err, VT_ERR_LIMIT_EXCEEDED, "config file would exceed %d bytes",
                         VT_MAX_CONFIG_BYTES);
    } else if (old) {
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
    }
    /* The name must not be in the file yet, and the new file must load,
     * before it replaces the old one. */
    if (err.code == VT_ERR_OK) {
        struct vt_config current;
        struct vt_error cerr = {0};
        if (config_load_text(old, len, path, app->cfg->dir, &current, &cerr) == VT_ERR_OK) {
            for (size_t i = 0; i < current.n_datasets; i++)
                if (strcasecmp(current.datasets[i].name, ds.name) == 0)
                    vt_error_set(&err, VT_ERR_DATASET_EXISTS,
                                 "dataset %s is already in the config file", current.datasets[i].name);
            config_free(&current);
        }
    }
    if (err.code == VT_ERR_OK) {
        struct vt_config check;
        struct vt_error cerr = {0};
        if (config_load_text(text.buf, text.len, path, app->cfg->dir, &check, &cerr) != VT_ERR_OK)
            vt_error_set(&err, VT_ERR_INVALID_CONFIG, "%s", cerr.msg);
        else
            config_free(&check);
    }
    if (err.code == VT_ERR_OK)
        util_write_file_atomic(path, text.buf, text.len, 0644, VT_ERR_INTERNAL, &err);
    pthread_mutex_unlock(&persist_mu);
    free(old);
    free(block);
    sb_release(&text);
    if (err.code != VT_ERR_OK) {
        config_dataset_free(&ds);
        http_reply_vterr(req, &err);
        return;
    }
    log_info("dataset %s persisted to %s", ds.name, path);
    config_dataset_free(&ds);
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    jw_obj_begin(&w);
    jw_kbool(&w, "persisted", true);
    jw_kstr(&w, "path", path);
    jw_obj_end(&w);
    http_reply_json(req, 200, &body);
}

/* A config file to work on (400 no_config_file without one);
 * then `job` runs on the admin pool. */
static void defer_config_file_job(struct http_request *req, http_job_fn job, const char *what)
{
    if (!api_app(req)->cfg->path) {
        struct vt_error err = {0};
        vt_error_set(&err, VT_ERR_NO_CONFIG_FILE,
                     "the server was not started from a config file: nothing to %s", what);
        http_reply_vterr(req, &err);
        return;
    }
    http_defer(req, api_app(req)->admin_pool, job);
}

void api_datasets_persist(struct http_request *req)
{
    if (api_writer_only(req))
        return;
    defer_config_file_job(req, persist_job, "persist to");
}

/* ---------------------------------------------------------- config reload */

static void config_reload_job(struct http_request *req)
{
    struct api_app *app = api_app(req);
    struct vt_config cfg;
    struct vt_error err = {0};
    if (config_load_file(app->cfg->path, &cfg, &err) != VT_ERR_OK) {
        http_reply_error(req, VT_ERR_INVALID_CONFIG, vt_error_message(&err));
        return;
    }
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    struct cat_build_result **results = calloc(cfg.n_datasets ? cfg.n_datasets : 1, sizeof *results);
    struct vt_error *errors = calloc(cfg.n_datasets ? cfg.n_datasets : 1, sizeof *errors);
    bool *skipped = calloc(cfg.n_datasets ? cfg.n_datasets : 1, sizeof *skipped);
    if (!results || !errors || !skipped) {
        free(results);
        free(errors);
        free(skipped);
        config_free(&cfg);
        sb_release(&body);
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return;
    }
    /* Register every new name at once; the builds run in parallel. */
    for (size_t i = 0; i < cfg.n_datasets; i++) {
        if (cat_has_dataset(app->catalog, cfg.datasets[i].name)) {
            skipped[i] = true;
            continue;
        }
        if (cat_register_dataset(app->catalog, &cfg.datasets[i], true, &results[i], &errors[i]) !=
            VT_ERR_OK) {
            /* Registered meanwhile by someone else: skipped. The same name in
             * another case is a conflict, reported as an error. */
            if (errors[i].code == VT_ERR_DATASET_EXISTS &&
                cat_has_dataset(app->catalog, cfg.datasets[i].name)) {
                skipped[i] = true;
                vt_error_clear(&errors[i]);
            }
        }
    }
    jw_obj_begin(&w);
    jw_key(&w, "registered");
    jw_arr_begin(&w);
    for (size_t i = 0; i < cfg.n_datasets; i++) {
        if (!results[i])
            continue;
        cat_build_result_wait(results[i], 0);
        if (results[i]->ok)
            jw_str(&w, cfg.datasets[i].name);
        else
            errors[i] = results[i]->err;
    }
    jw_arr_end(&w);
    jw_key(&w, "skipped");
    jw_arr_begin(&w);
    for (size_t i = 0; i < cfg.n_datasets; i++)
        if (skipped[i])
            jw_str(&w, cfg.datasets[i].name);
    jw_arr_end(&w);
    jw_key(&w, "errors");
    jw_arr_begin(&w);
    for (size_t i = 0; i < cfg.n_datasets; i++) {
        if (errors[i].code == VT_ERR_OK)
            continue;
        jw_obj_begin(&w);
        jw_kstr(&w, "dataset", cfg.datasets[i].name);
        jw_kstr(&w, "error", vt_error_message(&errors[i]));
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    for (size_t i = 0; i < cfg.n_datasets; i++)
        cat_build_result_put(results[i]);
    free(results);
    free(errors);
    free(skipped);
    config_free(&cfg);
    http_reply_json(req, 200, &body);
}

void api_config_reload(struct http_request *req)
{
    if (api_writer_only(req))
        return;
    defer_config_file_job(req, config_reload_job, "reload");
}

void api_config_reload_signal(struct api_app *app)
{
    if (!app->cfg->path) {
        log_info("SIGHUP: no config file to reload");
        return;
    }
    struct vt_config cfg;
    struct vt_error err = {0};
    if (config_load_file(app->cfg->path, &cfg, &err) != VT_ERR_OK) {
        log_error("SIGHUP: %s", vt_error_message(&err));
        return;
    }
    size_t registered = 0;
    /* Their names: a build that fails later is logged by name, and "2 new
     * datasets registered" with one of them gone a moment after did not
     * say which. */
    struct strbuf names;
    sb_init(&names, 4096);
    for (size_t i = 0; i < cfg.n_datasets; i++) {
        if (cat_has_dataset(app->catalog, cfg.datasets[i].name))
            continue;
        struct cat_build_result *r = NULL;
        vt_error_clear(&err);
        if (cat_register_dataset(app->catalog, &cfg.datasets[i], true, &r, &err) == VT_ERR_OK) {
            sb_addf(&names, "%s%s", registered ? ", " : ": ", cfg.datasets[i].name);
            registered++;
        } else {
            log_error("SIGHUP: dataset %s: %s", cfg.datasets[i].name, vt_error_message(&err));
        }
        cat_build_result_put(r);
    }
    log_info("SIGHUP: config %s reloaded: %zu new dataset%s registered (building)%s%s",
             app->cfg->path, registered, registered == 1 ? "" : "s", names.buf ? names.buf : "",
             names.overflow ? ", ..." : "");
    sb_release(&names);
    config_free(&cfg);
}
