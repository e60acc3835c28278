/*
 * Internals of src/mcp shared by its files: the state of one MCP request
 * (struct mcp_call), the replies every method writes, and the entry points
 * of each method family.
 *
 *   mcp.c        the transport: eras, headers, dispatch, initialize,
 *                server/discover, ping, logging, replies (JSON or, with log
 *                notifications, one SSE body)
 *   tools.c      the tool table, tools/list, tools/call
 *   resources.c  resources/list, resources/templates/list, resources/read
 *   prompts.c    prompts/list, prompts/get, completion/complete
 *   envelope.c   the pure parsers (message envelope, header values, cursors)
 *
 * Ownership: a call lives in the request's arena; what it holds (the
 * message, a pin, an exec call, buffers) is released once by call_release,
 * from the request's release hook, whichever thread answered.
 */
#ifndef VT_MCP_MCP_INT_H
#define VT_MCP_MCP_INT_H

#include <stdarg.h>

#include "catalog/catalog.h"
#include "exec/exec.h"
#include "explore/explore.h"
#include "mcp/mcp.h"
#include "util/jsonw.h"
#include "util/strbuf.h"

#define MCP_MODERN_VERSION "2026-07-28"
#define MCP_RESOURCE_PREFIX "vitrine://datasets/"

/* JSON-RPC and MCP error codes. */
#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL -32603
#define MCP_RESOURCE_NOT_FOUND_LEGACY -32002
#define MCP_HEADER_MISMATCH -32020
#define MCP_UNSUPPORTED_VERSION -32022

/* RFC 5424 severities, as MCP names them (logging). */
enum mcp_level {
    MCP_LOG_DEBUG, MCP_LOG_INFO, MCP_LOG_NOTICE, MCP_LOG_WARNING, MCP_LOG_ERROR,
    MCP_LOG_CRITICAL, MCP_LOG_ALERT, MCP_LOG_EMERGENCY,
    MCP_LOG_OFF /* no level asked for: nothing is sent */
};
/* The level named `s`, or -1. */
int mcp_level_parse(const char *s);

struct mcp_tool;
struct mcp_call;
typedef void (*mcp_job_fn)(struct mcp_call *c, const struct eng_job *job);

struct mcp_call {
    struct http_request *req;
    struct mcp_env env;
    json_t *msg;                /* owned */
    json_t *id;                 /* borrowed; NULL for notifications */
    const char *method;
    json_t *params;             /* may be NULL */
    bool modern;
    /* Log notifications the request asked for (modern: _meta logLevel) and
     * whether the client takes them (Accept: text/event-stream). */
    enum mcp_level log_level;
    bool sse_ok;
    struct strbuf logs;         /* notifications/message frames, SSE-ready */
    int64_t t0_ms;              /* monotonic, when the request was parsed */
    /* data tools, resources and prompts */
    const struct mcp_tool *tool; /* tools/call */
    const char *dataset;
    json_t *args;
    struct exec_pin pin;        /* methods that read a generation's schema */
    struct exec_call call;      /* tools and reads over the exec driver */
    struct strbuf rows;
    struct exec_json_sink sink;
    int64_t requested_page_size;
    int64_t max_rows;           /* the sql tool's row cap */
    /* what the sink's answer is for (each file's own) */
    void (*on_done)(struct mcp_call *c);
    mcp_job_fn job;             /* mcp_defer */
    int kind;                   /* the file's own discriminator */
    const char *what;           /* e.g. the prompt's name */
    void *state;                /* a method's own, in the request's arena */
};

/* ---- replies (mcp.c) ---- */

void mcp_send_error(struct http_request *req, int status, const json_t *id, int code,
                    const char *message, const char *data_json);
/* A JSON-RPC error for the call (era-aware status: modern errors are 400s
 * for invalid params, 404 for unknown methods; legacy errors 200). */
