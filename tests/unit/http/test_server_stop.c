/* http server: jobs that outlive their connection or their deadline.
 *
 * Stop while a job outlives its connection: a stream producer ends its
 * stream (the client then reads the whole body and the connection completes)
 * and still has work to do before its job returns, as the query producer does
 * when it destroys its DuckDB result. Stopping the server in that window must
 * wait for the job: before, the server freed the stream and itself under the
 * job (use-after-free in the stop loop and in the job's final request_unref;
 * seen under ASan at shutdown after a client hung up mid-stream).
 *
 * The 504 written when a job overruns its deadline (engine.h,
 * eng_job.overrun: the job does not stop, the watchdog tells its owner,
 * server.c answers at once from another thread) carries what every answer
 * carries: X-Request-Id, Content-Type, and the CORS headers of an allowed
 * Origin (before, it had no CORS header, so a browser page on an allowed
 * origin could not read it). Its job ignores the deadline on purpose and
 * waits for the test to have read the 504 (polled, bounded): no timing
 * assumption. */
#include <duckdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "engine/engine.h"
#include "http/server.h"
#include "http_testutil.h"
#include "testlib.h"

#define TAIL_MS 300

static struct eng_pool *pool;
static atomic_int job_finished;
static atomic_int client_done, stuck_finished;



static void tail_job(struct http_request *req)
{
    struct http_stream *st = http_reply_stream(req, 200, "text/plain", false);
    if (!st)
        return;
    http_stream_write(st, "hello", 5);
    http_stream_end(st, true);
    /* The client has everything; the job is not finished yet. */
    sleep_ms(TAIL_MS);
    atomic_store(&job_finished, 1);
}

static void stream_handler(struct http_request *req)
{
    http_defer(req, pool, tail_job);
}

/* Never looks at its deadline: stuck until the client has its answer (at
 * most 20 s, so a failing test still ends). */
static void stuck_job(struct http_request *req)
{
    for (int i = 0; i < 4000 && !atomic_load(&client_done); i++)
        sleep_ms(5);
    struct strbuf body;
    sb_init(&body, 0);
    sb_adds(&body, "{\"late\":true}");
    http_reply_json(req, 200, &body);
    atomic_store(&stuck_finished, 1);
}

static void stuck_handler(struct http_request *req)
{
    http_defer(req, pool, stuck_job);
}


TEST(stop_waits_for_a_job_that_outlives_its_connection)
{
    duckdb_database db;
    CHECK(duckdb_open(NULL, &db) == DuckDBSuccess);
    struct vt_error err = {0};
    pool = eng_pool_create(db, 1, "test", &err);
    CHECK(pool != NULL);
    struct vt_config cfg;
    config_init_defaults(&cfg);
    cfg.server.port = 0;
    static const struct http_route routes[] = {{HTTP_GET, "/s", stream_handler, AUTH_PERM_PUBLIC, "test stream", 0}};
    struct http_server_options opts = {.cfg = &cfg, .routes = routes, .n_routes = 1};
    struct http_server *srv = http_server_start(&opts, &err);
    CHECK(srv != NULL);
    if (!srv || !pool)
        return;

    char buf[4096];
    fetch(http_server_port(srv), "/s", buf, sizeof buf);
    CHECK_CONTAINS(buf, "200 OK");
    CHECK_CONTAINS(buf, "hello");
    /* The connection is done; the job is still in its tail. */
    for (int i = 0; i < 200 && http_server_in_flight(srv) > 0; i++)
        sleep_ms(5);
    CHECK_EQ_INT(http_server_in_flight(srv), 0);
    CHECK_EQ_INT(atomic_load(&job_finished), 0);

    http_server_stop(srv, 1000, pool);
    /* Stopping waited for the job instead of freeing the server under it. */
    CHECK_EQ_INT(atomic_load(&job_finished), 1);

    eng_pool_destroy(pool);
    duckdb_close(&db);
    config_free(&cfg);
}

TEST(an_overrun_504_carries_the_cors_headers_of_an_allowed_origin)
{
    duckdb_database db;
    CHECK(duckdb_open(NULL, &db) == DuckDBSuccess);
    struct vt_error err = {0};
    pool = eng_pool_create(db, 2, "test", &err); /* a stuck worker is replaced while another is left */
    CHECK(pool != NULL);
    struct vt_config cfg;
    config_init_defaults(&cfg);
    cfg.server.port = 0;
    cfg.server.request_timeout_ms = 200;
    strvec_push(&cfg.server.cors_origins, "https://app.example");
    static const struct http_route routes[] = {
        {HTTP_GET, "/stuck", stuck_handler, AUTH_PERM_PUBLIC, "a job that ignores its deadline", 0}};
    struct http_server_options opts = {.cfg = &cfg, .routes = routes, .n_routes = 1};
    struct http_server *srv = http_server_start(&opts, &err);
    CHECK(srv != NULL);
    if (!srv || !pool)
        return;

    char buf[4096];
    exchange(http_server_port(srv),
             "GET /stuck HTTP/1.1\r\nHost: localhost\r\nOrigin: https://app.example\r\n"
             "X-Request-Id: overrun-1\r\nConnection: close\r\n\r\n",
             buf, sizeof buf);
    /* Answered while the job is still stuck: the overrun path's 504. */
    CHECK_EQ_INT(atomic_load(&stuck_finished), 0);
    atomic_store(&client_done, 1);
    CHECK_CONTAINS(buf, "HTTP/1.1 504 ");
    CHECK_CONTAINS(buf, "\r\nX-Request-Id: overrun-1\r\n");
    CHECK_CONTAINS(buf, "\r\nContent-Type: application/json\r\n");
    CHECK_CONTAINS(buf, "\r\nAccess-Control-Allow-Origin: https://app.example\r\n");
    CHECK_CONTAINS(buf, "\r\nAccess-Control-Expose-Headers: ");
    CHECK_CONTAINS(buf, "\r\nVary: Origin\r\n");
    CHECK_CONTAINS(buf, "\"code\":\"timeout\"");

    /* An origin not allowed: Vary, no Allow-Origin. */
    for (int i = 0; i < 4000 && !atomic_load(&stuck_finished); i++)
        sleep_ms(5);
    atomic_store(&client_done, 0);
    atomic_store(&stuck_finished, 0);
    exchange(http_server_port(srv),
             "GET /stuck HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\n"
             "Connection: close\r\n\r\n",
             buf, sizeof buf);
    atomic_store(&client_done, 1);
    CHECK_CONTAINS(buf, "HTTP/1.1 504 ");
    CHECK_CONTAINS(buf, "\r\nVary: Origin\r\n");
    CHECK(strstr(buf, "Access-Control-Allow-Origin") == NULL);

    for (int i = 0; i < 4000 && !atomic_load(&stuck_finished); i++)
        sleep_ms(5);
    http_server_stop(srv, 1000, pool);
    eng_pool_destroy(pool);
    duckdb_close(&db);
    config_free(&cfg);
}

int main(void)
{
    static const struct tl_case cases[] = {
        TEST_CASE(stop_waits_for_a_job_that_outlives_its_connection),
        TEST_CASE(an_overrun_504_carries_the_cors_headers_of_an_allowed_origin)};
    return tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
}
