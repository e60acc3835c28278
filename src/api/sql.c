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
 * The driver (src/exec) does the rest on a query worker: the gate checks the
 * statement and names the datasets it reads; each is pinned at the
 * generation current now (one snapshot for the whole statement, whatever
 * reloads happen meanwhile); exec makes each name a temporary view of the
 * worker's connection over that generation and runs the statement as
 * written; the caps stop the run at max_rows rows (one more tells the result
 * was truncated). request_timeout_ms interrupts it (504); results stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "util/timeutil.h"

void api_sql(struct http_request *req)
{
    struct api_app *app = api_app(req);
    struct vt_error err = {0};
    const struct enc_format *fmt;
    if (api_negotiate(req, API_REPLY_SQL, &fmt, &err) != VT_ERR_OK) {
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
    /* The statement lives as long as the request (the call reads it). */
    char *text = arena_strdup(http_req_arena(req), json_string_value(sql));
    json_decref(body);
    struct api_call *c = text ? api_call_new(req) : NULL;
    if (!c) {
        if (!text)
            http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return;
    }
    api_sink_init(&c->sink, req, API_REPLY_SQL, fmt);
    struct exec_request rq = {
        .kind = EXEC_SQL,
        .sql = text,
        .caps = {.max_rows = max_rows},
        .text_columns = fmt->text_columns,
    };
    api_call_start(c, &rq);
}
