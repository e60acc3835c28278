/*
 * The service manager's side of the process life (systemd Type=notify),
 * through Debian's libsystemd (sd_notify): READY=1 once /readyz would say
 * ready (with STATUS= progress and EXTEND_TIMEOUT_USEC= while datasets
 * build, so a long first build does not trip TimeoutStartSec; the catalog
 * wakes it when a startup build ends, see notify_recheck), WATCHDOG=1
 * while the HTTP listener answers its own /healthz (WatchdogSec=),
 * RELOADING=1/READY=1 around a SIGHUP reload, STOPPING=1 at SIGTERM.
 * Without NOTIFY_SOCKET (not under systemd) every call is a no-op.
 */
#ifndef VT_NOTIFY_NOTIFY_H
#define VT_NOTIFY_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

struct notify;

/* Whether this process is ready to serve (the /readyz answer). */
typedef bool (*notify_ready_fn)(void *ctx, int64_t *out_datasets);

/* Starts the notifier thread when NOTIFY_SOCKET is set (else NULL). The
 * watchdog probes http://127.0.0.1:<port><prefix>/healthz. */
struct notify *notify_start(notify_ready_fn ready, void *ctx, int http_port, const char *prefix);
/* Readiness may have changed (a startup build ended): the thread asks
 * `ready` again now instead of at its next tick, so READY=1 follows the
 * last publish at once (a no-op with n NULL). Any thread. */
void notify_recheck(struct notify *n);
void notify_reloading(struct notify *n);
void notify_reloaded(struct notify *n);
void notify_stopping(struct notify *n);
void notify_stop(struct notify *n);

#endif
