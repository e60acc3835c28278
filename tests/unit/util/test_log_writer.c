/* Access lines (util/log.c): a full buffer is written with the log's lock
 * released, so a write that blocks (a slow file, a full pipe, a writer
 * preempted in it) does not block the threads that log the next lines, the
 * HTTP loops (README.md, "Fair latency under mixed load"). stderr is a pipe
 * of 4 KB that nobody reads until the end: the first full buffer's write
 * blocks in it; another thread's lines must still go into the other buffer
 * and return (polled, bounded). Then every line comes out once, each
 * thread's in its order. No timing is measured. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "util/log.h"

#define FILL_LINES 500 /* ~50 KB: more than one 32 KB buffer, less than two */
#define OTHER_LINES 10

static atomic_int fill_done, other_done;

static void log_line(char who, int i)
{
    char id[16];
    snprintf(id, sizeof id, "%c%06d", who, i);
    struct log_access_rec rec = {"GET", "/api/v1/datasets/{name}/query", 200, 1234, 567,
                                 id, NULL};
    log_access(&rec);
}

static void *filler(void *arg)
{
    (void)arg;
    for (int i = 0; i < FILL_LINES; i++)
        log_line('A', i);
    atomic_store(&fill_done, 1);
    return NULL;
}

static void *other(void *arg)
{
    (void)arg;
    for (int i = 0; i < OTHER_LINES; i++)
        log_line('C', i);
    atomic_store(&other_done, 1);
    return NULL;
}

struct sink {
    int fd;
    char *buf;
    size_t len, cap;
};

static void *reader(void *arg)
{
    struct sink *s = arg;
    ssize_t n;
    for (;;) {
        if (s->len + 4096 > s->cap) {
            s->cap = s->cap ? s->cap * 2 : 1 << 16;
            s->buf = realloc(s->buf, s->cap + 1);
        }
        n = read(s->fd, s->buf + s->len, 4096);
        if (n <= 0)
            break;
        s->len += (size_t)n;
    }
    s->buf[s->len] = '\0';
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to 10 s for *flag; true when it was set. */
static bool poll_flag(atomic_int *flag)
{
    for (int i = 0; i < 1000 && !atomic_load(flag); i++)
        sleep_ms(10);
    return atomic_load(flag) != 0;
}

/* Each `who` line in order 0..n-1, each once. */
static bool in_order(const char *out, char who, int n)
{
    char key[4] = {'=', who, '\0'};
    int next = 0;
    for (const char *p = strstr(out, key); p; p = strstr(p + 1, key)) {
        if (atoi(p + 2) != next)
            return false;
        next++;
    }
    return next == n;
}

TEST(a_blocked_access_log_write_does_not_block_the_next_lines)
{
    int p[2];
    CHECK(pipe(p) == 0);
    fcntl(p[1], F_SETPIPE_SZ, 4096);
    int saved = dup(STDERR_FILENO);
    dup2(p[1], STDERR_FILENO);
    log_set_level(LOG_INFO);
    log_start_flusher();

    pthread_t a, c, r;
    pthread_create(&a, NULL, filler, NULL);
    /* The first full buffer is being written and the pipe is full: that
     * write blocks until the reader below starts. */
    int queued = 0;
    for (int i = 0; i < 1000 && queued < 4096; i++) {
        sleep_ms(10);
        ioctl(p[0], FIONREAD, &queued);
    }
    pthread_create(&c, NULL, other, NULL);
    bool other_returned = poll_flag(&other_done);

    struct sink s = {p[0], NULL, 0, 0};
    pthread_create(&r, NULL, reader, &s);
    pthread_join(a, NULL);
    pthread_join(c, NULL);
    log_stop_flusher();
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(p[1]);
    pthread_join(r, NULL);
    close(p[0]);

    CHECK(queued >= 4096);
    CHECK(other_returned); /* before: it waited for the blocked write's lock */
    CHECK(atomic_load(&fill_done));
    CHECK(s.buf && in_order(s.buf, 'A', FILL_LINES));
    CHECK(s.buf && in_order(s.buf, 'C', OTHER_LINES));
    free(s.buf);
}

RUN_TESTS(TEST_CASE(a_blocked_access_log_write_does_not_block_the_next_lines))
