/*
 * Running our own statements through the execution layer and reading their
 * answers: explore_run_json (rows as JSON text, via exec's JSON sink, on the
 * calling query worker's connection) and explore_total, the count behind
 * "include_total".
 */
#include <stdio.h>
#include <string.h>

#include "explore/explore_int.h"

enum vt_err explore_run_json(const struct exec_plan *plan, struct strbuf *out,
                             uint64_t *out_count, struct vt_error *err)
{
    duckdb_connection con = eng_worker_connection();
    if (!con)
        return vt_error_set(err, VT_ERR_INTERNAL, "a statement outside a query worker");
    struct exec_json_sink js;
    exec_json_sink_init(&js, out);
    exec_run(plan, &js.sink, con);
    enum vt_err rc = VT_ERR_OK;
    if (js.err.code == VT_ERR_OUT_OF_MEMORY && out->overflow) {
        rc = vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "the answer is larger than %zu bytes",
                          out->max);
    } else if (js.err.code != VT_ERR_OK) {
        /* DuckDB's message ends with the statement's text ("LINE 1: ..."):
         * clients never see generated SQL. */
        char msg[VT_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", vt_error_message(&js.err));
        char *line = strstr(msg, "\nLINE ");
        if (line) {
            while (line > msg && line[-1] == '\n')
                line--;
            *line = '\0';
        }
        rc = vt_error_set(err, js.err.code, "%s", msg);
    } else if (!js.ended) {
        rc = vt_error_set(err, VT_ERR_INTERNAL, "the statement ended without a result");
    }
    if (rc == VT_ERR_OK && out_count)
        *out_count = js.count;
    exec_json_sink_release(&js);
    return rc;
}

enum vt_err explore_total(const struct exec_plan *plan, int64_t *out, struct vt_error *err)
{
    struct query_request tr;
    query_total_request(plan->query, &tr);
    struct exec_plan p = *plan;
    p.query = &tr;
    p.kind = tr.mode == QUERY_COUNT ? EXEC_COUNT : EXEC_ROWS;
    struct strbuf buf;
    sb_init(&buf, 4096);
    uint64_t count = 0;
    enum vt_err rc = explore_run_json(&p, &buf, &count, err);
    if (rc == VT_ERR_OK && p.kind == EXEC_ROWS) {
        /* [{"count":n}] */
        struct jspan rows = {buf.buf, buf.len}, row, n;
        struct jspan_iter it;
        int64_t v;
        if (jspan_iter_init(&it, rows) && jspan_next(&it, NULL, &row) &&
            jspan_get(row, "count", &n) && jspan_int(n, &v) && v >= 0)
            count = (uint64_t)v;
        else
            rc = vt_error_set(err, VT_ERR_INTERNAL, "the total count could not be read");
    }
    sb_release(&buf);
    if (rc == VT_ERR_OK)
        *out = query_total_cap(plan->query, count > INT64_MAX ? INT64_MAX : (int64_t)count);
    return rc;
}