void mcp_call_error(struct mcp_call *c, int code, const char *message, const char *data_json);
/* Opens a result object (modern: resultType, serverInfo; cacheable lists and
 * reads: ttlMs and cacheScope). Add fields each after mcp_result_sep, then
 * mcp_send_result. */
void mcp_result_open(struct strbuf *sb, const struct mcp_call *c, bool cacheable);
void mcp_result_sep(struct strbuf *sb);
/* Closes the result and replies (JSON, or SSE when log notifications wait). */
void mcp_send_result(struct mcp_call *c, struct strbuf *sb);
/* A tool result: structuredContent and the same JSON as a text item. */
void mcp_send_tool_result(struct mcp_call *c, const char *structured, size_t len);
/* A tool failure the model can act on (isError, message, code). */
void mcp_send_tool_error(struct mcp_call *c, const char *message, const char *code);
/* An error of the one table as a tool error, with the hint a model needs
 * (the dataset names, the columns, retry); outside tools/call, as a
 * JSON-RPC error. */
void mcp_send_vterr(struct mcp_call *c, const struct vt_error *err);
/* A log notification for this request (kept when `level` is at least the
 * level the request asked for; sent before the result). */
void mcp_log(struct mcp_call *c, enum mcp_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs fn(c, job) on the query pool (a LONG job: summaries and facets scan). */
void mcp_defer(struct mcp_call *c, mcp_job_fn fn);
/* Pins c->dataset into c->pin. deadline 0: only when ready now (a worker
 * passes its deadline to wait for a lazy first build). */
enum vt_err mcp_pin(struct mcp_call *c, int64_t deadline, struct vt_error *err);
/* For src/explore, on a worker, with c->pin held. */
struct explore_ctx mcp_explore_ctx(struct mcp_call *c, const struct eng_job *job);
/* Starts an exec call whose sink collects JSON rows in c->rows; the sink's
 * end or fail calls c->on_done (c->sink.ended tells which). */
void mcp_start_exec(struct mcp_call *c, struct exec_request *rq);
/* Names of the published datasets, for messages (" Datasets: a, b."). */
void mcp_add_dataset_names(struct strbuf *sb, struct cat_catalog *cat);

/* Whether the sql tool is listed and callable ([mcp] expose_sql and [sql]). */
bool mcp_sql_tool_available(const struct mcp_env *env);

/* The dataset names sorted, published or not (cat_status_list order is
 * registration order): for keyset paging and completions. Free with
 * cat_status_list_free. */
size_t mcp_sorted_status(struct cat_catalog *cat, struct cat_status **out);
/* The params.cursor of a list request decoded into `after` (cap bytes; ""
 * when absent). false when it is malformed: the caller answers -32602. */
bool mcp_list_cursor(struct mcp_call *c, char *after, size_t cap);
/* Appends ,"nextCursor":"..." for a page that ended before `key`. */
void mcp_add_next_cursor(struct strbuf *sb, const char *last_key);

/* ---- the method families ---- */
void mcp_tools_list(struct mcp_call *c);
void mcp_tools_call(struct mcp_call *c);
void mcp_resources_list(struct mcp_call *c);
void mcp_resource_templates_list(struct mcp_call *c);
void mcp_resources_read(struct mcp_call *c);
void mcp_prompts_list(struct mcp_call *c);
void mcp_prompts_get(struct mcp_call *c);
void mcp_complete(struct mcp_call *c);

/* The dataset's schema as describe_dataset answers it (resources.c). */
void mcp_write_schema(struct strbuf *s, const char *dataset, const struct cat_generation *gen);
/* The summary of `columns_json` (a JSON array text, or NULL for every
 * column) on a worker, into out; LIMIT_EXCEEDED past [mcp] max_bytes. */
enum vt_err mcp_summary(struct mcp_call *c, const struct eng_job *job, const char *columns_json,
                        struct strbuf *out, struct vt_error *err);

#endif
