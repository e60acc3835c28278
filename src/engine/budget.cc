/*
 * The allocation budget (engine.h, eng_budget_*): one process-wide count of
 * the memory DuckDB holds, and a ceiling on it.
 *
 * DuckDB's memory_limit governs its buffer pool only. Lists, strings and
 * C++ objects that functions build (range(1e8) as a list, repeat, edit
 * distances, Value-based builders) are allocated beside it, so one statement
 * could take the process far past the limit (measured, memory_limit 1 GB:
 * len(range(30000000)) peaked at 2.3 GB RSS, range(1e8) passed 8 GB). Two
 * doors lead to all of that memory, and both are counted here:
 *
 *  - DuckDB's allocator. The DuckDB 1.4.4 library allocates every buffer,
 *    vector, string heap and arena through duckdb::JemallocExtension's
 *    Allocate/Free/Reallocate, called through the PLT, so this executable's
 *    definitions of those three functions take their place (ELF symbol
 *    interposition; they call the same duckdb_je_* functions the library's
 *    own do). Free receives the size, so the count is exact. Past the budget
 *    Allocate returns NULL, which DuckDB turns into an Out of Memory Error for
 *    the statement that asked: the same path its own memory_limit takes.
 *  - C++ operator new (std::vector, std::string, Value lists inside DuckDB and
 *    libstdc++): replaced here as the standard allows, counted by
 *    malloc_usable_size. Only requests of 64 KiB or more are refused past the
 *    budget (a large std::vector growing); small ones always succeed, so code
 *    that cannot handle std::bad_alloc (destructors, bookkeeping) is not made
 *    to. Each thread sums these locally and adds to the count every 256 KiB
 *    (see local_add).
 *
 * Freed memory stays resident for a while in DuckDB's jemalloc (dirty pages,
 * purged after ~1 s, per arena): two heavy statements in a row measured
 * 1.8 GB RSS under a 1.2 GB budget. eng_budget_watch() starts a thread
 * that reads the process's RSS every 100 ms and has jemalloc purge its
 * arenas when RSS exceeds the counted memory by more than a slack.
 *
 * Between statements the slack is too much: the engine's lanes (engine.h)
 * run consecutive statements on different threads, whose allocations come
 * from other arenas than the pages freed before, jemalloc's and glibc's
 * (DuckDB's C++ operator new, below, is glibc's malloc, per-thread arenas
 * too). Measured on the hostile memory test (49 MiB idle, 384 MiB budget):
 * a count(DISTINCT) freed 200 MiB that stayed resident (under the 256 MiB
 * slack), and the recursive CTE after it peaked at 469 MiB RSS; a jemalloc
 * purge alone left 345 MiB resident with 3 MiB counted, malloc_trim the
 * rest. eng_budget_settle(), after each job, does both when the count has
 * fallen by an eighth of the budget (at least 32 MiB) since its highest:
 * only after a statement that freed that much, so small ones never pay.
 *
 * eng_budget_active() tells whether the interposition took (a DuckDB build
 * that stopped calling through the PLT would leave the count at zero; the
 * engine then logs a warning and the wrappers of functions.c still bound
 * single calls). Memory our own C code allocates (index, row stores, HTTP
 * buffers) is not counted: it has its own limits.
 */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

extern "C" {
void *duckdb_je_malloc(size_t size);
void duckdb_je_free(void *ptr);
void *duckdb_je_realloc(void *ptr, size_t size);
int duckdb_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
    __attribute__((weak));

void eng_budget_set(int64_t bytes);
int64_t eng_budget_get(void);
int64_t eng_budget_used(void);
int64_t eng_budget_peak(bool reset);
int64_t eng_budget_refused(void);
bool eng_budget_active(void);
void eng_budget_watch(int64_t slack);
void eng_budget_settle(void);
}

namespace {

constexpr int64_t kRefuseNewFrom = 64 * 1024; /* operator new: smaller always succeeds */

std::atomic<int64_t> used{0};
std::atomic<int64_t> peak{0};
std::atomic<int64_t> high{0};        /* highest count since the last settle */
std::atomic<int64_t> limit{0};       /* 0: no ceiling */
std::atomic<int64_t> refused{0};
std::atomic<int64_t> duckdb_calls{0}; /* allocations seen through DuckDB's allocator */

/* Adds n (> 0) unless that passes the ceiling and `may_refuse`. */
inline bool charge(int64_t n, bool may_refuse)
{
    int64_t now = used.fetch_add(n, std::memory_order_relaxed) + n;
    int64_t cap = limit.load(std::memory_order_relaxed);
    if (may_refuse && cap > 0 && now > cap) {
        used.fetch_sub(n, std::memory_order_relaxed);
        refused.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    int64_t p = peak.load(std::memory_order_relaxed);
    while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed))
        ;
    int64_t h = high.load(std::memory_order_relaxed);
    while (now > h && !high.compare_exchange_weak(h, now, std::memory_order_relaxed))
        ;
    return true;
}

