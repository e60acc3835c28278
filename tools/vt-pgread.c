/*
 * vt-pgread: reads a whole result as fast as a client can, for the pgwire
 * benchmark (bench/pgwire.py). A development tool, not part of the service.
 *
 *   vt-pgread pg HOST PORT USER SQL [text|binary]
 *       PostgreSQL protocol 3.0 over a plain socket (no libpq): simple Query
 *       for text, Parse/Bind/Execute/Sync with binary results for binary;
 *       counts the DataRow messages without decoding the values.
 *   vt-pgread duck PARQUET SQL [RUNS]
 *       the floor: DuckDB in-process, the Parquet file loaded the way vitrine
 *       keeps a resident dataset (ATTACH ':memory:' (COMPRESS), CREATE TABLE
 *       AS, CHECKPOINT) as table t, then SQL streamed chunk by chunk, RUNS
 *       times (1; one line each: the load is paid once for every round).
 *
 * Prints one line: rows=N bytes=B ms=T cpu_ms=C, C the CPU time of this
 * process (every thread, user and system) over the same span as T: for pg
 * the client's own cost, for duck the floor's. With VT_PGREAD_HASH set, pg
 * adds hash=H, an FNV-1a hash of every byte the query's answer took (to
 * compare two builds' bytes; it costs the client ~1 ns a byte).
 */
#include <arpa/inet.h>
#include <duckdb.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pgwire/pgwire.h"
#include "util/strbuf.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static bool hashing;
static uint64_t hash = 14695981039346656037ULL;

/* Reads messages until ReadyForQuery; counts DataRows. */
static int read_until_ready(int fd, long long *rows, long long *bytes)
{
    static unsigned char buf[1 << 20];
    size_t len = 0, off = 0;
    for (;;) {
        struct pgw_frame f;
        enum pgw_frame_rc rc = pgw_frame_message(buf + off, len - off, 1 << 30, &f);
        if (rc == PGW_FRAME_OK) {
            off += f.total;
            if (f.type == 'D')
                (*rows)++;
            else if (f.type == 'E') {
                fprintf(stderr, "vt-pgread: server error: %.*s\n", (int)f.body_len, f.body);
                return -1;
            } else if (f.type == 'Z')
                return 0;
            continue;
        }
        if (rc != PGW_FRAME_NEED)
            return -1;
        if (off) {
            memmove(buf, buf + off, len - off);
            len -= off;
            off = 0;
        }
        if (len == sizeof buf)
            return -1;
        ssize_t n = recv(fd, buf + len, sizeof buf - len, 0);
        if (n <= 0)
            return -1;
        for (ssize_t i = 0; hashing && i < n; i++)
            hash = (hash ^ buf[len + (size_t)i]) * 1099511628211ULL;
        len += (size_t)n;
        *bytes += n;
    }
}

