/*
 * /api/v1/queries: saved queries, SQL saved as datasets (permission "manage":
 * the router hides these routes, 404, when neither ADMIN_TOKEN nor [auth] is
 * configured).
 *
 *   POST   /api/v1/queries[?async=true]  {"name","sql","kind","ttl","refresh",
 *                                         "materialize","index"}
 *          200 {"name","kind","depends_on","state":"published","rows"}
 *          202 {"name","kind","depends_on","state":"building"}   (async)
 *   GET    /api/v1/queries               [{"name","kind","depends_on","state"}...]
 *   DELETE /api/v1/queries/{name}        200 {"name","kind","deleted":true}
 *
 * A create runs on the admin pool: the body is parsed (src/saved), the SQL
 * goes through the gate and its depends_on is inferred, then it is bound over
 * the upstreams' current generations (a column that does not exist is a 400
 * here, not a failed build), registered, written to server.saved_queries_dir
 * when its kind is "query", and built. Without async the request waits for
 * the build: past request_timeout_ms the build is interrupted, the dataset and
 * its file removed, and the answer is 504 (use ?async=true for long builds).
 * With async it answers 202 at once; a build that fails leaves the dataset
 * "failed" with last_error, for the status endpoint to show.
 *
 * A caller whose credentials do not also read data (with [auth]: a token
 * with datasets:manage alone, or the admin token) gets no row count and no
 * DuckDB error text, which quote what the SQL read; a reader sees both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "saved/saved.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/timeutil.h"

/* After the request deadline, how long a create waits for its interrupted
 * build to end before removing the dataset regardless. */
#define CREATE_CANCEL_GRACE_MS 2000

static void write_summary(struct jw *w, const char *name, enum cat_saved kind,
                          const struct strvec *deps, const char *state, int64_t rows,
                          bool with_rows)
{
    jw_obj_begin(w);
    jw_kstr(w, "name", name);
    jw_kstr(w, "kind", cat_saved_name(kind));
    jw_key(w, "depends_on");
    jw_arr_begin(w);
    for (size_t i = 0; i < deps->len; i++)
        jw_str(w, deps->items[i]);
    jw_arr_end(w);
    jw_kstr(w, "state", state);
    if (with_rows)
        jw_kint(w, "rows", rows);
    jw_obj_end(w);
}

/* ---------------------------------------------------------------- create */

struct create_call {
    struct saved_request sr;
    bool parsed;
    bool async;
    bool may_read;              /* api_may_read: the caller may see what the SQL reads */
};

static void create_call_release(void *user)
{
    struct create_call *c = user;
    if (c->parsed)
        saved_request_release(&c->sr);
    c->parsed = false;
}

/* A build failure as the client sees it: the SQL is the client's, so what
 * DuckDB refuses while running it (a conversion, a division by zero) is a
 * 400 (a bounded function past its limit: limit_exceeded); running out of
 * time a 504. */
static void reply_build_failure(struct http_request *req, const struct vt_error *err,
                                bool may_read)
{
    struct vt_error e = *err;
    if (e.code == VT_ERR_BUILD_FAILED)
        e.code = VT_ERR_QUERY_FAILED;
    if (e.code == VT_ERR_OK)
        e.code = VT_ERR_INTERNAL;
    /* DuckDB's text quotes the data it choked on ("Could not convert string
     * 'v42'"): only for a caller who may read it anyway. So does a bounded
     * function's refusal, in its sizes (repeat('x', salary) tells the
     * salary): the code stays, the message goes. */
    if (!may_read) {
        enum vt_err code = e.code;
        vt_error_clear(&e);
        vt_error_set(&e, code, "%s",
                     code == VT_ERR_LIMIT_EXCEEDED
                         ? "a function refused a call past its limit when the query ran; its "
                           "message quotes sizes of the data, which takes a read scope to see"
                         : "the query failed when it ran; its message quotes data, which takes "
                           "a read scope to see");
    }
    http_reply_vterr(req, &e);
}

/* The create did not end well after the dataset was registered: it goes
 * again, with its file. */