inline void credit(int64_t n)
{
    used.fetch_sub(n, std::memory_order_relaxed);
}

/* operator new and delete run on every thread millions of times a second
 * (a 1M-row CTAS: ~4% of its CPU went to the lock'ed add on `used` shared by
 * DuckDB's threads, perf). They never refuse small requests, so each thread
 * sums its own and adds the sum to `used` once it passes kLocalFlush either
 * way: `used` is then exact to kLocalFlush per thread, which is nothing
 * beside a budget of hundreds of MiB. A thread's remainder is added when it
 * exits (a pthread key's destructor; what is freed after that, in later
 * thread-exit destructors, is counted at once). */
#ifndef VT_BUDGET_NO_NEW
constexpr int64_t kLocalFlush = 256 * 1024;
thread_local int64_t local_pending;   /* trivially destructible: no TLS guard */
thread_local bool local_registered;
thread_local bool local_exited;
pthread_key_t local_key;
pthread_once_t local_once = PTHREAD_ONCE_INIT;

void local_flush()
{
    int64_t n = local_pending;
    local_pending = 0;
    if (n > 0)
        charge(n, false);
    else if (n < 0)
        credit(-n);
}

void local_exit(void *)
{
    local_flush();
    local_exited = true;
}

void local_make_key()
{
    pthread_key_create(&local_key, local_exit);
}

inline void local_add(int64_t n)
{
    if (local_exited) {
        if (n > 0)
            charge(n, false);
        else
            credit(-n);
        return;
    }
    if (__builtin_expect(!local_registered, 0)) {
        /* at a thread's first call, so that even a remainder that never
         * reached kLocalFlush is added when it exits */
        local_registered = true;
        pthread_once(&local_once, local_make_key);
        pthread_setspecific(local_key, &local_key); /* any non-NULL value */
    }
    local_pending += n;
    if (local_pending > kLocalFlush || local_pending < -kLocalFlush)
        local_flush();
}
#endif

} // namespace

/* The three functions of DuckDB's allocator (duckdb/src/include/duckdb/
 * main/extension/jemalloc_extension.hpp in 1.4.4: static members taking
 * PrivateAllocatorData *, data_ptr_t and idx_t). Only their mangled names
 * matter: they are declared here exactly as the library declares them. */
namespace duckdb {
struct PrivateAllocatorData;
class JemallocExtension {
public:
    static unsigned char *Allocate(PrivateAllocatorData *data, unsigned long size);
    static void Free(PrivateAllocatorData *data, unsigned char *ptr, unsigned long size);
    static unsigned char *Reallocate(PrivateAllocatorData *data, unsigned char *ptr,
                                     unsigned long old_size, unsigned long size);
};

unsigned char *JemallocExtension::Allocate(PrivateAllocatorData *, unsigned long size)
{
    duckdb_calls.fetch_add(1, std::memory_order_relaxed);
    if (!charge((int64_t)size, true))
        return nullptr;
    void *p = duckdb_je_malloc(size);
    if (!p)
        credit((int64_t)size);
    return static_cast<unsigned char *>(p);
}

void JemallocExtension::Free(PrivateAllocatorData *, unsigned char *ptr, unsigned long size)
{
    if (ptr)
        credit((int64_t)size);
    duckdb_je_free(ptr);
}

unsigned char *JemallocExtension::Reallocate(PrivateAllocatorData *, unsigned char *ptr,
                                             unsigned long old_size, unsigned long size)
{
    int64_t delta = (int64_t)size - (int64_t)old_size;
    if (delta > 0 && !charge(delta, true))
        return nullptr;
    void *p = duckdb_je_realloc(ptr, size);
    if (!p) {
        if (delta > 0)
            credit(delta);
    } else if (delta < 0) {
        credit(-delta);
    }
    return static_cast<unsigned char *>(p);
}
} // namespace duckdb

/* ------------------------------------------------------------ operator new */

/* The fuzz targets link clang's ASan runtime statically, which brings its
 * own operator new: they build this file with VT_BUDGET_NO_NEW. */
