/*
 * systemd notifications (see notify.h). One thread: until ready it reports
 * progress and extends the start timeout; then it feeds the watchdog at half
 * its interval, but only while a request to our own /healthz succeeds, so a
 * wedged HTTP server is restarted by systemd.
 */
#include "notify/notify.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "util/log.h"
#include "util/timeutil.h"

struct notify {
    notify_ready_fn ready;
    void *ctx;
    char url[512];
    uint64_t watchdog_usec;     /* 0 = no watchdog */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool recheck;               /* notify_recheck since the last look */
};

static size_t discard(char *p, size_t s, size_t n, void *ud)
{
    (void)p, (void)ud;
    return s * n;
}

static bool healthy(const struct notify *n, long timeout_ms)
{
    CURL *h = curl_easy_init();
    if (!h)
        return false;
    curl_easy_setopt(h, CURLOPT_URL, n->url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    CURLcode cc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    return cc == CURLE_OK && code == 200;
}

static void *notify_main(void *arg)
{
    struct notify *n = arg;
    pthread_setname_np(pthread_self(), "sd-notify");
    bool ready = false, first = true;
    int64_t next_dog = 0;
    for (;;) {
        /* The first look is at once (the datasets may all be built before
         * this thread starts); then at each tick or notify_recheck. The tick
         * stays for what no recheck announces (a cluster reader's import). */
        pthread_mutex_lock(&n->mu);
        if (!first && !n->stop && !n->recheck)
            time_cond_wait(&n->cv, &n->mu, time_mono_ms() + (ready ? 500 : 250));
        first = false;
        n->recheck = false;
        bool stop = n->stop;
        pthread_mutex_unlock(&n->mu);
        if (stop)
            break;
        int64_t datasets = 0;
        if (!ready) {
            if (n->ready(n->ctx, &datasets)) {
                ready = true;
                sd_notifyf(0, "READY=1\nSTATUS=serving %lld datasets", (long long)datasets);
            } else {
                /* Builds take as long as they take: keep the start alive. */
                sd_notify(0, "STATUS=building datasets\nEXTEND_TIMEOUT_USEC=10000000");
            }
        }
        int64_t now = time_mono_ms();
        if (n->watchdog_usec && now >= next_dog) {
            long half = (long)(n->watchdog_usec / 2000);
            if (healthy(n, half > 100 ? half : 100))
                sd_notify(0, "WATCHDOG=1");
            else
                log_warn("watchdog: %s did not answer; not feeding the systemd watchdog",
                         n->url);
            next_dog = now + (int64_t)(n->watchdog_usec / 2000);
        }
    }
    return NULL;
}

struct notify *notify_start(notify_ready_fn ready, void *ctx, int http_port, const char *prefix)
{
    if (!getenv("NOTIFY_SOCKET"))
        return NULL;
    struct notify *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->ready = ready;
    n->ctx = ctx;
    snprintf(n->url, sizeof n->url, "http://127.0.0.1:%d%s/healthz", http_port,
             prefix ? prefix : "");
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0)
        n->watchdog_usec = usec;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    if (pthread_create(&n->thread, NULL, notify_main, n) != 0) {
        free(n);
        return NULL;
    }
    log_info("systemd: notifying %s%s", getenv("NOTIFY_SOCKET"),
             n->watchdog_usec ? " (watchdog on)" : "");
    return n;
}

void notify_recheck(struct notify *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->recheck = true;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
}

void notify_reloading(struct notify *n)
{
    if (n)
        sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
                   (unsigned long long)time_mono_ms() * 1000ULL);
}

void notify_reloaded(struct notify *n)
{
    if (n)
        sd_notify(0, "READY=1");
}

void notify_stopping(struct notify *n)
{
    if (n)
        sd_notify(0, "STOPPING=1\nSTATUS=draining");
}

void notify_stop(struct notify *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cv);
    free(n);
}