static int pg(const char *host, const char *port, const char *user, const char *sql, bool binary)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return 1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        perror("vt-pgread: connect");
        return 1;
    }
    freeaddrinfo(ai);
    struct strbuf o;
    sb_init(&o, 0);
    /* startup */
    pgw_put_i32(&o, 0);
    pgw_put_i32(&o, PGW_PROTOCOL_3_0);
    pgw_put_str(&o, "user");
    pgw_put_str(&o, user);
    pgw_put_str(&o, "database");
    pgw_put_str(&o, user);
    pgw_put_u8(&o, 0);
    uint32_t n = htonl((uint32_t)o.len);
    memcpy(o.buf, &n, 4);
    long long rows = 0, bytes = 0;
    if (send_all(fd, o.buf, o.len) != 0 || read_until_ready(fd, &rows, &bytes) != 0)
        return 1;
    rows = bytes = 0;
    sb_reset(&o);
    if (binary) {
        size_t m = pgw_msg_begin(&o, 'P');
        pgw_put_str(&o, "");
        pgw_put_str(&o, sql);
        pgw_put_i16(&o, 0);
        pgw_msg_end(&o, m);
        m = pgw_msg_begin(&o, 'B');
        pgw_put_str(&o, "");
        pgw_put_str(&o, "");
        pgw_put_i16(&o, 0);
        pgw_put_i16(&o, 0);
        pgw_put_i16(&o, 1);
        pgw_put_i16(&o, 1);
        pgw_msg_end(&o, m);
        m = pgw_msg_begin(&o, 'E');
        pgw_put_str(&o, "");
        pgw_put_i32(&o, 0);
        pgw_msg_end(&o, m);
        pgw_write_empty(&o, 'S');
    } else {
        size_t m = pgw_msg_begin(&o, 'Q');
        pgw_put_str(&o, sql);
        pgw_msg_end(&o, m);
    }
    double t0 = now_ms(), c0 = cpu_ms();
    hashing = getenv("VT_PGREAD_HASH") != NULL;
    if (send_all(fd, o.buf, o.len) != 0 || read_until_ready(fd, &rows, &bytes) != 0)
        return 1;
    double t1 = now_ms(), c1 = cpu_ms();
    printf("rows=%lld bytes=%lld ms=%.1f cpu_ms=%.1f", rows, bytes, t1 - t0, c1 - c0);
    if (hashing)
        printf(" hash=%016llx", (unsigned long long)hash);
    printf("\n");
    sb_release(&o);
    close(fd);
    return 0;
}

static int duck(const char *parquet, const char *sql, int runs)
{
    duckdb_database db;
    duckdb_connection con;
    duckdb_config cfg;
    duckdb_create_config(&cfg);
    duckdb_set_config(cfg, "allocator_background_threads", "true");
    duckdb_set_config(cfg, "autoload_known_extensions", "false");
    if (duckdb_open_ext(NULL, &db, cfg, NULL) != DuckDBSuccess)
        return 1;
    duckdb_destroy_config(&cfg);
    duckdb_connect(db, &con);
    struct strbuf q;
    sb_init(&q, 0);
    sb_addf(&q, "SET TimeZone = 'UTC'; ATTACH ':memory:' AS g (COMPRESS); "
                "CREATE TABLE g.t AS SELECT * FROM read_parquet(");
    sb_add_sql_string(&q, parquet);
    sb_adds(&q, "); CHECKPOINT g; USE g;");
    duckdb_result r;
    if (duckdb_query(con, q.buf, &r) != DuckDBSuccess) {
        fprintf(stderr, "vt-pgread: %s\n", duckdb_result_error(&r));
        return 1;
    }
    duckdb_destroy_result(&r);
    sb_release(&q);
    duckdb_prepared_statement ps;
    if (duckdb_prepare(con, sql, &ps) != DuckDBSuccess) {
        fprintf(stderr, "vt-pgread: %s\n", duckdb_prepare_error(ps));
        return 1;
    }
    for (int run = 0; run < runs; run++) {
        double t0 = now_ms(), c0 = cpu_ms();
        if (duckdb_execute_prepared_streaming(ps, &r) != DuckDBSuccess)
            return 1;
        long long rows = 0;
        for (;;) {
            duckdb_data_chunk ch = duckdb_fetch_chunk(r);
            if (!ch)
                break;
            rows += (long long)duckdb_data_chunk_get_size(ch);
            duckdb_destroy_data_chunk(&ch);
        }
        double t1 = now_ms(), c1 = cpu_ms();
        printf("rows=%lld bytes=0 ms=%.1f cpu_ms=%.1f\n", rows, t1 - t0, c1 - c0);
        fflush(stdout);
        duckdb_destroy_result(&r);
    }
    duckdb_destroy_prepare(&ps);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && !strcmp(argv[1], "pg"))
        return pg(argv[2], argv[3], argv[4], argv[5], argc > 6 && !strcmp(argv[6], "binary"));
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "duck"))
        return duck(argv[2], argv[3], argc == 5 && atoi(argv[4]) > 0 ? atoi(argv[4]) : 1);
    fprintf(stderr, "usage: vt-pgread pg HOST PORT USER SQL [text|binary]\n"
                    "       vt-pgread duck PARQUET SQL [RUNS]\n");
    return 2;
}