#ifndef VT_BUDGET_NO_NEW
void *operator new(std::size_t n)
{
    if (n >= (std::size_t)kRefuseNewFrom) {
        int64_t cap = limit.load(std::memory_order_relaxed);
        if (cap > 0 && used.load(std::memory_order_relaxed) + (int64_t)n > cap) {
            refused.fetch_add(1, std::memory_order_relaxed);
            throw std::bad_alloc();
        }
    }
    void *p = std::malloc(n ? n : 1);
    if (!p)
        throw std::bad_alloc();
    local_add((int64_t)malloc_usable_size(p));
    return p;
}

void *operator new[](std::size_t n)
{
    return ::operator new(n);
}

void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
    try {
        return ::operator new(n);
    } catch (...) {
        return nullptr;
    }
}

void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
    return ::operator new(n, std::nothrow);
}

void operator delete(void *p) noexcept
{
    if (!p)
        return;
    local_add(-(int64_t)malloc_usable_size(p));
    std::free(p);
}

void operator delete[](void *p) noexcept
{
    ::operator delete(p);
}

void operator delete(void *p, std::size_t) noexcept
{
    ::operator delete(p);
}

void operator delete[](void *p, std::size_t) noexcept
{
    ::operator delete(p);
}

void operator delete(void *p, const std::nothrow_t &) noexcept
{
    ::operator delete(p);
}

void operator delete[](void *p, const std::nothrow_t &) noexcept
{
    ::operator delete(p);
}
#endif

/* ------------------------------------------------------------------- API */

void eng_budget_set(int64_t bytes)
{
    limit.store(bytes > 0 ? bytes : 0, std::memory_order_relaxed);
}

int64_t eng_budget_get(void)
{
    return limit.load(std::memory_order_relaxed);
}

int64_t eng_budget_used(void)
{
    return used.load(std::memory_order_relaxed);
}

int64_t eng_budget_peak(bool reset)
{
    int64_t p = peak.load(std::memory_order_relaxed);
    if (reset)
        peak.store(used.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return p;
}

int64_t eng_budget_refused(void)
{
    return refused.load(std::memory_order_relaxed);
}

bool eng_budget_active(void)
{
    return duckdb_calls.load(std::memory_order_relaxed) > 0;
}

/* ----------------------------------------------------------------- watch */

namespace {

std::atomic<int64_t> watch_slack{0};

/* The resident set from /proc/self/statm ("size resident ..." in pages).
 * Only the watch thread calls it, ten times a second for the server's life:
 * the file stays open and is read with one pread and parsed by hand
 * (fopen + fscanf + fclose was ~3,000 instructions and three syscalls a
 * call, ~30k instructions a second on an idle server). */
int64_t rss_bytes()
{
    static int fd = -2;
    static const int64_t page = (int64_t)sysconf(_SC_PAGESIZE);
    if (fd == -2)
        fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[128];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = buf;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p++ != ' ' || *p < '0' || *p > '9')
        return 0;
    int64_t resident = 0;
    for (; *p >= '0' && *p <= '9' && resident < (INT64_MAX / 10 - 9) / page; p++)
        resident = resident * 10 + (*p - '0');
    return resident * page;
}

void purge()
{
    if (!duckdb_je_mallctl)
        return;
    /* MALLCTL_ARENAS_ALL is 4096 */
    duckdb_je_mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
}

} // namespace

void eng_budget_settle(void)
{
    int64_t cap = limit.load(std::memory_order_relaxed);
    int64_t now = used.load(std::memory_order_relaxed);
    int64_t h = high.load(std::memory_order_relaxed);
    int64_t freed = cap / 8 > (32 << 20) ? cap / 8 : (32 << 20);
    if (cap <= 0 || h - now < freed)
        return;
    high.store(now, std::memory_order_relaxed);
    purge();
    malloc_trim(0);
}

namespace {

void *watch_main(void *)
{
    pthread_setname_np(pthread_self(), "mem-watch");
    struct timespec period = {0, 100 * 1000000L};
    for (;;) {
        nanosleep(&period, nullptr);
        int64_t slack = watch_slack.load(std::memory_order_relaxed);
        int64_t rss = rss_bytes();
        if (slack > 0 && rss > 0 && rss - used.load(std::memory_order_relaxed) > slack)
            purge();
    }
    return nullptr;
}

} // namespace

void eng_budget_watch(int64_t slack)
{
    static std::atomic<bool> started{false};
    watch_slack.store(slack, std::memory_order_relaxed);
    bool expected = false;
    if (slack <= 0 || !started.compare_exchange_strong(expected, true))
        return;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, watch_main, nullptr) != 0)
        started.store(false);
    pthread_attr_destroy(&attr);
}
