/*
 * What the kernel says of a thread's scheduling slice, for the tests of
 * eng_thread_slice (tests/unit/engine) and of the HTTP loops that ask for
 * one (tests/unit/http). Header-only, like testlib.h.
 */
#ifndef VT_TESTSCHED_H
#define VT_TESTSCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Whether the running kernel keeps a SCHED_OTHER thread's own slice
 * (Linux 6.12 and later); on an older one the request changes nothing. */
static inline bool tl_kernel_has_slices(void)
{
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) != 0)
        return false;
    const char *p = u.release;
    while (*p >= '0' && *p <= '9')
        major = major * 10 + (*p++ - '0');
    if (*p++ != '.')
        return false;
    while (*p >= '0' && *p <= '9')
        minor = minor * 10 + (*p++ - '0');
    return major > 6 || (major == 6 && minor >= 12);
}

/* The slice (ns) the kernel reports for thread `tid` (0: the caller), or 0
 * when it cannot be read. sched_getattr has no glibc wrapper; its first 48
 * bytes are enough. */
static inline uint64_t tl_thread_slice_ns(pid_t tid)
{
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } a = {0};
    if (syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof a, 0) != 0)
        return 0;
    return a.runtime;
}

#endif
