/*
 * POST /api/v1/sql (only when [sql] enabled): read-only SQL over the
 * registered datasets, the HTTP front end of the SQL gate (src/sql) and the
 * execution layer (src/exec).
 *
 *   request   {"sql": "SELECT ...", "max_rows": n}   (max_rows optional, at
 *             most [sql] max_rows, its default)
 *   response  {"data": [...], "max_rows": n, "truncated": bool}, or an Arrow
 *             IPC stream by the same negotiation as /query
 *
 * On a query worker: the gate checks the statement and names the datasets it
 * reads; each is pinned at the generation current now (one snapshot for the
 * whole statement, whatever reloads happen meanwhile); exec makes each name a
 * temporary view of the worker's connection over that generation and runs
 * the statement as written; the sink stops the run once it has max_rows rows
 * (and one more tells it the result was truncated). request_timeout_ms
 * interrupts it (504); results stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "sql/sql.h"
#include "util/timeutil.h"

struct sql_call {
    char *text;                 /* the statement (owned) */
    int64_t max_rows;
    enum api_format format;
    struct sql_snapshot snap;
    struct api_sink sink;
    bool sink_ready;
};

static void sql_call_release(void *user)
{
    struct sql_call *c = user;
    sql_snapshot_release(&c->snap);
    if (c->sink_ready)
        api_sink_release(&c->sink);
    c->sink_ready = false;
    free(c->text);
    c->text = NULL;
}

static void sql_job(struct http_request *req, duckdb_connection con)
{
    struct sql_call *c = http_req_user(req);
    struct api_app *app = api_app(req);
    struct vt_error err = {0};
    int64_t t0 = time_mono_us();
    if (sql_snapshot_take(app->catalog, con, c->text, http_req_deadline(req), &c->snap, &err) !=
        VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    api_sink_init_sql(&c->sink, req, c->format, c->max_rows);
    c->sink_ready = true;
    c->sink.timing.plan_us = time_mono_us() - t0; /* the SQL gate and the snapshot */
    struct exec_plan plan = {
        .timing = &c->sink.timing,
        .kind = EXEC_SQL,
        .sql = c->text,
        .views = c->snap.views,
        .nviews = c->snap.n,
        .arena = http_req_arena(req),
        .job = http_req_job(req),
    };
    exec_run(&plan, &c->sink.sink, con);
}

void api_sql(struct http_request *req)
{
    struct api_app *app = api_app(req);
    struct vt_error err = {0};
    enum api_format format;
    if (api_choose_format(req, &format, &err) != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    json_t *body = api_json_body(req, false, &err);
    if (!body) {
        http_reply_vterr(req, &err);
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        if (strcmp(k, "sql") != 0 && strcmp(k, "max_rows") != 0) {
            vt_error_set(&err, VT_ERR_UNKNOWN_FIELD, "unknown field \"%.64s\" (fields: sql, "
                         "max_rows)", k);
            json_decref(body);
            http_reply_vterr(req, &err);
            return;
        }
    }
    json_t *sql = json_object_get(body, "sql");
    json_t *mr = json_object_get(body, "max_rows");
    int64_t cap = app->cfg->sql.max_rows;
    int64_t max_rows = cap;
    if (!json_is_string(sql) || json_string_length(sql) == 0) {
        vt_error_set(&err, VT_ERR_INVALID_QUERY, "sql: a non-empty string is required");
    } else if (mr && !json_is_null(mr) && (!json_is_integer(mr) || json_integer_value(mr) < 0)) {
        vt_error_set(&err, VT_ERR_INVALID_QUERY, "max_rows: an integer >= 0 is expected");
    } else if (json_is_integer(mr) && json_integer_value(mr) < cap) {
        max_rows = json_integer_value(mr);
    }
    if (err.code != VT_ERR_OK) {
        json_decref(body);
        http_reply_vterr(req, &err);
        return;
    }
    struct sql_call *c = arena_calloc(http_req_arena(req), sizeof *c);
    char *text = strdup(json_string_value(sql));
    json_decref(body);
    if (!c || !text) {
        free(text);
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return;
    }
    c->text = text;
    c->max_rows = max_rows;
    c->format = format;
    http_req_set_user(req, c);
    http_req_on_release(req, sql_call_release);
    http_defer_as(req, app->queries, sql_job, ENG_JOB_LONG);
}
