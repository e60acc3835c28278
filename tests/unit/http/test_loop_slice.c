/* http server: the event loops ask the kernel for the shortest scheduling
 * slice (conn.c, loop_main), so a loop that wakes for an inline index lookup
 * runs before CPU-bound workers finish their slices (README.md, "Fair
 * latency under mixed load"). On a kernel that keeps a SCHED_OTHER thread's
 * own slice (6.12+), every http-loop thread of a running server reports
 * 100 us; on an older one the server runs with the default. The check polls
 * for the loops' state, it measures no time. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "http/server.h"
#include "testlib.h"
#include "testsched.h"

/* The slices (ns) of this process's threads named http-loop: how many
 * there are, and how many have `want`. */
static void loop_slices(uint64_t want, int *loops, int *with)
{
    *loops = *with = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        if (strcmp(comm, "http-loop\n") != 0)
            continue;
        (*loops)++;
        if (tl_thread_slice_ns(atoi(e->d_name)) == want)
            (*with)++;
    }
    closedir(d);
}

TEST(every_http_loop_runs_with_a_short_slice)
{
    struct vt_config cfg;
    config_init_defaults(&cfg);
    cfg.server.port = 0;
    struct vt_error err = {0};
    struct http_server_options opts = {.cfg = &cfg, .routes = NULL, .n_routes = 0};
    struct http_server *srv = http_server_start(&opts, &err);
    CHECK(srv != NULL);
    if (!srv)
        return;
    int loops = 0, with = 0;
    bool want = tl_kernel_has_slices();
    /* The loops set it when they start: poll up to 20 s for that. */
    for (int i = 0; i < 4000; i++) {
        loop_slices(100000, &loops, &with);
        if (loops > 0 && (!want || with == loops))
            break;
        struct timespec ts = {0, 5000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(loops >= 1);
    if (want)
        CHECK_EQ_INT(with, loops);
    else
        CHECK_EQ_INT(with, 0);
    http_server_stop(srv, 1000, NULL);
    config_free(&cfg);
}

int main(void)
{
    static const struct tl_case cases[] = {TEST_CASE(every_http_loop_runs_with_a_short_slice)};
    return tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
}