static void undo_create(struct api_app *app, const struct create_call *c)
{
    struct vt_error ignored = {0};
    if (cat_remove_saved(app->catalog, c->sr.ds.name, NULL, NULL, &ignored) != VT_ERR_OK &&
        ignored.code != VT_ERR_DATASET_NOT_FOUND)
        log_warn("saved query %s: cannot undo its creation: %s", c->sr.ds.name,
                 vt_error_message(&ignored));
    if (c->sr.persist) {
        struct vt_error ferr = {0};
        if (saved_remove(app->cfg->server.saved_queries_dir, c->sr.ds.name, &ferr) != VT_ERR_OK)
            log_warn("%s", vt_error_message(&ferr));
    }
}

static void create_job(struct http_request *req)
{
    struct create_call *c = http_req_user(req);
    struct api_app *app = api_app(req);
    struct vt_dataset_config *ds = &c->sr.ds;
    struct vt_error err = {0};
    int64_t deadline = http_req_deadline(req);
    char taken[VT_MAX_DATASET_NAME_BYTES + 1] = "";
    if (cat_name_taken(app->catalog, ds->name, taken, sizeof taken)) {
        vt_error_set(&err, VT_ERR_NAME_TAKEN, "a dataset named \"%s\" already exists%s", taken,
                     strcmp(taken, ds->name) ? " (names are unique ignoring case)" : "");
        http_reply_vterr(req, &err);
        return;
    }
    /* On the admin pool's worker: the catalog binds on its connection. */
    if (cat_query_infer(app->catalog, NULL, ds, false, &err) != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    if (cat_query_describe(app->catalog, NULL, ds, deadline, &err) != VT_ERR_OK) {
        /* DuckDB's binder names the upstreams' columns ("Candidate
         * bindings: ..."): their schema is a read. */
        if (err.code == VT_ERR_QUERY_FAILED)
            reply_build_failure(req, &err, c->may_read);
        else
            http_reply_vterr(req, &err);
        return;
    }
    struct cat_saved_opts opts = {
        .kind = c->sr.persist ? CAT_SAVED_QUERY : CAT_SAVED_TEMP,
        .ttl_ms = c->sr.ttl_ms,
        .deadline_ms = c->async ? 0 : deadline,
        .remove_on_failure = !c->async,
    };
    struct cat_build_result *r = NULL;
    if (cat_register_saved(app->catalog, ds, &opts, &r, &err) != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    if (c->sr.persist &&
        saved_write(app->cfg->server.saved_queries_dir, ds, &err) != VT_ERR_OK) {
        log_error("saved query %s: %s", ds->name, vt_error_message(&err));
        cat_build_result_wait(r, time_mono_ms() + CREATE_CANCEL_GRACE_MS);
        undo_create(app, c);
        cat_build_result_put(r);
        http_reply_vterr(req, &err);
        return;
    }
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    if (c->async) {
        cat_build_result_put(r);
        write_summary(&w, ds->name, opts.kind, &ds->depends_on, "building", 0, false);
        http_reply_json(req, 202, &body);
        return;
    }
    bool finished = cat_build_result_wait(r, deadline);
    if (!finished) {
        /* The build's own deadline is the same: the watchdog interrupts it.
         * Give it a moment to end, then take the dataset away whatever
         * happened: the client is told 504, and nothing it did not get an
         * answer for should stay. */
        cat_build_result_wait(r, time_mono_ms() + CREATE_CANCEL_GRACE_MS);
        undo_create(app, c);
        sb_release(&body);
        http_reply_error(req, VT_ERR_TIMEOUT, "request timed out");
    } else if (!r->ok) {
        undo_create(app, c); /* the build unregistered it; the file goes too */
        sb_release(&body);
        if (r->err.code == VT_ERR_TIMEOUT && !c->async)
            http_reply_error(req, VT_ERR_TIMEOUT, "request timed out"); /* the spec's 504 body */
        else
            reply_build_failure(req, &r->err, c->may_read);
    } else {
        struct cat_saved_summary sum;
        bool known = cat_saved_of(app->catalog, ds->name, &sum);
        /* The row count is data too (count the rows WHERE salary > x): only
         * for a caller who may read. */
        write_summary(&w, ds->name, opts.kind, &ds->depends_on, "published",
                      known ? sum.rows : r->rows, c->may_read);
        if (known) {
            free(sum.name);
            strvec_free(&sum.depends_on);
        }
        http_reply_json(req, 200, &body);
    }
    cat_build_result_put(r);
}

/* ?async=true|false (also 1|0; absent: false). */
static enum vt_err parse_async(struct http_request *req, bool *out, struct vt_error *err)
{
    const char *v = http_req_query(req, "async");
    *out = false;
    if (!v || !strcmp(v, "false") || !strcmp(v, "0"))
        return VT_ERR_OK;
    if (!strcmp(v, "true") || !strcmp(v, "1") || !*v) {
        *out = true;
        return VT_ERR_OK;
    }
    return vt_error_set(err, VT_ERR_INVALID_FIELD, "async: expected true or false, got \"%.32s\"",
                        v);
}

void api_queries_create(struct http_request *req)
{
    if (api_writer_only(req))
        return;
    struct vt_error err = {0};
    bool async;
    if (parse_async(req, &async, &err) != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    json_t *body = api_json_body(req, false, &err);
    if (!body) {
        http_reply_vterr(req, &err);
        return;
    }
    struct create_call *c = arena_calloc(http_req_arena(req), sizeof *c);
    if (!c) {
        json_decref(body);
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return;
    }
    enum vt_err rc = saved_parse_request(body, &c->sr, &err);
    json_decref(body);
    if (rc != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    c->parsed = true;
    c->async = async;
    c->may_read = api_may_read(req);
    http_req_set_user(req, c);
    http_req_on_release(req, create_call_release);
    http_defer(req, api_app(req)->admin_pool, create_job);
}

/* ------------------------------------------------------------------ list */

void api_queries_list(struct http_request *req)
{
    struct cat_saved_summary *list;
    size_t n = cat_saved_list(api_app(req)->catalog, &list);
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++)
        write_summary(&w, list[i].name, list[i].kind, &list[i].depends_on,
                      cat_state_name(list[i].state), 0, false);
    jw_arr_end(&w);
    cat_saved_list_free(list, n);
    http_reply_json(req, 200, &body);
}

/* ---------------------------------------------------------------- delete */

static void delete_job(struct http_request *req)
{
    struct api_app *app = api_app(req);
    const char *name = http_req_param(req, 0);
    struct strvec deps = {0};
    enum cat_saved kind = CAT_SAVED_NONE;
    struct vt_error err = {0};
    enum vt_err rc = cat_remove_saved(app->catalog, name, &deps, &kind, &err);
    struct strbuf body;
    sb_init(&body, 0);
    struct jw w;
    jw_init(&w, &body);
    if (rc == VT_ERR_HAS_DEPENDENTS) {
        /* The error body, plus who depends on it. */
        jw_obj_begin(&w);
        jw_kstr(&w, "error", vt_error_message(&err));
        jw_kstr(&w, "code", vt_err_code(rc));
        jw_key(&w, "dependents");
        jw_arr_begin(&w);
        for (size_t i = 0; i < deps.len; i++)
            jw_str(&w, deps.items[i]);
        jw_arr_end(&w);
        jw_obj_end(&w);
        strvec_free(&deps);
        http_reply_json(req, vt_err_status(rc), &body);
        return;
    }
    strvec_free(&deps);
    if (rc != VT_ERR_OK) {
        sb_release(&body);
        http_reply_vterr(req, &err);
        return;
    }
    if (kind == CAT_SAVED_QUERY &&
        saved_remove(app->cfg->server.saved_queries_dir, name, &err) != VT_ERR_OK) {
        /* Unregistered, but its file would bring it back at the next start. */
        log_error("saved query %s: %s", name, vt_error_message(&err));
        sb_release(&body);
        http_reply_vterr(req, &err);
        return;
    }
    jw_obj_begin(&w);
    jw_kstr(&w, "name", name);
    jw_kstr(&w, "kind", cat_saved_name(kind));
    jw_kbool(&w, "deleted", true);
    jw_obj_end(&w);
    http_reply_json(req, 200, &body);
}

void api_queries_delete(struct http_request *req)
{
    if (api_writer_only(req))
        return;
    http_defer(req, api_app(req)->admin_pool, delete_job);
}
